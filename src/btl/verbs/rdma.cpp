// btl/verbs: rendezvous get() and put().
//
// RGET: expose() registered the sender's buffer for remote read (memory.cpp)
// and the receiver's get() RDMA READs it; RPUT (no READ on the device, or
// AXON_BTL_VERBS_RNDV=put): the receiver's expose_writable() registered its
// buffer and the sender's put() RDMA WRITEs into it. Either way the PML
// splits a transfer into pieces of at most Caps::max_rdma bytes (the
// pipeline chunk, AXON_BTL_VERBS_PIPELINE_CHUNK) and keeps up to
// Caps::rdma_depth of them in flight (AXON_BTL_VERBS_PIPELINE_DEPTH). Each
// get()/put() here is one piece: its local memory registered (through the
// cache), one RDMA READ/WRITE work request posted, and nothing waited for;
// the completion arrives on the send CQ, polled by progress(), which runs
// the piece's RdmaOp callback. So a handler that starts a large read
// returns at once and messages from other peers keep flowing meanwhile.
#include "btl/verbs/internal.h"

#ifdef AXON_HAVE_VERBS

#include <unistd.h>

#include <cerrno>

#include "base/log.h"
#include "base/status.h"

namespace axon::btl::verbs {

int VerbsTransport::get(int peer, void* local, uint64_t remote_addr, uint64_t remote_key, size_t len, RdmaOp* op) {
  return post_piece(peer, false, static_cast<uint8_t*>(local), remote_addr, remote_key, len, op, false);
}

int VerbsTransport::put(int peer, const void* local, uint64_t remote_addr, uint64_t remote_key, size_t len,
                        RdmaOp* op) {
  return post_piece(peer, true, static_cast<uint8_t*>(const_cast<void*>(local)), remote_addr, remote_key, len, op,
                    false);
}

// A piece's local registration, through the cache. The cache rounds every
// registration out to whole pages and merges a new one with the cached
// regions it overlaps, so pieces of one buffer that shared a page would make
// piece k merge with (and re-register) pieces 0..k-1: quadratic pinning on
// a buffer's first use. They share none: a caching rail asks the pml to cut
// pieces at page boundaries (Caps::rdma_align, verbs.cpp), and its own
// window transfers cut the same way (rma.cpp, btl::piece_length).
bool VerbsTransport::register_piece(int peer, bool write, uint8_t* local, size_t len, rcache::Handle* mr,
                                    ibv_sge* sge) {
  *mr = cache_->acquire(local, len, write ? 0 : IBV_ACCESS_LOCAL_WRITE);
  if (!*mr) {
    log::error("verbs: cannot register %zu bytes for an %s rank %d: %s", len,
               write ? "RDMA WRITE to" : "RDMA READ from", peer, reg_hint(errno).c_str());
    return false;
  }
  *sge = {reinterpret_cast<uintptr_t>(local), static_cast<uint32_t>(len), mr_of(*mr)->lkey};
  return true;
}

int VerbsTransport::post_piece(int peer, bool write, uint8_t* local, uint64_t remote_addr, uint64_t remote_key,
                               size_t len, RdmaOp* op, bool immediate) {
  const char* what = write ? "RDMA WRITE to" : "RDMA READ from";
  // Our exposure keys carry a non-zero number above the rkey; the PML
  // passes the peer's 0 when its registration failed (it said why).
  if ((remote_key >> 32) == 0) {
    log::error("verbs: rank %d could not register its buffer for the rendezvous (see its error)", peer);
    return kIoError;
  }
  if (len > pipe_chunk_) {
    log::error("verbs: an %s rank %d of %zu bytes is larger than Caps::max_rdma (%zu)", what, peer, len,
               pipe_chunk_);
    return kUnsupported;
  }
  if (len == 0) {  // nothing to move; done still runs from progress()
    done_.push(op, kOk);
    return kOk;
  }
  Conn* c = nullptr;
  if (int rc = established(peer, &c); rc != kOk) return rc;
  if (!has_room(c)) return kAgain;
  uint32_t slot;
  if (!free_pieces_.empty()) {
    slot = free_pieces_.back();
    free_pieces_.pop_back();
  } else {
    slot = static_cast<uint32_t>(pieces_.size());
    pieces_.emplace_back();
  }
  Piece& p = pieces_[slot];
  ibv_sge sge;
  if (!register_piece(peer, write, local, len, &p.mr, &sge)) {
    free_pieces_.push_back(slot);
    return kIoError;
  }
  ibv_send_wr wr{};
  wr.wr_id = with_cover(make_wr(kWrRdma, slot), c->unsignaled + 1);
  wr.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = remote_addr;
  wr.wr.rdma.rkey = static_cast<uint32_t>(remote_key);
  ibv_send_wr* bad = nullptr;
  if (int err = ibv_post_send(c->qp, &wr, &bad)) {
    log::error("verbs: posting an %s rank %d failed: %s", what, peer, strerror(err));
    p.mr.reset();
    free_pieces_.push_back(slot);
    return kIoError;
  }
  p.op = op;
  p.len = len;
  p.peer = peer;
  p.write = write;
  p.immediate = immediate;
  ++c->outstanding;
  c->unsignaled = 0;
  ++send_cq_used_;
  rdma_chunks.add();
  return kOk;
}

// From poll_send_cq (send CQ and QP counts already released).
void VerbsTransport::piece_completed(const ibv_wc& wc) {
  uint32_t slot = wr_slot(wc.wr_id);
  if (slot >= pieces_.size() || !pieces_[slot].op) return;
  Piece& p = pieces_[slot];
  int status = kOk;
  if (wc.status == IBV_WC_SUCCESS) {
    (p.write ? write_bytes : read_bytes).add(p.len);
    if (Counter* bytes = rail_bytes(rail_)) bytes->add(p.len);
  } else {
    status = kIoError;
    // A flushed piece follows the failure that broke the QP (reported).
    if (wc.status != IBV_WC_WR_FLUSH_ERR && !closing_)
      log::error("verbs: %s rank %d failed: %s; %s", p.write ? "RDMA WRITE to" : "RDMA READ from", p.peer,
                 ibv_wc_status_str(wc.status), wc_hint(wc.status));
  }
  RdmaOp* op = p.op;
  bool immediate = p.immediate;
  p.mr.reset();  // stays cached for the next use of the buffer, when the cache caches
  p.op = nullptr;
  free_pieces_.push_back(slot);
  if (immediate)
    op->done(op, status);
  else
    done_.push(op, status);
}

}  // namespace axon::btl::verbs

#endif  // AXON_HAVE_VERBS
