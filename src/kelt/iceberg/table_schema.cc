// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0

#include "kelt/iceberg/table_schema.h"

#include <arrow/api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

#include "kelt/common/arrow_status.h"
#include "kelt/common/text.h"

namespace kelt::iceberg {

using text::AppendInt64;
using text::AppendJsonString;

const Field* Schema::Find(const std::string& name) const {
  for (const auto& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

namespace {

// What one landing column becomes: its Iceberg type and the Arrow type it is written as.
struct ColumnMapping {
  std::string type;
  std::shared_ptr<arrow::DataType> arrow;
};

Result<ColumnMapping> MapType(const arrow::Field& f) {
  const auto& t = *f.type();
  auto unsupported = [&](std::string why) {
    return Status::NotImplemented("column '" + f.name() + "' (" + t.ToString() +
                                  "): " + why);
  };
  switch (t.id()) {
    case arrow::Type::BOOL:
      return ColumnMapping{"boolean", arrow::boolean()};
    case arrow::Type::INT32:
      return ColumnMapping{"int", arrow::int32()};
    case arrow::Type::INT64:
      return ColumnMapping{"long", arrow::int64()};
    case arrow::Type::FLOAT:
      return ColumnMapping{"float", arrow::float32()};
    case arrow::Type::DOUBLE:
      return ColumnMapping{"double", arrow::float64()};
    case arrow::Type::STRING:
      return ColumnMapping{"string", arrow::utf8()};
    case arrow::Type::BINARY:
      return ColumnMapping{"binary", arrow::binary()};
    case arrow::Type::FIXED_SIZE_BINARY: {
      const int n = static_cast<const arrow::FixedSizeBinaryType&>(t).byte_width();
      return ColumnMapping{"fixed[" + std::to_string(n) + "]", f.type()};
    }
    case arrow::Type::DECIMAL128: {
      const auto& d = static_cast<const arrow::Decimal128Type&>(t);
      return ColumnMapping{"decimal(" + std::to_string(d.precision()) + ", " +
                               std::to_string(d.scale()) + ")",
                           f.type()};
    }
    case arrow::Type::DATE32:
      return ColumnMapping{"date", arrow::date32()};
    case arrow::Type::TIME32:
    case arrow::Type::TIME64: {
      if (t.id() == arrow::Type::TIME64 &&
          static_cast<const arrow::Time64Type&>(t).unit() == arrow::TimeUnit::NANO) {
        return unsupported("Iceberg v2 times are microseconds; nanoseconds would be cut");
      }
      return ColumnMapping{"time", arrow::time64(arrow::TimeUnit::MICRO)};
    }
    case arrow::Type::TIMESTAMP: {
      const auto& ts = static_cast<const arrow::TimestampType&>(t);
      if (ts.unit() == arrow::TimeUnit::NANO) {
        return unsupported(
            "Iceberg v2 timestamps are microseconds (timestamp_ns is format version 3)");
      }
      const bool utc = !ts.timezone().empty();
      return ColumnMapping{utc ? "timestamptz" : "timestamp",
                           arrow::timestamp(arrow::TimeUnit::MICRO, utc ? "UTC" : "")};
    }
    case arrow::Type::DICTIONARY: {
      const auto& d = static_cast<const arrow::DictionaryType&>(t);
      if (d.value_type()->id() == arrow::Type::STRING) {
        return ColumnMapping{"string", arrow::utf8()};
      }
      return unsupported("only dictionaries of utf8 are supported");
    }
    default:
      return unsupported(
          "not supported by the Iceberg sink yet (nested types, unions, decimal256 and "
          "null come later)");
  }
}

// Multiply every valid value of an integer-backed array by `factor` into `type`.
template <typename In>
Result<std::shared_ptr<arrow::Array>> Scale(
    const arrow::Array& in, int64_t factor,
    const std::shared_ptr<arrow::DataType>& type) {
  const auto& a = static_cast<const In&>(in);
  KELT_ARROW_ASSIGN_OR_RAISE(auto values,
                             arrow::AllocateBuffer(a.length() * sizeof(int64_t)));
  auto* out = reinterpret_cast<int64_t*>(values->mutable_data());
  for (int64_t i = 0; i < a.length(); ++i) {
    out[i] = a.IsNull(i) ? 0 : static_cast<int64_t>(a.Value(i)) * factor;
  }
  std::shared_ptr<arrow::Buffer> validity;
  if (a.null_count() > 0) {
    KELT_ARROW_ASSIGN_OR_RAISE(validity, arrow::AllocateBitmap(a.length()));
    for (int64_t i = 0; i < a.length(); ++i) {
      arrow::bit_util::SetBitTo(validity->mutable_data(), i, a.IsValid(i));
    }
  }
  auto data = arrow::ArrayData::Make(type, a.length(), {validity, std::move(values)},
                                     a.null_count());
  return arrow::MakeArray(data);
}

int64_t UnitsToMicros(arrow::TimeUnit::type unit) {
  switch (unit) {
    case arrow::TimeUnit::SECOND:
      return 1'000'000;
    case arrow::TimeUnit::MILLI:
      return 1'000;
    default:
      return 1;
  }
}

Result<std::shared_ptr<arrow::Array>> ConvertColumn(
    const std::shared_ptr<arrow::Array>& in, const std::shared_ptr<arrow::DataType>& to) {
  const auto& from = *in->type();
  if (from.Equals(*to)) return in;
  switch (from.id()) {
    case arrow::Type::TIMESTAMP: {
      const auto unit = static_cast<const arrow::TimestampType&>(from).unit();
      if (unit == arrow::TimeUnit::MICRO) {
        // Only the zone's spelling differs ("+00:00" → "UTC"): same values.
        auto data = in->data()->Copy();
        data->type = to;
        return arrow::MakeArray(data);
      }
      return Scale<arrow::TimestampArray>(*in, UnitsToMicros(unit), to);
    }
    case arrow::Type::TIME32:
      return Scale<arrow::Time32Array>(
          *in, UnitsToMicros(static_cast<const arrow::Time32Type&>(from).unit()), to);
    case arrow::Type::DICTIONARY: {
      const auto& d = static_cast<const arrow::DictionaryArray&>(*in);
      const auto& dict = static_cast<const arrow::StringArray&>(*d.dictionary());
      arrow::StringBuilder b;
      KELT_ARROW_RETURN_NOT_OK(b.Reserve(d.length()));
      for (int64_t i = 0; i < d.length(); ++i) {
        if (d.IsNull(i)) {
          KELT_ARROW_RETURN_NOT_OK(b.AppendNull());
        } else {
          KELT_ARROW_RETURN_NOT_OK(b.Append(dict.GetView(d.GetValueIndex(i))));
        }
      }
      std::shared_ptr<arrow::Array> out;
      KELT_ARROW_RETURN_NOT_OK(b.Finish(&out));
      return out;
    }
    default:
      return Status::Internal("no conversion from " + from.ToString() + " to " +
                              to->ToString());
  }
}

template <typename T>
std::string LittleEndian(T v) {
  std::string out(sizeof(T), '\0');
  std::memcpy(out.data(), &v, sizeof(T));  // x86-64 and aarch64 are little-endian
  return out;
}

// Min and max of the valid values of a primitive array (NaN left out).
template <typename ArrayT, typename Value = typename ArrayT::value_type>
void MinMax(const arrow::Array& in, int id, ColumnStats* stats) {
  const auto& a = static_cast<const ArrayT&>(in);
  bool any = false;
  Value lo{}, hi{};
  for (int64_t i = 0; i < a.length(); ++i) {
    if (a.IsNull(i)) continue;
    const Value v = a.Value(i);
    if constexpr (std::is_floating_point_v<Value>) {
      if (std::isnan(v)) continue;
    }
    if (!any || v < lo) lo = v;
    if (!any || v > hi) hi = v;
    any = true;
  }
  if (!any) return;
  stats->lower_bounds[id] = LittleEndian(lo);
  stats->upper_bounds[id] = LittleEndian(hi);
}

}  // namespace

std::string SerializeInt32(int32_t v) { return LittleEndian(v); }
std::string SerializeInt64(int64_t v) { return LittleEndian(v); }

Result<LandingMapping> MapLandingSchema(const arrow::Schema& landing) {
  LandingMapping m;
  arrow::FieldVector fields;
  int id = 0;
  for (const auto& f : landing.fields()) {
    KELT_ASSIGN_OR_RAISE(ColumnMapping c, MapType(*f));
    ++id;
    m.schema.fields.push_back({id, f->name(), c.type, !f->nullable()});
    fields.push_back(arrow::field(
        f->name(), c.arrow, f->nullable(),
        arrow::key_value_metadata({"PARQUET:field_id"}, {std::to_string(id)})));
  }
  m.arrow = arrow::schema(std::move(fields));
  return m;
}

Result<LandingMapping> MapLandingSchemaOnto(const arrow::Schema& landing,
                                            const Schema& table, int last_column_id,
                                            std::vector<Field>* added) {
  LandingMapping m;
  arrow::FieldVector fields;
  int next_id = last_column_id;
  for (const auto& f : landing.fields()) {
    KELT_ASSIGN_OR_RAISE(ColumnMapping c, MapType(*f));
    int id = 0;
    if (const Field* have = table.Find(f->name())) {
      if (have->type != c.type) {
        return Status::Invalid("column '" + f->name() + "' is " + have->type + " (id " +
                               std::to_string(have->id) + ") in the table, " + c.type +
                               " in the landing");
      }
      id = have->id;
      m.schema.fields.push_back({id, f->name(), c.type, have->required});
    } else {
      id = ++next_id;
      // A column added to a table with rows is optional: its older files lack it.
      m.schema.fields.push_back({id, f->name(), c.type, false});
      added->push_back(m.schema.fields.back());
    }
    fields.push_back(arrow::field(
        f->name(), c.arrow, f->nullable(),
        arrow::key_value_metadata({"PARQUET:field_id"}, {std::to_string(id)})));
  }
  m.arrow = arrow::schema(std::move(fields));
  return m;
}

Result<std::shared_ptr<arrow::RecordBatch>> ToIcebergBatch(
    const std::shared_ptr<arrow::RecordBatch>& batch, const LandingMapping& mapping) {
  if (batch->num_columns() != mapping.arrow->num_fields()) {
    return Status::Invalid("batch has " + std::to_string(batch->num_columns()) +
                           " columns, the Iceberg schema " +
                           std::to_string(mapping.arrow->num_fields()));
  }
  arrow::ArrayVector columns;
  for (int i = 0; i < batch->num_columns(); ++i) {
    KELT_ASSIGN_OR_RAISE(
        auto c, ConvertColumn(batch->column(i), mapping.arrow->field(i)->type()));
    columns.push_back(std::move(c));
  }
  return arrow::RecordBatch::Make(mapping.arrow, batch->num_rows(), std::move(columns));
}

std::string SchemaJson(const Schema& schema) {
  std::string out = "{\"type\":\"struct\",\"schema-id\":";
  AppendInt64(&out, schema.schema_id);
  out += ",\"fields\":[";
  for (size_t i = 0; i < schema.fields.size(); ++i) {
    const Field& f = schema.fields[i];
    if (i) out += ',';
    out += "{\"id\":";
    AppendInt64(&out, f.id);
    out += ",\"name\":";
    AppendJsonString(&out, f.name);
    out += ",\"required\":";
    out += f.required ? "true" : "false";
    out += ",\"type\":";
    AppendJsonString(&out, f.type);
    out += '}';
  }
  out += "]}";
  return out;
}

Result<ColumnStats> ComputeStats(const arrow::RecordBatch& batch, const Schema& schema,
                                 const std::vector<int>& without_bounds) {
  if (static_cast<size_t>(batch.num_columns()) != schema.fields.size()) {
    return Status::Invalid("statistics: batch and schema differ in column count");
  }
  ColumnStats stats;
  for (int i = 0; i < batch.num_columns(); ++i) {
    const arrow::Array& a = *batch.column(i);
    const int id = schema.fields[i].id;
    stats.value_counts[id] = a.length();
    stats.null_counts[id] = a.null_count();
    if (std::find(without_bounds.begin(), without_bounds.end(), i) !=
        without_bounds.end()) {
      continue;
    }
    switch (a.type_id()) {
      case arrow::Type::BOOL: {
        const auto& b = static_cast<const arrow::BooleanArray&>(a);
        bool any = false, lo = true, hi = false;
        for (int64_t r = 0; r < b.length(); ++r) {
          if (b.IsNull(r)) continue;
          any = true;
          lo = lo && b.Value(r);
          hi = hi || b.Value(r);
        }
        if (any) {
          stats.lower_bounds[id] = std::string(1, lo ? '\1' : '\0');
          stats.upper_bounds[id] = std::string(1, hi ? '\1' : '\0');
        }
        break;
      }
      case arrow::Type::INT32:
        MinMax<arrow::Int32Array>(a, id, &stats);
        break;
      case arrow::Type::DATE32:
        MinMax<arrow::Date32Array>(a, id, &stats);
        break;
      case arrow::Type::INT64:
        MinMax<arrow::Int64Array>(a, id, &stats);
        break;
      case arrow::Type::TIMESTAMP:
        MinMax<arrow::TimestampArray>(a, id, &stats);
        break;
      case arrow::Type::TIME64:
        MinMax<arrow::Time64Array>(a, id, &stats);
        break;
      case arrow::Type::FLOAT:
        MinMax<arrow::FloatArray>(a, id, &stats);
        break;
      case arrow::Type::DOUBLE:
        MinMax<arrow::DoubleArray>(a, id, &stats);
        break;
      case arrow::Type::STRING: {
        // UTF-8 bytes compare as unsigned bytes, which is Iceberg's string order.
        const auto& s = static_cast<const arrow::StringArray&>(a);
        bool any = false;
        std::string_view lo, hi;
        for (int64_t r = 0; r < s.length(); ++r) {
          if (s.IsNull(r)) continue;
          std::string_view v = s.GetView(r);
          if (!any || v < lo) lo = v;
          if (!any || v > hi) hi = v;
          any = true;
        }
        if (any) {
          stats.lower_bounds[id] = std::string(lo);
          stats.upper_bounds[id] = std::string(hi);
        }
        break;
      }
      default:
        break;  // counts only
    }
  }
  return stats;
}

}  // namespace kelt::iceberg
