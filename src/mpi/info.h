// Info objects (MPI-4.1 section 10): an ordered list of (key, value) strings.
// The MPI_Info_* entry points live in src/mpi/info.cpp; this header gives the
// other parts of the library C++ access to the same objects.
//
// Handles: MPI_INFO_NULL has no object (info_from_handle gives nullptr);
// MPI_INFO_ENV is a static read-only object, filled on first use from the
// job and /proc/self/cmdline (MPI-4.1 11.2.4);
// every other handle is a heap Info made by MPI_Info_create / _dup /
// _create_env or by info_new / info_dup, freed by MPI_Info_free / info_free.
//
// How another object keeps hints: copy what it needs (info_dup, or the
// entries it understands) when the user passes an info; an info handle given
// to MPI is never retained past the call (the user may free it right after).
// A "get_info" call returns a fresh object: info_dup(&hints) -> info_handle().
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace axon::mpi {

constexpr uint32_t kInfoMagic = 0x494e464fu;  // "INFO"

struct Info {
  uint32_t magic = kInfoMagic;
  bool predefined = false;  // MPI_INFO_ENV: cannot be modified or freed
  // Insertion order is the order MPI_Info_get_nthkey reports; setting an
  // existing key replaces its value in place.
  std::vector<std::pair<std::string, std::string>> entries;

  const std::string* find(std::string_view key) const;  // nullptr when absent
  std::optional<std::string> get(std::string_view key) const;
  void set(std::string_view key, std::string_view value);
  bool erase(std::string_view key);  // false when absent
  int nkeys() const { return static_cast<int>(entries.size()); }
};

// The object behind a handle; nullptr for MPI_INFO_NULL and invalid handles.
Info* info_from_handle(MPI_Info handle);
MPI_Info info_handle(Info* info);

Info* info_new();                  // empty heap object
Info* info_dup(const Info* info);  // heap copy (info may be nullptr: empty copy)
void info_free(Info* info);        // heap objects only; predefined ones are kept

// Owning pointer for infos kept inside the library.
struct InfoDeleter {
  void operator()(Info* info) const { info_free(info); }
};
using InfoPtr = std::unique_ptr<Info, InfoDeleter>;

// Reads a hint as a boolean ("true"/"false", case-insensitive) or an integer;
// `fallback` when absent or malformed. `info` may be nullptr.
bool info_get_bool(const Info* info, std::string_view key, bool fallback);
// "MPI_THREAD_SINGLE" ... "MPI_THREAD_MULTIPLE": the values of the
// "thread_level" key (MPI_INFO_ENV, MPI_Session_init / _get_info).
const char* thread_level_name(int level);
long long info_get_int(const Info* info, std::string_view key, long long fallback);

}  // namespace axon::mpi
