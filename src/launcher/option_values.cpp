// option_values.cpp -- parsing the values of mpirun's options.
#include "launcher/option_values.hpp"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern char **environ;

namespace axon::launcher {

std::optional<int> parse_positive(const std::string &text) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    errno = 0;
    long value = std::strtol(text.c_str(), nullptr, 10);
    if (errno != 0 || value <= 0 || value > INT_MAX) return std::nullopt;
    return static_cast<int>(value);
}

std::vector<std::string> split_list(const std::string &text, char separator) {
    std::vector<std::string> items;
    std::stringstream stream(text);
    std::string item;
    while (std::getline(stream, item, separator)) {
        if (!item.empty()) items.push_back(item);
    }
    return items;
}

namespace {

// "name[:slots]" -> HostSlots; slots must be positive when given.
std::optional<HostSlots> parse_host_entry(const std::string &entry) {
    HostSlots host;
    auto colon = entry.find(':');
    host.name = entry.substr(0, colon);
    if (host.name.empty()) return std::nullopt;
    if (colon != std::string::npos) {
        auto slots = parse_positive(entry.substr(colon + 1));
        if (!slots) return std::nullopt;
        host.slots = *slots;
    }
    return host;
}

// Object names of --map-by / ppr / --bind-to ("package" is hwloc's name for a socket).
std::optional<Level> parse_level(const std::string &word) {
    if (word == "node" || word == "board") return Level::node;
    if (word == "socket" || word == "package") return Level::socket;
    if (word == "numa" || word == "numanode") return Level::numa;
    if (word == "l3cache" || word == "l3") return Level::l3cache;
    if (word == "core") return Level::core;
    if (word == "hwthread" || word == "thread" || word == "pu") return Level::hwthread;
    return std::nullopt;
}

std::string lower(std::string text) {
    for (char &c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

}  // namespace

bool parse_host_list(const std::string &list, const std::string &option, std::vector<HostSlots> &hosts,
                     std::string &error) {
    std::stringstream stream(list);
    std::string entry;
    bool any = false;
    while (std::getline(stream, entry, ',')) {
        auto host = parse_host_entry(entry);
        if (!host) {
            error = "bad host entry '" + entry + "' in " + option + "; expected name[:slots]";
            return false;
        }
        hosts.push_back(*host);
        any = true;
    }
    if (!any) {
        error = option + " needs a host list, name[:slots],...";
        return false;
    }
    return true;
}

bool parse_hostfile(const std::string &path, std::vector<HostSlots> &hosts, std::string &error) {
    std::ifstream file(path);
    if (!file) {
        error = "cannot read hostfile '" + path + "': " + std::strerror(errno);
        return false;
    }
    std::string line;
    size_t found = 0;
    for (int number = 1; std::getline(file, line); ++number) {
        const std::string where = path + ":" + std::to_string(number) + ": ";
        line = line.substr(0, line.find('#'));
        // Open MPI's lexer takes "slots = 4" as well as "slots=4".
        for (size_t at; (at = line.find(" =")) != std::string::npos;) line.erase(at, 1);
        for (size_t at; (at = line.find("= ")) != std::string::npos;) line.erase(at + 1, 1);
        std::stringstream words(line);
        std::string first;
        if (!(words >> first)) continue;
        auto host = parse_host_entry(first);
        if (!host) {
            error = where + "bad host entry '" + first + "'; expected name[:slots] or name slots=N";
            return false;
        }
        std::string word;
        while (words >> word) {
            auto eq = word.find('=');
            std::string key = lower(word.substr(0, eq));
            if (key == "max_slots" || key == "max-slots") continue;  // Open MPI's cap: nothing to cap here
            if (eq == std::string::npos || (key != "slots" && key != "slot" && key != "count")) {
                error = where + "unknown key '" + word + "'; expected slots=N";
                return false;
            }
            auto slots = parse_positive(word.substr(eq + 1));
            if (!slots) {
                error = where + "bad '" + word + "'; slots must be a positive integer";
                return false;
            }
            host->slots = *slots;
        }
        hosts.push_back(*host);
        ++found;
    }
    if (found == 0) {
        error = "hostfile '" + path + "' names no host";
        return false;
    }
    return true;
}

bool parse_map_by(const std::string &text, MapPolicy &policy, std::string &error) {
    const std::string expected =
        "--map-by accepts slot, node, core, hwthread, socket, numa, l3cache or ppr:N:OBJECT, with :PE=n, not '" +
        text + "'";
    std::vector<std::string> parts;
    std::stringstream stream(text);
    for (std::string part; std::getline(stream, part, ':');) parts.push_back(part);
    if (parts.empty()) {
        error = expected;
        return false;
    }
    MapPolicy result;
    result.cores_per_rank = policy.cores_per_rank;
    size_t next = 1;
    const std::string object = lower(parts[0]);
    if (object == "ppr") {
        auto count = parts.size() >= 3 ? parse_positive(parts[1]) : std::nullopt;
        auto level = parts.size() >= 3 ? parse_level(lower(parts[2])) : std::nullopt;
        if (!count || !level) {
            error = expected;
            return false;
        }
        result.kind = MapPolicy::Kind::ppr;
        result.per_object = *count;
        result.ppr_object = *level;
        if (*level == Level::hwthread) result.within = Level::hwthread;
        next = 3;
    } else if (object == "slot" || object == "slots" || object == "core") {
        result.kind = MapPolicy::Kind::slot;
    } else if (auto level = parse_level(object); level && *level == Level::node) {
        result.kind = MapPolicy::Kind::node;
    } else if (level) {
        result.kind = MapPolicy::Kind::slot;
        result.within = *level;
    } else {
        error = expected;
        return false;
    }
    for (size_t i = next; i < parts.size(); ++i) {
        std::string qualifier = lower(parts[i]);
        if (qualifier.rfind("pe=", 0) == 0) {
            auto count = parse_positive(qualifier.substr(3));
            if (!count) {
                error = "--map-by " + text + ": PE= needs a positive number of cores per rank";
                return false;
            }
            result.cores_per_rank = *count;
        } else if (qualifier == "oversubscribe" || qualifier == "nooversubscribe" || qualifier == "span" ||
                   qualifier == "nolocal" || qualifier == "display") {
            // Accepted: oversubscription is always allowed, and the map is the same either way.
        } else {
            error = "--map-by " + text + ": unknown qualifier '" + parts[i] + "' (PE=n, OVERSUBSCRIBE, SPAN)";
            return false;
        }
    }
    policy = result;
    return true;
}

bool parse_bind_to(const std::string &text, BindTo &bind, MapPolicy &policy, std::string &error) {
    const std::string expected =
        "--bind-to accepts core, hwthread, socket, numa, l3cache or none, not '" + text + "'";
    std::vector<std::string> parts = split_list(text, ':');
    if (parts.empty()) {
        error = expected;
        return false;
    }
    const std::string level = lower(parts[0]);
    if (level == "none") {
        bind = BindTo::none;
    } else if (level == "core" || level == "cores") {
        bind = BindTo::core;
    } else if (level == "hwthread" || level == "thread" || level == "pu") {
        bind = BindTo::hwthread;
    } else if (level == "socket" || level == "package") {
        bind = BindTo::socket;
    } else if (level == "numa" || level == "numanode") {
        bind = BindTo::numa;
    } else if (level == "l3cache" || level == "l3") {
        bind = BindTo::l3cache;
    } else {
        error = expected;
        return false;
    }
    for (size_t i = 1; i < parts.size(); ++i) {
        std::string qualifier = lower(parts[i]);
        if (auto count = parse_positive(qualifier); count && bind == BindTo::core) {
            policy.cores_per_rank = *count;  // Hydra: -bind-to core:2
        } else if (qualifier != "overload-allowed" && qualifier != "if-supported" && qualifier != "ordered") {
            error = "--bind-to " + text + ": unknown qualifier '" + parts[i] + "' (overload-allowed, if-supported)";
            return false;
        }
    }
    return true;
}

bool parse_rank_by(const std::string &text, RankBy &rank_by, std::string &error) {
    std::vector<std::string> parts = split_list(lower(text), ':');
    const std::string what = parts.empty() ? std::string() : parts[0];
    if (what == "slot" || what == "core" || what == "hwthread") {
        rank_by = RankBy::slot;
    } else if (what == "node") {
        rank_by = RankBy::node;
    } else {
        error = "--rank-by accepts slot or node, not '" + text + "'";
        return false;
    }
    for (size_t i = 1; i < parts.size(); ++i) {
        if (parts[i] != "span" && parts[i] != "fill") {
            error = "--rank-by " + text + ": unknown qualifier '" + parts[i] + "'";
            return false;
        }
    }
    return true;
}

void set_variable(std::vector<std::string> &env, const std::string &name, const std::string &value) {
    for (auto &entry : env) {
        if (entry.size() > name.size() && entry[name.size()] == '=' && entry.compare(0, name.size(), name) == 0) {
            entry = name + "=" + value;
            return;
        }
    }
    env.push_back(name + "=" + value);
}

void export_from_environment(const std::string &name, std::vector<std::string> &env) {
    if (const char *value = std::getenv(name.c_str())) set_variable(env, name, value);
}

void export_whole_environment(std::vector<std::string> &env) {
    // What describes mpirun's own shell, session or launcher would be wrong
    // on another node (and PMIX_* would point ranks at the wrong server).
    static const char *const own_prefixes[] = {"PMIX_", "SLURM_", "SSH_", "MPIRUN_DAEMON_", "OMPI_", "PMI_"};
    static const char *const own_names[] = {"HOSTNAME", "HOST", "PWD", "OLDPWD", "SHLVL", "_", "DISPLAY", "XAUTHORITY",
                                            "TMPDIR"};
    for (char **entry = environ; entry && *entry; ++entry) {
        std::string assignment = *entry;
        auto eq = assignment.find('=');
        if (eq == std::string::npos || eq == 0) continue;
        std::string name = assignment.substr(0, eq);
        bool own = false;
        for (const char *prefix : own_prefixes) own = own || name.rfind(prefix, 0) == 0;
        for (const char *exact : own_names) own = own || name == exact;
        if (!own) set_variable(env, name, assignment.substr(eq + 1));
    }
}

std::string absolute_path(const std::string &path, const std::string &cwd) {
    if (path.empty() || path.front() == '/' || cwd.empty()) return path;
    std::string base = cwd;
    if (base.back() != '/') base += '/';
    return path == "." ? cwd : base + (path.rfind("./", 0) == 0 ? path.substr(2) : path);
}

}  // namespace axon::launcher
