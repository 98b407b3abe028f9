/* MPI_T events: the interface and its errors, with exact return classes,
 * without MPI_Init (MPI_T works on its own). Events are raised by the other
 * tests of this folder; here: what the registry describes, the handles, the
 * source, and that garbage handles and bad indices are refused. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define EXPECT_RC(call, want)                                                               \
  do {                                                                                      \
    int rc_ = (call);                                                                       \
    if (rc_ != (want)) {                                                                    \
      fprintf(stderr, "line %d: %s returned %d, expected %d\n", __LINE__, #call, rc_, want); \
      ++failures;                                                                           \
    }                                                                                       \
  } while (0)
#define EXPECT(cond)                                                   \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "line %d: expected %s\n", __LINE__, #cond);      \
      ++failures;                                                      \
    }                                                                  \
  } while (0)

static int freed = 0;
static void *freed_user_data = NULL;
static void on_free(MPI_T_event_registration r, MPI_T_cb_safety s, void *user_data) {
  (void)r;
  EXPECT(s == MPI_T_CB_REQUIRE_NONE);
  ++freed;
  freed_user_data = user_data;
}
static void on_event(MPI_T_event_instance i, MPI_T_event_registration r, MPI_T_cb_safety s, void *u) {
  (void)i, (void)r, (void)s, (void)u;
}

int main(void) {
  int provided, n = -1;
  EXPECT_RC(MPI_T_event_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
  EXPECT_RC(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), MPI_SUCCESS);

  EXPECT_RC(MPI_T_event_get_num(&n), MPI_SUCCESS);
  EXPECT(n == 4);
  EXPECT_RC(MPI_T_event_get_num(NULL), MPI_ERR_ARG);

  /* Names, in index order, and get_index back. */
  const char *names[4] = {"axon_protocol_switch", "axon_unexpected_growth", "axon_coll_algorithm",
                          "axon_connection_setup"};
  const int elements[4] = {4, 3, 5, 2};
  for (int e = 0; e < 4; ++e) {
    char name[64], desc[512];
    int name_len = sizeof name, desc_len = sizeof desc, verbosity = -1, num = 8, bind = -1, index = -1;
    MPI_Datatype types[8];
    MPI_Aint displs[8];
    MPI_T_enum enumtype;
    MPI_Info info = MPI_INFO_NULL;
    EXPECT_RC(MPI_T_event_get_info(e, name, &name_len, &verbosity, types, displs, &num, &enumtype, &info, desc,
                                   &desc_len, &bind),
              MPI_SUCCESS);
    EXPECT(strcmp(name, names[e]) == 0);
    EXPECT(name_len == (int)strlen(names[e]) + 1);
    EXPECT(num == elements[e]);
    EXPECT(bind == MPI_T_BIND_NO_OBJECT);
    EXPECT(info != MPI_INFO_NULL);
    int nkeys = -1;
    MPI_Info_get_nkeys(info, &nkeys);
    EXPECT(nkeys == 0);
    MPI_Info_free(&info);
    EXPECT_RC(MPI_T_event_get_index(names[e], &index), MPI_SUCCESS);
    EXPECT(index == e);
    if (e == 0) { /* peer int @0, bytes ull @8, transport int @16, protocol int @20 */
      EXPECT(types[0] == MPI_INT && displs[0] == 0);
      EXPECT(types[1] == MPI_UNSIGNED_LONG_LONG && displs[1] == 8);
      EXPECT(types[2] == MPI_INT && displs[2] == 16);
      EXPECT(types[3] == MPI_INT && displs[3] == 20);
      int items = -1, value = -1, len = sizeof name;
      EXPECT_RC(MPI_T_enum_get_info(enumtype, &items, name, &len), MPI_SUCCESS);
      EXPECT(items == 7 && strcmp(name, "axon_protocol") == 0);
      len = sizeof name;
      EXPECT_RC(MPI_T_enum_get_item(enumtype, 2, &value, name, &len), MPI_SUCCESS);
      EXPECT(value == 2 && strcmp(name, "rendezvous_get") == 0);
      EXPECT_RC(MPI_T_enum_get_item(enumtype, 7, &value, name, &len), MPI_T_ERR_INVALID_INDEX);
    }
    if (e == 1) EXPECT(enumtype == MPI_T_ENUM_NULL);
    if (e == 3) {
      int items = -1, value = -1, len = sizeof name;
      EXPECT_RC(MPI_T_enum_get_info(enumtype, &items, name, &len), MPI_SUCCESS);
      EXPECT(items == 5 && strcmp(name, "axon_transport") == 0);
      len = sizeof name;
      EXPECT_RC(MPI_T_enum_get_item(enumtype, 2, &value, name, &len), MPI_SUCCESS);
      EXPECT(value == 2 && strcmp(name, "tcp") == 0);
    }
  }
  /* num_elements smaller than the element count: arrays filled that far, the count returned. */
  {
    int num = 1;
    MPI_Datatype types[1] = {MPI_DATATYPE_NULL};
    EXPECT_RC(MPI_T_event_get_info(0, NULL, NULL, NULL, types, NULL, &num, NULL, NULL, NULL, NULL, NULL),
              MPI_SUCCESS);
    EXPECT(num == 4 && types[0] == MPI_INT);
  }
  EXPECT_RC(MPI_T_event_get_info(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
            MPI_T_ERR_INVALID_INDEX);
  EXPECT_RC(MPI_T_event_get_info(-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
            MPI_T_ERR_INVALID_INDEX);
  {
    int index = -1;
    EXPECT_RC(MPI_T_event_get_index("no_such_event", &index), MPI_T_ERR_INVALID_NAME);
    EXPECT_RC(MPI_T_event_get_index(NULL, &index), MPI_ERR_ARG);
  }

  /* Categories: every event is in exactly one. */
  {
    int ncat = 0, seen[4] = {0, 0, 0, 0};
    MPI_T_category_get_num(&ncat);
    for (int c = 0; c < ncat; ++c) {
      int ne = -1, idx[8];
      EXPECT_RC(MPI_T_category_get_num_events(c, &ne), MPI_SUCCESS);
      EXPECT(ne >= 0 && ne <= 4);
      EXPECT_RC(MPI_T_category_get_events(c, ne, idx), MPI_SUCCESS);
      char cname[64];
      int clen = sizeof cname;
      MPI_T_category_get_info(c, cname, &clen, NULL, NULL, NULL, NULL, NULL);
      for (int k = 0; k < ne; ++k) {
        EXPECT(idx[k] >= 0 && idx[k] < 4);
        if (idx[k] >= 0 && idx[k] < 4) ++seen[idx[k]];
        if (idx[k] == 2) EXPECT(strcmp(cname, "coll") == 0);
        if (idx[k] == 3) EXPECT(strcmp(cname, "btl") == 0);
      }
    }
    for (int e = 0; e < 4; ++e) EXPECT(seen[e] == 1);
    int ne;
    EXPECT_RC(MPI_T_category_get_num_events(ncat, &ne), MPI_T_ERR_INVALID_INDEX);
    EXPECT_RC(MPI_T_category_get_events(0, -1, NULL), MPI_ERR_ARG);
  }

  /* Registrations. */
  MPI_T_event_registration reg = NULL;
  EXPECT_RC(MPI_T_event_handle_alloc(4, NULL, MPI_INFO_NULL, &reg), MPI_T_ERR_INVALID_INDEX);
  EXPECT_RC(MPI_T_event_handle_alloc(0, NULL, MPI_INFO_NULL, NULL), MPI_ERR_ARG);
  EXPECT_RC(MPI_T_event_handle_alloc(0, NULL, (MPI_Info)(void *)&n, &reg), MPI_ERR_INFO);
  EXPECT_RC(MPI_T_event_handle_alloc(0, NULL, MPI_INFO_NULL, &reg), MPI_SUCCESS);
  MPI_T_event_registration garbage = (MPI_T_event_registration)(void *)&n;
  {
    MPI_Info info = MPI_INFO_NULL;
    EXPECT_RC(MPI_T_event_handle_get_info(reg, &info), MPI_SUCCESS);
    EXPECT(info != MPI_INFO_NULL);
    MPI_Info_free(&info);
    EXPECT_RC(MPI_T_event_handle_get_info(garbage, &info), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_RC(MPI_T_event_handle_get_info(NULL, &info), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_RC(MPI_T_event_handle_set_info(reg, MPI_INFO_NULL), MPI_SUCCESS);
    EXPECT_RC(MPI_T_event_handle_set_info(garbage, MPI_INFO_NULL), MPI_T_ERR_INVALID_HANDLE);
  }
  EXPECT_RC(MPI_T_event_register_callback(reg, MPI_T_CB_REQUIRE_MPI_RESTRICTED, MPI_INFO_NULL, NULL, on_event),
            MPI_SUCCESS);
  EXPECT_RC(MPI_T_event_register_callback(reg, (MPI_T_cb_safety)0x7, MPI_INFO_NULL, NULL, on_event),
            MPI_T_ERR_INVALID);
  EXPECT_RC(MPI_T_event_register_callback(garbage, MPI_T_CB_REQUIRE_NONE, MPI_INFO_NULL, NULL, on_event),
            MPI_T_ERR_INVALID_HANDLE);
  {
    MPI_Info info = MPI_INFO_NULL;
    EXPECT_RC(MPI_T_event_callback_get_info(reg, MPI_T_CB_REQUIRE_MPI_RESTRICTED, &info), MPI_SUCCESS);
    MPI_Info_free(&info);
    EXPECT_RC(MPI_T_event_callback_get_info(reg, (MPI_T_cb_safety)0x1, &info), MPI_T_ERR_INVALID);
    EXPECT_RC(MPI_T_event_callback_get_info(garbage, MPI_T_CB_REQUIRE_NONE, &info), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_RC(MPI_T_event_callback_set_info(reg, MPI_T_CB_REQUIRE_THREAD_SAFE, MPI_INFO_NULL), MPI_SUCCESS);
    EXPECT_RC(MPI_T_event_callback_set_info(garbage, MPI_T_CB_REQUIRE_NONE, MPI_INFO_NULL),
              MPI_T_ERR_INVALID_HANDLE);
  }
  EXPECT_RC(MPI_T_event_set_dropped_handler(reg, NULL), MPI_SUCCESS);
  EXPECT_RC(MPI_T_event_set_dropped_handler(garbage, NULL), MPI_T_ERR_INVALID_HANDLE);

  /* Instances exist only inside a callback: any handle outside is refused. */
  {
    MPI_T_event_instance bogus = (MPI_T_event_instance)(void *)&n;
    char buf[128];
    MPI_Count ts;
    int source;
    EXPECT_RC(MPI_T_event_read(bogus, 0, buf), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_RC(MPI_T_event_copy(bogus, buf), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_RC(MPI_T_event_get_timestamp(bogus, &ts), MPI_T_ERR_INVALID_HANDLE);
    EXPECT_RC(MPI_T_event_get_source(NULL, &source), MPI_T_ERR_INVALID_HANDLE);
  }

  /* Free: the free callback runs with the user data; the handle is gone after. */
  int marker = 42;
  EXPECT_RC(MPI_T_event_handle_free(reg, &marker, on_free), MPI_SUCCESS);
  EXPECT(freed == 1 && freed_user_data == &marker);
  EXPECT_RC(MPI_T_event_handle_free(reg, &marker, on_free), MPI_T_ERR_INVALID_HANDLE);
  EXPECT(freed == 1);
  EXPECT_RC(MPI_T_event_register_callback(reg, MPI_T_CB_REQUIRE_NONE, MPI_INFO_NULL, NULL, on_event),
            MPI_T_ERR_INVALID_HANDLE);

  /* Sources: one, Axon's clock in nanoseconds, monotonic. */
  {
    int ns = -1, len = 64;
    char name[64];
    MPI_T_source_order order;
    MPI_Count tps = 0, max = 0, t1 = 0, t2 = 0;
    MPI_Info info = MPI_INFO_NULL;
    EXPECT_RC(MPI_T_source_get_num(&ns), MPI_SUCCESS);
    EXPECT(ns == 1);
    EXPECT_RC(MPI_T_source_get_info(0, name, &len, NULL, NULL, &order, &tps, &max, &info), MPI_SUCCESS);
    EXPECT(strcmp(name, "axon_clock") == 0 && order == MPI_T_SOURCE_ORDERED && tps == 1000000000 && max > 0);
    MPI_Info_free(&info);
    EXPECT_RC(MPI_T_source_get_info(1, name, &len, NULL, NULL, &order, &tps, &max, NULL), MPI_T_ERR_INVALID_INDEX);
    EXPECT_RC(MPI_T_source_get_timestamp(0, &t1), MPI_SUCCESS);
    EXPECT_RC(MPI_T_source_get_timestamp(0, &t2), MPI_SUCCESS);
    EXPECT(t1 > 0 && t2 >= t1);
    EXPECT_RC(MPI_T_source_get_timestamp(1, &t1), MPI_T_ERR_INVALID_INDEX);
    EXPECT_RC(MPI_T_source_get_timestamp(-1, &t1), MPI_T_ERR_INVALID_INDEX);
  }

  EXPECT_RC(MPI_T_finalize(), MPI_SUCCESS);
  EXPECT_RC(MPI_T_source_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
  if (failures) {
    fprintf(stderr, "events_api: %d failures\n", failures);
    return 1;
  }
  printf("events_api: ok\n");
  return 0;
}
