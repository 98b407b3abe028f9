#include "btl/sm/segment.h"

#include <utility>

namespace axon::btl {

SharedSegment::SharedSegment(SharedSegment&& other) noexcept { *this = std::move(other); }

SharedSegment& SharedSegment::operator=(SharedSegment&& other) noexcept {
  if (this != &other) {
    unlink();
    map_ = std::move(other.map_);
    name_ = std::move(other.name_);
    linked_ = std::exchange(other.linked_, false);
  }
  return *this;
}

int SharedSegment::create(const std::string& prefix, const std::string& what, size_t size, std::string* why) {
  unlink();
  int err = shm::create(prefix, what, size, &name_, &map_, why);
  linked_ = err == 0;
  return err;
}

int SharedSegment::attach(const std::string& name, size_t min_size, std::string* why) {
  unlink();
  name_ = name;
  return shm::open_existing(name, min_size, &map_, why);
}

void SharedSegment::unlink() {
  if (linked_) shm::unlink(name_);
  linked_ = false;
}

}  // namespace axon::btl
