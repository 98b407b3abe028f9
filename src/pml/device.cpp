// GPU buffers in point-to-point messages (docs/cuda.md).
//
// Three paths, chosen per message by the sender (size) and the receiver
// (what it can reach):
//  eager     up to device_eager_limit(): one synchronous copy of the device
//            data into the request's staging buffer, then the host eager path.
//            Not between ranks that IPC connects: there one device-to-device
//            copy beats a copy down plus a copy up at every size.
//  IPC       messages between ranks of one node: the RTS carries a
//            CUDA IPC handle of the sender's allocation; the receiver maps it
//            (once per allocation, accel caches the mapping), copies device to
//            device (or to its host buffer) and answers FIN.
//  staging   otherwise (other node, IPC off or refused, managed memory): the
//            receiver answers CTS and the sender streams fragments from two
//            pinned chunks: chunk k+1 is copied from the device while the
//            fragments of chunk k go out. A device receiver gathers fragments
//            in a pinned chunk and copies each full chunk to the device.
// Non-contiguous device buffers: with the GPU kernels (accel/kernels.h) a
// send is packed by a kernel into contiguous device scratch when it starts,
// and a receive lands in device scratch that a kernel unpacks at
// completion; the request travels as that many bytes of contiguous device
// memory on the paths above (MPI_BYTE over the scratch). Without kernels
// (AXON_ACCEL_KERNELS=0, no fatbin, the module does not load, another
// context) the buffer's span is copied whole into a host shadow when the
// operation starts (receives copy it back at completion) and travels as
// host data.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "accel/accel.h"
#include "accel/kernels.h"
#include "base/counter.h"
#include "base/log.h"
#include "base/status.h"
#include "pml/internal.h"
#include "rte/rte.h"

namespace axon::pml {

namespace {

Counter device_eager{"axon_pml_device_eager_sends", Counter::Class::Counter,
                     "Sends from GPU memory copied once to the host and sent eager"};
Counter device_ipc{"axon_pml_device_ipc_receives", Counter::Class::Counter,
                   "Receives of GPU messages copied straight from the sender's memory through CUDA IPC"};
Counter device_staged{"axon_pml_device_staged_sends", Counter::Class::Counter,
                      "Sends from GPU memory streamed through pinned host buffers"};
Counter device_shadows{"axon_pml_device_shadows", Counter::Class::Counter,
                       "Non-contiguous GPU buffers copied whole to a host shadow"};
Counter device_kernel_packs{"axon_pml_device_kernel_packs", Counter::Class::Counter,
                            "Non-contiguous GPU send buffers packed by a GPU kernel into contiguous device scratch"};
Counter device_kernel_unpacks{"axon_pml_device_kernel_unpacks", Counter::Class::Counter,
                              "Non-contiguous GPU receive buffers unpacked by a GPU kernel from contiguous device scratch"};

struct DeviceState {
  // Shadow of a non-contiguous device buffer.
  void* user_buffer = nullptr;  // the request's buffer as the user gave it
  uint8_t* span_device = nullptr;
  uint8_t* shadow = nullptr;
  size_t span = 0;
  bool copy_back = false;
  // Packed on the GPU: the request travels as r->length bytes of scratch;
  // the user's type and count come back at completion.
  void* scratch = nullptr;
  size_t scratch_bytes = 0;
  const Datatype* user_type = nullptr;
  MPI_Count user_count = 0;
  bool unpack_at_end = false;
  // Sender pipeline: two pinned chunks; slot s holds [begin[s], begin[s]+len[s]).
  uint8_t* chunk[2] = {nullptr, nullptr};
  size_t begin[2] = {0, 0};
  size_t len[2] = {0, 0};
  accel::Event ready[2] = {nullptr, nullptr};
  bool busy[2] = {false, false};
  unsigned send_slot = 0;  // the slot whose fragments go out next
  unsigned fill_slot = 0;  // the slot the next copy goes to
  size_t staged_until = 0;
  size_t chunk_size = 0;
  // Receiver: fragments gathered for [recv_begin, recv_begin + recv_fill).
  uint8_t* recv_chunk = nullptr;
  size_t recv_begin = 0;
  size_t recv_fill = 0;
  // Eager send: the pinned copy of the message that r->staging points to
  // (from accel's pool; handed back, and r->staging cleared, at completion).
  void* eager = nullptr;
  size_t eager_len = 0;
};

// States are reused: an eager device message must not cost a malloc.
std::mutex free_states_mutex;
std::vector<DeviceState*> free_states;
constexpr size_t kFreeStates = 64;

DeviceState* state_of(Request* r) {
  if (!r->device_state) {
    DeviceState* s = nullptr;
    {
      std::lock_guard<std::mutex> guard(free_states_mutex);
      if (!free_states.empty()) {
        s = free_states.back();
        free_states.pop_back();
      }
    }
    r->device_state = s ? s : new DeviceState;
  }
  return static_cast<DeviceState*>(r->device_state);
}

}  // namespace

// The pool goes with the runtime (pml::finalize): a vector destroyed at exit
// would leave its states unreachable (LeakSanitizer's leaks).
void device_states_free() {
  std::lock_guard<std::mutex> guard(free_states_mutex);
  for (DeviceState* s : free_states) delete s;
  free_states.clear();
}

namespace {

void release_state(DeviceState* s) {
  *s = DeviceState{};
  std::lock_guard<std::mutex> guard(free_states_mutex);
  if (free_states.size() < kFreeStates) free_states.push_back(s);
  else delete s;
}

// Bytes [lo, hi) relative to the buffer that `count` items touch.
void span_of(const Datatype& t, size_t count, ptrdiff_t* lo, ptrdiff_t* hi) {
  ptrdiff_t last = count ? static_cast<ptrdiff_t>(count - 1) * t.extent : 0;
  *lo = t.true_lb + std::min<ptrdiff_t>(0, last);
  *hi = t.true_lb + t.true_extent + std::max<ptrdiff_t>(0, last);
}

void free_pipeline(DeviceState* s) {
  for (int i = 0; i < 2; ++i) {
    if (s->ready[i]) accel::event_wait(s->ready[i]);
    s->ready[i] = nullptr;
    if (s->chunk[i]) accel::pinned_free(s->chunk[i], s->chunk_size);
    s->chunk[i] = nullptr;
    s->busy[i] = false;
  }
  if (s->recv_chunk) accel::pinned_free(s->recv_chunk, s->chunk_size);
  s->recv_chunk = nullptr;
}

// A non-contiguous device buffer packed by a GPU kernel: a send is packed
// now (the kernel is waited for: the scratch is complete before any byte of
// it travels or is exported), a receive gets empty scratch. Either way the
// request then carries r->length bytes of contiguous device memory. Returns
// 1 when the kernels cannot serve it (the caller uses a host shadow).
int stage_packed(Request* r, bool send) {
  if (!accel::kernels::available()) return 1;
  void* scratch = accel::kernels::scratch_alloc(r->length);
  if (!scratch) return 1;
  if (send) {
    int rc = accel::kernels::pack(scratch, r->buffer, static_cast<size_t>(r->count), *r->type);
    if (rc != 0) {
      accel::kernels::scratch_free(scratch, r->length);
      return rc > 0 ? 1 : MPI_ERR_OTHER;
    }
    device_kernel_packs.add();
  }
  DeviceState* s = state_of(r);
  s->scratch = scratch;
  s->scratch_bytes = r->length;
  s->user_buffer = r->buffer;
  s->user_type = r->type;
  s->user_count = r->count;
  s->unpack_at_end = !send;
  // The user's type keeps its reference (prepare); MPI_BYTE is predefined.
  r->buffer = scratch;
  r->type = datatype_from_handle(MPI_BYTE);
  r->count = static_cast<MPI_Count>(r->length);
  r->device = kDeviceBuffer | kDeviceIpc;
  return MPI_SUCCESS;
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// Receive: `bytes` packed bytes in scratch into the user's buffer. Whole
// items go through the unpack kernel; a message that ends inside an item
// (or a kernel that cannot serve the type any more) goes through a host
// shadow of the user's span (holes keep their bytes).
int unpack_received(DeviceState* s, size_t bytes) {
  const Datatype& t = *s->user_type;
  if (bytes % t.size == 0) {
    int rc = accel::kernels::unpack(s->user_buffer, s->scratch, bytes / t.size, t);
    if (rc == 0) {
      device_kernel_unpacks.add();
      return MPI_SUCCESS;
    }
    if (rc < 0) return MPI_ERR_OTHER;
  }
  ptrdiff_t lo = 0, hi = 0;
  span_of(t, static_cast<size_t>(s->user_count), &lo, &hi);
  const size_t span = static_cast<size_t>(hi - lo);
  std::unique_ptr<uint8_t, FreeDeleter> packed(static_cast<uint8_t*>(std::malloc(bytes)));
  std::unique_ptr<uint8_t, FreeDeleter> shadow(static_cast<uint8_t*>(std::malloc(span ? span : 1)));
  if (!packed || !shadow) return MPI_ERR_NO_MEM;
  uint8_t* user_span = static_cast<uint8_t*>(s->user_buffer) + lo;
  if (accel::copy_to_host(packed.get(), s->scratch, bytes) != 0 ||
      accel::copy_to_host(shadow.get(), user_span, span) != 0)
    return MPI_ERR_OTHER;
  unpack_bytes(t, packed.get(), bytes, shadow.get() - lo);
  device_shadows.add();
  return accel::copy_from_host(user_span, shadow.get(), span) == 0 ? MPI_SUCCESS : MPI_ERR_OTHER;
}

}  // namespace

int device_stage(Request* r, bool send) {
  accel::Memory kind = accel::classify(r->buffer);
  if (kind == accel::Memory::Host) return MPI_SUCCESS;
  if (r->type->contiguous || r->length == 0) {
    r->device = kDeviceBuffer | (kind == accel::Memory::Device ? kDeviceIpc : 0);
    return MPI_SUCCESS;
  }
  // Non-contiguous: packed on the GPU when the kernels can, else a host
  // shadow (the datatype engine works on host memory).
  if (int rc = stage_packed(r, send); rc != 1) return rc;
  ptrdiff_t lo = 0, hi = 0;
  span_of(*r->type, static_cast<size_t>(r->count), &lo, &hi);
  DeviceState* s = state_of(r);
  s->user_buffer = r->buffer;
  s->span_device = static_cast<uint8_t*>(r->buffer) + lo;
  s->span = static_cast<size_t>(hi - lo);
  s->shadow = static_cast<uint8_t*>(std::malloc(s->span ? s->span : 1));
  if (!s->shadow) return MPI_ERR_NO_MEM;
  // A receive copies the span in too: the holes between items keep their bytes.
  if (accel::copy_to_host(s->shadow, s->span_device, s->span) != 0) return MPI_ERR_OTHER;
  s->copy_back = !send;
  r->buffer = s->shadow - lo;
  r->device = 0;
  device_shadows.add();
  return MPI_SUCCESS;
}

void device_complete(Request* r) {
  auto* s = static_cast<DeviceState*>(r->device_state);
  free_pipeline(s);
  if (s->scratch) {
    // Every byte is in (FIN, last fragment, eager copy: all waited for).
    if (s->unpack_at_end && !r->cancelled && r->bytes > 0) {
      int rc = unpack_received(s, std::min(r->bytes, s->scratch_bytes));
      if (rc != MPI_SUCCESS && r->error == MPI_SUCCESS) r->error = rc;
    }
    accel::kernels::scratch_free(s->scratch, s->scratch_bytes);
    // Persistent requests start again from the user's arguments.
    r->buffer = s->user_buffer;
    r->type = s->user_type;
    r->count = s->user_count;
  }
  if (s->shadow) {
    if (s->copy_back && !r->cancelled && accel::copy_from_host(s->span_device, s->shadow, s->span) != 0 &&
        r->error == MPI_SUCCESS)
      r->error = MPI_ERR_OTHER;
    std::free(s->shadow);
    r->buffer = s->user_buffer;  // persistent requests start again from the user's buffer
  }
  if (s->eager) {
    // Before the PML would free() it: the copy is accel's pinned memory.
    if (r->staging == s->eager) r->staging = nullptr;
    accel::pinned_free(s->eager, s->eager_len);
  }
  release_state(s);
  r->device_state = nullptr;
}

size_t device_eager_limit(const Request* r, const btl::Transport* t) {
  // The receiver can address the buffer (this process, or CUDA IPC to a
  // peer of this node): the RTS path moves it with one copy whatever its size.
  if ((r->device & kDeviceIpc) &&
      (r->dest_world == rte::job().rank || (t->caps().ipc_peers && accel::ipc_enabled())))
    return 0;
  return std::min(t->caps().eager_limit, accel::eager_limit());
}

// The host copy of an eager device message is a pinned buffer from accel's
// pool, not malloc'ed memory: no allocation per message, and the device
// copies straight into it (a bounce buffer would add a second host copy).
// The request's completion hands it back (device_complete) before the PML
// frees r->staging; a send request is never released before it completes.
int device_stage_eager(Request* r) {
  if (r->staging || r->length == 0) return kOk;
  DeviceState* s = state_of(r);
  s->eager = accel::pinned_alloc(r->length);
  if (!s->eager) return kNoMemory;
  s->eager_len = r->length;
  r->staging = static_cast<uint8_t*>(s->eager);
  if (accel::copy_to_host(r->staging, r->buffer, r->length) != 0) return kInternal;
  device_eager.add();
  return kOk;
}

int device_send_rts(Request* r, btl::Transport* t, const MatchHeader& h) {
  struct {
    MatchHeader h;
    RtsInfo rts;
    DeviceRtsInfo dev;
  } hdr{h, {to_id(r), reinterpret_cast<uint64_t>(r->buffer), 0, static_cast<uint8_t>(r->mode == SendMode::Synchronous), 0, {}},
        {0, {}, {}}};
  // IPC reaches only processes of this node: a transport whose peers all
  // share it says so (Caps::ipc_peers).
  bool same_process = r->dest_world == rte::job().rank;
  if (!same_process && (r->device & kDeviceIpc) && t->caps().ipc_peers &&
      accel::ipc_export(r->buffer, &hdr.dev.ipc))
    hdr.dev.has_ipc = 1;
  return t->send(r->dest_world, kAmRtsDevice, &hdr, sizeof hdr, nullptr, 0);
}

bool device_stream(Request* r, btl::Transport* t) {
  DeviceState* s = state_of(r);
  if (s->chunk_size == 0) {
    s->chunk_size = std::max(accel::staging_chunk(), t->caps().eager_limit);
    s->staged_until = r->offset;
    device_staged.add();
  }
  const size_t frag_max = t->caps().eager_limit;
  auto* src = static_cast<const uint8_t*>(r->buffer);
  for (;;) {
    // Keep both chunks busy: copy ahead while earlier fragments go out.
    while (s->staged_until < r->length && !s->busy[s->fill_slot]) {
      unsigned k = s->fill_slot;
      if (!s->chunk[k] && !(s->chunk[k] = static_cast<uint8_t*>(accel::pinned_alloc(s->chunk_size)))) {
        r->error = MPI_ERR_NO_MEM;
        return true;
      }
      s->begin[k] = s->staged_until;
      s->len[k] = std::min(s->chunk_size, r->length - s->staged_until);
      if (accel::copy_async(s->chunk[k], src + s->begin[k], s->len[k], &s->ready[k]) != 0) {
        r->error = MPI_ERR_OTHER;
        return true;
      }
      s->busy[k] = true;
      s->staged_until += s->len[k];
      s->fill_slot ^= 1;
    }
    if (r->offset >= r->length) return true;
    unsigned k = s->send_slot;
    if (!s->busy[k]) return true;  // nothing staged and nothing left: cannot happen
    if (s->ready[k]) {
      if (!accel::event_done(s->ready[k])) return false;  // copy still running: retry from progress
      s->ready[k] = nullptr;
    }
    size_t end = s->begin[k] + s->len[k];
    while (r->offset < end) {
      size_t n = std::min(frag_max, end - r->offset);
      FragInfo fi{r->remote_id, r->offset};
      int rc = t->send(r->dest_world, kAmFrag, &fi, sizeof fi, s->chunk[k] + (r->offset - s->begin[k]), n);
      if (rc == kAgain) return false;
      if (rc != kOk) {
        r->error = MPI_ERR_OTHER;
        return true;
      }
      r->offset += n;
    }
    s->busy[k] = false;
    s->send_slot ^= 1;
  }
}

void device_frag(Request* r, uint64_t offset, const uint8_t* data, size_t len) {
  DeviceState* s = state_of(r);
  if (!s->recv_chunk) {
    s->chunk_size = accel::staging_chunk();
    s->recv_chunk = static_cast<uint8_t*>(accel::pinned_alloc(s->chunk_size));
    if (!s->recv_chunk) {
      r->error = MPI_ERR_NO_MEM;
      return;
    }
    s->recv_begin = offset;
    s->recv_fill = 0;
  }
  // Fragments come in order; anything else (or a full chunk) flushes first.
  if (offset != s->recv_begin + s->recv_fill || s->recv_fill + len > s->chunk_size) {
    device_recv_flush(r);
    s->recv_begin = offset;
  }
  if (len > s->chunk_size) {  // a fragment larger than a chunk: straight to the device
    if (accel::copy_from_host(static_cast<uint8_t*>(r->buffer) + offset, data, len) != 0) r->error = MPI_ERR_OTHER;
    s->recv_begin = offset + len;
    return;
  }
  std::memcpy(s->recv_chunk + s->recv_fill, data, len);
  s->recv_fill += len;
}

void device_recv_flush(Request* r) {
  auto* s = static_cast<DeviceState*>(r->device_state);
  if (!s || !s->recv_fill) return;
  if (accel::copy(static_cast<uint8_t*>(r->buffer) + s->recv_begin, s->recv_chunk, s->recv_fill) != 0)
    r->error = MPI_ERR_OTHER;
  s->recv_begin += s->recv_fill;
  s->recv_fill = 0;
}

const void* device_source(const Message& m) {
  if (m.source_world == rte::job().rank) return reinterpret_cast<const void*>(m.address);
  if (!m.ipc) return nullptr;
  const void* p = accel::ipc_open(m.source_world, *m.ipc);
  if (p) device_ipc.add();
  return p;
}

}  // namespace axon::pml
