#include "base/counter.h"

namespace axon {

namespace {
// Function-local so counters in any translation unit can register during
// static initialisation regardless of order.
std::vector<const Counter*>& registry() {
  static std::vector<const Counter*> counters;
  return counters;
}
}  // namespace

Counter::Counter(const char* name, Class cls, const char* help) : name_(name), class_(cls), help_(help) {
  registry().push_back(this);
}

Counter::Counter(const char* name, Class cls, const char* help, Reader reader)
    : name_(name), class_(cls), help_(help), reader_(reader) {
  registry().push_back(this);
}

const std::vector<const Counter*>& Counter::all() { return registry(); }

}  // namespace axon
