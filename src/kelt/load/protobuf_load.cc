// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Load step for Protobuf payloads in the Confluent wire format. Each record's header
// names its writer schema and its message indexes the message in that schema; the
// first record of a (schema id, message indexes) pair fetches the schema (once per id),
// compiles the message's plan, maps its columns onto the reader message's by name and
// makes a decoder for it (or remembers why the pair's records are bad). The metadata
// columns, tombstones, row order across decoders and the bad-record policy are
// WireFormatLoad's (wire_load.h); the projection onto the reader's columns happens when
// a run of rows is joined into the window's columns (a reader column the writer lacks
// is nulls), so the decoder writes only what its writer has.
#include <arrow/api.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kelt/load/wire_load.h"
#include "kelt/protobuf.h"

namespace kelt::load {

namespace {

// The wire format's message indexes: a zigzag varint count, then that many zigzag varint
// indexes; the count 0 alone means [0]. False when truncated or absurd.
bool ReadMessageIndexes(std::string_view body, std::vector<int32_t>* indexes,
                        size_t* consumed) {
  size_t pos = 0;
  auto zigzag = [&](int64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= body.size()) return false;
      const auto b = static_cast<uint8_t>(body[pos++]);
      v |= uint64_t{b & 0x7Fu} << shift;
      if ((b & 0x80) == 0) {
        *out = static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
        return true;
      }
    }
    return false;
  };
  constexpr int64_t kMaxIndexes = 64;
  indexes->clear();
  int64_t count = 0;
  if (!zigzag(&count) || count < 0 || count > kMaxIndexes) return false;
  if (count == 0) indexes->push_back(0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t index = 0;
    if (!zigzag(&index) || index < 0 || index > INT32_MAX) return false;
    indexes->push_back(static_cast<int32_t>(index));
  }
  *consumed = pos;
  return true;
}

// The message indexes of the message named `name` in `schema` (depth first through the
// nested messages), into `path`. False when no message has that name.
bool FindMessage(const ProtobufSchema& schema, std::string_view name,
                 std::vector<int32_t>* path) {
  for (int32_t i = 0;; ++i) {
    path->push_back(i);
    auto found = schema.MessageName(*path);
    if (!found.ok()) {
      path->pop_back();
      return false;
    }
    if (*found == name || FindMessage(schema, name, path)) return true;
    path->pop_back();
  }
}

// A message of a schema: its plan and its landing columns (nullable, Relaxed).
struct Message {
  std::shared_ptr<const ProtobufPlan> plan;
  std::shared_ptr<arrow::Schema> columns;
};

// The message named `name` (empty: the file's first message) of `schema`.
Result<Message> MessageNamed(const ProtobufSchema& schema, std::string_view name) {
  std::vector<int32_t> path;
  if (name.empty()) {
    path.push_back(0);
  } else if (!FindMessage(schema, name, &path)) {
    return Status::Invalid("the schema (" + schema.file_name() + ") has no message " +
                           std::string(name));
  }
  KELT_ASSIGN_OR_RAISE(auto plan, ProtobufPlan::Compile(schema, path));
  auto columns = RelaxedColumns(*plan->arrow_schema());
  return Message{std::move(plan), std::move(columns)};
}

Result<ProtobufSchema> ParseSource(const ProtobufSchemaSource& source) {
  return ProtobufSchema::Parse(source.text, source.imports);
}

// The subject's latest schema when the landing of `reader_columns` (message `name`) may
// grow to it for a writer message with `writer_columns`: the latest's message `name`
// has every column of the writer and of the reader (same types) and more. Nothing
// otherwise (an older writer during a rollout, a latest without the writer's fields).
// An error: the latest could not be fetched.
Result<std::optional<ProtobufSchemaSource>> GrowthTarget(
    const ProtobufPayload& payload, std::string_view name,
    const arrow::Schema& reader_columns, const arrow::Schema& writer_columns) {
  std::optional<ProtobufSchemaSource> none;
  if (!payload.latest_schema) return none;
  KELT_ASSIGN_OR_RAISE(auto latest, payload.latest_schema());
  if (latest.id == payload.reader.id) return none;
  auto schema = ParseSource(latest);
  if (!schema.ok()) return none;
  auto message = MessageNamed(*schema, name);
  if (!message.ok() || !Grows(reader_columns, *message->columns) ||
      !Contains(*message->columns, writer_columns)) {
    return none;
  }
  return std::optional{std::move(latest)};
}

class ProtobufLoad final : public WireFormatLoad {
 public:
  static Result<std::unique_ptr<Loader::Impl>> Make(const Schema& metadata,
                                                    const LoadOptions& options) {
    const ProtobufPayload& payload = *options.protobuf;
    if (!payload.writer_schema) {
      return Status::Invalid("a Protobuf payload needs the source of its writer schemas");
    }
    KELT_RETURN_NOT_OK(CheckMetadataOnly(metadata, "Protobuf"));
    const std::string prefix =
        "the reader schema (" + SchemaIdName(payload.reader.id) + ")";
    auto reader = ParseSource(payload.reader);
    if (!reader.ok()) return reader.status().WithPrefix(prefix + ": ");
    auto message = MessageNamed(*reader, payload.message);
    if (!message.ok()) return message.status().WithPrefix(prefix + ": ");
    std::unique_ptr<ProtobufLoad> load(
        new ProtobufLoad(options, std::move(*reader), message->plan->message_name()));
    KELT_RETURN_NOT_OK(load->Plan(metadata, std::move(message->columns)));
    return std::unique_ptr<Loader::Impl>(std::move(load));
  }

 private:
  using Source = DecoderSource<ProtobufDecoder>;
  // What records of one (writer schema id, message indexes) go through: a decoder, or
  // why they are bad.
  struct WriterEntry {
    std::unique_ptr<Source> source;
    std::string_view code;  // when bad
    std::string why;
  };
  // A writer schema id's schema, or why its records are bad.
  struct WriterSchema {
    std::optional<ProtobufSchema> schema;
    std::string_view code;
    std::string why;
  };
  using Key = std::pair<int32_t, std::vector<int32_t>>;

  ProtobufLoad(const LoadOptions& options, ProtobufSchema reader, std::string message)
      : WireFormatLoad(options, "Protobuf"),
        reader_(std::move(reader)),
        message_(std::move(message)) {}

  Status AppendBody(const RecordView& r, int32_t id, std::string_view body) override {
    size_t consumed = 0;
    if (!ReadMessageIndexes(body, &indexes_, &consumed)) {
      return Reject(r, kErrorMalformedPayload, "",
                    "the Protobuf message indexes after the schema id are truncated or "
                    "corrupt");
    }
    if (last_ == nullptr || last_id_ != id || last_indexes_ != indexes_) {
      auto entry = EntryFor(id);
      if (!entry.ok()) return Abort(r, entry.status());
      last_ = *entry;
      last_id_ = id;
      last_indexes_ = indexes_;
    }
    if (last_->source == nullptr) return Reject(r, last_->code, "", last_->why);
    Source* source = last_->source.get();
    KELT_RETURN_NOT_OK(SwitchTo(source));
    Status st = source->decoder().Append(body.substr(consumed));
    if (!st.ok()) {
      const ProtobufDecodeError& e = source->decoder().last_error();
      return Reject(r, ProtobufErrorKindName(e.kind), e.field,
                    st.message() + " (" + SchemaIdName(id) + ")");
    }
    return Landed();
  }

  // The schema of writer schema id `id` (fetched at its first record), or why its
  // records are bad. An error: it could not be fetched (the window ends).
  Result<const WriterSchema*> SchemaFor(int32_t id) {
    auto it = schemas_.find(id);
    if (it != schemas_.end()) return &it->second;
    WriterSchema entry;
    if (id >= 0 && id == options().protobuf->reader.id) {
      entry.schema = reader_;
    } else if (auto source = options().protobuf->writer_schema(id); !source.ok()) {
      const StatusCode code = source.status().code();
      if (code != StatusCode::kNotFound && code != StatusCode::kInvalid) {
        return source.status();
      }
      entry.code = code == StatusCode::kNotFound ? kErrorUnknownSchemaId
                                                 : kErrorIncompatibleSchema;
      entry.why = (code == StatusCode::kNotFound ? "unknown schema id " : "schema id ") +
                  std::to_string(id) + ": " + source.status().message();
    } else if (auto schema = ParseSource(*source); !schema.ok()) {
      entry.code = kErrorIncompatibleSchema;
      entry.why = "writer schema id " + std::to_string(id) +
                  " is not a valid Protobuf schema: " + schema.status().message();
    } else {
      entry.schema = std::move(*schema);
    }
    return &schemas_.emplace(id, std::move(entry)).first->second;
  }

  // The decoder of (writer schema `id`, indexes_) (made at its first record), or why its
  // records are bad. An error: the writer schema could not be fetched, or the landing
  // grows (kCancelled).
  Result<const WriterEntry*> EntryFor(int32_t id) {
    Key key{id, indexes_};
    auto it = entries_.find(key);
    if (it != entries_.end()) return &it->second;
    KELT_ASSIGN_OR_RAISE(const WriterSchema* writer, SchemaFor(id));
    WriterEntry entry;
    if (!writer->schema) {
      entry.code = writer->code;
      entry.why = writer->why;
    } else {
      KELT_RETURN_NOT_OK(Compile(id, *writer->schema, &entry));
    }
    return &entries_.emplace(std::move(key), std::move(entry)).first->second;
  }

  // Fill `entry` for the message indexes_ select in writer schema `id`.
  Status Compile(int32_t id, const ProtobufSchema& writer, WriterEntry* entry) {
    const std::string writer_name = "schema id " + std::to_string(id);
    const std::string reader_name = SchemaIdName(options().protobuf->reader.id);
    auto bad = [&](std::string_view code, std::string why) {
      entry->code = code;
      entry->why = std::move(why);
      return Status::OK();
    };
    auto name = writer.MessageName(indexes_);
    if (!name.ok()) {
      return bad(kErrorMalformedPayload, "the message indexes select no message of " +
                                             writer_name + ": " +
                                             name.status().message());
    }
    if (*name != message_) {
      return bad(kErrorIncompatibleSchema, "the record is a " + *name + " (" +
                                               writer_name + "), not a " + message_ +
                                               " (" + reader_name + ")");
    }
    auto plan = ProtobufPlan::Compile(writer, indexes_);
    if (!plan.ok()) {
      return bad(kErrorIncompatibleSchema,
                 writer_name + ": " + message_ + ": " + plan.status().message());
    }
    auto columns = RelaxedColumns(*(*plan)->arrow_schema());
    // Each reader column from the writer's column of its name.
    auto projection = std::make_shared<std::vector<int>>();
    bool same = columns->num_fields() == payload()->num_fields();
    for (int c = 0; c < payload()->num_fields(); ++c) {
      const auto& field = payload()->field(c);
      const int from = columns->GetFieldIndex(field->name());
      if (from >= 0 && !columns->field(from)->type()->Equals(*field->type())) {
        std::string why = "field '" + field->name() + "' of " + message_ + " is ";
        why += columns->field(from)->type()->ToString();
        why += " in " + writer_name + " but " + field->type()->ToString();
        why += " in " + reader_name;
        return bad(kErrorIncompatibleSchema, std::move(why));
      }
      same = same && from == c;
      projection->push_back(from);
    }
    if (!same && Grows(*payload(), *columns)) {
      KELT_ASSIGN_OR_RAISE(
          auto target, GrowthTarget(*options().protobuf, message_, *payload(), *columns));
      if (target) {
        // The subject moved on: the caller grows the landing and loads the window again.
        set_newer_writer_schema(id);
        return Status::Cancelled(writer_name + " has columns " + reader_name +
                                 " lacks: the landing schema grows");
      }
    }
    KELT_ASSIGN_OR_RAISE(auto decoder, ProtobufDecoder::Make(std::move(*plan)));
    entry->source = std::make_unique<Source>(std::move(decoder));
    if (!same) entry->source->projection = std::move(projection);
    return Status::OK();
  }

  ProtobufSchema reader_;
  std::string message_;  // the reader message's full name
  std::map<int32_t, WriterSchema> schemas_;
  std::map<Key, WriterEntry> entries_;
  std::vector<int32_t> indexes_;       // the current record's message indexes
  const WriterEntry* last_ = nullptr;  // the last record's entry, and its key
  int32_t last_id_ = -1;
  std::vector<int32_t> last_indexes_;
};

}  // namespace

Result<std::unique_ptr<Loader::Impl>> MakeProtobufLoad(const Schema& metadata,
                                                       const LoadOptions& options) {
  return ProtobufLoad::Make(metadata, options);
}

}  // namespace kelt::load

namespace kelt {

Result<std::shared_ptr<const ProtobufPayload>> EvolvedProtobufPayload(
    const ProtobufPayload& current, int32_t writer_id) {
  const std::string reader_name = load::SchemaIdName(current.reader.id);
  const std::string writer_name = "schema id " + std::to_string(writer_id);
  auto reader = load::ParseSource(current.reader);
  if (!reader.ok()) return reader.status().WithPrefix(reader_name + ": ");
  KELT_ASSIGN_OR_RAISE(auto reader_message, load::MessageNamed(*reader, current.message));
  const std::string& name = reader_message.plan->message_name();
  if (!current.writer_schema) return Status::Invalid("no source of writer schemas");
  KELT_ASSIGN_OR_RAISE(auto writer_source, current.writer_schema(writer_id));
  auto writer = load::ParseSource(writer_source);
  if (!writer.ok()) return writer.status().WithPrefix(writer_name + ": ");
  auto writer_message = load::MessageNamed(*writer, name);
  if (!writer_message.ok()) return writer_message.status().WithPrefix(writer_name + ": ");
  KELT_ASSIGN_OR_RAISE(auto target,
                       load::GrowthTarget(current, name, *reader_message.columns,
                                          *writer_message->columns));
  if (!target) {
    return Status::Invalid("the subject's latest schema does not grow " + reader_name +
                           " by the columns of " + writer_name);
  }
  auto next = std::make_shared<ProtobufPayload>(current);
  next->reader = std::move(*target);
  next->message = name;
  return std::shared_ptr<const ProtobufPayload>(std::move(next));
}

}  // namespace kelt
