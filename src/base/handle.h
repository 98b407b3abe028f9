// Whether a handle value can point at an object the library allocated.
//
// Handles are pointers to the library's objects, each of which starts its
// life with a magic word that the conversion from handle to object checks,
// so that garbage handles get the kind's error class (MPI_ERR_COMM, ...)
// instead of a crash. Reading the magic needs readable memory: this test
// rejects first the values that cannot be objects without touching memory
// at all. Nothing is ever mapped in the first page (Linux's mmap_min_addr is
// at least 4096), every predefined handle of the ABI is below 0x400, and
// objects come from `new`, aligned for their type.
#pragma once

#include <cstdint>

namespace axon {

inline constexpr std::uintptr_t kFirstObjectAddress = 4096;

template <class Object>
inline bool may_be_object(const void* handle) {
  const auto value = reinterpret_cast<std::uintptr_t>(handle);
  return value >= kFirstObjectAddress && value % alignof(Object) == 0;
}

}  // namespace axon
