// Random type trees (nested contiguous / vector / hvector / indexed /
// hindexed / indexed_block / struct / resized over basic types, seeded)
// built with the engine's constructors; each is checked against a simple
// recursive reference that expands the type map entry by entry:
//   - convertor_pack in random-size pieces == the reference packed stream,
//   - convertor_unpack in random-size pieces == the reference unpack
//     (same bytes written, holes untouched),
//   - convertor_seek to random offsets then pack == that slice of the stream,
//   - pack_items / unpack_items / unpack_bytes agree,
//   - count_elements on every prefix length == the reference count.
// Usage: convertor_random [seed] [trees]
#include "datatype/datatype.h"
#include "unit_check.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace axon;

namespace {

// One entry of a type map: `length` bytes at `offset`, one basic element.
struct Entry {
    std::ptrdiff_t offset;
    std::size_t length;
};
using TypeMap = std::vector<Entry>;

// A type under test: the engine's object and the reference map of one item.
struct Made {
    Datatype* type = nullptr;
    TypeMap map;
    std::string what;
};

void append_shifted(TypeMap& out, const TypeMap& in, std::ptrdiff_t shift) {
    for (const Entry& e : in) out.push_back({e.offset + shift, e.length});
}

constexpr std::size_t max_entries = 4000;

class Generator {
public:
    explicit Generator(unsigned seed) : rng_(seed) {}

    int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

    Made basic() {
        static const MPI_Datatype leaves[] = {MPI_CHAR, MPI_SHORT, MPI_INT, MPI_DOUBLE, MPI_FLOAT, MPI_2INT,
                                              MPI_INT8_T, MPI_LONG_DOUBLE};
        Made m;
        m.type = datatype_from_handle(leaves[pick(0, 7)]);
        // A MINLOC pair is two basic elements (value, index) for MPI_Get_elements.
        if (m.type == datatype_from_handle(MPI_2INT)) m.map = {{0, sizeof(int)}, {sizeof(int), sizeof(int)}};
        else m.map.push_back({0, m.type->size});
        m.what = m.type->name;
        return m;
    }

    // A random tree of at most `depth` constructor levels.
    Made tree(int depth) {
        if (depth == 0 || pick(0, 4) == 0) return basic();
        Made child = tree(depth - 1);
        Made m = combine(child);
        datatype_release(child.type);  // the new type holds its own reference
        if (m.map.size() > max_entries) {  // keep the reference cheap
            datatype_release(m.type);
            return basic();
        }
        return m;
    }

private:
    Made combine(Made& c) {
        const std::ptrdiff_t ext = c.type->extent;
        Made m;
        int rc = MPI_SUCCESS;
        switch (pick(0, 7)) {
            case 0: {
                const int n = pick(0, 4);
                rc = type_contiguous(n, c.type, false, &m.type);
                for (int i = 0; i < n; ++i) append_shifted(m.map, c.map, i * ext);
                m.what = "contiguous(" + std::to_string(n) + ", " + c.what + ")";
                break;
            }
            case 1: {
                const int count = pick(1, 4), bl = pick(0, 3), stride = pick(-5, 6);
                rc = type_vector(count, bl, stride, c.type, false, &m.type);
                for (int i = 0; i < count; ++i)
                    for (int j = 0; j < bl; ++j) append_shifted(m.map, c.map, (i * stride + j) * ext);
                m.what = "vector(" + std::to_string(count) + "," + std::to_string(bl) + "," + std::to_string(stride) +
                         ", " + c.what + ")";
                break;
            }
            case 2: {
                const int count = pick(1, 4), bl = pick(1, 3);
                const MPI_Count stride = pick(-40, 80);
                rc = type_hvector(count, bl, stride, c.type, false, &m.type);
                for (int i = 0; i < count; ++i)
                    for (int j = 0; j < bl; ++j) append_shifted(m.map, c.map, i * stride + j * ext);
                m.what = "hvector(" + std::to_string(count) + "," + std::to_string(bl) + "," +
                         std::to_string(stride) + ", " + c.what + ")";
                break;
            }
            case 3:
            case 4: {
                const int count = pick(1, 4);
                std::vector<MPI_Count> bl(count), disp(count);
                const bool bytes = pick(0, 1) == 1;
                for (int i = 0; i < count; ++i) {
                    bl[i] = pick(0, 3);
                    disp[i] = bytes ? pick(-30, 60) : pick(-3, 8);
                }
                rc = bytes ? type_hindexed(count, bl.data(), disp.data(), c.type, false, &m.type)
                           : type_indexed(count, bl.data(), disp.data(), c.type, false, &m.type);
                for (int i = 0; i < count; ++i)
                    for (int j = 0; j < bl[i]; ++j)
                        append_shifted(m.map, c.map, (bytes ? disp[i] : disp[i] * ext) + j * ext);
                m.what = std::string(bytes ? "hindexed" : "indexed") + "(" + std::to_string(count) + ", " + c.what +
                         ")";
                break;
            }
            case 5: {
                const int count = pick(1, 4), bl = pick(1, 2);
                std::vector<MPI_Count> disp(count);
                for (int i = 0; i < count; ++i) disp[i] = pick(-2, 9);
                rc = type_indexed_block(count, bl, disp.data(), c.type, false, &m.type);
                for (int i = 0; i < count; ++i)
                    for (int j = 0; j < bl; ++j) append_shifted(m.map, c.map, (disp[i] + j) * ext);
                m.what = "indexed_block(" + std::to_string(count) + "," + std::to_string(bl) + ", " + c.what + ")";
                break;
            }
            case 6: {
                // struct of the child and one or two more basic types
                Made others[2] = {basic(), basic()};
                const int count = pick(2, 3);
                std::vector<MPI_Count> bl(count), disp(count);
                std::vector<Datatype*> types(count);
                std::vector<const Made*> parts(count);
                parts[0] = &c;
                for (int i = 1; i < count; ++i) parts[i] = &others[i - 1];
                for (int i = 0; i < count; ++i) {
                    bl[i] = pick(0, 2);
                    disp[i] = pick(-16, 48);
                    types[i] = parts[i]->type;
                }
                rc = type_struct(count, bl.data(), disp.data(), types.data(), false, &m.type);
                for (int i = 0; i < count; ++i)
                    for (int j = 0; j < bl[i]; ++j)
                        append_shifted(m.map, parts[i]->map, disp[i] + j * parts[i]->type->extent);
                m.what = "struct(" + std::to_string(count) + ", " + c.what + ", ...)";
                break;
            }
            default: {
                const MPI_Count lb = pick(-8, 8), extent = pick(1, 64);
                rc = type_resized(c.type, lb, extent, false, &m.type);
                m.map = c.map;
                m.what = "resized(" + std::to_string(lb) + "," + std::to_string(extent) + ", " + c.what + ")";
                break;
            }
        }
        if (rc != MPI_SUCCESS) {
            std::printf("constructor failed (%d) for %s\n", rc, m.what.c_str());
            std::abort();
        }
        return m;
    }

    std::mt19937 rng_;
};

// Reference pack of `count` items at `base` (extent from the engine).
std::vector<unsigned char> reference_pack(const Made& m, const unsigned char* base, std::size_t count) {
    std::vector<unsigned char> out;
    for (std::size_t k = 0; k < count; ++k)
        for (const Entry& e : m.map) {
            const unsigned char* p = base + static_cast<std::ptrdiff_t>(k) * m.type->extent + e.offset;
            out.insert(out.end(), p, p + e.length);
        }
    return out;
}

// Reference unpack of the first `bytes` of a stream (entries in order).
void reference_unpack(const Made& m, const unsigned char* stream, std::size_t bytes, unsigned char* base,
                      std::size_t count) {
    std::size_t at = 0;
    for (std::size_t k = 0; k < count && at < bytes; ++k)
        for (const Entry& e : m.map) {
            if (at >= bytes) break;
            const std::size_t n = std::min(e.length, bytes - at);
            std::memcpy(base + static_cast<std::ptrdiff_t>(k) * m.type->extent + e.offset, stream + at, n);
            at += n;
        }
}

// Reference element count of a prefix: -1 when it ends inside an entry.
long reference_elements(const Made& m, std::size_t bytes, std::size_t count) {
    long elements = 0;
    std::size_t at = 0;
    for (std::size_t k = 0; k < count; ++k)
        for (const Entry& e : m.map) {
            if (at == bytes) return elements;
            if (at + e.length > bytes) return -1;
            at += e.length;
            ++elements;
        }
    return at == bytes ? elements : -1;
}

void check_tree(Generator& gen, const Made& m, int tree) {
    const Datatype& t = *m.type;
    std::size_t map_bytes = 0;
    for (const Entry& e : m.map) map_bytes += e.length;
    CHECK(t.size == map_bytes, "tree %d %s: size %zu, reference %zu", tree, m.what.c_str(), t.size, map_bytes);
    if (t.size != map_bytes) return;

    const std::size_t count = static_cast<std::size_t>(gen.pick(1, 3));
    // The memory the items touch: from the lowest to the highest entry.
    std::ptrdiff_t lo = 0, hi = 1;
    for (std::size_t k = 0; k < count; ++k)
        for (const Entry& e : m.map) {
            const std::ptrdiff_t at = static_cast<std::ptrdiff_t>(k) * t.extent + e.offset;
            lo = std::min(lo, at);
            hi = std::max(hi, at + static_cast<std::ptrdiff_t>(e.length));
        }
    const std::size_t span = static_cast<std::size_t>(hi - lo);
    std::vector<unsigned char> user(span);
    for (std::size_t i = 0; i < span; ++i) user[i] = static_cast<unsigned char>(i * 131 + tree * 7 + 1);
    unsigned char* base = user.data() - lo;

    const std::vector<unsigned char> expect = reference_pack(m, base, count);
    const std::size_t total = expect.size();

    // Pack in random pieces.
    std::vector<unsigned char> got(total + 1, 0xcd);
    Convertor cv(t, base, count);
    CHECK(cv.total == total, "tree %d: convertor total %zu, expected %zu", tree, cv.total, total);
    std::size_t at = 0;
    while (cv.remaining() > 0) {
        const std::size_t piece = static_cast<std::size_t>(gen.pick(1, 40));
        const std::size_t n = convertor_pack(cv, got.data() + at, piece);
        CHECK(n == std::min(piece, total - at), "tree %d: pack piece moved %zu of %zu", tree, n, piece);
        if (n == 0) break;
        at += n;
    }
    CHECK(at == total && (total == 0 || std::memcmp(got.data(), expect.data(), total) == 0),
          "tree %d %s: piecewise pack differs",
          tree, m.what.c_str());
    CHECK(got[total] == 0xcd, "tree %d: pack wrote past the end", tree);

    // Whole-message pack.
    std::vector<unsigned char> whole(total + 1, 0xcd);
    pack_items(t, base, count, whole.data());
    CHECK(total == 0 || std::memcmp(whole.data(), expect.data(), total) == 0, "tree %d %s: pack_items differs", tree,
          m.what.c_str());

    // Seek to random offsets and pack a piece.
    for (int s = 0; s < 5 && total > 0; ++s) {
        const std::size_t off = static_cast<std::size_t>(gen.pick(0, static_cast<int>(total) - 1));
        const std::size_t len = std::min<std::size_t>(static_cast<std::size_t>(gen.pick(1, 30)), total - off);
        Convertor sv(t, base, count);
        convertor_seek(sv, off);
        CHECK(sv.position == off, "tree %d: seek position %zu", tree, sv.position);
        std::vector<unsigned char> piece(len);
        const std::size_t n = convertor_pack(sv, piece.data(), len);
        CHECK(n == len && std::memcmp(piece.data(), expect.data() + off, len) == 0,
              "tree %d %s: pack after seek to %zu (len %zu) differs", tree, m.what.c_str(), off, len);
    }

    // Unpack in random pieces into a fresh buffer; the reference unpacks
    // into another; both start with the same background.
    std::vector<unsigned char> mine(span, 0x5a), ref(span, 0x5a);
    unsigned char* mine_base = mine.data() - lo;
    unsigned char* ref_base = ref.data() - lo;
    reference_unpack(m, expect.data(), total, ref_base, count);
    Convertor uv(t, mine_base, count);
    at = 0;
    while (uv.remaining() > 0) {
        const std::size_t piece = static_cast<std::size_t>(gen.pick(1, 40));
        const std::size_t n = convertor_unpack(uv, expect.data() + at, std::min(piece, total - at));
        if (n == 0) break;
        at += n;
    }
    CHECK(at == total && mine == ref, "tree %d %s: piecewise unpack differs", tree, m.what.c_str());
    std::fill(mine.begin(), mine.end(), 0x5a);
    unpack_items(t, expect.data(), count, mine_base);
    CHECK(mine == ref, "tree %d %s: unpack_items differs", tree, m.what.c_str());

    // A short message: unpack_bytes writes exactly the prefix.
    if (total > 0) {
        const std::size_t prefix = static_cast<std::size_t>(gen.pick(0, static_cast<int>(total)));
        std::fill(mine.begin(), mine.end(), 0x5a);
        std::fill(ref.begin(), ref.end(), 0x5a);
        reference_unpack(m, expect.data(), prefix, ref_base, count);
        unpack_bytes(t, expect.data(), prefix, mine_base);
        CHECK(mine == ref, "tree %d %s: unpack_bytes of %zu bytes differs", tree, m.what.c_str(), prefix);
    }

    // count_elements on every prefix (bounded).
    for (std::size_t bytes = 0; bytes <= total && bytes < 600; ++bytes) {
        MPI_Count elements = -7;
        const bool ok = count_elements(t, bytes, &elements);
        const long want = reference_elements(m, bytes, count);
        if (want < 0) {
            CHECK(!ok, "tree %d %s: count_elements(%zu) should be undefined, got %lld", tree, m.what.c_str(), bytes,
                  static_cast<long long>(elements));
        } else {
            CHECK(ok && elements == want, "tree %d %s: count_elements(%zu) = %lld (ok %d), expected %ld", tree,
                  m.what.c_str(), bytes, static_cast<long long>(elements), ok, want);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    const unsigned seed = argc > 1 ? static_cast<unsigned>(std::strtoul(argv[1], nullptr, 10)) : 20261122u;
    const int trees = argc > 2 ? std::atoi(argv[2]) : 400;
    Generator gen(seed);
    for (int i = 0; i < trees; ++i) {
        Made m = gen.tree(4);
        check_tree(gen, m, i);
        datatype_release(m.type);
        if (unit::failures > 20) break;  // enough to diagnose
    }
    std::printf("seed %u\n", seed);
    return unit::finish("convertor_random");
}
