// A POSIX shared-memory segment, owned (created, mapped, unlinked, unmapped)
// by one object. Segments are private to the job's user (mode 0600).
#pragma once

#include <cstddef>
#include <string>

namespace axon::btl {

class SharedSegment {
 public:
  SharedSegment() = default;
  ~SharedSegment();
  SharedSegment(SharedSegment&& other) noexcept;
  SharedSegment& operator=(SharedSegment&& other) noexcept;
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  // Creates a new segment of `size` bytes (fails if the name exists).
  // Returns 0 or an errno value.
  int create(const std::string& name, size_t size);
  // Maps an existing segment; its size is taken from the object.
  int attach(const std::string& name);
  // Removes the name; the mapping stays valid until destruction.
  void unlink();

  void* base() const { return base_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  void release();
  std::string name_;
  void* base_ = nullptr;
  size_t size_ = 0;
  bool linked_ = false;  // we created it and have not unlinked it yet
};

}  // namespace axon::btl
