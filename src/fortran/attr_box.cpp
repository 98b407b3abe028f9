// The boxes of attribute values set from Fortran (attr_box.h).
#include "fortran/attr_box.h"

#include <mutex>
#include <unordered_map>

namespace axon::fortran {
namespace {
std::mutex box_lock;
// Every live box and its references. Only addresses found here are boxes:
// an attribute set from C (any pointer) is never taken for one.
std::unordered_map<const void*, int>& boxes() {
  static auto* live = new std::unordered_map<const void*, int>;  // outlives static destructors
  return *live;
}
}  // namespace

void* attr_box(MPI_Aint value) {
  auto* box = new MPI_Aint(value);
  std::lock_guard<std::mutex> lock(box_lock);
  boxes()[box] = 1;
  return box;
}

void attr_box_ref(void* v) {
  std::lock_guard<std::mutex> lock(box_lock);
  if (auto it = boxes().find(v); it != boxes().end()) ++it->second;
}

void attr_box_unref(void* v) {
  std::lock_guard<std::mutex> lock(box_lock);
  auto it = boxes().find(v);
  if (it == boxes().end() || --it->second > 0) return;
  boxes().erase(it);
  delete static_cast<MPI_Aint*>(v);
}

MPI_Aint attr_box_value(void* v) {
  std::lock_guard<std::mutex> lock(box_lock);
  return boxes().count(v) ? *static_cast<MPI_Aint*>(v) : reinterpret_cast<MPI_Aint>(v);
}

}  // namespace axon::fortran
