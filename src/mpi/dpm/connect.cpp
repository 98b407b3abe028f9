// Dynamic processes: the meeting of two groups (MPI_Comm_accept /
// MPI_Comm_connect, MPI_Comm_join, and MPI_Intercomm_create between groups
// of two jobs). See docs/dpm.md; ports are in port.cpp, spawn in spawn.cpp.
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
// its world rank, any other by a foreign id (rte::proc_id) that pml::add_peer
// routes over tcp (opened on first use when the job did not open it), and the
// intercommunicator is built like MPI_Intercomm_create's.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

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
#include "mpi/dpm/internal.h"
#include "mpi/info.h"
#include "rte/rte.h"

namespace axon::mpi::dpm {

IntParam timeout_param{"AXON_DPM_TIMEOUT", 60,
                       "Seconds MPI_Comm_connect waits for an MPI_Comm_accept on the port (then "
                       "MPI_ERR_PORT), and MPI_Comm_spawn for its children to start and connect "
                       "(then MPI_ERR_SPAWN); the info key \"timeout\" overrides it for one call"};

namespace {

constexpr uint32_t kMeetMagic = 0x41584450;  // "AXDP"
constexpr uint16_t kMeetVersion = 1;

// ---- the socket between the roots, driven while the PML progresses ------------------

uint64_t deadline_after(double seconds) {
  if (seconds <= 0) return 0;  // none
  return now_ns() + static_cast<uint64_t>(seconds * 1e9);
}
bool expired(uint64_t deadline) { return deadline != 0 && now_ns() > deadline; }

// Waits, driving MPI progress, until `fd` is ready for `events`. 1 ready,
// 0 deadline passed, -1 error.
int wait_fd(int fd, short events, uint64_t deadline) {
  int result = 0;
  progress::wait_until([&] {
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

// Connects to the port within the deadline: MPI_ERR_PORT when nobody listens.
int dial_port(const PortAddress& a, uint64_t deadline, UniqueFd* out) {
  for (uint32_t addr : a.addrs) {
    UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
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
  std::vector<uint8_t> card;  // pml::local_card takes the lock itself
  if (!pml::local_card(&card) || card.size() > sizeof e->card) return MPI_ERR_INTERN;
  e->card_len = static_cast<uint32_t>(card.size());
  std::memcpy(e->card, card.data(), card.size());
  return MPI_SUCCESS;
}

// The ids of the processes a description names; foreign ones become
// reachable over tcp.
int learn_group(const std::vector<uint8_t>& desc, std::vector<int>* ids) {
  if (desc.empty() || desc.size() % sizeof(Entry) != 0) return MPI_ERR_INTERN;
  size_t n = desc.size() / sizeof(Entry);
  progress::Guard guard;
  for (size_t i = 0; i < n; ++i) {
    Entry e;
    std::memcpy(&e, desc.data() + i * sizeof e, sizeof e);
    e.nspace[sizeof e.nspace - 1] = 0;
    e.host[sizeof e.host - 1] = 0;
    if (e.card_len > sizeof e.card || e.rank < 0) return MPI_ERR_INTERN;
    int id = rte::proc_id(e.nspace, e.rank, e.host);
    if (rte::is_foreign(id)) {
      std::vector<uint8_t> card(e.card, e.card + e.card_len);
      if (pml::add_peer(id, card) != MPI_SUCCESS) {
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
    progress::wait_until([&] { return done || (done = reduce.step()); });
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
      progress::Guard guard;
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
      progress::Guard guard;
      candidate = context_try_reserve(agreed, &reserved);
    }
    if (candidate < 0) return MPI_ERR_PORT;  // the roots' socket broke (or no id is free anywhere)
    std::vector<uint64_t> flag{reserved ? uint64_t{1} : uint64_t{0}};
    rc = and_both(lc, root, members, me, tag, b, &flag);
    progress::Guard guard;
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
    progress::Guard guard;
    context_release(local_pair);
    return rc;
  }
  Comm* c = comm_alloc(lc);
  comm_open_inter(c, pair, local_pair, lc->rank(), lc->p2p.world_of, std::move(remote));
  *out = c;
  return MPI_SUCCESS;
}

// Accepting root: waits for a connecting root that presents the port's
// token (others are turned away), reading each candidate's Hello within a
// few seconds. Returns the socket in b->fd.
int accept_on(const Port* port, uint64_t deadline, UniqueFd* conn) {
  for (;;) {
    int ready = wait_fd(port->listener.get(), POLLIN, deadline);
    if (ready != 1) return MPI_ERR_PORT;
    int fd = ::accept4(port->listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) continue;
    UniqueFd s(fd);
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
  progress::Guard guard;
  if (rc == MPI_SUCCESS) rc = s->error;
  pml::request_release(s);
  return rc;
}

}  // namespace

double timeout_of(MPI_Info info) {
  double t = static_cast<double>(timeout_param.get());
  if (Info* i = info_from_handle(info)) t = static_cast<double>(info_get_int(i, "timeout", static_cast<long long>(t)));
  return t;
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

}  // namespace axon::mpi::dpm

namespace axon::mpi {

using namespace dpm;  // the entry points of this part of dpm (mpi/dpm.h)

int dpm_accept(const char* port_name, double timeout, int root, Comm* c, Comm** out) {
  Bridge b;
  UniqueFd conn;
  if (c->rank() == root) {
    std::shared_ptr<Port> port;
    {
      progress::Guard guard;
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
  UniqueFd conn;
  PortAddress addr;
  if (c->rank() == root) {
    b.deadline = deadline_after(timeout);
    if (!parse_port(port_name, &addr)) b.error = MPI_ERR_PORT;
    else b.error = dial_port(addr, b.deadline, &conn);
    b.fd = conn.get();
  }
  return meet(c, root, Role::Connect, addr.token, &b, out);
}

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

}  // namespace axon::mpi

using namespace axon;
using namespace axon::mpi;
using namespace axon::mpi::dpm;

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
