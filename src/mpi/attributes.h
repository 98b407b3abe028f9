// Attribute caching (MPI-4.1 chapter 7.7): keyvals, the attributes cached on
// communicators, datatypes and windows, and the predefined attributes of
// MPI_COMM_WORLD. The entry points live in src/mpi/attributes.cpp; this header
// is what the code that creates and frees those objects calls.
//
// Contracts for the object owners:
// - Communicators: `Comm::attributes` is owned by the attribute layer (nullptr
//   means "none"). MPI_Comm_dup / MPI_Comm_idup / MPI_Comm_dup_with_info call
//   comm_attributes_copy(old, new) after `new` has its handle (the copy
//   callbacks receive the OLD communicator's handle). On error the new
//   communicator has no attributes left (the ones already copied were deleted
//   with their delete callbacks) and the caller returns that error code, which
//   may be a user error code returned by a callback. MPI_Comm_free /
//   MPI_Comm_disconnect call comm_attributes_delete_all(c) BEFORE the handle
//   becomes invalid (the delete callbacks receive the handle).
// - Datatypes: `Datatype` has a `void* attributes` field (nullptr = none; the
//   attribute layer owns what it points to, predefined types included).
//   MPI_Type_dup calls type_attributes_copy(old, new); MPI_Type_free calls
//   type_attributes_delete_all(handle) while the handle is still valid.
// - Windows (later): the window object keeps an `AttributeSet* attributes`
//   and uses the generic AttrHost functions below; MPI_Win_set/get/delete_attr
//   are thin wrappers over attr_set/attr_get/attr_delete. The window's own
//   predefined attributes (MPI_WIN_BASE, _SIZE, _DISP_UNIT, _CREATE_FLAVOR,
//   _MODEL) are stored with attr_set_builtin at window creation.
//
// Delete callbacks run in the reverse order the attributes were set (the
// order MPI-4.1 11.2.2 requires for MPI_COMM_SELF at MPI_Finalize; Axon uses
// it for every object). Copy callbacks run in the order attributes were set.
#pragma once

#include <mpi.h>

namespace axon::mpi {

struct Comm;
struct AttributeSet;  // the attributes cached on one object; opaque

// Which kind of object a keyval (and an attribute host) belongs to.
enum class AttrObject : unsigned char { Comm, Type, Win };

// One object that can hold attributes: its kind, its handle as the callbacks
// receive it, and where its attribute set pointer lives: a typed field
// (`AttributeSet* attributes`: Comm, windows) or an untyped one
// (`void* attributes`: Datatype, which cannot include this header's types).
struct AttrHost {
  AttrObject kind;
  void* handle;                      // MPI_Comm / MPI_Datatype / MPI_Win
  AttributeSet** typed = nullptr;    // exactly one of these two is set
  void** untyped = nullptr;
};

AttrHost comm_attr_host(Comm* c);
AttrHost type_attr_host(MPI_Datatype handle);  // handle must be valid

// --- hooks for object creation and destruction (return an MPI error code) --
int comm_attributes_copy(Comm* from, Comm* to);
int comm_attributes_delete_all(Comm* c);
int type_attributes_copy(MPI_Datatype from, MPI_Datatype to);
int type_attributes_delete_all(MPI_Datatype type);

// --- generic operations (used by the entry points and by windows) ---------
// Each returns MPI_SUCCESS, MPI_ERR_KEYVAL (keyval invalid, freed, of another
// object kind, or predefined where that is not allowed), or the error code a
// user callback returned. None of them raises: the caller raises on its object.
int attr_set(AttrHost host, int keyval, void* value);
// Stores `value` in `*value_out` (a void** in C terms) and sets *flag.
int attr_get(AttrHost host, int keyval, void* value_out, int* flag);
int attr_delete(AttrHost host, int keyval);
int attr_copy_all(AttrHost from, AttrHost to);
int attr_delete_all(AttrHost host);
// Stores a predefined attribute's value on an object (windows), bypassing the
// rule that users cannot set predefined keyvals. No callbacks run for it.
int attr_set_builtin(AttrHost host, int keyval, void* value);

// Keeps the MPI_LASTUSEDCODE attribute current (called by MPI_Add_error_*).
void attr_set_last_used_code(int code);
// MPI_Finalize: deletes MPI_COMM_SELF's attributes (callbacks in reverse
// order of setting), then MPI_COMM_WORLD's. Keyvals stay (the registry is
// static and MPI cannot be initialized again).
int attributes_finalize();

}  // namespace axon::mpi
