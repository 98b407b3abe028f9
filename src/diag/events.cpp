// src/diag/events: the MPI_T event registry and the raise_* calls.
//
// Delivery and callback safety (MPI-4.1 15.3.8): Axon raises events from
// inside MPI calls, possibly with the library lock held, one raise at a time
// (the registry mutex serializes them). That context satisfies callbacks
// registered as MPI_T_CB_REQUIRE_MPI_RESTRICTED, _THREAD_SAFE or
// _ASYNC_SIGNAL_SAFE: they run at once, in the raising thread, and the least
// restrictive of them registered is the one called. A callback registered
// only as MPI_T_CB_REQUIRE_NONE may call any MPI function, which would
// deadlock there: its instances are queued (up to kDeferredLimit per
// registration) and delivered at the tool's next MPI_T call; instances past
// the limit are counted and reported to the dropped handler at that point.
#include "diag/events.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "base/clock.h"
#include "base/param.h"

namespace axon::diag::events {

namespace detail {
std::atomic<bool> subscribed[static_cast<int>(Event::Count)];
}

namespace {

IntParam unexpected_threshold_param{
    "AXON_T_UNEXPECTED_THRESHOLD", 1024, Range{1, int64_t{1} << 40},
    "Length of the unexpected-message queue past which the MPI_T event axon_unexpected_growth is raised: at "
    "length T+1, 2T+1, 3T+1, ..."};

constexpr size_t kDeferredLimit = 1024;

// Element layouts (the structs raise_* fill).
struct ProtocolSwitchData {
  int peer;
  int pad;
  unsigned long long bytes;
  int transport, protocol;
};
struct UnexpectedGrowthData {
  unsigned long long length;
  int source, tag;
};
struct CollAlgorithmData {
  unsigned context_id;
  int comm_size;
  unsigned long long bytes;
  char collective[kNameField];
  char algorithm[kNameField];
};
struct ConnectionSetupData {
  int peer, transport;
};

const std::vector<EventType>& types() {
  static const std::vector<EventType> built = [] {
    const Enumeration* transport = &enumerations()[0];
    const Enumeration* protocol = &enumerations()[1];
    std::vector<EventType> t;
    t.push_back({"axon_protocol_switch",
                 "A send to a peer used another protocol than the previous send to it. Elements: peer (world "
                 "rank), bytes, transport (axon_transport), protocol (axon_protocol, the event's enumeration)",
                 "pml",
                 MPI_T_VERBOSITY_TUNER_DETAIL,
                 {{"peer", MPI_INT, offsetof(ProtocolSwitchData, peer), sizeof(int)},
                  {"bytes", MPI_UNSIGNED_LONG_LONG, offsetof(ProtocolSwitchData, bytes), 8},
                  {"transport", MPI_INT, offsetof(ProtocolSwitchData, transport), sizeof(int)},
                  {"protocol", MPI_INT, offsetof(ProtocolSwitchData, protocol), sizeof(int)}},
                 sizeof(ProtocolSwitchData),
                 protocol});
    t.push_back({"axon_unexpected_growth",
                 "The unexpected-message queue grew past AXON_T_UNEXPECTED_THRESHOLD T (raised at T+1, 2T+1, "
                 "...). Elements: length, source, tag (of the message that made it so)",
                 "pml",
                 MPI_T_VERBOSITY_TUNER_BASIC,
                 {{"length", MPI_UNSIGNED_LONG_LONG, offsetof(UnexpectedGrowthData, length), 8},
                  {"source", MPI_INT, offsetof(UnexpectedGrowthData, source), sizeof(int)},
                  {"tag", MPI_INT, offsetof(UnexpectedGrowthData, tag), sizeof(int)}},
                 sizeof(UnexpectedGrowthData),
                 nullptr});
    t.push_back({"axon_coll_algorithm",
                 "A collective chose its algorithm. Elements: context_id, comm_size, bytes, collective and "
                 "algorithm (MPI_CHAR fields of 32 bytes, null-terminated)",
                 "coll",
                 MPI_T_VERBOSITY_TUNER_BASIC,
                 {{"context_id", MPI_UNSIGNED, offsetof(CollAlgorithmData, context_id), sizeof(unsigned)},
                  {"comm_size", MPI_INT, offsetof(CollAlgorithmData, comm_size), sizeof(int)},
                  {"bytes", MPI_UNSIGNED_LONG_LONG, offsetof(CollAlgorithmData, bytes), 8},
                  {"collective", MPI_CHAR, offsetof(CollAlgorithmData, collective), kNameField},
                  {"algorithm", MPI_CHAR, offsetof(CollAlgorithmData, algorithm), kNameField}},
                 sizeof(CollAlgorithmData),
                 nullptr});
    t.push_back({"axon_connection_setup",
                 "A transport connection to a peer became usable. Elements: peer (world rank), transport "
                 "(axon_transport, the event's enumeration)",
                 "btl",
                 MPI_T_VERBOSITY_USER_DETAIL,
                 {{"peer", MPI_INT, offsetof(ConnectionSetupData, peer), sizeof(int)},
                  {"transport", MPI_INT, offsetof(ConnectionSetupData, transport), sizeof(int)}},
                 sizeof(ConnectionSetupData),
                 transport});
    return t;
  }();
  return built;
}

// registry_lock guards the registrations and serializes raises (recursive: a
// callback may free or change its registration). delivery_lock keeps a
// registration from being freed while a deferred callback of it runs.
std::recursive_mutex registry_lock;
std::recursive_mutex delivery_lock;
std::vector<std::shared_ptr<Registration>> live;
std::atomic<bool> anything_deferred{false};  // lets deliver_deferred return at once (every MPI_T call makes one)

thread_local std::vector<const Instance*> delivering;  // instances whose callback runs on this thread

void update_subscribed(int event) {
  bool any = false;
  for (const auto& r : live)
    if (r->event == event)
      for (const Callback& c : r->callbacks) any = any || c.function;
  detail::subscribed[event].store(any, std::memory_order_relaxed);
}

void call(const Callback& c, const Instance& instance, Registration& r, int slot) {
  delivering.push_back(&instance);
  c.function(reinterpret_cast<MPI_T_event_instance>(const_cast<Instance*>(&instance)),
             reinterpret_cast<MPI_T_event_registration>(&r), safety_level(slot), c.user_data);
  delivering.pop_back();
}

void raise(Event e, const void* data, size_t size) {
  std::lock_guard<std::recursive_mutex> lock(registry_lock);
  Instance instance{static_cast<int>(e), now_ns(), {}};
  std::memcpy(instance.data, data, size);
  // A copy: a callback may free registrations.
  std::vector<std::shared_ptr<Registration>> targets;
  for (const auto& r : live)
    if (r->event == static_cast<int>(e)) targets.push_back(r);
  for (const auto& r : targets) {
    if (std::find(live.begin(), live.end(), r) == live.end()) continue;
    int slot = -1;
    for (int s = 1; s < kSafetyLevels && slot < 0; ++s)
      if (r->callbacks[s].function) slot = s;
    if (slot >= 0) {
      Callback c = r->callbacks[slot];
      call(c, instance, *r, slot);
    } else if (r->callbacks[0].function) {
      if (r->deferred.size() < kDeferredLimit)
        r->deferred.push_back(instance);
      else
        ++r->dropped;
      anything_deferred.store(true, std::memory_order_release);
    }
  }
}

void copy_name(char (&field)[kNameField], const char* name) {
  std::memset(field, 0, kNameField);
  if (name) std::strncpy(field, name, kNameField - 1);
}

}  // namespace

const std::vector<Enumeration>& enumerations() {
  static const std::vector<Enumeration> built = {
      {"axon_transport", {"self", "sm", "tcp", "verbs", "other"}},
      {"axon_protocol",
       {"eager", "eager_sync", "rendezvous_get", "rendezvous_put", "fragments", "device_ipc", "device_staged"}},
  };
  return built;
}

const EventType& event_type(int index) { return types()[static_cast<size_t>(index)]; }
int num_events() { return static_cast<int>(types().size()); }

const Instance* instance_of(MPI_T_event_instance handle) {
  for (const Instance* i : delivering)
    if (reinterpret_cast<MPI_T_event_instance>(const_cast<Instance*>(i)) == handle) return i;
  return nullptr;
}

int safety_slot(MPI_T_cb_safety level) {
  switch (level) {
    case MPI_T_CB_REQUIRE_NONE: return 0;
    case MPI_T_CB_REQUIRE_MPI_RESTRICTED: return 1;
    case MPI_T_CB_REQUIRE_THREAD_SAFE: return 2;
    case MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE: return 3;
  }
  return -1;
}

MPI_T_cb_safety safety_level(int slot) {
  static constexpr MPI_T_cb_safety levels[kSafetyLevels] = {
      MPI_T_CB_REQUIRE_NONE, MPI_T_CB_REQUIRE_MPI_RESTRICTED, MPI_T_CB_REQUIRE_THREAD_SAFE,
      MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE};
  return levels[slot];
}

MPI_T_event_registration allocate_registration(int event) {
  std::lock_guard<std::recursive_mutex> lock(registry_lock);
  auto r = std::make_shared<Registration>();
  r->event = event;
  live.push_back(r);
  return reinterpret_cast<MPI_T_event_registration>(r.get());
}

std::shared_ptr<Registration> registration_of(MPI_T_event_registration handle) {
  std::lock_guard<std::recursive_mutex> lock(registry_lock);
  for (const auto& r : live)
    if (reinterpret_cast<MPI_T_event_registration>(r.get()) == handle) return r;
  return nullptr;
}

bool free_registration(MPI_T_event_registration handle) {
  std::lock_guard<std::recursive_mutex> delivery(delivery_lock);
  std::lock_guard<std::recursive_mutex> lock(registry_lock);
  for (auto it = live.begin(); it != live.end(); ++it)
    if (reinterpret_cast<MPI_T_event_registration>(it->get()) == handle) {
      int event = (*it)->event;
      live.erase(it);
      update_subscribed(event);
      return true;
    }
  return false;
}

void set_callback(Registration& r, int slot, MPI_T_event_cb_function* function, void* user_data) {
  std::lock_guard<std::recursive_mutex> lock(registry_lock);
  r.callbacks[slot] = {function, user_data};
  update_subscribed(r.event);
}

void set_dropped_handler(Registration& r, MPI_T_event_dropped_cb_function* handler) {
  std::lock_guard<std::recursive_mutex> lock(registry_lock);
  r.dropped_handler = handler;
}

void deliver_deferred() {
  if (!delivering.empty() || !anything_deferred.load(std::memory_order_acquire)) return;
  std::lock_guard<std::recursive_mutex> delivery(delivery_lock);
  struct Pending {
    std::shared_ptr<Registration> r;
    std::vector<Instance> instances;
    uint64_t dropped;
  };
  std::vector<Pending> pending;
  {
    std::lock_guard<std::recursive_mutex> lock(registry_lock);
    anything_deferred.store(false, std::memory_order_relaxed);
    for (const auto& r : live)
      if (!r->deferred.empty() || r->dropped) {
        pending.push_back({r, std::move(r->deferred), r->dropped});
        r->deferred.clear();
        r->dropped = 0;
      }
  }
  // Outside the registry lock: these callbacks may call MPI. The handle
  // stays live (delivery_lock holds off MPI_T_event_handle_free from other
  // threads); a callback that frees its own registration ends its delivery.
  for (Pending& p : pending) {
    for (const Instance& i : p.instances) {
      if (!registration_of(reinterpret_cast<MPI_T_event_registration>(p.r.get()))) break;
      Callback c = p.r->callbacks[0];
      if (c.function) call(c, i, *p.r, 0);
    }
    if (p.dropped && p.r->dropped_handler && registration_of(reinterpret_cast<MPI_T_event_registration>(p.r.get())))
      p.r->dropped_handler(static_cast<MPI_Count>(p.dropped), reinterpret_cast<MPI_T_event_registration>(p.r.get()),
                           0, MPI_T_CB_REQUIRE_NONE, p.r->callbacks[0].user_data);
  }
}

uint64_t timestamp_now() { return now_ns(); }

// ---- raise_* ---------------------------------------------------------------------

void raise_protocol_switch(int peer, uint64_t bytes, Transport transport, Protocol protocol) {
  ProtocolSwitchData d{peer, 0, bytes, static_cast<int>(transport), static_cast<int>(protocol)};
  raise(Event::ProtocolSwitch, &d, sizeof d);
}

void raise_unexpected_growth(uint64_t length, int source, int tag) {
  auto threshold = static_cast<uint64_t>(unexpected_threshold_param.get());
  if (length <= threshold || (length - threshold - 1) % threshold != 0) return;
  UnexpectedGrowthData d{length, source, tag};
  raise(Event::UnexpectedGrowth, &d, sizeof d);
}

void raise_coll_algorithm(uint32_t context_id, int comm_size, const char* collective, const char* algorithm,
                          uint64_t bytes) {
  CollAlgorithmData d{context_id, comm_size, bytes, {}, {}};
  copy_name(d.collective, collective);
  copy_name(d.algorithm, algorithm);
  raise(Event::CollAlgorithm, &d, sizeof d);
}

void raise_connection_setup(int peer, Transport transport) {
  ConnectionSetupData d{peer, static_cast<int>(transport)};
  raise(Event::ConnectionSetup, &d, sizeof d);
}

}  // namespace axon::diag::events
