// The MPI tool information interface (MPI_T), control-variable part: every
// AXON_* parameter is a read-only control variable, so tools — and
// axon_info --params — can enumerate what Axon can be tuned with. Values are
// read from the environment at start-up; the description ends with the
// default.
#include <algorithm>
#include <cstring>
#include <string>

#include "base/param.h"
#include "mpi/api.h"

namespace {

int t_init_count = 0;

// Copies `text` into (buf, *len) per the MPI_T string convention: at most
// *len-1 characters and a terminating null; *len becomes the full length
// including the null. A zero *len or null buffer only returns the length.
void copy_string(const std::string& text, char* buf, int* len) {
  if (!len) return;
  int full = static_cast<int>(text.size()) + 1;
  if (buf && *len > 0) {
    int n = std::min(*len - 1, static_cast<int>(text.size()));
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  *len = full;
}

MPI_Datatype datatype_of(const axon::Param& p) {
  switch (p.kind()) {
    case axon::Param::Kind::Integer:
    case axon::Param::Kind::Size: return MPI_LONG_LONG;
    case axon::Param::Kind::Boolean: return MPI_INT;
    case axon::Param::Kind::String: return MPI_CHAR;
  }
  return MPI_CHAR;
}

}  // namespace

AXON_API(int, MPI_T_init_thread, (int required, int* provided)) {
  if (!provided) return MPI_ERR_ARG;
  ++t_init_count;
  *provided = required < MPI_THREAD_SINGLE || required > MPI_THREAD_MULTIPLE ? MPI_THREAD_SINGLE : required;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_finalize, (void)) {
  if (t_init_count == 0) return MPI_T_ERR_NOT_INITIALIZED;
  --t_init_count;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_cvar_get_num, (int* num_cvar)) {
  if (t_init_count == 0) return MPI_T_ERR_NOT_INITIALIZED;
  if (!num_cvar) return MPI_ERR_ARG;
  *num_cvar = static_cast<int>(axon::Param::all().size());
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_cvar_get_info, (int cvar_index, char* name, int* name_len, int* verbosity,
                                    MPI_Datatype* datatype, MPI_T_enum* enumtype, char* desc, int* desc_len,
                                    int* bind, int* scope)) {
  if (t_init_count == 0) return MPI_T_ERR_NOT_INITIALIZED;
  const auto& params = axon::Param::all();
  if (cvar_index < 0 || cvar_index >= static_cast<int>(params.size())) return MPI_T_ERR_INVALID_INDEX;
  const axon::Param& p = *params[cvar_index];
  copy_string(p.name(), name, name_len);
  copy_string(std::string(p.help()) + " (default: " + p.default_text() + ")", desc, desc_len);
  if (verbosity) *verbosity = MPI_T_VERBOSITY_USER_BASIC;
  if (datatype) *datatype = datatype_of(p);
  if (enumtype) *enumtype = MPI_T_ENUM_NULL;
  if (bind) *bind = MPI_T_BIND_NO_OBJECT;
  if (scope) *scope = MPI_T_SCOPE_READONLY;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_cvar_get_index, (const char* name, int* cvar_index)) {
  if (t_init_count == 0) return MPI_T_ERR_NOT_INITIALIZED;
  if (!name || !cvar_index) return MPI_ERR_ARG;
  const auto& params = axon::Param::all();
  for (size_t i = 0; i < params.size(); ++i) {
    if (std::strcmp(params[i]->name(), name) == 0) {
      *cvar_index = static_cast<int>(i);
      return MPI_SUCCESS;
    }
  }
  return MPI_T_ERR_INVALID_NAME;
}
