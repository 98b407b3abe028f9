// The MPI tool information interface (MPI_T, MPI-4.1 chapter 15).
//
// - Control variables: every AXON_* parameter (src/base/param.h). Most are
//   read-only (MPI_T_SCOPE_READONLY: read from the environment once). The
//   writable ones (the collectives' AXON_COLL_<NAME>_ALGORITHM) are enums of
//   MPI_T_SCOPE_ALL_EQ: a write takes effect at the process's next call, and
//   every process must write the same value at the same point of its
//   sequence of collective calls. Enum parameters have an MPI_T enumeration
//   (item i: value i, named after the choice).
// - Performance variables: every Counter (src/base/counter.h): messages and
//   bytes per transport, eager / rendezvous sends, unexpected messages.
// - Categories: one per layer, named after the variables' common prefix
//   (AXON_BTL_SM_* and axon_btl_sm_* are in "btl_sm").
// - Events: see tool_events.cpp and src/diag/events.cpp; each event is
//   listed in the category of its layer, and its enumerations (transports,
//   protocols) are MPI_T enumerations like the parameters'.
//
// MPI_T may be used before MPI_Init and after MPI_Finalize; every call except
// MPI_T_init_thread needs MPI_T to be initialized.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "base/counter.h"
#include "base/param.h"
#include "diag/events.h"
#include "mpi/api.h"
#include "mpi/tool.h"

namespace {
std::mutex t_lock;  // MPI_T may be called from any thread
int t_init_count = 0;
}  // namespace

namespace axon::mpi::tool {

bool initialized() {
  {
    std::lock_guard<std::mutex> lock(t_lock);
    if (t_init_count == 0) return false;
  }
  axon::diag::events::deliver_deferred();
  return true;
}

// At most *len-1 characters and a terminating null; *len becomes the full
// length including the null. A zero *len or null buffer only returns the length.
void copy_string(const std::string& text, char* buf, int* len) {
  if (!len) return;
  int full = static_cast<int>(text.size()) + 1;
  if (buf && *len > 0) {
    int n = std::min(*len - 1, static_cast<int>(text.size()));
    std::memcpy(buf, text.data(), static_cast<size_t>(n));
    buf[n] = '\0';
  }
  *len = full;
}

}  // namespace axon::mpi::tool

namespace {
using axon::mpi::tool::copy_string;

const std::vector<axon::Param*>& cvars() { return axon::Param::all(); }
const std::vector<const axon::Counter*>& pvars() { return axon::Counter::all(); }

bool valid_cvar(int i) { return i >= 0 && i < static_cast<int>(cvars().size()); }
bool valid_pvar(int i) { return i >= 0 && i < static_cast<int>(pvars().size()); }

// The MPI_T interface allows only MPI_INT, MPI_UNSIGNED, MPI_UNSIGNED_LONG,
// MPI_UNSIGNED_LONG_LONG, MPI_COUNT, MPI_CHAR and MPI_DOUBLE as variable
// types (MPI-4.1, tool information interface): a signed 64-bit value is an
// MPI_COUNT, not an MPI_LONG_LONG.
MPI_Datatype cvar_datatype(const axon::Param& p) {
  switch (p.kind()) {
    case axon::Param::Kind::Integer:
    case axon::Param::Kind::Size: return MPI_COUNT;
    case axon::Param::Kind::Boolean:
    case axon::Param::Kind::Enum: return MPI_INT;  // (MPI_T requires MPI_INT for enumerations)
    case axon::Param::Kind::String: return MPI_CHAR;
  }
  return MPI_CHAR;
}

// ---- enumerations --------------------------------------------------------------
// One per EnumParam, built once like the categories below; an MPI_T_enum is
// the address of its entry, so a handle is valid exactly when it is one of
// these addresses (enum_param_of compares, never dereferences).
struct EnumType {
  const axon::EnumParam* param;
};

const std::vector<EnumType>& enum_types() {
  static const std::vector<EnumType> built = [] {
    std::vector<EnumType> out;
    for (const axon::Param* p : cvars())
      if (p->kind() == axon::Param::Kind::Enum) out.push_back({static_cast<const axon::EnumParam*>(p)});
    return out;
  }();
  return built;
}

MPI_T_enum enum_handle_of(const axon::Param& p) {
  for (const EnumType& t : enum_types())
    if (t.param == &p) return reinterpret_cast<MPI_T_enum>(const_cast<EnumType*>(&t));
  return MPI_T_ENUM_NULL;
}

const axon::EnumParam* enum_param_of(MPI_T_enum handle) {
  for (const EnumType& t : enum_types())
    if (reinterpret_cast<MPI_T_enum>(const_cast<EnumType*>(&t)) == handle) return t.param;
  return nullptr;
}

// The description listed by axon_info --params: the help, what values are
// allowed, and (last, test/tools/params_listed.sh looks for it) the default.
std::string cvar_description(const axon::Param& p) {
  std::string text = p.help();
  std::string allowed = p.constraint_text();
  if (!allowed.empty()) text += " [" + allowed + "]";
  return text + " (default: " + p.default_text() + ")";
}

// Strings read through a control-variable handle hold at most this many
// characters including the terminating null (the handle's count).
constexpr int kStringCvarCount = 1024;

// ---- categories ---------------------------------------------------------------
// The category of a variable: its layer, the first word after "axon_"
// (AXON_COLL_BCAST_ALGORITHM -> "coll", axon_pml_eager_sends -> "pml"), and
// for transports the transport too (AXON_BTL_SM_EAGER_LIMIT -> "btl_sm");
// names with a single word after the prefix go to "general".
std::string category_of(const char* variable) {
  std::string name(variable);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name.rfind("axon_", 0) == 0) name.erase(0, 5);
  std::vector<std::string> words;
  for (size_t start = 0;;) {
    size_t end = name.find('_', start);
    words.push_back(name.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (words[0] == "btl") return words.size() >= 3 ? "btl_" + words[1] : "btl";
  return words.size() >= 2 ? words[0] : "general";
}

struct Category {
  std::string name;
  std::vector<int> cvars, pvars, events;
};

// Built once, after every static Param/Counter has registered (MPI_T calls
// run from main at the earliest).
const std::vector<Category>& categories() {
  static const std::vector<Category> built = [] {
    std::map<std::string, Category> by_name;
    for (size_t i = 0; i < cvars().size(); ++i) {
      std::string c = category_of(cvars()[i]->name());
      by_name[c].name = c;
      by_name[c].cvars.push_back(static_cast<int>(i));
    }
    for (size_t i = 0; i < pvars().size(); ++i) {
      std::string c = category_of(pvars()[i]->name());
      by_name[c].name = c;
      by_name[c].pvars.push_back(static_cast<int>(i));
    }
    for (int i = 0; i < axon::diag::events::num_events(); ++i) {
      std::string c = axon::diag::events::event_type(i).category;
      by_name[c].name = c;
      by_name[c].events.push_back(i);
    }
    std::vector<Category> out;
    for (auto& [name, category] : by_name) out.push_back(std::move(category));
    return out;
  }();
  return built;
}

bool valid_category(int i) { return i >= 0 && i < static_cast<int>(categories().size()); }

void copy_indices(const std::vector<int>& from, int len, int indices[]) {
  for (int i = 0; i < len && i < static_cast<int>(from.size()); ++i) indices[i] = from[static_cast<size_t>(i)];
}

// ---- handles -----------------------------------------------------------------------
constexpr uint32_t kCvarHandleMagic = 0x43564152u;  // "CVAR"
constexpr uint32_t kSessionMagic = 0x50534553u;     // "PSES"
constexpr uint32_t kPvarHandleMagic = 0x50564152u;  // "PVAR"

struct CvarHandle {
  uint32_t magic = kCvarHandleMagic;
  int index;
};

struct PvarHandle;
struct PvarSession {
  uint32_t magic = kSessionMagic;
  std::vector<PvarHandle*> handles;
};

// Counters are continuous (always counting); a handle reads the change since
// it was allocated or last reset. Levels read the current value.
struct PvarHandle {
  uint32_t magic = kPvarHandleMagic;
  PvarSession* session;
  int index;
  uint64_t baseline = 0;
};

CvarHandle* cvar_handle_of(MPI_T_cvar_handle h) {
  auto* p = reinterpret_cast<CvarHandle*>(h);
  return p && p->magic == kCvarHandleMagic ? p : nullptr;
}
PvarSession* session_of(MPI_T_pvar_session s) {
  auto* p = reinterpret_cast<PvarSession*>(s);
  return p && p->magic == kSessionMagic ? p : nullptr;
}
PvarHandle* pvar_handle_of(PvarSession* s, MPI_T_pvar_handle h) {
  if (h == MPI_T_PVAR_HANDLE_NULL || h == MPI_T_PVAR_ALL_HANDLES) return nullptr;
  auto* p = reinterpret_cast<PvarHandle*>(h);
  return p->magic == kPvarHandleMagic && p->session == s ? p : nullptr;
}

// The handle of a call on (session, handle), or MPI_T_ERR_INVALID_SESSION /
// MPI_T_ERR_INVALID_HANDLE when either is not a live one of ours.
int find_handle(MPI_T_pvar_session session, MPI_T_pvar_handle handle, PvarHandle** out) {
  PvarSession* s = session_of(session);
  if (!s) return MPI_T_ERR_INVALID_SESSION;
  *out = pvar_handle_of(s, handle);
  return *out ? MPI_SUCCESS : MPI_T_ERR_INVALID_HANDLE;
}

uint64_t pvar_value(const PvarHandle& h) {
  const axon::Counter& c = *pvars()[static_cast<size_t>(h.index)];
  uint64_t now = c.value();
  return c.counter_class() == axon::Counter::Class::Counter ? now - h.baseline : now;
}

int mpi_class_of(const axon::Counter& c) {
  return c.counter_class() == axon::Counter::Class::Counter ? MPI_T_PVAR_CLASS_COUNTER : MPI_T_PVAR_CLASS_LEVEL;
}

}  // namespace

// ---- set-up ------------------------------------------------------------------------

AXON_API(int, MPI_T_init_thread, (int required, int* provided)) {
  if (!provided) return MPI_ERR_ARG;
  std::lock_guard<std::mutex> lock(t_lock);
  ++t_init_count;
  *provided = required < MPI_THREAD_SINGLE || required > MPI_THREAD_MULTIPLE ? MPI_THREAD_SINGLE : required;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_finalize, (void)) {
  std::lock_guard<std::mutex> lock(t_lock);
  if (t_init_count == 0) return MPI_T_ERR_NOT_INITIALIZED;
  --t_init_count;
  return MPI_SUCCESS;
}

// ---- control variables --------------------------------------------------------------

AXON_API(int, MPI_T_cvar_get_num, (int* num_cvar)) {
  AXON_T_REQUIRE_INIT();
  if (!num_cvar) return MPI_ERR_ARG;
  *num_cvar = static_cast<int>(cvars().size());
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_cvar_get_info, (int cvar_index, char* name, int* name_len, int* verbosity,
                                    MPI_Datatype* datatype, MPI_T_enum* enumtype, char* desc, int* desc_len,
                                    int* bind, int* scope)) {
  AXON_T_REQUIRE_INIT();
  if (!valid_cvar(cvar_index)) return MPI_T_ERR_INVALID_INDEX;
  const axon::Param& p = *cvars()[static_cast<size_t>(cvar_index)];
  copy_string(p.name(), name, name_len);
  copy_string(cvar_description(p), desc, desc_len);
  if (verbosity) *verbosity = MPI_T_VERBOSITY_USER_BASIC;
  if (datatype) *datatype = cvar_datatype(p);
  if (enumtype) *enumtype = p.kind() == axon::Param::Kind::Enum ? enum_handle_of(p) : MPI_T_ENUM_NULL;
  if (bind) *bind = MPI_T_BIND_NO_OBJECT;
  // Writable parameters choose collective algorithms: every process must
  // choose alike.
  if (scope) *scope = p.writable() ? MPI_T_SCOPE_ALL_EQ : MPI_T_SCOPE_READONLY;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_cvar_get_index, (const char* name, int* cvar_index)) {
  AXON_T_REQUIRE_INIT();
  if (!name || !cvar_index) return MPI_ERR_ARG;
  for (size_t i = 0; i < cvars().size(); ++i)
    if (std::strcmp(cvars()[i]->name(), name) == 0) {
      *cvar_index = static_cast<int>(i);
      return MPI_SUCCESS;
    }
  return MPI_T_ERR_INVALID_NAME;
}

AXON_API(int, MPI_T_cvar_handle_alloc, (int cvar_index, void* obj_handle, MPI_T_cvar_handle* handle, int* count)) {
  (void)obj_handle;  // no Axon control variable is bound to an object
  AXON_T_REQUIRE_INIT();
  if (!valid_cvar(cvar_index)) return MPI_T_ERR_INVALID_INDEX;
  if (!handle || !count) return MPI_ERR_ARG;
  const axon::Param& p = *cvars()[static_cast<size_t>(cvar_index)];
  *count = p.kind() == axon::Param::Kind::String ? kStringCvarCount : 1;
  *handle = reinterpret_cast<MPI_T_cvar_handle>(new CvarHandle{kCvarHandleMagic, cvar_index});
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_cvar_handle_free, (MPI_T_cvar_handle * handle)) {
  AXON_T_REQUIRE_INIT();
  if (!handle) return MPI_ERR_ARG;
  CvarHandle* h = cvar_handle_of(*handle);
  if (!h) return MPI_T_ERR_INVALID_HANDLE;
  h->magic = 0;
  delete h;
  *handle = MPI_T_CVAR_HANDLE_NULL;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_cvar_read, (MPI_T_cvar_handle handle, void* buf)) {
  AXON_T_REQUIRE_INIT();
  CvarHandle* h = cvar_handle_of(handle);
  if (!h) return MPI_T_ERR_INVALID_HANDLE;
  if (!buf) return MPI_ERR_ARG;
  const axon::Param& p = *cvars()[static_cast<size_t>(h->index)];
  switch (p.kind()) {
    case axon::Param::Kind::Integer:
    case axon::Param::Kind::Size: {
      long long v = static_cast<const axon::IntParam&>(p).get();
      std::memcpy(buf, &v, sizeof v);
      break;
    }
    case axon::Param::Kind::Boolean: {
      int v = static_cast<const axon::BoolParam&>(p).get() ? 1 : 0;
      std::memcpy(buf, &v, sizeof v);
      break;
    }
    case axon::Param::Kind::Enum: {
      int v = static_cast<const axon::EnumParam&>(p).get();
      std::memcpy(buf, &v, sizeof v);
      break;
    }
    case axon::Param::Kind::String: {
      int len = kStringCvarCount;
      copy_string(static_cast<const axon::StringParam&>(p).get(), static_cast<char*>(buf), &len);
      break;
    }
  }
  return MPI_SUCCESS;
}

// Only enum parameters are writable (an MPI_INT item value); the others are
// read once, from the environment.
AXON_API(int, MPI_T_cvar_write, (MPI_T_cvar_handle handle, const void* buf)) {
  AXON_T_REQUIRE_INIT();
  CvarHandle* h = cvar_handle_of(handle);
  if (!h) return MPI_T_ERR_INVALID_HANDLE;
  if (!buf) return MPI_ERR_ARG;
  axon::Param& p = *cvars()[static_cast<size_t>(h->index)];
  if (!p.writable() || p.kind() != axon::Param::Kind::Enum) return MPI_T_ERR_CVAR_SET_NEVER;
  int v = 0;
  std::memcpy(&v, buf, sizeof v);
  // A value that is no item of the enumeration: "bad parameter value".
  return static_cast<axon::EnumParam&>(p).write(v) ? MPI_SUCCESS : MPI_T_ERR_INVALID;
}

// ---- enumerations: one per enum parameter ---------------------------------------------------

namespace {
// An MPI_T enumeration: an enum parameter's, or one of the event elements'
// (transports, protocols), whose handles are the addresses of their entries
// in axon::diag::events::enumerations(). Item i has value i in both.
struct Enumeration {
  const char* name;
  const std::vector<const char*>* items;
};

bool enumeration_of(MPI_T_enum handle, Enumeration* out) {
  for (const auto& e : axon::diag::events::enumerations())
    if (reinterpret_cast<MPI_T_enum>(const_cast<axon::diag::events::Enumeration*>(&e)) == handle) {
      *out = {e.name, &e.items};
      return true;
    }
  if (const axon::EnumParam* p = enum_param_of(handle)) {
    *out = {p->name(), &p->names()};
    return true;
  }
  return false;
}
}  // namespace

AXON_API(int, MPI_T_enum_get_info, (MPI_T_enum enumtype, int* num, char* name, int* name_len)) {
  AXON_T_REQUIRE_INIT();
  Enumeration e;
  if (!enumeration_of(enumtype, &e)) return MPI_T_ERR_INVALID_HANDLE;
  if (num) *num = static_cast<int>(e.items->size());
  copy_string(e.name, name, name_len);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_enum_get_item, (MPI_T_enum enumtype, int indx, int* value, char* name, int* name_len)) {
  AXON_T_REQUIRE_INIT();
  Enumeration e;
  if (!enumeration_of(enumtype, &e)) return MPI_T_ERR_INVALID_HANDLE;
  if (indx < 0 || indx >= static_cast<int>(e.items->size())) return MPI_T_ERR_INVALID_INDEX;
  if (value) *value = indx;
  copy_string((*e.items)[static_cast<size_t>(indx)], name, name_len);
  return MPI_SUCCESS;
}

// ---- performance variables --------------------------------------------------------------

AXON_API(int, MPI_T_pvar_get_num, (int* num_pvar)) {
  AXON_T_REQUIRE_INIT();
  if (!num_pvar) return MPI_ERR_ARG;
  *num_pvar = static_cast<int>(pvars().size());
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_pvar_get_info, (int pvar_index, char* name, int* name_len, int* verbosity, int* var_class,
                                    MPI_Datatype* datatype, MPI_T_enum* enumtype, char* desc, int* desc_len,
                                    int* bind, int* readonly, int* continuous, int* atomic)) {
  AXON_T_REQUIRE_INIT();
  if (!valid_pvar(pvar_index)) return MPI_T_ERR_INVALID_INDEX;
  const axon::Counter& c = *pvars()[static_cast<size_t>(pvar_index)];
  copy_string(c.name(), name, name_len);
  copy_string(c.help(), desc, desc_len);
  if (verbosity) *verbosity = MPI_T_VERBOSITY_USER_BASIC;
  if (var_class) *var_class = mpi_class_of(c);
  if (datatype) *datatype = MPI_UNSIGNED_LONG_LONG;
  if (enumtype) *enumtype = MPI_T_ENUM_NULL;
  if (bind) *bind = MPI_T_BIND_NO_OBJECT;
  if (readonly) *readonly = 1;
  if (continuous) *continuous = 1;
  if (atomic) *atomic = 0;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_pvar_get_index, (const char* name, int var_class, int* pvar_index)) {
  AXON_T_REQUIRE_INIT();
  if (!name || !pvar_index) return MPI_ERR_ARG;
  for (size_t i = 0; i < pvars().size(); ++i)
    if (std::strcmp(pvars()[i]->name(), name) == 0 && mpi_class_of(*pvars()[i]) == var_class) {
      *pvar_index = static_cast<int>(i);
      return MPI_SUCCESS;
    }
  return MPI_T_ERR_INVALID_NAME;
}

AXON_API(int, MPI_T_pvar_session_create, (MPI_T_pvar_session * session)) {
  AXON_T_REQUIRE_INIT();
  if (!session) return MPI_ERR_ARG;
  *session = reinterpret_cast<MPI_T_pvar_session>(new PvarSession);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_pvar_session_free, (MPI_T_pvar_session * session)) {
  AXON_T_REQUIRE_INIT();
  if (!session) return MPI_ERR_ARG;
  PvarSession* s = session_of(*session);
  if (!s) return MPI_T_ERR_INVALID_SESSION;
  for (PvarHandle* h : s->handles) {
    h->magic = 0;
    delete h;
  }
  s->magic = 0;
  delete s;
  *session = MPI_T_PVAR_SESSION_NULL;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_pvar_handle_alloc, (MPI_T_pvar_session session, int pvar_index, void* obj_handle,
                                        MPI_T_pvar_handle* handle, int* count)) {
  (void)obj_handle;
  AXON_T_REQUIRE_INIT();
  PvarSession* s = session_of(session);
  if (!s) return MPI_T_ERR_INVALID_SESSION;
  if (!valid_pvar(pvar_index)) return MPI_T_ERR_INVALID_INDEX;
  if (!handle || !count) return MPI_ERR_ARG;
  auto* h = new PvarHandle{kPvarHandleMagic, s, pvar_index, 0};
  s->handles.push_back(h);
  *count = 1;
  *handle = reinterpret_cast<MPI_T_pvar_handle>(h);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_pvar_handle_free, (MPI_T_pvar_session session, MPI_T_pvar_handle* handle)) {
  AXON_T_REQUIRE_INIT();
  PvarSession* s = session_of(session);
  if (!s) return MPI_T_ERR_INVALID_SESSION;
  if (!handle) return MPI_ERR_ARG;
  PvarHandle* h = pvar_handle_of(s, *handle);
  if (!h) return MPI_T_ERR_INVALID_HANDLE;
  std::erase(s->handles, h);
  h->magic = 0;
  delete h;
  *handle = MPI_T_PVAR_HANDLE_NULL;
  return MPI_SUCCESS;
}

// Every Axon performance variable is continuous: it cannot be started or
// stopped. MPI_T_PVAR_ALL_HANDLES is accepted (and does nothing) because it
// applies only to the variables that can be.
namespace {
int start_stop(MPI_T_pvar_session session, MPI_T_pvar_handle handle) {
  PvarSession* s = session_of(session);
  if (!s) return MPI_T_ERR_INVALID_SESSION;
  if (handle == MPI_T_PVAR_ALL_HANDLES) return MPI_SUCCESS;
  if (!pvar_handle_of(s, handle)) return MPI_T_ERR_INVALID_HANDLE;
  return MPI_T_ERR_PVAR_NO_STARTSTOP;
}
}  // namespace

AXON_API(int, MPI_T_pvar_start, (MPI_T_pvar_session session, MPI_T_pvar_handle handle)) {
  AXON_T_REQUIRE_INIT();
  return start_stop(session, handle);
}

AXON_API(int, MPI_T_pvar_stop, (MPI_T_pvar_session session, MPI_T_pvar_handle handle)) {
  AXON_T_REQUIRE_INIT();
  return start_stop(session, handle);
}

AXON_API(int, MPI_T_pvar_read, (MPI_T_pvar_session session, MPI_T_pvar_handle handle, void* buf)) {
  AXON_T_REQUIRE_INIT();
  PvarHandle* h = nullptr;
  if (int rc = find_handle(session, handle, &h)) return rc;
  if (!buf) return MPI_ERR_ARG;
  unsigned long long v = pvar_value(*h);
  std::memcpy(buf, &v, sizeof v);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_pvar_write, (MPI_T_pvar_session session, MPI_T_pvar_handle handle, const void* buf)) {
  (void)buf;
  AXON_T_REQUIRE_INIT();
  PvarHandle* h = nullptr;
  if (int rc = find_handle(session, handle, &h)) return rc;
  return MPI_T_ERR_PVAR_NO_WRITE;
}

namespace {
void reset_one(PvarHandle* h) {
  const axon::Counter& c = *pvars()[static_cast<size_t>(h->index)];
  if (c.counter_class() == axon::Counter::Class::Counter) h->baseline = c.value();
}
}  // namespace

AXON_API(int, MPI_T_pvar_reset, (MPI_T_pvar_session session, MPI_T_pvar_handle handle)) {
  AXON_T_REQUIRE_INIT();
  PvarSession* s = session_of(session);
  if (!s) return MPI_T_ERR_INVALID_SESSION;
  if (handle == MPI_T_PVAR_ALL_HANDLES) {
    for (PvarHandle* h : s->handles) reset_one(h);
    return MPI_SUCCESS;
  }
  PvarHandle* h = pvar_handle_of(s, handle);
  if (!h) return MPI_T_ERR_INVALID_HANDLE;
  // Levels are current amounts: resetting them is not possible.
  if (pvars()[static_cast<size_t>(h->index)]->counter_class() != axon::Counter::Class::Counter)
    return MPI_T_ERR_PVAR_NO_WRITE;
  reset_one(h);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_pvar_readreset, (MPI_T_pvar_session session, MPI_T_pvar_handle handle, void* buf)) {
  AXON_T_REQUIRE_INIT();
  PvarHandle* h = nullptr;
  if (int rc = find_handle(session, handle, &h)) return rc;
  if (!buf) return MPI_ERR_ARG;
  if (pvars()[static_cast<size_t>(h->index)]->counter_class() != axon::Counter::Class::Counter)
    return MPI_T_ERR_PVAR_NO_WRITE;
  // Read and baseline from one sample, so no update falls between them.
  uint64_t now = pvars()[static_cast<size_t>(h->index)]->value();
  unsigned long long v = now - h->baseline;
  h->baseline = now;
  std::memcpy(buf, &v, sizeof v);
  return MPI_SUCCESS;
}

// ---- categories ----------------------------------------------------------------------------

AXON_API(int, MPI_T_category_get_num, (int* num_cat)) {
  AXON_T_REQUIRE_INIT();
  if (!num_cat) return MPI_ERR_ARG;
  *num_cat = static_cast<int>(categories().size());
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_category_get_info, (int cat_index, char* name, int* name_len, char* desc, int* desc_len,
                                        int* num_cvars, int* num_pvars, int* num_categories)) {
  AXON_T_REQUIRE_INIT();
  if (!valid_category(cat_index)) return MPI_T_ERR_INVALID_INDEX;
  const Category& c = categories()[static_cast<size_t>(cat_index)];
  copy_string(c.name, name, name_len);
  copy_string("Axon variables of " + c.name, desc, desc_len);
  if (num_cvars) *num_cvars = static_cast<int>(c.cvars.size());
  if (num_pvars) *num_pvars = static_cast<int>(c.pvars.size());
  if (num_categories) *num_categories = 0;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_category_get_index, (const char* name, int* cat_index)) {
  AXON_T_REQUIRE_INIT();
  if (!name || !cat_index) return MPI_ERR_ARG;
  for (size_t i = 0; i < categories().size(); ++i)
    if (categories()[i].name == name) {
      *cat_index = static_cast<int>(i);
      return MPI_SUCCESS;
    }
  return MPI_T_ERR_INVALID_NAME;
}

AXON_API(int, MPI_T_category_get_cvars, (int cat_index, int len, int indices[])) {
  AXON_T_REQUIRE_INIT();
  if (!valid_category(cat_index)) return MPI_T_ERR_INVALID_INDEX;
  if (len < 0 || (len > 0 && !indices)) return MPI_ERR_ARG;
  copy_indices(categories()[static_cast<size_t>(cat_index)].cvars, len, indices);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_category_get_pvars, (int cat_index, int len, int indices[])) {
  AXON_T_REQUIRE_INIT();
  if (!valid_category(cat_index)) return MPI_T_ERR_INVALID_INDEX;
  if (len < 0 || (len > 0 && !indices)) return MPI_ERR_ARG;
  copy_indices(categories()[static_cast<size_t>(cat_index)].pvars, len, indices);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_category_get_categories, (int cat_index, int len, int indices[])) {
  (void)indices;
  AXON_T_REQUIRE_INIT();
  if (!valid_category(cat_index)) return MPI_T_ERR_INVALID_INDEX;
  if (len < 0) return MPI_ERR_ARG;
  return MPI_SUCCESS;  // categories are flat: none has sub-categories
}

AXON_API(int, MPI_T_category_get_num_events, (int cat_index, int* num_events)) {
  AXON_T_REQUIRE_INIT();
  if (!valid_category(cat_index)) return MPI_T_ERR_INVALID_INDEX;
  if (!num_events) return MPI_ERR_ARG;
  *num_events = static_cast<int>(categories()[static_cast<size_t>(cat_index)].events.size());
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_category_get_events, (int cat_index, int len, int indices[])) {
  AXON_T_REQUIRE_INIT();
  if (!valid_category(cat_index)) return MPI_T_ERR_INVALID_INDEX;
  if (len < 0 || (len > 0 && !indices)) return MPI_ERR_ARG;
  copy_indices(categories()[static_cast<size_t>(cat_index)].events, len, indices);
  return MPI_SUCCESS;
}

// The set of variables and categories is fixed at build time.
AXON_API(int, MPI_T_category_changed, (int* update_number)) {
  AXON_T_REQUIRE_INIT();
  if (!update_number) return MPI_ERR_ARG;
  *update_number = 0;
  return MPI_SUCCESS;
}
