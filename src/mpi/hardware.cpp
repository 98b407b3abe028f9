// MPI_COMM_TYPE_HW_GUIDED's resource lookup and MPI_Get_hw_resource_info,
// both from hwloc.
//
// Resource types are hwloc object types, spelled as hwloc names them
// ("Package", "NUMANode", "L3Cache", "Core", ..., in any case), with or
// without the "hwloc://" scheme; MPI_Get_hw_resource_info reports them in
// the URI form, so its keys can be handed back to MPI_Comm_split_type
// unchanged.
#include "mpi/hardware.h"

#include <hwloc.h>

#include <strings.h>

#include <memory>

#include "mpi/api.h"
#include "mpi/info.h"

namespace axon::mpi {

namespace {

constexpr std::string_view kScheme = "hwloc://";

// This machine's topology and the CPUs this process is bound to.
class Binding {
 public:
  Binding() {
    if (hwloc_topology_init(&topo_) != 0) {
      topo_ = nullptr;
      return;
    }
    bound_ = hwloc_bitmap_alloc();
    ok_ = bound_ && hwloc_topology_load(topo_) == 0 && hwloc_get_cpubind(topo_, bound_, HWLOC_CPUBIND_PROCESS) == 0;
  }
  ~Binding() {
    if (bound_) hwloc_bitmap_free(bound_);
    if (topo_) hwloc_topology_destroy(topo_);
  }
  Binding(const Binding&) = delete;
  Binding& operator=(const Binding&) = delete;

  bool ok() const { return ok_; }
  hwloc_topology_t topology() const { return topo_; }
  // The object of `type` holding every bound CPU, or nullptr.
  hwloc_obj_t enclosing(hwloc_obj_type_t type) const {
    for (hwloc_obj_t o = hwloc_get_next_obj_by_type(topo_, type, nullptr); o;
         o = hwloc_get_next_obj_by_type(topo_, type, o))
      if (o->cpuset && hwloc_bitmap_isincluded(bound_, o->cpuset)) return o;
    return nullptr;
  }

 private:
  hwloc_topology_t topo_ = nullptr;
  hwloc_bitmap_t bound_ = nullptr;
  bool ok_ = false;
};

// hwloc_type_sscanf takes abbreviations and stops reading at the first
// character that is not a letter ("no_such_resource" reads as NUMANode), so
// a name is a resource type only when it is hwloc's own name of the type it
// reads as: an unknown resource type must give MPI_COMM_NULL (MPI-4.1 7.4.2).
bool parse_type(const std::string& type_name, hwloc_obj_type_t* type) {
  if (hwloc_type_sscanf(type_name.c_str(), type, nullptr, 0) != 0) return false;
  return strcasecmp(type_name.c_str(), hwloc_obj_type_string(*type)) == 0;
}

}  // namespace

int hw_object_index(const std::string& name) {
  std::string_view type_name = name;
  if (type_name.substr(0, kScheme.size()) == kScheme) type_name.remove_prefix(kScheme.size());
  hwloc_obj_type_t type;
  if (!parse_type(std::string(type_name), &type)) return MPI_UNDEFINED;
  Binding b;
  if (!b.ok()) return MPI_UNDEFINED;
  hwloc_obj_t o = b.enclosing(type);
  return o ? static_cast<int>(o->logical_index) : MPI_UNDEFINED;
}

}  // namespace axon::mpi

using namespace axon::mpi;

// One key per resource type the machine has, "hwloc://<type>": "true" when
// this process runs within one object of that type (so MPI_Comm_split_type
// with it as mpi_hw_resource_type gives a communicator), "false" when its
// binding spans several.
AXON_API(int, MPI_Get_hw_resource_info, (MPI_Info * hw_info)) {
  if (!hw_info) return raise_self(MPI_ERR_ARG, "MPI_Get_hw_resource_info", "hw_info is NULL");
  Info* out = info_new();
  Binding b;
  if (b.ok()) {
    for (hwloc_obj_type_t type : {HWLOC_OBJ_PACKAGE, HWLOC_OBJ_NUMANODE, HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L2CACHE,
                                  HWLOC_OBJ_L1CACHE, HWLOC_OBJ_CORE, HWLOC_OBJ_PU}) {
      if (hwloc_get_nbobjs_by_type(b.topology(), type) <= 0) continue;
      std::string key = std::string(kScheme) + hwloc_obj_type_string(type);
      out->set(key, b.enclosing(type) ? "true" : "false");
    }
  }
  *hw_info = info_handle(out);
  return MPI_SUCCESS;
}
