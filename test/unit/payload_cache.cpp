// The PML's payload buffers (src/pml/payload.h): exact copies at every size
// class boundary, moves that hand the buffer over, freed buffers reused by
// the next payload of their class, and a cache that never holds more than
// its limit however many payloads are freed at once.
#include "pml/payload.h"
#include "unit_check.h"

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

using axon::pml::Payload;

namespace {

std::vector<uint8_t> pattern(size_t n, unsigned seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 131 + seed * 7 + (i >> 8)) & 0xff);
    return v;
}

bool same(const Payload& p, const std::vector<uint8_t>& want) {
    return p.size() == want.size() && (want.empty() || std::memcmp(p.data(), want.data(), want.size()) == 0);
}

void check_copies() {
    const size_t sizes[] = {0, 1, 7, 255, 256, 257, 4095, 4096, 4097, 16384, 32768 + 80, 65536,
                            (1u << 20) - 1, 1u << 20, (1u << 20) + 1, 3u << 20};
    unsigned seed = 1;
    for (size_t n : sizes) {
        auto want = pattern(n, seed++);
        Payload p;
        p.assign(want.data(), n);
        CHECK(same(p, want), "%zu bytes: the copy differs", n);
        // Reassigning a shorter payload keeps the contents exact.
        if (n > 3) {
            auto shorter = pattern(n / 2, seed++);
            p.assign(shorter.data(), shorter.size());
            CHECK(same(p, shorter), "%zu then %zu bytes: the copy differs", n, shorter.size());
        }
    }
}

void check_moves() {
    auto want = pattern(5000, 9);
    Payload a;
    a.assign(want.data(), want.size());
    const uint8_t* buffer = a.data();
    Payload b(std::move(a));
    CHECK(b.data() == buffer && same(b, want), "move construction did not hand the buffer over");
    CHECK(a.data() == nullptr && a.size() == 0, "a moved-from payload still holds %zu bytes", a.size());
    Payload c;
    c.assign(want.data(), 10);
    c = std::move(b);
    CHECK(c.data() == buffer && same(c, want), "move assignment did not hand the buffer over");
    CHECK(b.data() == nullptr && b.size() == 0, "a moved-from payload still holds %zu bytes", b.size());
}

void check_reuse() {
    auto want = pattern(3000, 3);  // size class 4096
    const uint8_t* first = nullptr;
    size_t held = 0;
    {
        Payload p;
        p.assign(want.data(), want.size());
        first = p.data();
        held = Payload::cached_bytes();
    }
    CHECK(Payload::cached_bytes() == held + 4096, "a freed 4 KiB-class payload left %zu cached bytes, want %zu",
          Payload::cached_bytes(), held + 4096);
    Payload q;
    q.assign(want.data(), 2049);  // the same class
    CHECK(q.data() == first, "the next payload of the class did not reuse the freed buffer");
    CHECK(Payload::cached_bytes() == held, "taking the cached buffer left %zu cached bytes, want %zu",
          Payload::cached_bytes(), held);
    // Above the largest class: never cached.
    {
        auto big = pattern((2u << 20) + 5, 4);
        Payload p;
        p.assign(big.data(), big.size());
        CHECK(same(p, big), "a 2 MiB payload differs");
    }
    CHECK(Payload::cached_bytes() == held, "a freed 2 MiB payload was cached (%zu bytes, want %zu)",
          Payload::cached_bytes(), held);
}

void check_limit() {
    // Far more than the limit freed at once (a receiver catching up with
    // senders that ran ahead): the cache fills up to its limit and no
    // further. (What the checks above left cached is of other classes.)
    const size_t each = 256 * 1024, fit = Payload::cache_limit() / each, count = 3 * fit;
    const size_t other = Payload::cached_bytes(), kept = (Payload::cache_limit() - other) / each;
    auto want = pattern(each, 5);
    {
        std::vector<Payload> many(count);
        for (Payload& p : many) p.assign(want.data(), each);
        for (Payload& p : many) CHECK(same(p, want), "one of %zu payloads differs", count);
    }
    CHECK(Payload::cached_bytes() == other + kept * each,
          "%zu cached bytes after freeing %zu x 256 KiB, want %zu (%zu of them kept, limit %zu)",
          Payload::cached_bytes(), count, other + kept * each, kept, Payload::cache_limit());
    // A burst of the same size again is served from what it kept.
    {
        std::vector<Payload> again(fit);
        for (Payload& p : again) p.assign(want.data(), each);
        CHECK(Payload::cached_bytes() == other, "a burst of %zu payloads left %zu bytes cached, want %zu", fit,
              Payload::cached_bytes(), other);
    }
    CHECK(Payload::cached_bytes() == other + kept * each, "%zu cached bytes after the burst, want %zu",
          Payload::cached_bytes(), other + kept * each);
}

}  // namespace

int main() {
    check_copies();
    check_moves();
    check_reuse();
    check_limit();
    return unit::finish("payload_cache");
}
