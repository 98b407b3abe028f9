// The object behind an MPI_Datatype handle, the table of predefined types,
// the handle <-> object mapping, and the derived-type engine's interface:
// constructors (derived.cpp), the flattened layout (layout.cpp), the
// resumable convertor and element counting (convertor.cpp) and the
// external32 representation (external32.cpp). docs/datatypes-and-ops.md
// explains how the pieces fit.
//
// Callers use the fields below and the free functions; new fields may be
// appended without breaking them.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/handle.h"

namespace axon {

// The machine representation of one basic element, which selects the
// reduction kernel. Several MPI types share a kind (MPI_INT, MPI_INTEGER and
// MPI_INT32_T are all int32); which ops are *allowed* is decided by OpGroup.
enum class ElementKind : std::uint8_t {
    none,  // no arithmetic meaning (derived mixes, MPI_PACKED)
    int8, int16, int32, int64, int128,
    uint8, uint16, uint32, uint64,
    float16,   // IEEE binary16 (MPI_REAL2)
    float32, float64,
    float80,   // x86 extended precision, stored in 16 bytes (long double)
    float128,  // IEEE binary128 (MPI_REAL16, gfortran REAL(16))
    complex_float16, complex_float32, complex_float64, complex_float80, complex_float128,
    c_bool,    // C _Bool and C++ bool: one byte, 0 or 1
    logical8, logical16, logical32, logical64, logical128,  // Fortran LOGICAL(n)
    byte,      // MPI_BYTE: uninterpreted 8 bits
    character, // MPI_CHARACTER: text, no arithmetic (MPI_CHAR counts as int8/uint8)
    wchar,     // wchar_t (4 bytes on Linux)
    packed,    // MPI_PACKED
    // value/index pairs for MINLOC and MAXLOC
    pair_float_int, pair_double_int, pair_long_int, pair_int_int, pair_short_int,
    pair_long_double_int, pair_real_real, pair_double_double, pair_integer_integer,
    count_  // number of kinds; keep last
};
inline constexpr std::size_t element_kind_count = static_cast<std::size_t>(ElementKind::count_);

// The standard's groups of basic datatypes (MPI-4.1 section 6.9.2), which
// decide which predefined op may be applied to a type.
enum class OpGroup : std::uint8_t {
    none,            // no predefined arithmetic op (MPI_CHARACTER, MPI_WCHAR, MPI_PACKED, ...)
    c_integer,       // MPI_INT ... MPI_UINT64_T, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_CHAR
    fortran_integer, // MPI_INTEGER, MPI_INTEGERn
    floating_point,  // MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_REAL, MPI_REALn, ...
    logical,         // MPI_LOGICAL, MPI_LOGICALn, MPI_C_BOOL, MPI_CXX_BOOL
    complex,         // every C, C++ and Fortran complex type
    byte,            // MPI_BYTE
    multi_language,  // MPI_AINT, MPI_OFFSET, MPI_COUNT
    minloc_pair,     // MPI_2INT, MPI_DOUBLE_INT, ... (MINLOC/MAXLOC only)
};

// One contiguous run of bytes inside an item of a type: offset from the
// item's start (may be negative for derived types) and length. Derived types
// compress regular patterns: the run repeats `count` times, `stride` bytes
// apart (a vector of a million blocks is one TypeBlock). Predefined types
// always have count 1.
struct TypeBlock {
    std::ptrdiff_t offset;
    std::size_t length;
    std::size_t count = 1;
    std::ptrdiff_t stride = 0;
};

struct Datatype;

// The type signature in packed order, run-length encoded: `count` basic
// elements of the predefined type `basic` (a MINLOC pair counts as one).
struct SignatureRun {
    const Datatype* basic;
    std::size_t count;
};

// How a derived type was made, for MPI_Type_get_envelope/get_contents: the
// combiner and the argument arrays exactly as the standard lists them.
// `types` hold references (released with the contents).
struct TypeContents {
    int combiner = MPI_COMBINER_NAMED;
    std::vector<int> ints;
    std::vector<MPI_Aint> addresses;
    std::vector<MPI_Count> large_counts;
    std::vector<Datatype*> types;
    TypeContents() = default;
    TypeContents(const TypeContents&) = delete;
    TypeContents& operator=(const TypeContents&) = delete;
    ~TypeContents();
};

// What a derived type owns: its flattened block array and signature (the
// Datatype's `blocks` / `signature` point into them) and its construction.
struct DerivedParts {
    std::vector<TypeBlock> blocks;
    std::vector<SignatureRun> signature;
    TypeContents contents;
};

inline constexpr std::uint32_t datatype_magic_live = 0xA7D7A7E5u;
inline constexpr std::uint32_t datatype_magic_dead = 0xDEADD7E5u;

struct Datatype {
    std::uint32_t magic = datatype_magic_live;  // rejects garbage/freed heap handles
    const char* name = "";     // as MPI_Type_get_name returns it, e.g. "MPI_INT"
    std::size_t size = 0;      // bytes of data in one item (no holes)
    std::ptrdiff_t lb = 0;     // lower bound
    std::ptrdiff_t extent = 0; // ub - lb: stride between consecutive items
    std::ptrdiff_t true_lb = 0;
    std::ptrdiff_t true_extent = 0;
    // size == extent, lb == 0 and no holes: count items are one memcpy.
    bool contiguous = false;
    bool predefined = false;
    std::uint16_t abi_handle = 0;  // the ABI constant of a predefined type, else 0
    bool committed = false;    // predefined types are born committed
    ElementKind element = ElementKind::none;  // basic element kind, if homogeneous
    OpGroup op_group = OpGroup::none;
    std::size_t elements_per_item = 0;  // basic elements in one item
    // Data layout of one item, in order: predefined types have one block, or
    // two for the padded MINLOC pairs (value, then index after the padding).
    const TypeBlock* blocks = nullptr;
    std::size_t block_count = 0;
    // Only heap (derived) types are counted; predefined ones live forever.
    std::atomic<int> refcount{1};
    // Cached attributes (src/mpi/attributes.h owns what this points to);
    // nullptr when none. Predefined types can hold attributes too.
    void* attributes = nullptr;

    // ---- derived-type engine -------------------------------------------------
    // Largest alignment of the basic types inside (the standard's k_i), used
    // for the epsilon that rounds an extent without an explicit upper bound.
    std::size_t align = 1;
    // Explicit bounds (the standard's lb_marker / ub_marker, set by
    // MPI_Type_create_resized and inherited by enclosing constructors): when
    // set, `lb` (resp. lb + extent) is the marker's position and data outside
    // does not move it.
    bool has_lb_marker = false;
    bool has_ub_marker = false;
    // One item is `reps` units, unit r at r * rep_stride bytes; `blocks` and
    // `signature` describe one unit (so size == reps * unit bytes). This keeps
    // contiguous/vector of a non-contiguous type compact. Predefined: 1.
    std::size_t reps = 1;
    std::ptrdiff_t rep_stride = 0;
    // Signature of one unit (predefined types: one run of themselves).
    const SignatureRun* signature = nullptr;
    std::size_t signature_count = 0;
    std::unique_ptr<DerivedParts> derived;  // null for predefined types
    char name_buffer[MPI_MAX_OBJECT_NAME] = {};  // MPI_Type_set_name storage
};

// The object behind a handle: predefined handle values index a static table
// (gaps in the ABI numbering and MPI_DATATYPE_NULL give nullptr); any other
// value is a heap Datatype made by this library, accepted only if its magic
// is live (a garbage or freed handle gives nullptr where that is detectable).
Datatype* datatype_from_handle(MPI_Datatype handle);
MPI_Datatype to_handle(const Datatype* type);

// The predefined types indexed by handle value - 0x200 (the ABI numbers
// them in [0x200, 0x300)), published once the table is built (at its first
// use), null before. predefined_type() reads it inline: every send and
// receive looks its type up, and through datatype_from_handle and the
// table's guard that cost ~35 instructions per message (callgrind).
namespace detail {
inline constexpr std::uintptr_t kPredefinedTypeBase = 0x200;
inline constexpr std::uintptr_t kPredefinedTypeSpan = 0x100;
extern std::atomic<Datatype* const*> predefined_types;
}  // namespace detail
// The predefined type behind `handle`, or nullptr (not a predefined value,
// a gap in the numbering, or the table not built yet): then ask
// datatype_from_handle.
inline Datatype* predefined_type(MPI_Datatype handle) {
  const std::uintptr_t index = reinterpret_cast<std::uintptr_t>(handle) - detail::kPredefinedTypeBase;
  Datatype* const* table = detail::predefined_types.load(std::memory_order_acquire);
  return index < detail::kPredefinedTypeSpan && table ? table[index] : nullptr;
}

// True when `handle` is one of the ABI's predefined datatype constants.
bool is_predefined_handle(MPI_Datatype handle);

// Every predefined datatype handle, in ABI order (for tests and tools).
std::span<const MPI_Datatype> predefined_datatype_handles();

// Predefined types or committed derived types may be used in communication.
bool is_valid_for_communication(const Datatype* type);

// bytes = type.size * count, false on overflow (or a negative count).
// Inline: every send computes it.
inline bool bytes_for_count(const Datatype& type, std::size_t count, std::size_t* bytes) {
  return !__builtin_mul_overflow(type.size, count, bytes);
}
inline bool bytes_for_count(const Datatype& type, MPI_Count count, std::size_t* bytes) {
  return count >= 0 && bytes_for_count(type, static_cast<std::size_t>(count), bytes);
}

// Copy `count` items laid out as `type` from `user` into the dense buffer
// `packed` (type.size * count bytes), and back. Holes are neither read nor
// written. Valid for any type described by blocks (all predefined types).
void pack_items(const Datatype& type, const void* user, std::size_t count, void* packed);
void unpack_items(const Datatype& type, const void* packed, std::size_t count, void* user);

// Derived-type lifetime: every holder of a derived type (a handle, a type
// built from it, a pending operation) keeps a reference; predefined types
// ignore these. The PML retains a request's type while it is pending, so
// MPI_Type_free during a pending operation is safe.
// The predefined case is decided inline: every request retains and releases
// its type, and almost all of them are predefined.
void datatype_retain_derived(Datatype* type);
void datatype_release_derived(Datatype* type);  // deletes the type at zero
inline void datatype_retain(Datatype* type) {
  if (type != nullptr && !type->predefined) datatype_retain_derived(type);
}
inline void datatype_release(Datatype* type) {
  if (type != nullptr && !type->predefined) datatype_release_derived(type);
}

// Copies `count` items of `type` from `src` to `dst` (both laid out as the
// type), only the bytes the type covers (memmove per block).
void copy_items_between(const Datatype& type, const void* src, void* dst, std::size_t count);

// ---- constructors (derived.cpp) --------------------------------------------
// Each returns MPI_SUCCESS and a new uncommitted type with refcount 1 in
// *out, or an MPI error class (MPI_ERR_COUNT, MPI_ERR_ARG, MPI_ERR_TYPE,
// MPI_ERR_NO_MEM) and leaves *out alone. `large` says the call came from a
// large-count (_c) binding: get_contents then reports the counts and
// displacements in array_of_large_counts as MPI-4.1 table 5.1 lists them.
// Old types must be valid (non-null); they are retained by the new type.
int type_contiguous(MPI_Count count, Datatype* old, bool large, Datatype** out);
int type_vector(MPI_Count count, MPI_Count blocklength, MPI_Count stride, Datatype* old, bool large,
                Datatype** out);
int type_hvector(MPI_Count count, MPI_Count blocklength, MPI_Count stride_bytes, Datatype* old, bool large,
                 Datatype** out);
// displacements in units of old's extent
int type_indexed(MPI_Count count, const MPI_Count* blocklengths, const MPI_Count* displacements, Datatype* old,
                 bool large, Datatype** out);
int type_hindexed(MPI_Count count, const MPI_Count* blocklengths, const MPI_Count* displacements_bytes,
                  Datatype* old, bool large, Datatype** out);
int type_indexed_block(MPI_Count count, MPI_Count blocklength, const MPI_Count* displacements, Datatype* old,
                       bool large, Datatype** out);
int type_hindexed_block(MPI_Count count, MPI_Count blocklength, const MPI_Count* displacements_bytes,
                        Datatype* old, bool large, Datatype** out);
int type_struct(MPI_Count count, const MPI_Count* blocklengths, const MPI_Count* displacements_bytes,
                Datatype* const* types, bool large, Datatype** out);
// order: MPI_ORDER_C or MPI_ORDER_FORTRAN
int type_subarray(int ndims, const MPI_Count* sizes, const MPI_Count* subsizes, const MPI_Count* starts,
                  int order, Datatype* old, bool large, Datatype** out);
int type_darray(int size, int rank, int ndims, const MPI_Count* gsizes, const int* distribs, const int* dargs,
                const int* psizes, int order, Datatype* old, bool large, Datatype** out);
int type_resized(Datatype* old, MPI_Count lb, MPI_Count extent, bool large, Datatype** out);
int type_dup(Datatype* old, Datatype** out);
// A type with the layout of the predefined `basic`, whose contents are
// `combiner` (MPI_COMBINER_F90_*) and `params`, committed.
int type_f90(Datatype* basic, int combiner, std::span<const int> params, Datatype** out);
// MPI_Type_get_value_index: the predefined MINLOC/MAXLOC pair type of
// (value, index), or nullptr when none exists (MPI_DATATYPE_NULL).
Datatype* type_value_index(const Datatype& value, const Datatype& index);
// The construction of a derived type; nullptr for predefined types.
const TypeContents* type_contents(const Datatype& type);

// ---- convertor (convertor.cpp) ----------------------------------------------
// Packs or unpacks any byte range of the packed stream of `count` items of a
// type: the stream is the items' data in type-map order with the holes
// removed (type.size * count bytes). The convertor keeps a cursor, so a
// sender can produce a message in pieces and a receiver can unpack
// fragments as they arrive in order:
//
//   Convertor cv(type, user_buffer, count);          // position 0
//   while (cv.remaining()) n = convertor_pack(cv, fragment, fragment_size);
//
//   Convertor rv(type, user_buffer, count);
//   for each arriving fragment (in order): convertor_unpack(rv, data, len);
//
// convertor_seek jumps to any stream offset (retransmission, out-of-order
// pieces). Partial items are fine: a receive that gets fewer bytes than it
// posted unpacks exactly the bytes that arrived.
struct Convertor {
    const Datatype* type = nullptr;
    unsigned char* base = nullptr;   // the user buffer (MPI_BOTTOM may be null)
    std::size_t total = 0;           // bytes in the packed stream
    std::size_t position = 0;        // stream offset of the cursor
    // Cursor: unit index (over count * reps), block, repetition in the block,
    // bytes done in that repetition.
    std::size_t unit = 0;
    std::size_t block = 0;
    std::size_t rep = 0;
    std::size_t in_block = 0;

    Convertor() = default;
    Convertor(const Datatype& type, const void* buffer, std::size_t count);
    std::size_t remaining() const { return total - position; }
};
void convertor_seek(Convertor& cv, std::size_t offset);
// Each returns the bytes moved: min(max/len, remaining()).
std::size_t convertor_pack(Convertor& cv, void* out, std::size_t max);
std::size_t convertor_unpack(Convertor& cv, const void* in, std::size_t len);

// Unpacks the first `bytes` bytes of a packed stream of `type` items into
// `user` (the whole items, then whatever part of the last item arrived).
void unpack_bytes(const Datatype& type, const void* packed, std::size_t bytes, void* user);

// MPI_Get_elements: how many basic elements the first `bytes` bytes of a
// packed stream of `type` items hold. False when `bytes` ends inside a basic
// element (the caller returns MPI_UNDEFINED). A MINLOC pair type counts as two
// elements (value and index), as MPICH does; its index-less value is one.
bool count_elements(const Datatype& type, std::size_t bytes, MPI_Count* out);
// The inverse, for MPI_Status_set_elements: bytes of the first `elements`
// basic elements of a packed stream of `type` items; false on overflow or
// when the type holds no elements.
bool bytes_of_elements(const Datatype& type, MPI_Count elements, std::size_t* bytes);

// ---- external32 (external32.cpp) ----------------------------------------------
// Bytes one item of `type` takes in the external32 representation (big
// endian, the standard's sizes: MPI_LONG 4, MPI_LONG_DOUBLE 16, ...); false
// on overflow.
bool external32_size(const Datatype& type, std::size_t count, std::size_t* bytes);
// Converts `count` items between the native layout and external32. Returns
// MPI_SUCCESS or MPI_ERR_NO_MEM. A value that does not fit the narrower
// external type (a long outside 32 bits) is truncated, as MPICH does. `out`
// must hold external32_size bytes.
int external32_pack(const Datatype& type, const void* user, std::size_t count, void* out);
int external32_unpack(const Datatype& type, const void* in, std::size_t count, void* user);

// ---- lookups for MPI_Type_match_size -----------------------------------------
// The predefined Fortran type of a type class and size, or nullptr.
Datatype* type_match_size(int typeclass, int size);

}  // namespace axon
