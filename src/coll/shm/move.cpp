// Data movement on the node segment: broadcast, allgather(v), gather,
// scatter and alltoall of one node's members, the node-level part of the
// rooted and reducing calls, and the entry points that run a whole call on
// a one-node communicator's segment (see internal.h, "Data").
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "coll/shm/internal.h"

namespace axon::coll {

namespace nodelevel {

namespace {

// The most bytes of one bcast step (see node_bcast).
constexpr size_t kBcastStep = 768 * 1024;

// Broadcast of `count` items of `type` from member `root`, in packed chunks.
// The root also puts its byte count into each step's flag line: a member
// whose count differs (an erroneous program) gets MPI_ERR_OTHER (short) or
// MPI_ERR_TRUNCATE (long) instead of silent garbage, and returns normally
// as long as both counts take the same number of steps (always for
// messages up to one step, the smaller of (ranks + 1) x chunk and kBcastStep bytes).
int node_bcast(Seg& g, void* buf, MPI_Count count, const Datatype* type, int root) {
  int err = MPI_SUCCESS;
  size_t total = payload_bytes(count, type);
  // A whole data set per step, but at most kBcastStep bytes: readers copy
  // out step k while the root fills step k + 1 (measured best at 2 and 4
  // ranks, docs/collectives.md "Slot size").
  size_t step_bytes = std::min((static_cast<size_t>(g.n) + 1) * g.chunk, kBcastStep);
  Convertor cv;
  bool contiguous = type->contiguous;
  if (!contiguous) cv = Convertor(*type, buf, static_cast<size_t>(count));
  for (size_t off = 0; off < total; off += step_bytes) {
    size_t len = std::min(step_bytes, total - off);
    uint64_t s = ++g.ns.seq;
    Flag* f = &g.arrive(s)[root];
    uint8_t* data = len <= kInline ? f->data : len <= kSmall ? g.small(s) : g.set(s);
    if (g.me == root) {
      if (len <= kSmall) g.claim_lines(s);
      else g.claim(s);
      if (contiguous) std::memcpy(data, static_cast<uint8_t*>(buf) + off, len);
      else convertor_pack(cv, data, len);
      f->pad = total;
      g.post(f, s);
    } else {
      g.wait_one(f, s);
      size_t sent = static_cast<size_t>(f->pad);
      if (sent != total) {
        if (err == MPI_SUCCESS) err = sent < total ? MPI_ERR_OTHER : MPI_ERR_TRUNCATE;
        // Take what the root wrote, from where it wrote it.
        size_t root_len = sent > off ? std::min(step_bytes, sent - off) : 0;
        data = root_len <= kInline ? f->data : root_len <= kSmall ? g.small(s) : g.set(s);
        len = std::min(len, root_len);
      }
      if (contiguous) std::memcpy(static_cast<uint8_t*>(buf) + off, data, len);
      else convertor_unpack(cv, data, len);
      // A root usually runs ahead: start fetching the line of the next
      // step now, so that its transfer overlaps the way out of this call
      // and into the next one (a stale copy costs the root nothing more
      // than the invalidation it pays anyway).
      __builtin_prefetch(&g.arrive(s + 1)[root]);
    }
    g.post(&g.done()[g.me], s);
  }
  return err;
}

// ---- data movement: allgather(v), gather, scatter, alltoall -------------------------
//
// Each rank's contribution is a packed byte stream (the type signature's
// bytes, holes removed); a step moves the next piece of every stream
// through the set: up to `chunk` bytes per rank (allgather, gather,
// scatter) or chunk / n per pair (alltoall). Every rank knows how many
// steps a call takes (signatures match), so seq stays in step everywhere.
// Contiguous buffers are copied with memcpy, others through a convertor.

// A cursor over the packed stream of `count` items of `type` at `buf`.
struct Stream {
  uint8_t* base = nullptr;
  bool contig = true;
  size_t pos = 0;
  Convertor cv;
  Stream() = default;
  Stream(const void* buf, MPI_Count count, const Datatype* type)
      : base(static_cast<uint8_t*>(const_cast<void*>(buf))), contig(type == nullptr || type->contiguous) {
    if (!contig && count > 0) cv = Convertor(*type, buf, static_cast<size_t>(count));
  }
  void pack(void* dst, size_t len) {
    if (len == 0) return;
    if (contig) std::memcpy(dst, base + pos, len);
    else convertor_pack(cv, dst, len);
    pos += len;
  }
  void unpack(const void* src, size_t len) {
    if (len == 0) return;
    if (contig) std::memcpy(base + pos, src, len);
    else convertor_unpack(cv, src, len);
    pos += len;
  }
};

// Bytes of a stream of `total` bytes that fall into [off, off + per).
size_t piece(size_t total, size_t off, size_t per) { return total <= off ? 0 : std::min(per, total - off); }

// Allgather(v) (root < 0: every member reads) and gather (root: the only
// reader). bytes[i]: member i's stream length, known to every rank (only
// its own to a gather non-root, where all are equal); `src`: my stream
// (length 0 at a gather root or an in-place rank: nothing to send);
// out[i]: where member i's stream goes (readers only).
void node_gather(Seg& g, const std::vector<size_t>& bytes, Stream& src, size_t my_bytes, std::vector<Stream>& out,
                 int root) {
  size_t maxb = 0;
  for (size_t b : bytes) maxb = std::max(maxb, b);
  bool inl = maxb <= kInline;
  size_t per = inl ? kInline : g.chunk;
  bool reader = root < 0 || g.me == root;
  for (size_t off = 0; off < maxb; off += per) {
    uint64_t s = ++g.ns.seq;
    g.claim(s);
    Flag* f = g.arrive(s);
    src.pack(inl ? f[g.me].data : g.slot(s, g.me), piece(my_bytes, off, per));
    g.post(&f[g.me], s);
    if (reader) {
      g.wait_all(f, g.n, s);
      g.arrived_all(s);
      for (int i = 0; i < g.n; ++i)
        if (i != g.me) out[i].unpack(inl ? f[i].data : g.slot(s, i), piece(bytes[i], off, per));
    }
    g.post(&g.done()[g.me], s);
  }
}

// Scatter of `m` bytes per member from member `root`: the root writes member
// j's piece into slot j (or j's arrival line) and posts j's arrival flag, so
// every member waits on its own line only.
void node_scatter(Seg& g, size_t m, std::vector<Stream>& src, Stream& dst, int root) {
  bool inl = m <= kInline;
  size_t per = inl ? kInline : g.chunk;
  for (size_t off = 0; off < m; off += per) {
    uint64_t s = ++g.ns.seq;
    Flag* f = g.arrive(s);
    size_t len = piece(m, off, per);
    if (g.me == root) {
      g.claim(s);
      for (int j = 0; j < g.n; ++j)
        if (j != root) {
          src[j].pack(inl ? f[j].data : g.slot(s, j), len);
          g.post(&f[j], s);
        }
    } else {
      g.wait_one(&f[g.me], s);
      dst.unpack(inl ? f[g.me].data : g.slot(s, g.me), len);
    }
    g.post(&g.done()[g.me], s);
  }
}

// Alltoall of `m` bytes per pair: my slot holds one sub-slot per other
// rank; everyone reads its sub-slot of every slot. In place works
// because a step packs bytes [off, off + len) of every block before it
// unpacks the same range into them.
// The steps of a node-level alltoall; pack(j, to, off, len) writes bytes
// [off, off + len) of the block for rank j, unpack(i, from, off, len) reads
// those of the block from rank i. Templated so that the byte path below
// inlines plain memcpy.
template <typename Pack, typename Unpack>
void node_alltoall_steps(Seg& g, size_t m, Pack&& pack, Unpack&& unpack) {
  size_t n = static_cast<size_t>(g.n);
  // Sub-slots for the n - 1 other ranks only (none for myself): at 2 ranks
  // the whole slot carries the one block, half the steps of n sub-slots.
  size_t others = n - 1;
  bool inl = m * others <= kInline;
  size_t sub = inl ? m : (g.chunk / others) & ~static_cast<size_t>(63);
  // Sub-slot of destination j in rank i's slot.
  auto at = [](int i, int j) { return static_cast<size_t>(j < i ? j : j - 1); };
  for (size_t off = 0; off < m; off += sub) {
    uint64_t s = ++g.ns.seq;
    g.claim(s);
    Flag* f = g.arrive(s);
    size_t len = piece(m, off, sub);
    uint8_t* mine = inl ? f[g.me].data : g.slot(s, g.me);
    for (int j = 0; j < g.n; ++j)
      if (j != g.me) pack(j, mine + at(g.me, j) * sub, off, len);
    g.post(&f[g.me], s);
    g.wait_all(f, g.n, s);
    g.arrived_all(s);
    for (int i = 0; i < g.n; ++i)
      if (i != g.me) unpack(i, (inl ? f[i].data : g.slot(s, i)) + at(i, g.me) * sub, off, len);
    g.post(&g.done()[g.me], s);
  }
}

void node_alltoall(Seg& g, size_t m, std::vector<Stream>& src, std::vector<Stream>& dst) {
  node_alltoall_steps(
      g, m, [&](int j, uint8_t* to, size_t, size_t len) { src[j].pack(to, len); },
      [&](int i, const uint8_t* from, size_t, size_t len) { dst[i].unpack(from, len); });
}

// The same two for contiguous buffers (every block a byte range, `m`
// bytes per block; blocks at i * m): memcpy straight between the user's
// buffers and the segment, no streams, no allocation. Same steps, pieces
// and places as node_gather / node_alltoall, so a rank on this path and one
// with a derived type on the general path meet in every step.
void node_allgather_bytes(Seg& g, const uint8_t* mine, size_t m, uint8_t* recv) {
  bool inl = m <= kInline;
  size_t per = inl ? kInline : g.chunk;
  for (size_t off = 0; off < m; off += per) {
    size_t len = std::min(per, m - off);
    uint64_t s = ++g.ns.seq;
    g.claim(s);
    Flag* f = g.arrive(s);
    std::memcpy(inl ? f[g.me].data : g.slot(s, g.me), mine + off, len);
    g.post(&f[g.me], s);
    g.wait_all(f, g.n, s);
    g.arrived_all(s);
    for (int i = 0; i < g.n; ++i)
      if (i != g.me) std::memcpy(recv + static_cast<size_t>(i) * m + off, inl ? f[i].data : g.slot(s, i), len);
    g.post(&g.done()[g.me], s);
  }
}

// `send` may be `recv` (in place): a step packs bytes [off, off + len) of
// every block before it unpacks the same range.
void node_alltoall_bytes(Seg& g, const uint8_t* send, size_t m, uint8_t* recv) {
  node_alltoall_steps(
      g, m,
      [&](int j, uint8_t* to, size_t off, size_t len) { std::memcpy(to, send + static_cast<size_t>(j) * m + off, len); },
      [&](int i, const uint8_t* from, size_t off, size_t len) {
        std::memcpy(recv + static_cast<size_t>(i) * m + off, from, len);
      });
}

}  // namespace

int node_part(CommState* st, const Args& a, const void* in, void* out, int root) {
  NodeState& ns = *st->node;
  int n = static_cast<int>(ns.topo.members.size());
  if (n == 1) {
    if ((a.kind == Kind::reduce || a.kind == Kind::allreduce) && in != out && (root < 0 || root == 0))
      copy_out(a.recvtype, in, out, a.recvcount);
    return MPI_SUCCESS;
  }
  if (int rc = attach(st); rc != MPI_SUCCESS) return rc;
  Seg g{ns, n, ns.topo.me};
  switch (a.kind) {
    case Kind::barrier:
      node_barrier(g, root);
      return MPI_SUCCESS;
    case Kind::bcast:
      return node_bcast(g, out, a.recvcount, a.recvtype, root);
    default:
      return node_reduce(g, in, out, a.recvcount, a.recvtype, a.op, root);
  }
}

namespace {

// Allgather(v), gather, scatter, alltoall on a single-node communicator
// (members = ranks). The own block is a local typed copy.
int shm_move(CommState* st, const Args& a) {
  NodeState& ns = *st->node;
  int n = static_cast<int>(ns.topo.members.size()), me = ns.topo.me;
  auto recv_block = [&](int i, MPI_Count count) {
    MPI_Aint disp = a.kind == Kind::allgatherv ? a.rdispls[i] : static_cast<MPI_Aint>(i) * count;
    return byte_at(a.recvbuf, disp * a.recvtype->extent);
  };
  auto send_block = [&](int i) { return byte_at(a.sendbuf, static_cast<MPI_Aint>(i) * a.sendcount * a.sendtype->extent); };
  // Contiguous send and receive types with matching sizes (or in place):
  // the byte paths. Blocks of other sizes (an erroneous program) take the
  // general paths below, which copy the smaller of both.
  if ((a.kind == Kind::allgather || a.kind == Kind::alltoall) && a.recvtype->contiguous &&
      (a.in_place || (a.sendtype->contiguous && payload_bytes(a.sendcount, a.sendtype) ==
                                                    payload_bytes(a.recvcount, a.recvtype)))) {
    size_t m = payload_bytes(a.recvcount, a.recvtype);
    auto* recv = static_cast<uint8_t*>(a.recvbuf);
    const auto* send = a.in_place ? recv : static_cast<const uint8_t*>(a.sendbuf);
    // The own block: allgather sends it from the send buffer, alltoall from block `me`.
    if (!a.in_place && m > 0)
      std::memcpy(recv + static_cast<size_t>(me) * m, a.kind == Kind::allgather ? send : send + static_cast<size_t>(me) * m,
                  m);
    if (n == 1 || m == 0) return MPI_SUCCESS;
    if (int rc = attach(st); rc != MPI_SUCCESS) return rc;
    Seg g{ns, n, me};
    if (a.kind == Kind::allgather) node_allgather_bytes(g, a.in_place ? recv + static_cast<size_t>(me) * m : send, m, recv);
    else node_alltoall_bytes(g, send, m, recv);
    return MPI_SUCCESS;
  }
  switch (a.kind) {
    case Kind::allgather:
    case Kind::allgatherv: {
      std::vector<MPI_Count> counts(static_cast<size_t>(n), a.recvcount);
      if (a.kind == Kind::allgatherv) counts = a.recvcounts;
      std::vector<size_t> bytes(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) bytes[i] = payload_bytes(counts[i], a.recvtype);
      if (!a.in_place)
        if (int rc = copy_typed(a.sendbuf, a.sendcount, a.sendtype, recv_block(me, a.recvcount), counts[me], a.recvtype);
            rc != MPI_SUCCESS)
          return rc;
      if (n == 1) return MPI_SUCCESS;
      if (int rc = attach(st); rc != MPI_SUCCESS) return rc;
      Seg g{ns, n, me};
      Stream src = a.in_place ? Stream(recv_block(me, a.recvcount), counts[me], a.recvtype)
                              : Stream(a.sendbuf, a.sendcount, a.sendtype);
      std::vector<Stream> out(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i)
        if (i != me) out[i] = Stream(recv_block(i, a.recvcount), counts[i], a.recvtype);
      node_gather(g, bytes, src, bytes[me], out, -1);
      return MPI_SUCCESS;
    }
    case Kind::gather: {
      bool root = me == a.root;
      size_t m = root ? payload_bytes(a.recvcount, a.recvtype) : payload_bytes(a.sendcount, a.sendtype);
      if (root && !a.in_place)
        if (int rc = copy_typed(a.sendbuf, a.sendcount, a.sendtype, recv_block(me, a.recvcount), a.recvcount,
                                a.recvtype);
            rc != MPI_SUCCESS)
          return rc;
      if (n == 1 || m == 0) return MPI_SUCCESS;
      if (int rc = attach(st); rc != MPI_SUCCESS) return rc;
      Seg g{ns, n, me};
      std::vector<size_t> bytes(static_cast<size_t>(n), m);
      Stream src = root ? Stream() : Stream(a.sendbuf, a.sendcount, a.sendtype);
      std::vector<Stream> out(static_cast<size_t>(n));
      if (root)
        for (int i = 0; i < n; ++i)
          if (i != me) out[i] = Stream(recv_block(i, a.recvcount), a.recvcount, a.recvtype);
      node_gather(g, bytes, src, root ? 0 : m, out, a.root);
      return MPI_SUCCESS;
    }
    case Kind::scatter: {
      bool root = me == a.root;
      size_t m = root ? payload_bytes(a.sendcount, a.sendtype) : payload_bytes(a.recvcount, a.recvtype);
      if (root && !a.in_place)
        if (int rc = copy_typed(send_block(me), a.sendcount, a.sendtype, a.recvbuf, a.recvcount, a.recvtype);
            rc != MPI_SUCCESS)
          return rc;
      if (n == 1 || m == 0) return MPI_SUCCESS;
      if (int rc = attach(st); rc != MPI_SUCCESS) return rc;
      Seg g{ns, n, me};
      std::vector<Stream> src(static_cast<size_t>(n));
      Stream dst;
      if (root) {
        for (int j = 0; j < n; ++j)
          if (j != me) src[j] = Stream(send_block(j), a.sendcount, a.sendtype);
      } else {
        dst = Stream(a.recvbuf, a.recvcount, a.recvtype);
      }
      node_scatter(g, m, src, dst, a.root);
      return MPI_SUCCESS;
    }
    default: {  // alltoall
      size_t m = payload_bytes(a.recvcount, a.recvtype);
      if (!a.in_place)
        if (int rc = copy_typed(send_block(me), a.sendcount, a.sendtype, recv_block(me, a.recvcount), a.recvcount,
                                a.recvtype);
            rc != MPI_SUCCESS)
          return rc;
      if (n == 1 || m == 0) return MPI_SUCCESS;
      if (int rc = attach(st); rc != MPI_SUCCESS) return rc;
      Seg g{ns, n, me};
      std::vector<Stream> src(static_cast<size_t>(n)), dst(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) {
        if (i == me) continue;
        src[i] = a.in_place ? Stream(recv_block(i, a.recvcount), a.recvcount, a.recvtype)
                            : Stream(send_block(i), a.sendcount, a.sendtype);
        dst[i] = Stream(recv_block(i, a.recvcount), a.recvcount, a.recvtype);
      }
      node_alltoall(g, m, src, dst);
      return MPI_SUCCESS;
    }
  }
}

}  // namespace

}  // namespace nodelevel

int shm_run(CommState* st, const Args& a) {
  const Topology& t = st->node->topo;
  if (nodelevel::move_kind(a.kind)) return nodelevel::shm_move(st, a);
  switch (a.kind) {
    case Kind::barrier:
      // (One node: the bcast's root rank is its member index.)
      return nodelevel::node_part(st, a, nullptr, nullptr, std::exchange(st->node->bcast_root, -1));
    case Kind::bcast:
      if (a.recvcount == 0) return MPI_SUCCESS;
      return nodelevel::node_part(st, a, nullptr, a.recvbuf, nodelevel::member_index(t, a.root));
    case Kind::reduce: {
      if (a.recvcount == 0) return MPI_SUCCESS;
      const void* in = a.in_place ? a.recvbuf : a.sendbuf;
      return nodelevel::node_part(st, a, in, a.recvbuf, nodelevel::member_index(t, a.root));
    }
    default: {
      if (a.recvcount == 0) return MPI_SUCCESS;
      const void* in = a.in_place ? a.recvbuf : a.sendbuf;
      return nodelevel::node_part(st, a, in, a.recvbuf, -1);
    }
  }
}

bool node_bcast_now(CommState* st, void* buf, MPI_Count count, const Datatype* type, int root, int* rc) {
  NodeState* ns = nodelevel::small_call_segment(st, count, type);
  if (!ns) return false;
  nodelevel::Seg g{*ns, static_cast<int>(ns->topo.members.size()), ns->topo.me};
  *rc = nodelevel::node_bcast(g, buf, count, type, root);
  return true;
}

}  // namespace axon::coll
