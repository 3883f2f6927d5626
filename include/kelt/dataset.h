// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Row-major values and datasets: the JSON interchange form of RDP_COMPATIBILITY.md §1.
// Inside kelt data is columnar (Arrow); DataSet exists for the boundaries.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/schema.h"
#include "kelt/status.h"

namespace arrow {
class RecordBatch;
}  // namespace arrow

namespace kelt {

/// One cell: null or a value of one TypeId.
class Value {
 public:
  /// The null value.
  Value() = default;

  static Value Null() { return Value(); }
  static Value Int64(int64_t v);
  static Value Float64(double v);
  static Value Bool(bool v);
  static Value Utf8(std::string v);
  static Value Timestamp(int64_t micros_since_epoch);
  static Value Date(int32_t days_since_epoch);
  static Value Binary(std::string bytes);

  bool is_null() const { return null_; }
  /// The type of a non-null value (meaningless when null).
  TypeId type() const { return type_; }

  int64_t int64() const { return i_; }           // Int64, Timestamp (µs), Date (days)
  double float64() const { return d_; }          // Float64
  bool boolean() const { return i_ != 0; }       // Bool
  const std::string& str() const { return s_; }  // Utf8, Binary

  bool operator==(const Value& other) const;

 private:
  Value(TypeId type, int64_t i, double d, std::string s)
      : type_(type), null_(false), i_(i), d_(d), s_(std::move(s)) {}

  TypeId type_ = TypeId::kUtf8;
  bool null_ = true;
  int64_t i_ = 0;
  double d_ = 0;
  std::string s_;
};

/// A schema plus rows of cells in schema order.
struct DataSet {
  Schema schema;
  std::vector<std::vector<Value>> rows;

  size_t row_count() const { return rows.size(); }
  bool operator==(const DataSet& other) const = default;
};

/// Parse a Value from JSON: `"Null"`, `{"Null":null}`, `{"Int64":1}`, `{"Float64":1}`,
/// `{"Float64":null}` (NaN), `{"Bool":true}`, `{"Utf8":"x"}`, `{"Timestamp":"RFC
/// 3339"|µs}`,
/// `{"Date":"YYYY-MM-DD"|days}`, `{"Binary":"base64"}`. kelt also accepts a bare JSON
/// null and `{"Float64":"NaN"|"inf"|"-inf"}`. On output NaN and ±inf all become
/// `{"Float64":null}`, and Timestamp/Date outside years 0000–9999 are written as
/// integers.
Result<Value> ParseValueJson(std::string_view json);
std::string ValueToJson(const Value& value);

/// Parse `{"schema":{…},"rows":[[…]]}`. Each row must have one cell per field and each
/// non-null cell must have the field's type (Int64 accepted into Float64 columns).
Result<DataSet> ParseDataSetJson(std::string_view json,
                                 SchemaDialect dialect = SchemaDialect::kStrict);
std::string DataSetToJson(const DataSet& dataset);

/// Convert row-major data to a columnar batch (and back).
Result<std::shared_ptr<arrow::RecordBatch>> DataSetToRecordBatch(const DataSet& dataset);
Result<DataSet> RecordBatchToDataSet(const arrow::RecordBatch& batch);

}  // namespace kelt
