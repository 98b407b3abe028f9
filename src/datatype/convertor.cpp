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

bool count_elements(const Datatype& type, std::size_t bytes, MPI_Count* out) {
    if (type.size == 0) {
        *out = 0;
        return bytes == 0;
    }
    std::size_t elements = (bytes / type.size) * type.elements_per_item;
    std::size_t rest = bytes % type.size;
    const std::size_t per_unit = unit_size(type);
    std::size_t unit_elements = 0;
    for (std::size_t i = 0; i < type.signature_count; ++i) unit_elements += type.signature[i].count;
    elements += (rest / per_unit) * unit_elements;
    rest %= per_unit;
    for (std::size_t i = 0; i < type.signature_count && rest > 0; ++i) {
        const std::size_t element = type.signature[i].basic->size;
        const std::size_t run = element * type.signature[i].count;
        if (rest >= run) {
            elements += type.signature[i].count;
            rest -= run;
            continue;
        }
        elements += rest / element;
        if (rest % element != 0) return false;
        rest = 0;
    }
    *out = static_cast<MPI_Count>(elements);
    return true;
}

}  // namespace axon
