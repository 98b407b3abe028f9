#include "base/param.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <strings.h>

#include "base/log.h"

namespace axon {

namespace {
// Function-local so that Params declared in any translation unit can register
// during static initialisation regardless of order.
std::vector<const Param*>& registry() {
  static std::vector<const Param*> params;
  return params;
}
}  // namespace

Param::Param(const char* name, Kind kind, const char* default_text, const char* help)
    : name_(name), kind_(kind), default_text_(default_text), help_(help) {
  registry().push_back(this);
}

const std::vector<const Param*>& Param::all() { return registry(); }

bool Param::is_set() const { return std::getenv(name_) != nullptr; }

std::string Param::text() const {
  const char* v = std::getenv(name_);
  return v ? v : default_text_;
}

bool parse_size(const char* text, int64_t* out) {
  if (!text || !*text) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 0);
  if (errno || end == text) return false;
  int shift = 0;
  switch (*end) {
    case 'k': case 'K': shift = 10; ++end; break;
    case 'm': case 'M': shift = 20; ++end; break;
    case 'g': case 'G': shift = 30; ++end; break;
    default: break;
  }
  if ((*end == 'b' || *end == 'B') && shift) ++end;
  if (*end != '\0') return false;
  *out = static_cast<int64_t>(v) << shift;
  return true;
}

namespace {
// Default values are stored as text too, for listing.
const char* int_text(int64_t v) {
  // Leaks one small string per parameter, once, at static-init time.
  std::string s = std::to_string(v);
  return strdup(s.c_str());
}
}  // namespace

IntParam::IntParam(const char* name, int64_t default_value, const char* help, Kind kind)
    : Param(name, kind, int_text(default_value), help), default_value_(default_value) {}

int64_t IntParam::get() const {
  if (!loaded_) {
    value_ = default_value_;
    if (const char* v = std::getenv(name_)) {
      int64_t parsed;
      if (parse_size(v, &parsed))
        value_ = parsed;
      else
        log::warn("ignoring %s=\"%s\": not a number; using %lld", name_, v,
                  static_cast<long long>(default_value_));
    }
    loaded_ = true;
  }
  return value_;
}

BoolParam::BoolParam(const char* name, bool default_value, const char* help)
    : Param(name, Kind::Boolean, default_value ? "1" : "0", help), default_value_(default_value) {}

bool BoolParam::get() const {
  if (!loaded_) {
    value_ = default_value_;
    if (const char* v = std::getenv(name_)) {
      if (!strcasecmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcasecmp(v, "on"))
        value_ = true;
      else if (!strcasecmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcasecmp(v, "off"))
        value_ = false;
      else
        log::warn("ignoring %s=\"%s\": expected 0/1, yes/no, true/false, on/off", name_, v);
    }
    loaded_ = true;
  }
  return value_;
}

StringParam::StringParam(const char* name, const char* default_value, const char* help)
    : Param(name, Kind::String, default_value, help) {}

const std::string& StringParam::get() const {
  if (!loaded_) {
    value_ = text();
    loaded_ = true;
  }
  return value_;
}

}  // namespace axon
