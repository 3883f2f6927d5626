// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Load step for Avro payloads in the Confluent wire format. Each record's header
// names its writer schema; the first record of an id fetches that schema, compiles a
// plan from it to the reader schema and makes a decoder for it (or remembers why the id's
// records are bad). The metadata columns, tombstones, row order across decoders and the
// bad-record policy are WireFormatLoad's (wire_load.h).
#include <arrow/api.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kelt/avro.h"
#include "kelt/load/wire_load.h"

namespace kelt::load {

namespace {

// The landing columns of an Avro schema: its Arrow schema, every field nullable.
Result<std::shared_ptr<arrow::Schema>> PayloadColumns(const AvroSchema& schema) {
  KELT_ASSIGN_OR_RAISE(auto arrow_schema, schema.ToArrowSchema());
  return RelaxedColumns(*arrow_schema);
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

class AvroLoad final : public WireFormatLoad {
 public:
  static Result<std::unique_ptr<Loader::Impl>> Make(const Schema& metadata,
                                                    const LoadOptions& options) {
    const AvroPayload& avro = *options.avro;
    if (!avro.writer_schema) {
      return Status::Invalid("an Avro payload needs the source of its writer schemas");
    }
    KELT_RETURN_NOT_OK(CheckMetadataOnly(metadata, "Avro"));
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

 private:
  using Source = DecoderSource<AvroDecoder>;
  // What records of one writer schema id go through: a decoder, or why they are bad.
  struct WriterEntry {
    std::unique_ptr<Source> source;
    std::string_view code;  // when bad
    std::string why;
  };

  AvroLoad(const LoadOptions& options, AvroSchema reader)
      : WireFormatLoad(options, "Avro"), reader_(std::move(reader)) {}

  Status AppendBody(const RecordView& r, int32_t id, std::string_view body) override {
    auto entry = DecoderFor(id);
    if (!entry.ok()) return Abort(r, entry.status());
    if ((*entry)->source == nullptr) return Reject(r, (*entry)->code, "", (*entry)->why);
    Source* source = (*entry)->source.get();
    KELT_RETURN_NOT_OK(SwitchTo(source));
    Status st = source->decoder().Append(body);
    if (!st.ok()) {
      const AvroDecodeError& e = source->decoder().last_error();
      return Reject(r, AvroErrorKindName(e.kind), e.field,
                    st.message() + " (" + SchemaIdName(id) + ")");
    }
    return Landed();
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
    const std::string reader_name = SchemaIdName(options().avro->reader_schema_id);
    Result<std::string> text = options().avro->writer_schema(id);
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
      set_newer_writer_schema(id);
      return Status::Cancelled("writer schema id " + std::to_string(id) +
                               " has columns " + reader_name +
                               " lacks: the landing schema grows");
    } else if (auto plan = AvroPlan::Compile(*writer, reader_); !plan.ok()) {
      bad(kErrorIncompatibleSchema, "writer schema id " + std::to_string(id) +
                                        " cannot be read as " + reader_name + ": " +
                                        plan.status().message());
    } else {
      AvroDecoderOptions o;
      o.allow_trailing_bytes = options().avro->allow_trailing_bytes;
      KELT_ASSIGN_OR_RAISE(auto decoder, AvroDecoder::Make(std::move(*plan), o));
      entry.source = std::make_unique<Source>(std::move(decoder));
    }
    return &writers_by_id_.emplace(id, std::move(entry)).first->second;
  }

  // Whether `writer` has columns the landing lacks and the subject's latest schema
  // takes them (GrowthTarget). A writer with extra columns the latest does not grow to
  // is read by the resolution rules: its extra fields are left out.
  Result<bool> Growth(const AvroSchema& writer) {
    if (!options().avro->latest_schema) return false;
    auto columns = PayloadColumns(writer);
    if (!columns.ok() || !Grows(*payload(), **columns)) return false;
    KELT_ASSIGN_OR_RAISE(auto target,
                         GrowthTarget(*options().avro, reader_, *payload(), **columns));
    return target.has_value();
  }

  AvroSchema reader_;
  std::map<int32_t, WriterEntry> writers_by_id_;
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
