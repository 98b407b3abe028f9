// head_address.cpp -- mpirun's own IPv4 addresses, for its daemons.
#include "launcher/head_address.hpp"

#include "base/unique_fd.h"

#include <arpa/inet.h>
#include <fnmatch.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>

namespace axon::launcher {
namespace {

bool is_loopback(const in_addr &address) { return (ntohl(address.s_addr) >> 24) == 127; }

std::string text_of(const in_addr &address) {
    char text[INET_ADDRSTRLEN];
    return inet_ntop(AF_INET, &address, text, sizeof text) ? text : "";
}

// The source address this machine uses to reach `host` (no packet is sent).
std::string route_source_to(const std::string &host) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo *found = nullptr;
    if (getaddrinfo(host.c_str(), "9", &hints, &found) != 0 || !found) return {};
    std::string result;
    UniqueFd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (fd && connect(fd.get(), found->ai_addr, found->ai_addrlen) == 0) {
        sockaddr_in local{};
        socklen_t len = sizeof local;
        if (getsockname(fd.get(), reinterpret_cast<sockaddr *>(&local), &len) == 0 && !is_loopback(local.sin_addr))
            result = text_of(local.sin_addr);
    }
    freeaddrinfo(found);
    return result;
}

struct Interface {
    std::string name;
    in_addr address{};
};

// Every IPv4 address of an interface that is up, in the kernel's order.
std::vector<Interface> up_interfaces() {
    std::vector<Interface> result;
    ifaddrs *list = nullptr;
    if (getifaddrs(&list) != 0) return result;
    for (ifaddrs *entry = list; entry; entry = entry->ifa_next) {
        if (!entry->ifa_addr || entry->ifa_addr->sa_family != AF_INET || !(entry->ifa_flags & IFF_UP)) continue;
        result.push_back({entry->ifa_name, reinterpret_cast<sockaddr_in *>(entry->ifa_addr)->sin_addr});
    }
    freeifaddrs(list);
    return result;
}

// "10.1.0.0/16" contains `address`; false when `spec` is not a CIDR subnet.
bool in_subnet(const std::string &spec, const in_addr &address) {
    auto slash = spec.find('/');
    if (slash == std::string::npos) return false;
    in_addr network{};
    if (inet_pton(AF_INET, spec.substr(0, slash).c_str(), &network) != 1) return false;
    int bits = std::atoi(spec.c_str() + slash + 1);
    if (bits < 0 || bits > 32) return false;
    uint32_t mask = bits == 0 ? 0 : ~uint32_t{0} << (32 - bits);
    return (ntohl(network.s_addr) & mask) == (ntohl(address.s_addr) & mask);
}

}  // namespace

bool interface_addresses(const std::vector<std::string> &specs, std::vector<std::string> &addresses,
                         std::string &error) {
    const std::vector<Interface> interfaces = up_interfaces();
    for (const auto &spec : specs) {
        bool matched = false;
        for (const auto &interface : interfaces) {
            if (fnmatch(spec.c_str(), interface.name.c_str(), 0) != 0 && !in_subnet(spec, interface.address))
                continue;
            matched = true;
            std::string text = text_of(interface.address);
            if (std::find(addresses.begin(), addresses.end(), text) == addresses.end()) addresses.push_back(text);
        }
        if (!matched) {
            error = "no interface that is up matches '" + spec + "' (interface names, patterns or a.b.c.d/n)";
            return false;
        }
    }
    return true;
}

std::vector<std::string> head_addresses_for(const std::string &host, const std::vector<std::string> &chosen) {
    if (!chosen.empty()) return chosen;
    std::vector<std::string> list;
    if (std::string route = route_source_to(host); !route.empty()) list.push_back(route);
    for (const auto &interface : up_interfaces()) {
        if (is_loopback(interface.address)) continue;
        std::string text = text_of(interface.address);
        if (std::find(list.begin(), list.end(), text) == list.end()) list.push_back(text);
    }
    if (list.empty()) list.push_back("127.0.0.1");
    return list;
}

}  // namespace axon::launcher
