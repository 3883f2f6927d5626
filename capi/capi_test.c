/* Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
 *
 * The C ABI from C (compiled as C99): the RDP envelopes and their error texts, the
 * kelt_* consumer on the mock cluster (kelt_mock_cluster_*) with windows read back
 * through the Arrow C stream, (with --broker) the rdp_* Kafka calls against the real
 * broker whose address is in the file named by KELT_KAFKA_ENV, and (with --registry)
 * Avro through the Schema Registry of KELT_REGISTRY_ENV: exported, then landed by the
 * window consumer and the pipeline.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, getpid */

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kelt.h"
#include "kelt/version.h"

static int g_failures = 0;
static int g_checks = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    ++g_checks;                                                                \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

/* Copy a slice into a NUL-terminated string (caller frees) and free the slice. */
static char* take(RdpJsonSlice s) {
  char* out = malloc(s.len + 1);
  if (s.len > 0) memcpy(out, s.ptr, s.len);
  out[s.len] = '\0';
  rdp_json_slice_free(s);
  return out;
}

static int starts_with(const char* s, const char* prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

#define CHECK_EQ_STR(actual, expected)                                          \
  do {                                                                          \
    ++g_checks;                                                                 \
    if (strcmp((actual), (expected)) != 0) {                                    \
      fprintf(stderr, "%s:%d: got\n  %s\nexpected\n  %s\n", __FILE__, __LINE__, \
              (actual), (expected));                                            \
      ++g_failures;                                                             \
    }                                                                           \
  } while (0)

#define CHECK_PREFIX(actual, prefix)                                                     \
  do {                                                                                   \
    ++g_checks;                                                                          \
    if (!starts_with((actual), (prefix))) {                                              \
      fprintf(stderr, "%s:%d: got\n  %s\nexpected a prefix\n  %s\n", __FILE__, __LINE__, \
              (actual), (prefix));                                                       \
      ++g_failures;                                                                      \
    }                                                                                    \
  } while (0)

static const char* kRecords =
    "{\"records\":[{\"topic\":\"t\",\"partition\":0,\"offset\":7,\"timestamp_ms\":1000,"
    "\"key\":\"k\",\"value\":\"{\\\"id\\\":1,\\\"name\\\":\\\"Ada\\\"}\"},"
    "{\"topic\":\"t\",\"partition\":1,\"offset\":8,\"value\":\"{\\\"id\\\":2}\"}]}";
static const char* kSchema =
    "{\"fields\":[{\"name\":\"id\",\"data_type\":\"Int64\"},"
    "{\"name\":\"name\",\"data_type\":\"Utf8\"},"
    "{\"name\":\"_kafka_offset\",\"data_type\":\"Int64\"}]}";

static void test_rdp_load(void) {
  RdpJsonSlice s = {0};
  char* json;
  CHECK(rdp_ffi_abi_version() == 406);

  rdp_kafka_elt_load_records_json(&s, kRecords, kSchema);
  json = take(s);
  CHECK_EQ_STR(json,
               "{\"ok\":true,\"interchange\":{\"kind\":\"kafka_elt_load\",\"dataset\":"
               "{\"schema\":{\"fields\":[{\"name\":\"id\",\"data_type\":\"Int64\"},"
               "{\"name\":\"name\",\"data_type\":\"Utf8\"},"
               "{\"name\":\"_kafka_offset\",\"data_type\":\"Int64\"}]},"
               "\"rows\":[[{\"Int64\":1},{\"Utf8\":\"Ada\"},{\"Int64\":7}],"
               "[{\"Int64\":2},\"Null\",{\"Int64\":8}]]}}}");
  free(json);

  /* out == NULL is allowed; freeing a NULL slice is a no-op. */
  rdp_kafka_elt_load_records_json(NULL, kRecords, kSchema);
  {
    RdpJsonSlice empty = {NULL, 0, 0};
    rdp_json_slice_free(empty);
  }

  /* A value that does not convert: RDP's schema-mismatch text. */
  rdp_kafka_elt_load_records_json(&s,
                                  "[{\"topic\":\"t\",\"partition\":0,\"offset\":1,"
                                  "\"value\":\"{\\\"id\\\":\\\"x\\\"}\"}]",
                                  kSchema);
  json = take(s);
  CHECK_PREFIX(
      json, "{\"ok\":false,\"error\":\"schema mismatch: kafka value int64 cast failed");
  free(json);
}

static void test_rdp_errors(void) {
  RdpJsonSlice s = {0};
  char* json;
  const char bad_utf8[] = {'{',        '"',        'a', '"', ':', '"',
                           (char)0xC3, (char)0x28, '"', '}', 0};

  rdp_kafka_elt_load_records_json(&s, NULL, kSchema);
  json = take(s);
  CHECK_EQ_STR(json, "{\"ok\":false,\"error\":\"records_json: null pointer\"}");
  free(json);
  rdp_kafka_elt_load_records_json(&s, kRecords, NULL);
  json = take(s);
  CHECK_EQ_STR(json, "{\"ok\":false,\"error\":\"schema_json: null pointer\"}");
  free(json);
  rdp_kafka_poll_window_json(&s, NULL);
  json = take(s);
  CHECK_EQ_STR(json, "{\"ok\":false,\"error\":\"consumer_config_json: null pointer\"}");
  free(json);
  rdp_kafka_poll_window_loaded_json(&s, "{}", NULL);
  json = take(s);
  CHECK_EQ_STR(json, "{\"ok\":false,\"error\":\"schema_json: null pointer\"}");
  free(json);
  rdp_kafka_export_dataset_json(&s, NULL, "{}");
  json = take(s);
  CHECK_EQ_STR(json, "{\"ok\":false,\"error\":\"producer_config_json: null pointer\"}");
  free(json);
  rdp_kafka_export_dataset_json(&s, "{}", NULL);
  json = take(s);
  CHECK_EQ_STR(json, "{\"ok\":false,\"error\":\"dataset_json: null pointer\"}");
  free(json);
  rdp_run_pipeline_json(&s, NULL);
  json = take(s);
  CHECK_EQ_STR(json, "{\"ok\":false,\"error\":\"pipeline_json: null pointer\"}");
  free(json);

  rdp_kafka_elt_load_records_json(&s, kRecords, bad_utf8);
  json = take(s);
  CHECK_PREFIX(json, "{\"ok\":false,\"error\":\"schema_json: invalid UTF-8: ");
  CHECK(strstr(json, "offset 6") != NULL);
  free(json);
  rdp_kafka_poll_window_json(&s, bad_utf8);
  json = take(s);
  CHECK_PREFIX(json, "{\"ok\":false,\"error\":\"consumer_config_json: invalid UTF-8: ");
  free(json);
  rdp_run_pipeline_json(&s, bad_utf8);
  json = take(s);
  CHECK_PREFIX(json, "{\"ok\":false,\"error\":\"pipeline_json: invalid UTF-8: ");
  free(json);

  /* Parse errors name the input. */
  rdp_kafka_elt_load_records_json(&s, kRecords, "{\"fields\":[");
  json = take(s);
  CHECK_PREFIX(json, "{\"ok\":false,\"error\":\"schema JSON: ");
  free(json);
  rdp_kafka_elt_load_records_json(&s, kRecords,
                                  "{\"fields\":[{\"name\":\"a\","
                                  "\"data_type\":\"Int32\"}]}");
  json = take(s);
  CHECK_PREFIX(json, "{\"ok\":false,\"error\":\"schema JSON: ");
  CHECK(strstr(json, "Int32") != NULL);
  free(json);
  rdp_kafka_elt_load_records_json(&s, "[{\"topic\":", kSchema);
  json = take(s);
  CHECK_PREFIX(
      json,
      "{\"ok\":false,\"error\":\"schema mismatch: invalid kafka stream record JSON");
  free(json);
  rdp_kafka_poll_window_json(&s, "{not json");
  json = take(s);
  CHECK_PREFIX(json, "{\"ok\":false,\"error\":\"config JSON: ");
  free(json);
  rdp_kafka_poll_window_json(&s, "{\"brokers\":\"\",\"group_id\":\"g\",\"topic\":\"t\"}");
  json = take(s);
  CHECK_EQ_STR(json, "{\"ok\":false,\"error\":\"kafka brokers must not be empty\"}");
  free(json);
  rdp_kafka_poll_window_loaded_json(&s, "{\"brokers\":\"b\",\"max_records\":\"x\"}",
                                    kSchema);
  json = take(s);
  CHECK_PREFIX(json, "{\"ok\":false,\"error\":\"config JSON: max_records");
  free(json);
  rdp_kafka_export_dataset_json(&s, "[1", "{}");
  json = take(s);
  CHECK_PREFIX(json, "{\"ok\":false,\"error\":\"config JSON: ");
  free(json);
  rdp_kafka_export_dataset_json(&s, "{\"brokers\":\"b\",\"topic\":\"t\"}",
                                "{\"schema\":{\"fields\":[]},\"rows\":[[1]");
  json = take(s);
  CHECK_PREFIX(json, "{\"ok\":false,\"error\":\"dataset JSON: ");
  free(json);
  rdp_run_pipeline_json(&s, "{");
  json = take(s);
  CHECK_PREFIX(json, "{\"ok\":false,\"error\":{\"code\":\"ORCHESTRATION_JSON_INVALID\"");
  free(json);
}

static void test_kelt_errors(void) {
  kelt_consumer* c = (kelt_consumer*)1;
  kelt_error* err = NULL;
  kelt_window* w = NULL;
  char* out = NULL;
  struct ArrowArrayStream stream;

  CHECK(kelt_abi_version() == KELT_ABI_VERSION);
  CHECK(kelt_c_api_version() == kelt_abi_version());
  CHECK(kelt_version() != NULL && strcmp(kelt_version(), KELT_VERSION_STRING) == 0);
  {
    unsigned major = 0, minor = 0, patch = 0;
    char rest = 0;
    CHECK(sscanf(kelt_version(), "%u.%u.%u%c", &major, &minor, &patch, &rest) == 3);
    CHECK(major == KELT_VERSION_MAJOR && minor == KELT_VERSION_MINOR &&
          patch == KELT_VERSION_PATCH);
  }
  CHECK(kelt_consumer_new("{\"brokers\":\"b\"", kSchema, &c, &err) == KELT_INVALID ||
        kelt_error_code(err) == KELT_PARSE_ERROR);
  CHECK(c == NULL);
  CHECK(err != NULL);
  CHECK_PREFIX(kelt_error_message(err), "config JSON: ");
  CHECK(kelt_error_retriable(err) == 0);
  kelt_error_free(err);
  err = NULL;

  CHECK(kelt_consumer_new("{\"brokers\":\"b\",\"group_id\":\"g\",\"topic\":\"t\","
                          "\"on_bad_record\":\"ignore\"}",
                          kSchema, &c, &err) == KELT_INVALID);
  CHECK_EQ_STR(kelt_error_code_name(err), "INVALID");
  CHECK(strstr(kelt_error_message(err), "on_bad_record") != NULL);
  kelt_error_free(err);
  err = NULL;

  CHECK(kelt_consumer_new("{\"brokers\":\"b\",\"group_id\":\"\",\"topic\":\"t\"}",
                          kSchema, &c, &err) == KELT_INVALID);
  CHECK_EQ_STR(kelt_error_message(err), "kafka group_id must not be empty");
  kelt_error_free(err);
  err = NULL;

  CHECK(kelt_consumer_new(
            "{\"brokers\":\"b\",\"group_id\":\"g\",\"topic\":\"t\"}",
            "{\"fields\":[{\"name\":\"_kafka_nope\",\"data_type\":\"Utf8\"}]}", &c,
            &err) != KELT_OK);
  CHECK(strstr(kelt_error_message(err), "unknown kafka metadata column '_kafka_nope'") !=
        NULL);
  kelt_error_free(err);
  err = NULL;

  CHECK(kelt_consumer_new(NULL, kSchema, &c, &err) == KELT_INVALID);
  CHECK_EQ_STR(kelt_error_message(err), "config_json: null pointer");
  kelt_error_free(err);
  err = NULL;

  /* err == NULL is allowed: only the code comes back. */
  CHECK(kelt_consumer_poll(NULL, &w, NULL) == KELT_INVALID);
  CHECK(kelt_consumer_commit(NULL, NULL, NULL) == KELT_INVALID);
  CHECK(kelt_consumer_lag_json(NULL, 100, &out, NULL) == KELT_INVALID);
  CHECK(kelt_window_to_arrow_stream(NULL, &stream, NULL) == KELT_INVALID);
  CHECK(kelt_window_to_dataset_json(NULL, &out, &err) == KELT_INVALID);
  CHECK_EQ_STR(kelt_error_message(err), "window: null pointer");
  kelt_error_free(err);

  /* NULL-safe frees. */
  kelt_error_free(NULL);
  kelt_string_free(NULL);
  kelt_window_free(NULL);
  kelt_consumer_free(NULL);
  kelt_pipeline_free(NULL);
  CHECK(kelt_window_num_rows(NULL) == 0);
  CHECK(kelt_pipeline_run(NULL, NULL) == KELT_INVALID);
}

/* Read one Arrow C stream of (id Int64, name Utf8, _kafka_partition Int64,
 * _kafka_offset Int64) rows: check the schema, add each id to *id_sum, check each name
 * is "row <id>", count rows. */
static int64_t read_stream(struct ArrowArrayStream* stream, int64_t* id_sum) {
  struct ArrowSchema schema;
  struct ArrowArray batch;
  int64_t rows = 0;
  CHECK(stream->get_schema(stream, &schema) == 0);
  CHECK(schema.n_children == 4);
  if (schema.n_children == 4) {
    CHECK_EQ_STR(schema.children[0]->name, "id");
    CHECK_EQ_STR(schema.children[0]->format, "l");
    CHECK_EQ_STR(schema.children[1]->name, "name");
    CHECK_EQ_STR(schema.children[1]->format, "u");
    CHECK_EQ_STR(schema.children[3]->name, "_kafka_offset");
  }
  schema.release(&schema);
  for (;;) {
    int64_t i;
    CHECK(stream->get_next(stream, &batch) == 0);
    if (batch.release == NULL) break; /* end of stream */
    CHECK(batch.n_children == 4);
    {
      const struct ArrowArray* ids = batch.children[0];
      const struct ArrowArray* names = batch.children[1];
      const int64_t* id_values = (const int64_t*)ids->buffers[1];
      const int32_t* offsets = (const int32_t*)names->buffers[1];
      const char* data = (const char*)names->buffers[2];
      CHECK(ids->null_count == 0);
      for (i = 0; i < batch.length; ++i) {
        int64_t id = id_values[ids->offset + i];
        char expected[64];
        int32_t begin = offsets[names->offset + i];
        int32_t end = offsets[names->offset + i + 1];
        snprintf(expected, sizeof expected, "row %lld", (long long)id);
        CHECK((size_t)(end - begin) == strlen(expected) &&
              memcmp(data + begin, expected, (size_t)(end - begin)) == 0);
        *id_sum += id;
      }
    }
    rows += batch.length;
    batch.release(&batch);
  }
  stream->release(stream);
  return rows;
}

/* Produce rows {id, name} 1..n through rdp_kafka_export_dataset_json. */
static void produce_rows(const char* brokers, const char* topic, int from, int n) {
  size_t cap = (size_t)n * 64 + 256;
  char* dataset = malloc(cap);
  char config[512];
  RdpJsonSlice s = {0};
  char* json;
  size_t len;
  int i;
  len = (size_t)snprintf(dataset, cap,
                         "{\"schema\":{\"fields\":[{\"name\":\"id\",\"data_type\":"
                         "\"Int64\"},{\"name\":\"name\",\"data_type\":\"Utf8\"}]},"
                         "\"rows\":[");
  for (i = from; i < from + n; ++i) {
    len += (size_t)snprintf(dataset + len, cap - len,
                            "%s[{\"Int64\":%d},{\"Utf8\":\"row %d\"}]",
                            i > from ? "," : "", i, i);
  }
  snprintf(dataset + len, cap - len, "]}");
  snprintf(config, sizeof config,
           "{\"brokers\":\"%s\",\"topic\":\"%s\",\"key_column\":\"id\"}", brokers, topic);
  rdp_kafka_export_dataset_json(&s, config, dataset);
  json = take(s);
  {
    char expected[256];
    snprintf(expected, sizeof expected,
             "{\"ok\":true,\"interchange\":{\"kind\":\"kafka_export\",\"topic\":\"%s\","
             "\"row_count\":%d}}",
             topic, n);
    CHECK_EQ_STR(json, expected);
  }
  free(json);
  free(dataset);
}

static const char* kIdSchema =
    "{\"fields\":[{\"name\":\"id\",\"data_type\":\"Int64\"},"
    "{\"name\":\"name\",\"data_type\":\"Utf8\"},"
    "{\"name\":\"_kafka_partition\",\"data_type\":\"Int64\"},"
    "{\"name\":\"_kafka_offset\",\"data_type\":\"Int64\"}]}";

/* Poll windows until `want` rows arrived or `max_polls` polls; return the rows, commit
 * each window when `commit`. */
static int64_t poll_rows(kelt_consumer* c, int64_t want, int max_polls, int commit,
                         int64_t* id_sum) {
  int64_t rows = 0;
  int polls;
  for (polls = 0; polls < max_polls && rows < want; ++polls) {
    kelt_window* w = NULL;
    kelt_error* err = NULL;
    struct ArrowArrayStream stream;
    if (kelt_consumer_poll(c, &w, &err) != KELT_OK) {
      fprintf(stderr, "poll: %s\n", kelt_error_message(err));
      CHECK(0);
      kelt_error_free(err);
      return rows;
    }
    CHECK(kelt_window_num_rows(w) == kelt_window_num_records(w));
    CHECK(kelt_window_to_arrow_stream(w, &stream, NULL) == KELT_OK);
    if (commit) CHECK(kelt_consumer_commit(c, w, NULL) == KELT_OK);
    kelt_window_free(w); /* the stream keeps the buffers alive */
    rows += read_stream(&stream, id_sum);
  }
  return rows;
}

/* A mock cluster of one broker; the test binary stops if it cannot start. */
static kelt_mock_cluster* start_mock_cluster(void) {
  kelt_mock_cluster* mc = NULL;
  kelt_error* err = NULL;
  if (kelt_mock_cluster_new(1, &mc, &err) != KELT_OK) {
    fprintf(stderr, "kelt_mock_cluster_new: %s\n", kelt_error_message(err));
    kelt_error_free(err);
    exit(1);
  }
  return mc;
}

/* The mock cluster's own calls: arguments are checked, NULL is safe. */
static void test_kelt_mock_cluster(void) {
  kelt_mock_cluster* mc = NULL;
  kelt_error* err = NULL;
  CHECK(kelt_mock_cluster_new(0, &mc, &err) == KELT_INVALID);
  CHECK(mc == NULL);
  if (err != NULL) {
    CHECK_EQ_STR(kelt_error_message(err),
                 "mock cluster: brokers must be at least 1, got 0");
    kelt_error_free(err);
    err = NULL;
  }
  CHECK(kelt_mock_cluster_new(3, NULL, NULL) == KELT_INVALID);
  CHECK_EQ_STR(kelt_mock_cluster_bootstraps(NULL), "");
  kelt_mock_cluster_free(NULL);

  CHECK(kelt_mock_cluster_new(3, &mc, NULL) == KELT_OK);
  if (mc == NULL) return;
  /* Three brokers: three addresses. */
  {
    const char* b = kelt_mock_cluster_bootstraps(mc);
    const char* comma = strchr(b, ',');
    CHECK(comma != NULL && strchr(comma + 1, ',') != NULL);
  }
  CHECK(kelt_mock_cluster_create_topic(mc, "t3", 4, 3, NULL) == KELT_OK);
  CHECK(kelt_mock_cluster_create_topic(mc, "t0", 0, 1, &err) == KELT_INVALID);
  if (err != NULL) {
    CHECK_EQ_STR(kelt_error_message(err),
                 "mock cluster: topic t0 needs at least 1 partition and 1 replica");
    kelt_error_free(err);
    err = NULL;
  }
  CHECK(kelt_mock_cluster_create_topic(mc, NULL, 1, 1, NULL) == KELT_INVALID);
  CHECK(kelt_mock_cluster_create_topic(NULL, "t", 1, 1, NULL) == KELT_INVALID);
  kelt_mock_cluster_free(mc);
}

static void test_kelt_consumer_mock(void) {
  kelt_mock_cluster* mc = start_mock_cluster();
  const char* brokers = kelt_mock_cluster_bootstraps(mc);
  char config[1024];
  kelt_consumer* c = NULL;
  kelt_error* err = NULL;
  kelt_window* kept = NULL;
  char* json = NULL;
  int64_t id_sum = 0;
  int64_t rows;
  const int n = 300;

  CHECK(kelt_mock_cluster_create_topic(mc, "capi", 2, 1, NULL) == KELT_OK);
  produce_rows(brokers, "capi", 1, n);

  snprintf(config, sizeof config,
           "{\"brokers\":\"%s\",\"group_id\":\"capi-g\",\"topic\":\"capi\","
           "\"max_records\":100,\"max_wait_ms\":5000,\"session_timeout_ms\":6000,"
           "\"properties\":{\"heartbeat.interval.ms\":\"500\"}}",
           brokers);
  if (kelt_consumer_new(config, kIdSchema, &c, &err) != KELT_OK) {
    fprintf(stderr, "kelt_consumer_new: %s\n", kelt_error_message(err));
    CHECK(0);
    kelt_error_free(err);
    goto done;
  }
  rows = poll_rows(c, n, 40, 1, &id_sum);
  CHECK(rows == n);
  CHECK(id_sum == (int64_t)n * (n + 1) / 2);

  /* Everything was committed: the lag is 0 in both partitions. */
  CHECK(kelt_consumer_lag_json(c, 5000, &json, &err) == KELT_OK);
  if (json != NULL) {
    CHECK(strstr(json, "\"total_lag\":0}") != NULL);
    CHECK(strstr(json, "\"partition\":1") != NULL);
    kelt_string_free(json);
    json = NULL;
  }
  CHECK(kelt_consumer_close(c, NULL) == KELT_OK);
  CHECK(kelt_consumer_poll(c, &kept, &err) == KELT_INVALID);
  CHECK_EQ_STR(kelt_error_message(err), "consumer: already closed");
  kelt_error_free(err);
  err = NULL;
  kelt_consumer_free(c);
  c = NULL;

  /* The same group resumes after the commits: only new rows arrive. A window outlives
   * its consumer and still exports. */
  produce_rows(brokers, "capi", n + 1, 10);
  CHECK(kelt_consumer_new(config, kIdSchema, &c, &err) == KELT_OK);
  if (c != NULL) {
    int polls;
    for (polls = 0; polls < 20 && kept == NULL; ++polls) {
      kelt_window* w = NULL;
      CHECK(kelt_consumer_poll(c, &w, NULL) == KELT_OK);
      if (w != NULL && kelt_window_num_rows(w) > 0) {
        kept = w;
      } else {
        kelt_window_free(w);
      }
    }
    kelt_consumer_free(c);
    c = NULL;
  }
  CHECK(kept != NULL);
  if (kept != NULL) {
    struct ArrowArrayStream stream;
    int64_t sum = 0;
    int64_t got = kelt_window_num_rows(kept);
    CHECK(kelt_window_to_dataset_json(kept, &json, NULL) == KELT_OK);
    CHECK_PREFIX(json, "{\"schema\":{\"fields\":[{\"name\":\"id\"");
    CHECK(strstr(json, "{\"Utf8\":\"row 301\"}") != NULL ||
          strstr(json, "{\"Utf8\":\"row 310\"}") != NULL);
    kelt_string_free(json);
    json = NULL;
    CHECK(kelt_window_info_json(kept, &json, NULL) == KELT_OK);
    CHECK_PREFIX(json, "{\"records\":");
    CHECK(strstr(json, "\"spans\":[{\"topic\":\"capi\"") != NULL);
    kelt_string_free(json);
    json = NULL;
    CHECK(kelt_window_to_arrow_stream(kept, &stream, NULL) == KELT_OK);
    CHECK(read_stream(&stream, &sum) == got);
    CHECK(sum > 0 && got <= 10);
    {
      int64_t i, lo = 0;
      for (i = n + 1; i <= n + 10; ++i) lo += i;
      CHECK(sum <= lo); /* only ids above n: nothing committed was re-read */
      CHECK(sum >= (n + 1) * got);
    }
    kelt_window_free(kept);
  }
done:
  kelt_mock_cluster_free(mc);
}

/* Bad records: "fail" fails the poll with TYPE_ERROR; "dead_letter" keeps them aside. */
static void test_kelt_bad_records_mock(void) {
  kelt_mock_cluster* mc = start_mock_cluster();
  const char* brokers = kelt_mock_cluster_bootstraps(mc);
  char config[1024], producer[512];
  const char* policies[2] = {"fail", "dead_letter"};
  RdpJsonSlice s = {0};
  int i;

  CHECK(kelt_mock_cluster_create_topic(mc, "capi-bad", 1, 1, NULL) == KELT_OK);
  snprintf(producer, sizeof producer, "{\"brokers\":\"%s\",\"topic\":\"capi-bad\"}",
           brokers);
  rdp_kafka_export_dataset_json(
      &s, producer,
      "{\"schema\":{\"fields\":[{\"name\":\"id\",\"data_type\":\"Utf8\"}]},"
      "\"rows\":[[{\"Utf8\":\"1\"}],[{\"Utf8\":\"x\"}]]}");
  free(take(s));
  for (i = 0; i < 2; ++i) {
    kelt_consumer* c = NULL;
    kelt_window* w = NULL;
    kelt_error* err = NULL;
    char* json = NULL;
    int polls;
    kelt_status st = KELT_OK;
    snprintf(config, sizeof config,
             "{\"brokers\":\"%s\",\"group_id\":\"capi-bad-%s\",\"topic\":\"capi-bad\","
             "\"max_records\":2,\"max_wait_ms\":5000,\"on_bad_record\":\"%s\"}",
             brokers, policies[i], policies[i]);
    CHECK(kelt_consumer_new(config, kIdSchema, &c, &err) == KELT_OK);
    if (c == NULL) break;
    for (polls = 0; polls < 10; ++polls) {
      st = kelt_consumer_poll(c, &w, &err);
      if (st != KELT_OK || kelt_window_num_records(w) > 0) break;
      kelt_window_free(w);
      w = NULL;
    }
    if (i == 0) {
      CHECK(st == KELT_TYPE_ERROR);
      CHECK(w == NULL);
      if (err != NULL) {
        CHECK_EQ_STR(kelt_error_code_name(err), "TYPE_ERROR");
        CHECK(kelt_error_retriable(err) == 0);
        CHECK_PREFIX(kelt_error_message(err),
                     "schema mismatch: kafka value int64 cast failed");
        kelt_error_free(err);
      }
    } else {
      CHECK(st == KELT_OK);
      if (w != NULL) {
        struct ArrowArrayStream stream;
        struct ArrowSchema schema;
        struct ArrowArray batch;
        CHECK(kelt_window_num_records(w) == 2);
        CHECK(kelt_window_num_rows(w) == 1);
        CHECK(kelt_window_info_json(w, &json, NULL) == KELT_OK);
        CHECK(strstr(json, "\"bad_records\":1,") != NULL);
        CHECK(strstr(json, "\"dead_lettered\":1,") != NULL);
        kelt_string_free(json);
        CHECK(kelt_window_dead_letters_to_arrow_stream(w, &stream, NULL) == KELT_OK);
        CHECK(stream.get_schema(&stream, &schema) == 0);
        CHECK_EQ_STR(schema.children[6]->name, "_error_code");
        schema.release(&schema);
        CHECK(stream.get_next(&stream, &batch) == 0);
        CHECK(batch.length == 1);
        batch.release(&batch);
        stream.release(&stream);
        kelt_window_free(w);
      }
    }
    kelt_consumer_free(c);
  }
  kelt_mock_cluster_free(mc);
}

/* The ELT loop handle on the mock cluster: land into Parquet until caught up, then a
 * second loop over the same sink lands nothing (it resumes from the files). */
static void test_kelt_pipeline_mock(void) {
  kelt_mock_cluster* mc = start_mock_cluster();
  const char* brokers = kelt_mock_cluster_bootstraps(mc);
  char dir[] = "/tmp/kelt-capi-pipe-XXXXXX";
  char config[2048];
  kelt_pipeline* p = NULL;
  kelt_error* err = NULL;
  char* json = NULL;
  int more = 1, steps = 0;

  CHECK(mkdtemp(dir) != NULL);
  CHECK(kelt_mock_cluster_create_topic(mc, "capi-pipe", 2, 1, NULL) == KELT_OK);
  produce_rows(brokers, "capi-pipe", 1, 200);
  snprintf(
      config, sizeof config,
      "{\"brokers\":\"%s\",\"group\":\"capi-pipe-g\",\"topics\":[\"capi-pipe\"],"
      "\"schema\":{\"fields\":[{\"name\":\"id\",\"data_type\":\"Int64\"},"
      "{\"name\":\"name\",\"data_type\":\"Utf8\"}]},"
      "\"session_timeout_ms\":6000,\"window\":{\"max_records\":50,\"max_wait_ms\":3000},"
      "\"until_caught_up\":true,\"sinks\":[{\"parquet\":{\"root\":\"landing\"}}]}",
      brokers);

  /* Config problems name the key. */
  CHECK(kelt_pipeline_new("{\"brokers\":\"b\",\"grop\":\"g\"}", dir, &p, &err) ==
        KELT_INVALID);
  CHECK(p == NULL);
  if (err != NULL) {
    CHECK_PREFIX(kelt_error_message(err), "config: ");
    CHECK(strstr(kelt_error_message(err), "grop") != NULL);
    kelt_error_free(err);
    err = NULL;
  }

  if (kelt_pipeline_new(config, dir, &p, &err) != KELT_OK) {
    fprintf(stderr, "kelt_pipeline_new: %s\n", kelt_error_message(err));
    CHECK(0);
    kelt_error_free(err);
    goto done;
  }
  while (more && steps < 50) {
    if (kelt_pipeline_step(p, &more, &err) != KELT_OK) {
      fprintf(stderr, "kelt_pipeline_step: %s\n", kelt_error_message(err));
      CHECK(0);
      kelt_error_free(err);
      break;
    }
    ++steps;
  }
  CHECK(more == 0);
  CHECK(kelt_pipeline_close(p, NULL) == KELT_OK);
  CHECK(kelt_pipeline_stats_json(p, &json, NULL) == KELT_OK);
  if (json != NULL) {
    CHECK(strstr(json, "\"rows\":200,") != NULL);
    CHECK(strstr(json, "\"caught_up\":true") != NULL);
    CHECK(strstr(json, "\"bad_records\":0,") != NULL);
    kelt_string_free(json);
    json = NULL;
  }
  CHECK(kelt_pipeline_step(p, &more, NULL) == KELT_INVALID); /* closed */
  kelt_pipeline_free(p);
  p = NULL;

  /* Run again with kelt_pipeline_run: the Parquet files hold everything; nothing new. */
  CHECK(kelt_pipeline_new(config, dir, &p, &err) == KELT_OK);
  if (p != NULL) {
    CHECK(kelt_pipeline_run(p, NULL) == KELT_OK);
    CHECK(kelt_pipeline_stats_json(p, &json, NULL) == KELT_OK);
    if (json != NULL) {
      CHECK(strstr(json, "\"rows\":0,") != NULL);
      kelt_string_free(json);
    }
    kelt_pipeline_free(p);
  }
done : {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0);
}
  kelt_mock_cluster_free(mc);
}

/* ---- --broker: the rdp_* Kafka calls against the real broker ---------------------- */

/* The value of `key` in the env file (KEY=value lines) named by the variable `var`. */
static int read_env_value(const char* var, const char* key, char* out, size_t cap) {
  const char* path = getenv(var);
  char line[512];
  FILE* f;
  if (path == NULL) {
    fprintf(stderr, "%s is not set (run under the ctest fixtures)\n", var);
    return 0;
  }
  f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s file %s\n", var, path);
    return 0;
  }
  while (fgets(line, sizeof line, f) != NULL) {
    if (starts_with(line, key) && line[strlen(key)] == '=') {
      size_t len;
      snprintf(out, cap, "%s", line + strlen(key) + 1);
      len = strlen(out);
      while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r')) out[--len] = '\0';
      fclose(f);
      return 1;
    }
  }
  fclose(f);
  fprintf(stderr, "no %s in %s\n", key, path);
  return 0;
}

static int read_bootstrap(char* out, size_t cap) {
  return read_env_value("KELT_KAFKA_ENV", "KELT_KAFKA_BOOTSTRAP", out, cap);
}

static void test_rdp_broker(void) {
  char brokers[256], topic[128], config[1024], group[192];
  RdpJsonSlice s = {0};
  char* json;
  const int n = 50;
  int i;
  if (!read_bootstrap(brokers, sizeof brokers)) {
    CHECK(0);
    return;
  }
  snprintf(topic, sizeof topic, "capi-rdp-%ld-%d", (long)time(NULL), (int)getpid());
  produce_rows(brokers, topic, 1, n);

  /* poll_window_loaded with a fresh group: every row, in offset order. */
  snprintf(group, sizeof group, "%s-loaded", topic);
  snprintf(config, sizeof config,
           "{\"brokers\":\"%s\",\"group_id\":\"%s\",\"topic\":\"%s\",\"max_records\":%d,"
           "\"auto_offset_reset\":\"earliest\"}",
           brokers, group, topic, n);
  rdp_kafka_poll_window_loaded_json(&s, config, kIdSchema);
  json = take(s);
  CHECK_PREFIX(json,
               "{\"ok\":true,\"interchange\":{\"kind\":\"kafka_poll_window_loaded\","
               "\"dataset\":{\"schema\":{\"fields\":[{\"name\":\"id\"");
  for (i = 1; i <= n; ++i) {
    char row[128];
    snprintf(row, sizeof row,
             "[{\"Int64\":%d},{\"Utf8\":\"row %d\"},{\"Int64\":0},{\"Int64\":%d}]", i, i,
             i - 1);
    if (strstr(json, row) == NULL) {
      fprintf(stderr, "row %d missing: %s\n", i, row);
      CHECK(0);
      break;
    }
  }
  free(json);

  /* poll_window (records) with another fresh group: keys are the ids as text. */
  snprintf(config, sizeof config,
           "{\"brokers\":\"%s\",\"group_id\":\"%s-records\",\"topic\":\"%s\","
           "\"max_records\":%d}",
           brokers, topic, topic, n);
  rdp_kafka_poll_window_json(&s, config);
  json = take(s);
  CHECK_PREFIX(json,
               "{\"ok\":true,\"interchange\":{\"kind\":\"kafka_poll_window\","
               "\"records\":[{\"topic\":\"");
  CHECK(strstr(json, "\"offset\":49,") != NULL);
  CHECK(strstr(
            json,
            "\"key\":\"50\",\"value\":\"{\\\"id\\\":50,\\\"name\\\":\\\"row 50\\\"}\"") !=
        NULL);
  free(json);

  /* The same group again: the first call committed, the topic is drained. */
  rdp_kafka_poll_window_json(&s, config);
  json = take(s);
  CHECK_EQ_STR(
      json,
      "{\"ok\":true,\"interchange\":{\"kind\":\"kafka_poll_window\",\"records\":[]}}");
  free(json);
}

static void test_rdp_pipeline(void) {
  char dir[] = "/tmp/kelt-capi-XXXXXX";
  char path[256], doc[1024];
  RdpJsonSlice s = {0};
  char* json;
  FILE* f;
  if (mkdtemp(dir) == NULL) {
    CHECK(0);
    return;
  }
  snprintf(path, sizeof path, "%s/in.json", dir);
  f = fopen(path, "w");
  fputs("{\"id\":1,\"v\":2.5}\n{\"id\":2,\"v\":4.0}\n{\"id\":3,\"v\":1.0}\n", f);
  fclose(f);
  snprintf(doc, sizeof doc,
           "{\"pipeline_spec_version\":1,\"sources\":{\"paths\":[\"%s\"],"
           "\"options\":{\"format\":\"json\"}},"
           "\"transform\":{\"sql\":\"SELECT id, v FROM df WHERE v > 2\"},"
           "\"sinks\":[{\"kind\":\"parquet_file\",\"path\":\"%s/out.parquet\"}]}",
           path, dir);
  rdp_run_pipeline_json(&s, doc);
  json = take(s);
  CHECK_PREFIX(json,
               "{\"ok\":true,\"interchange\":{\"kind\":\"run_pipeline_json\","
               "\"ingested_row_count\":3,\"sink_results\":[{\"kind\":\"parquet_file\","
               "\"status\":\"ok\"");
  CHECK(strstr(json, "\"row_count\":2") != NULL);
  free(json);
  snprintf(path, sizeof path, "%s/out.parquet", dir);
  CHECK(access(path, R_OK) == 0);
  remove(path);
  snprintf(path, sizeof path, "%s/in.json", dir);
  remove(path);
  rmdir(dir);
}

/* ---- --registry: the value formats of a Schema Registry, both ways ------------------
 */

/* Rows {id, name} from..from+n-1 as Avro records of `subject` (registered from the
 * dataset's schema), through rdp_kafka_export_dataset_json. */
static void produce_avro_rows(const char* brokers, const char* registry,
                              const char* topic, int from, int n, int with_tier) {
  char dataset[8192], config[1024];
  size_t len;
  int i;
  RdpJsonSlice s = {0};
  char* json;
  char expected[256];
  len = (size_t)snprintf(dataset, sizeof dataset,
                         "{\"schema\":{\"fields\":[{\"name\":\"id\",\"data_type\":"
                         "\"Int64\"},{\"name\":\"name\",\"data_type\":\"Utf8\"}%s]},"
                         "\"rows\":[",
                         with_tier ? ",{\"name\":\"tier\",\"data_type\":\"Utf8\"}" : "");
  for (i = from; i < from + n; ++i) {
    len += (size_t)snprintf(
        dataset + len, sizeof dataset - len, "%s[{\"Int64\":%d},{\"Utf8\":\"row %d\"}%s]",
        i > from ? "," : "", i, i, with_tier ? ",{\"Utf8\":\"gold\"}" : "");
  }
  snprintf(dataset + len, sizeof dataset - len, "]}");
  snprintf(config, sizeof config,
           "{\"brokers\":\"%s\",\"topic\":\"%s\",\"key_column\":\"id\","
           "\"value_format\":\"avro\",\"subject\":\"%s-value\",\"auto_register\":true,"
           "\"registry\":{\"url\":\"%s\"}}",
           brokers, topic, topic, registry);
  rdp_kafka_export_dataset_json(&s, config, dataset);
  json = take(s);
  snprintf(expected, sizeof expected,
           "{\"ok\":true,\"interchange\":{\"kind\":\"kafka_export\",\"topic\":\"%s\","
           "\"row_count\":%d}}",
           topic, n);
  CHECK_EQ_STR(json, expected);
  free(json);
}

static void test_kelt_registry(void) {
  char brokers[256], registry[256], topic[128], config[2048], schema[256];
  char dir[] = "/tmp/kelt-capi-reg-XXXXXX";
  kelt_consumer* c = NULL;
  kelt_pipeline* p = NULL;
  kelt_error* err = NULL;
  char* json = NULL;
  int64_t rows = 0;
  int polls, seen7 = 0;
  const int n = 40;
  if (!read_bootstrap(brokers, sizeof brokers) ||
      !read_env_value("KELT_REGISTRY_ENV", "KELT_REGISTRY_URL", registry,
                      sizeof registry)) {
    CHECK(0);
    return;
  }
  snprintf(topic, sizeof topic, "capi-avro-%ld-%d", (long)time(NULL), (int)getpid());
  produce_avro_rows(brokers, registry, topic, 1, n, 0);

  /* The window consumer lands them with the subject's schema, after _kafka_*. */
  snprintf(config, sizeof config,
           "{\"brokers\":\"%s\",\"group_id\":\"%s-g\",\"topic\":\"%s\","
           "\"max_records\":1000,\"max_wait_ms\":5000,\"registry\":{\"url\":\"%s\"}}",
           brokers, topic, topic, registry);
  snprintf(schema, sizeof schema, "registry:%s-value", topic);
  if (kelt_consumer_new(config, schema, &c, &err) != KELT_OK) {
    fprintf(stderr, "kelt_consumer_new(registry): %s\n", kelt_error_message(err));
    CHECK(0);
    kelt_error_free(err);
    return;
  }
  for (polls = 0; polls < 20 && rows < n; ++polls) {
    kelt_window* w = NULL;
    if (kelt_consumer_poll(c, &w, &err) != KELT_OK) {
      fprintf(stderr, "poll: %s\n", kelt_error_message(err));
      CHECK(0);
      kelt_error_free(err);
      break;
    }
    CHECK(kelt_window_num_rows(w) == kelt_window_num_records(w));
    rows += kelt_window_num_rows(w);
    if (kelt_window_num_rows(w) > 0) {
      CHECK(kelt_window_to_dataset_json(w, &json, NULL) == KELT_OK);
      /* the subject's fields, then the metadata columns */
      CHECK_PREFIX(json,
                   "{\"schema\":{\"fields\":[{\"name\":\"id\",\"data_type\":\"Int64\"},"
                   "{\"name\":\"name\",\"data_type\":\"Utf8\"},"
                   "{\"name\":\"_kafka_topic\"");
      CHECK(strstr(json, "{\"name\":\"_kafka_offset\"") != NULL);
      if (strstr(json, "[{\"Int64\":7},{\"Utf8\":\"row 7\"},") != NULL) seen7 = 1;
      kelt_string_free(json);
      CHECK(kelt_consumer_commit(c, w, NULL) == KELT_OK);
    }
    kelt_window_free(w);
  }
  CHECK(rows == n);
  CHECK(seen7);

  /* A second version of the subject adds a column: the same consumer's windows grow. */
  produce_avro_rows(brokers, registry, topic, n + 1, 10, 1);
  for (polls = 0; polls < 20 && rows < n + 10; ++polls) {
    kelt_window* w = NULL;
    if (kelt_consumer_poll(c, &w, &err) != KELT_OK) {
      fprintf(stderr, "poll after growth: %s\n", kelt_error_message(err));
      CHECK(0);
      kelt_error_free(err);
      break;
    }
    rows += kelt_window_num_rows(w);
    if (kelt_window_num_rows(w) > 0) {
      CHECK(kelt_window_to_dataset_json(w, &json, NULL) == KELT_OK);
      CHECK(strstr(json, "{\"name\":\"tier\",\"data_type\":\"Utf8\"}") != NULL);
      CHECK(strstr(json, "{\"Utf8\":\"gold\"}") != NULL);
      kelt_string_free(json);
      CHECK(kelt_consumer_commit(c, w, NULL) == KELT_OK);
    }
    kelt_window_free(w);
  }
  CHECK(rows == n + 10);
  CHECK(kelt_consumer_close(c, NULL) == KELT_OK);
  kelt_consumer_free(c);
  c = NULL;

  /* An unknown subject is a config error naming it; no consumer is made. */
  CHECK(kelt_consumer_new(config, "registry:capi-no-such-subject", &c, &err) ==
        KELT_INVALID);
  CHECK(c == NULL);
  if (err != NULL) {
    CHECK(strstr(kelt_error_message(err), "capi-no-such-subject") != NULL);
    kelt_error_free(err);
    err = NULL;
  }

  /* The pipeline: `schema: registry:<subject>` lands every row into Parquet. */
  CHECK(mkdtemp(dir) != NULL);
  snprintf(config, sizeof config,
           "{\"brokers\":\"%s\",\"group\":\"%s-pipe\",\"topics\":[\"%s\"],"
           "\"schema\":\"registry:%s-value\",\"registry\":{\"url\":\"%s\"},"
           "\"until_caught_up\":true,\"sinks\":[{\"parquet\":{\"root\":\"landing\"}}]}",
           brokers, topic, topic, topic, registry);
  if (kelt_pipeline_new(config, dir, &p, &err) != KELT_OK) {
    fprintf(stderr, "kelt_pipeline_new(registry): %s\n", kelt_error_message(err));
    CHECK(0);
    kelt_error_free(err);
    return;
  }
  CHECK(kelt_pipeline_run(p, NULL) == KELT_OK);
  CHECK(kelt_pipeline_stats_json(p, &json, NULL) == KELT_OK);
  {
    char want[64];
    snprintf(want, sizeof want, "\"rows\":%d,\"bad_records\":0", n + 10);
    if (strstr(json, want) == NULL) fprintf(stderr, "stats: %s\n", json);
    CHECK(strstr(json, want) != NULL);
  }
  kelt_string_free(json);
  CHECK(kelt_pipeline_close(p, NULL) == KELT_OK);
  kelt_pipeline_free(p);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--broker") == 0) {
    test_rdp_broker();
  } else if (argc > 1 && strcmp(argv[1], "--registry") == 0) {
    test_kelt_registry();
  } else {
    test_rdp_load();
    test_rdp_errors();
    test_kelt_errors();
    test_rdp_pipeline();
    test_kelt_mock_cluster();
    test_kelt_consumer_mock();
    test_kelt_bad_records_mock();
    test_kelt_pipeline_mock();
  }
  printf("%d checks, %d failed\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
