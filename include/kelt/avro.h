// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Avro binary → Arrow columns (issue #14).
//
// An Avro schema (the JSON text a Schema Registry holds) parses into an AvroSchema. A
// pair of them, the schema the record was written with and the schema it is read as,
// compiles once into an AvroPlan following Avro's schema resolution rules (fields
// matched by name or alias, defaults, promotions, enum symbols by name, unions both
// ways). An AvroDecoder runs a plan over record bodies (the bytes after the Confluent
// wire-format header) straight into Arrow columns, and hands them out as a RecordBatch.
// The Arrow types of each Avro type are in src/kelt/avro/README.md.
//
// The other way (the produce side): an AvroEncoder, compiled once per (Arrow schema,
// Avro writer schema), turns the rows of RecordBatches into Avro binary bodies, and
// AvroSchemaFromArrow derives a writer schema from an Arrow schema.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/status.h"

namespace arrow {
class RecordBatch;
class Schema;
}  // namespace arrow

namespace kelt {

// --- Avro schemas ---------------------------------------------------------------------

/// The Avro types (the spec's primitive and complex types).
enum class AvroType : uint8_t {
  kNull,
  kBoolean,
  kInt,
  kLong,
  kFloat,
  kDouble,
  kBytes,
  kString,
  kRecord,
  kEnum,
  kArray,
  kMap,
  kUnion,
  kFixed,
};

/// Return the type's name as Avro spells it: "null", "boolean", …, "fixed".
std::string_view AvroTypeName(AvroType type);

/// The logical types kelt maps to Arrow types of their own. A logical type the spec
/// does not know, or one that is invalid (a decimal whose scale exceeds its precision,
/// a date on a string), is ignored as the spec says: the node reads as its underlying
/// type and keeps kNone here.
enum class AvroLogicalType : uint8_t {
  kNone,
  kDecimal,  ///< on bytes or fixed; `precision` and `scale` are set
  kUuid,     ///< on string
  kDate,     ///< on int
  kTimeMillis,
  kTimeMicros,
  kTimestampMillis,
  kTimestampMicros,
  kTimestampNanos,
  kLocalTimestampMillis,
  kLocalTimestampMicros,
  kLocalTimestampNanos,
};

/// Return the logical type's name as Avro spells it ("decimal", "timestamp-micros", …;
/// "" for kNone).
std::string_view AvroLogicalTypeName(AvroLogicalType type);

struct AvroNode;

/// A field of a record.
struct AvroField {
  std::string name;
  std::vector<std::string> aliases;
  const AvroNode* type = nullptr;
  /// The field's default as compact JSON text; nullopt when the field has none.
  std::optional<std::string> default_json;
};

/// One node of a schema tree. Named types (record, enum, fixed) are shared by every
/// reference to them, so the tree is a graph, and a recursive record (a linked list)
/// is a cycle. Nodes live as long as the AvroSchema that parsed them.
struct AvroNode {
  AvroType type = AvroType::kNull;
  AvroLogicalType logical_type = AvroLogicalType::kNone;
  /// Named types: the full name ("com.example.Order"), and aliases as full names.
  std::string name;
  std::vector<std::string> aliases;
  /// kRecord: the fields in declaration order.
  std::vector<AvroField> fields;
  /// kEnum: the symbols, and the index of the enum's default symbol or -1.
  std::vector<std::string> symbols;
  int32_t enum_default = -1;
  /// kFixed: the size in bytes.
  int32_t size = 0;
  /// kDecimal: precision and scale.
  int32_t precision = 0;
  int32_t scale = 0;
  /// kArray: the items; kMap: the values.
  const AvroNode* items = nullptr;
  /// kUnion: the branches.
  std::vector<const AvroNode*> branches;
};

/// A parsed Avro schema. Cheap to copy (the nodes are shared and immutable).
class AvroSchema {
 public:
  /// Parse Avro schema JSON: primitives, records, enums, arrays, maps, unions, fixed,
  /// named types and references to them by (namespace-qualified) name, namespaces,
  /// aliases, field defaults and logical types. Malformed JSON is kParseError; anything
  /// else wrong is kInvalid naming the place, e.g. "fields[2].type: unknown type 'foo'".
  static Result<AvroSchema> Parse(std::string_view json);

  const AvroNode& root() const;

  /// Return the Arrow schema a record read with this schema lands as (the reader's
  /// side of a plan). A top-level record's fields are the columns; any other top-level
  /// type is one column named "value". kInvalid for a recursive type (no Arrow type
  /// can hold it) and for a union of more than 127 branches.
  Result<std::shared_ptr<arrow::Schema>> ToArrowSchema() const;

  struct Graph;  // the nodes, owned (defined in avro_schema.cc)

 private:
  explicit AvroSchema(std::shared_ptr<const Graph> graph);
  std::shared_ptr<const Graph> graph_;
};

// --- plans and decoding ---------------------------------------------------------------

/// How one writer schema is read as one reader schema, compiled once: a flat list of
/// operations with indexes into the output columns.
class AvroPlan {
 public:
  /// Resolve `writer` against `reader` by Avro's rules. kInvalid when they cannot be
  /// resolved, naming the place: types that do not match, a reader field absent from the
  /// writer without a default (naming the reader's field and the writer's record),
  /// decimals of another scale, recursive types.
  static Result<std::shared_ptr<const AvroPlan>> Compile(const AvroSchema& writer,
                                                         const AvroSchema& reader);
  ~AvroPlan();
  AvroPlan(const AvroPlan&) = delete;
  AvroPlan& operator=(const AvroPlan&) = delete;

  /// The Arrow schema of the decoded batches (the reader's, see ToArrowSchema).
  const std::shared_ptr<arrow::Schema>& arrow_schema() const;
  /// The plan's operations, one per line (tests and debugging).
  std::string ToString() const;

  struct Program;  // the compiled operations (defined in plan.h)

 private:
  friend class AvroDecoder;
  explicit AvroPlan(std::unique_ptr<Program> program);
  std::unique_ptr<Program> program_;
};

/// Why a record body did not decode. The names are stable (dead-letter error codes).
enum class AvroErrorKind : uint8_t {
  kTruncated,            ///< "TRUNCATED": the body ends inside a value
  kVarintTooLong,        ///< "VARINT_TOO_LONG": more than 10 bytes
  kIntOutOfRange,        ///< "INT_OUT_OF_RANGE": an int outside 32 bits
  kNegativeLength,       ///< "NEGATIVE_LENGTH": bytes or string of negative length
  kBadBlockCount,        ///< "BAD_BLOCK_COUNT": array/map count beyond the bytes left
  kBadUnionIndex,        ///< "BAD_UNION_INDEX": a branch the writer's union lacks
  kBadEnumIndex,         ///< "BAD_ENUM_INDEX": a symbol the writer's enum lacks
  kBadBoolean,           ///< "BAD_BOOLEAN": a boolean byte other than 0 or 1
  kInvalidUtf8,          ///< "INVALID_UTF8": a string that is not UTF-8
  kDecimalOverflow,      ///< "DECIMAL_OVERFLOW": more digits than the precision
  kUnknownEnumSymbol,    ///< "UNKNOWN_ENUM_SYMBOL": unknown to the reader, no default
  kUnionBranchMismatch,  ///< "UNION_BRANCH_MISMATCH": a writer branch the reader lacks
  kTrailingBytes,        ///< "TRAILING_BYTES": bytes after the record
  kTooLarge,             ///< "TOO_LARGE": past an Arrow offset limit or item cap
};

/// "TRUNCATED", "VARINT_TOO_LONG", …
std::string_view AvroErrorKindName(AvroErrorKind kind);

/// Where and why the last record failed.
struct AvroDecodeError {
  AvroErrorKind kind = AvroErrorKind::kTruncated;
  /// The value's place in the reader's (or, for skipped fields, the writer's) record:
  /// "address.zip", "tags[]", "attributes{}" (a map value), "" for the record itself.
  std::string field;
  /// The byte offset in the body where the bad value (or the trailing bytes) starts.
  int64_t offset = 0;
};

struct AvroDecoderOptions {
  /// Bytes left after the record: a kTrailingBytes error (the default: they mean the
  /// record was not written with the writer schema), or ignored as Java's and Avro C's
  /// readers ignore them.
  bool allow_trailing_bytes = false;
};

/// Decodes record bodies by one plan into Arrow columns, a batch at a time. Not
/// thread-safe: one decoder per thread (plans may be shared).
class AvroDecoder {
 public:
  static Result<std::unique_ptr<AvroDecoder>> Make(std::shared_ptr<const AvroPlan> plan,
                                                   AvroDecoderOptions options = {});
  ~AvroDecoder();
  AvroDecoder(const AvroDecoder&) = delete;
  AvroDecoder& operator=(const AvroDecoder&) = delete;

  /// Make room for `records` more rows of the top-level columns.
  Status Reserve(int64_t records);

  /// Append one record body as a row. On bad bytes return kParseError (kTypeError for
  /// a value the reader's schema cannot take: an unknown enum symbol, a union branch it
  /// lacks, a decimal beyond its precision) naming the field and the byte offset, e.g.
  /// "Avro record: field 'address.zip' at byte 17: truncated: a string of 12 bytes with
  /// 3 left"; last_error() has the parts. A failed record leaves no trace: every column
  /// is as it was before the call, and the decoder stays usable.
  Status Append(std::string_view body);

  /// The error of the last failed Append.
  const AvroDecodeError& last_error() const;

  /// Rows appended since the last Finish.
  int64_t num_rows() const;

  /// Return the rows appended so far as a batch of the plan's arrow_schema() and start
  /// an empty one.
  Result<std::shared_ptr<arrow::RecordBatch>> Finish();

  const std::shared_ptr<const AvroPlan>& plan() const;

 private:
  class Impl;
  explicit AvroDecoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// --- encoding ------------------------------------------------------------------------

/// Encodes the rows of RecordBatches of one Arrow schema into Avro binary bodies of one
/// writer schema (no wire-format header), compiled once. Arrow columns match the
/// writer's fields by name (columns the writer lacks are left out); a field the batches
/// lack is written with its default. Which Arrow types each Avro type takes is in
/// src/kelt/avro/README.md ("Encoding"). Immutable after Make: Encode may run on many
/// threads at once.
class AvroEncoder {
 public:
  /// Compile. kInvalid naming the field ("field 'address.zip': …") when a writer field
  /// has no column and no default, when a column's Arrow type cannot be written as the
  /// field's Avro type, or when the writer schema is recursive or not a record.
  static Result<std::unique_ptr<AvroEncoder>> Make(
      std::shared_ptr<arrow::Schema> arrow_schema, const AvroSchema& writer);
  ~AvroEncoder();
  AvroEncoder(const AvroEncoder&) = delete;
  AvroEncoder& operator=(const AvroEncoder&) = delete;

  /// Append one body per row of `batch` to `bodies`, each started with `prefix` (the
  /// Confluent wire-format header, or nothing). The batch must have the compiled Arrow
  /// schema (field names and types; nullability aside). A value the writer's type
  /// cannot hold (a null where the type admits none, an enum symbol it lacks, a decimal
  /// beyond its precision, an int out of range) is kInvalid naming the field and row;
  /// `bodies` then keeps the rows before it.
  Status Encode(const arrow::RecordBatch& batch, std::vector<std::string>* bodies,
                std::string_view prefix = {}) const;

  const std::shared_ptr<arrow::Schema>& arrow_schema() const;
  /// The compiled steps, one per line (tests and debugging).
  std::string ToString() const;

  struct Program;  // the compiled steps (defined in encoder.cc)

 private:
  explicit AvroEncoder(std::unique_ptr<Program> program);
  std::unique_ptr<Program> program_;
};

struct AvroSchemaFromArrowOptions {
  /// The top-level record's name and namespace (nested structs are named
  /// "<record>_<field path>" in the same namespace).
  std::string name = "Record";
  std::string name_space;
};

/// Return an Avro writer schema (JSON text) for rows of `schema`: one field per column,
/// a nullable column as ["null", T] with default null. The mapping is the decoding
/// table's in reverse (src/kelt/avro/README.md, "Avro schemas from Arrow"); kInvalid
/// naming the column for a type without an Avro counterpart (durations, intervals,
/// time64[ns], Arrow unions) or whose name is not an Avro name.
Result<std::string> AvroSchemaFromArrow(const arrow::Schema& schema,
                                        const AvroSchemaFromArrowOptions& options = {});

}  // namespace kelt
