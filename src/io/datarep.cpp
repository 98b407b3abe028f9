// User data representations (MPI_Register_datarep[_c], MPI-4.1 14.5.3):
// the registry and the size of a type in such a representation (see io.h;
// the conversions of an access are in access.cpp).
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "io/io.h"

namespace axon::io {

namespace {

std::mutex datarep_lock;
std::vector<std::unique_ptr<UserDatarep>>& datareps() {
  static std::vector<std::unique_ptr<UserDatarep>> all;
  return all;
}

}  // namespace

const UserDatarep* find_datarep(const char* name) {
  std::lock_guard<std::mutex> g(datarep_lock);
  for (const auto& r : datareps())
    if (r->name == name) return r.get();
  return nullptr;
}

int register_datarep(const char* name, void* read, void* write, MPI_Datarep_extent_function* extent, void* extra,
                     bool large) {
  static const char* const kPredefined[] = {"native", "internal", "external32"};
  for (const char* p : kPredefined)
    if (std::strcmp(name, p) == 0) return MPI_ERR_DUP_DATAREP;
  std::lock_guard<std::mutex> g(datarep_lock);
  for (const auto& r : datareps())
    if (r->name == name) return MPI_ERR_DUP_DATAREP;
  auto r = std::make_unique<UserDatarep>();
  r->name = name;
  r->large = large;
  if (large) {
    r->read_c = reinterpret_cast<MPI_Datarep_conversion_function_c*>(read);
    r->write_c = reinterpret_cast<MPI_Datarep_conversion_function_c*>(write);
  } else {
    r->read = reinterpret_cast<MPI_Datarep_conversion_function*>(read);
    r->write = reinterpret_cast<MPI_Datarep_conversion_function*>(write);
  }
  r->extent = extent;
  r->extra = extra;
  datareps().push_back(std::move(r));
  return MPI_SUCCESS;
}

// Bytes of `count` items of `type` in a user representation: the file
// extents its extent function gives for each predefined type of the
// signature. `elements` gets the number of predefined items.
int user_size(const UserDatarep& r, const Datatype& type, size_t count, size_t* bytes, size_t* elements) {
  size_t unit = 0, unit_elements = 0;
  for (size_t i = 0; i < type.signature_count; ++i) {
    const SignatureRun& run = type.signature[i];
    MPI_Aint ext = 0;
    int rc = r.extent(to_handle(run.basic), &ext, r.extra);
    if (rc != MPI_SUCCESS) return rc;
    if (ext < 0) return MPI_ERR_CONVERSION;
    unit += static_cast<size_t>(ext) * run.count;
    unit_elements += run.count;
  }
  *bytes = unit * type.reps * count;
  if (elements) *elements = unit_elements * type.reps * count;
  return MPI_SUCCESS;
}

}  // namespace axon::io
