// Handle <-> integer conversion of the MPI 5.0 ABI (MPI_Comm_toint /
// MPI_Comm_fromint and the same for every handle kind), which replaces the
// c2f/f2c functions for Fortran and other language bindings.
//
// Predefined handles have small constant values fixed by the ABI (all below
// kPredefinedLimit); they convert to exactly those values, so a binding can
// compare integers with the constants. Other handles are pointers: each one
// gets an integer from a per-kind table the first time it is converted, and
// keeps it (an object freed and a new one allocated at the same address get
// the same integer, which is harmless: the old handle is invalid anyway).
// Integers of user handles start at kFirstUserInt, far above every
// predefined value.
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "mpi/api.h"

namespace axon::mpi {
namespace {

constexpr std::uintptr_t kPredefinedLimit = 0x400;
constexpr int kFirstUserInt = 0x10000;

enum HandleKind { kComm, kDatatype, kGroup, kRequest, kFile, kWin, kOp, kInfo, kErrhandler, kMessage,
                  kSession, kKindCount };

struct HandleTable {
  std::unordered_map<std::uintptr_t, int> to_int;
  std::vector<std::uintptr_t> from_int;
};

std::mutex tables_lock;
HandleTable tables[kKindCount];

int to_int(HandleKind kind, const void* handle) {
  const auto value = reinterpret_cast<std::uintptr_t>(handle);
  if (value < kPredefinedLimit) return static_cast<int>(value);
  std::lock_guard<std::mutex> lock(tables_lock);
  HandleTable& t = tables[kind];
  auto [it, inserted] = t.to_int.try_emplace(value, 0);
  if (inserted) {
    it->second = kFirstUserInt + static_cast<int>(t.from_int.size());
    t.from_int.push_back(value);
  }
  return it->second;
}

// An integer that no handle was converted to gives the kind's null handle.
std::uintptr_t from_int(HandleKind kind, int i, std::uintptr_t null_value) {
  if (i >= 0 && static_cast<std::uintptr_t>(i) < kPredefinedLimit) return static_cast<std::uintptr_t>(i);
  std::lock_guard<std::mutex> lock(tables_lock);
  const HandleTable& t = tables[kind];
  if (i < kFirstUserInt || static_cast<size_t>(i - kFirstUserInt) >= t.from_int.size()) return null_value;
  return t.from_int[static_cast<size_t>(i - kFirstUserInt)];
}

}  // namespace
}  // namespace axon::mpi

using namespace axon::mpi;

#define AXON_HANDLE_CONVERSION(Type, Name, kind, null_handle)                          \
  AXON_API(int, MPI_##Name##_toint, (Type handle)) { return to_int(kind, handle); }    \
  AXON_API(Type, MPI_##Name##_fromint, (int value)) {                                  \
    return reinterpret_cast<Type>(                                                     \
        from_int(kind, value, reinterpret_cast<std::uintptr_t>(null_handle)));         \
  }

AXON_HANDLE_CONVERSION(MPI_Comm, Comm, kComm, MPI_COMM_NULL)
AXON_HANDLE_CONVERSION(MPI_Datatype, Type, kDatatype, MPI_DATATYPE_NULL)
AXON_HANDLE_CONVERSION(MPI_Group, Group, kGroup, MPI_GROUP_NULL)
AXON_HANDLE_CONVERSION(MPI_Request, Request, kRequest, MPI_REQUEST_NULL)
AXON_HANDLE_CONVERSION(MPI_File, File, kFile, MPI_FILE_NULL)
AXON_HANDLE_CONVERSION(MPI_Win, Win, kWin, MPI_WIN_NULL)
AXON_HANDLE_CONVERSION(MPI_Op, Op, kOp, MPI_OP_NULL)
AXON_HANDLE_CONVERSION(MPI_Info, Info, kInfo, MPI_INFO_NULL)
AXON_HANDLE_CONVERSION(MPI_Errhandler, Errhandler, kErrhandler, MPI_ERRHANDLER_NULL)
AXON_HANDLE_CONVERSION(MPI_Message, Message, kMessage, MPI_MESSAGE_NULL)
AXON_HANDLE_CONVERSION(MPI_Session, Session, kSession, MPI_SESSION_NULL)
