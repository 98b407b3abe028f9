// Dynamic processes: ports and the name service (MPI-4.1 11.2.2-11.2.5; see
// docs/dpm.md, "Ports and the meeting of two groups", "Name service").
//
// A port name: "axon-port:<tcp port>:<token>:<host name>:<addr>,<addr>,..."
// — the listening socket's port, a random 128-bit token the connecting root
// must present, the host, and every IPv4 address of an interface that is up
// (the socket listens on all of them). The name service is the launcher's
// (rte::publish_name and friends: PMIx).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mpi/api.h"
#include "mpi/dpm/internal.h"
#include "mpi/info.h"
#include "rte/rte.h"

namespace axon::mpi::dpm {

namespace {

constexpr const char* kPortPrefix = "axon-port";

std::string hex(const uint8_t* b, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += digits[b[i] >> 4];
    s += digits[b[i] & 15];
  }
  return s;
}

bool unhex(const std::string& s, uint8_t* out, size_t n) {
  if (s.size() != 2 * n) return false;
  for (size_t i = 0; i < n; ++i) {
    unsigned v = 0;
    if (sscanf(s.c_str() + 2 * i, "%2x", &v) != 1) return false;
    if (!isxdigit(static_cast<unsigned char>(s[2 * i])) || !isxdigit(static_cast<unsigned char>(s[2 * i + 1])))
      return false;
    out[i] = static_cast<uint8_t>(v);
  }
  return true;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t k = s.find(sep, start);
    out.push_back(s.substr(start, k == std::string::npos ? std::string::npos : k - start));
    if (k == std::string::npos) return out;
    start = k + 1;
  }
}

// Under the PML lock. Shared: a thread accepting on a port keeps it (its
// listener and token) while other threads open and close ports, which moves
// the list's entries (MPI_Comm_spawn from several threads at once).
std::vector<std::shared_ptr<Port>> open_ports;

}  // namespace

std::shared_ptr<Port> find_port(const char* name) {
  for (const auto& p : open_ports)
    if (p->name == name) return p;
  return nullptr;
}

// Removes the port from the list (an accept still running on it keeps its
// listener until it returns); false when no open port has that name.
bool close_port(const std::string& name) {
  progress::Guard guard;
  for (size_t i = 0; i < open_ports.size(); ++i)
    if (open_ports[i]->name == name) {
      open_ports.erase(open_ports.begin() + static_cast<long>(i));
      return true;
    }
  return false;
}

bool parse_port(const char* name, PortAddress* out) {
  if (!name || strnlen(name, MPI_MAX_PORT_NAME) >= MPI_MAX_PORT_NAME) return false;
  std::vector<std::string> f = split(name, ':');
  if (f.size() != 5 || f[0] != kPortPrefix) return false;
  char* end = nullptr;
  long port = strtol(f[1].c_str(), &end, 10);
  if (f[1].empty() || *end || port <= 0 || port > 65535) return false;
  out->port = static_cast<uint16_t>(port);
  if (!unhex(f[2], out->token, kTokenBytes)) return false;
  out->host = f[3];
  bool same_host = out->host == rte::job().hostname;
  std::vector<uint32_t> loopback;
  for (const std::string& a : split(f[4], ',')) {
    in_addr ia{};
    if (inet_pton(AF_INET, a.c_str(), &ia) != 1) return false;
    if ((ntohl(ia.s_addr) >> 24) == 127) loopback.push_back(ia.s_addr);
    else out->addrs.push_back(ia.s_addr);
  }
  // The loopback address reaches the port only from its own host: tried
  // first there, never elsewhere.
  if (same_host) out->addrs.insert(out->addrs.begin(), loopback.begin(), loopback.end());
  return !out->addrs.empty();
}

int open_port(std::string* name) {
  UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (s.get() < 0) return MPI_ERR_OTHER;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(s.get(), 64) != 0)
    return MPI_ERR_OTHER;
  socklen_t sl = sizeof sa;
  getsockname(s.get(), reinterpret_cast<sockaddr*>(&sa), &sl);
  auto port = std::make_shared<Port>();
  Port& p = *port;
  if (getrandom(p.token, sizeof p.token, 0) != static_cast<ssize_t>(sizeof p.token)) return MPI_ERR_OTHER;
  std::string addrs;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
      char buf[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
      std::string one = buf;
      if (addrs.size() + one.size() + 300 > MPI_MAX_PORT_NAME) break;  // the name must fit
      addrs += (addrs.empty() ? "" : ",") + one;
    }
    freeifaddrs(list);
  }
  if (addrs.empty()) addrs = "127.0.0.1";
  p.name = std::string(kPortPrefix) + ":" + std::to_string(ntohs(sa.sin_port)) + ":" + hex(p.token, kTokenBytes) +
           ":" + rte::job().hostname + ":" + addrs;
  if (p.name.size() >= MPI_MAX_PORT_NAME) return MPI_ERR_OTHER;
  p.listener = std::move(s);
  *name = p.name;
  open_ports.push_back(std::move(port));
  return MPI_SUCCESS;
}

}  // namespace axon::mpi::dpm

using namespace axon;
using namespace axon::mpi;
using namespace axon::mpi::dpm;

AXON_API(int, MPI_Publish_name, (const char* service_name, MPI_Info info, const char* port_name)) {
  const char* fn = "MPI_Publish_name";
  if (!service_name || !port_name) return raise_self(MPI_ERR_ARG, fn, "NULL argument");
  if (info != MPI_INFO_NULL && !info_from_handle(info)) return raise_self(MPI_ERR_INFO, fn, "invalid info");
  int rc = rte::publish_name(service_name, port_name);
  if (rc < 0) return raise_self(MPI_ERR_NAME, fn, "no name service: this process was not started by mpirun");
  if (rc > 0) return raise_self(MPI_ERR_NAME, fn, "the service name is published already");
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Lookup_name, (const char* service_name, MPI_Info info, char* port_name)) {
  const char* fn = "MPI_Lookup_name";
  if (!service_name || !port_name) return raise_self(MPI_ERR_ARG, fn, "NULL argument");
  if (info != MPI_INFO_NULL && !info_from_handle(info)) return raise_self(MPI_ERR_INFO, fn, "invalid info");
  std::string value;
  int rc = rte::lookup_name(service_name, &value);
  if (rc < 0) return raise_self(MPI_ERR_NAME, fn, "no name service: this process was not started by mpirun");
  if (rc > 0) return raise_self(MPI_ERR_NAME, fn, "no such service name is published");
  snprintf(port_name, MPI_MAX_PORT_NAME, "%s", value.c_str());
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Unpublish_name, (const char* service_name, MPI_Info info, const char* port_name)) {
  const char* fn = "MPI_Unpublish_name";
  if (!service_name || !port_name) return raise_self(MPI_ERR_ARG, fn, "NULL argument");
  if (info != MPI_INFO_NULL && !info_from_handle(info)) return raise_self(MPI_ERR_INFO, fn, "invalid info");
  int rc = rte::unpublish_name(service_name);
  if (rc < 0) return raise_self(MPI_ERR_SERVICE, fn, "no name service: this process was not started by mpirun");
  if (rc > 0) return raise_self(MPI_ERR_SERVICE, fn, "no such service name is published");
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Open_port, (MPI_Info info, char* port_name)) {
  const char* fn = "MPI_Open_port";
  if (!port_name) return raise_self(MPI_ERR_ARG, fn, "port_name is NULL");
  if (info != MPI_INFO_NULL && !info_from_handle(info)) return raise_self(MPI_ERR_INFO, fn, "invalid info");
  std::string name;
  int rc;
  {
    progress::Guard guard;
    rc = open_port(&name);
  }
  if (rc != MPI_SUCCESS) return raise_self(rc, fn, "cannot open a listening socket");
  snprintf(port_name, MPI_MAX_PORT_NAME, "%s", name.c_str());
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Close_port, (const char* port_name)) {
  const char* fn = "MPI_Close_port";
  if (!port_name) return raise_self(MPI_ERR_ARG, fn, "port_name is NULL");
  if (close_port(port_name)) return MPI_SUCCESS;
  return raise_self(MPI_ERR_PORT, fn, "no port of this process has that name");
}
