// mca_params.cpp -- translating the Open MPI MCA parameters that have an
// Axon equivalent (see axon_info --params for Axon's own).
#include "launcher/mca_params.hpp"

#include "launcher/option_values.hpp"

#include <algorithm>

namespace axon::launcher {
namespace {

// Open MPI's BTL names as Axon's transports (AXON_BTL); "" when Axon has none.
std::string axon_transport(const std::string &btl) {
    if (btl == "self") return "self";
    if (btl == "vader" || btl == "sm" || btl == "smcuda") return "sm";
    if (btl == "tcp") return "tcp";
    if (btl == "openib" || btl == "uct") return "verbs";  // Axon's RDMA transport
    return {};
}

// "--mca btl self,vader,tcp" -> "self,sm,tcp"; "^openib" -> the transports
// Axon selects by itself minus the ones excluded. "" when nothing maps.
std::string translate_btl(const std::string &value) {
    const bool exclude = !value.empty() && value.front() == '^';
    std::vector<std::string> named;
    for (const auto &item : split_list(exclude ? value.substr(1) : value)) {
        std::string transport = axon_transport(item);
        if (!transport.empty() && std::find(named.begin(), named.end(), transport) == named.end())
            named.push_back(transport);
    }
    if (!exclude) {
        if (named.empty()) return {};
        if (std::find(named.begin(), named.end(), "self") == named.end()) named.insert(named.begin(), "self");
        std::string list;
        for (const auto &t : named) list += (list.empty() ? "" : ",") + t;
        return list;
    }
    // Excluding only what Axon does not have (the common "^openib"): Axon's
    // own choice stands.
    if (named.empty() || (named.size() == 1 && named[0] == "verbs")) return {};
    std::string list;
    for (const char *t : {"self", "sm", "tcp"}) {
        if (std::find(named.begin(), named.end(), t) == named.end()) list += (list.empty() ? "" : ",") + std::string(t);
    }
    return list;
}

}  // namespace

std::string apply_mca(const std::string &name, const std::string &value, McaSettings &settings) {
    const std::string ignored = "--mca " + name + " " + value +
                                " ignored: an Open MPI parameter Axon has no equivalent for (Axon's settings "
                                "are AXON_* environment variables: axon_info --params)";
    auto set = [&](const char *variable, const std::string &axon_value) {
        set_variable(settings.env, variable, axon_value);
        return std::string();
    };
    if (name == "btl") {
        std::string list = translate_btl(value);
        if (!list.empty()) return set("AXON_BTL", list);
        return "--mca btl " + value +
               " ignored: it selects no transport Axon has (Axon's are self, sm, tcp and verbs, chosen by itself "
               "unless AXON_BTL says otherwise)";
    }
    if (name == "btl_tcp_if_include") return set("AXON_BTL_TCP_IF_INCLUDE", value);
    if (name == "btl_tcp_if_exclude") return set("AXON_BTL_TCP_IF_EXCLUDE", value);
    if (name == "btl_tcp_eager_limit") return set("AXON_BTL_TCP_EAGER_LIMIT", value);
    if (name == "btl_vader_eager_limit" || name == "btl_sm_eager_limit") return set("AXON_BTL_SM_EAGER_LIMIT", value);
    if (name == "btl_vader_single_copy_mechanism" || name == "btl_sm_single_copy_mechanism") {
        if (value == "none") return set("AXON_BTL_SM_CMA", "0");
        if (value == "cma") return set("AXON_BTL_SM_CMA", "1");
        return ignored;
    }
    if (name == "hwloc_base_binding_policy") {
        settings.bind_to = value;
        return {};
    }
    if (name == "rmaps_base_mapping_policy") {
        settings.map_by = value;
        return {};
    }
    if (name == "rmaps_base_ranking_policy") {
        settings.rank_by = value;
        return {};
    }
    if (name == "plm_rsh_agent" || name == "orte_rsh_agent" || name == "pls_rsh_agent") {
        // Open MPI takes "ssh : rsh" (the first that exists): the first here.
        std::string agent = value.substr(0, value.find(':'));
        if (agent.find_first_not_of(" \t") == std::string::npos) return ignored;
        settings.launch_agent = agent;
        return {};
    }
    if (name == "oob_tcp_if_include") {
        settings.head_interfaces = split_list(value);
        return {};
    }
    if (name == "rmaps_base_oversubscribe" || name == "orte_allowed_exit_without_sync") return {};
    return ignored;
}

}  // namespace axon::launcher
