// MPI-level pack/unpack and local reductions on GPU buffers (kernels.h):
// a GPU kernel when every buffer is device memory, else host copies of the
// spans involved. Compiled in every build (without CUDA no buffer is ever
// device memory and the callers never get here), and so are the parameter
// and counters, so that axon_info lists the same set everywhere.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "accel/accel.h"
#include "accel/kernels.h"
#include "accel/params.h"
#include "base/log.h"

namespace axon::accel {

BoolParam kernels_param{"AXON_ACCEL_KERNELS", true,
                        "Pack non-contiguous datatypes and compute reductions on GPU buffers with the GPU "
                        "kernels built into Axon (0: copy the buffers to host memory and do it there)"};
Counter gpu_packs{"axon_accel_gpu_packs", Counter::Class::Counter,
                  "Pack/unpack operations on GPU buffers done on the GPU (a kernel, or one device copy for contiguous data)"};
Counter gpu_reductions{"axon_accel_gpu_reductions", Counter::Class::Counter,
                       "Reductions on GPU buffers computed by a GPU kernel"};
Counter host_staged_ops{"axon_accel_host_staged_ops", Counter::Class::Counter,
                        "Pack/unpack operations and reductions on GPU buffers done on host copies"};
Counter coll_kernel_reductions{"axon_accel_coll_kernel_reductions", Counter::Class::Counter,
                               "Reducing collectives on GPU buffers whose local combine steps ran as GPU kernels"};
Counter coll_host_reductions{"axon_accel_coll_host_reductions", Counter::Class::Counter,
                             "Reducing collectives on GPU buffers combined on the CPU (no GPU kernels, a "
                             "user-defined op, or a datatype the kernels do not cover)"};

namespace {

// Bytes [lo, hi) relative to the buffer that `count` items of `t` touch.
struct Span {
  std::ptrdiff_t lo = 0, hi = 0;
  Span(const Datatype& t, std::size_t count) {
    if (count == 0 || t.size == 0) return;
    const std::ptrdiff_t last = static_cast<std::ptrdiff_t>(count - 1) * t.extent;
    lo = t.true_lb + std::min<std::ptrdiff_t>(0, last);
    hi = t.true_lb + t.true_extent + std::max<std::ptrdiff_t>(0, last);
  }
  std::size_t len() const { return hi > lo ? static_cast<std::size_t>(hi - lo) : 0; }
};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using HostBuffer = std::unique_ptr<unsigned char, FreeDeleter>;

// A host view of a buffer laid out as `span`: the buffer itself when it is
// host memory, else a host copy of the span (copied in when `copy_in`).
// `base` is where the buffer's origin is in the view (it may lie outside the
// allocation when the span does not start at 0, as the type's offsets say).
struct HostView {
  HostBuffer copy;
  unsigned char* base = nullptr;
  bool device = false;
  int rc = MPI_SUCCESS;

  HostView(const void* buffer, const Span& span, bool copy_in) {
    device = on_device(buffer);
    if (!device) {
      base = static_cast<unsigned char*>(const_cast<void*>(buffer));
      return;
    }
    copy.reset(static_cast<unsigned char*>(std::malloc(std::max<std::size_t>(span.len(), 1))));
    if (!copy) {
      rc = MPI_ERR_NO_MEM;
      return;
    }
    base = reinterpret_cast<unsigned char*>(reinterpret_cast<std::uintptr_t>(copy.get()) -
                                            static_cast<std::uintptr_t>(span.lo));
    if (copy_in && span.len() &&
        accel::copy(copy.get(), static_cast<const unsigned char*>(buffer) + span.lo, span.len()) != 0)
      rc = MPI_ERR_OTHER;
  }
  // Copies the span back to the device buffer.
  int write_back(void* buffer, const Span& span) {
    if (!device || span.len() == 0) return MPI_SUCCESS;
    return accel::copy(static_cast<unsigned char*>(buffer) + span.lo, copy.get(), span.len()) == 0 ? MPI_SUCCESS
                                                                                                : MPI_ERR_OTHER;
  }
};

// 1 (not done), or the MPI class of a kernel's answer.
int kernel_result(int rc) { return rc == 0 ? MPI_SUCCESS : rc < 0 ? MPI_ERR_OTHER : 1; }

}  // namespace

int device_op_apply(const Op& op, const void* in, void* inout, std::size_t count, const Datatype& t) {
  if (op.kind != OpKind::user && !op_defined_for(op, t)) return MPI_ERR_OP;
  if (on_device(in) && on_device(inout)) {
    int rc = kernel_result(kernels::reduce(op, in, inout, count, t));
    if (rc != 1) return rc;
  }
  host_staged_ops.add();
  const Span span(t, count);
  HostView src(in, span, true);
  if (src.rc) return src.rc;
  HostView dst(inout, span, true);
  if (dst.rc) return dst.rc;
  int rc = op_apply(op, src.base, dst.base, count, t);
  if (rc != MPI_SUCCESS) return rc;
  return dst.write_back(inout, span);
}

int device_op_queue(const Op& op, const void* in, void* inout, std::size_t count, const Datatype& t) {
  if (count == 0) return MPI_SUCCESS;
  if (op.kind == OpKind::user || !op_defined_for(op, t) || !on_device(in) || !on_device(inout)) return 1;
  return kernel_result(kernels::reduce(op, in, inout, count, t, /*wait=*/false));
}

const char* collective_host_reason(const Op& op, const Datatype& t, std::size_t bytes) {
  if (op.kind == OpKind::user) return "user-defined op";
  if (!kernels::reduce_supported(op, t)) return "no GPU kernels, or none for this op and datatype";
  const auto min = static_cast<std::size_t>(std::max<int64_t>(0, coll_kernel_min_param.get()));
  return bytes < min ? "fewer bytes than AXON_ACCEL_COLL_KERNEL_MIN" : nullptr;
}

void count_collective_combine(const char* what, const char* host_reason) {
  (host_reason ? coll_host_reductions : coll_kernel_reductions).add();
  if (host_reason) log::debug(1, "accel: %s on GPU buffers: combine on the CPU (host staging: %s)", what, host_reason);
  else log::debug(1, "accel: %s on GPU buffers: combine with GPU kernels", what);
}

int combine_on_device(const Op& op, const void* in, void* inout, std::size_t count, const Datatype& t) {
  const Span span(t, count);
  const std::size_t len = span.len();
  if (count == 0 || len == 0) return MPI_SUCCESS;
  void* din = kernels::scratch_alloc(len);
  void* dio = din ? kernels::scratch_alloc(len) : nullptr;
  int rc = 1;
  if (dio) {
    const auto* hin = static_cast<const unsigned char*>(in) + span.lo;
    auto* hio = static_cast<unsigned char*>(inout) + span.lo;
    auto* sin = static_cast<unsigned char*>(din);
    auto* sio = static_cast<unsigned char*>(dio);
    if (accel::copy(sin, hin, len) != 0 || accel::copy(sio, hio, len) != 0) {
      rc = MPI_ERR_OTHER;
    } else {
      // The scratch holds the span: the buffers' origins lie span.lo before.
      rc = kernel_result(kernels::reduce(op, sin - span.lo, sio - span.lo, count, t));
      if (rc == MPI_SUCCESS && accel::copy(hio, sio, len) != 0) rc = MPI_ERR_OTHER;
    }
  }
  kernels::scratch_free(dio, len);
  kernels::scratch_free(din, len);
  if (rc != 1) return rc;
  host_staged_ops.add();
  return op_apply(op, in, inout, count, t);
}

int device_pack(const Datatype& t, const void* user, std::size_t count, void* packed) {
  std::size_t bytes = 0;
  if (!bytes_for_count(t, count, &bytes)) return MPI_ERR_COUNT;
  if (bytes == 0) return MPI_SUCCESS;
  if (on_device(user) && on_device(packed)) {
    int rc = kernel_result(kernels::pack(packed, user, count, t));
    if (rc != 1) return rc;
  }
  host_staged_ops.add();
  HostView src(user, Span(t, count), true);
  if (src.rc) return src.rc;
  if (!on_device(packed)) {
    pack_items(t, src.base, count, packed);
    return MPI_SUCCESS;
  }
  HostBuffer tmp(static_cast<unsigned char*>(std::malloc(bytes)));
  if (!tmp) return MPI_ERR_NO_MEM;
  pack_items(t, src.base, count, tmp.get());
  return accel::copy(packed, tmp.get(), bytes) == 0 ? MPI_SUCCESS : MPI_ERR_OTHER;
}

int device_unpack(const Datatype& t, const void* packed, std::size_t count, void* user) {
  std::size_t bytes = 0;
  if (!bytes_for_count(t, count, &bytes)) return MPI_ERR_COUNT;
  if (bytes == 0) return MPI_SUCCESS;
  if (on_device(user) && on_device(packed)) {
    int rc = kernel_result(kernels::unpack(user, packed, count, t));
    if (rc != 1) return rc;
  }
  host_staged_ops.add();
  HostBuffer tmp;
  const void* src = packed;
  if (on_device(packed)) {
    tmp.reset(static_cast<unsigned char*>(std::malloc(bytes)));
    if (!tmp) return MPI_ERR_NO_MEM;
    if (accel::copy(tmp.get(), packed, bytes) != 0) return MPI_ERR_OTHER;
    src = tmp.get();
  }
  // The user span is copied in first: the holes keep their bytes.
  const Span span(t, count);
  HostView dst(user, span, true);
  if (dst.rc) return dst.rc;
  unpack_items(t, src, count, dst.base);
  return dst.write_back(user, span);
}

}  // namespace axon::accel
