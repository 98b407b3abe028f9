// A minimal check harness for unit tests: every failed check prints one
// line, and the program's exit status says whether any failed.
#pragma once

#include <cstdio>

namespace unit {

inline int failures = 0;
inline int checks = 0;

inline void check(bool ok, const char* file, int line, const char* what) {
    ++checks;
    if (!ok) {
        ++failures;
        std::printf("FAIL %s:%d: %s\n", file, line, what);
    }
}

// Prints the summary; returns the exit status for main.
inline int finish(const char* program) {
    std::printf("%s: %d checks, %d failed\n", program, checks, failures);
    return failures == 0 ? 0 : 1;
}

}  // namespace unit

// CHECK(cond, fmt, ...) records a check and prints the formatted detail if it fails.
#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        const bool unit_ok_ = static_cast<bool>(cond);                     \
        if (!unit_ok_) {                                                   \
            char unit_msg_[512];                                           \
            std::snprintf(unit_msg_, sizeof unit_msg_, __VA_ARGS__);       \
            unit::check(false, __FILE__, __LINE__, unit_msg_);             \
        } else {                                                           \
            unit::check(true, __FILE__, __LINE__, "");                     \
        }                                                                  \
    } while (0)
