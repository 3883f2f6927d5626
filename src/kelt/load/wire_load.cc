// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/load/wire_load.h"

#include <arrow/api.h>
#include <arrow/array/concatenate.h>

#include <algorithm>
#include <utility>

namespace kelt::load {

namespace {

// The same data under its Relaxed type (no copy: the buffers are shared).
std::shared_ptr<arrow::ArrayData> WithType(const std::shared_ptr<arrow::ArrayData>& data,
                                           const std::shared_ptr<arrow::DataType>& type) {
  auto out = data->Copy();
  out->type = type;
  if (type->id() == arrow::Type::MAP) {
    out->child_data[0] = WithType(data->child_data[0],
                                  static_cast<const arrow::MapType&>(*type).value_type());
  } else if (type->id() != arrow::Type::DICTIONARY) {
    for (size_t i = 0; i < out->child_data.size(); ++i) {
      out->child_data[i] =
          WithType(data->child_data[i], type->field(static_cast<int>(i))->type());
    }
  }
  return out;
}

}  // namespace

std::shared_ptr<arrow::DataType> Relaxed(const std::shared_ptr<arrow::DataType>& type) {
  auto fields = [](const arrow::FieldVector& in) {
    arrow::FieldVector out;
    for (const auto& f : in)
      out.push_back(f->WithType(Relaxed(f->type()))->WithNullable(true));
    return out;
  };
  switch (type->id()) {
    case arrow::Type::STRUCT:
      return arrow::struct_(fields(type->fields()));
    case arrow::Type::LIST:
      return arrow::list(fields(type->fields())[0]);
    case arrow::Type::MAP: {
      const auto& m = static_cast<const arrow::MapType&>(*type);
      return std::make_shared<arrow::MapType>(
          m.key_field(),
          m.item_field()->WithType(Relaxed(m.item_type()))->WithNullable(true),
          m.keys_sorted());
    }
    case arrow::Type::DENSE_UNION: {
      const auto& u = static_cast<const arrow::UnionType&>(*type);
      return arrow::dense_union(fields(type->fields()), u.type_codes());
    }
    default:
      return type;
  }
}

std::shared_ptr<arrow::Schema> RelaxedColumns(const arrow::Schema& schema) {
  arrow::FieldVector fields;
  for (const auto& f : schema.fields()) {
    fields.push_back(f->WithType(Relaxed(f->type()))->WithNullable(true));
  }
  return arrow::schema(std::move(fields));
}

bool Contains(const arrow::Schema& wider, const arrow::Schema& narrow) {
  for (const auto& f : narrow.fields()) {
    auto w = wider.GetFieldByName(f->name());
    if (w == nullptr || !w->type()->Equals(*f->type())) return false;
  }
  return true;
}

bool Grows(const arrow::Schema& narrow, const arrow::Schema& wider) {
  return Contains(wider, narrow) && wider.num_fields() > narrow.num_fields();
}

std::string SchemaIdName(int32_t id) {
  return id >= 0 ? "schema id " + std::to_string(id) : "the reader schema";
}

Status WireFormatLoad::CheckMetadataOnly(const Schema& metadata,
                                         std::string_view format) {
  for (const Field& f : metadata.fields) {
    if (f.name.rfind("_kafka_", 0) != 0) {
      return Status::Invalid("landing schema: field '" + f.name + "': with an " +
                             std::string(format) +
                             " payload the payload columns are the reader schema's; "
                             "list only _kafka_* columns");
    }
  }
  return Status::OK();
}

Status WireFormatLoad::Plan(const Schema& metadata,
                            std::shared_ptr<arrow::Schema> payload) {
  metadata_ = metadata;
  payload_ = std::move(payload);
  arrow::FieldVector fields = payload_->fields();
  if (!metadata.fields.empty()) {
    KELT_ASSIGN_OR_RAISE(ColumnPlan plan, ColumnPlan::Make(metadata));
    plan_ = std::make_unique<ColumnPlan>(std::move(plan));
    writers_ = plan_->MakeWriters();
    converter_ = std::make_unique<ValueConverter>(*plan_, writers_, false);
    for (const auto& f : plan_->arrow_schema()->fields()) {
      if (payload_->GetFieldIndex(f->name()) >= 0) {
        return Status::Invalid("landing schema: column '" + f->name() +
                               "' is both a field of the reader schema and a "
                               "metadata column");
      }
      fields.push_back(f);
    }
  }
  arrow_schema_ = arrow::schema(std::move(fields));
  return Status::OK();
}

Status WireFormatLoad::Reserve(int64_t records, int64_t /*payload_bytes*/) {
  const int64_t rows = stats_.rows + records;
  for (ColumnWriter& w : writers_) KELT_RETURN_NOT_OK(w.Reserve(rows, 0));
  row_capacity_ = rows;
  if (current_ != nullptr) KELT_RETURN_NOT_OK(current_->Reserve(records));
  return Status::OK();
}

Status WireFormatLoad::Append(const RecordView& r) {
  newer_ = -1;
  ++stats_.records;
  if (r.value) stats_.payload_bytes += static_cast<int64_t>(r.value->size());
  if (stats_.rows >= row_capacity_) {
    KELT_RETURN_NOT_OK(Reserve(std::max<int64_t>(1024, stats_.rows), 0));
  }
  error_.Clear();
  if (converter_ && !converter_->MetadataColumns(r, error_)) {
    if (error_.fatal()) {
      Rewind();
      --stats_.records;
      return error_.status();
    }
    const int column = error_.column();
    return Reject(r, error_.code(),
                  column >= 0 ? plan_->columns()[static_cast<size_t>(column)].name : "",
                  error_.message());
  }
  if (!r.value) {  // a tombstone: a row of nulls
    ++stats_.tombstones;
    KELT_RETURN_NOT_OK(SwitchTo(nullptr));
    ++null_run_;
    return Landed();
  }
  int32_t id = -1;
  if (!ReadWireHeader(*r.value, &id)) {
    return Reject(r, kErrorMalformedPayload, "", std::string(kNoWireHeader));
  }
  return AppendBody(r, id, r.value->substr(5));
}

Result<LoadedWindow> WireFormatLoad::Finish() {
  KELT_RETURN_NOT_OK(SwitchTo(nullptr));
  KELT_RETURN_NOT_OK(EndNullRun());
  const int payload_columns = payload_->num_fields();
  std::vector<std::shared_ptr<arrow::Array>> arrays(
      static_cast<size_t>(arrow_schema_->num_fields()));
  for (int c = 0; c < payload_columns; ++c) {
    KELT_ASSIGN_OR_RAISE(arrays[static_cast<size_t>(c)], PayloadColumn(c));
  }
  for (size_t m = 0; m < writers_.size(); ++m) {
    const int c = payload_columns + static_cast<int>(m);
    KELT_ASSIGN_OR_RAISE(arrays[static_cast<size_t>(c)],
                         writers_[m].Finish(arrow_schema_->field(c)->type()));
  }
  LoadedWindow out;
  out.batch = arrow::RecordBatch::Make(arrow_schema_, stats_.rows, std::move(arrays));
  KELT_ASSIGN_OR_RAISE(out.dead_letters, dead_letters_.Finish());
  out.stats = stats_;
  stats_ = LoadStats{};
  row_capacity_ = 0;
  segments_.clear();
  return out;
}

Status WireFormatLoad::SwitchTo(RowSource* source) {
  if (source == current_) return Status::OK();
  if (current_ != nullptr && current_->num_rows() > 0) {
    KELT_ASSIGN_OR_RAISE(auto batch, current_->Finish());
    segments_.push_back({std::move(batch), current_->projection, 0});
  }
  if (source != nullptr) KELT_RETURN_NOT_OK(EndNullRun());
  current_ = source;
  return Status::OK();
}

Status WireFormatLoad::EndNullRun() {
  if (null_run_ > 0) segments_.push_back({nullptr, nullptr, null_run_});
  null_run_ = 0;
  return Status::OK();
}

// Payload column c of the window: its segments, joined.
Result<std::shared_ptr<arrow::Array>> WireFormatLoad::PayloadColumn(int c) {
  const auto& type = payload_->field(c)->type();
  arrow::ArrayVector parts;
  for (const Segment& s : segments_) {
    const int from = !s.batch       ? -1
                     : s.projection ? (*s.projection)[static_cast<size_t>(c)]
                                    : c;
    if (from >= 0) {
      parts.push_back(arrow::MakeArray(WithType(s.batch->column_data(from), type)));
    } else {
      auto nulls = arrow::MakeArrayOfNull(type, s.batch ? s.batch->num_rows() : s.nulls);
      if (!nulls.ok()) return Status::IOError(nulls.status().ToString());
      parts.push_back(*nulls);
    }
  }
  if (parts.size() == 1) return parts[0];
  if (parts.empty()) {
    auto empty = arrow::MakeEmptyArray(type);
    if (!empty.ok()) return Status::IOError(empty.status().ToString());
    return *empty;
  }
  auto joined = arrow::Concatenate(parts);
  if (!joined.ok()) {
    return Status::IOError("joining the " + format_ + " column '" +
                           payload_->field(c)->name() +
                           "': " + joined.status().ToString());
  }
  return *joined;
}

void WireFormatLoad::Rewind() {
  for (ColumnWriter& w : writers_) w.Rewind(stats_.rows);
}

Status WireFormatLoad::Abort(const RecordView& r, const Status& st) {
  Rewind();
  --stats_.records;
  return st.WithPrefix(format_ + " payload" + RecordPlace(r) + "): ");
}

Status WireFormatLoad::Reject(const RecordView& r, std::string_view code,
                              std::string_view field, const std::string& message) {
  Rewind();
  last_bad_ = {std::string(code), std::string(field), message};
  return HandleBadRecord(options_.on_bad_record, r, code, field, message, stats_,
                         dead_letters_);
}

}  // namespace kelt::load

namespace kelt {

Result<LoadOptions> GrownLoadOptions(const LoadOptions& options, int32_t writer_id) {
  LoadOptions grown = options;
  if (options.avro) {
    KELT_ASSIGN_OR_RAISE(grown.avro, EvolvedAvroPayload(*options.avro, writer_id));
  } else if (options.protobuf) {
    KELT_ASSIGN_OR_RAISE(grown.protobuf,
                         EvolvedProtobufPayload(*options.protobuf, writer_id));
  } else {
    return Status::Invalid("only Avro and Protobuf landings grow");
  }
  return grown;
}

}  // namespace kelt
