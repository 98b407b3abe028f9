// btl/verbs: eager messages and the send completion queue.
//
// Eager messages are SENDs into receive buffers the peer posted for us. A
// sender holds one credit per buffer the receiver has posted and never sends
// without one. The receiver counts the buffers it has consumed and re-posted
// and returns that count to the sender: piggy-backed in the header of every
// message it sends back, and when it owes many (half the buffers), by an RDMA
// WRITE of the cumulative count into the sender's credit mailbox, which costs
// the sender no receive buffer (a credit message SENT would itself need a
// credit). Messages small enough go inline (IBV_SEND_INLINE: copied into the
// work request, no send buffer, no DMA read); the others are copied (or
// packed, send_packed) into one of the registered send buffers.
#include "btl/verbs/internal.h"

#ifdef AXON_HAVE_VERBS

#include "base/log.h"
#include "base/status.h"
#include "rte/rte.h"

namespace axon::btl::verbs {

const char* wc_hint(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_RETRY_EXC_ERR:
      return "the peer did not answer: it died, or the link/route between the nodes is broken "
             "(check `axon_info --doctor` on both nodes: port state, GID, RoCE version, MTU)";
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return "the peer had no receive buffer posted (flow-control bug: please report it)";
    case IBV_WC_REM_ACCESS_ERR:
      return "the peer refused access to its memory (its registration was released too early "
             "or the key is wrong)";
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_LEN_ERR:
      return "a local buffer was not registered as expected";
    default:
      return "see ibv_poll_cq(3)";
  }
}

int VerbsTransport::send(int peer, int am_id, const void* header, size_t header_len, const void* payload,
                         size_t payload_len) {
  return post_send(peer, am_id, header, header_len, payload, payload_len, nullptr, nullptr);
}

int VerbsTransport::send_packed(int peer, int am_id, const void* header, size_t header_len, size_t payload_len,
                                PackFn pack, void* context) {
  return post_send(peer, am_id, header, header_len, nullptr, payload_len, pack, context);
}

bool VerbsTransport::has_room(Conn* c) {
  if (c->outstanding < max_send_wr_ && send_cq_used_ < send_cq_size_) return true;
  poll_send_cq();
  return c->outstanding < max_send_wr_ && send_cq_used_ < send_cq_size_;
}

int VerbsTransport::post_send(int peer, int am_id, const void* header, size_t header_len, const void* payload,
                              size_t payload_len, PackFn pack, void* context) {
  Conn* c = nullptr;
  if (int rc = established(peer, &c); rc != kOk) return rc;
  if (c->sent - peer_freed(c) >= c->peer_credits) {
    credit_stalls.add();
    return kAgain;
  }
  if (!has_room(c)) return kAgain;
  WireHeader wh{static_cast<uint16_t>(am_id), 0, static_cast<uint32_t>(header_len + payload_len), c->freed};
  size_t total = sizeof wh + header_len + payload_len;
  ibv_sge sge[3];
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = sge;
  if (total <= c->max_inline) {
    // Inline: the data is copied into the work request when posted (a
    // packed payload from a small buffer of ours). Only every
    // signal_every_-th one asks for a completion (see with_cover).
    if (pack && payload_len) {
      if (inline_pack_.size() < payload_len) inline_pack_.resize(payload_len);
      pack(context, inline_pack_.data(), payload_len);
      payload = inline_pack_.data();
    }
    int n = 0;
    sge[n++] = {reinterpret_cast<uint64_t>(&wh), sizeof wh, 0};
    if (header_len) sge[n++] = {reinterpret_cast<uint64_t>(header), static_cast<uint32_t>(header_len), 0};
    if (payload_len) sge[n++] = {reinterpret_cast<uint64_t>(payload), static_cast<uint32_t>(payload_len), 0};
    wr.num_sge = n;
    wr.send_flags |= IBV_SEND_INLINE;
    if (c->unsignaled + 1 < signal_every_) {
      wr.send_flags &= ~IBV_SEND_SIGNALED;
      wr.wr_id = make_wr(kWrUnsignaled, 0);
    } else {
      wr.wr_id = make_wr(kWrInline, 0);
    }
  } else {
    if (free_send_.empty()) poll_send_cq();
    if (free_send_.empty()) return kAgain;
    uint32_t slot = free_send_.back();
    free_send_.pop_back();
    uint8_t* buf = send_mem_.bytes() + size_t(slot) * slot_size_;
    std::memcpy(buf, &wh, sizeof wh);
    if (header_len) std::memcpy(buf + sizeof wh, header, header_len);
    // Packed straight into the registered buffer: no copy in between.
    if (payload_len && pack)
      pack(context, buf + sizeof wh + header_len, payload_len);
    else if (payload_len)
      std::memcpy(buf + sizeof wh + header_len, payload, payload_len);
    sge[0] = {reinterpret_cast<uint64_t>(buf), static_cast<uint32_t>(total), send_mr_->lkey};
    wr.num_sge = 1;
    wr.wr_id = make_wr(kWrSendBuffer, slot);
  }
  bool signaled = wr.send_flags & IBV_SEND_SIGNALED;
  if (signaled) wr.wr_id = with_cover(wr.wr_id, c->unsignaled + 1);
  ibv_send_wr* bad = nullptr;
  if (int err = ibv_post_send(c->qp, &wr, &bad)) {
    if (wr_kind(wr.wr_id) == kWrSendBuffer) free_send_.push_back(wr_slot(wr.wr_id));
    log::error("verbs: ibv_post_send to rank %d failed: %s", peer, strerror(err));
    return kIoError;
  }
  if (wr.send_flags & IBV_SEND_INLINE) inline_sent.add();
  messages_sent.add();
  c->freed_reported = c->freed;
  ++c->sent;
  ++c->outstanding;
  if (signaled) {
    c->unsignaled = 0;
    ++send_cq_used_;
  } else {
    ++c->unsignaled;
  }
  return kOk;
}

// Runs the handlers of arrived messages and re-posts their buffers.
int VerbsTransport::poll_recv_cq() {
  int handled = 0;
  ibv_wc wc[16];
  int n = ibv_poll_cq(recv_cq_, 16, wc);
  for (int i = 0; i < n; ++i) {
    auto it = by_qpn_.find(wc[i].qp_num);
    if (it == by_qpn_.end()) continue;  // a QP we destroyed
    Conn* c = it->second;
    if (wc[i].status != IBV_WC_SUCCESS) {
      if (wc[i].status != IBV_WC_WR_FLUSH_ERR && !closing_ && !c->disconnected && !c->superseded)
        log::error("verbs: receive from rank %d failed: %s; %s", c->peer, ibv_wc_status_str(wc[i].status),
                   wc_hint(wc[i].status));
      continue;
    }
    // The peer sends only once its side is established, and an accepted QP is
    // ready to send as soon as rdma_accept returns: a message may come before
    // our ESTABLISHED event.
    if (!c->established && !c->superseded) mark_established(c);
    uint32_t slot = static_cast<uint32_t>(wc[i].wr_id);
    uint8_t* buf = c->recv_mem.bytes() + size_t(slot) * c->slot_size;
    WireHeader wh;
    std::memcpy(&wh, buf, sizeof wh);
    if (wh.freed > c->peer_freed) c->peer_freed = wh.freed;
    handler(wh.am_id)(c->peer, buf + sizeof wh, wh.length);
    ++handled;
    post_recv(c, slot);
    ++c->freed;
  }
  return_credits(n > 0);
  return handled;
}

// Returns credits the peers are waiting for (or will soon). A write the send
// queue had no room for is retried on the next call.
void VerbsTransport::return_credits(bool received) {
  if (!received && !credits_owed_) return;
  credits_owed_ = false;
  for (Conn* c : live_)
    if (c->freed - c->freed_reported >= std::max<uint32_t>(1, credits_ / 2) && !write_credits(c))
      credits_owed_ = true;
}

uint64_t VerbsTransport::peer_freed(Conn* c) {
  uint64_t mailbox =
      __atomic_load_n(reinterpret_cast<uint64_t*>(mailbox_mem_.bytes()) + c->peer, __ATOMIC_ACQUIRE);
  if (mailbox > c->peer_freed) c->peer_freed = mailbox;
  return c->peer_freed;
}

uint64_t* VerbsTransport::credit_source(int peer) {
  return reinterpret_cast<uint64_t*>(mailbox_mem_.bytes()) + rte::job().size + peer;
}

bool VerbsTransport::write_credits(Conn* c) {
  if (!c->established || c->outstanding >= max_send_wr_ || send_cq_used_ >= send_cq_size_) return false;
  uint64_t* src = credit_source(c->peer);
  *src = c->freed;
  ibv_sge sge{reinterpret_cast<uint64_t>(src), sizeof(uint64_t), mailbox_mr_->lkey};
  ibv_send_wr wr{};
  wr.wr_id = with_cover(make_wr(kWrCredit, 0), c->unsignaled + 1);
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED | (c->max_inline >= sizeof(uint64_t) ? IBV_SEND_INLINE : 0);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = c->mailbox_addr + sizeof(uint64_t) * static_cast<uint64_t>(rte::job().rank);
  wr.wr.rdma.rkey = c->mailbox_rkey;
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(c->qp, &wr, &bad) != 0) return false;
  c->freed_reported = c->freed;
  ++c->outstanding;
  c->unsignaled = 0;
  ++send_cq_used_;
  credit_writes.add();
  return true;
}

int VerbsTransport::poll_send_cq() {
  ibv_wc wc[32];
  int n = ibv_poll_cq(send_cq_, 32, wc);
  for (int i = 0; i < n; ++i) {
    auto it = by_qpn_.find(wc[i].qp_num);
    Conn* c = it == by_qpn_.end() ? nullptr : it->second;
    WrKind kind = wr_kind(wc[i].wr_id);
    // An unsignalled SEND shows up only when it failed or was flushed; its
    // queue entry is released by the signalled request that covers it.
    if (kind != kWrUnsignaled) {
      --send_cq_used_;
      if (c) c->outstanding -= std::min(c->outstanding, wr_cover(wc[i].wr_id));
    }
    if (kind == kWrSendBuffer) free_send_.push_back(wr_slot(wc[i].wr_id));
    if (kind == kWrRma) {  // RMA windows (rma.cpp)
      rma_completed(wc[i]);
      continue;
    }
    if (kind == kWrRdma) {  // a rendezvous piece (rdma.cpp): reports its own failure
      piece_completed(wc[i]);
      continue;
    }
    if (wc[i].status == IBV_WC_SUCCESS) continue;
    // Credit returns may fail harmlessly while the peer is shutting down.
    bool quiet = wc[i].status == IBV_WC_WR_FLUSH_ERR || closing_ || !c || c->disconnected || kind == kWrCredit;
    if (!quiet) {
      log::error("verbs: SEND to rank %d failed: %s; %s", c->peer, ibv_wc_status_str(wc[i].status),
                 wc_hint(wc[i].status));
      endpoints_[c->peer].failed = true;
    }
  }
  return n;
}

}  // namespace axon::btl::verbs

#endif  // AXON_HAVE_VERBS
