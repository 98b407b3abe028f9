// MPI_T events and event sources (MPI-4.1 15.3.8) on top of the registry in
// src/diag/events.cpp, which also says when callbacks run (per safety level).
//
// - Events: one per axon::diag::events::Event, bound to MPI_T_BIND_NO_OBJECT
//   (obj_handle is ignored). Axon understands no info hints: the get_info
//   calls return an empty info object.
// - Sources: one, index 0: CLOCK_MONOTONIC in nanoseconds; its timestamps
//   are ordered (raises are serialized).
// - Handles: registrations and instances are checked against the live ones
//   by value, so a garbage handle gives MPI_T_ERR_INVALID_HANDLE.
#include <cstring>
#include <limits>

#include "diag/events.h"
#include "mpi/api.h"
#include "mpi/info.h"
#include "mpi/tool.h"

namespace ev = axon::diag::events;

namespace {

using axon::mpi::tool::copy_string;

bool valid_event(int i) { return i >= 0 && i < ev::num_events(); }

MPI_T_enum enum_handle(const ev::Enumeration* e) {
  return e ? reinterpret_cast<MPI_T_enum>(const_cast<ev::Enumeration*>(e)) : MPI_T_ENUM_NULL;
}

// An info the caller owns (what every get_info call here returns).
void new_empty_info(MPI_Info* info) {
  if (info) *info = axon::mpi::info_handle(axon::mpi::info_new());
}

// An info argument is MPI_INFO_NULL or a live info object.
bool valid_info(MPI_Info info) { return info == MPI_INFO_NULL || axon::mpi::info_from_handle(info); }

constexpr const char* kSourceName = "axon_clock";
constexpr MPI_Count kTicksPerSecond = 1000000000;

}  // namespace

AXON_API(int, MPI_T_event_get_num, (int* num_events)) {
  AXON_T_REQUIRE_INIT();
  if (!num_events) return MPI_ERR_ARG;
  *num_events = ev::num_events();
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_event_get_info, (int event_index, char* name, int* name_len, int* verbosity,
                                     MPI_Datatype array_of_datatypes[], MPI_Aint array_of_displacements[],
                                     int* num_elements, MPI_T_enum* enumtype, MPI_Info* info, char* desc,
                                     int* desc_len, int* bind)) {
  AXON_T_REQUIRE_INIT();
  if (!valid_event(event_index)) return MPI_T_ERR_INVALID_INDEX;
  const ev::EventType& t = ev::event_type(event_index);
  copy_string(t.name, name, name_len);
  copy_string(t.description, desc, desc_len);
  if (verbosity) *verbosity = t.verbosity;
  if (num_elements) {
    // In: the length of the arrays; out: the number of elements.
    int room = *num_elements;
    for (int i = 0; i < room && i < static_cast<int>(t.elements.size()); ++i) {
      if (array_of_datatypes) array_of_datatypes[i] = t.elements[static_cast<size_t>(i)].datatype;
      if (array_of_displacements) array_of_displacements[i] = t.elements[static_cast<size_t>(i)].displacement;
    }
    *num_elements = static_cast<int>(t.elements.size());
  }
  if (enumtype) *enumtype = enum_handle(t.enumeration);
  new_empty_info(info);
  if (bind) *bind = MPI_T_BIND_NO_OBJECT;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_event_get_index, (const char* name, int* event_index)) {
  AXON_T_REQUIRE_INIT();
  if (!name || !event_index) return MPI_ERR_ARG;
  for (int i = 0; i < ev::num_events(); ++i)
    if (std::strcmp(ev::event_type(i).name, name) == 0) {
      *event_index = i;
      return MPI_SUCCESS;
    }
  return MPI_T_ERR_INVALID_NAME;
}

AXON_API(int, MPI_T_event_handle_alloc, (int event_index, void* obj_handle, MPI_Info info,
                                         MPI_T_event_registration* event_registration)) {
  (void)obj_handle;  // every Axon event is bound to no object
  AXON_T_REQUIRE_INIT();
  if (!valid_event(event_index)) return MPI_T_ERR_INVALID_INDEX;
  if (!event_registration) return MPI_ERR_ARG;
  if (!valid_info(info)) return MPI_ERR_INFO;
  *event_registration = ev::allocate_registration(event_index);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_event_handle_free, (MPI_T_event_registration event_registration, void* user_data,
                                        MPI_T_event_free_cb_function free_cb_function)) {
  AXON_T_REQUIRE_INIT();
  if (!ev::free_registration(event_registration)) return MPI_T_ERR_INVALID_HANDLE;
  // Freed at once (no callback of it runs any more): the free callback runs
  // here, in the caller's context, which restricts nothing.
  if (free_cb_function) free_cb_function(event_registration, MPI_T_CB_REQUIRE_NONE, user_data);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_event_handle_get_info, (MPI_T_event_registration event_registration, MPI_Info* info)) {
  AXON_T_REQUIRE_INIT();
  if (!ev::registration_of(event_registration)) return MPI_T_ERR_INVALID_HANDLE;
  if (!info) return MPI_ERR_ARG;
  new_empty_info(info);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_event_handle_set_info, (MPI_T_event_registration event_registration, MPI_Info info)) {
  AXON_T_REQUIRE_INIT();
  if (!ev::registration_of(event_registration)) return MPI_T_ERR_INVALID_HANDLE;
  if (!valid_info(info)) return MPI_ERR_INFO;
  return MPI_SUCCESS;  // no hint is understood
}

// A NULL function removes the callback of that safety level.
AXON_API(int, MPI_T_event_register_callback, (MPI_T_event_registration event_registration,
                                              MPI_T_cb_safety cb_safety, MPI_Info info, void* user_data,
                                              MPI_T_event_cb_function event_cb_function)) {
  AXON_T_REQUIRE_INIT();
  auto r = ev::registration_of(event_registration);
  if (!r) return MPI_T_ERR_INVALID_HANDLE;
  int slot = ev::safety_slot(cb_safety);
  if (slot < 0) return MPI_T_ERR_INVALID;
  if (!valid_info(info)) return MPI_ERR_INFO;
  ev::set_callback(*r, slot, event_cb_function, user_data);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_event_callback_get_info, (MPI_T_event_registration event_registration,
                                              MPI_T_cb_safety cb_safety, MPI_Info* info)) {
  AXON_T_REQUIRE_INIT();
  if (!ev::registration_of(event_registration)) return MPI_T_ERR_INVALID_HANDLE;
  if (ev::safety_slot(cb_safety) < 0) return MPI_T_ERR_INVALID;
  if (!info) return MPI_ERR_ARG;
  new_empty_info(info);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_event_callback_set_info, (MPI_T_event_registration event_registration,
                                              MPI_T_cb_safety cb_safety, MPI_Info info)) {
  AXON_T_REQUIRE_INIT();
  if (!ev::registration_of(event_registration)) return MPI_T_ERR_INVALID_HANDLE;
  if (ev::safety_slot(cb_safety) < 0) return MPI_T_ERR_INVALID;
  if (!valid_info(info)) return MPI_ERR_INFO;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_event_set_dropped_handler, (MPI_T_event_registration event_registration,
                                                MPI_T_event_dropped_cb_function dropped_cb_function)) {
  AXON_T_REQUIRE_INIT();
  auto r = ev::registration_of(event_registration);
  if (!r) return MPI_T_ERR_INVALID_HANDLE;
  ev::set_dropped_handler(*r, dropped_cb_function);
  return MPI_SUCCESS;
}

// ---- instances: valid inside the callback that received them -----------------------

AXON_API(int, MPI_T_event_read, (MPI_T_event_instance event_instance, int element_index, void* buffer)) {
  AXON_T_REQUIRE_INIT();
  const ev::Instance* i = ev::instance_of(event_instance);
  if (!i) return MPI_T_ERR_INVALID_HANDLE;
  const ev::EventType& t = ev::event_type(i->event);
  if (element_index < 0 || element_index >= static_cast<int>(t.elements.size())) return MPI_T_ERR_INVALID_INDEX;
  if (!buffer) return MPI_ERR_ARG;
  const ev::Element& e = t.elements[static_cast<size_t>(element_index)];
  std::memcpy(buffer, i->data + e.displacement, e.size);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_event_copy, (MPI_T_event_instance event_instance, void* buffer)) {
  AXON_T_REQUIRE_INIT();
  const ev::Instance* i = ev::instance_of(event_instance);
  if (!i) return MPI_T_ERR_INVALID_HANDLE;
  if (!buffer) return MPI_ERR_ARG;
  std::memcpy(buffer, i->data, ev::event_type(i->event).data_size);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_event_get_timestamp, (MPI_T_event_instance event_instance, MPI_Count* event_timestamp)) {
  AXON_T_REQUIRE_INIT();
  const ev::Instance* i = ev::instance_of(event_instance);
  if (!i) return MPI_T_ERR_INVALID_HANDLE;
  if (!event_timestamp) return MPI_ERR_ARG;
  *event_timestamp = static_cast<MPI_Count>(i->timestamp);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_event_get_source, (MPI_T_event_instance event_instance, int* source_index)) {
  AXON_T_REQUIRE_INIT();
  if (!ev::instance_of(event_instance)) return MPI_T_ERR_INVALID_HANDLE;
  if (!source_index) return MPI_ERR_ARG;
  *source_index = 0;
  return MPI_SUCCESS;
}

// ---- sources: Axon's clock ------------------------------------------------------------

AXON_API(int, MPI_T_source_get_num, (int* num_sources)) {
  AXON_T_REQUIRE_INIT();
  if (!num_sources) return MPI_ERR_ARG;
  *num_sources = 1;
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_source_get_info, (int source_index, char* name, int* name_len, char* desc, int* desc_len,
                                      MPI_T_source_order* ordering, MPI_Count* ticks_per_second,
                                      MPI_Count* max_ticks, MPI_Info* info)) {
  AXON_T_REQUIRE_INIT();
  if (source_index != 0) return MPI_T_ERR_INVALID_INDEX;
  copy_string(kSourceName, name, name_len);
  copy_string("Axon's clock: CLOCK_MONOTONIC in nanoseconds (the clock of MPI_Wtime)", desc, desc_len);
  if (ordering) *ordering = MPI_T_SOURCE_ORDERED;
  if (ticks_per_second) *ticks_per_second = kTicksPerSecond;
  if (max_ticks) *max_ticks = std::numeric_limits<MPI_Count>::max();
  new_empty_info(info);
  return MPI_SUCCESS;
}

AXON_API(int, MPI_T_source_get_timestamp, (int source_index, MPI_Count* timestamp)) {
  AXON_T_REQUIRE_INIT();
  if (source_index != 0) return MPI_T_ERR_INVALID_INDEX;
  if (!timestamp) return MPI_ERR_ARG;
  *timestamp = static_cast<MPI_Count>(ev::timestamp_now());
  return MPI_SUCCESS;
}
