// Tunable parameters: every AXON_* environment variable Axon reads is declared
// once, next to the code that reads it, as a namespace-scope Param object.
// Declaring one registers it, so `axon_info --params` (through MPI_T control
// variables) can list them all with their defaults and help.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace axon {

class Param {
 public:
  enum class Kind { Integer, Size, Boolean, String };

  Param(const char* name, Kind kind, const char* default_text, const char* help);
  Param(const Param&) = delete;
  Param& operator=(const Param&) = delete;

  const char* name() const { return name_; }
  const char* help() const { return help_; }
  const char* default_text() const { return default_text_; }
  Kind kind() const { return kind_; }
  // The value as set in the environment, or the default when unset.
  std::string text() const;
  bool is_set() const;

  static const std::vector<const Param*>& all();

 protected:
  const char* name_;
  Kind kind_;
  const char* default_text_;
  const char* help_;
};

// An integer; accepts size suffixes (k, m, g: powers of 1024) for Kind::Size.
class IntParam : public Param {
 public:
  IntParam(const char* name, int64_t default_value, const char* help, Kind kind = Kind::Integer);
  int64_t get() const;  // read from the environment once, then cached

 private:
  int64_t default_value_;
  mutable int64_t value_ = 0;
  mutable bool loaded_ = false;
};

class SizeParam : public IntParam {
 public:
  SizeParam(const char* name, int64_t default_value, const char* help)
      : IntParam(name, default_value, help, Kind::Size) {}
};

class BoolParam : public Param {
 public:
  BoolParam(const char* name, bool default_value, const char* help);
  bool get() const;

 private:
  bool default_value_;
  mutable bool value_ = false;
  mutable bool loaded_ = false;
};

class StringParam : public Param {
 public:
  StringParam(const char* name, const char* default_value, const char* help);
  const std::string& get() const;

 private:
  mutable std::string value_;
  mutable bool loaded_ = false;
};

// Parses "123", "64k", "4M", "1g". Returns false on malformed input.
bool parse_size(const char* text, int64_t* out);

}  // namespace axon
