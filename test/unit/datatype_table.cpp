// Checks the predefined-datatype table against the C compiler's own layout
// (sizeof/offsetof), the handle mapping, and the byte-count/pack helpers.
#include "datatype/datatype.h"
#include "unit_check.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

using axon::Datatype;

extern "C" {
extern const std::size_t c_layout_bool_size;
extern const std::size_t c_layout_float_complex_size;
extern const std::size_t c_layout_double_complex_size;
extern const std::size_t c_layout_long_double_complex_size;
}

namespace {

// The C structs the standard says each MINLOC/MAXLOC pair type matches,
// declared here independently of the library's own definitions.
struct float_int { float v; int i; };
struct double_int { double v; int i; };
struct long_int { long v; int i; };
struct two_int { int v; int i; };
struct short_int { short v; int i; };
struct long_double_int { long double v; int i; };
struct two_real { float v; float i; };            // Fortran REAL, REAL
struct two_double_precision { double v; double i; };
struct two_integer { int v; int i; };             // Fortran INTEGER, INTEGER

struct Expected {
    MPI_Datatype handle;
    const char* name;
    std::size_t size;
    std::ptrdiff_t extent;
    std::ptrdiff_t true_extent;
};

#define BASIC(h, bytes) \
    Expected{h, #h, bytes, static_cast<std::ptrdiff_t>(bytes), static_cast<std::ptrdiff_t>(bytes)}
#define PAIR(h, S)                                                              \
    Expected{h, #h, sizeof(S::v) + sizeof(S::i), static_cast<std::ptrdiff_t>(sizeof(S)), \
             static_cast<std::ptrdiff_t>(offsetof(S, i) + sizeof(S::i))}

const std::vector<Expected> expected_types = {
    BASIC(MPI_AINT, sizeof(MPI_Aint)),
    BASIC(MPI_COUNT, sizeof(MPI_Count)),
    BASIC(MPI_OFFSET, sizeof(MPI_Offset)),
    BASIC(MPI_PACKED, 1),
    BASIC(MPI_SHORT, sizeof(short)),
    BASIC(MPI_INT, sizeof(int)),
    BASIC(MPI_LONG, sizeof(long)),
    // One handle, two names: the table holds the older one (as MPICH names it).
    BASIC(MPI_LONG_LONG_INT, sizeof(long long)),
    BASIC(MPI_UNSIGNED_SHORT, sizeof(unsigned short)),
    BASIC(MPI_UNSIGNED, sizeof(unsigned)),
    BASIC(MPI_UNSIGNED_LONG, sizeof(unsigned long)),
    BASIC(MPI_UNSIGNED_LONG_LONG, sizeof(unsigned long long)),
    BASIC(MPI_FLOAT, sizeof(float)),
    BASIC(MPI_C_COMPLEX, c_layout_float_complex_size),
    BASIC(MPI_CXX_FLOAT_COMPLEX, c_layout_float_complex_size),
    BASIC(MPI_DOUBLE, sizeof(double)),
    BASIC(MPI_C_DOUBLE_COMPLEX, c_layout_double_complex_size),
    BASIC(MPI_CXX_DOUBLE_COMPLEX, c_layout_double_complex_size),
    BASIC(MPI_LOGICAL, 4),
    BASIC(MPI_INTEGER, 4),
    BASIC(MPI_REAL, 4),
    BASIC(MPI_COMPLEX, 8),
    BASIC(MPI_DOUBLE_PRECISION, 8),
    BASIC(MPI_DOUBLE_COMPLEX, 16),
    BASIC(MPI_CHARACTER, 1),
    BASIC(MPI_LONG_DOUBLE, sizeof(long double)),
    BASIC(MPI_C_LONG_DOUBLE_COMPLEX, c_layout_long_double_complex_size),
    BASIC(MPI_CXX_LONG_DOUBLE_COMPLEX, c_layout_long_double_complex_size),
    PAIR(MPI_FLOAT_INT, float_int),
    PAIR(MPI_DOUBLE_INT, double_int),
    PAIR(MPI_LONG_INT, long_int),
    PAIR(MPI_2INT, two_int),
    PAIR(MPI_SHORT_INT, short_int),
    PAIR(MPI_LONG_DOUBLE_INT, long_double_int),
    PAIR(MPI_2REAL, two_real),
    PAIR(MPI_2DOUBLE_PRECISION, two_double_precision),
    PAIR(MPI_2INTEGER, two_integer),
    BASIC(MPI_C_BOOL, c_layout_bool_size),
    BASIC(MPI_CXX_BOOL, sizeof(bool)),
    BASIC(MPI_WCHAR, sizeof(wchar_t)),
    BASIC(MPI_INT8_T, sizeof(int8_t)),
    BASIC(MPI_UINT8_T, sizeof(uint8_t)),
    BASIC(MPI_CHAR, sizeof(char)),
    BASIC(MPI_SIGNED_CHAR, sizeof(signed char)),
    BASIC(MPI_UNSIGNED_CHAR, sizeof(unsigned char)),
    BASIC(MPI_BYTE, 1),
    BASIC(MPI_INT16_T, sizeof(int16_t)),
    BASIC(MPI_UINT16_T, sizeof(uint16_t)),
    BASIC(MPI_INT32_T, sizeof(int32_t)),
    BASIC(MPI_UINT32_T, sizeof(uint32_t)),
    BASIC(MPI_INT64_T, sizeof(int64_t)),
    BASIC(MPI_UINT64_T, sizeof(uint64_t)),
    BASIC(MPI_LOGICAL1, 1),
    BASIC(MPI_INTEGER1, 1),
    BASIC(MPI_LOGICAL2, 2),
    BASIC(MPI_INTEGER2, 2),
    BASIC(MPI_REAL2, 2),
    BASIC(MPI_LOGICAL4, 4),
    BASIC(MPI_INTEGER4, 4),
    BASIC(MPI_REAL4, 4),
    BASIC(MPI_COMPLEX4, 4),
    BASIC(MPI_LOGICAL8, 8),
    BASIC(MPI_INTEGER8, 8),
    BASIC(MPI_REAL8, 8),
    BASIC(MPI_COMPLEX8, 8),
    BASIC(MPI_LOGICAL16, 16),
    BASIC(MPI_INTEGER16, 16),
    BASIC(MPI_REAL16, 16),
    BASIC(MPI_COMPLEX16, 16),
    BASIC(MPI_COMPLEX32, 32),
};

std::uintptr_t value_of(MPI_Datatype h) { return reinterpret_cast<std::uintptr_t>(h); }

void check_table() {
    for (const Expected& e : expected_types) {
        const Datatype* t = axon::datatype_from_handle(e.handle);
        CHECK(t != nullptr, "%s: no table entry", e.name);
        if (t == nullptr) continue;
        CHECK(std::strcmp(t->name, e.name) == 0, "%s: name is %s", e.name, t->name);
        CHECK(t->size == e.size, "%s: size %zu, expected %zu", e.name, t->size, e.size);
        CHECK(t->extent == e.extent, "%s: extent %td, expected %td", e.name, t->extent, e.extent);
        CHECK(t->lb == 0 && t->true_lb == 0, "%s: lb %td true_lb %td", e.name, t->lb, t->true_lb);
        CHECK(t->true_extent == e.true_extent, "%s: true_extent %td, expected %td", e.name, t->true_extent,
              e.true_extent);
        const bool contiguous = static_cast<std::ptrdiff_t>(e.size) == e.extent;
        CHECK(t->contiguous == contiguous, "%s: contiguous %d", e.name, t->contiguous);
        CHECK(t->predefined && t->committed, "%s: not predefined+committed", e.name);
        CHECK(t->elements_per_item == 1, "%s: elements_per_item %zu", e.name, t->elements_per_item);
        // The blocks cover exactly `size` bytes inside the extent.
        std::size_t covered = 0;
        for (std::size_t b = 0; b < t->block_count; ++b) {
            covered += t->blocks[b].length;
            CHECK(t->blocks[b].offset >= 0 &&
                      t->blocks[b].offset + static_cast<std::ptrdiff_t>(t->blocks[b].length) <= t->extent,
                  "%s: block %zu outside the extent", e.name, b);
        }
        CHECK(covered == t->size, "%s: blocks cover %zu bytes, size %zu", e.name, covered, t->size);
        CHECK(axon::to_handle(t) == e.handle, "%s: to_handle gives 0x%zx", e.name,
              static_cast<std::size_t>(value_of(axon::to_handle(t))));
        CHECK(axon::is_valid_for_communication(t), "%s: not valid for communication", e.name);
        CHECK(axon::is_predefined_handle(e.handle), "%s: not a predefined handle", e.name);
    }

    // The spot values the brief fixes, independent of the structs above.
    CHECK(axon::datatype_from_handle(MPI_DOUBLE_INT)->size == 12 &&
              axon::datatype_from_handle(MPI_DOUBLE_INT)->extent == 16, "MPI_DOUBLE_INT is not 12/16");
    CHECK(axon::datatype_from_handle(MPI_LONG_DOUBLE_INT)->size == 20 &&
              axon::datatype_from_handle(MPI_LONG_DOUBLE_INT)->extent == 32, "MPI_LONG_DOUBLE_INT is not 20/32");
    CHECK(axon::datatype_from_handle(MPI_SHORT_INT)->size == 6 &&
              axon::datatype_from_handle(MPI_SHORT_INT)->extent == 8, "MPI_SHORT_INT is not 6/8");

    // Aliases resolve to the same object.
    CHECK(axon::datatype_from_handle(MPI_LONG_LONG_INT) == axon::datatype_from_handle(MPI_LONG_LONG),
          "MPI_LONG_LONG_INT is not MPI_LONG_LONG");
    CHECK(axon::datatype_from_handle(MPI_C_COMPLEX) == axon::datatype_from_handle(MPI_C_FLOAT_COMPLEX),
          "MPI_C_COMPLEX is not MPI_C_FLOAT_COMPLEX");

    // The library's list of predefined handles is exactly the expected set.
    std::set<std::uintptr_t> expected_values;
    for (const Expected& e : expected_types) expected_values.insert(value_of(e.handle));
    CHECK(expected_values.size() == expected_types.size(), "duplicate handle values in the test's list");
    std::set<std::uintptr_t> listed;
    for (MPI_Datatype h : axon::predefined_datatype_handles()) listed.insert(value_of(h));
    CHECK(listed == expected_values, "predefined_datatype_handles lists %zu types, expected %zu", listed.size(),
          expected_values.size());

    // Every other value in the datatype range is a gap.
    for (std::uintptr_t v = 0x200; v < 0x300; ++v) {
        if (expected_values.count(v) != 0) continue;
        const auto h = reinterpret_cast<MPI_Datatype>(v);
        CHECK(axon::datatype_from_handle(h) == nullptr, "gap 0x%zx maps to a type", static_cast<std::size_t>(v));
        CHECK(!axon::is_predefined_handle(h), "gap 0x%zx is called predefined", static_cast<std::size_t>(v));
    }
}

void check_handles() {
    CHECK(axon::datatype_from_handle(MPI_DATATYPE_NULL) == nullptr, "MPI_DATATYPE_NULL maps to a type");
    CHECK(axon::to_handle(static_cast<const Datatype*>(nullptr)) == MPI_DATATYPE_NULL, "to_handle(nullptr)");
    CHECK(!axon::is_valid_for_communication(nullptr), "nullptr valid for communication");
    // Other kinds of predefined handles (an op, a communicator) are not datatypes.
    CHECK(axon::datatype_from_handle(reinterpret_cast<MPI_Datatype>(MPI_SUM)) == nullptr, "MPI_SUM is a datatype");
    CHECK(axon::datatype_from_handle(reinterpret_cast<MPI_Datatype>(MPI_COMM_WORLD)) == nullptr,
          "MPI_COMM_WORLD is a datatype");
    CHECK(axon::datatype_from_handle(reinterpret_cast<MPI_Datatype>(std::uintptr_t{0x3ff})) == nullptr,
          "0x3ff is a datatype");

    // A heap type is found through its pointer; a wrong magic or a
    // misaligned pointer is rejected.
    auto* heap = new Datatype;
    heap->name = "heap";
    heap->size = 4;
    heap->extent = 4;
    MPI_Datatype h = axon::to_handle(heap);
    CHECK(axon::datatype_from_handle(h) == heap, "heap type not found from its handle");
    CHECK(!axon::is_valid_for_communication(heap), "uncommitted heap type valid for communication");
    heap->committed = true;
    CHECK(axon::is_valid_for_communication(heap), "committed heap type not valid for communication");
    alignas(Datatype) unsigned char garbage[sizeof(Datatype)];
    std::memset(garbage, 0x5a, sizeof garbage);
    CHECK(axon::datatype_from_handle(reinterpret_cast<MPI_Datatype>(garbage)) == nullptr, "garbage accepted");
    CHECK(axon::datatype_from_handle(reinterpret_cast<MPI_Datatype>(reinterpret_cast<std::uintptr_t>(heap) + 1)) ==
              nullptr,
          "misaligned pointer accepted");
    axon::datatype_retain(heap);
    axon::datatype_release(heap);
    CHECK(heap->refcount.load() == 1 && heap->magic == axon::datatype_magic_live, "retain/release miscounted");
    axon::datatype_release(heap);  // frees it

    // Predefined types ignore retain/release.
    Datatype* int_type = axon::datatype_from_handle(MPI_INT);
    axon::datatype_release(int_type);
    axon::datatype_release(int_type);
    CHECK(axon::datatype_from_handle(MPI_INT) == int_type && int_type->magic == axon::datatype_magic_live,
          "releasing a predefined type broke it");
}

void check_bytes_and_pack() {
    const Datatype& dbl = *axon::datatype_from_handle(MPI_DOUBLE);
    std::size_t bytes = 0;
    CHECK(axon::bytes_for_count(dbl, std::size_t{1000}, &bytes) && bytes == 8000, "1000 doubles are %zu bytes", bytes);
    CHECK(!axon::bytes_for_count(dbl, SIZE_MAX / 4, &bytes), "overflow not detected");
    CHECK(!axon::bytes_for_count(dbl, MPI_Count{-1}, &bytes), "negative count accepted");
    CHECK(axon::bytes_for_count(dbl, MPI_Count{0}, &bytes) && bytes == 0, "0 doubles are %zu bytes", bytes);

    // MPI_DOUBLE_INT packs to 12 bytes per item and never touches padding.
    const Datatype& pair = *axon::datatype_from_handle(MPI_DOUBLE_INT);
    double_int items[3];
    std::memset(items, 0xab, sizeof items);
    for (int i = 0; i < 3; ++i) {
        items[i].v = 1.5 * i;
        items[i].i = 10 + i;
    }
    unsigned char packed[36];
    axon::pack_items(pair, items, 3, packed);
    for (int i = 0; i < 3; ++i) {
        double v;
        int idx;
        std::memcpy(&v, packed + 12 * i, 8);
        std::memcpy(&idx, packed + 12 * i + 8, 4);
        CHECK(v == 1.5 * i && idx == 10 + i, "packed DOUBLE_INT item %d is (%g, %d)", i, v, idx);
    }
    double_int back[3];
    std::memset(back, 0xcd, sizeof back);
    axon::unpack_items(pair, packed, 3, back);
    for (int i = 0; i < 3; ++i) {
        CHECK(back[i].v == 1.5 * i && back[i].i == 10 + i, "unpacked DOUBLE_INT item %d", i);
        const auto* raw = reinterpret_cast<const unsigned char*>(&back[i]);
        bool padding_untouched = true;
        for (std::size_t b = offsetof(double_int, i) + sizeof(int); b < sizeof(double_int); ++b) {
            padding_untouched = padding_untouched && raw[b] == 0xcd;
        }
        CHECK(padding_untouched, "unpack wrote the padding of item %d", i);
    }

    // A contiguous type packs as one copy.
    int ints[4] = {1, -2, 3, -4}, ints_packed[4] = {};
    axon::pack_items(*axon::datatype_from_handle(MPI_INT), ints, 4, ints_packed);
    CHECK(std::memcmp(ints, ints_packed, sizeof ints) == 0, "MPI_INT pack is not a copy");
}

}  // namespace

int main() {
    check_table();
    check_handles();
    check_bytes_and_pack();
    return unit::finish("datatype_table");
}
