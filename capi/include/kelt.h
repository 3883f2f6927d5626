/* Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
 *
 * kelt's C ABI (C99; usable from C and C++), exported by libkelt.so:
 *
 *  1. RDP's JSON calls (RDP_COMPATIBILITY.md §5), symbol for symbol: `RdpJsonSlice`,
 * `rdp_*`.
 *  2. kelt's own stateful API, `kelt_*`: a consumer handle that polls bounded windows,
 *     loads them into a landing schema and commits only when told the window is durable;
 *     windows leave as an Arrow C stream (zero copy) or as DataSet JSON.
 *
 * Rules of the whole ABI (docs/USER_GUIDE.md, "C ABI"):
 *  - Input strings are NUL-terminated UTF-8, owned by the caller, only read during the
 * call.
 *  - Every output's owner is written on its function. Frees are NULL-safe.
 *  - Nothing throws, aborts or prints across this boundary; failures are returned.
 *  - Handles are not thread-safe: use each from one thread at a time.
 *  - Changes are additive only; only `rdp_*` and `kelt_*` symbols are exported.
 */
#ifndef KELT_H_
#define KELT_H_

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define KELT_EXPORT __attribute__((visibility("default")))
#else
#define KELT_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 1. RDP-compatible JSON calls (RDP_COMPATIBILITY.md §5)
 * ---------------------------------------
 */

/* A JSON result: `len` bytes of UTF-8 at `ptr`, NOT NUL-terminated. Owned by the library
 * until passed to rdp_json_slice_free (exactly once). `cap` is the library's business. */
typedef struct RdpJsonSlice {
  uint8_t* ptr;
  size_t len;
  size_t cap;
} RdpJsonSlice;

/* Return the ABI version of the rdp_* calls: 406, the value RDP 0.3.4 reports. */
KELT_EXPORT uint32_t rdp_ffi_abi_version(void);

/* Free a slice returned by an rdp_* call. A slice with a NULL ptr is ignored. */
KELT_EXPORT void rdp_json_slice_free(RdpJsonSlice s);

/* Each call writes an envelope to *out (`out` may be NULL: the result is dropped):
 *   {"ok":true,"interchange":{"kind":…,…}}   or   {"ok":false,"error":"<message>"}
 * A NULL argument gives "<arg>: null pointer", bad UTF-8 "<arg>: invalid UTF-8: …". */

/* Load `{"records":[…]}` (or a bare array) into `schema_json` ({"fields":[…]}):
 * interchange {"kind":"kafka_elt_load","dataset":{…}}. */
KELT_EXPORT void rdp_kafka_elt_load_records_json(RdpJsonSlice* out,
                                                 const char* records_json,
                                                 const char* schema_json);
/* Poll one window (RDP_COMPATIBILITY.md §4 consumer config, kelt's extra keys too):
 * interchange {"kind":"kafka_poll_window","records":[…]}. */
KELT_EXPORT void rdp_kafka_poll_window_json(RdpJsonSlice* out,
                                            const char* consumer_config_json);
/* Poll one window and load it: interchange {"kind":"kafka_poll_window_loaded",
 * "dataset":{…}}. */
KELT_EXPORT void rdp_kafka_poll_window_loaded_json(RdpJsonSlice* out,
                                                   const char* consumer_config_json,
                                                   const char* schema_json);
/* Produce one message per row of a DataSet and wait for delivery:
 * interchange {"kind":"kafka_export","topic":"<t>","row_count":N}. */
KELT_EXPORT void rdp_kafka_export_dataset_json(RdpJsonSlice* out,
                                               const char* producer_config_json,
                                               const char* dataset_json);
/* Run a pipeline JSON document (RDP_COMPATIBILITY.md §6). Its error envelope is an
 * object:
 * {"ok":false,"error":{"code":…,"message":…,"stage":…}}. */
KELT_EXPORT void rdp_run_pipeline_json(RdpJsonSlice* out, const char* pipeline_json);

/* ---- Arrow C data / stream interface (https://arrow.apache.org/docs/format/) --------
 */

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4
struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};
struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};
#endif /* ARROW_C_DATA_INTERFACE */

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE
struct ArrowArrayStream {
  int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
  int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
  const char* (*get_last_error)(struct ArrowArrayStream*);
  void (*release)(struct ArrowArrayStream*);
  void* private_data;
};
#endif /* ARROW_C_STREAM_INTERFACE */

/* ---- 2. kelt's own API
 * ------------------------------------------------------------------ */

/* Version of the kelt_* ABI. Changes are additive and each bumps it (2:
 * kelt_mock_cluster_*; 3: kelt_version, kelt_abi_version), so a caller compiled against
 * KELT_ABI_VERSION N runs with any libkelt.so whose kelt_abi_version() is N or more. */
#define KELT_ABI_VERSION 3
#define KELT_C_API_VERSION KELT_ABI_VERSION /* its earlier name */
/* Return the ABI version of the libkelt.so loaded (KELT_ABI_VERSION when it was built).
 */
KELT_EXPORT uint32_t kelt_abi_version(void);
/* Return kelt_abi_version(); the earlier name, kept because the ABI only grows. */
KELT_EXPORT uint32_t kelt_c_api_version(void);
/* Return kelt's release version, e.g. "0.1.0" (KELT_VERSION_STRING of kelt/version.h):
 * NUL-terminated, static, owned by the library (never free it). */
KELT_EXPORT const char* kelt_version(void);

/* Status codes (stable numbers; new codes may be added). */
typedef enum kelt_status {
  KELT_OK = 0,
  KELT_INVALID = 1,     /* unusable argument, config key or schema */
  KELT_PARSE_ERROR = 2, /* input JSON/text not well-formed */
  KELT_TYPE_ERROR = 3,  /* a value does not convert to its landing type */
  KELT_IO_ERROR = 4,    /* storage failed */
  KELT_KAFKA = 5,       /* the Kafka client or broker reported an error */
  KELT_UNAVAILABLE = 6, /* transient; retrying may succeed */
  KELT_NOT_FOUND = 7,
  KELT_CANCELLED = 8,
  KELT_NOT_IMPLEMENTED = 9,
  KELT_INTERNAL = 10, /* a bug in kelt */
  KELT_OUT_OF_MEMORY = 11
} kelt_status;

/* An error: code, stable code name, message, retriable flag. Every fallible kelt_*
 * function takes `kelt_error** err` last: on failure, if err != NULL, *err receives a
 * new error owned by the caller (free with kelt_error_free); on success *err is left
 * untouched. The function's return value is the code. */
typedef struct kelt_error kelt_error;

/* The accessors take a non-NULL error; the strings live as long as the error. */
KELT_EXPORT kelt_status kelt_error_code(const kelt_error* err);
/* "INVALID", "PARSE_ERROR", "TYPE_ERROR", "IO_ERROR", "KAFKA", "UNAVAILABLE",
 * "NOT_FOUND", "CANCELLED", "NOT_IMPLEMENTED", "INTERNAL", "OUT_OF_MEMORY". */
KELT_EXPORT const char* kelt_error_code_name(const kelt_error* err);
KELT_EXPORT const char* kelt_error_message(const kelt_error* err);
/* 1 when retrying the same operation may succeed, else 0. */
KELT_EXPORT int kelt_error_retriable(const kelt_error* err);
KELT_EXPORT void kelt_error_free(kelt_error* err); /* NULL ok */

/* A string returned by kelt_* (NUL-terminated UTF-8, owned by the caller). */
KELT_EXPORT void kelt_string_free(char* s); /* NULL ok */

/* -- consumer -- */

typedef struct kelt_consumer kelt_consumer;
typedef struct kelt_window kelt_window;

/* Create a consumer-group member and subscribe. `config_json` has the keys of RDP's
 * consumer config (brokers, group_id, topic, max_records, auto_offset_reset,
 * session_timeout_ms) and kelt's: topics (list), properties (librdkafka pass-through),
 * max_wait_ms (window deadline, default 15000), max_bytes, group_protocol ("classic"
 * default | "consumer", KIP-848), instance_id (static membership), on_bad_record
 * ("fail" default | "skip" | "dead_letter"). Auto commit is off: nothing is committed
 * unless kelt_consumer_commit is called. `landing_schema_json` is {"fields":[…]}, or
 * "registry:<subject>": payloads in a Schema Registry's wire format land with the
 * subject's latest Avro, Protobuf or JSON Schema (asked now; a newer version met later
 * grows the window's columns), followed by the `_kafka_*` columns. The registry is the
 * config's `registry` object (url, username, password, bearer_token, ca_location,
 * certificate_location, key_location, key_password, timeout_ms, as for
 * rdp_kafka_export_dataset_json); `message` picks a Protobuf subject's message;
 * `key_format` "registry" decodes keys by `key_subject` (default <topic>-key) into a
 * `_kafka_key` column. An unknown subject or an unreachable registry is KELT_INVALID
 * naming it.
 * On success *out receives a consumer owned by the caller (kelt_consumer_free). */
KELT_EXPORT kelt_status kelt_consumer_new(const char* config_json,
                                          const char* landing_schema_json,
                                          kelt_consumer** out, kelt_error** err);

/* Poll the next window (it ends at max_records, max_bytes, the end of every assigned
 * partition, or max_wait_ms) and load it. *out receives a window owned by the caller
 * (kelt_window_free); it stays valid after the consumer is freed. Under on_bad_record
 * "fail" a bad record fails the call (KELT_TYPE_ERROR, naming the record's topic,
 * partition and offset) and the window is given back: the next poll reads it again, so
 * no record is passed over by a later commit (use "skip" / "dead_letter" to land the
 * rest and keep the bad record aside). */
KELT_EXPORT kelt_status kelt_consumer_poll(kelt_consumer* consumer, kelt_window** out,
                                           kelt_error** err);

/* Commit, synchronously, the offset after the last record of every partition in
 * `window` that this consumer still owns. Call it only once the window is durable. */
KELT_EXPORT kelt_status kelt_consumer_commit(kelt_consumer* consumer,
                                             const kelt_window* window, kelt_error** err);

/* Lag of each assigned partition, as JSON owned by the caller (kelt_string_free):
 * {"partitions":[{"topic":…,"partition":0,"position":…,"high_watermark":…,"lag":…}],
 *  "total_lag":N}. `timeout_ms` bounds the broker queries. */
KELT_EXPORT kelt_status kelt_consumer_lag_json(kelt_consumer* consumer,
                                               int32_t timeout_ms, char** out,
                                               kelt_error** err);

/* Leave the group (uncommitted records stay for the next owner). Later calls on the
 * consumer fail; it must still be freed. */
KELT_EXPORT kelt_status kelt_consumer_close(kelt_consumer* consumer, kelt_error** err);

/* Close (if not closed) and free. NULL ok. */
KELT_EXPORT void kelt_consumer_free(kelt_consumer* consumer);

/* -- window (a loaded poll window) -- */

KELT_EXPORT int64_t kelt_window_num_rows(const kelt_window* window); /* landed rows */
KELT_EXPORT int64_t
kelt_window_num_records(const kelt_window* window); /* records polled */

/* Export the landed rows as an Arrow C stream (one batch; schema = landing schema).
 * `out` must point to caller memory; on success the caller owns the stream and calls its
 * release callback. The buffers are shared, not copied, and stay valid after the window
 * is freed. */
KELT_EXPORT kelt_status kelt_window_to_arrow_stream(const kelt_window* window,
                                                    struct ArrowArrayStream* out,
                                                    kelt_error** err);
/* The dead-lettered records (on_bad_record = "dead_letter") as an Arrow C stream. */
KELT_EXPORT kelt_status kelt_window_dead_letters_to_arrow_stream(
    const kelt_window* window, struct ArrowArrayStream* out, kelt_error** err);
/* The landed rows as DataSet JSON ({"schema":…,"rows":[…]}), owned by the caller
 * (kelt_string_free). */
KELT_EXPORT kelt_status kelt_window_to_dataset_json(const kelt_window* window, char** out,
                                                    kelt_error** err);
/* What the window holds, as JSON owned by the caller (kelt_string_free):
 * {"records":N,"rows":N,"bad_records":N,"skipped":N,"dead_lettered":N,"tombstones":N,
 *  "bytes":N,"end":"max_records|max_bytes|end_of_partitions|deadline",
 *  "spans":[{"topic":…,"partition":0,"first_offset":…,"last_offset":…,"count":N}]}. */
KELT_EXPORT kelt_status kelt_window_info_json(const kelt_window* window, char** out,
                                              kelt_error** err);
KELT_EXPORT void kelt_window_free(kelt_window* window); /* NULL ok */

/* -- pipeline (the ELT loop: Extract → Load → land in every sink → commit) -- */

typedef struct kelt_pipeline kelt_pipeline;

/* Create the loop from a config document: YAML or JSON with the keys of
 * `kelt run --config` (docs/USER_GUIDE.md, "Configuration": brokers, group, topics,
 * schema (inline or a file), on_bad_record, window.*, until_caught_up, max_windows,
 * properties, sinks: [{parquet|duckdb|postgres: {…}}]). `base_dir` resolves relative
 * paths in it (NULL: the current directory). Opens the sinks and subscribes; nothing is
 * read yet. On success *out receives a pipeline owned by the caller
 * (kelt_pipeline_free). */
KELT_EXPORT kelt_status kelt_pipeline_new(const char* config, const char* base_dir,
                                          kelt_pipeline** out, kelt_error** err);

/* Run one window: poll, load, write to every sink, commit what became durable.
 * *more (may be NULL) receives 1 while the run goes on, 0 once it is over (caught up
 * with until_caught_up, or max_windows reached). */
KELT_EXPORT kelt_status kelt_pipeline_step(kelt_pipeline* pipeline, int* more,
                                           kelt_error** err);

/* Run windows until the run is over (until_caught_up / max_windows; with neither it
 * runs until an error), then flush the sinks and commit. */
KELT_EXPORT kelt_status kelt_pipeline_run(kelt_pipeline* pipeline, kelt_error** err);

/* Counters so far, as JSON owned by the caller (kelt_string_free):
 * {"windows":N,"records":N,"bytes":N,"rows":N,"bad_records":N,"dead_lettered":N,
 *  "sink_errors":N,"caught_up":bool,
 *  "committed":[{"topic":…,"partition":0,"next_offset":N}]}. */
KELT_EXPORT kelt_status kelt_pipeline_stats_json(const kelt_pipeline* pipeline,
                                                 char** out, kelt_error** err);

/* Flush the sinks, commit, leave the group, close the sinks. Later calls fail; the
 * pipeline must still be freed. */
KELT_EXPORT kelt_status kelt_pipeline_close(kelt_pipeline* pipeline, kelt_error** err);

/* Close (if not closed; errors are dropped: call kelt_pipeline_close to see them) and
 * free. NULL ok. */
KELT_EXPORT void kelt_pipeline_free(kelt_pipeline* pipeline);

/* -- mock cluster (tests and examples) --
 * librdkafka's in-process mock cluster: Kafka brokers inside this process, reachable at
 * kelt_mock_cluster_bootstraps by kelt's consumer, producer and pipeline (and any Kafka
 * client in the process). It is not a broker: data stays in memory, topics are created
 * with kelt_mock_cluster_create_topic (clients' CreateTopics is not served), and it is
 * gone when freed. The C++ API is include/kelt/mock_cluster.h. */

typedef struct kelt_mock_cluster kelt_mock_cluster;

/* Start a cluster of `brokers` brokers (ids 1..brokers, at least 1). On success *out
 * receives a cluster owned by the caller (kelt_mock_cluster_free). */
KELT_EXPORT kelt_status kelt_mock_cluster_new(int32_t brokers, kelt_mock_cluster** out,
                                              kelt_error** err);

/* The brokers' addresses ("127.0.0.1:port,…", for "brokers" / bootstrap.servers),
 * owned by the cluster and valid until it is freed; "" for NULL. */
KELT_EXPORT const char* kelt_mock_cluster_bootstraps(const kelt_mock_cluster* cluster);

/* Create a topic of `partitions` partitions and `replication_factor` replicas (at most
 * the number of brokers; 1 is usual). */
KELT_EXPORT kelt_status kelt_mock_cluster_create_topic(kelt_mock_cluster* cluster,
                                                       const char* name,
                                                       int32_t partitions,
                                                       int32_t replication_factor,
                                                       kelt_error** err);

/* Tear the cluster down (clients still connected see their brokers gone). NULL ok. */
KELT_EXPORT void kelt_mock_cluster_free(kelt_mock_cluster* cluster);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KELT_H_ */
