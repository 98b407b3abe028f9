// Dynamic processes (MPI-4.1 chapter 11): ports, MPI_Comm_accept /
// MPI_Comm_connect, MPI_Comm_join, MPI_Comm_spawn[_multiple], the parent
// that MPI_Comm_get_parent returns (the entry point and MPI_Comm_disconnect
// are in src/mpi/communicator.cpp) and the name service. See docs/dpm.md.
//
// Two groups meet through their roots over one TCP socket (a port's
// listening socket, or the user's socket for MPI_Comm_join). Over it the
// roots swap their groups' descriptions — for every member its PMIx
// namespace, its rank there, its host name and its btl/tcp business card —
// and then run the context-id agreement: each group ANDs its free context
// pairs (a MaskAllreduce over the local communicator), the roots swap and AND
// the two results, each root hands the common value back to its group, every
// member reserves the lowest common pair if it is still free locally, and
// the same AND over both groups confirms it (or everyone releases it and
// tries again) — the two rounds of src/mpi/context_id.h, with the socket as
// the bridge between the two groups.
//
// Every member then names each remote process: a process of its own job by
// its world rank, any other by a foreign id (rte::proc_id) that btl::add_peer
// routes over tcp (opened on first use when the job did not open it), and the
// intercommunicator is built like MPI_Intercomm_create's.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "base/param.h"
#include "btl/btl.h"
#include "coll/coll.h"
#include "mpi/api.h"
#include "mpi/communicator.h"
#include "mpi/context_id.h"
#include "mpi/dpm.h"
#include "mpi/info.h"
#include "rte/rte.h"

namespace axon::mpi {

namespace {

IntParam timeout_param{"AXON_DPM_TIMEOUT", 60,
                       "Seconds MPI_Comm_connect waits for an MPI_Comm_accept on the port (then "
                       "MPI_ERR_PORT), and MPI_Comm_spawn for its children to start and connect "
                       "(then MPI_ERR_SPAWN); the info key \"timeout\" overrides it for one call"};

StringParam parent_port_param{"AXON_DPM_PARENT_PORT", "",
                              "Set by MPI_Comm_spawn in its children's environment (not by users): the "
                              "parent's port, which MPI_Init connects to (MPI_Comm_get_parent)"};

constexpr uint32_t kMeetMagic = 0x41584450;  // "AXDP"
constexpr uint16_t kMeetVersion = 1;
constexpr int kTokenBytes = 16;
constexpr uint32_t kMaxMessage = 64u << 20;
constexpr const char* kPortPrefix = "axon-port";

// ---- sockets, driven while the PML progresses ----------------------------------

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd, bool owned = true) : fd_(fd), owned_(owned) {}
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  Socket(Socket&& o) noexcept : fd_(o.fd_), owned_(o.owned_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept {
    reset();
    fd_ = o.fd_;
    owned_ = o.owned_;
    o.fd_ = -1;
    return *this;
  }
  ~Socket() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0 && owned_) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  bool owned_ = true;  // MPI_Comm_join's socket belongs to the user
};

uint64_t deadline_after(double seconds) {
  if (seconds <= 0) return 0;  // none
  return now_ns() + static_cast<uint64_t>(seconds * 1e9);
}
bool expired(uint64_t deadline) { return deadline != 0 && now_ns() > deadline; }

// Waits, driving MPI progress, until `fd` is ready for `events`. 1 ready,
// 0 deadline passed, -1 error.
int wait_fd(int fd, short events, uint64_t deadline) {
  int result = 0;
  pml::wait_until([&] {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, 0);
    if (n > 0) {
      result = 1;
      return true;
    }
    if (n < 0 && errno != EINTR) {
      result = -1;
      return true;
    }
    if (expired(deadline)) {
      result = 0;
      return true;
    }
    return false;
  });
  return result;
}

// Moves all `len` bytes at `p` through the socket, sending when `out`, else
// receiving; while the socket would block, waits with MPI progress.
// MPI_SUCCESS, or MPI_ERR_PORT (closed by the other side, timed out, broken).
int move_all(int fd, char* p, size_t len, bool out, uint64_t deadline) {
  while (len > 0) {
    ssize_t n = out ? ::send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL) : ::recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (wait_fd(fd, out ? POLLOUT : POLLIN, deadline) != 1) return MPI_ERR_PORT;
      continue;
    }
    return MPI_ERR_PORT;
  }
  return MPI_SUCCESS;
}

int send_all(int fd, const void* data, size_t len, uint64_t deadline) {
  // send() only reads the bytes; move_all takes one pointer type for both ways.
  return move_all(fd, const_cast<char*>(static_cast<const char*>(data)), len, true, deadline);
}

int recv_all(int fd, void* data, size_t len, uint64_t deadline) {
  return move_all(fd, static_cast<char*>(data), len, false, deadline);
}

// A message: 4-byte length, then the bytes.
int send_msg(int fd, const std::vector<uint8_t>& m, uint64_t deadline) {
  uint32_t len = static_cast<uint32_t>(m.size());
  int rc = send_all(fd, &len, sizeof len, deadline);
  return rc == MPI_SUCCESS ? send_all(fd, m.data(), m.size(), deadline) : rc;
}

int recv_msg(int fd, std::vector<uint8_t>* m, uint64_t deadline) {
  uint32_t len = 0;
  int rc = recv_all(fd, &len, sizeof len, deadline);
  if (rc != MPI_SUCCESS) return rc;
  if (len > kMaxMessage) return MPI_ERR_PORT;
  m->resize(len);
  return recv_all(fd, m->data(), len, deadline);
}

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

// ---- ports ------------------------------------------------------------------------
//
// A port name: "axon-port:<tcp port>:<token>:<host name>:<addr>,<addr>,..."
// — the listening socket's port, a random 128-bit token the connecting root
// must present, the host, and every IPv4 address of an interface that is up
// (the socket listens on all of them).

struct Port {
  std::string name;
  Socket listener;
  uint8_t token[kTokenBytes] = {};
};
// Under the PML lock. Shared: a thread accepting on a port keeps it (its
// listener and token) while other threads open and close ports, which moves
// the list's entries (MPI_Comm_spawn from several threads at once).
std::vector<std::shared_ptr<Port>> open_ports;

std::shared_ptr<Port> find_port(const char* name) {
  for (const auto& p : open_ports)
    if (p->name == name) return p;
  return nullptr;
}

// Removes the port from the list (an accept still running on it keeps its
// listener until it returns); false when no open port has that name.
bool close_port(const std::string& name) {
  pml::Guard guard;
  for (size_t i = 0; i < open_ports.size(); ++i)
    if (open_ports[i]->name == name) {
      open_ports.erase(open_ports.begin() + static_cast<long>(i));
      return true;
    }
  return false;
}

struct PortAddress {
  uint16_t port = 0;  // host order
  uint8_t token[kTokenBytes] = {};
  std::string host;
  std::vector<uint32_t> addrs;  // network order, in the order to try
};

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
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
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

// Connects to the port within the deadline: MPI_ERR_PORT when nobody listens.
int dial_port(const PortAddress& a, uint64_t deadline, Socket* out) {
  for (uint32_t addr : a.addrs) {
    Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (s.get() < 0) return MPI_ERR_OTHER;
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = addr;
    sa.sin_port = htons(a.port);
    int rc = ::connect(s.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    if (rc != 0 && errno != EINPROGRESS) continue;
    if (rc != 0) {
      // One address may be unreachable from here: give each a few seconds.
      uint64_t step = now_ns() + 5000000000ull;
      if (wait_fd(s.get(), POLLOUT, deadline && deadline < step ? deadline : step) != 1) continue;
      int err = 0;
      socklen_t sl = sizeof err;
      getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &sl);
      if (err) continue;
    }
    int one = 1;
    setsockopt(s.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    *out = std::move(s);
    return MPI_SUCCESS;
  }
  return MPI_ERR_PORT;
}

// ---- group descriptions -------------------------------------------------------------

// One member, fixed size so a group is gathered with one allgather.
struct Entry {
  char nspace[256];
  char host[248];
  int32_t rank;
  uint32_t card_len;
  uint8_t card[512];
};
static_assert(sizeof(Entry) == 1024);

struct Hello {
  uint32_t magic;
  uint16_t version;
  uint16_t kind;  // 1: connect; 2: join
  uint8_t token[kTokenBytes];
};

int describe_self(Entry* e) {
  std::memset(e, 0, sizeof *e);
  const rte::Job& job = rte::job();
  snprintf(e->nspace, sizeof e->nspace, "%s", job.nspace.c_str());
  snprintf(e->host, sizeof e->host, "%s", job.hostname.c_str());
  e->rank = job.rank;
  std::vector<uint8_t> card;
  pml::Guard guard;
  if (btl::open_dynamic() != 0 || !btl::card(&card) || card.size() > sizeof e->card) return MPI_ERR_INTERN;
  e->card_len = static_cast<uint32_t>(card.size());
  std::memcpy(e->card, card.data(), card.size());
  return MPI_SUCCESS;
}

// The ids of the processes a description names; foreign ones become
// reachable over tcp.
int learn_group(const std::vector<uint8_t>& desc, std::vector<int>* ids) {
  if (desc.empty() || desc.size() % sizeof(Entry) != 0) return MPI_ERR_INTERN;
  size_t n = desc.size() / sizeof(Entry);
  pml::Guard guard;
  for (size_t i = 0; i < n; ++i) {
    Entry e;
    std::memcpy(&e, desc.data() + i * sizeof e, sizeof e);
    e.nspace[sizeof e.nspace - 1] = 0;
    e.host[sizeof e.host - 1] = 0;
    if (e.card_len > sizeof e.card || e.rank < 0) return MPI_ERR_INTERN;
    int id = rte::proc_id(e.nspace, e.rank, e.host);
    if (rte::is_foreign(id)) {
      std::vector<uint8_t> card(e.card, e.card + e.card_len);
      if (btl::add_peer(id, card) != 0) {
        log::error("cannot reach process %d of job %s on %s over tcp", e.rank, e.nspace, e.host);
        return MPI_ERR_INTERN;
      }
    }
    ids->push_back(id);
  }
  return MPI_SUCCESS;
}

// ---- the meeting of two groups --------------------------------------------------------

const Datatype* bytes_type() { return datatype_from_handle(MPI_BYTE); }

struct Bridge {
  int fd = -1;          // the root's socket to the other root (-1 elsewhere)
  uint64_t deadline = 0;
  int error = MPI_SUCCESS;  // the first failure on the socket: nothing more goes over it
};

// Bitwise AND of `words` over both groups (the root bridges them).
int and_both(Comm* lc, int root, const std::vector<int>& members, int me, int tag, Bridge* b,
             std::vector<uint64_t>* words) {
  auto local_and = [&](std::vector<uint64_t>* w) {
    MaskAllreduce reduce(&lc->coll, members, me, tag);
    reduce.start(std::move(*w));
    bool done = false;
    pml::wait_until([&] { return done || (done = reduce.step()); });
    *w = reduce.result();
    return reduce.error();
  };
  int rc = local_and(words);
  if (rc != MPI_SUCCESS) return rc;
  if (lc->rank() == root) {
    if (b->error == MPI_SUCCESS) {
      std::vector<uint8_t> mine(words->size() * sizeof(uint64_t)), theirs;
      std::memcpy(mine.data(), words->data(), mine.size());
      b->error = send_msg(b->fd, mine, b->deadline);
      if (b->error == MPI_SUCCESS) b->error = recv_msg(b->fd, &theirs, b->deadline);
      if (b->error == MPI_SUCCESS && theirs.size() != mine.size()) b->error = MPI_ERR_INTERN;
      if (b->error == MPI_SUCCESS)
        for (size_t i = 0; i < words->size(); ++i) {
          uint64_t v;
          std::memcpy(&v, theirs.data() + i * sizeof v, sizeof v);
          (*words)[i] &= v;
        }
    }
    if (b->error != MPI_SUCCESS) words->assign(words->size(), 0);
  } else {
    words->assign(words->size(), ~uint64_t{0});  // the root's value wins the AND
  }
  return local_and(words);
}

// The context pair of the intercommunicator, free in both groups (the two
// rounds of context_id.h over both groups).
int agree_pair_both(Comm* lc, int root, const std::vector<int>& members, int me, int tag, Bridge* b, int* pair) {
  for (;;) {
    ContextMask candidates;
    {
      pml::Guard guard;
      candidates = context_candidates();
    }
    std::vector<uint64_t> words(candidates.begin(), candidates.end());
    int rc = and_both(lc, root, members, me, tag, b, &words);
    if (rc != MPI_SUCCESS) return rc;
    ContextMask agreed;
    std::copy(words.begin(), words.end(), agreed.begin());
    bool reserved = false;
    int candidate;
    {
      pml::Guard guard;
      candidate = context_try_reserve(agreed, &reserved);
    }
    if (candidate < 0) return MPI_ERR_PORT;  // the roots' socket broke (or no id is free anywhere)
    std::vector<uint64_t> flag{reserved ? uint64_t{1} : uint64_t{0}};
    rc = and_both(lc, root, members, me, tag, b, &flag);
    pml::Guard guard;
    if (rc == MPI_SUCCESS && flag[0] == 1) {
      context_commit(candidate);
      *pair = candidate;
      return MPI_SUCCESS;
    }
    if (reserved) context_unreserve(candidate);
    if (rc != MPI_SUCCESS) return rc;
  }
}

// What the root does with the socket before the groups know each other:
// swap the descriptions. Accept: read the connecting root's Hello and
// description, answer with ours. Connect: the other way round. Join: both
// send, then both read.
enum class Role { Accept, Connect, Join };

// The rest of the meeting, collective over lc: `root` holds `b->fd` (the
// socket to the other root) when b->error is MPI_SUCCESS. Builds the
// intercommunicator.
int meet(Comm* lc, int root, Role role, const uint8_t* token, Bridge* b, Comm** out) {
  const char* fn = role == Role::Accept ? "MPI_Comm_accept" : role == Role::Connect ? "MPI_Comm_connect" : "MPI_Comm_join";
  int n = lc->size();
  Entry self;
  int my_rc = describe_self(&self);
  std::vector<uint8_t> local_desc(static_cast<size_t>(n) * sizeof(Entry));
  int rc = coll::allgather_bytes(&self, sizeof self, local_desc.data(), &lc->coll);
  if (rc != MPI_SUCCESS) return rc;
  for (int r = 0; r < n; ++r) {
    Entry e;
    std::memcpy(&e, local_desc.data() + static_cast<size_t>(r) * sizeof e, sizeof e);
    if (e.card_len == 0) my_rc = MPI_ERR_INTERN;  // someone could not open tcp (reported there)
  }
  if (my_rc != MPI_SUCCESS && lc->rank() == root && b->error == MPI_SUCCESS) b->error = my_rc;

  // Root: swap the descriptions.
  std::vector<uint8_t> remote_desc;
  if (lc->rank() == root && b->error == MPI_SUCCESS) {
    Hello h{kMeetMagic, kMeetVersion, static_cast<uint16_t>(role == Role::Join ? 2 : 1), {}};
    if (token) std::memcpy(h.token, token, kTokenBytes);
    std::vector<uint8_t> hello(sizeof h);
    std::memcpy(hello.data(), &h, sizeof h);
    if (role == Role::Connect || role == Role::Join) {
      b->error = send_msg(b->fd, hello, b->deadline);
      if (b->error == MPI_SUCCESS) b->error = send_msg(b->fd, local_desc, b->deadline);
    }
    if (b->error == MPI_SUCCESS && role == Role::Join) {
      std::vector<uint8_t> their_hello;
      b->error = recv_msg(b->fd, &their_hello, b->deadline);
      Hello th{};
      if (b->error == MPI_SUCCESS && their_hello.size() == sizeof th) std::memcpy(&th, their_hello.data(), sizeof th);
      if (b->error == MPI_SUCCESS && (th.magic != kMeetMagic || th.version != kMeetVersion || th.kind != 2))
        b->error = MPI_ERR_ARG;  // the other end of the socket is not in MPI_Comm_join
    }
    if (b->error == MPI_SUCCESS) b->error = recv_msg(b->fd, &remote_desc, b->deadline);
    if (b->error == MPI_SUCCESS && role == Role::Accept) b->error = send_msg(b->fd, local_desc, b->deadline);
  }
  // The root hands the outcome and the remote description to its group.
  int head[2] = {b->error, static_cast<int>(remote_desc.size())};
  rc = coll::bcast(head, 2, datatype_from_handle(MPI_INT), root, &lc->coll);
  if (rc != MPI_SUCCESS) return rc;
  if (head[0] != MPI_SUCCESS) return head[0];
  remote_desc.resize(static_cast<size_t>(head[1]));
  rc = coll::bcast(remote_desc.data(), head[1], bytes_type(), root, &lc->coll);
  if (rc != MPI_SUCCESS) return rc;
  std::vector<int> remote;
  rc = learn_group(remote_desc, &remote);
  if (rc != MPI_SUCCESS) {
    log::error("%s: %s", fn, "the remote group cannot be reached");
    return rc;
  }

  // Context ids: one pair in the local group for local traffic, one free in
  // both groups for the intercommunicator.
  std::vector<int> members{root};
  for (int r = 0; r < n; ++r)
    if (r != root) members.push_back(r);
  int me = static_cast<int>(std::find(members.begin(), members.end(), lc->rank()) - members.begin());
  int tag = internal_tag_for_sequence(lc->creation_seq++);
  int error = MPI_SUCCESS;
  int local_pair = agree_context_pair(&lc->coll, members, me, tag, &error);
  if (error != MPI_SUCCESS) return error;
  int pair = -1;
  rc = agree_pair_both(lc, root, members, me, tag, b, &pair);
  if (rc != MPI_SUCCESS) {
    pml::Guard guard;
    context_release(local_pair);
    return rc;
  }
  Comm* c = comm_alloc(lc);
  comm_open_inter(c, pair, local_pair, lc->rank(), lc->p2p.world_of, std::move(remote));
  *out = c;
  return MPI_SUCCESS;
}

double timeout_of(MPI_Info info) {
  double t = static_cast<double>(timeout_param.get());
  if (Info* i = info_from_handle(info)) t = static_cast<double>(info_get_int(i, "timeout", static_cast<long long>(t)));
  return t;
}

// Accepting root: waits for a connecting root that presents the port's
// token (others are turned away), reading each candidate's Hello within a
// few seconds. Returns the socket in b->fd.
int accept_on(const Port* port, uint64_t deadline, Socket* conn) {
  for (;;) {
    int ready = wait_fd(port->listener.get(), POLLIN, deadline);
    if (ready != 1) return MPI_ERR_PORT;
    int fd = ::accept4(port->listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) continue;
    Socket s(fd);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::vector<uint8_t> hello;
    uint64_t hello_deadline = now_ns() + 10000000000ull;
    if (recv_msg(fd, &hello, deadline && deadline < hello_deadline ? deadline : hello_deadline) != MPI_SUCCESS)
      continue;
    Hello h{};
    if (hello.size() != sizeof h) continue;
    std::memcpy(&h, hello.data(), sizeof h);
    unsigned diff = 0;
    for (int i = 0; i < kTokenBytes; ++i) diff |= unsigned(h.token[i] ^ port->token[i]);
    if (h.magic != kMeetMagic || h.version != kMeetVersion || h.kind != 1 || diff != 0) {
      log::warn("MPI_Comm_accept: turned away a connection that did not present this port's token");
      continue;
    }
    *conn = std::move(s);
    return MPI_SUCCESS;
  }
}

// The arguments every rooted dynamic-process call shares: an
// intracommunicator, a root within it, and somewhere to put the result
// (`out_name` names that argument in the message).
int check_rooted_call(Comm* c, int root, const MPI_Comm* out, const char* out_name, const char* fn) {
  if (c->inter) return raise(c, MPI_ERR_COMM, fn, "comm is an intercommunicator");
  if (root < 0 || root >= c->size()) return raise(c, MPI_ERR_ROOT, fn, "root out of range");
  if (!out) return raise(c, MPI_ERR_ARG, fn, (std::string(out_name) + " is NULL").c_str());
  return MPI_SUCCESS;
}

}  // namespace

int dpm_accept(const char* port_name, double timeout, int root, Comm* c, Comm** out) {
  Bridge b;
  Socket conn;
  if (c->rank() == root) {
    std::shared_ptr<Port> port;
    {
      pml::Guard guard;
      if (port_name) port = find_port(port_name);
    }
    if (!port) b.error = MPI_ERR_PORT;
    else b.error = accept_on(port.get(), deadline_after(timeout), &conn);
    b.fd = conn.get();
    b.deadline = deadline_after(timeout_param.get());
  }
  return meet(c, root, Role::Accept, nullptr, &b, out);
}

int dpm_connect(const char* port_name, double timeout, int root, Comm* c, Comm** out) {
  Bridge b;
  Socket conn;
  PortAddress addr;
  if (c->rank() == root) {
    b.deadline = deadline_after(timeout);
    if (!parse_port(port_name, &addr)) b.error = MPI_ERR_PORT;
    else b.error = dial_port(addr, b.deadline, &conn);
    b.fd = conn.get();
  }
  return meet(c, root, Role::Connect, addr.token, &b, out);
}

namespace {

// ---- spawn --------------------------------------------------------------------------

MPI_Comm parent_comm = MPI_COMM_NULL;
int parent_keyval = MPI_KEYVAL_INVALID;

// The parent intercommunicator was freed or disconnected: MPI_Comm_get_parent
// returns MPI_COMM_NULL from then on (MPI-4.1 11.8.2).
int forget_parent(MPI_Comm, int, void*, void*) {
  parent_comm = MPI_COMM_NULL;
  return MPI_SUCCESS;
}

// The part of MPI_Comm_spawn / _spawn_multiple after the root read its
// arguments (`apps`, `why` set when they were wrong): the root opens a port,
// the launcher starts the children with the port's name in their
// environment, and the parents accept the children's connection from their
// MPI_Init.
int spawn_common(const char* fn, Comm* c, int root, std::vector<rte::SpawnApp> apps, int arg_error,
                 std::string why, double timeout, MPI_Comm* intercomm, int* errcodes) {
  int head[2] = {arg_error, 0};
  std::string port;
  if (c->rank() == root) {
    for (const auto& a : apps) head[1] += a.maxprocs;
    if (head[0] == MPI_SUCCESS && !rte::have_server()) {
      head[0] = MPI_ERR_SPAWN;
      why = "this process is a singleton (not started by mpirun): there is no launcher to start processes";
    }
    if (head[0] == MPI_SUCCESS) {
      pml::Guard guard;
      if (open_port(&port) != MPI_SUCCESS) {
        head[0] = MPI_ERR_SPAWN;
        why = "cannot open a port for the children";
      }
    }
    if (head[0] == MPI_SUCCESS) {
      for (auto& a : apps) a.env.push_back("AXON_DPM_PARENT_PORT=" + port);
      std::string nspace;
      if (rte::spawn(apps, &nspace, &why) != 0) {
        head[0] = MPI_ERR_SPAWN;
        close_port(port);
      }
    }
  }
  int rc = coll::bcast(head, 2, datatype_from_handle(MPI_INT), root, &c->coll);
  if (rc != MPI_SUCCESS) return raise(c, rc, fn);
  if (errcodes)
    for (int i = 0; i < head[1]; ++i) errcodes[i] = head[0] == MPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_SPAWN;
  if (head[0] != MPI_SUCCESS)
    return raise(c, head[0], fn, c->rank() == root ? why.c_str() : "the root could not start the processes");
  Comm* out = nullptr;
  rc = dpm_accept(c->rank() == root ? port.c_str() : nullptr, timeout, root, c, &out);
  if (c->rank() == root) close_port(port);
  if (rc != MPI_SUCCESS) {
    if (errcodes)
      for (int i = 0; i < head[1]; ++i) errcodes[i] = MPI_ERR_SPAWN;
    return raise(c, MPI_ERR_SPAWN, fn, "the children did not connect in time (AXON_DPM_TIMEOUT)");
  }
  *intercomm = out->handle;
  return MPI_SUCCESS;
}

// One application from the C arguments (the root's): MPI_ERR_ARG with *why
// when they are wrong.
int read_app(const char* command, char** argv, int maxprocs, MPI_Info info, rte::SpawnApp* app, std::string* why) {
  if (!command || !*command) {
    *why = "command is NULL or empty";
    return MPI_ERR_ARG;
  }
  if (maxprocs <= 0) {
    *why = "maxprocs must be positive";
    return MPI_ERR_ARG;
  }
  if (info != MPI_INFO_NULL && !info_from_handle(info)) {
    *why = "invalid info";
    return MPI_ERR_INFO;
  }
  app->command = command;
  app->argv.push_back(command);
  for (char** a = argv; a && *a; ++a) app->argv.push_back(*a);
  app->maxprocs = maxprocs;
  // Reserved keys (MPI-4.1 11.8.4): "wdir" is honoured; "host", "path",
  // "arch", "file", "soft" are accepted and ignored (every child starts on
  // mpirun's node and maxprocs are started or none).
  if (Info* i = info_from_handle(info)) {
    if (auto wdir = i->get("wdir")) app->wdir = *wdir;
    if (auto path = i->get("path")) {
      if (!path->empty() && app->command.find('/') == std::string::npos)
        app->env.push_back("PATH=" + *path + ":" + (getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin"));
    }
  }
  return MPI_SUCCESS;
}

}  // namespace

MPI_Comm dpm_parent() { return parent_comm; }

namespace {
// The leaders' swap over the bridge of MPI_Intercomm_create (pml).
int bridge_swap(const TwoGroups& t, const void* mine, size_t my_bytes, void* theirs, size_t their_bytes) {
  pml::Request* s = nullptr;
  int rc = pml::isend(mine, static_cast<MPI_Count>(my_bytes), bytes_type(), t.bridge_peer, t.bridge_tag, t.bridge,
                      pml::SendMode::Standard, &s);
  if (rc != MPI_SUCCESS) return rc;
  pml::Request status;
  rc = pml::recv(theirs, static_cast<MPI_Count>(their_bytes), bytes_type(), t.bridge_peer, t.bridge_tag, t.bridge,
                 &status);
  pml::wait(s);
  pml::Guard guard;
  if (rc == MPI_SUCCESS) rc = s->error;
  pml::request_release(s);
  return rc;
}
}  // namespace

int dpm_swap_groups(const TwoGroups& t, const std::vector<int>& local_ids, std::vector<int>* remote) {
  const Datatype* int_type = datatype_from_handle(MPI_INT);
  int root = t.members[0];
  // Plain when both groups are made of processes of one and the same job.
  bool mixed = false;
  for (int id : local_ids) mixed = mixed || rte::is_foreign(id);
  int plain = 1;
  int rc = MPI_SUCCESS;
  if (t.me == 0) {
    uint32_t job = 0;
    int rank = 0;
    rte::global_name(rte::job().rank, &job, &rank);
    uint32_t mine[2] = {job, mixed ? 1u : 0u}, theirs[2] = {0, 0};
    rc = bridge_swap(t, mine, sizeof mine, theirs, sizeof theirs);
    plain = rc == MPI_SUCCESS && mine[0] == theirs[0] && !mine[1] && !theirs[1] ? 1 : rc == MPI_SUCCESS ? 0 : -1;
  }
  int brc = coll::bcast(&plain, 1, int_type, root, t.local);
  if (brc != MPI_SUCCESS) return brc;
  if (plain < 0) return rc != MPI_SUCCESS ? rc : MPI_ERR_OTHER;
  if (plain) return swap_ints_two_groups(t, local_ids, remote);

  // Groups of different jobs: swap every member's description, as the
  // meeting of accept / connect does, and name the remote members by ids.
  Entry self;
  int my_rc = describe_self(&self);
  std::vector<uint8_t> local_desc(local_ids.size() * sizeof(Entry)), remote_desc;
  rc = coll::allgather_bytes(&self, sizeof self, local_desc.data(), t.local);
  if (rc != MPI_SUCCESS) return rc;
  int head[2] = {my_rc, 0};
  if (t.me == 0) {
    uint64_t my_len = local_desc.size(), their_len = 0;
    rc = bridge_swap(t, &my_len, sizeof my_len, &their_len, sizeof their_len);
    if (rc == MPI_SUCCESS && their_len <= kMaxMessage) {
      remote_desc.resize(their_len);
      rc = bridge_swap(t, local_desc.data(), local_desc.size(), remote_desc.data(), remote_desc.size());
    } else if (rc == MPI_SUCCESS) {
      rc = MPI_ERR_INTERN;
    }
    head[0] = rc;
    head[1] = static_cast<int>(remote_desc.size());
  }
  rc = coll::bcast(head, 2, int_type, root, t.local);
  if (rc != MPI_SUCCESS) return rc;
  if (head[0] != MPI_SUCCESS) return head[0];
  remote_desc.resize(static_cast<size_t>(head[1]));
  rc = coll::bcast(remote_desc.data(), head[1], bytes_type(), root, t.local);
  if (rc != MPI_SUCCESS) return rc;
  remote->clear();
  return learn_group(remote_desc, remote);
}

// MPI_Init of a spawned process: connect to the parent. Collective over
// MPI_COMM_WORLD (every child runs MPI_Init).
void dpm_init_parent() {
  const std::string& port = parent_port_param.get();
  if (port.empty() || parent_comm != MPI_COMM_NULL) return;
  Comm* out = nullptr;
  int rc = dpm_connect(port.c_str(), static_cast<double>(timeout_param.get()), 0, comm_world(), &out);
  if (rc != MPI_SUCCESS) {
    log::error("MPI_Init: this process was spawned but cannot connect to its parent (AXON_DPM_PARENT_PORT)");
    rte::abort_job(1, "cannot connect to the parent");
  }
  out->name = "MPI_COMM_PARENT";  // its default name (MPI-4.1 11.8.2)
  parent_comm = out->handle;
  if (parent_keyval == MPI_KEYVAL_INVALID)
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, forget_parent, &parent_keyval, nullptr);
  PMPI_Comm_set_attr(parent_comm, parent_keyval, nullptr);
}

}  // namespace axon::mpi

using namespace axon;
using namespace axon::mpi;

AXON_API(int, MPI_Comm_spawn, (const char* command, char* argv[], int maxprocs, MPI_Info info, int root,
                               MPI_Comm comm, MPI_Comm* intercomm, int array_of_errcodes[])) {
  const char* fn = "MPI_Comm_spawn";
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (int rc = check_rooted_call(c, root, intercomm, "intercomm", fn)) return rc;
  std::vector<rte::SpawnApp> apps;
  std::string why;
  int arg_error = MPI_SUCCESS;
  double timeout = 0;
  if (c->rank() == root) {
    apps.emplace_back();
    arg_error = read_app(command, argv, maxprocs, info, &apps[0], &why);
    timeout = timeout_of(info);
  }
  return spawn_common(fn, c, root, std::move(apps), arg_error, why, timeout, intercomm, array_of_errcodes);
}

AXON_API(int, MPI_Comm_spawn_multiple, (int count, char* array_of_commands[], char** array_of_argv[],
                                        const int array_of_maxprocs[], const MPI_Info array_of_info[], int root,
                                        MPI_Comm comm, MPI_Comm* intercomm, int array_of_errcodes[])) {
  const char* fn = "MPI_Comm_spawn_multiple";
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (int rc = check_rooted_call(c, root, intercomm, "intercomm", fn)) return rc;
  std::vector<rte::SpawnApp> apps;
  std::string why;
  int arg_error = MPI_SUCCESS;
  double timeout = 0;
  if (c->rank() == root) {
    if (count <= 0 || !array_of_commands || !array_of_maxprocs) {
      arg_error = MPI_ERR_ARG;
      why = "count must be positive and the arrays non-NULL";
    }
    for (int i = 0; arg_error == MPI_SUCCESS && i < count; ++i) {
      apps.emplace_back();
      MPI_Info info_i = array_of_info ? array_of_info[i] : MPI_INFO_NULL;
      arg_error = read_app(array_of_commands[i], array_of_argv ? array_of_argv[i] : nullptr, array_of_maxprocs[i],
                           info_i, &apps.back(), &why);
      if (i == 0) timeout = timeout_of(info_i);
    }
  }
  return spawn_common(fn, c, root, std::move(apps), arg_error, why, timeout, intercomm, array_of_errcodes);
}

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
    pml::Guard guard;
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

AXON_API(int, MPI_Comm_accept, (const char* port_name, MPI_Info info, int root, MPI_Comm comm, MPI_Comm* newcomm)) {
  const char* fn = "MPI_Comm_accept";
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (int rc = check_rooted_call(c, root, newcomm, "newcomm", fn)) return rc;
  Comm* out = nullptr;
  // Accept waits for a connection as long as it takes (MPI-4.1 11.3.2).
  int rc = dpm_accept(c->rank() == root ? port_name : nullptr, 0, root, c, &out);
  if (rc != MPI_SUCCESS)
    return raise(c, rc, fn, rc == MPI_ERR_PORT ? "the port is not open here, or the connection broke" : nullptr);
  (void)info;
  *newcomm = out->handle;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Comm_connect, (const char* port_name, MPI_Info info, int root, MPI_Comm comm, MPI_Comm* newcomm)) {
  const char* fn = "MPI_Comm_connect";
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (int rc = check_rooted_call(c, root, newcomm, "newcomm", fn)) return rc;
  if (c->rank() == root && info != MPI_INFO_NULL && !info_from_handle(info))
    return raise(c, MPI_ERR_INFO, fn, "invalid info");
  Comm* out = nullptr;
  int rc = dpm_connect(c->rank() == root ? port_name : nullptr, c->rank() == root ? timeout_of(info) : 0, root, c, &out);
  if (rc != MPI_SUCCESS)
    return raise(c, rc, fn,
                 rc == MPI_ERR_PORT ? "bad port name, or nobody accepted on the port in time (AXON_DPM_TIMEOUT)" : nullptr);
  *newcomm = out->handle;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Comm_join, (int fd, MPI_Comm* intercomm)) {
  const char* fn = "MPI_Comm_join";
  if (!intercomm) return raise_self(MPI_ERR_ARG, fn, "intercomm is NULL");
  Comm* self = comm_self();
  Bridge b;
  b.fd = fd;
  b.deadline = deadline_after(timeout_param.get());
  int type = 0;
  socklen_t tl = sizeof type;
  if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_STREAM)
    return raise(self, MPI_ERR_ARG, fn, "fd is not a connected stream socket");
  Comm* out = nullptr;
  int rc = meet(self, 0, Role::Join, nullptr, &b, &out);
  if (rc != MPI_SUCCESS) return raise(self, rc, fn, "the exchange over the socket failed");
  *intercomm = out->handle;
  return MPI_SUCCESS;
}
