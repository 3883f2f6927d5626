// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Load step: the public API of load.h and JsonLoad, the Loader::Impl of JSON
// payloads. Make() compiles the landing schema into a column plan (column_plan.h).
// Append() writes a record's values straight into the landing columns' rewindable writers
// (column_writer.h), by the first of three readers that takes it:
//  1. OnDemandReader (ondemand_reader.h): simdjson's streaming parser walking the object
//     once, when the plan allows it;
//  2. DomFastReader (dom_reader.h): the parsed document walked once, each value into its
//     column;
//  3. DomExactReader (dom_reader.h): columns converted in schema order, which reports a
//     bad record exactly as RDP does (the first failing column in schema order, the
//     last duplicate key).
// All three convert through the value converter (value_converter.h) and say why they
// stopped in one RecordError (record_error.h). A reader that stops rewinds nothing
// itself: Impl rewinds every column to the record's start and hands the record to the
// next reader, so a bad record never leaves the columns misaligned, whatever the
// policy. A bad record then fails the window, is skipped, or becomes a row of the
// dead-letter batch (dead_letters.h), by policy; a fatal failure ends the window.
// JSON in a Schema Registry's wire format (LoadOptions::registry_json) has its header
// checked (the writer schema id, once per id) and taken off before the readers see it.
#include "kelt/load.h"

#include <arrow/api.h>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kelt/common/parallel.h"
#include "kelt/load/column_plan.h"
#include "kelt/load/column_writer.h"
#include "kelt/load/dead_letters.h"
#include "kelt/load/dom_reader.h"
#include "kelt/load/load_impl.h"
#include "kelt/load/loader_testing.h"
#include "kelt/load/ondemand_reader.h"
#include "kelt/load/payload_buffer.h"
#include "kelt/load/record_error.h"
#include "kelt/load/value_converter.h"

namespace kelt {

std::string_view BadRecordPolicyName(BadRecordPolicy policy) {
  switch (policy) {
    case BadRecordPolicy::kFail:
      return "fail";
    case BadRecordPolicy::kSkip:
      return "skip";
    case BadRecordPolicy::kDeadLetter:
      return "dead_letter";
  }
  return "fail";
}

std::optional<BadRecordPolicy> ParseBadRecordPolicy(std::string_view name) {
  if (name == "fail") return BadRecordPolicy::kFail;
  if (name == "skip") return BadRecordPolicy::kSkip;
  if (name == "dead_letter" || name == "dead-letter") return BadRecordPolicy::kDeadLetter;
  return std::nullopt;
}

LoadStats& LoadStats::operator+=(const LoadStats& o) {
  records += o.records;
  rows += o.rows;
  bad_records += o.bad_records;
  skipped += o.skipped;
  dead_lettered += o.dead_lettered;
  tombstones += o.tombstones;
  payload_bytes += o.payload_bytes;
  return *this;
}

Result<std::vector<std::unique_ptr<Loader>>> MakeLoaderPerCore(
    const Schema& landing, const LoadOptions& options) {
  const size_t cores = std::clamp<size_t>(internal::UsableCores(), 1, 4);
  std::vector<std::unique_ptr<Loader>> loaders;
  for (size_t k = 0; k < cores; ++k) {
    KELT_ASSIGN_OR_RAISE(auto loader, Loader::Make(landing, options));
    loaders.push_back(std::move(loader));
  }
  return loaders;
}

// JSON payloads; kWireFormat: in a Schema Registry's wire format (LoadOptions::
// registry_json). Plain JSON gets its own instantiation, so the wire format costs its
// hot path nothing (bench/load_benchmark: instructions per record unchanged).
template <bool kWireFormat>
class JsonLoad final : public Loader::Impl {
 public:
  JsonLoad(load::ColumnPlan plan, LoadOptions options)
      : plan_(std::move(plan)),
        options_(options),
        writers_(plan_.MakeWriters()),
        convert_(plan_, writers_, options.strict_payload),
        ondemand_(plan_, convert_, buffer_),
        dom_(plan_, options.strict_payload, buffer_),
        dom_fast_(plan_, convert_),
        dom_exact_(plan_, convert_) {}
  // The readers hold references to the plan, the writers and the converter.
  JsonLoad(const JsonLoad&) = delete;
  JsonLoad& operator=(const JsonLoad&) = delete;

  // Make room for `records` more rows and about `payload_bytes` of string data.
  Status Reserve(int64_t records, int64_t payload_bytes) override {
    const int64_t rows = stats_.rows + records;
    const int64_t n_text = plan_.text_columns();
    const int64_t per_text_column = n_text == 0 ? 0 : payload_bytes / (n_text + 1);
    for (load::ColumnWriter& w : writers_) {
      KELT_RETURN_NOT_OK(w.Reserve(rows, per_text_column));
    }
    row_capacity_ = rows;
    return Status::OK();
  }

  Status Append(const RecordView& r) override {
    if constexpr (kWireFormat) {
      if (r.value) {
        RecordView body;
        Status st;
        if (!WireFormatBody(r, &body, &st)) return st;
        return AppendRecord(body, r);
      }
    }
    return AppendRecord(r, r);
  }

  Result<LoadedWindow> Finish() override {
    LoadedWindow out;
    const std::shared_ptr<arrow::Schema>& schema = plan_.arrow_schema();
    std::vector<std::shared_ptr<arrow::Array>> arrays(writers_.size());
    for (size_t c = 0; c < writers_.size(); ++c) {
      KELT_ASSIGN_OR_RAISE(
          arrays[c], writers_[c].Finish(schema->field(static_cast<int>(c))->type()));
    }
    out.batch = arrow::RecordBatch::Make(schema, stats_.rows, std::move(arrays));
    KELT_ASSIGN_OR_RAISE(out.dead_letters, dead_letters_.Finish());
    out.stats = stats_;
    stats_ = LoadStats{};
    row_capacity_ = 0;
    return out;
  }

  bool needs_headers() const override { return plan_.needs_headers(); }
  void set_force_dom(bool force) override { force_dom_ = force; }
  int64_t rows() const override { return stats_.rows; }
  const Schema& schema() const override { return plan_.schema(); }
  const std::shared_ptr<arrow::Schema>& arrow_schema() const override {
    return plan_.arrow_schema();
  }

 private:
  // Land `r`, whose payload is the JSON text of the record `raw` (the same record, or
  // one in the wire format: `raw` is what a bad record reports and dead-letters).
  [[gnu::always_inline]] Status AppendRecord(const RecordView& r, const RecordView& raw) {
    ++stats_.records;
    if (raw.value) stats_.payload_bytes += static_cast<int64_t>(raw.value->size());
    if (stats_.rows >= row_capacity_) {
      KELT_RETURN_NOT_OK(Reserve(std::max<int64_t>(1024, stats_.rows), 0));
    }
    if (WriteRecord(r)) [[likely]] {
      ++stats_.rows;
      return Status::OK();
    }
    Rewind();
    Status st;
    if (error_.fatal()) {
      --stats_.records;  // the record is not part of the window
      st = error_.status();
    } else {
      st = HandleBad(raw);
    }
    error_.Clear();
    return st;
  }

  // A JSON payload in the registry's wire format: true with `*body` the record with its
  // JSON text when the header is good; else false, the record handled as bad (`*st`
  // the policy's outcome) or the window to end (`*st` why: a registry that is down).
  [[gnu::noinline]] bool WireFormatBody(const RecordView& r, RecordView* body,
                                        Status* st) {
    int32_t id = -1;
    if (!load::ReadWireHeader(*r.value, &id)) {
      *st = Bad(r, kErrorMalformedPayload, std::string(load::kNoWireHeader));
      return false;
    }
    if (id != last_good_id_) {
      auto it = schema_ids_.find(id);
      if (it == schema_ids_.end()) {
        Status check_st = registry_json_->check_schema_id(id);
        SchemaIdCheck check;
        if (check_st.code() == StatusCode::kNotFound) {
          check = {kErrorUnknownSchemaId,
                   "unknown schema id " + std::to_string(id) + ": " + check_st.message()};
        } else if (check_st.code() == StatusCode::kInvalid) {
          check = {kErrorIncompatibleSchema,
                   "schema id " + std::to_string(id) + ": " + check_st.message()};
        } else if (!check_st.ok()) {
          // Not the record's fault (a registry that is down): the window ends.
          *st = check_st.WithPrefix("JSON payload" + load::RecordPlace(r) + "): ");
          return false;
        }
        it = schema_ids_.emplace(id, std::move(check)).first;
      }
      if (!it->second.code.empty()) {
        *st = Bad(r, it->second.code, it->second.why);
        return false;
      }
      last_good_id_ = id;
    }
    *body = r;
    body->value = r.value->substr(5);
    return true;
  }

  // A record bad as a whole, before any column was written.
  Status Bad(const RecordView& r, std::string_view code, std::string why) {
    ++stats_.records;
    stats_.payload_bytes += static_cast<int64_t>(r.value->size());
    error_.BadRecord(code, std::move(why), -1);
    Status st = HandleBad(r);
    error_.Clear();
    return st;
  }

  // Write one value into every column, by the first reader that takes the record.
  // False with error_ set after writing some columns; the caller rewinds them.
  bool WriteRecord(const RecordView& r) {
    const int64_t row = stats_.rows;
    const bool has_payload = !plan_.payload_columns().empty();
    if (plan_.ondemand_ok() && r.value && has_payload && !force_dom_) {
      if (ondemand_.Write(r, *r.value, row, error_)) return true;
      if (!NextReader()) return false;
    }
    load::PayloadMode mode = load::PayloadMode::kNone;
    if (has_payload) {
      if (!r.value) {
        ++stats_.tombstones;
        mode = load::PayloadMode::kAllNull;
      } else if (!dom_.Classify(*r.value, error_)) {
        return false;
      } else {
        mode = dom_.mode();
      }
    }
    if (mode == load::PayloadMode::kObject) {
      if (dom_fast_.Write(r, dom_.object(), row, error_)) return true;
      if (!NextReader()) return false;
    }
    return dom_exact_.Write(r, mode, dom_, error_);
  }

  // A reader declined the record (or found it bad, which the exact reader reports):
  // rewind the columns for the next reader. False when the failure was fatal.
  bool NextReader() {
    if (error_.fatal()) return false;
    error_.Clear();
    Rewind();
    return true;
  }

  // Take back the partly written record.
  void Rewind() {
    for (load::ColumnWriter& w : writers_) w.Rewind(stats_.rows);
  }

  Status HandleBad(const RecordView& r) {
    const int column = error_.column();
    std::string field =
        column >= 0 ? plan_.columns()[static_cast<size_t>(column)].name : "";
    return load::HandleBadRecord(options_.on_bad_record, r, error_.code(), field,
                                 error_.message(), stats_, dead_letters_);
  }

  load::ColumnPlan plan_;
  LoadOptions options_;
  std::vector<load::ColumnWriter> writers_;  // one per landing column
  load::PayloadBuffer buffer_;               // shared by the readers
  load::ValueConverter convert_;
  load::OnDemandReader ondemand_;
  load::DomPayload dom_;
  load::DomFastReader dom_fast_;
  load::DomExactReader dom_exact_;
  load::DeadLetterWriter dead_letters_;
  // Wire-format payloads: what the registry said of each writer schema id (an empty
  // code: a JSON schema), and the last good id, whose records skip the lookup.
  struct SchemaIdCheck {
    std::string_view code;
    std::string why;
  };
  const RegistryJsonPayload* registry_json_ = options_.registry_json.get();
  std::unordered_map<int32_t, SchemaIdCheck> schema_ids_;
  std::optional<int32_t> last_good_id_;  // any int32 is an id, -1 too
  load::RecordError error_;              // why the current record stopped
  bool force_dom_ = false;               // tests and the fuzzer compare the readers
  int64_t row_capacity_ = 0;             // rows every writer can take without growing
  LoadStats stats_;
};

Loader::Loader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

void LoaderTesting::ForceDomPath(Loader* loader, bool force) {
  loader->impl_->set_force_dom(force);
}
Loader::~Loader() = default;

namespace load {
Result<std::unique_ptr<Loader::Impl>> MakeLoadImpl(const Schema& landing,
                                                   LoadOptions options) {
  if ((options.avro ? 1 : 0) + (options.protobuf ? 1 : 0) +
          (options.registry_json ? 1 : 0) >
      1) {
    return Status::Invalid(
        "a payload is Avro, Protobuf or JSON: set one of LoadOptions avro, protobuf and "
        "registry_json");
  }
  if (options.avro) return MakeAvroLoad(landing, options);
  if (options.protobuf) return MakeProtobufLoad(landing, options);
  if (options.registry_json && !options.registry_json->check_schema_id) {
    return Status::Invalid("JSON payloads in the wire format need a check of schema ids");
  }
  // RDP's leniency (rule 4, U+FFFD) is for RDP's plain JSON; a registry's JSON body
  // that is not a JSON object or not UTF-8 is a bad record.
  if (options.registry_json) options.strict_payload = true;
  KELT_ASSIGN_OR_RAISE(ColumnPlan plan, ColumnPlan::Make(landing));
  if (options.registry_json) {
    return std::unique_ptr<Loader::Impl>(
        std::make_unique<JsonLoad<true>>(std::move(plan), std::move(options)));
  }
  return std::unique_ptr<Loader::Impl>(
      std::make_unique<JsonLoad<false>>(std::move(plan), std::move(options)));
}
}  // namespace load

Result<std::unique_ptr<Loader>> Loader::Make(const Schema& landing, LoadOptions options) {
  KELT_ASSIGN_OR_RAISE(auto impl, load::MakeLoadImpl(landing, options));
  if (options.key) {
    KELT_ASSIGN_OR_RAISE(impl, load::MakeKeyedLoad(std::move(impl), options));
  }
  return std::unique_ptr<Loader>(new Loader(std::move(impl)));
}

Status Loader::Reserve(int64_t records, int64_t payload_bytes) {
  return impl_->Reserve(records, payload_bytes);
}

Status Loader::Append(const RecordView& record) { return impl_->Append(record); }

Status Loader::Append(const StreamRecord& record) {
  std::vector<HeaderView> headers;
  return impl_->Append(ViewOf(record, &headers));
}

Result<LoadedWindow> Loader::Finish() { return impl_->Finish(); }
bool Loader::needs_headers() const { return impl_->needs_headers(); }
int32_t Loader::newer_writer_schema() const { return impl_->newer_writer_schema(); }
const Schema& Loader::schema() const { return impl_->schema(); }
const std::shared_ptr<arrow::Schema>& Loader::arrow_schema() const {
  return impl_->arrow_schema();
}

Result<LoadedWindow> LoadRecords(std::span<const StreamRecord> records,
                                 const Schema& landing, const LoadOptions& options) {
  KELT_ASSIGN_OR_RAISE(auto loader, Loader::Make(landing, options));
  int64_t bytes = 0;
  for (const StreamRecord& r : records)
    bytes += r.value ? static_cast<int64_t>(r.value->size()) : 0;
  KELT_RETURN_NOT_OK(loader->Reserve(static_cast<int64_t>(records.size()), bytes));
  std::vector<HeaderView> headers;
  for (const StreamRecord& r : records) {
    KELT_RETURN_NOT_OK(loader->Append(ViewOf(r, &headers)));
  }
  return loader->Finish();
}

Result<LoadedWindow> LoadRecordsJson(std::string_view records_json, const Schema& landing,
                                     const LoadOptions& options) {
  auto records = ParseRecordsJson(records_json);
  if (!records.ok()) {
    return records.status().WithPrefix(
        "schema mismatch: invalid kafka stream record JSON: ");
  }
  return LoadRecords(*records, landing, options);
}

}  // namespace kelt
