// btl/verbs: several rails (ports or devices) behind one Transport. Each
// rail is a VerbsTransport of its own (own PD, CQs, registration cache,
// listener, business card "btl.verbs.N", one QP per peer). Eager messages
// and all control traffic go over rail 0 (the nearest port), so ordering is
// rail 0's. A rendezvous buffer is registered on both rails and its key
// carries both rkeys (rail 0's in the low, rail 1's in the high 32 bits:
// two rails at most, by the 64-bit key). The rails are the peer's rails of
// the BTL contract (btl.h Transport::rails), weighted by port rate: the pml
// chooses the rail of each rendezvous piece (src/pml/stripe.cpp) and says it
// in RdmaOp::rail. A piece asked for on rail 1 goes on rail 0 when the peer
// exposed its buffer on rail 0 only, or rail 1 lost its connection since.
#include "btl/verbs/internal.h"

#ifdef AXON_HAVE_VERBS

#include "base/log.h"
#include "base/status.h"
#include "rte/rte.h"

namespace axon::btl::verbs {

namespace {

class MultiRail final : public Transport {
 public:
  explicit MultiRail(std::vector<std::unique_ptr<VerbsTransport>> rails) : rails_(std::move(rails)) {
    caps_ = rails_[0]->caps();
    for (auto& r : rails_) caps_.can_get = caps_.can_get && r->caps().can_get;
  }
  ~MultiRail() override {
    exposures_.clear();
    while (!rails_.empty()) rails_.pop_back();  // rail 0, which owns the device list, last
  }

  const char* name() const override { return "verbs"; }
  const Caps& caps() const override { return caps_; }
  bool reaches(int r) const override { return rails_[0]->reaches(r); }

  int connect_peers() override {
    for (auto& r : rails_)
      if (int rc = r->connect_peers()) return rc;
    kicked_.assign(static_cast<size_t>(rte::job().size), false);
    return 0;
  }

  int send(int peer, int am_id, const void* header, size_t header_len, const void* payload,
           size_t payload_len) override {
    kick(peer);
    return rails_[0]->send(peer, am_id, header, header_len, payload, payload_len);
  }
  int send_packed(int peer, int am_id, const void* header, size_t header_len, size_t payload_len, PackFn pack,
                  void* context) override {
    kick(peer);
    return rails_[0]->send_packed(peer, am_id, header, header_len, payload_len, pack, context);
  }

  // Rail 1 counts once it reaches the peer; it weighs 0 (the pml gives it
  // nothing) until its connection is up.
  int rails(int peer) const override { return rails_.size() > 1 && rails_[1]->reaches(peer) ? 2 : 1; }
  uint32_t rail_weight(int peer, int rail) const override {
    if (rail == 0) return std::max<uint32_t>(1, rails_[0]->rate());
    return rail == 1 && rails_[1]->connected(peer) ? std::max<uint32_t>(1, rails_[1]->rate()) : 0;
  }

  uint64_t expose(int peer, const void* addr, size_t len) override {
    return expose_both(peer, const_cast<void*>(addr), len, false);
  }
  uint64_t expose_writable(int peer, void* addr, size_t len) override { return expose_both(peer, addr, len, true); }

  void unexpose(int peer, uint64_t key) override {
    // With the registration cache two exposures of one buffer may carry the
    // same rkeys, hence the same key: any of its entries releases one.
    auto it = exposures_.find(key);
    if (it == exposures_.end()) return;
    rails_[0]->unexpose(peer, it->second.first);
    if (it->second.second) rails_[1]->unexpose(peer, it->second.second);
    exposures_.erase(it);
  }

  int get(int peer, void* local, uint64_t remote_addr, uint64_t remote_key, size_t len, RdmaOp* op) override {
    return post(peer, false, static_cast<uint8_t*>(local), remote_addr, remote_key, len, op);
  }
  int put(int peer, const void* local, uint64_t remote_addr, uint64_t remote_key, size_t len,
          RdmaOp* op) override {
    return post(peer, true, static_cast<uint8_t*>(const_cast<void*>(local)), remote_addr, remote_key, len, op);
  }

  // RMA windows: rail 0 alone (one registration, one key, in order with its
  // active messages).
  uint64_t expose_window(void* addr, size_t len) override { return rails_[0]->expose_window(addr, len); }
  void unexpose_window(uint64_t key) override { rails_[0]->unexpose_window(key); }
  int put_nb(int peer, const void* local, size_t len, uint64_t remote_addr, uint64_t key) override {
    return rails_[0]->put_nb(peer, local, len, remote_addr, key);
  }
  int get_nb(int peer, void* local, size_t len, uint64_t remote_addr, uint64_t key) override {
    return rails_[0]->get_nb(peer, local, len, remote_addr, key);
  }
  int atomic_nb(int peer, bool cas, uint64_t remote_addr, uint64_t key, uint64_t value, uint64_t compare,
                void* result) override {
    return rails_[0]->atomic_nb(peer, cas, remote_addr, key, value, compare, result);
  }
  int flush_test(int peer) override { return rails_[0]->flush_test(peer); }

  int progress() override {
    int n = 0;
    for (auto& r : rails_) n += r->progress();  // each runs its own pieces' callbacks
    return n;
  }

 private:
  // The first message to a peer also starts the secondary rails'
  // connections to it, so they are up by the time large messages come.
  void kick(int peer) {
    if (size_t(peer) >= kicked_.size() || kicked_[peer]) return;
    kicked_[peer] = true;
    for (size_t i = 1; i < rails_.size(); ++i) rails_[i]->connect_ahead(peer);
  }

  // Registers on rail 0 and, where it reaches the peer, rail 1; the key
  // holds both rkeys. A rail-1 failure only disables striping for it.
  uint64_t expose_both(int peer, void* addr, size_t len, bool writable) {
    uint64_t k0 = writable ? rails_[0]->expose_writable(peer, addr, len) : rails_[0]->expose(peer, addr, len);
    if (!k0) return 0;
    uint64_t k1 = 0;
    if (rails_[1]->reaches(peer))
      k1 = writable ? rails_[1]->expose_writable(peer, addr, len) : rails_[1]->expose(peer, addr, len);
    uint64_t key = ((k1 & 0xffffffffu) << 32) | (k0 & 0xffffffffu);
    if (key == 0) {  // an rkey of 0 on rail 0 alone would read as "failed": very unlikely, but be exact
      rails_[0]->unexpose(peer, k0);
      return 0;
    }
    exposures_.emplace(key, std::make_pair(k0, k1));
    return key;
  }

  // Rails' own key format: an exposure number (non-zero) above the rkey.
  static uint64_t rail_key(uint32_t rkey) { return (uint64_t(1) << 32) | rkey; }

  int post(int peer, bool write, uint8_t* local, uint64_t remote_addr, uint64_t key, size_t len, RdmaOp* op) {
    if (key == 0) {
      log::error("verbs: rank %d could not register its buffer for the rendezvous (see its error)", peer);
      return kIoError;
    }
    const uint32_t rkeys[2] = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
    size_t rail = op->rail == 1 && rkeys[1] != 0 && rails_[1]->connected(peer) ? 1 : 0;
    VerbsTransport& r = *rails_[rail];
    return write ? r.put(peer, local, remote_addr, rail_key(rkeys[rail]), len, op)
                 : r.get(peer, local, remote_addr, rail_key(rkeys[rail]), len, op);
  }

  std::vector<std::unique_ptr<VerbsTransport>> rails_;
  Caps caps_;
  std::vector<bool> kicked_;  // by peer: secondary rails asked to connect
  std::unordered_multimap<uint64_t, std::pair<uint64_t, uint64_t>> exposures_;  // key -> rails' keys
};

}  // namespace

std::unique_ptr<Transport> make_multirail(std::vector<std::unique_ptr<VerbsTransport>> rails) {
  return std::make_unique<MultiRail>(std::move(rails));
}

}  // namespace axon::btl::verbs

#endif  // AXON_HAVE_VERBS
