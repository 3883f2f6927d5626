// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/model/row_format.h"

#include "kelt/common/text.h"
#include "kelt/common/time_units.h"
#include "kelt/schema.h"

namespace kelt::model {
namespace {

template <typename T>
void AppendInteger(const arrow::Array& a, int64_t row, std::string* out) {
  out->append(std::to_string(static_cast<const arrow::NumericArray<T>&>(a).Value(row)));
}

}  // namespace

Result<RowFormatter> RowFormatter::Make(const arrow::RecordBatch& batch) {
  // The Arrow types kelt maps are the ones FromArrowSchema accepts (one list for all).
  Status mapped = FromArrowSchema(*batch.schema()).status();
  if (!mapped.ok()) return mapped.WithPrefix("cannot send to Kafka: ");
  RowFormatter f;
  for (int c = 0; c < batch.num_columns(); ++c) {
    const auto& field = batch.schema()->field(c);
    Column col;
    col.array = batch.column(c);
    text::AppendJsonString(&col.json_key, field->name());
    col.json_key.push_back(':');
    f.columns_.push_back(std::move(col));
  }
  return f;
}

bool RowFormatter::CellText(int col, int64_t row, std::string* out) const {
  const arrow::Array& a = *columns_[static_cast<size_t>(col)].array;
  if (a.IsNull(row)) return false;
  switch (a.type_id()) {
    case arrow::Type::INT8:
      AppendInteger<arrow::Int8Type>(a, row, out);
      break;
    case arrow::Type::INT16:
      AppendInteger<arrow::Int16Type>(a, row, out);
      break;
    case arrow::Type::INT32:
      AppendInteger<arrow::Int32Type>(a, row, out);
      break;
    case arrow::Type::INT64:
      AppendInteger<arrow::Int64Type>(a, row, out);
      break;
    case arrow::Type::UINT8:
      AppendInteger<arrow::UInt8Type>(a, row, out);
      break;
    case arrow::Type::UINT16:
      AppendInteger<arrow::UInt16Type>(a, row, out);
      break;
    case arrow::Type::UINT32:
      AppendInteger<arrow::UInt32Type>(a, row, out);
      break;
    case arrow::Type::UINT64:
      AppendInteger<arrow::UInt64Type>(a, row, out);
      break;
    case arrow::Type::FLOAT:
      out->append(
          text::FormatDoubleDisplay(static_cast<const arrow::FloatArray&>(a).Value(row)));
      break;
    case arrow::Type::DOUBLE:
      out->append(text::FormatDoubleDisplay(
          static_cast<const arrow::DoubleArray&>(a).Value(row)));
      break;
    case arrow::Type::BOOL:
      out->append(static_cast<const arrow::BooleanArray&>(a).Value(row) ? "true"
                                                                        : "false");
      break;
    case arrow::Type::STRING:
      out->append(static_cast<const arrow::StringArray&>(a).GetView(row));
      break;
    case arrow::Type::LARGE_STRING:
      out->append(static_cast<const arrow::LargeStringArray&>(a).GetView(row));
      break;
    case arrow::Type::BINARY:
      out->append(static_cast<const arrow::BinaryArray&>(a).GetView(row));
      break;
    case arrow::Type::LARGE_BINARY:
      out->append(static_cast<const arrow::LargeBinaryArray&>(a).GetView(row));
      break;
    case arrow::Type::TIMESTAMP:
      out->append(text::FormatTimestampMicros(
          ToMicros(static_cast<const arrow::TimestampType&>(*a.type()).unit(),
                   static_cast<const arrow::TimestampArray&>(a).Value(row))));
      break;
    case arrow::Type::DATE32:
      out->append(
          text::FormatDateDays(static_cast<const arrow::Date32Array&>(a).Value(row)));
      break;
    default: {
      // Other mapped types (views, date64, fixed-size binary): Arrow's own text.
      auto scalar = a.GetScalar(row);
      if (!scalar.ok()) return false;
      out->append((*scalar)->ToString());
    }
  }
  return true;
}

void RowFormatter::AppendRowJson(int64_t row, std::string* out) const {
  out->push_back('{');
  std::string cell;
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (c > 0) out->push_back(',');
    out->append(columns_[c].json_key);
    const arrow::Array& a = *columns_[c].array;
    if (a.IsNull(row)) {
      out->append("null");
      continue;
    }
    switch (a.type_id()) {
      case arrow::Type::FLOAT:
        text::AppendJsonDouble(out, static_cast<const arrow::FloatArray&>(a).Value(row));
        break;
      case arrow::Type::DOUBLE:
        text::AppendJsonDouble(out, static_cast<const arrow::DoubleArray&>(a).Value(row));
        break;
      case arrow::Type::STRING:
      case arrow::Type::LARGE_STRING:
      case arrow::Type::TIMESTAMP:
      case arrow::Type::DATE32:
        cell.clear();
        CellText(static_cast<int>(c), row, &cell);
        text::AppendJsonString(out, cell);
        break;
      case arrow::Type::BINARY:
      case arrow::Type::LARGE_BINARY:
        cell.clear();
        CellText(static_cast<int>(c), row, &cell);
        text::AppendJsonString(out, text::Base64Encode(cell));
        break;
      default:  // integers and booleans print as JSON as they print as text
        CellText(static_cast<int>(c), row, out);
    }
  }
  out->push_back('}');
}

}  // namespace kelt::model
