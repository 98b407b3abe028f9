// btl/verbs: one-sided operations for RMA windows (src/osc/rdma.cpp).
//
// A window's memory is registered once for its lifetime (expose_window:
// remote read, write and, where the device has them, atomics), outside the
// registration cache. Put, Get and the 8-byte atomics are posted without
// waiting (put_nb, get_nb, atomic_nb); flush_test tells when every one posted
// to a peer completed, so the osc layer waits only at flush / unlock / fence
// / complete. Small writes go inline; other small operations use a slot of a
// registered staging area (writes are copied in, so the caller's buffer is
// free at once; reads and atomic results are copied out on completion).
// Operations larger than a slot move in pipeline pieces (rdma.cpp) and are
// waited for before returning (rma_transfer), so the caller's buffer is
// again free (put) or filled (get) on return.
#include "btl/verbs/internal.h"

#ifdef AXON_HAVE_VERBS

#include <cerrno>

#include "base/backoff.h"
#include "base/log.h"
#include "base/status.h"
#include "rte/rte.h"

namespace axon::btl::verbs {

void VerbsTransport::rma_caps() {
  caps_.rma = true;
  caps_.atomics = dev_attr_.atomic_cap != IBV_ATOMIC_NONE && dev_attr_.max_qp_rd_atom > 0 &&
                  dev_attr_.max_qp_init_rd_atom > 0;
  caps_.atomics_glob = caps_.atomics && dev_attr_.atomic_cap == IBV_ATOMIC_GLOB;
}

uint64_t VerbsTransport::expose_window(void* addr, size_t len) {
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (caps_.atomics) access |= IBV_ACCESS_REMOTE_ATOMIC;
  ibv_mr* mr = ibv_reg_mr(pd_, addr, len, access);
  if (!mr) {
    log::debug(1, "verbs: cannot register a window of %zu bytes: %s", len, reg_hint(errno).c_str());
    return 0;
  }
  uint64_t id = ++exposure_serial_;
  windows_.emplace(id, MrPtr(mr));
  return (id << 32) | mr->rkey;
}

void VerbsTransport::unexpose_window(uint64_t key) { windows_.erase(key >> 32); }

int VerbsTransport::put_nb(int peer, const void* local, size_t len, uint64_t remote_addr, uint64_t key) {
  Conn* c = nullptr;
  if (int rc = rma_ready(peer, &c); rc != kOk) return rc;
  if (len > kRmaSlot)  // counted (write_bytes) by its pieces
    return rma_transfer(peer, true, static_cast<uint8_t*>(const_cast<void*>(local)), remote_addr, key, len);
  ibv_sge sge{reinterpret_cast<uint64_t>(local), static_cast<uint32_t>(len), 0};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  uint32_t slot = kNoSlot;
  if (len <= c->max_inline) {
    wr.send_flags |= IBV_SEND_INLINE;  // copied into the work request by the post
  } else {
    if (int rc = rma_slot(&slot); rc != kOk) return rc;
    std::memcpy(rma_slot_mem(slot), local, len);
    sge = {reinterpret_cast<uint64_t>(rma_slot_mem(slot)), static_cast<uint32_t>(len), rma_mr_->lkey};
  }
  wr.wr.rdma.remote_addr = remote_addr;
  wr.wr.rdma.rkey = static_cast<uint32_t>(key);
  int rc = rma_post(c, peer, wr, sge, slot, nullptr, 0);
  if (rc == kOk) write_bytes.add(len);
  return rc;
}

int VerbsTransport::get_nb(int peer, void* local, size_t len, uint64_t remote_addr, uint64_t key) {
  Conn* c = nullptr;
  if (int rc = rma_ready(peer, &c); rc != kOk) return rc;
  if (len > kRmaSlot) return rma_transfer(peer, false, static_cast<uint8_t*>(local), remote_addr, key, len);
  uint32_t slot = kNoSlot;
  if (int rc = rma_slot(&slot); rc != kOk) return rc;
  ibv_sge sge{reinterpret_cast<uint64_t>(rma_slot_mem(slot)), static_cast<uint32_t>(len), rma_mr_->lkey};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = remote_addr;
  wr.wr.rdma.rkey = static_cast<uint32_t>(key);
  int rc = rma_post(c, peer, wr, sge, slot, local, len);
  if (rc == kOk) read_bytes.add(len);
  return rc;
}

int VerbsTransport::atomic_nb(int peer, bool cas, uint64_t remote_addr, uint64_t key, uint64_t value, uint64_t compare,
              void* result) {
  if (!caps_.atomics || remote_addr % 8) return kUnsupported;
  Conn* c = nullptr;
  if (int rc = rma_ready(peer, &c); rc != kOk) return rc;
  uint32_t slot = kNoSlot;
  if (int rc = rma_slot(&slot); rc != kOk) return rc;
  ibv_sge sge{reinterpret_cast<uint64_t>(rma_slot_mem(slot)), 8, rma_mr_->lkey};
  ibv_send_wr wr{};
  wr.opcode = cas ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.atomic.remote_addr = remote_addr;
  wr.wr.atomic.rkey = static_cast<uint32_t>(key);
  wr.wr.atomic.compare_add = cas ? compare : value;
  wr.wr.atomic.swap = cas ? value : 0;
  return rma_post(c, peer, wr, sge, slot, result, result ? 8 : 0);
}

int VerbsTransport::flush_test(int peer) {
  if (size_t(peer) >= rma_peer_.size()) return 1;
  if (rma_peer_[peer].pending > 0) poll_send_cq();
  RmaPeer& p = rma_peer_[peer];
  if (p.pending > 0) return 0;
  if (p.failed) {
    p.failed = false;
    return kIoError;
  }
  return 1;
}

// The established connection to `peer`, starting it if needed (kAgain
// until it is up), with room in its send queue and in the send CQ.
int VerbsTransport::rma_ready(int peer, Conn** out) {
  Conn* c = nullptr;
  if (int rc = established(peer, &c); rc != kOk) return rc;
  if (!has_room(c)) return kAgain;
  *out = c;
  return kOk;
}

// A free staging slot (registering the area the first time); kAgain when
// all are in flight.
int VerbsTransport::rma_slot(uint32_t* slot) {
  if (!rma_mr_) {
    if (rma_mem_.allocate(kRmaSlot * kRmaSlots) != 0) return kNoMemory;
    rma_mr_.reset(ibv_reg_mr(pd_, rma_mem_.p, rma_mem_.size, IBV_ACCESS_LOCAL_WRITE));
    if (!rma_mr_) {
      log::error("verbs: cannot register %zu bytes of RMA staging buffers: %s", rma_mem_.size,
                 reg_hint(errno).c_str());
      return kNoMemory;
    }
    for (uint32_t i = kRmaSlots; i > 0; --i) rma_free_slots_.push_back(i - 1);
  }
  if (rma_free_slots_.empty()) poll_send_cq();
  if (rma_free_slots_.empty()) return kAgain;
  *slot = rma_free_slots_.back();
  rma_free_slots_.pop_back();
  return kOk;
}

int VerbsTransport::rma_post(Conn* c, int peer, ibv_send_wr& wr, ibv_sge& sge, uint32_t slot, void* dest, size_t len) {
  uint32_t op;
  if (!rma_free_ops_.empty()) {
    op = rma_free_ops_.back();
    rma_free_ops_.pop_back();
  } else {
    op = static_cast<uint32_t>(rma_ops_.size());
    rma_ops_.emplace_back();
  }
  rma_ops_[op] = RmaOp{peer, slot, dest, len};
  wr.wr_id = make_wr(kWrRma, op);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  if (int err = ibv_post_send(c->qp, &wr, &bad)) {
    log::error("verbs: posting an RMA operation to rank %d failed: %s", peer, strerror(err));
    if (slot != kNoSlot) rma_free_slots_.push_back(slot);
    rma_free_ops_.push_back(op);
    return kIoError;
  }
  if (rma_peer_.size() <= size_t(peer)) rma_peer_.resize(endpoints_.size());
  ++rma_peer_[peer].pending;
  ++c->outstanding;
  ++send_cq_used_;
  return kOk;
}

// From poll_send_cq (send CQ and QP counts already released).
void VerbsTransport::rma_completed(const ibv_wc& wc) {
  uint32_t op = static_cast<uint32_t>(wr_value(wc.wr_id));
  if (op >= rma_ops_.size()) return;
  RmaOp& o = rma_ops_[op];
  if (wc.status == IBV_WC_SUCCESS) {
    if (o.dest && o.len) std::memcpy(o.dest, rma_slot_mem(o.slot), o.len);
  } else {
    if (!closing_)
      log::error("verbs: RMA operation on rank %d failed: %s; %s", o.peer, ibv_wc_status_str(wc.status),
                 wc_hint(wc.status));
    if (size_t(o.peer) < rma_peer_.size()) rma_peer_[o.peer].failed = true;
  }
  if (size_t(o.peer) < rma_peer_.size()) --rma_peer_[o.peer].pending;
  if (o.slot != kNoSlot) rma_free_slots_.push_back(o.slot);
  rma_free_ops_.push_back(op);
}

int VerbsTransport::rma_transfer(int peer, bool write, uint8_t* local, uint64_t remote_addr, uint64_t key,
                                 size_t len) {
  // Every piece shares one RdmaOp: its callback only counts (it runs from
  // poll_send_cq below, `immediate`, so no other rendezvous callback runs
  // inside an RMA call).
  struct Waiting {
    int in_flight = 0;
    bool failed = false;
  } waiting;
  RdmaOp op{[](RdmaOp* o, int status) {
              auto* w = static_cast<Waiting*>(o->context);
              --w->in_flight;
              if (status != kOk) w->failed = true;
            },
            &waiting};
  size_t posted = 0;
  Backoff backoff(rte::job().oversubscribed ? 0 : 1000);
  for (;;) {
    bool moved = false;
    while (!waiting.failed && posted < len && waiting.in_flight < pipe_depth_) {
      size_t n = piece_length(local + posted, len - posted, pipe_chunk_, caps_.rdma_align);
      int rc = post_piece(peer, write, local + posted, remote_addr + posted, key, n, &op, true);
      if (rc == kAgain) break;
      if (rc != kOk) {
        waiting.failed = true;
        break;
      }
      posted += n;
      ++waiting.in_flight;
      moved = true;
    }
    if ((waiting.failed || posted >= len) && waiting.in_flight == 0) break;
    if (poll_send_cq() > 0 || moved)
      backoff.reset();
    else
      backoff.idle();
  }
  return waiting.failed ? kIoError : kOk;
}

}  // namespace axon::btl::verbs

#endif  // AXON_HAVE_VERBS
