// The resumable convertor (any byte range of a packed stream, packed or
// unpacked in pieces) and element counting for MPI_Get_elements.
#include "datatype/datatype.h"

#include <algorithm>
#include <cstring>

namespace axon {
namespace {

std::size_t unit_size(const Datatype& type) { return type.size / type.reps; }

// Moves up to n bytes between the stream and the user buffer at the cursor.
template <bool Pack>
std::size_t transfer(Convertor& cv, unsigned char* stream, std::size_t n) {
    n = std::min(n, cv.remaining());
    const std::size_t moved = n;
    if (n == 0) return 0;
    const Datatype& t = *cv.type;
    if (t.contiguous) {
        unsigned char* user = cv.base + cv.position;
        if (Pack) std::memcpy(stream, user, n);
        else std::memcpy(user, stream, n);
        convertor_seek(cv, cv.position + n);
        return moved;
    }
    while (n > 0) {
        const std::ptrdiff_t unit = static_cast<std::ptrdiff_t>(cv.unit / t.reps) * t.extent +
                                    static_cast<std::ptrdiff_t>(cv.unit % t.reps) * t.rep_stride;
        const TypeBlock& block = t.blocks[cv.block];
        // Whole repetitions of this block while they fit: the common case of
        // small blocks in a long run gets a tight loop.
        unsigned char* at = cv.base + unit + block.offset + static_cast<std::ptrdiff_t>(cv.rep) * block.stride;
        if (cv.in_block == 0 && n >= block.length) {
            std::size_t reps = std::min(block.count - cv.rep, n / block.length);
            for (std::size_t r = 0; r < reps; ++r, at += block.stride, stream += block.length) {
                if (Pack) std::memcpy(stream, at, block.length);
                else std::memcpy(at, stream, block.length);
            }
            n -= reps * block.length;
            cv.rep += reps;
        } else {
            const std::size_t chunk = std::min(block.length - cv.in_block, n);
            if (Pack) std::memcpy(stream, at + cv.in_block, chunk);
            else std::memcpy(at + cv.in_block, stream, chunk);
            stream += chunk;
            n -= chunk;
            cv.in_block += chunk;
            if (cv.in_block == block.length) {
                cv.in_block = 0;
                ++cv.rep;
            }
        }
        if (cv.rep == block.count) {
            cv.rep = 0;
            if (++cv.block == t.block_count) {
                cv.block = 0;
                ++cv.unit;
            }
        }
    }
    cv.position += moved;
    return moved;
}

}  // namespace

Convertor::Convertor(const Datatype& t, const void* buffer, std::size_t count)
    : type(&t), base(static_cast<unsigned char*>(const_cast<void*>(buffer))), total(t.size * count) {}

void convertor_seek(Convertor& cv, std::size_t offset) {
    const Datatype& t = *cv.type;
    cv.position = std::min(offset, cv.total);
    cv.unit = cv.block = cv.rep = cv.in_block = 0;
    if (t.size == 0 || t.contiguous) return;
    const std::size_t per_unit = unit_size(t);
    cv.unit = cv.position / per_unit;
    std::size_t rest = cv.position % per_unit;
    for (std::size_t b = 0; b < t.block_count; ++b) {
        const std::size_t run = t.blocks[b].length * t.blocks[b].count;
        if (rest < run) {
            cv.block = b;
            cv.rep = rest / t.blocks[b].length;
            cv.in_block = rest % t.blocks[b].length;
            return;
        }
        rest -= run;
    }
}

std::size_t convertor_pack(Convertor& cv, void* out, std::size_t max) {
    return transfer<true>(cv, static_cast<unsigned char*>(out), max);
}

std::size_t convertor_unpack(Convertor& cv, const void* in, std::size_t len) {
    return transfer<false>(cv, static_cast<unsigned char*>(const_cast<void*>(in)), len);
}

void unpack_bytes(const Datatype& type, const void* packed, std::size_t bytes, void* user) {
    if (type.size == 0 || bytes == 0) return;
    Convertor cv(type, user, (bytes + type.size - 1) / type.size);
    convertor_unpack(cv, packed, bytes);
}

// The basic elements one signature element stands for, by size in packed
// order. A MINLOC/MAXLOC pair type is one element for the reduction kernels
// but two basic elements (value, then index) for MPI_Get_elements: MPI-4.1
// counts the elements of the type map, and MPICH and Open MPI agree. Returns
// how many parts were written to `parts` (1 or 2).
static std::size_t element_parts(const Datatype& basic, std::size_t parts[2]) {
    std::size_t value = 0;
    switch (basic.element) {
        case ElementKind::pair_float_int: value = sizeof(float); break;
        case ElementKind::pair_double_int: value = sizeof(double); break;
        case ElementKind::pair_long_int: value = sizeof(long); break;
        case ElementKind::pair_int_int: value = sizeof(int); break;
        case ElementKind::pair_short_int: value = sizeof(short); break;
        case ElementKind::pair_long_double_int: value = sizeof(long double); break;
        case ElementKind::pair_real_real: value = 4; break;
        case ElementKind::pair_double_double: value = 8; break;
        case ElementKind::pair_integer_integer: value = 4; break;
        default: break;
    }
    if (value == 0 || value >= basic.size) {
        parts[0] = basic.size;
        return 1;
    }
    parts[0] = value;
    parts[1] = basic.size - value;
    return 2;
}

bool count_elements(const Datatype& type, std::size_t bytes, MPI_Count* out) {
    if (type.size == 0) {
        *out = 0;
        return bytes == 0;
    }
    std::size_t unit_elements = 0;
    std::size_t parts[2];
    for (std::size_t i = 0; i < type.signature_count; ++i)
        unit_elements += type.signature[i].count * element_parts(*type.signature[i].basic, parts);
    std::size_t elements = (bytes / type.size) * unit_elements * type.reps;
    std::size_t rest = bytes % type.size;
    const std::size_t per_unit = unit_size(type);
    elements += (rest / per_unit) * unit_elements;
    rest %= per_unit;
    for (std::size_t i = 0; i < type.signature_count && rest > 0; ++i) {
        const std::size_t n = element_parts(*type.signature[i].basic, parts);
        const std::size_t element = type.signature[i].basic->size;
        const std::size_t run = element * type.signature[i].count;
        if (rest >= run) {
            elements += type.signature[i].count * n;
            rest -= run;
            continue;
        }
        elements += (rest / element) * n;
        rest %= element;
        // Inside one element: a pair's value may have arrived without its index.
        for (std::size_t k = 0; k < n && rest >= parts[k]; ++k) {
            elements += 1;
            rest -= parts[k];
        }
        if (rest != 0) return false;
    }
    *out = static_cast<MPI_Count>(elements);
    return true;
}

// The inverse of count_elements, for MPI_Status_set_elements: the bytes of
// the first `elements` basic elements of a packed stream of `type` items
// (pairs count as two elements, as in count_elements). False when the type
// has no elements (and elements > 0) or on overflow.
bool bytes_of_elements(const Datatype& type, MPI_Count elements, std::size_t* bytes) {
    if (elements < 0) return false;
    if (elements == 0) return *bytes = 0, true;
    std::size_t parts[2];
    std::size_t unit_elements = 0;
    for (std::size_t i = 0; i < type.signature_count; ++i)
        unit_elements += type.signature[i].count * element_parts(*type.signature[i].basic, parts);
    if (unit_elements == 0 || type.reps == 0) return false;
    std::size_t rest = static_cast<std::size_t>(elements);
    std::size_t per_item = 0, total = 0, add = 0;
    if (__builtin_mul_overflow(unit_elements, type.reps, &per_item)) return false;
    if (__builtin_mul_overflow(rest / per_item, type.size, &total)) return false;
    rest %= per_item;
    total += (rest / unit_elements) * unit_size(type);
    rest %= unit_elements;
    for (std::size_t i = 0; i < type.signature_count && rest > 0; ++i) {
        const Datatype& basic = *type.signature[i].basic;
        const std::size_t n = element_parts(basic, parts);
        const std::size_t run = type.signature[i].count * n;
        const std::size_t take = rest < run ? rest : run;
        add += (take / n) * basic.size;
        for (std::size_t k = 0; k < take % n; ++k) add += parts[k];
        rest -= take;
    }
    if (__builtin_add_overflow(total, add, bytes)) return false;
    return true;
}

}  // namespace axon
