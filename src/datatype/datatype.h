// The object behind an MPI_Datatype handle, the table of predefined types and
// the handle <-> object mapping.
//
// Today only predefined types exist; derived types (with a flattened block
// representation and a resumable convertor) grow here later. Callers use the
// fields below and the free functions; new fields may be appended without
// breaking them.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

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
    character, // MPI_CHAR, MPI_CHARACTER: text, no arithmetic
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
    none,            // no predefined arithmetic op (MPI_CHAR, MPI_WCHAR, MPI_PACKED, ...)
    c_integer,       // MPI_INT ... MPI_UINT64_T, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR
    fortran_integer, // MPI_INTEGER, MPI_INTEGERn
    floating_point,  // MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_REAL, MPI_REALn, ...
    logical,         // MPI_LOGICAL, MPI_LOGICALn, MPI_C_BOOL, MPI_CXX_BOOL
    complex,         // every C, C++ and Fortran complex type
    byte,            // MPI_BYTE
    multi_language,  // MPI_AINT, MPI_OFFSET, MPI_COUNT
    minloc_pair,     // MPI_2INT, MPI_DOUBLE_INT, ... (MINLOC/MAXLOC only)
};

// One contiguous run of bytes inside an item of a type: offset from the
// item's start (may be negative for derived types) and length.
struct TypeBlock {
    std::ptrdiff_t offset;
    std::size_t length;
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
    // Derived-type fields (flattened representation, envelope/contents) are
    // appended here later.
};

// The object behind a handle: predefined handle values index a static table
// (gaps in the ABI numbering and MPI_DATATYPE_NULL give nullptr); any other
// value is a heap Datatype made by this library, accepted only if its magic
// is live (a garbage or freed handle gives nullptr where that is detectable).
Datatype* datatype_from_handle(MPI_Datatype handle);
MPI_Datatype to_handle(const Datatype* type);

// True when `handle` is one of the ABI's predefined datatype constants.
bool is_predefined_handle(MPI_Datatype handle);

// Every predefined datatype handle, in ABI order (for tests and tools).
std::span<const MPI_Datatype> predefined_datatype_handles();

// Predefined types or committed derived types may be used in communication.
bool is_valid_for_communication(const Datatype* type);

// bytes = type.size * count, false on overflow (or a negative count).
bool bytes_for_count(const Datatype& type, std::size_t count, std::size_t* bytes);
bool bytes_for_count(const Datatype& type, MPI_Count count, std::size_t* bytes);

// Copy `count` items laid out as `type` from `user` into the dense buffer
// `packed` (type.size * count bytes), and back. Holes are neither read nor
// written. Valid for any type described by blocks (all predefined types).
void pack_items(const Datatype& type, const void* user, std::size_t count, void* packed);
void unpack_items(const Datatype& type, const void* packed, std::size_t count, void* user);

// Derived-type lifetime (for later; predefined types ignore these).
void datatype_retain(Datatype* type);
void datatype_release(Datatype* type);  // deletes a heap type at zero

}  // namespace axon
