// Diagnostics on stderr, prefixed with the process's place in the job so a
// message from one rank among hundreds can be traced.
#pragma once

#include <cstdarg>

namespace axon::log {

// Set once the rank is known (before that messages say "axon").
void set_identity(int rank, const char* host);

[[gnu::format(printf, 1, 2)]] void error(const char* fmt, ...);
[[gnu::format(printf, 1, 2)]] void warn(const char* fmt, ...);
// Printed when AXON_VERBOSE >= level.
[[gnu::format(printf, 2, 3)]] void debug(int level, const char* fmt, ...);
int verbosity();

}  // namespace axon::log
