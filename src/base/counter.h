// Performance counters: what Axon counts about itself (messages and bytes per
// transport, eager and rendezvous sends, unexpected messages), exported as
// MPI_T performance variables. Like Params, each counter is a namespace-scope
// object declared next to the code that updates it, and declaring it
// registers it.
//
// Updates are plain loads and stores, not atomic read-modify-writes: every
// update happens on the communication path, which the PML lock serializes,
// so a locked instruction per message would buy nothing. Readers (MPI_T) may
// see a value that is a few updates old.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

namespace axon {

class Counter {
 public:
  enum class Class {
    Counter,  // only grows (MPI_T_PVAR_CLASS_COUNTER)
    Level,    // a current amount that goes up and down (MPI_T_PVAR_CLASS_LEVEL)
  };
  using Reader = uint64_t (*)();

  // A counter the code updates with add().
  Counter(const char* name, Class cls, const char* help);
  // A value computed when read (e.g. the length of a queue); `reader` is
  // called from MPI_T and must take whatever lock the state needs.
  Counter(const char* name, Class cls, const char* help, Reader reader);
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  void add(uint64_t n = 1) {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t value() const { return reader_ ? reader_() : value_.load(std::memory_order_relaxed); }

  const char* name() const { return name_; }
  const char* help() const { return help_; }
  Class counter_class() const { return class_; }

  static const std::vector<const Counter*>& all();

 private:
  const char* name_;
  Class class_;
  const char* help_;
  Reader reader_ = nullptr;
  std::atomic<uint64_t> value_{0};
};

}  // namespace axon
