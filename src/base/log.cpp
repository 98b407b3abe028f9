#include "base/log.h"

#include <cstdio>
#include <cstring>
#include <unistd.h>

#include "base/param.h"

namespace axon::log {

namespace {
IntParam verbose_param{"AXON_VERBOSE", 0,
                       "Diagnostic verbosity: 0 errors and warnings only, 1 start-up decisions, "
                       "2 per-connection events, 3 per-message tracing"};
char prefix[96] = "axon";

void emit(const char* kind, const char* fmt, va_list ap) {
  char line[1024];
  int n = snprintf(line, sizeof line, "%s: %s", prefix, kind);
  if (n < 0) return;
  if (n < static_cast<int>(sizeof line)) {
    int m = vsnprintf(line + n, sizeof line - n, fmt, ap);
    if (m > 0) n += m;
  }
  if (n >= static_cast<int>(sizeof line) - 1) n = sizeof line - 2;
  line[n++] = '\n';
  // One write per message so lines from several threads or ranks never mix.
  ssize_t w = write(STDERR_FILENO, line, n);
  (void)w;
}
}  // namespace

void set_identity(int rank, const char* host) {
  snprintf(prefix, sizeof prefix, "axon[%d@%s]", rank, host);
}

int verbosity() { return static_cast<int>(verbose_param.get()); }

void error(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit("error: ", fmt, ap);
  va_end(ap);
}

void warn(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit("warning: ", fmt, ap);
  va_end(ap);
}

void debug(int level, const char* fmt, ...) {
  if (verbosity() < level) return;
  va_list ap;
  va_start(ap, fmt);
  emit("", fmt, ap);
  va_end(ap);
}

}  // namespace axon::log
