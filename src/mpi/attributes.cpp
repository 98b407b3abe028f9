// Attribute caching: keyvals, attributes on communicators / datatypes /
// windows, the predefined attributes, and the MPI_*_keyval / _attr entry
// points (with the deprecated MPI-1 forms).
#include "mpi/attributes.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "mpi/api.h"
#include "rte/rte.h"

namespace axon::mpi {

struct Keyval {
  AttrObject kind;
  bool predefined = false;
  // The ABI's predefined callbacks are the pointer values 0 ("null": don't
  // copy / do nothing) and 1 ("dup": copy the value), never real functions.
  uintptr_t copy_fn = 0;
  uintptr_t delete_fn = 0;
  void* extra_state = nullptr;
  int id = MPI_KEYVAL_INVALID;
};
using KeyvalRef = std::shared_ptr<Keyval>;

struct Attribute {
  KeyvalRef keyval;  // keeps a freed keyval alive while attributes use it
  void* value;
};

struct AttributeSet {
  std::vector<Attribute> list;  // in the order the attributes were first set
};

namespace {

constexpr uintptr_t kNullFn = 0;
constexpr uintptr_t kDupFn = 1;
// User keyvals are numbered from here: far from MPI_KEYVAL_INVALID (0) and
// the predefined keys (501.., 601..), and never reused, so a stale keyval
// handle is detected instead of silently naming a newer key.
constexpr int kFirstUserKeyval = 0x1000;

// One lock for the keyval table and every attribute set. It is recursive and
// held while callbacks run, because callbacks may call attribute functions.
std::recursive_mutex& lock() {
  static std::recursive_mutex m;
  return m;
}

struct Registry {
  std::map<int, KeyvalRef> keyvals;  // live (not freed) keyvals by handle
  // Freed keyvals that attributes still use. Freeing such a handle again is
  // a no-op, as in MPICH (its suite frees one keyval from a delete callback
  // and from the program): the handle stays meaningful until its last
  // attribute is deleted. Expired entries are pruned on each free.
  std::map<int, std::weak_ptr<Keyval>> retired;
  int next_id = kFirstUserKeyval;
};

Registry& registry() {
  static Registry r = [] {
    Registry reg;
    for (int k : {MPI_TAG_UB, MPI_IO, MPI_HOST, MPI_WTIME_IS_GLOBAL, MPI_UNIVERSE_SIZE, MPI_APPNUM,
                  MPI_LASTUSEDCODE}) {
      auto kv = std::make_shared<Keyval>();
      kv->kind = AttrObject::Comm, kv->predefined = true, kv->id = k;
      reg.keyvals[k] = kv;
    }
    for (int k : {MPI_WIN_BASE, MPI_WIN_DISP_UNIT, MPI_WIN_SIZE, MPI_WIN_CREATE_FLAVOR, MPI_WIN_MODEL}) {
      auto kv = std::make_shared<Keyval>();
      kv->kind = AttrObject::Win, kv->predefined = true, kv->id = k;
      reg.keyvals[k] = kv;
    }
    return reg;
  }();
  return r;
}

// Values of the communicator attributes MPI predefines. get_attr hands out
// pointers to these ints (C semantics: the attribute value is an int*).
struct PredefinedValues {
  int tag_ub = kTagUpperBound;
  int host = MPI_PROC_NULL;  // no distinguished host process
  int io = MPI_ANY_SOURCE;   // every process can do I/O
  // Ranks of one job share a node and CLOCK_MONOTONIC, but MPI_Wtime is not
  // promised to be synchronized once jobs span nodes: stay conservative.
  int wtime_is_global = 0;
  int universe_size = 1;
  int appnum = 0;
  bool appnum_set = false;  // no process specification for a singleton
  int last_used_code = MPI_ERR_LASTCODE;
  bool job_known = false;
};

PredefinedValues& predefined() {
  static PredefinedValues v;
  if (!v.job_known && initialized()) {
    const rte::Job& job = rte::job();
    v.universe_size = job.size;
    v.appnum_set = !job.singleton;
    v.appnum = rte::appnum();  // 0, or the application's index for MPI_Comm_spawn_multiple's children
    v.job_known = true;
  }
  return v;
}

KeyvalRef find_keyval(int id, AttrObject kind) {
  auto& kvs = registry().keyvals;
  auto it = kvs.find(id);
  if (it == kvs.end() || it->second->kind != kind) return nullptr;
  return it->second;
}

// The same, or a freed keyval that attributes still use: MPI-4.1 7.7.2 has
// the program delete those attributes with MPI_Comm_delete_attr (and read
// them) through a copy of the handle it kept, after freeing the keyval.
KeyvalRef find_keyval_in_use(int id, AttrObject kind) {
  if (KeyvalRef kv = find_keyval(id, kind)) return kv;
  auto& retired = registry().retired;
  auto it = retired.find(id);
  KeyvalRef kv = it != retired.end() ? it->second.lock() : nullptr;
  return kv && kv->kind == kind ? kv : nullptr;
}

AttributeSet* set_of(const AttrHost& h) {
  return h.typed ? *h.typed : static_cast<AttributeSet*>(*h.untyped);
}

AttributeSet* set_of_or_create(const AttrHost& h) {
  AttributeSet* s = set_of(h);
  if (s) return s;
  s = new AttributeSet;
  if (h.typed)
    *h.typed = s;
  else
    *h.untyped = s;
  return s;
}

void drop_set(const AttrHost& h) {
  delete set_of(h);
  if (h.typed)
    *h.typed = nullptr;
  else
    *h.untyped = nullptr;
}

Attribute* find_attr(AttributeSet* s, const Keyval* kv) {
  if (!s) return nullptr;
  for (Attribute& a : s->list)
    if (a.keyval.get() == kv) return &a;
  return nullptr;
}

int call_delete(const AttrHost& h, const Keyval& kv, void* value) {
  if (kv.delete_fn == kNullFn) return MPI_SUCCESS;
  switch (h.kind) {
    case AttrObject::Comm:
      return reinterpret_cast<MPI_Comm_delete_attr_function*>(kv.delete_fn)(
          static_cast<MPI_Comm>(h.handle), kv.id, value, kv.extra_state);
    case AttrObject::Type:
      return reinterpret_cast<MPI_Type_delete_attr_function*>(kv.delete_fn)(
          static_cast<MPI_Datatype>(h.handle), kv.id, value, kv.extra_state);
    case AttrObject::Win:
      return reinterpret_cast<MPI_Win_delete_attr_function*>(kv.delete_fn)(
          static_cast<MPI_Win>(h.handle), kv.id, value, kv.extra_state);
  }
  return MPI_ERR_INTERN;
}

int call_copy(const AttrHost& from, const Keyval& kv, void* value_in, void** value_out, int* flag) {
  *flag = 0;
  if (kv.copy_fn == kNullFn) return MPI_SUCCESS;
  if (kv.copy_fn == kDupFn) {
    *value_out = value_in;
    *flag = 1;
    return MPI_SUCCESS;
  }
  switch (from.kind) {
    case AttrObject::Comm:
      return reinterpret_cast<MPI_Comm_copy_attr_function*>(kv.copy_fn)(
          static_cast<MPI_Comm>(from.handle), kv.id, kv.extra_state, value_in, value_out, flag);
    case AttrObject::Type:
      return reinterpret_cast<MPI_Type_copy_attr_function*>(kv.copy_fn)(
          static_cast<MPI_Datatype>(from.handle), kv.id, kv.extra_state, value_in, value_out, flag);
    case AttrObject::Win:
      return reinterpret_cast<MPI_Win_copy_attr_function*>(kv.copy_fn)(
          static_cast<MPI_Win>(from.handle), kv.id, kv.extra_state, value_in, value_out, flag);
  }
  return MPI_ERR_INTERN;
}

// The value of a predefined communicator attribute, or nullptr when it is not
// set (MPI_APPNUM of a singleton).
int* predefined_comm_value(int keyval) {
  PredefinedValues& v = predefined();
  switch (keyval) {
    case MPI_TAG_UB: return &v.tag_ub;
    case MPI_HOST: return &v.host;
    case MPI_IO: return &v.io;
    case MPI_WTIME_IS_GLOBAL: return &v.wtime_is_global;
    case MPI_UNIVERSE_SIZE: return &v.universe_size;
    case MPI_APPNUM: return v.appnum_set ? &v.appnum : nullptr;
    case MPI_LASTUSEDCODE: return &v.last_used_code;
    default: return nullptr;
  }
}

int create_keyval(AttrObject kind, uintptr_t copy_fn, uintptr_t delete_fn, int* keyval, void* extra_state) {
  std::lock_guard<std::recursive_mutex> g(lock());
  Registry& reg = registry();
  if (reg.next_id == INT32_MAX) return MPI_ERR_OTHER;  // 2^31 keyvals: never in practice
  auto kv = std::make_shared<Keyval>();
  kv->kind = kind;
  kv->copy_fn = copy_fn;
  kv->delete_fn = delete_fn;
  kv->extra_state = extra_state;
  kv->id = reg.next_id++;
  reg.keyvals[kv->id] = kv;
  *keyval = kv->id;
  return MPI_SUCCESS;
}

// Freeing only retires the handle: attributes still using the keyval keep it
// (and its callbacks) alive until they are deleted.
int free_keyval(AttrObject kind, int* keyval) {
  std::lock_guard<std::recursive_mutex> g(lock());
  Registry& reg = registry();
  std::erase_if(reg.retired, [](const auto& entry) { return entry.second.expired(); });
  KeyvalRef kv = find_keyval(*keyval, kind);
  if (!kv) {
    // Already freed but still attached somewhere: nothing more to release.
    auto it = reg.retired.find(*keyval);
    KeyvalRef still = it != reg.retired.end() ? it->second.lock() : nullptr;
    if (!still || still->kind != kind) return MPI_ERR_KEYVAL;
    *keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
  }
  if (kv->predefined) return MPI_ERR_KEYVAL;
  reg.keyvals.erase(kv->id);
  reg.retired[kv->id] = kv;
  *keyval = MPI_KEYVAL_INVALID;
  return MPI_SUCCESS;
}

}  // namespace

AttrHost comm_attr_host(Comm* c) { return AttrHost{AttrObject::Comm, c->handle, &c->attributes, nullptr}; }

AttrHost type_attr_host(MPI_Datatype handle) {
  Datatype* t = datatype_from_handle(handle);
  return AttrHost{AttrObject::Type, handle, nullptr, &t->attributes};
}

int attr_set(AttrHost host, int keyval, void* value) {
  std::lock_guard<std::recursive_mutex> g(lock());
  KeyvalRef kv = find_keyval(keyval, host.kind);
  if (!kv || kv->predefined) return MPI_ERR_KEYVAL;
  if (Attribute* old = find_attr(set_of(host), kv.get())) {
    // Replacing a value deletes the old one first; if its delete callback
    // fails, the old value stays and the set fails with that error.
    int rc = call_delete(host, *kv, old->value);
    if (rc != MPI_SUCCESS) return rc;
    // The callback may have changed the set: look the entry up again.
    if ((old = find_attr(set_of(host), kv.get()))) {
      old->value = value;
      return MPI_SUCCESS;
    }
  }
  set_of_or_create(host)->list.push_back(Attribute{kv, value});
  return MPI_SUCCESS;
}

int attr_set_builtin(AttrHost host, int keyval, void* value) {
  std::lock_guard<std::recursive_mutex> g(lock());
  KeyvalRef kv = find_keyval(keyval, host.kind);
  if (!kv || !kv->predefined) return MPI_ERR_KEYVAL;
  if (Attribute* old = find_attr(set_of(host), kv.get()))
    old->value = value;
  else
    set_of_or_create(host)->list.push_back(Attribute{kv, value});
  return MPI_SUCCESS;
}

int attr_get(AttrHost host, int keyval, void* value_out, int* flag) {
  std::lock_guard<std::recursive_mutex> g(lock());
  KeyvalRef kv = find_keyval_in_use(keyval, host.kind);
  if (!kv) return MPI_ERR_KEYVAL;
  void* value = nullptr;
  bool found = false;
  if (kv->predefined && host.kind == AttrObject::Comm) {
    // MPI attaches these to MPI_COMM_WORLD; like MPICH, Axon answers on every
    // communicator (libraries query MPI_TAG_UB on their own duplicates).
    int* v = predefined_comm_value(keyval);
    found = v != nullptr;
    value = v;
  } else if (Attribute* a = find_attr(set_of(host), kv.get())) {
    found = true;
    value = a->value;
  }
  if (found) *static_cast<void**>(value_out) = value;
  *flag = found ? 1 : 0;
  return MPI_SUCCESS;
}

int attr_delete(AttrHost host, int keyval) {
  std::lock_guard<std::recursive_mutex> g(lock());
  KeyvalRef kv = find_keyval_in_use(keyval, host.kind);
  if (!kv || kv->predefined) return MPI_ERR_KEYVAL;
  Attribute* a = find_attr(set_of(host), kv.get());
  // Deleting an attribute that is not set is a no-op (the standard does not
  // make it an error; MPICH agrees, Open MPI 4 returns an error).
  if (!a) return MPI_SUCCESS;
  // A failing delete callback leaves the attribute in place.
  int rc = call_delete(host, *kv, a->value);
  if (rc != MPI_SUCCESS) return rc;
  AttributeSet* s = set_of(host);
  for (auto it = s->list.begin(); it != s->list.end(); ++it) {
    if (it->keyval == kv) {
      s->list.erase(it);
      break;
    }
  }
  if (s->list.empty()) drop_set(host);
  return MPI_SUCCESS;
}

int attr_copy_all(AttrHost from, AttrHost to) {
  std::lock_guard<std::recursive_mutex> g(lock());
  AttributeSet* src = set_of(from);
  if (!src) return MPI_SUCCESS;
  // A snapshot: copy callbacks may set or delete attributes on `from`.
  std::vector<Attribute> snapshot = src->list;
  for (const Attribute& a : snapshot) {
    if (a.keyval->predefined) continue;  // window builtins belong to their window
    void* out = nullptr;
    int flag = 0;
    int rc = call_copy(from, *a.keyval, a.value, &out, &flag);
    if (rc != MPI_SUCCESS) {
      // The new object is abandoned: release what was copied into it.
      attr_delete_all(to);
      return rc;
    }
    if (flag) {
      AttributeSet* dst = set_of_or_create(to);
      if (Attribute* existing = find_attr(dst, a.keyval.get()))
        existing->value = out;
      else
        dst->list.push_back(Attribute{a.keyval, out});
    }
  }
  return MPI_SUCCESS;
}

int attr_delete_all(AttrHost host) {
  std::lock_guard<std::recursive_mutex> g(lock());
  int first_error = MPI_SUCCESS;
  // Newest first. Each attribute leaves the set before its callback runs, so
  // a callback that sets or deletes attributes on this object is harmless.
  while (AttributeSet* s = set_of(host)) {
    if (s->list.empty()) {
      drop_set(host);
      break;
    }
    Attribute a = s->list.back();
    s->list.pop_back();
    if (a.keyval->predefined) continue;
    int rc = call_delete(host, *a.keyval, a.value);
    if (rc != MPI_SUCCESS && first_error == MPI_SUCCESS) first_error = rc;
  }
  return first_error;
}

int comm_attributes_copy(Comm* from, Comm* to) { return attr_copy_all(comm_attr_host(from), comm_attr_host(to)); }
int comm_attributes_delete_all(Comm* c) { return attr_delete_all(comm_attr_host(c)); }
int type_attributes_copy(MPI_Datatype from, MPI_Datatype to) {
  return attr_copy_all(type_attr_host(from), type_attr_host(to));
}
int type_attributes_delete_all(MPI_Datatype type) { return attr_delete_all(type_attr_host(type)); }

void attr_set_last_used_code(int code) {
  std::lock_guard<std::recursive_mutex> g(lock());
  predefined().last_used_code = code;
}

int attributes_finalize() {
  // MPI-4.1 11.2.2: MPI_Finalize first frees MPI_COMM_SELF's attributes, in
  // the reverse order they were set, while MPI is still fully usable.
  int rc = comm_attributes_delete_all(comm_self());
  int rc_world = comm_attributes_delete_all(comm_world());
  return rc != MPI_SUCCESS ? rc : rc_world;
}

}  // namespace axon::mpi

using namespace axon;
using namespace axon::mpi;

namespace {

template <class F>
uintptr_t fn_bits(F* fn) {
  return reinterpret_cast<uintptr_t>(fn);
}

int comm_set(const char* fn, MPI_Comm comm, int keyval, void* value) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  AXON_TRY(c, fn, attr_set(comm_attr_host(c), keyval, value));
  return MPI_SUCCESS;
}

int comm_get(const char* fn, MPI_Comm comm, int keyval, void* value, int* flag) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (!value || !flag) return raise(c, MPI_ERR_ARG, fn, "attribute_val or flag is NULL");
  AXON_TRY(c, fn, attr_get(comm_attr_host(c), keyval, value, flag));
  return MPI_SUCCESS;
}

int comm_delete(const char* fn, MPI_Comm comm, int keyval) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  AXON_TRY(c, fn, attr_delete(comm_attr_host(c), keyval));
  return MPI_SUCCESS;
}

int keyval_create(const char* fn, AttrObject kind, uintptr_t copy_fn, uintptr_t delete_fn, int* keyval,
                  void* extra_state) {
  if (!keyval) return raise_self(MPI_ERR_ARG, fn, "keyval is NULL");
  int rc = create_keyval(kind, copy_fn, delete_fn, keyval, extra_state);
  return rc == MPI_SUCCESS ? rc : raise_self(rc, fn);
}

int keyval_free(const char* fn, AttrObject kind, int* keyval) {
  if (!keyval) return raise_self(MPI_ERR_ARG, fn, "keyval is NULL");
  int rc = free_keyval(kind, keyval);
  return rc == MPI_SUCCESS ? rc : raise_self(rc, fn, "invalid or predefined keyval");
}

// Datatype errors have no datatype error handler in MPI: they are raised on
// MPI_COMM_SELF like every error without a communicator.
Datatype* type_or_null(MPI_Datatype t) { return t == MPI_DATATYPE_NULL ? nullptr : datatype_from_handle(t); }

}  // namespace

// --- communicators -----------------------------------------------------------

AXON_API(int, MPI_Comm_create_keyval,
         (MPI_Comm_copy_attr_function * copy_fn, MPI_Comm_delete_attr_function* delete_fn, int* keyval,
          void* extra_state)) {
  return keyval_create("MPI_Comm_create_keyval", AttrObject::Comm, fn_bits(copy_fn), fn_bits(delete_fn), keyval,
                       extra_state);
}

AXON_API(int, MPI_Comm_free_keyval, (int* keyval)) {
  return keyval_free("MPI_Comm_free_keyval", AttrObject::Comm, keyval);
}

AXON_API(int, MPI_Comm_set_attr, (MPI_Comm comm, int keyval, void* value)) {
  return comm_set("MPI_Comm_set_attr", comm, keyval, value);
}

AXON_API(int, MPI_Comm_get_attr, (MPI_Comm comm, int keyval, void* value, int* flag)) {
  return comm_get("MPI_Comm_get_attr", comm, keyval, value, flag);
}

AXON_API(int, MPI_Comm_delete_attr, (MPI_Comm comm, int keyval)) {
  return comm_delete("MPI_Comm_delete_attr", comm, keyval);
}

// --- deprecated MPI-1 forms: the same operations on communicators ----------

AXON_API(int, MPI_Keyval_create,
         (MPI_Copy_function * copy_fn, MPI_Delete_function* delete_fn, int* keyval, void* extra_state)) {
  return keyval_create("MPI_Keyval_create", AttrObject::Comm, fn_bits(copy_fn), fn_bits(delete_fn), keyval,
                       extra_state);
}

AXON_API(int, MPI_Keyval_free, (int* keyval)) { return keyval_free("MPI_Keyval_free", AttrObject::Comm, keyval); }

AXON_API(int, MPI_Attr_put, (MPI_Comm comm, int keyval, void* value)) {
  return comm_set("MPI_Attr_put", comm, keyval, value);
}

AXON_API(int, MPI_Attr_get, (MPI_Comm comm, int keyval, void* value, int* flag)) {
  return comm_get("MPI_Attr_get", comm, keyval, value, flag);
}

AXON_API(int, MPI_Attr_delete, (MPI_Comm comm, int keyval)) { return comm_delete("MPI_Attr_delete", comm, keyval); }

// --- datatypes ---------------------------------------------------------------

AXON_API(int, MPI_Type_create_keyval,
         (MPI_Type_copy_attr_function * copy_fn, MPI_Type_delete_attr_function* delete_fn, int* keyval,
          void* extra_state)) {
  return keyval_create("MPI_Type_create_keyval", AttrObject::Type, fn_bits(copy_fn), fn_bits(delete_fn), keyval,
                       extra_state);
}

AXON_API(int, MPI_Type_free_keyval, (int* keyval)) {
  return keyval_free("MPI_Type_free_keyval", AttrObject::Type, keyval);
}

AXON_API(int, MPI_Type_set_attr, (MPI_Datatype type, int keyval, void* value)) {
  if (!type_or_null(type)) return raise_self(MPI_ERR_TYPE, "MPI_Type_set_attr", "invalid datatype");
  int rc = attr_set(type_attr_host(type), keyval, value);
  return rc == MPI_SUCCESS ? rc : raise_self(rc, "MPI_Type_set_attr");
}

AXON_API(int, MPI_Type_get_attr, (MPI_Datatype type, int keyval, void* value, int* flag)) {
  if (!type_or_null(type)) return raise_self(MPI_ERR_TYPE, "MPI_Type_get_attr", "invalid datatype");
  if (!value || !flag) return raise_self(MPI_ERR_ARG, "MPI_Type_get_attr", "attribute_val or flag is NULL");
  int rc = attr_get(type_attr_host(type), keyval, value, flag);
  return rc == MPI_SUCCESS ? rc : raise_self(rc, "MPI_Type_get_attr");
}

AXON_API(int, MPI_Type_delete_attr, (MPI_Datatype type, int keyval)) {
  if (!type_or_null(type)) return raise_self(MPI_ERR_TYPE, "MPI_Type_delete_attr", "invalid datatype");
  int rc = attr_delete(type_attr_host(type), keyval);
  return rc == MPI_SUCCESS ? rc : raise_self(rc, "MPI_Type_delete_attr");
}

// --- windows: keyvals only until the window object exists -------------------

AXON_API(int, MPI_Win_create_keyval,
         (MPI_Win_copy_attr_function * copy_fn, MPI_Win_delete_attr_function* delete_fn, int* keyval,
          void* extra_state)) {
  return keyval_create("MPI_Win_create_keyval", AttrObject::Win, fn_bits(copy_fn), fn_bits(delete_fn), keyval,
                       extra_state);
}

AXON_API(int, MPI_Win_free_keyval, (int* keyval)) {
  return keyval_free("MPI_Win_free_keyval", AttrObject::Win, keyval);
}
