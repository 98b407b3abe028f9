// The hardware a process runs on, as MPI sees it (MPI-4.1 7.4.2 and 11.4.3):
// hwloc object types named like "NUMANode" or "hwloc://NUMANode".
#pragma once

#include <string>

namespace axon::mpi {

// The logical index of the object of type `name` that holds every CPU this
// process is bound to, or MPI_UNDEFINED when the name is unknown or the
// binding spans several such objects.
int hw_object_index(const std::string& name);

}  // namespace axon::mpi
