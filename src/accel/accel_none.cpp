// Built when configure found no cuda.h (or --with-cuda=no): every buffer is
// host memory, so the PML never reaches these; they exist so that callers
// need no #if.
#include <cstdlib>
#include <cstring>

#include "accel/accel.h"

namespace axon::accel {

bool available() { return false; }
const char* why_off() { return "built without CUDA support (configure --with-cuda)"; }
int copy(void* dst, const void* src, size_t len) {
  if (len) std::memcpy(dst, src, len);
  return 0;
}
int copy_from_host(void* dst, const void* src, size_t len) { return copy(dst, src, len); }
int copy_to_host(void* dst, const void* src, size_t len) { return copy(dst, src, len); }
int copy_async(void* dst, const void* src, size_t len, Event* done) {
  *done = nullptr;
  return copy(dst, src, len);
}
bool event_done(Event) { return true; }
void event_wait(Event) {}
int event_poll(Event) { return 0; }
int event_finish(Event) { return 0; }
void* pinned_alloc(size_t len) { return std::malloc(len); }
void pinned_free(void* p, size_t) { std::free(p); }
bool ipc_enabled() { return false; }
bool ipc_export(const void*, IpcHandle*) { return false; }
void* ipc_open(int, const IpcHandle&) { return nullptr; }
int dmabuf_fd(const void*, size_t, uint64_t*) { return -1; }
size_t eager_limit() { return 0; }
size_t staging_chunk() { return 4096; }
void finalize() {}

}  // namespace axon::accel
