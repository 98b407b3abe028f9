// btl/tcp: which IPv4 interfaces a rank listens on (AXON_BTL_TCP_IF_INCLUDE /
// _EXCLUDE; docs/tcp.md, "Interfaces"), its listening sockets, and which of
// a peer's addresses to use, with the further pairs to stripe over
// (docs/tcp.md, "Start-up and business card", "Striping").
#include <arpa/inet.h>
#include <fnmatch.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/param.h"
#include "btl/tcp/internal.h"
#include "rte/rte.h"

namespace axon::btl::tcp {

namespace {

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

// ---- listening sockets -------------------------------------------------------------

int TcpTransport::listen_on(const Interface& i) {
  int64_t first = port_min_param.get(), range = std::max<int64_t>(1, port_range_param.get());
  if (first < 0 || first > 65535) {
    log::error("tcp: AXON_BTL_TCP_PORT_MIN=%lld is not a port number", static_cast<long long>(first));
    return 1;
  }
  if (first == 0) range = 1;
  int last_error = 0;
  for (int64_t port = first; port < first + range && port <= 65535; ++port) {
    UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) {
      log::error("tcp: socket() failed: %s", strerror(errno));
      return 1;
    }
    // Connections of an earlier job to this port (refused strangers
    // included) may linger in TIME_WAIT; they must not keep us from it.
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = i.addr;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      last_error = errno;
      if (errno == EADDRINUSE || errno == EACCES) continue;
      break;
    }
    if (listen(fd.get(), SOMAXCONN) != 0) {
      last_error = errno;
      continue;
    }
    socklen_t sl = sizeof sa;
    getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &sl);
    auto l = std::make_unique<Listener>();
    l->is_listener = true;
    l->iface = i;
    l->port = sa.sin_port;
    l->fd = std::move(fd);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = static_cast<Pollable*>(l.get());
    epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, l->fd.get(), &ev);
    log::debug(2, "tcp: listening on %s (%s)", ip_text(i.addr, l->port).c_str(), i.name.c_str());
    listeners_.push_back(std::move(l));
    return 0;
  }
  log::error("tcp: cannot listen on %s (%s) at any port in %lld..%lld: %s", ip_text(i.addr, 0).c_str(),
             i.name.c_str(), static_cast<long long>(first), static_cast<long long>(first + range - 1),
             strerror(last_error));
  return 1;
}

// ---- a peer's addresses ------------------------------------------------------------

// Picks the peer's address: its loopback one when it shares our node (ranks
// of one node share a network namespace), else one on a subnet one of our
// interfaces is on, else any non-loopback one (routed).
void TcpTransport::choose_address(int r, const std::vector<uint8_t>& bytes) {
  Card card;
  if (!parse_card(bytes.data(), bytes.size(), &card)) {
    log::warn("tcp: rank %d published a business card this version cannot read", r);
    return;
  }
  const std::vector<CardEntry>& entries = card.entries;
  const CardEntry* pick = nullptr;
  const Interface* via = nullptr;  // our interface on pick's subnet
  const bool local = same_node(r);
  if (local) {
    for (const CardEntry& e : entries)
      if (e.loopback && !pick) pick = &e;
    if (!pick && !entries.empty()) pick = &entries[0];
  } else {
    for (const CardEntry& e : entries) {
      if (e.loopback || pick) continue;
      for (const auto& l : listeners_)
        if (!pick && !l->iface.loopback && (e.addr & l->iface.mask) == (l->iface.addr & l->iface.mask)) {
          pick = &e;
          via = &l->iface;
        }
    }
    for (const CardEntry& e : entries)
      if (!e.loopback && !pick) pick = &e;
  }
  if (!pick) {
    log::debug(1, "tcp: no address of rank %d is usable from here", r);
    return;
  }
  Peer& p = peers_[r];
  p.reachable = true;
  p.addr = pick->addr;
  p.port = pick->port;
  std::memcpy(p.token, card.token, sizeof p.token);
  p.weight = via ? weight_of(via->speed_mbs, pick->speed_mbs) : kDefaultWeight;
  log::debug(2, "tcp: rank %d at %s", r, ip_text(p.addr, p.port).c_str());
  if (!striping_param.get()) return;
  // Striping links: each further pair of one of our interfaces and one of
  // the peer's addresses on its subnet, neither used twice.
  std::vector<const CardEntry*> used{pick};
  std::vector<const Interface*> used_ifaces{via};
  for (const auto& l : listeners_) {
    if (p.extra.size() + 1 >= kMaxLinks) break;
    if (local) {
      if (!stripe_local_param.get()) break;
      for (const CardEntry& e : entries)  // one node: every other address the peer listens on
        if (std::find(used.begin(), used.end(), &e) == used.end() && p.extra.size() + 1 < kMaxLinks) {
          used.push_back(&e);
          p.extra.push_back({e.addr, e.port, kDefaultWeight});
        }
      break;
    }
    if (l->iface.loopback || std::find(used_ifaces.begin(), used_ifaces.end(), &l->iface) != used_ifaces.end())
      continue;
    for (const CardEntry& e : entries) {
      if (e.loopback || std::find(used.begin(), used.end(), &e) != used.end()) continue;
      if ((e.addr & l->iface.mask) != (l->iface.addr & l->iface.mask)) continue;
      used.push_back(&e);
      used_ifaces.push_back(&l->iface);
      p.extra.push_back({e.addr, e.port, weight_of(l->iface.speed_mbs, e.speed_mbs)});
      break;
    }
  }
  if (!p.extra.empty()) log::debug(2, "tcp: rank %d: %zu more connection(s) for striping", r, p.extra.size());
}

// Ranks of this job: PMIx says who shares the node. A foreign process is
// taken as local when its host name is ours (its loopback address is then
// reachable; separate network namespaces with one host name are not
// supported for dynamic processes).
bool TcpTransport::same_node(int id) {
  if (const rte::Proc* p = rte::foreign(id)) return p->hostname == rte::job().hostname;
  return rte::is_local(id);
}

uint32_t TcpTransport::weight_of(uint32_t a, uint32_t b) {
  if (a && b) return std::min(a, b);
  return a ? a : b ? b : kDefaultWeight;
}

}  // namespace axon::btl::tcp
