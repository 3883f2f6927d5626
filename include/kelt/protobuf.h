// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Protobuf binary → Arrow columns (issue #14).
//
// A Protobuf schema (what a Schema Registry holds: .proto source text, or a base64
// serialized FileDescriptorProto) parses, with the schemas it imports, into a
// ProtobufSchema. One message of it, chosen by the Confluent message indexes, compiles
// once into a ProtobufPlan (field number → column operation). A ProtobufDecoder runs a
// plan over message bodies (the bytes after the wire-format header and the message
// indexes) straight into Arrow columns, with no per-record message object, and hands
// them out as a RecordBatch. The Arrow types are in src/kelt/protobuf/README.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kelt/status.h"

namespace arrow {
class RecordBatch;
class Schema;
}  // namespace arrow

namespace kelt {

// --- Protobuf schemas -----------------------------------------------------------------

/// An imported file: `name` as the importing file spells it ("common/money.proto"),
/// `text` its schema (.proto text or a base64 FileDescriptorProto, like the main one).
struct ProtobufImport {
  std::string name;
  std::string text;
};

/// A parsed Protobuf schema file with everything it imports, built into a descriptor
/// pool at run time. Cheap to copy (the pool is shared and immutable).
class ProtobufSchema {
 public:
  /// Parse `text`, either .proto source or a base64-encoded FileDescriptorProto (a
  /// registry returns either), resolving its imports from `imports` (recursively) and
  /// the well-known types (google/protobuf/*.proto) from those compiled into
  /// libprotobuf. A .proto syntax error is kParseError naming file, line and column
  /// ("schema.proto:3:14: Expected \";\"."); an unresolved import, an import cycle or
  /// a descriptor that does not build (undefined type, duplicate number) is kInvalid
  /// naming the file. The main file is named `file_name` unless its descriptor has a
  /// name of its own.
  static Result<ProtobufSchema> Parse(std::string_view text,
                                      const std::vector<ProtobufImport>& imports = {},
                                      std::string_view file_name = "schema.proto");

  /// The main file's name and package.
  const std::string& file_name() const;
  const std::string& package() const;

  /// Return the full name ("shop.Order.Line") of the message the Confluent message
  /// indexes select: [i] is the file's i-th top-level message, [i, j] the j-th message
  /// nested in it, and so on; {} means [0]. kInvalid when an index is out of range.
  Result<std::string> MessageName(const std::vector<int32_t>& indexes) const;

  /// Return the Confluent message indexes of the message `full_name` ("shop.Order" or,
  /// nested, "shop.Order.Line"), searching depth first; empty `full_name`: the file's
  /// first message ([0]). kInvalid naming the file when no message has that name.
  Result<std::vector<int32_t>> MessageIndexes(std::string_view full_name) const;

  struct Pool;  // the descriptor pool and the main file (defined in protobuf/schema.h)
  const std::shared_ptr<const Pool>& pool() const { return pool_; }

 private:
  explicit ProtobufSchema(std::shared_ptr<const Pool> pool);
  std::shared_ptr<const Pool> pool_;
};

// --- plans and decoding ---------------------------------------------------------------

/// How the bodies of one message type become Arrow columns, compiled once.
class ProtobufPlan {
 public:
  /// Compile the message the indexes select (see MessageName). kInvalid for a
  /// recursive message (no Arrow type can hold it: "children[]: recursive message
  /// shop.Node"; google.protobuf.Struct/Value/ListValue land as JSON text instead), for
  /// proto2 group fields, and for bad indexes.
  static Result<std::shared_ptr<const ProtobufPlan>> Compile(
      const ProtobufSchema& schema, const std::vector<int32_t>& message_indexes = {});
  ~ProtobufPlan();
  ProtobufPlan(const ProtobufPlan&) = delete;
  ProtobufPlan& operator=(const ProtobufPlan&) = delete;

  /// The Arrow schema of the decoded batches: the message's fields are the columns.
  const std::shared_ptr<arrow::Schema>& arrow_schema() const;
  /// The message's full name.
  const std::string& message_name() const;

  struct Program;  // the compiled field tree (defined in protobuf/plan.h)
  const Program& program() const { return *program_; }

 private:
  explicit ProtobufPlan(std::unique_ptr<Program> program);
  std::unique_ptr<Program> program_;
};

/// Why a message body did not decode. The names are stable (dead-letter error codes).
enum class ProtobufErrorKind : uint8_t {
  kTruncated,        ///< "TRUNCATED": the body ends inside a tag or value
  kBadVarint,        ///< "BAD_VARINT": a varint longer than 10 bytes
  kBadFieldNumber,   ///< "BAD_FIELD_NUMBER": 0, or beyond 2^29 - 1
  kWrongWireType,    ///< "WRONG_WIRE_TYPE": a known field with another wire type
  kBadWireType,      ///< "BAD_WIRE_TYPE": wire type 6 or 7
  kBadGroup,         ///< "BAD_GROUP": an unmatched or too deeply nested group
  kBadPackedLength,  ///< "BAD_PACKED_LENGTH": packed fixed-width values cut short
  kInvalidUtf8,      ///< "INVALID_UTF8": a string field that is not UTF-8
  kOutOfRange,       ///< "OUT_OF_RANGE": a Timestamp/Duration beyond int64 ns
  kTooLarge,         ///< "TOO_LARGE": past an Arrow offset limit
  kTooDeep,          ///< "TOO_DEEP": Struct/Value nested beyond 100 levels
};

/// "TRUNCATED", "BAD_VARINT", …
std::string_view ProtobufErrorKindName(ProtobufErrorKind kind);

/// Where and why the last message failed.
struct ProtobufDecodeError {
  ProtobufErrorKind kind = ProtobufErrorKind::kTruncated;
  /// The field's path in the message: "address.zip", "lines[]", "attrs{}" (a map
  /// value); "" for the message itself (an unknown field or a cut tag).
  std::string field;
  /// The byte offset in the body where the bad tag or value starts.
  int64_t offset = 0;
};

/// Decodes message bodies by one plan into Arrow columns, a batch at a time. Not
/// thread-safe: one decoder per thread (plans may be shared).
class ProtobufDecoder {
 public:
  static Result<std::unique_ptr<ProtobufDecoder>> Make(
      std::shared_ptr<const ProtobufPlan> plan);
  ~ProtobufDecoder();
  ProtobufDecoder(const ProtobufDecoder&) = delete;
  ProtobufDecoder& operator=(const ProtobufDecoder&) = delete;

  /// Make room for `records` more rows of the top-level columns.
  Status Reserve(int64_t records);

  /// Append one message body as a row. On bad bytes return kParseError naming the
  /// field and byte offset, e.g. "Protobuf message: field 'address.zip' at byte 17:
  /// truncated"; last_error() has the parts. A failed message leaves no trace: every
  /// column is as it was before the call, and the decoder stays usable.
  Status Append(std::string_view body);

  /// The error of the last failed Append.
  const ProtobufDecodeError& last_error() const;

  /// Rows appended since the last Finish.
  int64_t num_rows() const;

  /// Return the rows appended so far as a batch of the plan's arrow_schema() and start
  /// an empty one.
  Result<std::shared_ptr<arrow::RecordBatch>> Finish();

  const std::shared_ptr<const ProtobufPlan>& plan() const;

 private:
  class Impl;
  explicit ProtobufDecoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// --- encoding
// ---------------------------------------------------------------------------

/// Encodes Arrow rows as bodies of one message type (the produce side): each column sets
/// the field of its name, by libprotobuf's DynamicMessage and serializer. The types the
/// decoder lands (README.md's table) encode back to the same values; besides them, any
/// integer column takes an integer field (range-checked per value), an integer or float
/// column a float/double field, a string column an enum (by value name, or a number's
/// decimal text) as well as an integer column (the number), a timestamp or duration of
/// any unit a Timestamp or Duration, and JSON text a Struct, Value or ListValue. A null
/// cell leaves its field absent. Not thread-safe.
class ProtobufEncoder {
 public:
  /// Check every column against the field of its name in the message the indexes select
  /// (see ProtobufSchema::MessageName). kTypeError naming the column for a column the
  /// message lacks or a type that cannot encode its field.
  static Result<std::unique_ptr<ProtobufEncoder>> Make(
      const ProtobufSchema& schema, const std::vector<int32_t>& message_indexes,
      std::shared_ptr<arrow::Schema> columns);
  ~ProtobufEncoder();
  ProtobufEncoder(const ProtobufEncoder&) = delete;
  ProtobufEncoder& operator=(const ProtobufEncoder&) = delete;

  /// Append one body per row of `batch` (of Make's columns) to `bodies`. kTypeError
  /// naming the column and row for a value its field cannot take (out of range, an
  /// unknown enum name, text that is not UTF-8, a null item of a list, a missing proto2
  /// `required` field); the bodies of the rows before it are appended.
  Status Encode(const arrow::RecordBatch& batch, std::vector<std::string>* bodies);

  /// The message's full name.
  const std::string& message_name() const;

 private:
  struct State;
  explicit ProtobufEncoder(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// --- a schema for Arrow rows
// -----------------------------------------------------------------

struct ProtobufSchemaFromArrowOptions {
  /// The top-level message's name (a Protobuf identifier). Required.
  std::string message_name = "Record";
  /// The file's package; empty: none.
  std::string package;
};

/// Return the `.proto` text (proto3) of one message whose fields are the columns of
/// `schema`, numbered 1, 2, … in column order, so that ProtobufEncoder writes those rows
/// and ProtobufPlan lands them back as the same columns (src/kelt/protobuf/README.md,
/// "Arrow → .proto"): int8/16/32 → int32, int64 → int64, uint8/16/32 → uint32, uint64 →
/// uint64, float16/float32 → float, float64 → double, bool, string types → string,
/// binary types → bytes, timestamp → google.protobuf.Timestamp, duration →
/// google.protobuf.Duration, struct → a nested message named after the field, list<T> →
/// repeated T, map<K, V> (K an integer or string type) → map<K, V>; a nullable scalar is
/// `optional` (null stays absent, not 0). kTypeError naming the column for any other
/// type (date, decimal, a list of lists, …; a null list item fails
/// its row in the encoder) and kInvalid for a
/// name that is not a Protobuf identifier.
Result<std::string> ProtobufSchemaFromArrow(
    const arrow::Schema& schema, const ProtobufSchemaFromArrowOptions& options);

}  // namespace kelt
