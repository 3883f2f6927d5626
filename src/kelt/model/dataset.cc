// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Values and DataSets: their JSON form (RDP_COMPATIBILITY.md §1) and the row ↔ Arrow
// conversion.
//
// JSON forms of the kelt types (additions to RDP's Int64/Float64/Bool/Utf8):
//   {"Timestamp":"2024-05-01T12:00:00.123456Z"}  µs since the epoch, UTC; input also
//       takes any RFC 3339 text or an integer (µs). Output is the integer when the
//       year is outside 0000–9999, where the text form could not be read back.
//   {"Date":"2024-05-01"}  days since the epoch; input also takes an integer (days).
//       Output is the integer outside years 0000–9999.
//   {"Binary":"<base64>"}  RFC 4648 with padding.
// Floats: NaN, inf and -inf all serialize to {"Float64":null} (as RDP/serde_json do),
// and {"Float64":null} parses back as NaN, so infinities do not survive a JSON round
// trip. As a kelt addition the input also accepts {"Float64":"NaN"}, "inf", "-inf"
// (any spelling text::ParseFloat64 reads as non-finite) so a caller can say which.
// Null: "Null" and {"Null":null} as in RDP; a bare JSON null is also accepted (kelt).
#include "kelt/dataset.h"

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>

#include <cmath>
#include <limits>

#include "kelt/common/arrow_status.h"
#include "kelt/common/text.h"
#include "kelt/model/json_dom.h"

namespace kelt {

namespace dom = simdjson::dom;

// --- Value -------------------------------------------------------------------------

Value Value::Int64(int64_t v) { return Value(TypeId::kInt64, v, 0, {}); }
Value Value::Float64(double v) { return Value(TypeId::kFloat64, 0, v, {}); }
Value Value::Bool(bool v) { return Value(TypeId::kBool, v ? 1 : 0, 0, {}); }
Value Value::Utf8(std::string v) { return Value(TypeId::kUtf8, 0, 0, std::move(v)); }
Value Value::Timestamp(int64_t micros_since_epoch) {
  return Value(TypeId::kTimestamp, micros_since_epoch, 0, {});
}
Value Value::Date(int32_t days_since_epoch) {
  return Value(TypeId::kDate, days_since_epoch, 0, {});
}

Value Value::Binary(std::string bytes) {
  return Value(TypeId::kBinary, 0, 0, std::move(bytes));
}

// Nulls are equal to each other; NaN equals NaN (so a dataset equals its own round
// trip); otherwise type and value must match.
bool Value::operator==(const Value& other) const {
  if (null_ || other.null_) return null_ == other.null_;
  if (type_ != other.type_) return false;
  switch (type_) {
    case TypeId::kFloat64:
      return d_ == other.d_ || (std::isnan(d_) && std::isnan(other.d_));
    case TypeId::kUtf8:
    case TypeId::kBinary:
      return s_ == other.s_;
    default:
      return i_ == other.i_;
  }
}

// --- Value JSON ----------------------------------------------------------------------

namespace {

constexpr std::string_view kValueShape =
    "expected a value object like {\"Int64\":1}, got ";

// The years whose text form ParseTimestampMicros/ParseDateDays read back.
const int64_t kMinTextDays = text::DaysFromCivil(0, 1, 1);
const int64_t kEndTextDays = text::DaysFromCivil(10000, 1, 1);
constexpr int64_t kMicrosPerDay = int64_t{86400} * 1000000;

Status PayloadError(std::string_view expected, std::string_view tag, dom::element v) {
  std::string msg = "expected ";
  msg.append(expected);
  msg.append(" in {\"");
  msg.append(tag);
  msg.append("\":…}, got ");
  msg.append(model::Excerpt(v));
  return Status::TypeError(std::move(msg));
}

}  // namespace

namespace model {

Status ValueFromJson(dom::element e, Value* out) {
  std::string_view str;
  if (e.is_null()) {  // kelt addition: a bare JSON null is the null value
    *out = Value::Null();
    return Status::OK();
  }
  if (e.get_string().get(str) == simdjson::SUCCESS) {
    if (str == "Null") {
      *out = Value::Null();
      return Status::OK();
    }
    return Status::Invalid(std::string(kValueShape) + Excerpt(e));
  }
  dom::object obj;
  if (e.get_object().get(obj) != simdjson::SUCCESS || obj.size() != 1) {
    return Status::Invalid(std::string(kValueShape) + Excerpt(e));
  }
  const dom::key_value_pair kv = *obj.begin();
  const std::string_view tag = kv.key;
  const dom::element v = kv.value;
  if (tag == "Int64") {
    int64_t i = 0;
    if (!GetInt64(v, &i)) return PayloadError("an integer that fits i64", tag, v);
    *out = Value::Int64(i);
  } else if (tag == "Float64") {
    switch (v.type()) {
      case dom::element_type::DOUBLE:
      case dom::element_type::INT64:
      case dom::element_type::UINT64: {
        double d = 0;
        if (v.get_double().get(d) != simdjson::SUCCESS) {
          return PayloadError("a number", tag, v);
        }
        *out = Value::Float64(d);
        break;
      }
      case dom::element_type::NULL_VALUE:  // what NaN and ±inf serialize to
        *out = Value::Float64(std::numeric_limits<double>::quiet_NaN());
        break;
      case dom::element_type::STRING: {  // kelt addition: "NaN", "inf", "-inf"
        double d = 0;
        std::string_view ignored;
        if (v.get_string().get(str) != simdjson::SUCCESS ||
            !text::ParseFloat64(str, &d, &ignored) || std::isfinite(d)) {
          return PayloadError("a number, null, \"NaN\", \"inf\" or \"-inf\"", tag, v);
        }
        *out = Value::Float64(d);
        break;
      }
      default:
        return PayloadError("a number, null, \"NaN\", \"inf\" or \"-inf\"", tag, v);
    }
  } else if (tag == "Bool") {
    bool b = false;
    if (v.get_bool().get(b) != simdjson::SUCCESS) {
      return PayloadError("true or false", tag, v);
    }
    *out = Value::Bool(b);
  } else if (tag == "Utf8") {
    if (v.get_string().get(str) != simdjson::SUCCESS)
      return PayloadError("a string", tag, v);
    *out = Value::Utf8(std::string(str));
  } else if (tag == "Timestamp") {
    int64_t micros = 0;
    if (GetInt64(v, &micros)) {
      *out = Value::Timestamp(micros);
    } else if (v.get_string().get(str) == simdjson::SUCCESS) {
      auto parsed = text::ParseTimestampMicros(str);
      if (!parsed) {
        return PayloadError("an RFC 3339 timestamp or an integer (µs since the epoch)",
                            tag, v);
      }
      *out = Value::Timestamp(*parsed);
    } else {
      return PayloadError("an RFC 3339 timestamp or an integer (µs since the epoch)", tag,
                          v);
    }
  } else if (tag == "Date") {
    int64_t days = 0;
    if (GetInt64(v, &days)) {
      if (days < std::numeric_limits<int32_t>::min() ||
          days > std::numeric_limits<int32_t>::max()) {
        return PayloadError("a day count that fits i32", tag, v);
      }
      *out = Value::Date(static_cast<int32_t>(days));
    } else if (v.get_string().get(str) == simdjson::SUCCESS) {
      auto parsed = text::ParseDateDays(str);
      if (!parsed) {
        return PayloadError("a \"YYYY-MM-DD\" date or an integer (days since the epoch)",
                            tag, v);
      }
      *out = Value::Date(*parsed);
    } else {
      return PayloadError("a \"YYYY-MM-DD\" date or an integer (days since the epoch)",
                          tag, v);
    }
  } else if (tag == "Binary") {
    std::optional<std::string> bytes;
    if (v.get_string().get(str) == simdjson::SUCCESS) bytes = text::Base64Decode(str);
    if (!bytes) return PayloadError("a base64 string", tag, v);
    *out = Value::Binary(std::move(*bytes));
  } else if (tag == "Null") {
    if (!v.is_null()) return PayloadError("null", tag, v);
    *out = Value::Null();
  } else {
    std::string msg = "unknown value type '";
    msg.append(tag);
    msg.append(
        "' (expected Null, Int64, Float64, Bool, Utf8, Timestamp, Date or Binary)");
    return Status::Invalid(std::move(msg));
  }
  return Status::OK();
}

void AppendValueJson(std::string* out, const Value& value) {
  if (value.is_null()) {
    out->append("\"Null\"");
    return;
  }
  switch (value.type()) {
    case TypeId::kInt64:
      out->append("{\"Int64\":");
      text::AppendInt64(out, value.int64());
      break;
    case TypeId::kFloat64:
      out->append("{\"Float64\":");
      text::AppendJsonDouble(out, value.float64());  // non-finite → null
      break;
    case TypeId::kBool:
      out->append(value.boolean() ? "{\"Bool\":true" : "{\"Bool\":false");
      break;
    case TypeId::kUtf8:
      out->append("{\"Utf8\":");
      text::AppendJsonString(out, value.str());
      break;
    case TypeId::kTimestamp: {
      out->append("{\"Timestamp\":");
      const int64_t micros = value.int64();
      if (micros >= kMinTextDays * kMicrosPerDay &&
          micros < kEndTextDays * kMicrosPerDay) {
        out->push_back('"');
        out->append(text::FormatTimestampMicros(micros));
        out->push_back('"');
      } else {
        text::AppendInt64(out, micros);
      }
      break;
    }
    case TypeId::kDate: {
      out->append("{\"Date\":");
      const int64_t days = value.int64();
      if (days >= kMinTextDays && days < kEndTextDays) {
        out->push_back('"');
        out->append(text::FormatDateDays(static_cast<int32_t>(days)));
        out->push_back('"');
      } else {
        text::AppendInt64(out, days);
      }
      break;
    }
    case TypeId::kBinary:
      out->append("{\"Binary\":\"");
      out->append(text::Base64Encode(value.str()));
      out->push_back('"');
      break;
  }
  out->push_back('}');
}

}  // namespace model

Result<Value> ParseValueJson(std::string_view json) {
  dom::element root;
  KELT_RETURN_NOT_OK(model::ParseDocument(json, &root));
  Value value;
  KELT_RETURN_NOT_OK(model::ValueFromJson(root, &value));
  return value;
}

std::string ValueToJson(const Value& value) {
  std::string out;
  model::AppendValueJson(&out, value);
  return out;
}

// --- DataSet JSON ----------------------------------------------------------------------

namespace {

std::string CellPath(size_t row, size_t col) {
  return "rows[" + std::to_string(row) + "][" + std::to_string(col) + "]";
}

std::string RowPath(size_t row) { return "rows[" + std::to_string(row) + "]"; }

Status RowWidthError(size_t row, size_t want, size_t got) {
  return Status::Invalid(model::Located(RowPath(row), "expected " + std::to_string(want) +
                                                          " cells (one per field), got " +
                                                          std::to_string(got)));
}

Status CellTypeError(size_t row, size_t col, const Field& field, const Value& value) {
  return Status::TypeError(model::Located(
      CellPath(row, col), "column '" + field.name + "' is " +
                              std::string(TypeName(field.type)) + " but the cell is " +
                              std::string(TypeName(value.type()))));
}

// Check a non-null cell against its column; an Int64 cell in a Float64 column is
// converted in place (RDP accepts {"Int64":1} where a float is expected).
Status FitCell(size_t row, size_t col, const Field& field, Value* value) {
  if (value->is_null() || value->type() == field.type) return Status::OK();
  if (value->type() == TypeId::kInt64 && field.type == TypeId::kFloat64) {
    *value = Value::Float64(static_cast<double>(value->int64()));
    return Status::OK();
  }
  return CellTypeError(row, col, field, *value);
}

}  // namespace

Result<DataSet> ParseDataSetJson(std::string_view json, SchemaDialect dialect) {
  dom::element root;
  KELT_RETURN_NOT_OK(model::ParseDocument(json, &root));
  dom::object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS) {
    return Status::Invalid("expected an object like {\"schema\":{…},\"rows\":[…]}, got " +
                           model::Excerpt(root));
  }
  dom::element schema_elem, rows_elem;
  if (obj["schema"].get(schema_elem) != simdjson::SUCCESS) {
    return Status::Invalid("missing key 'schema'");
  }
  if (obj["rows"].get(rows_elem) != simdjson::SUCCESS) {
    return Status::Invalid("missing key 'rows'");
  }
  DataSet ds;
  KELT_RETURN_NOT_OK(model::SchemaFromJson(schema_elem, dialect, "schema", &ds.schema));
  dom::array rows;
  if (rows_elem.get_array().get(rows) != simdjson::SUCCESS) {
    return Status::Invalid("rows: expected an array of rows, got " +
                           model::Excerpt(rows_elem));
  }
  const size_t width = ds.schema.fields.size();
  ds.rows.reserve(rows.size());
  size_t r = 0;
  for (dom::element row_elem : rows) {
    dom::array cells;
    if (row_elem.get_array().get(cells) != simdjson::SUCCESS) {
      return Status::Invalid(model::Located(
          RowPath(r), "expected an array of cells, got " + model::Excerpt(row_elem)));
    }
    const size_t n = cells.size();
    if (n != width) return RowWidthError(r, width, n);
    std::vector<Value>& row = ds.rows.emplace_back();
    row.reserve(width);
    size_t c = 0;
    for (dom::element cell : cells) {
      Value& value = row.emplace_back();
      Status st = model::ValueFromJson(cell, &value);
      if (!st.ok()) return st.WithPrefix(CellPath(r, c) + ": ");
      KELT_RETURN_NOT_OK(FitCell(r, c, ds.schema.fields[c], &value));
      ++c;
    }
    ++r;
  }
  return ds;
}

std::string DataSetToJson(const DataSet& dataset) {
  std::string out;
  const size_t width = dataset.schema.fields.size();
  out.reserve(32 + width * 40 + dataset.rows.size() * (2 + width * 16));
  out.append("{\"schema\":");
  model::AppendSchemaJson(&out, dataset.schema);
  out.append(",\"rows\":[");
  for (size_t r = 0; r < dataset.rows.size(); ++r) {
    if (r > 0) out.push_back(',');
    out.push_back('[');
    const auto& row = dataset.rows[r];
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) out.push_back(',');
      model::AppendValueJson(&out, row[c]);
    }
    out.push_back(']');
  }
  out.append("]}");
  return out;
}

// --- Arrow ---------------------------------------------------------------------------

namespace {

using internal::FromArrow;

// Build one column with a typed builder: Reserve once, then UnsafeAppend each cell.
// `append(builder, value)` appends a non-null cell already checked against `field`.
template <typename Builder, typename Append>
Result<std::shared_ptr<arrow::Array>> BuildColumn(const DataSet& ds, size_t col,
                                                  Builder* builder, Append append) {
  const Field& field = ds.schema.fields[col];
  KELT_ARROW_RETURN_NOT_OK(builder->Reserve(static_cast<int64_t>(ds.rows.size())));
  for (size_t r = 0; r < ds.rows.size(); ++r) {
    const Value& v = ds.rows[r][col];
    if (v.is_null()) {
      builder->UnsafeAppendNull();
      continue;
    }
    if (v.type() != field.type &&
        !(v.type() == TypeId::kInt64 && field.type == TypeId::kFloat64)) {
      return CellTypeError(r, col, field, v);
    }
    append(builder, v);
  }
  std::shared_ptr<arrow::Array> out;
  KELT_ARROW_RETURN_NOT_OK(builder->Finish(&out));
  return out;
}

// Utf8 and Binary: also reserve the value bytes, so appends never reallocate.
template <typename Builder>
Result<std::shared_ptr<arrow::Array>> BuildBytesColumn(const DataSet& ds, size_t col,
                                                       Builder* builder, bool utf8) {
  const Field& field = ds.schema.fields[col];
  int64_t total = 0;
  for (size_t r = 0; r < ds.rows.size(); ++r) {
    const Value& v = ds.rows[r][col];
    if (v.is_null()) continue;
    if (v.type() != field.type) return CellTypeError(r, col, field, v);
    if (utf8 && !text::IsValidUtf8(v.str())) {
      return Status::TypeError(
          model::Located(CellPath(r, col),
                         "column '" + field.name + "': Utf8 value is not valid UTF-8"));
    }
    total += static_cast<int64_t>(v.str().size());
  }
  KELT_ARROW_RETURN_NOT_OK(builder->ReserveData(total));
  return BuildColumn(ds, col, builder, [](Builder* b, const Value& v) {
    b->UnsafeAppend(v.str().data(), static_cast<int32_t>(v.str().size()));
  });
}

Result<std::shared_ptr<arrow::Array>> BuildArrowColumn(const DataSet& ds, size_t col) {
  switch (ds.schema.fields[col].type) {
    case TypeId::kInt64: {
      arrow::Int64Builder b;
      return BuildColumn(ds, col, &b, [](arrow::Int64Builder* bb, const Value& v) {
        bb->UnsafeAppend(v.int64());
      });
    }
    case TypeId::kFloat64: {
      arrow::DoubleBuilder b;
      return BuildColumn(ds, col, &b, [](arrow::DoubleBuilder* bb, const Value& v) {
        bb->UnsafeAppend(v.type() == TypeId::kInt64 ? static_cast<double>(v.int64())
                                                    : v.float64());
      });
    }
    case TypeId::kBool: {
      arrow::BooleanBuilder b;
      return BuildColumn(ds, col, &b, [](arrow::BooleanBuilder* bb, const Value& v) {
        bb->UnsafeAppend(v.boolean());
      });
    }
    case TypeId::kUtf8: {
      arrow::StringBuilder b;
      return BuildBytesColumn(ds, col, &b, /*utf8=*/true);
    }
    case TypeId::kBinary: {
      arrow::BinaryBuilder b;
      return BuildBytesColumn(ds, col, &b, /*utf8=*/false);
    }
    case TypeId::kTimestamp: {
      arrow::TimestampBuilder b(ToArrowType(TypeId::kTimestamp),
                                arrow::default_memory_pool());
      return BuildColumn(ds, col, &b, [](arrow::TimestampBuilder* bb, const Value& v) {
        bb->UnsafeAppend(v.int64());
      });
    }
    case TypeId::kDate: {
      arrow::Date32Builder b;
      return BuildColumn(ds, col, &b, [](arrow::Date32Builder* bb, const Value& v) {
        bb->UnsafeAppend(static_cast<int32_t>(v.int64()));
      });
    }
  }
  return Status::Internal("unknown TypeId");
}

// Call `fill(i, &cell)` for each non-null slot i of `array` (honours the slice offset
// through the typed accessors), writing into column `col` of `rows`.
template <typename Fill>
Status FillColumn(const arrow::Array& array, size_t col,
                  std::vector<std::vector<Value>>* rows, Fill fill) {
  const int64_t n = array.length();
  const bool may_have_nulls = array.null_count() != 0;
  for (int64_t i = 0; i < n; ++i) {
    if (may_have_nulls && array.IsNull(i)) continue;  // cells start as null
    KELT_RETURN_NOT_OK(fill(i, &(*rows)[static_cast<size_t>(i)][col]));
  }
  return Status::OK();
}

Status RangeError(const std::string& column, int64_t row, std::string_view what) {
  return Status::Invalid("column '" + column + "' row " + std::to_string(row) + ": " +
                         std::string(what));
}

template <typename ArrayT>
Status FillInt(const arrow::Array& a, size_t col, std::vector<std::vector<Value>>* rows) {
  const auto& typed = static_cast<const ArrayT&>(a);
  return FillColumn(a, col, rows, [&](int64_t i, Value* cell) {
    *cell = Value::Int64(static_cast<int64_t>(typed.Value(i)));
    return Status::OK();
  });
}

template <typename ArrayT>
Status FillFloat(const arrow::Array& a, size_t col,
                 std::vector<std::vector<Value>>* rows) {
  const auto& typed = static_cast<const ArrayT&>(a);
  return FillColumn(a, col, rows, [&](int64_t i, Value* cell) {
    *cell = Value::Float64(static_cast<double>(typed.Value(i)));
    return Status::OK();
  });
}

template <typename ArrayT>
Status FillBytes(const arrow::Array& a, size_t col, bool utf8,
                 std::vector<std::vector<Value>>* rows) {
  const auto& typed = static_cast<const ArrayT&>(a);
  return FillColumn(a, col, rows, [&](int64_t i, Value* cell) {
    std::string_view view = typed.GetView(i);
    *cell = utf8 ? Value::Utf8(std::string(view)) : Value::Binary(std::string(view));
    return Status::OK();
  });
}

// Floor division (toward -inf), for converting ns → µs and ms → days.
int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Status FillColumnFromArrow(const arrow::Array& a, const std::string& name, size_t col,
                           std::vector<std::vector<Value>>* rows) {
  switch (a.type_id()) {
    case arrow::Type::INT8:
      return FillInt<arrow::Int8Array>(a, col, rows);
    case arrow::Type::INT16:
      return FillInt<arrow::Int16Array>(a, col, rows);
    case arrow::Type::INT32:
      return FillInt<arrow::Int32Array>(a, col, rows);
    case arrow::Type::INT64:
      return FillInt<arrow::Int64Array>(a, col, rows);
    case arrow::Type::UINT8:
      return FillInt<arrow::UInt8Array>(a, col, rows);
    case arrow::Type::UINT16:
      return FillInt<arrow::UInt16Array>(a, col, rows);
    case arrow::Type::UINT32:
      return FillInt<arrow::UInt32Array>(a, col, rows);
    case arrow::Type::UINT64: {
      const auto& typed = static_cast<const arrow::UInt64Array&>(a);
      return FillColumn(a, col, rows, [&](int64_t i, Value* cell) {
        const uint64_t v = typed.Value(i);
        if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return RangeError(name, i,
                            "uint64 value " + std::to_string(v) + " does not fit Int64");
        }
        *cell = Value::Int64(static_cast<int64_t>(v));
        return Status::OK();
      });
    }
    case arrow::Type::FLOAT:
      return FillFloat<arrow::FloatArray>(a, col, rows);
    case arrow::Type::DOUBLE:
      return FillFloat<arrow::DoubleArray>(a, col, rows);
    case arrow::Type::BOOL: {
      const auto& typed = static_cast<const arrow::BooleanArray&>(a);
      return FillColumn(a, col, rows, [&](int64_t i, Value* cell) {
        *cell = Value::Bool(typed.Value(i));
        return Status::OK();
      });
    }
    case arrow::Type::STRING:
      return FillBytes<arrow::StringArray>(a, col, /*utf8=*/true, rows);
    case arrow::Type::LARGE_STRING:
      return FillBytes<arrow::LargeStringArray>(a, col, /*utf8=*/true, rows);
    case arrow::Type::STRING_VIEW:
      return FillBytes<arrow::StringViewArray>(a, col, /*utf8=*/true, rows);
    case arrow::Type::BINARY:
      return FillBytes<arrow::BinaryArray>(a, col, /*utf8=*/false, rows);
    case arrow::Type::LARGE_BINARY:
      return FillBytes<arrow::LargeBinaryArray>(a, col, /*utf8=*/false, rows);
    case arrow::Type::BINARY_VIEW:
      return FillBytes<arrow::BinaryViewArray>(a, col, /*utf8=*/false, rows);
    case arrow::Type::FIXED_SIZE_BINARY:
      return FillBytes<arrow::FixedSizeBinaryArray>(a, col, /*utf8=*/false, rows);
    case arrow::Type::NA:
      return Status::OK();  // every cell stays null
    case arrow::Type::TIMESTAMP: {
      const auto& typed = static_cast<const arrow::TimestampArray&>(a);
      const auto unit = static_cast<const arrow::TimestampType&>(*a.type()).unit();
      return FillColumn(a, col, rows, [&](int64_t i, Value* cell) {
        const int64_t v = typed.Value(i);
        int64_t micros = 0;
        bool overflow = false;
        switch (unit) {
          case arrow::TimeUnit::SECOND:
            overflow = __builtin_mul_overflow(v, int64_t{1000000}, &micros);
            break;
          case arrow::TimeUnit::MILLI:
            overflow = __builtin_mul_overflow(v, int64_t{1000}, &micros);
            break;
          case arrow::TimeUnit::MICRO:
            micros = v;
            break;
          case arrow::TimeUnit::NANO:
            micros = FloorDiv(v, 1000);
            break;
        }
        if (overflow)
          return RangeError(name, i, "timestamp does not fit µs since the epoch");
        *cell = Value::Timestamp(micros);
        return Status::OK();
      });
    }
    case arrow::Type::DATE32: {
      const auto& typed = static_cast<const arrow::Date32Array&>(a);
      return FillColumn(a, col, rows, [&](int64_t i, Value* cell) {
        *cell = Value::Date(typed.Value(i));
        return Status::OK();
      });
    }
    case arrow::Type::DATE64: {
      const auto& typed = static_cast<const arrow::Date64Array&>(a);
      return FillColumn(a, col, rows, [&](int64_t i, Value* cell) {
        const int64_t days = FloorDiv(typed.Value(i), kMicrosPerDay / 1000);
        if (days < std::numeric_limits<int32_t>::min() ||
            days > std::numeric_limits<int32_t>::max()) {
          return RangeError(name, i, "date64 value does not fit a 32-bit day count");
        }
        *cell = Value::Date(static_cast<int32_t>(days));
        return Status::OK();
      });
    }
    default:
      return Status::Invalid("column '" + name + "': unsupported Arrow type " +
                             a.type()->ToString());
  }
}

}  // namespace

Result<std::shared_ptr<arrow::RecordBatch>> DataSetToRecordBatch(const DataSet& dataset) {
  const size_t width = dataset.schema.fields.size();
  for (size_t r = 0; r < dataset.rows.size(); ++r) {
    if (dataset.rows[r].size() != width) {
      return RowWidthError(r, width, dataset.rows[r].size());
    }
  }
  arrow::ArrayVector columns;
  columns.reserve(width);
  for (size_t c = 0; c < width; ++c) {
    KELT_ASSIGN_OR_RAISE(auto column, BuildArrowColumn(dataset, c));
    columns.push_back(std::move(column));
  }
  return arrow::RecordBatch::Make(ToArrowSchema(dataset.schema),
                                  static_cast<int64_t>(dataset.rows.size()),
                                  std::move(columns));
}

Result<DataSet> RecordBatchToDataSet(const arrow::RecordBatch& batch) {
  DataSet ds;
  KELT_ASSIGN_OR_RAISE(ds.schema, FromArrowSchema(*batch.schema()));
  const size_t width = ds.schema.fields.size();
  const auto n = static_cast<size_t>(batch.num_rows());
  ds.rows.resize(n);
  for (auto& row : ds.rows) row.resize(width);  // every cell starts null
  for (size_t c = 0; c < width; ++c) {
    KELT_RETURN_NOT_OK(FillColumnFromArrow(*batch.column(static_cast<int>(c)),
                                           ds.schema.fields[c].name, c, &ds.rows));
  }
  return ds;
}

}  // namespace kelt
