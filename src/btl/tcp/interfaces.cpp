// btl/tcp: which IPv4 interfaces a rank listens on (AXON_BTL_TCP_IF_INCLUDE /
// _EXCLUDE; docs/tcp.md, "Interfaces").
#include <arpa/inet.h>
#include <fnmatch.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/param.h"
#include "btl/tcp/internal.h"

namespace axon::btl::tcp {

namespace {

StringParam if_include_param{"AXON_BTL_TCP_IF_INCLUDE", "",
                             "Comma-separated interfaces (names, shell patterns such as eth*, or "
                             "CIDR subnets such as 10.0.0.0/8) the TCP transport may use; exclusive "
                             "with AXON_BTL_TCP_IF_EXCLUDE"};
StringParam if_exclude_param{"AXON_BTL_TCP_IF_EXCLUDE", "",
                             "Comma-separated interfaces (names, patterns or CIDR subnets) the TCP "
                             "transport must not use (default: docker*, virbr*; interfaces that are "
                             "down are never used)"};

struct Pattern {
  std::string name;  // a name or shell pattern, or empty for a subnet
  uint32_t net = 0, mask = 0;  // network order
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) items.push_back(item);
  return items;
}

// Parses "eth0", "eth*" or "10.1.0.0/16". False (and *why) on a malformed subnet.
bool parse_patterns(const std::string& text, std::vector<Pattern>* out, std::string* why) {
  for (const std::string& item : split_list(text)) {
    Pattern p;
    size_t slash = item.find('/');
    if (slash == std::string::npos) {
      p.name = item;
    } else {
      in_addr a{};
      char* end = nullptr;
      long bits = strtol(item.c_str() + slash + 1, &end, 10);
      if (inet_pton(AF_INET, item.substr(0, slash).c_str(), &a) != 1 || *end || end == item.c_str() + slash + 1 ||
          bits < 0 || bits > 32) {
        *why = "\"" + item + "\" is neither an interface name nor an IPv4 subnet such as 10.0.0.0/8";
        return false;
      }
      p.mask = htonl(bits == 0 ? 0 : ~uint32_t(0) << (32 - bits));
      p.net = a.s_addr & p.mask;
    }
    out->push_back(p);
  }
  return true;
}

bool matches(const std::vector<Pattern>& patterns, const Interface& i) {
  for (const Pattern& p : patterns) {
    if (!p.name.empty() ? fnmatch(p.name.c_str(), i.name.c_str(), 0) == 0 : (i.addr & p.mask) == p.net)
      return true;
  }
  return false;
}

uint32_t link_speed(const std::string& name) {
  std::ifstream f("/sys/class/net/" + name + "/speed");
  long v = 0;
  if (f >> v && v > 0) return static_cast<uint32_t>(v);
  return 0;
}

// Every IPv4 address of an interface that is up, before any filtering.
std::vector<Interface> list_interfaces() {
  std::vector<Interface> all;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return all;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if (!(i->ifa_flags & IFF_UP) || !(i->ifa_flags & IFF_RUNNING)) continue;
    Interface it;
    it.name = i->ifa_name;
    it.addr = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
    it.mask = i->ifa_netmask ? reinterpret_cast<sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr : 0xffffffffu;
    it.loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
    it.speed_mbs = it.loopback ? 0 : link_speed(it.name);
    all.push_back(it);
  }
  freeifaddrs(list);
  return all;
}

}  // namespace

std::string describe(const std::vector<Interface>& list) {
  std::string s;
  for (const Interface& i : list) {
    if (!s.empty()) s += ", ";
    char buf[INET_ADDRSTRLEN] = "?";
    in_addr a{i.addr};
    inet_ntop(AF_INET, &a, buf, sizeof buf);
    s += i.name + " " + buf;
  }
  return s.empty() ? "none" : s;
}

int choose_interfaces(std::vector<Interface>* usable) {
  const std::string& inc = if_include_param.get();
  const std::string& exc = if_exclude_param.get();
  if (!inc.empty() && !exc.empty()) {
    log::error("tcp: AXON_BTL_TCP_IF_INCLUDE and AXON_BTL_TCP_IF_EXCLUDE are both set; set only one of them");
    return 1;
  }
  std::vector<Pattern> patterns;
  std::string why;
  if (!parse_patterns(inc.empty() ? (exc.empty() ? "docker*,virbr*" : exc) : inc, &patterns, &why)) {
    log::error("tcp: %s: %s", inc.empty() ? "AXON_BTL_TCP_IF_EXCLUDE" : "AXON_BTL_TCP_IF_INCLUDE", why.c_str());
    return 1;
  }
  std::vector<Interface> all = list_interfaces();
  for (const Interface& i : all)
    if (matches(patterns, i) == !inc.empty()) usable->push_back(i);
  if (usable->empty()) {
    if (!inc.empty())
      log::error("tcp: AXON_BTL_TCP_IF_INCLUDE=%s matches no interface that is up (interfaces: %s)", inc.c_str(),
                 describe(all).c_str());
    else
      log::error("tcp: no usable network interface (AXON_BTL_TCP_IF_EXCLUDE=%s; interfaces: %s)",
                 exc.empty() ? "docker*,virbr* (default)" : exc.c_str(), describe(all).c_str());
    return 1;
  }
  log::debug(1, "tcp: listening on %s", describe(*usable).c_str());
  return 0;
}

}  // namespace axon::btl::tcp
