#include "base/param.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <strings.h>
#include <unistd.h>  // environ

#include "base/log.h"

namespace axon {

namespace {
// Function-local so that Params declared in any translation unit can register
// during static initialisation regardless of order.
std::vector<Param*>& registry() {
  static std::vector<Param*> params;
  return params;
}
}  // namespace

Param::Param(const char* name, Kind kind, const char* default_text, const char* help)
    : name_(name), kind_(kind), default_text_(default_text), help_(help) {
  registry().push_back(this);
}

const std::vector<Param*>& Param::all() { return registry(); }

Param* Param::find(const char* name) {
  for (Param* p : registry())
    if (std::strcmp(p->name(), name) == 0) return p;
  return nullptr;
}

bool Param::is_set() const { return written_.load(std::memory_order_relaxed) || std::getenv(name_) != nullptr; }

// call_once makes every other first caller wait until the value is in place;
// the release store lets later get()s skip call_once with one acquire load.
void Param::load_once() const {
  std::call_once(load_flag_, [this] {
    load(std::getenv(name_));
    loaded_.store(true, std::memory_order_release);
  });
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

// ---- integers --------------------------------------------------------------------

IntParam::IntParam(const char* name, int64_t default_value, const char* help, Kind kind)
    : Param(name, kind, int_text(default_value), help),
      default_value_(default_value),
      range_{INT64_MIN, INT64_MAX},
      bounded_(false) {}

IntParam::IntParam(const char* name, int64_t default_value, Range range, const char* help, Kind kind)
    : Param(name, kind, int_text(default_value), help), default_value_(default_value), range_(range), bounded_(true) {}

std::string IntParam::constraint_text() const {
  if (!bounded_) return {};
  return std::to_string(range_.min) + " to " + std::to_string(range_.max);
}

void IntParam::load(const char* env) const {
  int64_t value = default_value_;
  if (env) {
    int64_t parsed;
    if (!parse_size(env, &parsed)) {
      log::warn("ignoring %s=\"%s\": not a number; using %lld", name_, env, static_cast<long long>(default_value_));
    } else if (parsed < range_.min || parsed > range_.max) {
      value = std::clamp(parsed, range_.min, range_.max);
      log::warn("%s=\"%s\" is out of its range %lld to %lld; using %lld", name_, env,
                static_cast<long long>(range_.min), static_cast<long long>(range_.max), static_cast<long long>(value));
    } else {
      value = parsed;
    }
  }
  value_.store(value, std::memory_order_relaxed);
}

// ---- booleans --------------------------------------------------------------------

BoolParam::BoolParam(const char* name, bool default_value, const char* help)
    : Param(name, Kind::Boolean, default_value ? "1" : "0", help), default_value_(default_value) {}

void BoolParam::load(const char* env) const {
  bool value = default_value_;
  if (env) {
    if (!strcasecmp(env, "1") || !strcasecmp(env, "yes") || !strcasecmp(env, "true") || !strcasecmp(env, "on"))
      value = true;
    else if (!strcasecmp(env, "0") || !strcasecmp(env, "no") || !strcasecmp(env, "false") || !strcasecmp(env, "off"))
      value = false;
    else
      log::warn("ignoring %s=\"%s\": expected 0/1, yes/no, true/false, on/off", name_, env);
  }
  value_.store(value, std::memory_order_relaxed);
}

// ---- strings ---------------------------------------------------------------------

StringParam::StringParam(const char* name, const char* default_value, const char* help)
    : Param(name, Kind::String, default_value, help) {}

void StringParam::load(const char* env) const { value_ = env ? env : default_text_; }

// ---- enumerations ----------------------------------------------------------------

EnumParam::EnumParam(const char* name, std::vector<const char*> names, const char* help, Access access)
    : Param(name, Kind::Enum, names.at(0), help), names_(std::move(names)) {
  writable_ = access == Access::Writable;
}

int EnumParam::index_of(const char* name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (strcasecmp(names_[i], name) == 0) return static_cast<int>(i);
  return -1;
}

std::string EnumParam::constraint_text() const {
  std::string text = "one of: ";
  for (size_t i = 0; i < names_.size(); ++i) text += (i ? ", " : "") + std::string(names_[i]);
  return text;
}

void EnumParam::load(const char* env) const {
  int value = 0;
  if (env) {
    value = index_of(env);
    if (value < 0) {
      log::warn("ignoring %s=\"%s\": not a valid value (%s); using %s", name_, env, constraint_text().c_str(),
                names_[0]);
      value = 0;
    }
  }
  value_.store(value, std::memory_order_relaxed);
}

bool EnumParam::write(int index) {
  if (!writable_ || index < 0 || index >= static_cast<int>(names_.size())) return false;
  ensure_loaded();  // so that the environment, read later, cannot undo the write
  value_.store(index, std::memory_order_relaxed);
  mark_written();
  return true;
}

// ---- unknown variables -----------------------------------------------------------

namespace {

BoolParam check_param{"AXON_PARAM_CHECK", true,
                      "At MPI_Init, rank 0 warns about every AXON_* environment variable that is not an Axon "
                      "parameter (a typo is otherwise ignored without a word), with the closest parameter's name; "
                      "0 turns the check off."};

// AXON_* variables that are not parameters of the library, so they are never
// reported: the compiler wrappers' (src/tools/mpicc.in and the others), the
// test suite's and contrib's scripts', and what site installations
// (environment modules, Spack) commonly set. Written without the AXON_
// prefix: only real parameters appear as "AXON_..." literals in src/
// (test/tools/params_listed.sh checks that).
constexpr const char* kNotParameters[] = {
    "CC", "CXX", "FC", "MPICC_ACTIVE", "MPICXX_ACTIVE", "MPIFORT_ACTIVE", "MPIFORT_BUILDDIR",  // wrappers
    "SRCDIR", "BUILDDIR", "KEEP_TMP", "FUZZ_SECONDS", "LIB",                                  // test/, contrib/
    "ROOT", "HOME", "DIR", "PREFIX", "VERSION",                                                // installations
};
// Prefixes of such variables: the test suite's own (test/run-tests.sh's
// AXON_TEST_TIMEOUT, test programs' AXON_TEST_*; test/security's preloaded
// shim's AXON_SHIM_*), contrib/rxe-vm's AXON_RXE_VM_*.
constexpr const char* kNotParameterPrefixes[] = {"TEST_", "SHIM_", "RXE_VM_"};

constexpr char kPrefix[] = "AXON_";
constexpr size_t kPrefixLength = sizeof kPrefix - 1;

bool is_not_a_parameter(const std::string& suffix) {
  for (const char* name : kNotParameters)
    if (suffix == name) return true;
  for (const char* prefix : kNotParameterPrefixes)
    if (suffix.rfind(prefix, 0) == 0) return true;
  return false;
}

int upper(char c) { return std::toupper(static_cast<unsigned char>(c)); }

// Levenshtein distance, case-insensitive (so a lower-case typo still finds
// its parameter).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t replace = diagonal + (upper(a[i - 1]) == upper(b[j - 1]) ? 0 : 1);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, replace});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The parameter closest to `name`, or null when none is close enough to be
// a likely typo: at most 2 edits, or a fifth of the name's length.
const Param* closest_parameter(const std::string& name) {
  const Param* best = nullptr;
  size_t best_distance = std::max<size_t>(2, name.size() / 5) + 1;
  for (const Param* p : Param::all()) {
    size_t d = edit_distance(name, p->name());
    if (d < best_distance) {
      best = p;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace

int warn_unknown_variables() {
  static std::once_flag once;
  int warned = 0;
  std::call_once(once, [&warned] {
    if (!check_param.get()) return;
    for (char** entry = environ; entry && *entry; ++entry) {
      const char* text = *entry;
      if (std::strncmp(text, kPrefix, kPrefixLength) != 0) continue;
      const char* equals = std::strchr(text, '=');
      if (!equals) continue;
      std::string name(text, static_cast<size_t>(equals - text));
      if (Param::find(name.c_str()) || is_not_a_parameter(name.substr(kPrefixLength))) continue;
      const Param* near = closest_parameter(name);
      if (near)
        log::warn("%s is set but is not an Axon parameter: did you mean %s? (axon_info --params lists them; "
                  "AXON_PARAM_CHECK=0 turns this check off)", name.c_str(), near->name());
      else
        log::warn("%s is set but is not an Axon parameter (axon_info --params lists them; AXON_PARAM_CHECK=0 "
                  "turns this check off)", name.c_str());
      ++warned;
    }
  });
  return warned;
}

}  // namespace axon
