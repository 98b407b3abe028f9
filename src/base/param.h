// Tunable parameters: every AXON_* environment variable Axon reads is declared
// once, next to the code that reads it, as a namespace-scope Param object.
// Declaring one registers it, so `axon_info --params` (through MPI_T control
// variables) can list them all with their defaults and help.
//
// A parameter reads the environment once, at its first get(), whichever
// thread gets there first (several at once are safe: the first one loads,
// the others wait for it). An EnumParam declared Writable can also be set
// through MPI_T_cvar_write (src/mpi/tool.cpp); get() sees the new value at
// its next call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <string>
#include <vector>

namespace axon {

class Param {
 public:
  enum class Kind { Integer, Size, Boolean, String, Enum };

  Param(const char* name, Kind kind, const char* default_text, const char* help);
  Param(const Param&) = delete;
  Param& operator=(const Param&) = delete;

  const char* name() const { return name_; }
  const char* help() const { return help_; }
  const char* default_text() const { return default_text_; }
  Kind kind() const { return kind_; }
  // What the value may be, for listings ("one of: a, b", "2 to 1024"); empty
  // when anything of the kind goes.
  virtual std::string constraint_text() const { return {}; }
  // Whether MPI_T_cvar_write may change the value (the others are fixed once
  // read from the environment).
  bool writable() const { return writable_; }
  // Set in the environment (or written through MPI_T).
  bool is_set() const;

  static const std::vector<Param*>& all();
  static Param* find(const char* name);

 protected:
  // Reads the environment into the value on the first call, once.
  void ensure_loaded() const {
    if (!loaded_.load(std::memory_order_acquire)) load_once();
  }
  // Parses `env` (the variable's value, or null when unset) into the value;
  // runs once, before any get() returns.
  virtual void load(const char* env) const = 0;
  void mark_written() { written_.store(true, std::memory_order_relaxed); }

  const char* name_;
  Kind kind_;
  const char* default_text_;
  const char* help_;
  bool writable_ = false;

 private:
  void load_once() const;

  mutable std::once_flag load_flag_;
  mutable std::atomic<bool> loaded_{false};
  std::atomic<bool> written_{false};
};

// Inclusive bounds of an integer parameter. A value out of them in the
// environment is clamped to the nearer bound, with a warning.
struct Range {
  int64_t min, max;
};

// An integer; accepts size suffixes (k, m, g: powers of 1024) for Kind::Size.
class IntParam : public Param {
 public:
  IntParam(const char* name, int64_t default_value, const char* help, Kind kind = Kind::Integer);
  IntParam(const char* name, int64_t default_value, Range range, const char* help, Kind kind = Kind::Integer);
  int64_t get() const {
    ensure_loaded();
    return value_.load(std::memory_order_relaxed);
  }
  std::string constraint_text() const override;

 private:
  void load(const char* env) const override;

  int64_t default_value_;
  Range range_;
  bool bounded_;
  mutable std::atomic<int64_t> value_{0};
};

class SizeParam : public IntParam {
 public:
  SizeParam(const char* name, int64_t default_value, const char* help)
      : IntParam(name, default_value, help, Kind::Size) {}
  SizeParam(const char* name, int64_t default_value, Range range, const char* help)
      : IntParam(name, default_value, range, help, Kind::Size) {}
};

class BoolParam : public Param {
 public:
  BoolParam(const char* name, bool default_value, const char* help);
  bool get() const {
    ensure_loaded();
    return value_.load(std::memory_order_relaxed);
  }

 private:
  void load(const char* env) const override;

  bool default_value_;
  mutable std::atomic<bool> value_{false};
};

// Text, fixed once read (get() hands out a reference, so it is never written).
class StringParam : public Param {
 public:
  StringParam(const char* name, const char* default_value, const char* help);
  const std::string& get() const {
    ensure_loaded();
    return value_;
  }

 private:
  void load(const char* env) const override;

  mutable std::string value_;
};

// One of a fixed list of names; get() is the index of the name. The first
// name is the default. A name not on the list in the environment gives a
// warning that lists the allowed ones, and the default.
class EnumParam : public Param {
 public:
  enum class Access { ReadOnly, Writable };

  EnumParam(const char* name, std::vector<const char*> names, const char* help, Access access = Access::ReadOnly);
  EnumParam(const char* name, std::initializer_list<const char*> names, const char* help,
            Access access = Access::ReadOnly)
      : EnumParam(name, std::vector<const char*>(names), help, access) {}
  int get() const {
    ensure_loaded();
    return value_.load(std::memory_order_relaxed);
  }
  const char* value_name() const { return names_[static_cast<size_t>(get())]; }
  const std::vector<const char*>& names() const { return names_; }
  // The index of `name` (case-insensitive), or -1.
  int index_of(const char* name) const;
  // Sets the value (a Writable parameter, through MPI_T); false when `index`
  // names no value or the parameter is read-only.
  bool write(int index);
  std::string constraint_text() const override;

 private:
  void load(const char* env) const override;

  std::vector<const char*> names_;
  mutable std::atomic<int> value_{0};
};

// Parses "123", "64k", "4M", "1g". Returns false on malformed input.
bool parse_size(const char* text, int64_t* out);

// Warns once per process about every AXON_* variable in the environment that
// no Param declares (nor Axon's compiler wrappers and scripts use), naming
// the closest parameter when one is near; nothing with AXON_PARAM_CHECK=0.
// MPI start-up calls it on rank 0 of MPI_COMM_WORLD. Returns how many it
// warned about.
int warn_unknown_variables();

}  // namespace axon
