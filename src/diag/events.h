// MPI_T events (MPI-4 §15.3.8): what Axon raises for tools that subscribe.
// The layers that see a thing happen call the raise_* functions below; when
// no tool has a registration for that event the call costs one relaxed load
// of a flag (subscribed()), so callers test it first on hot paths:
//
//     if (diag::events::subscribed(diag::events::Event::ProtocolSwitch))
//       diag::events::raise_protocol_switch(peer, bytes, transport, protocol);
//
// src/mpi/tool.cpp implements the MPI_T_event_* calls on top of this file's
// registry (events.cpp); docs/diagnostics.md lists the events and their
// elements.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace axon::diag::events {

// The events Axon defines, in MPI_T event index order.
enum class Event : int {
  ProtocolSwitch = 0,  // a point-to-point send to a peer used another protocol than the previous one to it
  UnexpectedGrowth,    // the unexpected-message queue grew past AXON_T_UNEXPECTED_THRESHOLD
  CollAlgorithm,       // a collective chose its algorithm (once per communicator, call and algorithm)
  ConnectionSetup,     // a transport connection to a peer was established
  Count
};

// Element codes, exported to tools as MPI_T enumerations (names in events.cpp).
enum class Transport : int { Self = 0, Sm, Tcp, Verbs, Other };
enum class Protocol : int {
  Eager = 0,      // payload with the match header (short or full header)
  EagerSync,      // eager, synchronous (the receiver acks)
  RendezvousGet,  // the receiver reads the sender's buffer in one copy
  RendezvousPut,  // the sender writes the receiver's buffer in one copy
  Fragments,      // clear-to-send, then fragments of the eager limit
  DeviceIpc,      // GPU buffer, CUDA IPC between ranks of a node
  DeviceStaged,   // GPU buffer, staged through pinned host chunks
};

namespace detail {
extern std::atomic<bool> subscribed[static_cast<int>(Event::Count)];
}

inline bool subscribed(Event e) {
  return detail::subscribed[static_cast<int>(e)].load(std::memory_order_relaxed);
}

// peer: world rank; bytes: message size.
void raise_protocol_switch(int peer, uint64_t bytes, Transport transport, Protocol protocol);
// length: the queue's length now; source, tag: of the message that made it so.
void raise_unexpected_growth(uint64_t length, int source, int tag);
// context_id and size identify the communicator; collective and algorithm are
// names (static strings, e.g. "bcast", "binomial"); bytes: the call's payload.
void raise_coll_algorithm(uint32_t context_id, int comm_size, const char* collective, const char* algorithm,
                          uint64_t bytes);
void raise_connection_setup(int peer, Transport transport);


// ---- the registry behind MPI_T_event_* (src/mpi/tool_events.cpp) -------------
// Everything below is for the MPI_T layer; other layers only raise.

// One element of an event's data: MPI_T_event_read copies `size` bytes from
// `displacement`. Strings are MPI_CHAR fields of kNameField bytes, null-terminated.
constexpr size_t kNameField = 32;
struct Element {
  const char* name;
  MPI_Datatype datatype;
  MPI_Aint displacement;
  size_t size;
};

// An enumeration of element codes (Transport, Protocol); its MPI_T_enum is
// the address of its entry in enumerations().
struct Enumeration {
  const char* name;
  std::vector<const char*> items;  // item i has value i
};
const std::vector<Enumeration>& enumerations();

struct EventType {
  const char* name;
  const char* description;
  const char* category;  // the MPI_T category that lists it
  int verbosity;
  std::vector<Element> elements;
  size_t data_size;
  const Enumeration* enumeration;  // of its last enum element, or nullptr
};
const EventType& event_type(int index);  // 0 <= index < Event::Count
int num_events();

// An event as a callback sees it: valid only during the callback.
struct Instance {
  int event;
  uint64_t timestamp;  // source 0's clock: CLOCK_MONOTONIC, nanoseconds
  alignas(8) unsigned char data[96];
};
static_assert(sizeof(Instance::data) >= 80, "the largest event's data fits");

// The live Instance behind a handle, or nullptr (compared with the instances
// this thread is delivering, never dereferenced).
const Instance* instance_of(MPI_T_event_instance handle);

// The four MPI_T_cb_safety levels, least restrictive first.
constexpr int kSafetyLevels = 4;
int safety_slot(MPI_T_cb_safety level);  // -1 when not a level
MPI_T_cb_safety safety_level(int slot);

struct Callback {
  MPI_T_event_cb_function* function = nullptr;
  void* user_data = nullptr;
};

struct Registration {
  int event;
  Callback callbacks[kSafetyLevels];
  MPI_T_event_dropped_cb_function* dropped_handler = nullptr;
  // Instances waiting for a callback that may not run inside MPI (see
  // events.cpp) and those that did not fit.
  std::vector<Instance> deferred;
  uint64_t dropped = 0;
};

// Handle <-> object; registration_of compares with the live registrations,
// so a garbage handle gives nullptr.
MPI_T_event_registration allocate_registration(int event);
std::shared_ptr<Registration> registration_of(MPI_T_event_registration handle);
// Ends the registration; false when the handle is not live.
bool free_registration(MPI_T_event_registration handle);
void set_callback(Registration& r, int slot, MPI_T_event_cb_function* function, void* user_data);
void set_dropped_handler(Registration& r, MPI_T_event_dropped_cb_function* handler);

// Runs the callbacks of deferred instances and the dropped handlers; called
// where no library lock is held (every MPI_T call); does nothing inside a callback.
void deliver_deferred();

uint64_t timestamp_now();

}  // namespace axon::diag::events
