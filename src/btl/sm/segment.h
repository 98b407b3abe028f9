// A POSIX shared-memory segment, owned (created, mapped, unlinked, unmapped)
// by one object. Segments are private to the job's user: created
// exclusively with mode 0600 under a random name, and mapped by the other
// ranks only after checking owner and mode (base/shm_file.h).
#pragma once

#include <cstddef>
#include <string>

#include "base/shm_file.h"

namespace axon::btl {

class SharedSegment {
 public:
  SharedSegment() = default;
  ~SharedSegment() { unlink(); }
  SharedSegment(SharedSegment&& other) noexcept;
  SharedSegment& operator=(SharedSegment&& other) noexcept;
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  // Creates a new segment "<prefix>.<what>.<random>" of `size` bytes.
  // Returns 0 or an errno value, with *why saying what failed.
  int create(const std::string& prefix, const std::string& what, size_t size, std::string* why);
  // Maps the segment `name` a local peer created, of at least `min_size`
  // bytes (its size is taken from the object). 0 or an errno value, *why.
  int attach(const std::string& name, size_t min_size, std::string* why);
  // Removes the name; the mapping stays valid until destruction.
  void unlink();

  void* base() const { return map_.base(); }
  size_t size() const { return map_.size(); }
  const std::string& name() const { return name_; }

 private:
  shm::Mapping map_;
  std::string name_;
  bool linked_ = false;  // we created it and have not unlinked it yet
};

}  // namespace axon::btl
