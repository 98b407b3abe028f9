// Partitioned point-to-point communication (MPI-4.1 chapter 4):
// MPI_Psend_init / MPI_Precv_init, MPI_Pready[_range|_list], MPI_Parrived.
//
// A partitioned request is a persistent pml::Request marked `partitioned`
// that no queue knows; its state (below) hangs off user_data. Axon moves the
// whole message at once: the send starts when the last partition is marked
// ready (by whichever thread marks it), the receive is posted at MPI_Start,
// and every partition has arrived when the message has. The standard allows
// this (partitions may be transferred together); what it guarantees the
// program — data only moves after Pready, Parrived says true only for data
// that is there — holds.
//
// Partitioned operations match only each other: they travel on the
// communicator's point-to-point context with the tag mapped below -2^30
// (user tags stop at kTagUpperBound = 2^30-1). They pair in the order of
// their initialization calls (MPI-4.1 4.2.1), not of MPI_Start or of the last
// MPI_Pready: the k-th MPI_Psend_init to (dest, tag) on a communicator pairs
// with the k-th MPI_Precv_init from that source and tag, and k is folded into
// the wire tag (see wire_tag) so that a send launched early cannot be taken
// by an earlier-initialized receive.
#include <atomic>
#include <memory>
#include <vector>

#include "mpi/api.h"
#include "mpi/info.h"
#include "mpi/partitioned.h"
#include "progress/progress.h"

namespace axon::mpi {
namespace {

constexpr uint32_t kPartitionedMagic = 0x50415254u;  // "PART"

struct Partitioned {
  uint32_t magic = kPartitionedMagic;
  bool is_send;
  void* buffer;
  int partitions;
  MPI_Count count;  // items per partition
  const Datatype* type;
  int peer;
  int tag;  // the user's tag
  uint32_t pairing = 0;  // k: this is the k-th init of its (direction, peer, tag) on the communicator
  Comm* comm;
  // Per start: which partitions are ready (send) and how many.
  std::unique_ptr<std::atomic<uint8_t>[]> ready;
  std::atomic<int> ready_count{0};
  pml::Request* inner = nullptr;  // the transfer of the current start
};

// The tag a partitioned transfer travels with: below -2^30, so that it never
// matches a user tag, with the pairing index k in bits 20-29 when the user
// tag fits in 20 bits. Larger tags (or k beyond 1023, taken modulo 1024) share
// a wire tag with another pairing; those pairs then match in launch order,
// which is only observable if they are started out of initialization order.
int wire_tag(int tag, uint32_t pairing) {
  constexpr int kTagBits = 20;
  int code = tag;
  if (tag < (1 << kTagBits)) code = static_cast<int>((pairing & 1023u) << kTagBits) | tag;
  return -0x40000000 - code;
}

Partitioned* state_of(pml::Request* r) { return static_cast<Partitioned*>(r->user_data); }

// The transfer of the whole message completed: so did the partitioned operation.
void inner_done(pml::Request* inner) {
  auto* outer = static_cast<pml::Request*>(inner->user_data);
  Partitioned* p = state_of(outer);
  outer->error = inner->error;
  outer->bytes = inner->bytes;
  outer->cancelled = inner->cancelled;
  if (!p->is_send) {
    outer->source = inner->source;
    outer->tag = p->tag;
  }
  p->inner = nullptr;
  pml::request_complete(outer);
}

// Starts the transfer; caller holds the pml lock.
int launch(pml::Request* outer) {
  Partitioned* p = state_of(outer);
  MPI_Count total = p->count * p->partitions;
  pml::Request* inner = nullptr;
  int wire = wire_tag(p->tag, p->pairing);
  int rc = p->is_send ? pml::isend(p->buffer, total, p->type, p->peer, wire, &p->comm->p2p, pml::SendMode::Standard,
                                   &inner)
                      : pml::irecv(p->buffer, total, p->type, p->peer, wire, &p->comm->p2p, &inner);
  if (rc != MPI_SUCCESS) return rc;
  inner->user_data = outer;
  p->inner = inner;
  pml::release_when_complete(inner, inner_done);
  return MPI_SUCCESS;
}

int init(const char* fn, bool is_send, const void* buf, int partitions, MPI_Count count, MPI_Datatype datatype,
         int peer, int tag, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  AXON_COMM_OR_RAISE(c, comm, fn);
  if (!request) return raise(c, MPI_ERR_ARG, fn, "request is NULL");
  if (info != MPI_INFO_NULL && !info_from_handle(info)) return raise(c, MPI_ERR_INFO, fn, "invalid info");
  if (partitions < 1) return raise(c, MPI_ERR_ARG, fn, "partitions must be at least 1");
  Datatype* type = nullptr;
  // Wildcards are not allowed: partitioned receives name their source and tag.
  if (!is_send && peer == MPI_ANY_SOURCE) return raise(c, MPI_ERR_RANK, fn, "MPI_ANY_SOURCE is not allowed");
  if (!is_send && tag == MPI_ANY_TAG) return raise(c, MPI_ERR_TAG, fn, "MPI_ANY_TAG is not allowed");
  int rc = is_send ? validate_send(c, buf, count, datatype, peer, tag, &type)
                   : validate_recv(c, buf, count, datatype, peer, tag, &type);
  if (rc != MPI_SUCCESS) return raise(c, rc, fn);
  size_t bytes = 0;
  if (!bytes_for_count(*type, count * partitions, &bytes)) return raise(c, MPI_ERR_COUNT, fn, "message too large");
  auto p = std::make_unique<Partitioned>();
  p->is_send = is_send;
  p->buffer = const_cast<void*>(buf);
  p->partitions = partitions;
  p->count = count;
  p->type = type;
  p->peer = peer;
  p->tag = tag;
  p->comm = c;
  p->ready = std::make_unique<std::atomic<uint8_t>[]>(static_cast<size_t>(partitions));
  datatype_retain(type);  // the request's reference, dropped by request_release
  progress::Guard guard;
  // MPI_PROC_NULL peers never transfer anything: they take no pairing index.
  if (peer != MPI_PROC_NULL) p->pairing = c->partitioned_inits[{is_send, peer, tag}]++;
  pml::Request* r = standalone_request(is_send ? pml::Request::Kind::Send : pml::Request::Kind::Recv, c);
  r->persistent = true;
  r->partitioned = true;
  r->type = type;
  r->user_data = p.release();
  r->complete.store(true, std::memory_order_relaxed);  // inactive persistent requests count as complete
  *request = handle_of(r);
  return MPI_SUCCESS;
}

// The partitioned request behind a handle, or nullptr.
pml::Request* partitioned_of(MPI_Request h) {
  if (h == MPI_REQUEST_NULL) return nullptr;
  pml::Request* r = request_of(h);
  if (!pml::request_valid(r) || !r->partitioned) return nullptr;
  Partitioned* p = state_of(r);
  return p && p->magic == kPartitionedMagic ? r : nullptr;
}

// Marks partitions [low, high] ready; launches the send with the last one.
int mark_ready(const char* fn, MPI_Request request, const int* list, int low, int high) {
  pml::Request* r = partitioned_of(request);
  if (!r) return raise_self(MPI_ERR_REQUEST, fn, "not a partitioned request");
  Partitioned* p = state_of(r);
  if (!p->is_send) return raise(p->comm, MPI_ERR_REQUEST, fn, "partitions of a receive cannot be marked ready");
  if (!r->active) return raise(p->comm, MPI_ERR_REQUEST, fn, "the request has not been started");
  int n = list ? high : high - low + 1;
  for (int i = 0; i < n; ++i) {
    int part = list ? list[i] : low + i;
    if (part < 0 || part >= p->partitions) return raise(p->comm, MPI_ERR_ARG, fn, "partition out of range");
  }
  int newly = 0;
  for (int i = 0; i < n; ++i) {
    int part = list ? list[i] : low + i;
    if (p->ready[static_cast<size_t>(part)].exchange(1, std::memory_order_acq_rel) == 0) ++newly;
  }
  if (newly == 0) return MPI_SUCCESS;
  if (p->ready_count.fetch_add(newly, std::memory_order_acq_rel) + newly == p->partitions) {
    progress::Guard guard;
    int rc = launch(r);
    if (rc != MPI_SUCCESS) return raise(p->comm, rc, fn);
  }
  return MPI_SUCCESS;
}

}  // namespace

int partitioned_start(pml::Request* r) {
  Partitioned* p = state_of(r);
  progress::Guard guard;
  for (int i = 0; i < p->partitions; ++i) p->ready[static_cast<size_t>(i)].store(0, std::memory_order_relaxed);
  p->ready_count.store(0, std::memory_order_release);
  r->complete.store(false, std::memory_order_release);
  r->error = MPI_SUCCESS;
  r->bytes = 0;
  r->cancelled = false;
  r->active = true;
  if (!p->is_send) return launch(r);
  return MPI_SUCCESS;
}

void partitioned_free(pml::Request* r) {
  Partitioned* p = state_of(r);
  p->magic = 0;
  delete p;
  r->user_data = nullptr;
}

}  // namespace axon::mpi

using namespace axon;
using namespace axon::mpi;

AXON_API(int, MPI_Psend_init, (const void* buf, int partitions, int count, MPI_Datatype datatype, int dest,
                               int tag, MPI_Comm comm, MPI_Info info, MPI_Request* request)) {
  return init("MPI_Psend_init", true, buf, partitions, count, datatype, dest, tag, comm, info, request);
}

AXON_API(int, MPI_Psend_init_c, (const void* buf, int partitions, MPI_Count count, MPI_Datatype datatype, int dest,
                                 int tag, MPI_Comm comm, MPI_Info info, MPI_Request* request)) {
  return init("MPI_Psend_init_c", true, buf, partitions, count, datatype, dest, tag, comm, info, request);
}

AXON_API(int, MPI_Precv_init, (void* buf, int partitions, int count, MPI_Datatype datatype, int source, int tag,
                               MPI_Comm comm, MPI_Info info, MPI_Request* request)) {
  return init("MPI_Precv_init", false, buf, partitions, count, datatype, source, tag, comm, info, request);
}

AXON_API(int, MPI_Precv_init_c, (void* buf, int partitions, MPI_Count count, MPI_Datatype datatype, int source,
                                 int tag, MPI_Comm comm, MPI_Info info, MPI_Request* request)) {
  return init("MPI_Precv_init_c", false, buf, partitions, count, datatype, source, tag, comm, info, request);
}

AXON_API(int, MPI_Pready, (int partition, MPI_Request request)) {
  return mark_ready("MPI_Pready", request, nullptr, partition, partition);
}

AXON_API(int, MPI_Pready_range, (int partition_low, int partition_high, MPI_Request request)) {
  if (partition_high < partition_low) return raise_self(MPI_ERR_ARG, "MPI_Pready_range", "empty range");
  return mark_ready("MPI_Pready_range", request, nullptr, partition_low, partition_high);
}

AXON_API(int, MPI_Pready_list, (int length, const int array_of_partitions[], MPI_Request request)) {
  if (length < 0 || (length > 0 && !array_of_partitions))
    return raise_self(MPI_ERR_ARG, "MPI_Pready_list", "invalid partition list");
  return mark_ready("MPI_Pready_list", request, array_of_partitions, 0, length);
}

AXON_API(int, MPI_Parrived, (MPI_Request request, int partition, int* flag)) {
  const char* fn = "MPI_Parrived";
  pml::Request* r = partitioned_of(request);
  if (!r) return raise_self(MPI_ERR_REQUEST, fn, "not a partitioned request");
  Partitioned* p = state_of(r);
  if (p->is_send) return raise(p->comm, MPI_ERR_REQUEST, fn, "not a partitioned receive");
  if (!flag) return raise(p->comm, MPI_ERR_ARG, fn, "flag is NULL");
  if (partition < 0 || partition >= p->partitions) return raise(p->comm, MPI_ERR_ARG, fn, "partition out of range");
  // An inactive request has (by the standard) all its partitions.
  if (!r->active) {
    *flag = 1;
    return MPI_SUCCESS;
  }
  if (!r->complete.load(std::memory_order_acquire)) progress::progress();
  *flag = r->complete.load(std::memory_order_acquire) ? 1 : 0;
  return MPI_SUCCESS;
}
