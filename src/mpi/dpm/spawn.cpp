// Dynamic processes: MPI_Comm_spawn / MPI_Comm_spawn_multiple and the
// parent of a spawned process (MPI-4.1 11.8; see docs/dpm.md, "Spawn").
// The root opens a port, the launcher starts the children with the port's
// name in their environment (AXON_DPM_PARENT_PORT), and the parents accept
// the children's connection from their MPI_Init. MPI_Comm_get_parent's entry
// point (and MPI_Comm_disconnect) are in src/mpi/communicator.cpp.
#include <cstdlib>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/param.h"
#include "coll/coll.h"
#include "mpi/api.h"
#include "mpi/communicator.h"
#include "mpi/dpm.h"
#include "mpi/dpm/internal.h"
#include "mpi/info.h"
#include "rte/rte.h"

namespace axon::mpi::dpm {

namespace {

StringParam parent_port_param{"AXON_DPM_PARENT_PORT", "",
                              "Set by MPI_Comm_spawn in its children's environment (not by users): the "
                              "parent's port, which MPI_Init connects to (MPI_Comm_get_parent)"};

MPI_Comm parent_comm = MPI_COMM_NULL;
int parent_keyval = MPI_KEYVAL_INVALID;

// The parent intercommunicator was freed or disconnected: MPI_Comm_get_parent
// returns MPI_COMM_NULL from then on (MPI-4.1 11.8.2).
int forget_parent(MPI_Comm, int, void*, void*) {
  parent_comm = MPI_COMM_NULL;
  return MPI_SUCCESS;
}

// The part of MPI_Comm_spawn / _spawn_multiple after the root read its
// arguments (`apps`, `why` set when they were wrong): the root opens a port,
// the launcher starts the children with the port's name in their
// environment, and the parents accept the children's connection from their
// MPI_Init.
int spawn_common(const char* fn, Comm* c, int root, std::vector<rte::SpawnApp> apps, int arg_error,
                 std::string why, double timeout, MPI_Comm* intercomm, int* errcodes) {
  int head[2] = {arg_error, 0};
  std::string port;
  if (c->rank() == root) {
    for (const auto& a : apps) head[1] += a.maxprocs;
    if (head[0] == MPI_SUCCESS && !rte::have_server()) {
      head[0] = MPI_ERR_SPAWN;
      why = "this process is a singleton (not started by mpirun): there is no launcher to start processes";
    }
    if (head[0] == MPI_SUCCESS) {
      progress::Guard guard;
      if (open_port(&port) != MPI_SUCCESS) {
        head[0] = MPI_ERR_SPAWN;
        why = "cannot open a port for the children";
      }
    }
    if (head[0] == MPI_SUCCESS) {
      for (auto& a : apps) a.env.push_back("AXON_DPM_PARENT_PORT=" + port);
      std::string nspace;
      if (rte::spawn(apps, &nspace, &why) != 0) {
        head[0] = MPI_ERR_SPAWN;
        close_port(port);
      }
    }
  }
  int rc = coll::bcast(head, 2, datatype_from_handle(MPI_INT), root, &c->coll);
  if (rc != MPI_SUCCESS) return raise(c, rc, fn);
  if (errcodes)
    for (int i = 0; i < head[1]; ++i) errcodes[i] = head[0] == MPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_SPAWN;
  if (head[0] != MPI_SUCCESS)
    return raise(c, head[0], fn, c->rank() == root ? why.c_str() : "the root could not start the processes");
  Comm* out = nullptr;
  rc = dpm_accept(c->rank() == root ? port.c_str() : nullptr, timeout, root, c, &out);
  if (c->rank() == root) close_port(port);
  if (rc != MPI_SUCCESS) {
    if (errcodes)
      for (int i = 0; i < head[1]; ++i) errcodes[i] = MPI_ERR_SPAWN;
    return raise(c, MPI_ERR_SPAWN, fn, "the children did not connect in time (AXON_DPM_TIMEOUT)");
  }
  *intercomm = out->handle;
  return MPI_SUCCESS;
}

// One application from the C arguments (the root's): MPI_ERR_ARG with *why
// when they are wrong.
int read_app(const char* command, char** argv, int maxprocs, MPI_Info info, rte::SpawnApp* app, std::string* why) {
  if (!command || !*command) {
    *why = "command is NULL or empty";
    return MPI_ERR_ARG;
  }
  if (maxprocs <= 0) {
    *why = "maxprocs must be positive";
    return MPI_ERR_ARG;
  }
  if (info != MPI_INFO_NULL && !info_from_handle(info)) {
    *why = "invalid info";
    return MPI_ERR_INFO;
  }
  app->command = command;
  app->argv.push_back(command);
  for (char** a = argv; a && *a; ++a) app->argv.push_back(*a);
  app->maxprocs = maxprocs;
  // Reserved keys (MPI-4.1 11.8.4): "wdir" is honoured; "host", "path",
  // "arch", "file", "soft" are accepted and ignored (every child starts on
  // mpirun's node and maxprocs are started or none).
  if (Info* i = info_from_handle(info)) {
    if (auto wdir = i->get("wdir")) app->wdir = *wdir;
    if (auto path = i->get("path")) {
      if (!path->empty() && app->command.find('/') == std::string::npos)
        app->env.push_back("PATH=" + *path + ":" + (getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin"));
    }
  }
  return MPI_SUCCESS;
}

}  // namespace

}  // namespace axon::mpi::dpm

namespace axon::mpi {

using namespace dpm;  // the entry points of this part of dpm (mpi/dpm.h)

MPI_Comm dpm_parent() { return parent_comm; }

// MPI_Init of a spawned process: connect to the parent. Collective over
// MPI_COMM_WORLD (every child runs MPI_Init).
void dpm_init_parent() {
  const std::string& port = parent_port_param.get();
  if (port.empty() || parent_comm != MPI_COMM_NULL) return;
  Comm* out = nullptr;
  int rc = dpm_connect(port.c_str(), static_cast<double>(timeout_param.get()), 0, comm_world(), &out);
  if (rc != MPI_SUCCESS) {
    log::error("MPI_Init: this process was spawned but cannot connect to its parent (AXON_DPM_PARENT_PORT)");
    rte::abort_job(1, "cannot connect to the parent");
  }
  out->name = "MPI_COMM_PARENT";  // its default name (MPI-4.1 11.8.2)
  parent_comm = out->handle;
  if (parent_keyval == MPI_KEYVAL_INVALID)
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, forget_parent, &parent_keyval, nullptr);
  PMPI_Comm_set_attr(parent_comm, parent_keyval, nullptr);
}

}  // namespace axon::mpi

using namespace axon;
using namespace axon::mpi;
using namespace axon::mpi::dpm;

AXON_API(int, MPI_Comm_spawn, (const char* command, char* argv[], int maxprocs, MPI_Info info, int root,
                               MPI_Comm comm, MPI_Comm* intercomm, int array_of_errcodes[])) {
  const char* fn = "MPI_Comm_spawn";
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (int rc = check_rooted_call(c, root, intercomm, "intercomm", fn)) return rc;
  std::vector<rte::SpawnApp> apps;
  std::string why;
  int arg_error = MPI_SUCCESS;
  double timeout = 0;
  if (c->rank() == root) {
    apps.emplace_back();
    arg_error = read_app(command, argv, maxprocs, info, &apps[0], &why);
    timeout = timeout_of(info);
  }
  return spawn_common(fn, c, root, std::move(apps), arg_error, why, timeout, intercomm, array_of_errcodes);
}

AXON_API(int, MPI_Comm_spawn_multiple, (int count, char* array_of_commands[], char** array_of_argv[],
                                        const int array_of_maxprocs[], const MPI_Info array_of_info[], int root,
                                        MPI_Comm comm, MPI_Comm* intercomm, int array_of_errcodes[])) {
  const char* fn = "MPI_Comm_spawn_multiple";
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (int rc = check_rooted_call(c, root, intercomm, "intercomm", fn)) return rc;
  std::vector<rte::SpawnApp> apps;
  std::string why;
  int arg_error = MPI_SUCCESS;
  double timeout = 0;
  if (c->rank() == root) {
    if (count <= 0 || !array_of_commands || !array_of_maxprocs) {
      arg_error = MPI_ERR_ARG;
      why = "count must be positive and the arrays non-NULL";
    }
    for (int i = 0; arg_error == MPI_SUCCESS && i < count; ++i) {
      apps.emplace_back();
      MPI_Info info_i = array_of_info ? array_of_info[i] : MPI_INFO_NULL;
      arg_error = read_app(array_of_commands[i], array_of_argv ? array_of_argv[i] : nullptr, array_of_maxprocs[i],
                           info_i, &apps.back(), &why);
      if (i == 0) timeout = timeout_of(info_i);
    }
  }
  return spawn_common(fn, c, root, std::move(apps), arg_error, why, timeout, intercomm, array_of_errcodes);
}
