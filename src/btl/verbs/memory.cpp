// btl/verbs: memory registration. The transport's own buffers (send and
// receive buffers, the credit mailbox, the RMA staging area) are registered
// once, at start-up or first use. Application memory — rendezvous buffers
// exposed to a peer, and the local side of each get()/put() piece — goes
// through the registration cache of the rail's protection domain
// (src/rcache): a buffer used again is not registered again, and a
// registration whose memory the application unmapped or freed is dropped by
// the cache's memory hooks before the pages go, so it is never served for
// new memory at the same address. Where the hooks cannot be installed (or
// AXON_RCACHE=off) the cache registers for every use and deregisters after,
// as the transport did before it had one.
#include "btl/verbs/internal.h"

#ifdef AXON_HAVE_VERBS

#include <sys/resource.h>

#include <cerrno>

#include "base/log.h"

namespace axon::btl::verbs {

std::string memlock_text() {
  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) return "unknown";
  if (rl.rlim_cur == RLIM_INFINITY) return "unlimited";
  return std::to_string(rl.rlim_cur / 1024) + " KiB";
}

std::string reg_hint(int err) {
  if (err == ENOMEM || err == EPERM || err == EAGAIN)
    return "the locked-memory limit (ulimit -l) is " + memlock_text() +
           "; raise it (ulimit -l unlimited, or memlock in /etc/security/limits.conf; "
           "LimitMEMLOCK=infinity for systemd services)";
  return std::string(strerror(err));
}

int PageBuffer::allocate(size_t n) {
  size = (n + 4095) / 4096 * 4096;
  if (posix_memalign(&p, 4096, size) != 0) return ENOMEM;
  std::memset(p, 0, size);
  return 0;
}

namespace {

void* register_region(void* pd, void* addr, size_t len, int access) {
  ibv_mr* mr = ibv_reg_mr(static_cast<ibv_pd*>(pd), addr, len, access);
  if (mr) {
    registrations.add();
    registered_bytes.add(len);
  }
  return mr;  // errno tells why not
}

void deregister_region(void*, void* mr) { ibv_dereg_mr(static_cast<ibv_mr*>(mr)); }

}  // namespace

std::unique_ptr<rcache::Cache> make_cache(ibv_pd* pd, const char* name) {
  rcache::Ops ops;
  ops.ctx = pd;
  ops.reg = register_region;
  ops.dereg = deregister_region;
  rcache::Options options;
  options.name = name;
  return std::make_unique<rcache::Cache>(ops, options);
}

// Keys handed to peers: an exposure number (non-zero) above the rkey, so
// unexpose() finds the registration and a key of 0 means "failed".
uint64_t VerbsTransport::expose(int peer, const void* addr, size_t len) {
  rcache::Handle h = cache_->acquire(const_cast<void*>(addr), len, IBV_ACCESS_REMOTE_READ);
  if (!h) {
    log::error("verbs: cannot register %zu bytes for rank %d to read: %s", len, peer, reg_hint(errno).c_str());
    return 0;
  }
  uint32_t rkey = mr_of(h)->rkey;
  uint64_t id = ++exposure_serial_;
  exposed_.emplace(id, std::move(h));
  return (id << 32) | rkey;
}

uint64_t VerbsTransport::expose_writable(int peer, void* addr, size_t len) {
  rcache::Handle h = cache_->acquire(addr, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!h) {
    log::error("verbs: cannot register %zu bytes for rank %d to write: %s", len, peer, reg_hint(errno).c_str());
    return 0;
  }
  uint32_t rkey = mr_of(h)->rkey;
  uint64_t id = ++exposure_serial_;
  exposed_.emplace(id, std::move(h));
  return (id << 32) | rkey;
}

// The registration stays cached (when the cache caches) for the next
// rendezvous of the same buffer; the peer is done with the key.
void VerbsTransport::unexpose(int, uint64_t key) { exposed_.erase(key >> 32); }

}  // namespace axon::btl::verbs

#endif  // AXON_HAVE_VERBS
