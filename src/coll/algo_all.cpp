// All-to-all shaped algorithms: allgather(v) (ring, recursive doubling,
// Bruck, linear), alltoall(v/w) (pairwise exchange, Bruck, linear),
// allreduce (recursive doubling, reduce + bcast, ring, Rabenseifner),
// reduce_scatter(_block) (reduce + scatterv, pairwise exchange) and
// scan / exscan (linear chain, recursive doubling).
//
// Operand order: an algorithm marked order-keeping in select.cpp combines
// partial results only as (lower ranks) op (higher ranks), each side a
// contiguous range of ranks, so non-commutative ops get x0 op x1 op ... .
#include <algorithm>
#include <numeric>

#include "base/param.h"
#include "coll/internal.h"

namespace axon::coll {

// ---- block views ----------------------------------------------------------------

Blocks2 block_view(Schedule& s, void* base, const Datatype* type, const std::vector<MPI_Count>& counts,
                   const std::vector<MPI_Aint>& displs) {
  Blocks2 v;
  size_t n = counts.size();
  v.direct = type->contiguous;
  v.base = base;
  v.type = type;
  v.counts = counts;
  v.displs = displs;
  v.at.resize(n);
  v.bytes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    v.bytes[i] = payload_bytes(counts[i], type);
    v.total += v.bytes[i];
  }
  uint8_t* tmp = v.direct ? nullptr : static_cast<uint8_t*>(s.temp(v.total));
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    v.at[i] = v.direct ? static_cast<uint8_t*>(byte_at(base, displs[i] * type->extent)) : tmp + at;
    at += v.bytes[i];
  }
  return v;
}

Blocks2 block_view(Schedule& s, void* base, const Datatype* type, MPI_Count count, int n) {
  std::vector<MPI_Count> counts(static_cast<size_t>(n), count);
  std::vector<MPI_Aint> displs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) displs[i] = static_cast<MPI_Aint>(i) * count;
  return block_view(s, base, type, counts, displs);
}

void pack_block(Schedule& s, const Blocks2& v, int i) {
  if (v.direct) return;
  s.copy(byte_at(v.base, v.displs[i] * v.type->extent), v.counts[i], v.type, v.at[i],
         static_cast<MPI_Count>(v.bytes[i]), byte_type());
}

void unpack_block(Schedule& s, const Blocks2& v, int i) {
  if (v.direct) return;
  s.copy(v.at[i], static_cast<MPI_Count>(v.bytes[i]), byte_type(), byte_at(v.base, v.displs[i] * v.type->extent),
         v.counts[i], v.type);
}

namespace {

// Puts this rank's own contribution into block `rank` of the view.
void own_block(Build& b, const Blocks2& v) {
  const Args& a = b.a;
  if (a.in_place) pack_block(b.s, v, b.rank);
  else b.s.copy(a.sendbuf, a.sendcount, a.sendtype, v.at[b.rank], static_cast<MPI_Count>(v.bytes[b.rank]), byte_type());
  b.s.round();
}

// Where this rank's own block can be sent from: the user's send buffer
// when it holds the block's bytes as they are (contiguous types, not in
// place), else its copy in the view. Sending from the send buffer leaves
// the receive buffer to the peers' blocks alone: with single-copy
// transfers (CMA) a block read out of a buffer that the reader's peer is
// writing into at the same time cost twice as much (2 ranks, 1 MiB
// iallgather: 295 us against 110-140 us for the same exchange out of a
// separate buffer).
const void* own_source(const Build& b, const Blocks2& v) {
  const Args& a = b.a;
  if (!a.in_place && v.direct && a.sendtype->contiguous) return a.sendbuf;
  return v.at[b.rank];
}

void unpack_all(Build& b, const Blocks2& v) {
  for (int i = 0; i < b.size; ++i) unpack_block(b.s, v, i);
}

void ring(Build& b, const Blocks2& v) {
  int n = b.size, right = (b.rank + 1) % n, left = (b.rank - 1 + n) % n;
  for (int step = 0; step < n - 1; ++step) {
    int sb = (b.rank - step + n) % n, rb = (b.rank - step - 1 + n) % n;
    b.s.send_bytes(step == 0 ? own_source(b, v) : v.at[sb], v.bytes[sb], right);
    b.s.recv_bytes(v.at[rb], v.bytes[rb], left);
    b.s.round();
  }
}

bool is_pof2(int n) { return (n & (n - 1)) == 0; }
int pof2_below(int n) {
  int p = 1;
  while (p * 2 <= n) p <<= 1;
  return p;
}

}  // namespace

// ---- allgather(v) ---------------------------------------------------------------

void allgather_ring(Build& b) {
  const Args& a = b.a;
  Blocks2 v = block_view(b.s, a.recvbuf, a.recvtype, a.recvcount, b.size);
  own_block(b, v);
  ring(b, v);
  unpack_all(b, v);
}

// Pairs at distance 1, 2, 4, ... swap everything they have; for a power of
// two only (select.cpp falls back to Bruck otherwise).
void allgather_recursive_doubling(Build& b) {
  if (!is_pof2(b.size)) return allgather_bruck(b);
  const Args& a = b.a;
  Blocks2 v = block_view(b.s, a.recvbuf, a.recvtype, a.recvcount, b.size);
  size_t blk = v.bytes[0];
  own_block(b, v);
  for (int mask = 1; mask < b.size; mask <<= 1) {
    int peer = b.rank ^ mask;
    int mine = b.rank & ~(mask - 1), theirs = peer & ~(mask - 1);
    b.s.send_bytes(mask == 1 ? own_source(b, v) : v.at[mine], blk * static_cast<size_t>(mask), peer);
    b.s.recv_bytes(v.at[theirs], blk * static_cast<size_t>(mask), peer);
    b.s.round();
  }
  unpack_all(b, v);
}

// Bruck: blocks kept rotated (own first); in round k every rank sends its
// first min(k, n-k) blocks to rank-k and appends those of rank+k.
void allgather_bruck(Build& b) {
  const Args& a = b.a;
  int n = b.size;
  size_t blk = payload_bytes(a.recvcount, a.recvtype);
  MPI_Aint stride = a.recvcount * a.recvtype->extent;
  auto* tmp = static_cast<uint8_t*>(b.s.temp(blk * static_cast<size_t>(n)));
  if (a.in_place)
    b.s.copy(byte_at(a.recvbuf, b.rank * stride), a.recvcount, a.recvtype, tmp, static_cast<MPI_Count>(blk), byte_type());
  else
    b.s.copy(a.sendbuf, a.sendcount, a.sendtype, tmp, static_cast<MPI_Count>(blk), byte_type());
  b.s.round();
  for (int k = 1; k < n; k <<= 1) {
    int cnt = std::min(k, n - k);
    b.s.send_bytes(tmp, blk * static_cast<size_t>(cnt), (b.rank - k + n) % n);
    b.s.recv_bytes(tmp + blk * static_cast<size_t>(k), blk * static_cast<size_t>(cnt), (b.rank + k) % n);
    b.s.round();
  }
  for (int i = 0; i < n; ++i) {
    int r = (b.rank + i) % n;
    if (i == 0 && a.in_place) continue;
    b.s.copy(tmp + blk * static_cast<size_t>(i), static_cast<MPI_Count>(blk), byte_type(), byte_at(a.recvbuf, r * stride),
             a.recvcount, a.recvtype);
  }
}

void allgatherv_ring(Build& b) {
  const Args& a = b.a;
  Blocks2 v = block_view(b.s, a.recvbuf, a.recvtype, a.recvcounts, a.rdispls);
  own_block(b, v);
  ring(b, v);
  unpack_all(b, v);
}

// Everyone sends its block to everyone in one round.
void allgatherv_linear(Build& b) {
  const Args& a = b.a;
  int n = b.size;
  MPI_Aint ext = a.recvtype->extent;
  const void* mine = a.in_place ? byte_at(a.recvbuf, a.rdispls[b.rank] * ext) : a.sendbuf;
  MPI_Count mcount = a.in_place ? a.recvcounts[b.rank] : a.sendcount;
  const Datatype* mtype = a.in_place ? a.recvtype : a.sendtype;
  for (int i = 1; i < n; ++i) {
    int to = (b.rank + i) % n, from = (b.rank - i + n) % n;
    b.s.send(mine, mcount, mtype, to);
    b.s.recv(byte_at(a.recvbuf, a.rdispls[from] * ext), a.recvcounts[from], a.recvtype, from);
  }
  if (!a.in_place)
    b.s.copy(a.sendbuf, a.sendcount, a.sendtype, byte_at(a.recvbuf, a.rdispls[b.rank] * ext), a.recvcounts[b.rank],
             a.recvtype);
  b.s.round();
}

// ---- alltoall(v/w) --------------------------------------------------------------


// Normalises alltoall / alltoallv / alltoallw (displacements: items for
// alltoall(v), bytes for w) to per-peer blocks; in place, the send side is
// a copy of the receive buffer taken in a first round.
void alltoall_sides(Build& b, Side* snd, Side* rcv) {
  const Args& a = b.a;
  int n = b.size;
  snd->at.resize(n), snd->count.resize(n), snd->type.resize(n);
  rcv->at.resize(n), rcv->count.resize(n), rcv->type.resize(n);
  for (int i = 0; i < n; ++i) {
    switch (a.kind) {
      case Kind::alltoall:
        rcv->at[i] = byte_at(a.recvbuf, i * a.recvcount * a.recvtype->extent);
        rcv->count[i] = a.recvcount;
        rcv->type[i] = a.recvtype;
        if (!a.in_place) {
          snd->at[i] = byte_at(a.sendbuf, i * a.sendcount * a.sendtype->extent);
          snd->count[i] = a.sendcount;
          snd->type[i] = a.sendtype;
        }
        break;
      case Kind::alltoallv:
        rcv->at[i] = byte_at(a.recvbuf, a.rdispls[i] * a.recvtype->extent);
        rcv->count[i] = a.recvcounts[i];
        rcv->type[i] = a.recvtype;
        if (!a.in_place) {
          snd->at[i] = byte_at(a.sendbuf, a.sdispls[i] * a.sendtype->extent);
          snd->count[i] = a.sendcounts[i];
          snd->type[i] = a.sendtype;
        }
        break;
      default:  // alltoallw
        rcv->at[i] = byte_at(a.recvbuf, a.rdispls[i]);
        rcv->count[i] = a.recvcounts[i];
        rcv->type[i] = a.recvtypes[i];
        if (!a.in_place) {
          snd->at[i] = byte_at(a.sendbuf, a.sdispls[i]);
          snd->count[i] = a.sendcounts[i];
          snd->type[i] = a.sendtypes[i];
        }
        break;
    }
  }
  if (a.in_place) {
    for (int i = 0; i < n; ++i) {
      void* t = b.s.temp_items(rcv->count[i], rcv->type[i]);
      b.s.copy(rcv->at[i], rcv->count[i], rcv->type[i], t, rcv->count[i], rcv->type[i]);
      snd->at[i] = t;
      snd->count[i] = rcv->count[i];
      snd->type[i] = rcv->type[i];
    }
    b.s.round();
  }
}

// In step i, send to rank+i and receive from rank-i: one partner each way
// per round, so no rank is flooded.
void alltoall_pairwise(Build& b) {
  Side snd, rcv;
  alltoall_sides(b, &snd, &rcv);
  int n = b.size, me = b.rank;
  b.s.copy(snd.at[me], snd.count[me], snd.type[me], const_cast<void*>(rcv.at[me]), rcv.count[me], rcv.type[me]);
  for (int i = 1; i < n; ++i) {
    int to = (me + i) % n, from = (me - i + n) % n;
    b.s.send(snd.at[to], snd.count[to], snd.type[to], to);
    b.s.recv(const_cast<void*>(rcv.at[from]), rcv.count[from], rcv.type[from], from);
    b.s.round();
  }
  b.s.round();
}
void alltoallv_pairwise(Build& b) { alltoall_pairwise(b); }

// Everything posted at once.
void alltoall_linear(Build& b) {
  Side snd, rcv;
  alltoall_sides(b, &snd, &rcv);
  int n = b.size, me = b.rank;
  for (int i = 1; i < n; ++i) {
    int to = (me + i) % n, from = (me - i + n) % n;
    b.s.send(snd.at[to], snd.count[to], snd.type[to], to);
    b.s.recv(const_cast<void*>(rcv.at[from]), rcv.count[from], rcv.type[from], from);
  }
  b.s.copy(snd.at[me], snd.count[me], snd.type[me], const_cast<void*>(rcv.at[me]), rcv.count[me], rcv.type[me]);
  b.s.round();
}
void alltoallv_linear(Build& b) { alltoall_linear(b); }

// Bruck: log2(n) rounds of small messages. Blocks are kept packed, rotated
// so that index i is the block for rank+i; round k forwards every block
// whose index has bit k to rank+k. At the end index i holds rank-i's block.
void alltoall_bruck(Build& b) {
  const Args& a = b.a;
  Side snd, rcv;
  alltoall_sides(b, &snd, &rcv);
  int n = b.size, me = b.rank;
  size_t blk = payload_bytes(a.recvcount, a.recvtype);
  auto* tmp = static_cast<uint8_t*>(b.s.temp(blk * static_cast<size_t>(n)));
  auto* sbuf = static_cast<uint8_t*>(b.s.temp(blk * static_cast<size_t>(n)));
  auto* rbuf = static_cast<uint8_t*>(b.s.temp(blk * static_cast<size_t>(n)));
  for (int i = 0; i < n; ++i) {
    int to = (me + i) % n;
    b.s.copy(snd.at[to], snd.count[to], snd.type[to], tmp + blk * static_cast<size_t>(i), static_cast<MPI_Count>(blk),
             byte_type());
  }
  auto pack_subset = [&](int k) {
    size_t at = 0;
    for (int i = 1; i < n; ++i)
      if (i & k) {
        b.s.copy_bytes(tmp + blk * static_cast<size_t>(i), sbuf + at, blk);
        at += blk;
      }
    return at;
  };
  if (n > 1) pack_subset(1);
  b.s.round();
  for (int k = 1; k < n; k <<= 1) {
    size_t bytes = 0;
    for (int i = 1; i < n; ++i)
      if (i & k) bytes += blk;
    b.s.send_bytes(sbuf, bytes, (me + k) % n);
    b.s.recv_bytes(rbuf, bytes, (me - k + n) % n);
    size_t at = 0;
    for (int i = 1; i < n; ++i)
      if (i & k) {
        b.s.copy_bytes(rbuf + at, tmp + blk * static_cast<size_t>(i), blk);
        at += blk;
      }
    if ((k << 1) < n) pack_subset(k << 1);
    b.s.round();
  }
  for (int i = 0; i < n; ++i) {
    int from = (me - i + n) % n;
    b.s.copy(tmp + blk * static_cast<size_t>(i), static_cast<MPI_Count>(blk), byte_type(),
             const_cast<void*>(rcv.at[from]), rcv.count[from], rcv.type[from]);
  }
}

// ---- segmented reducing exchanges -------------------------------------------------

namespace {

SizeParam reduce_segment_param{
    "AXON_COLL_REDUCE_SEGMENT", 4 << 20,
    "Bytes per segment of the reducing exchanges of the point-to-point allreduce (ring, Rabenseifner) and "
    "reduce_scatter (pairwise) schedules: a message of at least twice this size goes in segments, one round "
    "each, so that on GPU buffers the kernel of one segment overlaps with the transfer of the next. Must be "
    "the same on every rank. 0: never cut"};

// How many segments a message of `count` items goes in, and where segment
// g of them starts (items, the remainder spread over the first ones).
MPI_Count segments_of(MPI_Count count, const Datatype* type) {
  const int64_t seg = reduce_segment_param.get();
  const size_t bytes = payload_bytes(count, type);
  if (seg <= 0 || count <= 1 || bytes < 2 * static_cast<size_t>(seg)) return 1;
  return std::min<MPI_Count>(count, static_cast<MPI_Count>(bytes / static_cast<size_t>(seg)));
}
MPI_Count segment_start(MPI_Count count, MPI_Count segs, MPI_Count g) {
  return g * (count / segs) + std::min(g, count % segs);
}

}  // namespace

void segmented_exchange(Schedule& s, const void* sbuf, MPI_Count scount, int to, void* rbuf, MPI_Count rcount,
                        int from, const Datatype* type, const std::function<void(MPI_Count, MPI_Count)>& fold) {
  const MPI_Count ss = segments_of(scount, type), rs = segments_of(rcount, type);
  const MPI_Aint ext = type->extent;
  for (MPI_Count g = 0; g < std::max(ss, rs); ++g) {
    if (g < ss) {
      MPI_Count at = segment_start(scount, ss, g);
      s.send(byte_at(sbuf, at * ext), segment_start(scount, ss, g + 1) - at, type, to);
    }
    if (g < rs) {
      MPI_Count at = segment_start(rcount, rs, g), n = segment_start(rcount, rs, g + 1) - at;
      s.recv(byte_at(rbuf, at * ext), n, type, from);
      fold(at, n);
    }
    s.round();
  }
}

// ---- allreduce ------------------------------------------------------------------

namespace {

// recvbuf = this rank's contribution (a first round), unless in place.
void start_in_recvbuf(Build& b) {
  const Args& a = b.a;
  if (!a.in_place) b.s.copy(a.sendbuf, a.recvcount, a.recvtype, a.recvbuf, a.recvcount, a.recvtype);
  b.s.round();
}

// The non-power-of-two fold: among the first 2*extra ranks, each odd rank
// hands its data to the even one below it and waits for the result.
// Returns false for ranks that sit out; *vrank is the rank among pof2.
bool fold_in(Build& b, int pof2, void* tmp, int* vrank) {
  const Args& a = b.a;
  int extra = b.size - pof2;
  if (b.rank < 2 * extra) {
    if (b.rank % 2) {
      b.s.send(a.recvbuf, a.recvcount, a.recvtype, b.rank - 1);
      b.s.recv(a.recvbuf, a.recvcount, a.recvtype, b.rank - 1);
      b.s.round();
      return false;
    }
    b.s.recv(tmp, a.recvcount, a.recvtype, b.rank + 1);
    b.s.reduce(a.recvbuf, tmp, a.recvcount, a.recvtype);  // tmp = mine op theirs
    b.s.copy(tmp, a.recvcount, a.recvtype, a.recvbuf, a.recvcount, a.recvtype);
    b.s.round();
    *vrank = b.rank / 2;
  } else {
    *vrank = b.rank - extra;
  }
  return true;
}
void fold_out(Build& b, int pof2) {
  if (b.rank < 2 * (b.size - pof2)) {
    b.s.send(b.a.recvbuf, b.a.recvcount, b.a.recvtype, b.rank + 1);
    b.s.round();
  }
}
int real_rank(int vrank, int extra) { return vrank < extra ? vrank * 2 : vrank + extra; }

}  // namespace

// Recursive doubling. The first exchange sends straight from sendbuf and
// receives into recvbuf, so no copy of the input is made when the operand
// order allows `recvbuf = mine op theirs` (commutative op or a partner
// above); later steps fold into recvbuf, or into scratch and swap.
void allreduce_recursive_doubling(Build& b) {
  const Args& a = b.a;
  MPI_Count count = a.recvcount;
  const Datatype* type = a.recvtype;
  if (count == 0) return;
  if (b.size == 1) {
    start_in_recvbuf(b);
    return;
  }
  bool comm = a.op->commutative;
  int pof2 = pof2_below(b.size), extra = b.size - pof2, vrank = 0;
  const void* mine = a.in_place ? a.recvbuf : a.sendbuf;
  void* tmp = b.s.temp_items(count, type);
  // cur: where this rank's partial result is; null while it is still `mine`.
  void* cur = a.in_place ? a.recvbuf : nullptr;
  if (b.rank < 2 * extra) {
    if (b.rank % 2) {
      b.s.send(mine, count, type, b.rank - 1);
      b.s.recv(a.recvbuf, count, type, b.rank - 1);
      b.s.round();
      return;
    }
    // partner above: result = mine op theirs
    if (cur) {
      b.s.recv(tmp, count, type, b.rank + 1);
      b.s.reduce(cur, tmp, count, type);
      b.s.copy(tmp, count, type, cur, count, type);
    } else {
      b.s.recv(a.recvbuf, count, type, b.rank + 1);
      b.s.reduce(mine, a.recvbuf, count, type);
      cur = a.recvbuf;
    }
    b.s.round();
    vrank = b.rank / 2;
  } else {
    vrank = b.rank - extra;
  }
  for (int mask = 1; mask < pof2; mask <<= 1) {
    int peer = real_rank(vrank ^ mask, extra);
    bool above = peer > b.rank;
    if (!cur) {  // first exchange, input still in sendbuf
      b.s.send(mine, count, type, peer);
      b.s.recv(a.recvbuf, count, type, peer);
      if (above || comm) {
        b.s.reduce(mine, a.recvbuf, count, type);  // recvbuf = mine op theirs
      } else {
        b.s.copy(mine, count, type, tmp, count, type);
        b.s.reduce(a.recvbuf, tmp, count, type);  // tmp = theirs op mine
        b.s.copy(tmp, count, type, a.recvbuf, count, type);
      }
      cur = a.recvbuf;
      b.s.round();
      continue;
    }
    void* other = cur == a.recvbuf ? tmp : a.recvbuf;
    b.s.send(cur, count, type, peer);
    b.s.recv(other, count, type, peer);
    if (!above || comm) {
      b.s.reduce(other, cur, count, type);  // cur = theirs op cur
    } else {
      b.s.reduce(cur, other, count, type);  // other = cur op theirs
      cur = other;
    }
    b.s.round();
  }
  if (cur != a.recvbuf) {
    b.s.copy(cur, count, type, a.recvbuf, count, type);
    b.s.round();
  }
  fold_out(b, pof2);
}

void allreduce_reduce_bcast(Build& b) {
  const Args& a = b.a;
  if (a.recvcount == 0) return;
  Args r = a;
  r.root = 0;
  if (a.in_place && b.rank != 0) {
    r.sendbuf = a.recvbuf;
    r.in_place = false;
  }
  Build rb{b.s, r, b.rank, b.size, b.radix};
  reduce_binomial(rb);
  b.s.round();
  bcast_binomial(rb);
}

// Ring: reduce-scatter around the ring, then allgather around it. Block b
// is combined starting at rank b+1, so operand order is rotated: only for
// commutative ops.
void allreduce_ring(Build& b) {
  const Args& a = b.a;
  if (a.recvcount == 0) return;
  start_in_recvbuf(b);
  int n = b.size;
  if (n == 1) return;
  Blocks blk(a.recvcount, n);
  MPI_Aint ext = a.recvtype->extent;
  auto at = [&](int i) { return byte_at(a.recvbuf, blk.offset[i] * ext); };
  void* tmp = b.s.temp_items(blk.size[0], a.recvtype);
  int right = (b.rank + 1) % n, left = (b.rank - 1 + n) % n;
  for (int step = 0; step < n - 1; ++step) {
    int sb = (b.rank - step + n) % n, rb = (b.rank - step - 1 + n) % n;
    segmented_exchange(b.s, at(sb), blk.size[sb], right, tmp, blk.size[rb], left, a.recvtype,
                       [&](MPI_Count first, MPI_Count items) {
                         b.s.reduce(byte_at(tmp, first * ext), byte_at(at(rb), first * ext), items, a.recvtype);
                       });
  }
  for (int step = 0; step < n - 1; ++step) {
    int sb = (b.rank + 1 - step + n) % n, rb = (b.rank - step + n) % n;
    b.s.send(at(sb), blk.size[sb], a.recvtype, right);
    b.s.recv(at(rb), blk.size[rb], a.recvtype, left);
    b.s.round();
  }
}

// Rabenseifner: recursive halving reduce-scatter, then recursive doubling
// allgather (Thakur/Rabenseifner/Gropp). Distances grow 1, 2, 4, ... so
// each partner's partial result covers the adjacent, aligned range of ranks;
// combining as (lower) op (higher) keeps operand order.
void allreduce_rabenseifner(Build& b) {
  const Args& a = b.a;
  if (a.recvcount == 0) return;
  int pof2 = pof2_below(b.size), extra = b.size - pof2, vrank = 0;
  if (a.recvcount < pof2 || b.size == 1) return allreduce_recursive_doubling(b);  // fewer items than blocks
  void* tmp = b.s.temp_items(a.recvcount, a.recvtype);
  // While `fresh`, this rank's data is still only in sendbuf (no fold took
  // place and not in place): the first halving step reads it from there.
  bool fresh = !a.in_place && b.rank >= 2 * extra;
  if (!fresh) {
    start_in_recvbuf(b);
    if (!fold_in(b, pof2, tmp, &vrank)) return;
  } else {
    vrank = b.rank - extra;
  }
  Blocks blk(a.recvcount, pof2);
  MPI_Aint ext = a.recvtype->extent;
  auto off = [&](int i) { return i >= pof2 ? a.recvcount : blk.offset[i]; };
  auto at = [&](int i) { return byte_at(a.recvbuf, off(i) * ext); };
  struct Step {
    int peer, keep_lo, keep_hi, send_lo, send_hi;
  };
  std::vector<Step> steps;
  int lo = 0, hi = pof2;
  for (int mask = 1; mask < pof2; mask <<= 1) {
    int peer = real_rank(vrank ^ mask, extra);
    int mid = (lo + hi) / 2;
    Step st{peer, lo, mid, mid, hi};
    if (vrank & mask) st = {peer, mid, hi, lo, mid};
    MPI_Count keep = off(st.keep_hi) - off(st.keep_lo);
    const MPI_Count sent = off(st.send_hi) - off(st.send_lo);
    // Item i of the kept range in `base`.
    auto item = [&](const void* base, MPI_Count i) { return byte_at(base, (off(st.keep_lo) + i) * ext); };
    auto in_tmp = [&](MPI_Count i) { return byte_at(tmp, i * ext); };
    if (fresh) {
      auto src = [&](int i) { return byte_at(a.sendbuf, off(i) * ext); };
      if (peer > b.rank || a.op->commutative) {
        segmented_exchange(b.s, src(st.send_lo), sent, peer, at(st.keep_lo), keep, peer, a.recvtype,
                           [&](MPI_Count first, MPI_Count items) {
                             // mine op theirs
                             b.s.reduce(item(a.sendbuf, first), item(a.recvbuf, first), items, a.recvtype);
                           });
      } else {
        segmented_exchange(b.s, src(st.send_lo), sent, peer, tmp, keep, peer, a.recvtype,
                           [&](MPI_Count first, MPI_Count items) {
                             b.s.copy(item(a.sendbuf, first), items, a.recvtype, item(a.recvbuf, first), items,
                                      a.recvtype);
                             // theirs op mine
                             b.s.reduce(in_tmp(first), item(a.recvbuf, first), items, a.recvtype);
                           });
      }
      fresh = false;
      steps.push_back(st);
      lo = st.keep_lo, hi = st.keep_hi;
      continue;
    }
    const bool theirs_first = peer < b.rank || a.op->commutative;
    segmented_exchange(b.s, at(st.send_lo), sent, peer, tmp, keep, peer, a.recvtype,
                       [&](MPI_Count first, MPI_Count items) {
                         if (theirs_first) {
                           // mine = theirs op mine
                           b.s.reduce(in_tmp(first), item(a.recvbuf, first), items, a.recvtype);
                         } else {
                           // tmp = mine op theirs
                           b.s.reduce(item(a.recvbuf, first), in_tmp(first), items, a.recvtype);
                           b.s.copy(in_tmp(first), items, a.recvtype, item(a.recvbuf, first), items, a.recvtype);
                         }
                       });
    steps.push_back(st);
    lo = st.keep_lo, hi = st.keep_hi;
  }
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    b.s.send(at(it->keep_lo), off(it->keep_hi) - off(it->keep_lo), a.recvtype, it->peer);
    b.s.recv(at(it->send_lo), off(it->send_hi) - off(it->send_lo), a.recvtype, it->peer);
    b.s.round();
  }
  fold_out(b, pof2);
}

// ---- reduce_scatter(_block) -----------------------------------------------------

// Order-keeping: reduce the whole vector to rank 0, then scatter it.
void reduce_scatter_reduce_scatterv(Build& b) {
  const Args& a = b.a;
  int n = b.size;
  MPI_Count total = std::accumulate(a.recvcounts.begin(), a.recvcounts.end(), MPI_Count{0});
  if (total == 0) return;
  void* full = b.rank == 0 ? b.s.temp_items(total, a.recvtype) : nullptr;
  Args r = a;
  r.kind = Kind::reduce;
  r.root = 0;
  r.recvcount = total;
  r.recvbuf = full;
  r.sendbuf = a.in_place ? a.recvbuf : a.sendbuf;
  r.in_place = false;
  Build rb{b.s, r, b.rank, n, b.radix};
  reduce_binomial(rb);
  b.s.round();
  Args sc = a;
  sc.kind = Kind::scatterv;
  sc.root = 0;
  sc.in_place = false;
  sc.sendbuf = full;
  sc.sendtype = a.recvtype;
  sc.sendcounts = a.recvcounts;
  sc.sdispls.assign(static_cast<size_t>(n), 0);
  for (int i = 1; i < n; ++i) sc.sdispls[i] = sc.sdispls[i - 1] + a.recvcounts[i - 1];
  sc.recvcount = a.recvcounts[b.rank];
  Build sb{b.s, sc, b.rank, n, b.radix};
  scatterv_linear(sb);
}

// Pairwise exchange: in step i send rank+i the part of our vector that it
// owns, receive our part from rank-i, fold it in. Commutative ops only.
void reduce_scatter_pairwise(Build& b) {
  const Args& a = b.a;
  int n = b.size, me = b.rank;
  MPI_Aint ext = a.recvtype->extent;
  const void* src = a.in_place ? a.recvbuf : a.sendbuf;
  std::vector<MPI_Aint> displ(static_cast<size_t>(n), 0);
  for (int i = 1; i < n; ++i) displ[i] = displ[i - 1] + a.recvcounts[i - 1];
  MPI_Count mine = a.recvcounts[me];
  void* acc = b.s.temp_items(mine, a.recvtype);
  void* tmp = b.s.temp_items(mine, a.recvtype);
  b.s.copy(byte_at(src, displ[me] * ext), mine, a.recvtype, acc, mine, a.recvtype);
  b.s.round();
  for (int i = 1; i < n; ++i) {
    int to = (me + i) % n, from = (me - i + n) % n;
    segmented_exchange(b.s, byte_at(src, displ[to] * ext), a.recvcounts[to], to, tmp, mine, from, a.recvtype,
                       [&](MPI_Count first, MPI_Count items) {
                         b.s.reduce(byte_at(tmp, first * ext), byte_at(acc, first * ext), items, a.recvtype);
                       });
  }
  b.s.copy(acc, mine, a.recvtype, a.recvbuf, mine, a.recvtype);
}

// ---- scan / exscan --------------------------------------------------------------

// A chain: rank r waits for the prefix of ranks < r, adds its own, passes on.
void scan_linear(Build& b) {
  const Args& a = b.a;
  MPI_Count count = a.recvcount;
  if (count == 0) return;
  bool ex = a.kind == Kind::exscan;
  const void* mine = a.in_place ? a.recvbuf : a.sendbuf;
  int n = b.size, me = b.rank;
  if (!ex) {
    start_in_recvbuf(b);
    if (me > 0) {
      void* tmp = b.s.temp_items(count, a.recvtype);
      b.s.recv(tmp, count, a.recvtype, me - 1);
      b.s.reduce(tmp, a.recvbuf, count, a.recvtype);
      b.s.round();
    }
    if (me < n - 1) b.s.send(a.recvbuf, count, a.recvtype, me + 1);
    return;
  }
  if (me == 0) {
    if (n > 1) b.s.send(mine, count, a.recvtype, 1);
    return;
  }
  // prefix = (prefix of ranks < me) op mine, kept apart from recvbuf (which
  // may hold `mine` in place).
  void* prefix = b.s.temp_items(count, a.recvtype);
  b.s.copy(mine, count, a.recvtype, prefix, count, a.recvtype);
  b.s.round();
  b.s.recv(a.recvbuf, count, a.recvtype, me - 1);
  b.s.reduce(a.recvbuf, prefix, count, a.recvtype);
  b.s.round();
  if (me < n - 1) b.s.send(prefix, count, a.recvtype, me + 1);
}

// Recursive doubling: `partial` is the reduction over the aligned group of
// ranks seen so far, `result` the prefix; a partner below contributes on the
// left of both, a partner above only to `partial`, on the right.
void scan_recursive_doubling(Build& b) {
  const Args& a = b.a;
  MPI_Count count = a.recvcount;
  if (count == 0) return;
  bool ex = a.kind == Kind::exscan;
  const void* mine = a.in_place ? a.recvbuf : a.sendbuf;
  int n = b.size, me = b.rank;
  void* bufs[2] = {b.s.temp_items(count, a.recvtype), b.s.temp_items(count, a.recvtype)};
  int cur = 0;
  b.s.copy(mine, count, a.recvtype, bufs[0], count, a.recvtype);
  if (!ex && !a.in_place) b.s.copy(mine, count, a.recvtype, a.recvbuf, count, a.recvtype);
  b.s.round();
  bool have_result = !ex;
  for (int mask = 1; mask < n; mask <<= 1) {
    int peer = me ^ mask;
    if (peer >= n) continue;
    void* in = bufs[cur ^ 1];
    b.s.send(bufs[cur], count, a.recvtype, peer);
    b.s.recv(in, count, a.recvtype, peer);
    if (peer < me) {
      if (have_result) b.s.reduce(in, a.recvbuf, count, a.recvtype);
      else b.s.copy(in, count, a.recvtype, a.recvbuf, count, a.recvtype);
      have_result = true;
      b.s.reduce(in, bufs[cur], count, a.recvtype);  // partial = theirs op partial
    } else {
      b.s.reduce(bufs[cur], in, count, a.recvtype);  // in = partial op theirs
      cur ^= 1;
    }
    b.s.round();
  }
}

}  // namespace axon::coll
