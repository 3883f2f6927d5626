// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The registry-backed PayloadEncoders of each value format (internal to serde/):
// registry_encoder.cc makes them, one file per format defines them.
#pragma once

#include <arrow/api.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kelt/registry.h"
#include "kelt/serde.h"

namespace kelt::serde {

/// A PayloadEncoder that can compile (and, with auto_register, register) for an Arrow
/// schema before the first batch, so that a column that cannot be written fails early.
class RecordEncoder : public PayloadEncoder {
 public:
  virtual Status Prepare(std::shared_ptr<arrow::Schema> schema) = 0;
};

/// The subject with each character a schema name may not hold as '_' ("orders-value" →
/// "orders_value"; a leading digit gets a '_' in front).
std::string RecordNameOf(const std::string& subject);

/// The name an auto-registered schema gets: `record_name`, else RecordNameOf(subject).
std::string RecordNameFor(const RegistryEncoderOptions& options);

/// Registers `text`, the schema derived from the rows' columns, under the options'
/// subject and returns its id; a failure keeps the registry's code and words and names
/// `what` ("Avro schema"), the subject and the registry.
Result<int32_t> RegisterRowsSchema(SchemaRegistry& registry,
                                   const RegistryEncoderOptions& options,
                                   SchemaFormat format, const std::string& what,
                                   const std::string& text);

/// What an encoder compiled for each Arrow schema of the batches it was given, made the
/// first time a schema is seen. Entries are never removed or moved: a pointer stays
/// valid as long as the encoder, so it may be used after the encoder's lock is released.
template <typename Entry>
class EntriesBySchema {
 public:
  /// The entry made for `schema` (compared without metadata), or null the first time.
  Entry* Find(const arrow::Schema& schema) const {
    for (const auto& [known, entry] : entries_) {
      if (known->Equals(schema, /*check_metadata=*/false)) return entry.get();
    }
    return nullptr;
  }

  /// Keeps `entry` as the one of `schema` and returns it. (Find, then make, then Add: a
  /// failure to make an entry is not remembered. No callback, so that the caller's
  /// lock annotations cover the making.)
  Entry* Add(std::shared_ptr<arrow::Schema> schema, std::unique_ptr<Entry> entry) {
    entries_.emplace_back(std::move(schema), std::move(entry));
    return entries_.back().second.get();
  }

 private:
  std::vector<std::pair<std::shared_ptr<arrow::Schema>, std::unique_ptr<Entry>>> entries_;
};

/// Protobuf records: `latest` the subject's latest schema, or null with auto_register.
Result<std::shared_ptr<RecordEncoder>> MakeProtobufRecords(
    std::unique_ptr<SchemaRegistry> registry, const RegistryEncoderOptions& options,
    std::shared_ptr<const RegisteredSchema> latest);

/// The message `message` of a registered Protobuf schema (its references fetched) and
/// the Arrow schema its records land as: what `kelt produce` reads JSON input as.
Result<std::shared_ptr<arrow::Schema>> ProtobufColumns(SchemaRegistry& registry,
                                                       const RegisteredSchema& schema,
                                                       const std::string& message);

/// kTypeError naming the first column (or field of a struct) whose type has no JSON form
/// kelt writes (json_schema_records.cc: null, bool, integers, floats, decimals, strings,
/// binary as base64, timestamps as RFC 3339 UTC with microseconds, dates, dictionaries,
/// structs, lists, maps with string keys).
Status CheckJsonWritable(const arrow::Schema& schema);

/// Append to `out` one payload per row of `batch` (of a CheckJsonWritable schema):
/// `header` and the row as a JSON object, its null values (in structs too) left out.
Status AppendRowsJson(const arrow::RecordBatch& batch, const std::string& header,
                      std::vector<std::string>* out);

/// The values of rows of `columns` checked against the landing SchemaFromJsonSchema
/// derives from a JSON Schema (docs/USER_GUIDE.md §4, "JSON Schema"): each column, and
/// each field of a struct column whose path is no landing column, meets the landing
/// column of its property path.
class JsonSchemaCheck {
 public:
  static Result<JsonSchemaCheck> Make(std::string_view json_schema,
                                      std::shared_ptr<arrow::Schema> columns);
  /// kTypeError for the first value that does not fit, naming the record (the row),
  /// the field's path and `subject`.
  Status CheckRows(const arrow::RecordBatch& batch, const std::string& subject) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

/// JSON Schema records: `latest` the subject's latest schema, or null with auto_register.
Result<std::shared_ptr<RecordEncoder>> MakeJsonSchemaRecords(
    std::unique_ptr<SchemaRegistry> registry, const RegistryEncoderOptions& options,
    std::shared_ptr<const RegisteredSchema> latest);

}  // namespace kelt::serde
