// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Kafka sink's value formats in the Confluent wire format (issue #14, the produce
// side): PayloadEncoders (include/kelt/kafka.h) that write each row as a record of a
// Schema Registry subject's schema, the schema id in front: Avro, Protobuf (the message
// indexes after the id) and JSON Schema (the row's JSON text after the id).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kelt/kafka.h"
#include "kelt/registry.h"
#include "kelt/status.h"

namespace arrow {
class Schema;
}  // namespace arrow

namespace kelt {

/// What a Kafka sink writes as the message value.
enum class ValueFormat : uint8_t {
  kJson,        ///< a JSON object per row (or value_column's text): no registry
  kAvro,        ///< Avro in the Confluent wire format
  kProtobuf,    ///< Protobuf in the Confluent wire format
  kJsonSchema,  ///< JSON text in the Confluent wire format, of a JSON Schema subject
};

/// "json", "avro", "protobuf", "json-schema".
std::string_view ValueFormatName(ValueFormat format);
/// Parse those names; an error names `what` and the accepted values.
Result<ValueFormat> ParseValueFormat(std::string_view text,
                                     std::string_view what = "value_format");

struct RegistryEncoderOptions {
  /// The subject whose schema the records follow, e.g. "orders-value". Required.
  std::string subject;
  ValueFormat format = ValueFormat::kAvro;
  /// Register a schema derived from the rows' Arrow schema (AvroSchemaFromArrow,
  /// ProtobufSchemaFromArrow, JsonSchemaFromArrow) under the subject, instead of writing
  /// with the subject's latest version. The subject's compatibility rule may refuse it
  /// (kInvalid with the registry's words).
  bool auto_register = false;
  /// auto_register: the Avro record's, the Protobuf message's or the JSON Schema's
  /// (`title`) name; empty: the subject with each character a name may not hold as '_'
  /// ("orders-value" → "orders_value").
  std::string record_name;
  /// kProtobuf with the latest schema: the full name of the message written
  /// ("shop.Order", nested "shop.Order.Line"); empty: the file's first message. Its
  /// message indexes follow the schema id in each record.
  std::string message;
};

/// The subject's latest schema as a writer: its id, text and the Arrow schema that rows
/// written with it have (Avro: AvroSchema::ToArrowSchema; Protobuf: the plan's columns of
/// `message`, empty for the first; JSON Schema: null, the JSON is read as it comes and
/// each value checked when encoded). kNotFound for an unknown subject, kUnavailable when
/// the registry does not answer, kInvalid for a subject of another schema type or an
/// unknown message.
struct WriterSchema {
  int32_t id = -1;
  std::string text;
  std::shared_ptr<arrow::Schema> arrow_schema;
};
Result<WriterSchema> LatestWriterSchema(const RegistryOptions& registry,
                                        const std::string& subject, ValueFormat format,
                                        const std::string& message = "");

/// Make a PayloadEncoder that writes rows as records of `options.subject`: the latest
/// schema (looked up once, now) or, with auto_register, a schema derived from the rows
/// (registered now when `arrow_schema` is given, else at the first batch). Batches of
/// another Arrow schema compile (and, with auto_register, register) once per schema.
/// With `arrow_schema`, a column that cannot be written as its field fails here, naming
/// the field. JSON Schema with the latest schema: each value is checked against the
/// landing column SchemaFromJsonSchema derives for its property, and the first that does
/// not fit fails the batch with kTypeError naming the record (row) and field. Thread-safe
/// (a Protobuf encoder encodes one batch at a time: libprotobuf's DynamicMessage).
Result<std::shared_ptr<const PayloadEncoder>> MakeRegistryEncoder(
    const RegistryOptions& registry, const RegistryEncoderOptions& options,
    std::shared_ptr<arrow::Schema> arrow_schema = nullptr);

/// The value format of a producer config given as JSON (the pipeline JSON's kafka sink,
/// Python's export_dataset_to_kafka, rdp_kafka_export_dataset_json): the keys
/// `value_format` ("json", the default, "avro", "protobuf" or "json-schema"), `subject`,
/// `auto_register`, `record_name`, `message` and `registry`, an object of `url`,
/// `username`, `password`, `bearer_token`, `ca_location`, `certificate_location`,
/// `key_location`, `key_password`, `timeout_ms`. Other keys are left to the caller.
struct ValueFormatOptions {
  RegistryOptions registry;
  RegistryEncoderOptions encoder;  ///< its format: ValueFormat::kJson for plain JSON
};

/// Read those keys of a JSON object (checked; no request is made). kInvalid naming the
/// key: an unknown format, a registry format without a subject or registry.url.
Result<ValueFormatOptions> ParseValueFormatJson(std::string_view object_json);

/// The encoder of `options` (MakeRegistryEncoder), or nullptr for kJson.
Result<std::shared_ptr<const PayloadEncoder>> MakeValueEncoder(
    const ValueFormatOptions& options,
    std::shared_ptr<arrow::Schema> arrow_schema = nullptr);

}  // namespace kelt
