// Intercommunicator collectives (MPI-4.1 6.2.2, remote-group semantics).
// The schedule's own context is the LOCAL group's (so the intracommunicator
// builders run unchanged within a group); traffic between the groups names
// the remote context explicitly. Group leaders are local rank 0.
//   barrier:   local barrier, leaders swap a token, local barrier
//   bcast:     root -> remote leader -> binomial bcast in that group
//   reduce:    binomial reduce to the leader, leader -> root
//   allreduce: each group reduces to its leader, leaders swap, local bcast
//   allgather: each group gathers to its leader, leaders swap, local bcast
//   reduce_scatter_block: reduce to the leader, leaders swap, local scatter
//   reduce_scatter: the same with a local scatterv
//   allgatherv, alltoall(v/w), gather(v), scatter(v): direct, one round
#include "coll/internal.h"

namespace axon::coll {

namespace {

void local_bcast_bytes(Schedule& s, const Args& a, void* buf, size_t bytes, int lrank, int lsize) {
  Args l = a;
  l.kind = Kind::bcast;
  l.root = 0;
  l.recvbuf = buf;
  l.recvcount = static_cast<MPI_Count>(bytes);
  l.recvtype = byte_type();
  Build lb{s, l, lrank, lsize, 2};
  bcast_binomial(lb);
  s.round();
}

// Reduces this group's contributions to the leader; returns the buffer
// holding the result there (null elsewhere).
void* local_reduce(Schedule& s, const Args& a, int lrank, int lsize) {
  Args l = a;
  l.kind = Kind::reduce;
  l.root = 0;
  l.in_place = false;
  l.recvbuf = lrank == 0 ? s.temp_items(a.recvcount, a.recvtype) : nullptr;
  Build lb{s, l, lrank, lsize, 2};
  reduce_binomial(lb);
  s.round();
  return l.recvbuf;
}

// The leader exchange of reduce_scatter(_block): every vector has `total`
// items (the same in both groups), this group's are reduced to the leader,
// and the leaders swap results. Returns the other group's result at the
// leader (null elsewhere), ready to be scattered over this group.
void* reduce_and_swap(Schedule& s, const Args& a, MPI_Count total, int lrank, int lsize, pml::Context* remote) {
  Args r = a;
  r.recvcount = total;
  void* mine = local_reduce(s, r, lrank, lsize);
  if (lrank != 0) return nullptr;
  void* theirs = s.temp_items(total, a.recvtype);
  s.send(mine, total, a.recvtype, 0, remote);
  s.recv(theirs, total, a.recvtype, 0, remote);
  s.round();
  return theirs;
}

}  // namespace

bool build_inter(Schedule& s, const Args& a, CommState* st) {
  pml::Context* remote = st->coll;
  int lrank = st->local->rank, lsize = st->local->size(), rsize = remote->size();
  Build lb{s, a, lrank, lsize, 2};
  switch (a.kind) {
    case Kind::barrier:
      barrier_dissemination(lb);
      if (lrank == 0) {
        s.send_bytes(nullptr, 0, 0, remote);
        s.recv_bytes(nullptr, 0, 0, remote);
        s.round();
      }
      barrier_dissemination(lb);
      return true;
    case Kind::bcast: {
      if (a.root == MPI_PROC_NULL || a.recvcount == 0) return true;
      if (a.root == MPI_ROOT) {
        s.send(a.recvbuf, a.recvcount, a.recvtype, 0, remote);
        return true;
      }
      if (lrank == 0) {
        s.recv(a.recvbuf, a.recvcount, a.recvtype, a.root, remote);
        s.round();
      }
      Args l = a;
      l.root = 0;
      Build b{s, l, lrank, lsize, 2};
      bcast_binomial(b);
      return true;
    }
    case Kind::reduce: {
      if (a.root == MPI_PROC_NULL || a.recvcount == 0) return true;
      if (a.root == MPI_ROOT) {
        s.recv(a.recvbuf, a.recvcount, a.recvtype, 0, remote);
        return true;
      }
      void* mine = local_reduce(s, a, lrank, lsize);
      if (lrank == 0) s.send(mine, a.recvcount, a.recvtype, a.root, remote);
      return true;
    }
    case Kind::allreduce: {
      if (a.recvcount == 0) return true;
      void* mine = local_reduce(s, a, lrank, lsize);
      if (lrank == 0) {
        s.send(mine, a.recvcount, a.recvtype, 0, remote);
        s.recv(a.recvbuf, a.recvcount, a.recvtype, 0, remote);
        s.round();
      }
      Args l = a;
      l.root = 0;
      Build b{s, l, lrank, lsize, 2};
      bcast_binomial(b);
      return true;
    }
    case Kind::allgather: {
      size_t sblk = payload_bytes(a.sendcount, a.sendtype), rblk = payload_bytes(a.recvcount, a.recvtype);
      uint8_t* mine = lrank == 0 ? static_cast<uint8_t*>(s.temp(sblk * static_cast<size_t>(lsize))) : nullptr;
      auto* theirs = static_cast<uint8_t*>(s.temp(rblk * static_cast<size_t>(rsize)));
      Args g = a;
      g.kind = Kind::gather;
      g.root = 0;
      g.recvbuf = mine;
      g.recvcount = static_cast<MPI_Count>(sblk);
      g.recvtype = byte_type();
      Build gb{s, g, lrank, lsize, 2};
      gather_binomial(gb);
      s.round();
      if (lrank == 0) {
        s.send_bytes(mine, sblk * static_cast<size_t>(lsize), 0, remote);
        s.recv_bytes(theirs, rblk * static_cast<size_t>(rsize), 0, remote);
        s.round();
      }
      local_bcast_bytes(s, a, theirs, rblk * static_cast<size_t>(rsize), lrank, lsize);
      MPI_Aint stride = a.recvcount * a.recvtype->extent;
      for (int i = 0; i < rsize; ++i)
        s.copy(theirs + rblk * static_cast<size_t>(i), static_cast<MPI_Count>(rblk), byte_type(),
               byte_at(a.recvbuf, i * stride), a.recvcount, a.recvtype);
      return true;
    }
    case Kind::allgatherv:
      // Everyone to everyone across the groups, one round.
      for (int i = 0; i < rsize; ++i) {
        s.send(a.sendbuf, a.sendcount, a.sendtype, i, remote);
        s.recv(byte_at(a.recvbuf, a.rdispls[i] * a.recvtype->extent), a.recvcounts[i], a.recvtype, i, remote);
      }
      return true;
    case Kind::reduce_scatter_block: {
      // Every vector has recvcount * (size of its own group) items (so the
      // two groups' vectors are equally long, as MPICH reads MPI-4.1 6.11.2):
      // reduce ours to the leader, the leaders swap, each leader scatters
      // the other group's result in its group.
      if (a.recvcount == 0) return true;
      void* theirs = reduce_and_swap(s, a, a.recvcount * lsize, lrank, lsize, remote);
      Args sc = a;
      sc.kind = Kind::scatter;
      sc.root = 0;
      sc.in_place = false;
      sc.sendbuf = theirs;
      sc.sendcount = a.recvcount;
      sc.sendtype = a.recvtype;
      Build sb{s, sc, lrank, lsize, 2};
      scatter_linear(sb);
      return true;
    }
    case Kind::reduce_scatter: {
      // As reduce_scatter_block with a scatterv at the end: every vector has
      // T = sum of this group's recvcounts items, and T must be the same in
      // both groups (MPICH's reading of MPI-4.1 6.11.1: each group reduces
      // vectors of that length, and the other group's result is scattered
      // over this one by recvcounts).
      MPI_Count total = 0;
      std::vector<MPI_Aint> displs(static_cast<size_t>(lsize));
      for (int i = 0; i < lsize; ++i) {
        displs[static_cast<size_t>(i)] = static_cast<MPI_Aint>(total);
        total += a.recvcounts[static_cast<size_t>(i)];
      }
      if (total == 0) return true;
      void* theirs = reduce_and_swap(s, a, total, lrank, lsize, remote);
      Args sc = a;
      sc.kind = Kind::scatterv;
      sc.root = 0;
      sc.in_place = false;
      sc.sendbuf = theirs;
      sc.sendcounts = a.recvcounts;
      sc.sdispls = displs;
      sc.sendtype = a.recvtype;
      Build sb{s, sc, lrank, lsize, 2};
      scatterv_linear(sb);
      return true;
    }
    case Kind::alltoall:
    case Kind::alltoallv:
    case Kind::alltoallw: {
      Side snd, rcv;
      Build rb{s, a, lrank, rsize, 2};
      alltoall_sides(rb, &snd, &rcv);
      for (int i = 0; i < rsize; ++i) {
        s.send(snd.at[i], snd.count[i], snd.type[i], i, remote);
        s.recv(const_cast<void*>(rcv.at[i]), rcv.count[i], rcv.type[i], i, remote);
      }
      return true;
    }
    case Kind::gather:
    case Kind::gatherv:
      if (a.root == MPI_PROC_NULL) return true;
      if (a.root != MPI_ROOT) {
        s.send(a.sendbuf, a.sendcount, a.sendtype, a.root, remote);
        return true;
      }
      for (int i = 0; i < rsize; ++i) {
        bool v = a.kind == Kind::gatherv;
        MPI_Aint at = v ? a.rdispls[i] * a.recvtype->extent : i * a.recvcount * a.recvtype->extent;
        s.recv(byte_at(a.recvbuf, at), v ? a.recvcounts[i] : a.recvcount, a.recvtype, i, remote);
      }
      return true;
    case Kind::scatter:
    case Kind::scatterv:
      if (a.root == MPI_PROC_NULL) return true;
      if (a.root != MPI_ROOT) {
        s.recv(a.recvbuf, a.recvcount, a.recvtype, a.root, remote);
        return true;
      }
      for (int i = 0; i < rsize; ++i) {
        bool v = a.kind == Kind::scatterv;
        MPI_Aint at = v ? a.sdispls[i] * a.sendtype->extent : i * a.sendcount * a.sendtype->extent;
        s.send(byte_at(a.sendbuf, at), v ? a.sendcounts[i] : a.sendcount, a.sendtype, i, remote);
      }
      return true;
    default:
      return false;
  }
}

}  // namespace axon::coll
