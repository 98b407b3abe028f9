// The fuzz targets link parsers without the library: its log is silent here.
#include "base/log.h"

namespace axon::log {
void set_identity(int, const char*) {}
void error(const char*, ...) {}
void warn(const char*, ...) {}
void debug(int, const char*, ...) {}
int verbosity() { return 0; }
}  // namespace axon::log
