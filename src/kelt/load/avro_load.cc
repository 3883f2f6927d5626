// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Load step for Avro payloads in the Confluent wire format. Each record's header
// names its writer schema; the first record of an id fetches that schema, compiles a
// plan from it to the reader schema and makes a decoder for it (or remembers why the id's
// records are bad). The decoders write the payload columns; the `_kafka_*` columns are
// written as for JSON (column plan, value converter, rewindable writers), before the
// body, so a body that fails rewinds them.
//
// Rows keep the window's order although several decoders (one per writer id) and
// tombstones (rows of nulls) take turns: the current run of rows is finished into a
// segment whenever the next record goes elsewhere, and Finish() concatenates the
// segments. A topic with one writer schema and no tombstones has one segment: no copy.
#include <arrow/api.h>
#include <arrow/array/concatenate.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kelt/avro.h"
#include "kelt/common/text.h"
#include "kelt/load/column_plan.h"
#include "kelt/load/column_writer.h"
#include "kelt/load/dead_letters.h"
#include "kelt/load/load_impl.h"
#include "kelt/load/record_error.h"
#include "kelt/load/value_converter.h"

namespace kelt::load {

namespace {

// `type` with every field below it nullable (map keys stay required, as Arrow wants):
// a tombstone, a null record or a null union lands nulls in fields the reader schema
// requires, and sinks refuse nulls in a non-nullable field.
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

// The landing columns of an Avro schema: its Arrow schema, every field nullable.
Result<std::shared_ptr<arrow::Schema>> PayloadColumns(const AvroSchema& schema) {
  KELT_ASSIGN_OR_RAISE(auto arrow_schema, schema.ToArrowSchema());
  arrow::FieldVector fields;
  for (const auto& f : arrow_schema->fields()) {
    fields.push_back(f->WithType(Relaxed(f->type()))->WithNullable(true));
  }
  return arrow::schema(std::move(fields));
}

// True when `wider` has every column of `narrow` with the same type.
bool Contains(const arrow::Schema& wider, const arrow::Schema& narrow) {
  for (const auto& f : narrow.fields()) {
    auto w = wider.GetFieldByName(f->name());
    if (w == nullptr || !w->type()->Equals(*f->type())) return false;
  }
  return true;
}

// True when `wider` has every column of `narrow` with the same type, and more.
bool Grows(const arrow::Schema& narrow, const arrow::Schema& wider) {
  return Contains(wider, narrow) && wider.num_fields() > narrow.num_fields();
}

// The subject's latest schema (id, text) when the landing of `reader` may grow to it
// for a writer with `writer_columns`: it has every column of the writer, every column
// of the reader (same types) and more, and it reads what the reader reads (Avro's
// resolution from the reader to it: the same record, defaults for the added fields).
// Nothing otherwise: an older writer during a rollout, another record type, a subject
// whose latest lacks the writer's fields. An error: the latest could not be fetched.
Result<std::optional<std::pair<int32_t, std::string>>> GrowthTarget(
    const AvroPayload& avro, const AvroSchema& reader,
    const arrow::Schema& reader_columns, const arrow::Schema& writer_columns) {
  std::optional<std::pair<int32_t, std::string>> none;
  if (!avro.latest_schema) return none;
  KELT_ASSIGN_OR_RAISE(auto latest, avro.latest_schema());
  if (latest.first == avro.reader_schema_id) return none;
  auto schema = AvroSchema::Parse(latest.second);
  if (!schema.ok()) return none;
  auto columns = PayloadColumns(*schema);
  if (!columns.ok() || !Grows(reader_columns, **columns) ||
      !Contains(**columns, writer_columns) || !AvroPlan::Compile(reader, *schema).ok()) {
    return none;
  }
  return std::optional{std::move(latest)};
}

std::string SchemaIdName(int32_t id) {
  return id >= 0 ? "schema id " + std::to_string(id) : "the reader schema";
}

class AvroLoad final : public Loader::Impl {
 public:
  static Result<std::unique_ptr<Loader::Impl>> Make(const Schema& metadata,
                                                    const LoadOptions& options) {
    const AvroPayload& avro = *options.avro;
    if (!avro.writer_schema) {
      return Status::Invalid("an Avro payload needs the source of its writer schemas");
    }
    for (const Field& f : metadata.fields) {
      if (f.name.rfind("_kafka_", 0) != 0) {
        return Status::Invalid("landing schema: field '" + f.name +
                               "': with an Avro payload the payload columns are the "
                               "reader schema's; list only _kafka_* columns");
      }
    }
    auto reader = AvroSchema::Parse(avro.reader_schema);
    if (!reader.ok()) {
      return reader.status().WithPrefix("the reader schema (" +
                                        SchemaIdName(avro.reader_schema_id) + "): ");
    }
    auto payload = PayloadColumns(*reader);
    if (!payload.ok()) {
      return payload.status().WithPrefix("the reader schema (" +
                                         SchemaIdName(avro.reader_schema_id) + "): ");
    }
    std::unique_ptr<AvroLoad> load(new AvroLoad(options, std::move(*reader)));
    KELT_RETURN_NOT_OK(load->Plan(metadata, std::move(*payload)));
    return std::unique_ptr<Loader::Impl>(std::move(load));
  }

  AvroLoad(const AvroLoad&) = delete;
  AvroLoad& operator=(const AvroLoad&) = delete;

  Status Reserve(int64_t records, int64_t /*payload_bytes*/) override {
    const int64_t rows = stats_.rows + records;
    for (ColumnWriter& w : writers_) KELT_RETURN_NOT_OK(w.Reserve(rows, 0));
    row_capacity_ = rows;
    if (current_ != nullptr) KELT_RETURN_NOT_OK(current_->Reserve(records));
    return Status::OK();
  }

  Status Append(const RecordView& r) override {
    newer_ = -1;
    ++stats_.records;
    if (r.value) stats_.payload_bytes += static_cast<int64_t>(r.value->size());
    if (stats_.rows >= row_capacity_) {
      KELT_RETURN_NOT_OK(Reserve(std::max<int64_t>(1024, stats_.rows), 0));
    }
    error_.Clear();
    if (converter_ && !converter_->MetadataColumns(r, error_)) {
      Rewind();
      if (error_.fatal()) {
        --stats_.records;
        return error_.status();
      }
      const int column = error_.column();
      return Bad(r, error_.code(),
                 column >= 0 ? plan_->columns()[static_cast<size_t>(column)].name : "",
                 error_.message());
    }
    if (!r.value) {  // a tombstone: a row of nulls
      ++stats_.tombstones;
      KELT_RETURN_NOT_OK(SwitchTo(nullptr));
      ++null_run_;
      ++stats_.rows;
      return Status::OK();
    }
    int32_t id = -1;
    if (!ReadWireHeader(*r.value, &id)) {
      Rewind();
      return Bad(r, kErrorMalformedPayload, "", std::string(kNoWireHeader));
    }
    auto entry = DecoderFor(id);
    if (!entry.ok()) {
      Rewind();
      --stats_.records;
      return entry.status().WithPrefix("Avro payload" + Where(r) + "): ");
    }
    if ((*entry)->decoder == nullptr) {
      Rewind();
      return Bad(r, (*entry)->code, "", (*entry)->why);
    }
    AvroDecoder* decoder = (*entry)->decoder.get();
    KELT_RETURN_NOT_OK(SwitchTo(decoder));
    Status st = decoder->Append(r.value->substr(5));
    if (!st.ok()) {
      Rewind();
      const AvroDecodeError& e = decoder->last_error();
      return Bad(r, AvroErrorKindName(e.kind), e.field,
                 st.message() + " (" + SchemaIdName(id) + ")");
    }
    ++stats_.rows;
    return Status::OK();
  }

  Result<LoadedWindow> Finish() override {
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

  bool needs_headers() const override { return plan_ && plan_->needs_headers(); }
  int32_t newer_writer_schema() const override { return newer_; }
  const Schema& schema() const override { return metadata_; }
  const std::shared_ptr<arrow::Schema>& arrow_schema() const override {
    return arrow_schema_;
  }

 private:
  // What records of one writer schema id go through: a decoder, or why they are bad.
  struct WriterEntry {
    std::unique_ptr<AvroDecoder> decoder;
    std::string_view code;  // when bad
    std::string why;
  };
  // A run of consecutive rows: a decoder's batch, or `nulls` rows of nulls.
  struct Segment {
    std::shared_ptr<arrow::RecordBatch> batch;
    int64_t nulls = 0;
  };

  AvroLoad(const LoadOptions& options, AvroSchema reader)
      : options_(options), reader_(std::move(reader)) {}

  Status Plan(const Schema& metadata, std::shared_ptr<arrow::Schema> payload) {
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

  // The decoder of writer schema `id` (made at its first record), or why its records
  // are bad. An error: the writer schema could not be fetched (the window ends).
  Result<const WriterEntry*> DecoderFor(int32_t id) {
    auto it = writers_by_id_.find(id);
    if (it != writers_by_id_.end()) return &it->second;
    WriterEntry entry;
    auto bad = [&](std::string_view code, std::string why) {
      entry.code = code;
      entry.why = std::move(why);
    };
    const std::string reader_name = SchemaIdName(options_.avro->reader_schema_id);
    Result<std::string> text = options_.avro->writer_schema(id);
    if (!text.ok() && text.status().code() == StatusCode::kNotFound) {
      bad(kErrorUnknownSchemaId,
          "unknown schema id " + std::to_string(id) + ": " + text.status().message());
    } else if (!text.ok() && text.status().code() == StatusCode::kInvalid) {
      bad(kErrorIncompatibleSchema,
          "schema id " + std::to_string(id) + ": " + text.status().message());
    } else if (!text.ok()) {
      return text.status();
    } else if (auto writer = AvroSchema::Parse(*text); !writer.ok()) {
      bad(kErrorIncompatibleSchema,
          "writer schema id " + std::to_string(id) +
              " is not a valid Avro schema: " + writer.status().message());
    } else if (auto growth = Growth(*writer); !growth.ok()) {
      return growth.status();  // the subject's latest could not be fetched
    } else if (*growth) {
      // The subject moved on: the caller grows the landing and loads the window again.
      newer_ = id;
      return Status::Cancelled("writer schema id " + std::to_string(id) +
                               " has columns " + reader_name +
                               " lacks: the landing schema grows");
    } else if (auto plan = AvroPlan::Compile(*writer, reader_); !plan.ok()) {
      bad(kErrorIncompatibleSchema, "writer schema id " + std::to_string(id) +
                                        " cannot be read as " + reader_name + ": " +
                                        plan.status().message());
    } else {
      AvroDecoderOptions o;
      o.allow_trailing_bytes = options_.avro->allow_trailing_bytes;
      KELT_ASSIGN_OR_RAISE(entry.decoder, AvroDecoder::Make(std::move(*plan), o));
    }
    return &writers_by_id_.emplace(id, std::move(entry)).first->second;
  }

  // Whether `writer` has columns the landing lacks and the subject's latest schema
  // takes them (GrowthTarget). A writer with extra columns the latest does not grow to
  // is read by the resolution rules: its extra fields are left out.
  Result<bool> Growth(const AvroSchema& writer) {
    if (!options_.avro->latest_schema) return false;
    auto columns = PayloadColumns(writer);
    if (!columns.ok() || !Grows(*payload_, **columns)) return false;
    KELT_ASSIGN_OR_RAISE(auto target,
                         GrowthTarget(*options_.avro, reader_, *payload_, **columns));
    return target.has_value();
  }

  // The next row comes from `decoder` (nullptr: a tombstone, or the window's end):
  // close the run of rows before it when that came from elsewhere.
  Status SwitchTo(AvroDecoder* decoder) {
    if (decoder == current_) return Status::OK();
    if (current_ != nullptr && current_->num_rows() > 0) {
      KELT_ASSIGN_OR_RAISE(auto batch, current_->Finish());
      segments_.push_back({std::move(batch), 0});
    }
    if (decoder != nullptr) KELT_RETURN_NOT_OK(EndNullRun());
    current_ = decoder;
    return Status::OK();
  }

  Status EndNullRun() {
    if (null_run_ > 0) segments_.push_back({nullptr, null_run_});
    null_run_ = 0;
    return Status::OK();
  }

  // Payload column c of the window: its segments, joined.
  Result<std::shared_ptr<arrow::Array>> PayloadColumn(int c) {
    const auto& type = payload_->field(c)->type();
    arrow::ArrayVector parts;
    for (const Segment& s : segments_) {
      if (s.batch) {
        parts.push_back(arrow::MakeArray(WithType(s.batch->column_data(c), type)));
      } else {
        auto nulls = arrow::MakeArrayOfNull(type, s.nulls);
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
      return Status::IOError("joining the Avro column '" + payload_->field(c)->name() +
                             "': " + joined.status().ToString());
    }
    return *joined;
  }

  void Rewind() {
    for (ColumnWriter& w : writers_) w.Rewind(stats_.rows);
  }

  static std::string Where(const RecordView& r) {
    return " (at " + text::Utf8Lossy(r.topic) + "[" + std::to_string(r.partition) + "]@" +
           std::to_string(r.offset);
  }

  Status Bad(const RecordView& r, std::string_view code, std::string_view field,
             const std::string& message) {
    if (options_.on_bad_record == BadRecordPolicy::kFail) {
      --stats_.records;
      std::string msg = message + Where(r);
      if (!field.empty()) msg += ", field '" + std::string(field) + "'";
      msg += ')';
      return Status::TypeError(std::move(msg));
    }
    ++stats_.bad_records;
    if (options_.on_bad_record == BadRecordPolicy::kSkip) {
      ++stats_.skipped;
      return Status::OK();
    }
    ++stats_.dead_lettered;
    return dead_letters_.Append(r, code, field, message);
  }

  LoadOptions options_;
  AvroSchema reader_;
  Schema metadata_;                              // the landing's _kafka_* columns
  std::shared_ptr<arrow::Schema> payload_;       // the reader schema's columns, nullable
  std::shared_ptr<arrow::Schema> arrow_schema_;  // payload, then metadata
  std::unique_ptr<ColumnPlan> plan_;             // of the metadata columns (none: null)
  std::vector<ColumnWriter> writers_;            // one per metadata column
  std::unique_ptr<ValueConverter> converter_;
  RecordError error_;
  std::map<int32_t, WriterEntry> writers_by_id_;
  AvroDecoder* current_ = nullptr;  // the decoder of the run of rows being written
  int64_t null_run_ = 0;            // tombstones in the current run of rows
  std::vector<Segment> segments_;   // the window's finished runs, in order
  DeadLetterWriter dead_letters_;
  int64_t row_capacity_ = 0;
  int32_t newer_ =
      -1;  // a writer schema with columns the reader lacks stopped the window
  LoadStats stats_;
};

}  // namespace

Result<std::unique_ptr<Loader::Impl>> MakeAvroLoad(const Schema& metadata,
                                                   const LoadOptions& options) {
  return AvroLoad::Make(metadata, options);
}

}  // namespace kelt::load

namespace kelt {

Result<std::shared_ptr<const AvroPayload>> EvolvedAvroPayload(const AvroPayload& current,
                                                              int32_t writer_id) {
  const std::string reader_name = load::SchemaIdName(current.reader_schema_id);
  const std::string writer_name = "schema id " + std::to_string(writer_id);
  auto reader = AvroSchema::Parse(current.reader_schema);
  if (!reader.ok()) return reader.status().WithPrefix(reader_name + ": ");
  KELT_ASSIGN_OR_RAISE(auto reader_columns, load::PayloadColumns(*reader));
  if (!current.writer_schema) return Status::Invalid("no source of writer schemas");
  KELT_ASSIGN_OR_RAISE(std::string writer_text, current.writer_schema(writer_id));
  auto writer = AvroSchema::Parse(writer_text);
  if (!writer.ok()) return writer.status().WithPrefix(writer_name + ": ");
  KELT_ASSIGN_OR_RAISE(auto writer_columns, load::PayloadColumns(*writer));
  KELT_ASSIGN_OR_RAISE(auto target, load::GrowthTarget(current, *reader, *reader_columns,
                                                       *writer_columns));
  if (!target) {
    return Status::Invalid("the subject's latest schema does not grow " + reader_name +
                           " by the columns of " + writer_name);
  }
  auto next = std::make_shared<AvroPayload>(current);
  next->reader_schema_id = target->first;
  next->reader_schema = std::move(target->second);
  return std::shared_ptr<const AvroPayload>(std::move(next));
}

}  // namespace kelt
