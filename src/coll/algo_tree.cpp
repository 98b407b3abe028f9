// Rooted and tree-shaped algorithms: dissemination barrier, broadcasts
// (binomial / k-nomial tree, scatter + allgather, pipelined chain), gather and
// scatter (binomial tree, linear), reduce (k-nomial tree keeping operand
// order). Each builder adds the steps of the calling rank; all ranks build
// the same rounds in the same order, so message n from A to B always meets
// B's n-th receive from A.
#include <algorithm>

#include "base/param.h"
#include "coll/internal.h"

namespace axon::coll {

namespace {

SizeParam segment_param{"AXON_COLL_BCAST_SEGMENT", 128 * 1024,
                        "Segment size in bytes of the pipelined (chain) broadcast."};

int rel(int rank, int root, int n) { return (rank - root + n) % n; }
int abs_rank(int vr, int root, int n) { return (vr + root) % n; }

// A k-nomial tree over relative ranks 0..n-1 rooted at 0.
struct Tree {
  int parent = -1;  // relative; -1 for the root
  struct Child {
    int vr, span;  // child and the size of its subtree
  };
  std::vector<Child> children;  // smallest subtrees first
};

Tree knomial_tree(int vr, int n, int k) {
  Tree t;
  long mask = 1;
  // The lowest non-zero base-k digit of vr names the parent.
  while (mask < n) {
    long digit = (vr / mask) % k;
    if (digit != 0) {
      t.parent = static_cast<int>(vr - digit * mask);
      break;
    }
    mask *= k;
  }
  // Children: below that digit (every digit for the root).
  for (long m = 1; m < mask && m < n; m *= k) {
    for (long d = 1; d < k; ++d) {
      long c = vr + d * m;
      if (c >= n) break;
      t.children.push_back({static_cast<int>(c), static_cast<int>(std::min<long>(m, n - c))});
    }
  }
  if (vr == 0) {
    // root: mask ran past n, all children collected above
  }
  return t;
}

// The byte image of a bcast buffer: the buffer itself when the type is a
// plain byte range, else a scratch copy (packed at the root first,
// unpacked elsewhere at the end).
struct Image {
  uint8_t* data;
  size_t bytes;
  bool direct;
};
Image bcast_image(Build& b, bool is_root) {
  const Args& a = b.a;
  size_t bytes = payload_bytes(a.recvcount, a.recvtype);
  if (a.recvtype->contiguous) return {static_cast<uint8_t*>(a.recvbuf), bytes, true};
  auto* tmp = static_cast<uint8_t*>(b.s.temp(bytes));
  if (is_root) {
    b.s.copy(a.recvbuf, a.recvcount, a.recvtype, tmp, static_cast<MPI_Count>(bytes), byte_type());
    b.s.round();
  }
  return {tmp, bytes, false};
}
void bcast_image_done(Build& b, const Image& im, bool is_root) {
  if (im.direct || is_root) return;
  b.s.copy(im.data, static_cast<MPI_Count>(im.bytes), byte_type(), b.a.recvbuf, b.a.recvcount, b.a.recvtype);
  b.s.round();
}

void bcast_tree(Build& b, int k) {
  const Args& a = b.a;
  int n = b.size, vr = rel(b.rank, a.root, n);
  if (n == 1 || a.recvcount == 0) return;
  Tree t = knomial_tree(vr, n, k);
  if (t.parent >= 0) {
    b.s.recv(a.recvbuf, a.recvcount, a.recvtype, abs_rank(t.parent, a.root, n));
    b.s.round();
  }
  // Largest subtrees first: they have the longest way to go.
  for (auto it = t.children.rbegin(); it != t.children.rend(); ++it)
    b.s.send(a.recvbuf, a.recvcount, a.recvtype, abs_rank(it->vr, a.root, n));
  b.s.round();
}

}  // namespace

// ---- barrier ------------------------------------------------------------------

// Dissemination: in round j every rank signals rank+2^j and waits for
// rank-2^j; after ceil(log2 n) rounds everyone has heard from everyone.
void barrier_dissemination(Build& b) {
  int n = b.size;
  for (int d = 1; d < n; d <<= 1) {
    b.s.send_bytes(nullptr, 0, (b.rank + d) % n);
    b.s.recv_bytes(nullptr, 0, (b.rank - d + n) % n);
    b.s.round();
  }
}

// ---- broadcast ----------------------------------------------------------------

void bcast_binomial(Build& b) { bcast_tree(b, 2); }
void bcast_knomial(Build& b) { bcast_tree(b, std::max(2, b.radix)); }

// Scatter the image in n pieces down a binomial tree, then a ring allgather
// of the pieces (van de Geijn): moves ~2x the data but every link is busy.
void bcast_scatter_allgather(Build& b) {
  const Args& a = b.a;
  int n = b.size, vr = rel(b.rank, a.root, n);
  if (n == 1 || a.recvcount == 0) return;
  bool is_root = vr == 0;
  Image im = bcast_image(b, is_root);
  Blocks blk(static_cast<MPI_Count>(im.bytes), n);
  auto off = [&](int i) { return i >= n ? im.bytes : static_cast<size_t>(blk.offset[i]); };
  Tree t = knomial_tree(vr, n, 2);
  if (t.parent >= 0) {
    int span = static_cast<int>(std::min<long>(vr & -vr, n - vr));
    b.s.recv_bytes(im.data + off(vr), off(vr + span) - off(vr), abs_rank(t.parent, a.root, n));
    b.s.round();
  }
  for (auto it = t.children.rbegin(); it != t.children.rend(); ++it)
    b.s.send_bytes(im.data + off(it->vr), off(it->vr + it->span) - off(it->vr), abs_rank(it->vr, a.root, n));
  b.s.round();
  int right = abs_rank((vr + 1) % n, a.root, n), left = abs_rank((vr - 1 + n) % n, a.root, n);
  for (int step = 0; step < n - 1; ++step) {
    int sb = (vr - step + n) % n, rb = (vr - step - 1 + n) % n;
    b.s.send_bytes(im.data + off(sb), static_cast<size_t>(blk.size[sb]), right);
    b.s.recv_bytes(im.data + off(rb), static_cast<size_t>(blk.size[rb]), left);
    b.s.round();
  }
  bcast_image_done(b, im, is_root);
}

// A chain root -> root+1 -> ... in segments: in round t relative rank v
// receives segment t-v+1 and forwards segment t-v.
void bcast_pipeline(Build& b) {
  const Args& a = b.a;
  int n = b.size, vr = rel(b.rank, a.root, n);
  if (n == 1 || a.recvcount == 0) return;
  bool is_root = vr == 0;
  Image im = bcast_image(b, is_root);
  size_t seg = static_cast<size_t>(std::max<int64_t>(1024, segment_param.get()));
  long nseg = static_cast<long>((im.bytes + seg - 1) / seg);
  if (nseg == 0) nseg = 1;
  auto seg_at = [&](long i) { return im.data + static_cast<size_t>(i) * seg; };
  auto seg_len = [&](long i) { return std::min(seg, im.bytes - static_cast<size_t>(i) * seg); };
  int next = abs_rank(vr + 1, a.root, n), prev = abs_rank(vr - 1 + n, a.root, n);
  for (long t = 0; t < nseg + n - 2; ++t) {
    long r = t - vr + 1, snd = t - vr;
    if (vr > 0 && r >= 0 && r < nseg) b.s.recv_bytes(seg_at(r), seg_len(r), prev);
    if (vr < n - 1 && snd >= 0 && snd < nseg) b.s.send_bytes(seg_at(snd), seg_len(snd), next);
    b.s.round();
  }
  bcast_image_done(b, im, is_root);
}

// ---- gather / scatter ---------------------------------------------------------

namespace {
// Bytes every rank contributes to a gather / receives in a scatter.
size_t rooted_block(const Build& b, bool gather) {
  const Args& a = b.a;
  bool root = b.rank == a.root;
  if (gather) return root ? payload_bytes(a.recvcount, a.recvtype) : payload_bytes(a.sendcount, a.sendtype);
  return root ? payload_bytes(a.sendcount, a.sendtype) : payload_bytes(a.recvcount, a.recvtype);
}
}  // namespace

// Binomial tree over relative ranks; each subtree's blocks travel packed
// and in relative order, the root unpacks them into place at the end.
void gather_binomial(Build& b) {
  const Args& a = b.a;
  int n = b.size, vr = rel(b.rank, a.root, n);
  bool root = vr == 0;
  size_t blk = rooted_block(b, true);
  MPI_Aint rstride = root ? a.recvcount * a.recvtype->extent : 0;
  if (n == 1) {
    if (!a.in_place) b.s.copy(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcount, a.recvtype);
    return;
  }
  Tree t = knomial_tree(vr, n, 2);
  if (t.children.empty()) {  // a leaf sends its own data as it is
    b.s.send(a.sendbuf, a.sendcount, a.sendtype, abs_rank(t.parent, a.root, n));
    return;
  }
  int span = root ? n : static_cast<int>(std::min<long>(vr & -vr, n - vr));
  auto* tmp = static_cast<uint8_t*>(b.s.temp(blk * static_cast<size_t>(span)));
  if (root && a.in_place)
    b.s.copy(byte_at(a.recvbuf, a.root * rstride), a.recvcount, a.recvtype, tmp, static_cast<MPI_Count>(blk), byte_type());
  else
    b.s.copy(a.sendbuf, a.sendcount, a.sendtype, tmp, static_cast<MPI_Count>(blk), byte_type());
  for (const auto& c : t.children) {
    b.s.recv_bytes(tmp + static_cast<size_t>(c.vr - vr) * blk, static_cast<size_t>(c.span) * blk,
                   abs_rank(c.vr, a.root, n));
  }
  b.s.round();
  if (!root) {
    b.s.send_bytes(tmp, static_cast<size_t>(span) * blk, abs_rank(t.parent, a.root, n));
    return;
  }
  for (int i = 0; i < n; ++i) {
    int r = abs_rank(i, a.root, n);
    if (r == a.root && a.in_place) continue;
    b.s.copy(tmp + static_cast<size_t>(i) * blk, static_cast<MPI_Count>(blk), byte_type(),
             byte_at(a.recvbuf, r * rstride), a.recvcount, a.recvtype);
  }
}

void gather_linear(Build& b) {
  const Args& a = b.a;
  int n = b.size;
  if (b.rank != a.root) {
    b.s.send(a.sendbuf, a.sendcount, a.sendtype, a.root);
    return;
  }
  MPI_Aint stride = a.recvcount * a.recvtype->extent;
  for (int r = 0; r < n; ++r)
    if (r != a.root) b.s.recv(byte_at(a.recvbuf, r * stride), a.recvcount, a.recvtype, r);
  if (!a.in_place)
    b.s.copy(a.sendbuf, a.sendcount, a.sendtype, byte_at(a.recvbuf, a.root * stride), a.recvcount, a.recvtype);
}

void gatherv_linear(Build& b) {
  const Args& a = b.a;
  int n = b.size;
  if (b.rank != a.root) {
    b.s.send(a.sendbuf, a.sendcount, a.sendtype, a.root);
    return;
  }
  MPI_Aint ext = a.recvtype->extent;
  for (int r = 0; r < n; ++r)
    if (r != a.root) b.s.recv(byte_at(a.recvbuf, a.rdispls[r] * ext), a.recvcounts[r], a.recvtype, r);
  if (!a.in_place)
    b.s.copy(a.sendbuf, a.sendcount, a.sendtype, byte_at(a.recvbuf, a.rdispls[a.root] * ext), a.recvcounts[a.root],
             a.recvtype);
}

void scatter_binomial(Build& b) {
  const Args& a = b.a;
  int n = b.size, vr = rel(b.rank, a.root, n);
  bool root = vr == 0;
  size_t blk = rooted_block(b, false);
  if (n == 1) {
    if (!a.in_place) b.s.copy(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcount, a.recvtype);
    return;
  }
  Tree t = knomial_tree(vr, n, 2);
  if (t.children.empty()) {
    b.s.recv(a.recvbuf, a.recvcount, a.recvtype, abs_rank(t.parent, a.root, n));
    return;
  }
  int span = root ? n : static_cast<int>(std::min<long>(vr & -vr, n - vr));
  auto* tmp = static_cast<uint8_t*>(b.s.temp(blk * static_cast<size_t>(span)));
  if (root) {
    MPI_Aint sstride = a.sendcount * a.sendtype->extent;
    for (int i = 0; i < n; ++i)
      b.s.copy(byte_at(a.sendbuf, abs_rank(i, a.root, n) * sstride), a.sendcount, a.sendtype,
               tmp + static_cast<size_t>(i) * blk, static_cast<MPI_Count>(blk), byte_type());
  } else {
    b.s.recv_bytes(tmp, static_cast<size_t>(span) * blk, abs_rank(t.parent, a.root, n));
  }
  b.s.round();
  for (auto it = t.children.rbegin(); it != t.children.rend(); ++it)
    b.s.send_bytes(tmp + static_cast<size_t>(it->vr - vr) * blk, static_cast<size_t>(it->span) * blk,
                   abs_rank(it->vr, a.root, n));
  if (!(root && a.in_place))
    b.s.copy(tmp, static_cast<MPI_Count>(blk), byte_type(), a.recvbuf, a.recvcount, a.recvtype);
}

void scatter_linear(Build& b) {
  const Args& a = b.a;
  int n = b.size;
  if (b.rank != a.root) {
    b.s.recv(a.recvbuf, a.recvcount, a.recvtype, a.root);
    return;
  }
  MPI_Aint stride = a.sendcount * a.sendtype->extent;
  for (int r = 0; r < n; ++r)
    if (r != a.root) b.s.send(byte_at(a.sendbuf, r * stride), a.sendcount, a.sendtype, r);
  if (!a.in_place)
    b.s.copy(byte_at(a.sendbuf, a.root * stride), a.sendcount, a.sendtype, a.recvbuf, a.recvcount, a.recvtype);
}

void scatterv_linear(Build& b) {
  const Args& a = b.a;
  int n = b.size;
  if (b.rank != a.root) {
    b.s.recv(a.recvbuf, a.recvcount, a.recvtype, a.root);
    return;
  }
  MPI_Aint ext = a.sendtype->extent;
  for (int r = 0; r < n; ++r)
    if (r != a.root) b.s.send(byte_at(a.sendbuf, a.sdispls[r] * ext), a.sendcounts[r], a.sendtype, r);
  if (!a.in_place)
    b.s.copy(byte_at(a.sendbuf, a.sdispls[a.root] * ext), a.sendcounts[a.root], a.sendtype, a.recvbuf, a.recvcount,
             a.recvtype);
}

// ---- reduce -------------------------------------------------------------------

namespace {

// Reduces `mine` (count items of type) over a k-nomial tree rooted at
// relative rank 0 (`base` is the absolute rank of relative 0). Children are
// combined in rank order (each child's subtree is the range right after
// what we hold), so acc = acc op child keeps operand order whenever relative
// order is rank order. Returns the buffer holding the subtree's result (on
// the tree root) or null (sent to the parent). `final_out`: where the tree
// root wants the result (not aliasing `mine`), or null.
const void* reduce_tree(Build& b, const void* mine, int base, int k, void* final_out) {
  const Args& a = b.a;
  int n = b.size, vr = rel(b.rank, base, n);
  Tree t = knomial_tree(vr, n, k);
  const void* cur = mine;
  void* bufs[2] = {nullptr, nullptr};
  int which = 0;
  for (size_t i = 0; i < t.children.size(); ++i) {
    const auto& c = t.children[i];
    // The last child's data can land in the output buffer itself: the
    // final `out = cur op child` then needs no copy.
    bool last_out = final_out && i + 1 == t.children.size() && final_out != cur;
    if (!last_out && !bufs[which]) bufs[which] = b.s.temp_items(a.recvcount, a.recvtype);
    void* in = last_out ? final_out : bufs[which];
    b.s.recv(in, a.recvcount, a.recvtype, abs_rank(c.vr, base, n));
    b.s.reduce(cur, in, a.recvcount, a.recvtype);  // in = cur op in
    b.s.round();
    cur = in;
    which ^= 1;
  }
  if (t.parent >= 0) {
    b.s.send(cur, a.recvcount, a.recvtype, abs_rank(t.parent, base, n));
    b.s.round();
    return nullptr;
  }
  return cur;
}

void reduce_knomial_k(Build& b, int k) {
  const Args& a = b.a;
  int n = b.size;
  if (a.recvcount == 0) return;
  bool root = b.rank == a.root;
  const void* mine = root && a.in_place ? a.recvbuf : a.sendbuf;
  if (n == 1) {
    if (!a.in_place) b.s.copy(a.sendbuf, a.recvcount, a.recvtype, a.recvbuf, a.recvcount, a.recvtype);
    return;
  }
  // Relative ranks follow rank order only from 0: a non-commutative op
  // reduces towards rank 0, which then hands the result to the root.
  int base = a.op->commutative ? a.root : 0;
  void* out = base == a.root && root && !a.in_place ? a.recvbuf : nullptr;
  const void* result = reduce_tree(b, mine, base, k, out);
  if (base == a.root) {
    if (result && result != a.recvbuf) b.s.copy(result, a.recvcount, a.recvtype, a.recvbuf, a.recvcount, a.recvtype);
    return;
  }
  if (result) b.s.send(result, a.recvcount, a.recvtype, a.root);
  if (root) b.s.recv(a.recvbuf, a.recvcount, a.recvtype, 0);
  b.s.round();
}

}  // namespace

void reduce_binomial(Build& b) { reduce_knomial_k(b, 2); }
void reduce_knomial(Build& b) { reduce_knomial_k(b, std::max(2, b.radix)); }

}  // namespace axon::coll
