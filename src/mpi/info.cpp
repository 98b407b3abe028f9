// Info objects and the MPI_Info_* entry points. Info errors have no object
// with an error handler: they are raised on MPI_COMM_SELF (MPI-4).
#include "mpi/info.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>

#include "mpi/api.h"
#include "rte/rte.h"

namespace axon::mpi {

const std::string* Info::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

std::optional<std::string> Info::get(std::string_view key) const {
  const std::string* v = find(key);
  if (!v) return std::nullopt;
  return *v;
}

void Info::set(std::string_view key, std::string_view value) {
  for (auto& [k, v] : entries) {
    if (k == key) {
      v.assign(value);
      return;
    }
  }
  entries.emplace_back(std::string(key), std::string(value));
}

bool Info::erase(std::string_view key) {
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    if (it->first == key) {
      entries.erase(it);
      return true;
    }
  }
  return false;
}

namespace {

struct EnvInfo {
  std::mutex mutex;
  Info info;
  bool filled = false;
  bool filled_with_job = false;  // filled after MPI_Init: maxprocs, thread_level known
};

EnvInfo& env_info() {
  static EnvInfo e;
  return e;
}

// main's own argument vector, as glibc hands it to a shared library's
// constructors (argc, argv, envp). MPI_Info_create_env compares the argv it is
// given with this one: some callers (MPICH's info/infocreateenv test among
// them) pass &argc and &argv, and such values must never be dereferenced.
int main_argc = 0;
char** main_argv = nullptr;
__attribute__((constructor)) void capture_main_arguments(int argc, char** argv, char** /*envp*/) {
  main_argc = argc;
  main_argv = argv;
}

// The largest argument count taken from an argv array that is not main's own:
// beyond it the pair is treated as not describing a command line at all.
constexpr int kMaxForeignArgc = 256;

// This process's command line as the kernel recorded it; MPI_Init may have
// been given NULL argc/argv, so the arguments are not taken from there.
std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  size_t start = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i] == '\0') {
      args.emplace_back(all.substr(start, i - start));
      start = i + 1;
    }
  }
  return args;
}


// The keys MPI-4.1 11.2.4 lists for MPI_INFO_ENV that Axon knows: "command"
// and "argv" (the arguments after the command, separated by spaces), then
// "maxprocs", "host", "arch", "wdir" and "thread_level". "soft" and "file"
// describe mpiexec options Axon's mpirun does not have: left out.
// `job_keys`: also the keys only known once MPI is initialized (maxprocs,
// thread_level); MPI_Info_create_env leaves them out so that its result is
// the same before MPI_Init, after it and after MPI_Finalize.
void fill_env(Info* info, const std::vector<std::string>& args, bool job_keys) {
  info->entries.clear();
  if (!args.empty()) {
    info->set("command", args[0]);
    std::string rest;
    for (size_t i = 1; i < args.size(); ++i) {
      if (i > 1) rest += ' ';
      rest += args[i];
    }
    info->set("argv", rest);
  }
  if (job_keys && initialized()) info->set("maxprocs", std::to_string(rte::job().size));
  char host[256];
  if (gethostname(host, sizeof host) == 0) {
    host[sizeof host - 1] = '\0';
    info->set("host", host);
  }
  utsname u;
  if (uname(&u) == 0) info->set("arch", u.machine);
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd)) info->set("wdir", cwd);
  int level = MPI_THREAD_SINGLE;
  if (job_keys && initialized() && PMPI_Query_thread(&level) == MPI_SUCCESS)
    info->set("thread_level", thread_level_name(level));
}

// A string argument's length, or -1 when it is longer than `max`
// (strnlen: never reads past max + 1 characters of a bad string).
long bounded_length(const char* s, size_t max) {
  size_t n = strnlen(s, max + 1);
  return n > max ? -1 : static_cast<long>(n);
}

// The longest key: MPI_MAX_INFO_KEY counts the terminating NUL (the ABI's 256
// is the standard's "at most 255" plus one), so every key fits the
// char[MPI_MAX_INFO_KEY] buffer MPI_Info_get_nthkey writes to.
constexpr size_t kMaxKeyLength = MPI_MAX_INFO_KEY - 1;

// Checks a key: MPI_ERR_INFO_KEY when NULL (as MPICH), empty, or longer than
// kMaxKeyLength characters.
int check_key(const char* key) {
  if (!key) return MPI_ERR_INFO_KEY;
  long n = bounded_length(key, kMaxKeyLength);
  return n <= 0 ? MPI_ERR_INFO_KEY : MPI_SUCCESS;
}

}  // namespace

Info* info_from_handle(MPI_Info h) {
  if (h == MPI_INFO_ENV) {
    EnvInfo& e = env_info();
    std::lock_guard<std::mutex> g(e.mutex);
    if (!e.filled || (!e.filled_with_job && initialized())) {
      fill_env(&e.info, own_command_line(), true);
      e.info.predefined = true;
      e.filled = true;
      e.filled_with_job = initialized();
    }
    return &e.info;
  }
  if (!may_be_object<Info>(h)) return nullptr;
  auto* info = reinterpret_cast<Info*>(h);
  return info->magic == kInfoMagic ? info : nullptr;
}

MPI_Info info_handle(Info* info) {
  if (!info) return MPI_INFO_NULL;
  if (info == &env_info().info) return MPI_INFO_ENV;
  return reinterpret_cast<MPI_Info>(info);
}

Info* info_new() { return new Info; }

Info* info_dup(const Info* info) {
  Info* copy = new Info;
  if (info) copy->entries = info->entries;
  return copy;
}

void info_free(Info* info) {
  if (!info || info->predefined) return;
  info->magic = 0;  // a stale handle is then rejected where detectable
  delete info;
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "MPI_THREAD_SINGLE";
  }
}

bool info_get_bool(const Info* info, std::string_view key, bool fallback) {
  const std::string* v = info ? info->find(key) : nullptr;
  if (!v) return fallback;
  std::string lower;
  for (char c : *v) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "true" || lower == "1" || lower == "yes") return true;
  if (lower == "false" || lower == "0" || lower == "no") return false;
  return fallback;
}

long long info_get_int(const Info* info, std::string_view key, long long fallback) {
  const std::string* v = info ? info->find(key) : nullptr;
  if (!v || v->empty()) return fallback;
  errno = 0;
  char* end = nullptr;
  long long n = std::strtoll(v->c_str(), &end, 0);
  return errno == 0 && end && *end == '\0' ? n : fallback;
}

}  // namespace axon::mpi

using namespace axon;
using namespace axon::mpi;

#define AXON_INFO_OR_RAISE(var, handle, fn)                 \
  Info* var = info_from_handle(handle);                     \
  if (!var) return raise_self(MPI_ERR_INFO, fn, "invalid info object")

#define AXON_CHECK_KEY(key, fn)                                                                  \
  do {                                                                                           \
    int axon_key_rc_ = check_key(key);                                                           \
    if (axon_key_rc_ != MPI_SUCCESS)                                                             \
      return raise_self(axon_key_rc_, fn,                                                        \
                        key ? "key is empty or longer than MPI_MAX_INFO_KEY - 1 characters"      \
                            : "key is NULL");                                                    \
  } while (0)

AXON_API(int, MPI_Info_create, (MPI_Info * info)) {
  if (!info) return raise_self(MPI_ERR_ARG, "MPI_Info_create", "info is NULL");
  *info = info_handle(info_new());
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Info_create_env, (int argc, char* argv[], MPI_Info* info)) {
  if (!info) return raise_self(MPI_ERR_ARG, "MPI_Info_create_env", "info is NULL");
  // The command line given here when it is main's own vector (at most main's
  // argc entries are read) or a plausible array of the caller's; otherwise
  // (argc 0 or out of range, argv NULL) this process's own, as MPICH does:
  // argc/argv are a description of the command line, not data to trust.
  std::vector<std::string> args;
  int usable = 0;
  if (argv && argc > 0) {
    if (argv == main_argv) usable = std::min(argc, main_argc);
    else if (argc <= kMaxForeignArgc) usable = argc;
  }
  for (int i = 0; i < usable; ++i) args.emplace_back(argv[i] ? argv[i] : "");
  if (args.empty()) args = own_command_line();
  Info* created = info_new();
  fill_env(created, args, false);
  *info = info_handle(created);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Info_set, (MPI_Info info, const char* key, const char* value)) {
  AXON_INFO_OR_RAISE(i, info, "MPI_Info_set");
  if (i->predefined) return raise_self(MPI_ERR_INFO, "MPI_Info_set", "MPI_INFO_ENV cannot be modified");
  AXON_CHECK_KEY(key, "MPI_Info_set");
  if (!value) return raise_self(MPI_ERR_ARG, "MPI_Info_set", "value is NULL");
  long n = bounded_length(value, MPI_MAX_INFO_VAL);
  if (n < 0) return raise_self(MPI_ERR_INFO_VALUE, "MPI_Info_set", "value longer than MPI_MAX_INFO_VAL");
  i->set(key, std::string_view(value, static_cast<size_t>(n)));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Info_delete, (MPI_Info info, const char* key)) {
  AXON_INFO_OR_RAISE(i, info, "MPI_Info_delete");
  if (i->predefined) return raise_self(MPI_ERR_INFO, "MPI_Info_delete", "MPI_INFO_ENV cannot be modified");
  AXON_CHECK_KEY(key, "MPI_Info_delete");
  if (!i->erase(key)) return raise_self(MPI_ERR_INFO_NOKEY, "MPI_Info_delete", "key is not set");
  return MPI_SUCCESS;
}

// MPI-4: *buflen in is the buffer size (room for the terminating NUL
// included); out, the value's length plus one. A value that does not fit is
// truncated to buflen-1 characters; with buflen 0 nothing is written.
AXON_API(int, MPI_Info_get_string, (MPI_Info info, const char* key, int* buflen, char* value, int* flag)) {
  AXON_INFO_OR_RAISE(i, info, "MPI_Info_get_string");
  AXON_CHECK_KEY(key, "MPI_Info_get_string");
  if (!buflen || !flag) return raise_self(MPI_ERR_ARG, "MPI_Info_get_string", "buflen or flag is NULL");
  if (*buflen < 0 || (*buflen > 0 && !value))
    return raise_self(MPI_ERR_ARG, "MPI_Info_get_string", "negative buflen or NULL value");
  const std::string* v = i->find(key);
  if (!v) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  if (*buflen > 0) {
    size_t n = std::min(v->size(), static_cast<size_t>(*buflen) - 1);
    std::memcpy(value, v->data(), n);
    value[n] = '\0';
  }
  *buflen = static_cast<int>(v->size()) + 1;
  *flag = 1;
  return MPI_SUCCESS;
}

// Deprecated (MPI-4.0): valuelen excludes the NUL, so up to valuelen + 1
// characters are written.
AXON_API(int, MPI_Info_get, (MPI_Info info, const char* key, int valuelen, char* value, int* flag)) {
  AXON_INFO_OR_RAISE(i, info, "MPI_Info_get");
  AXON_CHECK_KEY(key, "MPI_Info_get");
  if (!flag || !value || valuelen < 0) return raise_self(MPI_ERR_ARG, "MPI_Info_get", "invalid value/valuelen/flag");
  const std::string* v = i->find(key);
  *flag = v ? 1 : 0;
  if (v) {
    size_t n = std::min(v->size(), static_cast<size_t>(valuelen));
    std::memcpy(value, v->data(), n);
    value[n] = '\0';
  }
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Info_get_valuelen, (MPI_Info info, const char* key, int* valuelen, int* flag)) {
  AXON_INFO_OR_RAISE(i, info, "MPI_Info_get_valuelen");
  AXON_CHECK_KEY(key, "MPI_Info_get_valuelen");
  if (!valuelen || !flag) return raise_self(MPI_ERR_ARG, "MPI_Info_get_valuelen", "NULL argument");
  const std::string* v = i->find(key);
  *flag = v ? 1 : 0;
  if (v) *valuelen = static_cast<int>(v->size());
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Info_get_nkeys, (MPI_Info info, int* nkeys)) {
  AXON_INFO_OR_RAISE(i, info, "MPI_Info_get_nkeys");
  if (!nkeys) return raise_self(MPI_ERR_ARG, "MPI_Info_get_nkeys", "nkeys is NULL");
  *nkeys = i->nkeys();
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Info_get_nthkey, (MPI_Info info, int n, char* key)) {
  AXON_INFO_OR_RAISE(i, info, "MPI_Info_get_nthkey");
  if (!key) return raise_self(MPI_ERR_ARG, "MPI_Info_get_nthkey", "key is NULL");
  if (n < 0 || n >= i->nkeys()) return raise_self(MPI_ERR_ARG, "MPI_Info_get_nthkey", "n is out of range");
  const std::string& k = i->entries[static_cast<size_t>(n)].first;
  std::memcpy(key, k.c_str(), k.size() + 1);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Info_dup, (MPI_Info info, MPI_Info* newinfo)) {
  AXON_INFO_OR_RAISE(i, info, "MPI_Info_dup");
  if (!newinfo) return raise_self(MPI_ERR_ARG, "MPI_Info_dup", "newinfo is NULL");
  *newinfo = info_handle(info_dup(i));
  return MPI_SUCCESS;
}

AXON_API(int, MPI_Info_free, (MPI_Info * info)) {
  if (!info) return raise_self(MPI_ERR_ARG, "MPI_Info_free", "info is NULL");
  AXON_INFO_OR_RAISE(i, *info, "MPI_Info_free");
  if (i->predefined) return raise_self(MPI_ERR_INFO, "MPI_Info_free", "MPI_INFO_ENV cannot be freed");
  info_free(i);
  *info = MPI_INFO_NULL;
  return MPI_SUCCESS;
}
