// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Load step (RDP_COMPATIBILITY.md §3): Kafka records → an Arrow RecordBatch in the
// landing schema, with `_kafka_*` metadata columns and a bad-record policy.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kelt/protobuf.h"
#include "kelt/record.h"
#include "kelt/schema.h"
#include "kelt/status.h"

namespace arrow {
class RecordBatch;
class Schema;
}  // namespace arrow

namespace kelt {

/// What to do with a record whose payload does not fit the landing schema.
enum class BadRecordPolicy : uint8_t {
  /// Stop the window with the record's error (RDP's behaviour; the default of the
  /// RDP-compatible calls).
  kFail,
  /// Count the record and leave it out of the landed batch.
  kSkip,
  /// Count the record and put it, raw, in the dead-letter batch.
  kDeadLetter,
};

/// "fail", "skip" or "dead_letter".
std::string_view BadRecordPolicyName(BadRecordPolicy policy);
std::optional<BadRecordPolicy> ParseBadRecordPolicy(std::string_view name);

/// Payloads in the Confluent wire format with Avro bodies (a magic byte 0, the writer
/// schema's id, the Avro binary body). The landing's payload columns are the reader
/// schema's (AvroSchema::ToArrowSchema, with every column and nested field nullable: a
/// tombstone lands as a row of nulls), before the `_kafka_*` columns of the landing
/// Schema, which then holds only those. Each record is decoded by a plan from its writer
/// schema to the reader schema (Avro's resolution rules), compiled at the first record of
/// each id.
struct AvroPayload {
  /// The reader schema (Avro schema JSON): the registry subject's latest at start.
  std::string reader_schema;
  /// Its registry id, for messages (-1: not from a registry).
  int32_t reader_schema_id = -1;
  /// The Avro schema JSON of a writer schema id. kNotFound: the id is unknown (the
  /// record is bad: UNKNOWN_SCHEMA_ID); kInvalid: not an Avro schema (the record is bad:
  /// INCOMPATIBLE_SCHEMA); any other error ends the window (a registry that is down).
  /// Called from several loaders at once: it must be thread-safe (SchemaRegistry::ById
  /// is).
  std::function<Result<std::string>(int32_t id)> writer_schema;
  /// Bytes after a record body are an error (TRAILING_BYTES) unless allowed.
  bool allow_trailing_bytes = false;
  /// The subject's latest schema now (its id and Avro schema JSON). When set, the
  /// landing may grow: a writer schema with every reader column (same types) and more,
  /// whose columns the latest has (EvolvedAvroPayload's conditions), stops the window
  /// (kCancelled, Loader::newer_writer_schema()) so that the caller loads it again with
  /// EvolvedAvroPayload's reader. Otherwise a writer's extra fields are left out, as
  /// Avro's resolution rules say.
  std::function<Result<std::pair<int32_t, std::string>>()> latest_schema;
};

/// The payload whose reader schema is the subject's latest (`current.latest_schema`),
/// when the landing may grow to it for writer schema `writer_id`: the latest has every
/// column of the writer and of the current reader (same types) and more, and it reads
/// what the current reader reads (the same record; defaults for the added fields).
/// kInvalid otherwise (an older writer during a rollout, another record type): such a
/// writer's extra fields are left out, as Avro's resolution rules say.
Result<std::shared_ptr<const AvroPayload>> EvolvedAvroPayload(const AvroPayload& current,
                                                              int32_t writer_id);

/// A Protobuf schema as a registry holds it: its id, its text (.proto source or a base64
/// FileDescriptorProto) and the files it imports, resolved (ProtobufSchema::Parse).
struct ProtobufSchemaSource {
  int32_t id = -1;
  std::string text;
  std::vector<ProtobufImport> imports;
};

/// Payloads in the Confluent wire format with Protobuf bodies (a magic byte 0, the writer
/// schema's id, the message indexes, the message body). The landing's payload columns
/// are the reader message's (ProtobufPlan::arrow_schema, every column and nested field
/// nullable: a tombstone lands as a row of nulls), before the `_kafka_*` columns of the
/// landing Schema, which then holds only those. Each record's message indexes select its
/// message in its writer schema; that message must have the reader message's full name
/// (else INCOMPATIBLE_SCHEMA), and its columns land by name: a reader column the writer
/// lacks is null, a column of the same name and another type makes the writer's records
/// INCOMPATIBLE_SCHEMA. One plan and decoder per (writer id, message indexes), compiled
/// at its first record.
struct ProtobufPayload {
  /// The reader schema: the registry subject's latest at start (id -1: not from a
  /// registry).
  ProtobufSchemaSource reader;
  /// The reader message's full name ("shop.Order"); empty: the file's first message.
  std::string message;
  /// The schema of a writer schema id (its `id` need not be set). kNotFound: the id is
  /// unknown (the record is bad: UNKNOWN_SCHEMA_ID); kInvalid: not a Protobuf schema
  /// (INCOMPATIBLE_SCHEMA); any other error ends the window. Thread-safe, as for
  /// AvroPayload::writer_schema.
  std::function<Result<ProtobufSchemaSource>(int32_t id)> writer_schema;
  /// The subject's latest schema now. When set, the landing may grow: a writer message
  /// with every reader column (same types) and more, whose columns the latest's message
  /// of the same name has, stops the window (kCancelled, Loader::newer_writer_schema())
  /// so that the caller loads it again with EvolvedProtobufPayload's reader. Otherwise a
  /// writer's extra fields are left out.
  std::function<Result<ProtobufSchemaSource>()> latest_schema;
};

/// The payload whose reader is the subject's latest schema (`current.latest_schema`),
/// when the landing may grow to it for writer schema `writer_id`: the latest's message
/// of the reader message's name has every column of the current reader and of the
/// writer's message of that name (same types), and more. Its `message` names the
/// reader message. kInvalid otherwise.
Result<std::shared_ptr<const ProtobufPayload>> EvolvedProtobufPayload(
    const ProtobufPayload& current, int32_t writer_id);

/// JSON payloads in the Confluent wire format (a magic byte 0, the writer schema's id in
/// 4 big-endian bytes, the JSON text), as Confluent's JSONSerializer writes them for a
/// JSON Schema subject. The loader takes the header off and lands the JSON text as any
/// JSON payload, by the landing Schema (the subject's, SchemaFromJsonSchema in
/// json_schema.h); `_kafka_value` columns hold that text, dead letters the raw record.
/// A payload without the header is MALFORMED_PAYLOAD, as Confluent's deserializer
/// refuses it; bodies are checked as under `strict_payload` (a body that is not a JSON
/// object is MALFORMED_PAYLOAD). Bodies are not validated against the writer schema:
/// values convert to the landing's column types (TYPE_MISMATCH), as for plain JSON.
struct RegistryJsonPayload {
  /// Check a writer schema id. OK: a JSON schema; kNotFound: the id is unknown (the
  /// record is bad: UNKNOWN_SCHEMA_ID); kInvalid: not a JSON schema (the record is bad:
  /// INCOMPATIBLE_SCHEMA); any other error ends the window (a registry that is down).
  /// Each loader asks once per id; called from several loaders at once, it must be
  /// thread-safe (SchemaRegistry::ById is).
  std::function<Status(int32_t id)> check_schema_id;
};

struct LoadOptions {
  BadRecordPolicy on_bad_record = BadRecordPolicy::kFail;
  /// RDP lands a payload that is not a JSON object as all-null payload columns when the
  /// schema has two or more payload fields (RDP_COMPATIBILITY.md §3 rule 4), and lands
  /// raw bytes that are not UTF-8 with U+FFFD. With `strict_payload` both are bad records
  /// instead (error codes MALFORMED_PAYLOAD and INVALID_UTF8). Off for RDP calls.
  bool strict_payload = false;
  /// Avro payloads from a Schema Registry instead of JSON (null: JSON).
  std::shared_ptr<const AvroPayload> avro;
  /// Protobuf payloads from a Schema Registry instead of JSON (null: JSON; not together
  /// with `avro`).
  std::shared_ptr<const ProtobufPayload> protobuf;
  /// JSON payloads in the registry's wire format (null: plain JSON; not with `avro`).
  std::shared_ptr<const RegistryJsonPayload> registry_json;
  /// Keys decoded by a schema (config `key.format: registry`): each record's key is
  /// loaded as a payload with these options (`avro` or `protobuf` set; their policy is
  /// not used) and lands in one more column, `_kafka_key`, after the landing's others:
  /// a struct of a record key's fields (null for a record without a key), or a
  /// primitive key's own type. A key that does not decode makes the record bad under this
  /// window's policy, with the key decoder's code and `_error_field`
  /// "_kafka_key[.<field>]". The landing Schema then must not list `_kafka_key`. Null:
  /// keys are not decoded.
  std::shared_ptr<const LoadOptions> key;
};

/// `options` with its Avro or Protobuf reader grown to take writer schema `writer_id`'s
/// added columns (EvolvedAvroPayload, EvolvedProtobufPayload): what a caller loads the
/// window again with after Loader::newer_writer_schema() stopped it. kInvalid without
/// an Avro or Protobuf payload, or when the landing may not grow to it.
Result<LoadOptions> GrownLoadOptions(const LoadOptions& options, int32_t writer_id);

/// Counters of one window.
struct LoadStats {
  int64_t records = 0;      ///< records offered to the loader
  int64_t rows = 0;         ///< rows in the landed batch
  int64_t bad_records = 0;  ///< records that failed conversion (skipped + dead-lettered)
  int64_t skipped = 0;
  int64_t dead_lettered = 0;
  int64_t tombstones =
      0;  ///< records with a null payload (landed with null payload columns)
  int64_t payload_bytes = 0;  ///< sum of payload sizes offered

  LoadStats& operator+=(const LoadStats& o);
};

/// The result of loading one window.
struct LoadedWindow {
  /// Landed rows in the landing schema.
  std::shared_ptr<arrow::RecordBatch> batch;
  /// Bad records under kDeadLetter, in DeadLetterSchema() (zero rows otherwise).
  std::shared_ptr<arrow::RecordBatch> dead_letters;
  LoadStats stats;
};

/// Return the schema of dead-letter batches: _kafka_topic utf8, _kafka_partition int64,
/// _kafka_offset int64, _kafka_timestamp_ms int64, _kafka_key binary, _kafka_value
/// binary, _error_code utf8, _error_field utf8, _error_message utf8.
std::shared_ptr<arrow::Schema> DeadLetterSchema();

/// Stable codes of bad records (dead-letter `_error_code`).
inline constexpr std::string_view kErrorTypeMismatch = "TYPE_MISMATCH";
inline constexpr std::string_view kErrorMalformedPayload = "MALFORMED_PAYLOAD";
inline constexpr std::string_view kErrorInvalidUtf8 = "INVALID_UTF8";
/// Avro and Protobuf payloads: a schema id the registry does not know, a writer schema
/// that cannot be read as the reader schema (the message names both ids). A body that
/// does not decode has the decoder's code (AvroErrorKindName, ProtobufErrorKindName:
/// TRUNCATED, INVALID_UTF8, …) and the field's path; a payload without the wire
/// format's header, or with bad Protobuf message indexes, is MALFORMED_PAYLOAD.
/// JSON payloads in the wire format (RegistryJsonPayload): the same codes for the
/// header and the id.
inline constexpr std::string_view kErrorUnknownSchemaId = "UNKNOWN_SCHEMA_ID";
inline constexpr std::string_view kErrorIncompatibleSchema = "INCOMPATIBLE_SCHEMA";

/// Converts records into Arrow columns, one window at a time. Not thread-safe; use one
/// Loader per thread. Reusable: Finish() returns the window and starts the next one.
class Loader {
 public:
  /// Compile `landing` into a column plan (with `options.avro` or `.protobuf`: only its
  /// `_kafka_*` columns, the payload's being the reader schema's). Fails for unknown
  /// `_kafka_*` names ("schema mismatch: unknown kafka metadata column '<name>'"),
  /// metadata columns of a type their value cannot take, empty or duplicate field names.
  static Result<std::unique_ptr<Loader>> Make(const Schema& landing,
                                              LoadOptions options = {});
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  /// Reserve room for `records` more rows and about `payload_bytes` of payload.
  Status Reserve(int64_t records, int64_t payload_bytes);

  /// Append one record. Returns an error only under kFail (the record is then not
  /// appended and the loader stays usable) or on an internal failure.
  Status Append(const RecordView& record);
  Status Append(const StreamRecord& record);

  /// Return the window built so far and reset for the next one.
  Result<LoadedWindow> Finish();

  /// True when a column reads record headers (callers may skip collecting them).
  bool needs_headers() const;
  /// Avro or Protobuf payloads that may grow (latest_schema): the id of the writer
  /// schema with columns the reader lacks that stopped the last Append (it returned
  /// kCancelled), else -1; Finish() keeps it.
  int32_t newer_writer_schema() const;
  /// The landing Schema it was made with (with an Avro or Protobuf payload: the
  /// `_kafka_*` columns).
  const Schema& schema() const;
  /// The landed batches' schema: every column, payload and metadata.
  const std::shared_ptr<arrow::Schema>& arrow_schema() const;

  /// One window's loading, for JSON, Avro or Protobuf payloads (internal: load/).
  class Impl;

 private:
  friend struct LoaderTesting;
  explicit Loader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// One loader per core (up to 4), all for `landing` with `options`: what
/// LoadWindowParallel (kelt/poll_load.h) shares a large window among.
Result<std::vector<std::unique_ptr<Loader>>> MakeLoaderPerCore(
    const Schema& landing, const LoadOptions& options);

/// Load a span of owned records into one batch.
Result<LoadedWindow> LoadRecords(std::span<const StreamRecord> records,
                                 const Schema& landing, const LoadOptions& options = {});

/// RDP's `elt_load_kafka_records_json`: parse `{"records":[…]}` (or a bare array) and
/// load. A records parse error reads "schema mismatch: invalid kafka stream record JSON:
/// …".
Result<LoadedWindow> LoadRecordsJson(std::string_view records_json, const Schema& landing,
                                     const LoadOptions& options = {});

}  // namespace kelt
