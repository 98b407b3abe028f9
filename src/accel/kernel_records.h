// The records kernels.cpp (host, g++) hands to the GPU kernels of
// kernels.cu (nvcc): one definition for both compilers, so the two sides
// cannot drift apart. Plain fixed-size fields only; `pieces` is a device
// address: a CUdeviceptr on the host, a pointer in the kernels (so that
// nvcc knows the loads are global memory). Also valid C: the fake driver of
// the tests (test/accel/fake_cuda.c) runs the kernels' semantics on the
// same records.
#pragma once

#ifdef __cplusplus
#define AXON_KR_STATIC_ASSERT(e, m) static_assert(e, m)
namespace axon::accel::kernel_records {
#else
#define AXON_KR_STATIC_ASSERT(e, m) _Static_assert(e, m)
typedef struct Piece Piece;
typedef struct Layout Layout;
#endif

// One piece of a flattened datatype: the first four fields are Axon's
// TypeBlock (src/datatype/datatype.h) — `count` runs of `length` bytes,
// `stride` bytes apart, at `offset` from the unit's start — and `packed` is
// where the first run lands in the unit's packed stream (runs follow each
// other there). kernels.cpp cuts big TypeBlocks into several pieces so that
// the work of one piece stays small.
struct Piece {
  long long offset;
  unsigned long long length;
  unsigned long long count;
  long long stride;
  unsigned long long packed;
};
AXON_KR_STATIC_ASSERT(sizeof(Piece) == 40, "Piece: 40 bytes on both sides");

// A layout of `units` units (count items x reps units per item): unit u
// starts at (u / reps) * extent + (u % reps) * rep_stride in the user
// buffer and at u * unit_size in the packed stream.
struct Layout {
#ifdef __CUDACC__
  const Piece* pieces;
#else
  unsigned long long pieces;  // CUdeviceptr of piece_count Pieces
#endif
  unsigned long long piece_count;
  unsigned long long units;
  unsigned long long reps;
  long long rep_stride;
  long long extent;
  unsigned long long unit_size;
};
AXON_KR_STATIC_ASSERT(sizeof(Layout) == 56, "Layout: 56 bytes on both sides");

#ifdef __cplusplus
}  // namespace axon::accel::kernel_records
#endif
#undef AXON_KR_STATIC_ASSERT
