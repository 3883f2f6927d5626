// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The landing data model: types, fields and schemas, and their JSON forms
// (RDP_COMPATIBILITY.md §1). The names and JSON of Int64/Float64/Bool/Utf8 are RDP's; the
// other types are kelt additions documented in docs/USER_GUIDE.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/status.h"

namespace arrow {
class DataType;
class Field;
class Schema;
}  // namespace arrow

namespace kelt {

/// The logical types a landing column can have.
enum class TypeId : uint8_t {
  kInt64 = 0,
  kFloat64,
  kBool,
  kUtf8,
  /// Microseconds since the Unix epoch, UTC (Arrow timestamp[us, tz=UTC]).
  kTimestamp,
  /// Days since the Unix epoch (Arrow date32).
  kDate,
  /// Raw bytes (Arrow binary); JSON form is base64.
  kBinary,
};

/// Return the JSON name of a type: "Int64", "Float64", "Bool", "Utf8", "Timestamp",
/// "Date", "Binary".
std::string_view TypeName(TypeId id);

/// Parse a type name. `lenient` accepts the Python aliases case-insensitively
/// (int64|i64, float64|f64|double, bool|boolean, utf8|string|str|text,
/// timestamp|datetime, date, binary|bytes); otherwise the exact JSON name is required.
std::optional<TypeId> ParseTypeName(std::string_view name, bool lenient);

/// How a JSON number in a payload maps to a Timestamp column.
enum class TimeUnit : uint8_t { kSecond, kMilli, kMicro, kNano };

std::string_view TimeUnitName(TimeUnit unit);  // "s", "ms", "us", "ns"
std::optional<TimeUnit> ParseTimeUnit(std::string_view name);

/// One landing column.
struct Field {
  std::string name;
  TypeId type = TypeId::kUtf8;
  /// kelt addition: where the value comes from in the payload, as path segments
  /// (JSON `"source":"a.b.c"` or `["a","b.c"]`). Empty means the top-level key equal
  /// to `name` (RDP rule). Ignored for `_kafka_*` metadata columns.
  std::vector<std::string> source;
  /// kelt addition: unit of JSON numbers landing in a Timestamp column (default ms,
  /// Kafka's convention). Only serialized when set.
  std::optional<TimeUnit> timestamp_unit;

  Field() = default;
  Field(std::string n, TypeId t) : name(std::move(n)), type(t) {}

  bool operator==(const Field& other) const = default;
};

/// An ordered list of fields.
struct Schema {
  std::vector<Field> fields;

  Schema() = default;
  explicit Schema(std::vector<Field> f) : fields(std::move(f)) {}

  size_t size() const { return fields.size(); }
  /// Return the index of the field named `name`, or -1.
  int FieldIndex(std::string_view name) const;

  bool operator==(const Schema& other) const = default;
};

/// Which JSON shapes a schema parser accepts.
enum class SchemaDialect : uint8_t {
  /// `{"fields":[{"name":…,"data_type":"Int64"}]}` with exact type names (C ABI, Java).
  kStrict,
  /// Also a bare list of fields and case-insensitive aliases (Python).
  kLenient,
};

/// Parse a schema from JSON. Errors are kParseError/kInvalid and name the place,
/// e.g. "fields[2].data_type: unknown type 'Int32'".
Result<Schema> ParseSchemaJson(std::string_view json,
                               SchemaDialect dialect = SchemaDialect::kStrict);

/// Serialize a schema as `{"fields":[…]}` (RDP's shape; kelt keys only when set).
std::string SchemaToJson(const Schema& schema);
std::string FieldToJson(const Field& field);

/// Return the Arrow type of a kelt type (all columns are nullable).
std::shared_ptr<arrow::DataType> ToArrowType(TypeId id);
std::shared_ptr<arrow::Schema> ToArrowSchema(const Schema& schema);
/// Map an Arrow schema back; unsupported Arrow types are kInvalid naming the column.
Result<Schema> FromArrowSchema(const arrow::Schema& schema);

}  // namespace kelt
