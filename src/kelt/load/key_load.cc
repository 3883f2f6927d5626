// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// KeyedLoad: records whose keys are decoded by a schema (LoadOptions::key). It wraps the
// values' Loader::Impl and a second Impl that loads each record's key as if it were a
// payload (a key loader, under the fail policy so that a bad key leaves no row). The
// keys land as one more column, `_kafka_key`: a struct of a record key's fields, or a
// primitive key's own type.
//
// Row alignment: a key row is written before the record goes to the values' loader,
// which may still leave the record out (a bad payload, skipped or dead-lettered). Each
// key row remembers whether its record landed, and Finish drops the key rows of records
// that did not, so row i of the key column is row i of the values.

#include <arrow/api.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kelt/avro.h"
#include "kelt/load/dead_letters.h"
#include "kelt/load/load_impl.h"

namespace kelt::load {
namespace {

constexpr std::string_view kKeyColumn = "_kafka_key";

Status FromArrow(const arrow::Status& st, std::string_view what) {
  if (st.ok()) return Status::OK();
  return Status::IOError(std::string(what) + ": " + st.ToString());
}

// The rows of `array` whose `keep` flag is set (runs of kept rows sliced and joined).
Result<std::shared_ptr<arrow::Array>> KeepRows(const std::shared_ptr<arrow::Array>& array,
                                               const std::vector<uint8_t>& keep) {
  arrow::ArrayVector runs;
  const int64_t n = static_cast<int64_t>(keep.size());
  for (int64_t i = 0; i < n;) {
    if (!keep[static_cast<size_t>(i)]) {
      ++i;
      continue;
    }
    int64_t end = i;
    while (end < n && keep[static_cast<size_t>(end)]) ++end;
    runs.push_back(array->Slice(i, end - i));
    i = end;
  }
  if (runs.empty()) {
    auto empty = arrow::MakeEmptyArray(array->type());
    KELT_RETURN_NOT_OK(FromArrow(empty.status(), "the key column"));
    return *empty;
  }
  if (runs.size() == 1) return runs[0];
  auto joined = arrow::Concatenate(runs);
  KELT_RETURN_NOT_OK(FromArrow(joined.status(), "joining the key column"));
  return *joined;
}

class KeyedLoad final : public Loader::Impl {
 public:
  KeyedLoad(std::unique_ptr<Loader::Impl> values, std::unique_ptr<Loader::Impl> keys,
            bool record_key, BadRecordPolicy policy)
      : values_(std::move(values)),
        keys_(std::move(keys)),
        record_key_(record_key),
        policy_(policy) {
    const auto& key_schema = keys_->arrow_schema();
    std::shared_ptr<arrow::DataType> type =
        record_key_ ? arrow::struct_(key_schema->fields()) : key_schema->field(0)->type();
    arrow::FieldVector fields = values_->arrow_schema()->fields();
    fields.push_back(arrow::field(std::string(kKeyColumn), std::move(type)));
    arrow_schema_ = arrow::schema(std::move(fields));
  }

  Status Reserve(int64_t records, int64_t payload_bytes) override {
    KELT_RETURN_NOT_OK(values_->Reserve(records, payload_bytes));
    KELT_RETURN_NOT_OK(keys_->Reserve(records, 0));
    landed_.reserve(landed_.size() + static_cast<size_t>(records));
    return Status::OK();
  }

  Status Append(const RecordView& r) override {
    RecordView key = r;
    key.value = r.key;
    Status st = keys_->Append(key);
    if (st.code() == StatusCode::kTypeError) return BadKey(r);
    if (!st.ok()) return st.WithPrefix("the record key: ");
    null_key_.push_back(r.key ? 0 : 1);
    const int64_t before = values_->rows();
    st = values_->Append(r);
    const bool landed = values_->rows() > before;
    landed_.push_back(landed ? 1 : 0);
    all_landed_ = all_landed_ && landed;
    return st;
  }

  Result<LoadedWindow> Finish() override {
    KELT_ASSIGN_OR_RAISE(LoadedWindow out, values_->Finish());
    KELT_ASSIGN_OR_RAISE(LoadedWindow keys, keys_->Finish());
    std::vector<uint8_t> landed = std::move(landed_);
    std::vector<uint8_t> null_key = std::move(null_key_);
    const bool all_landed = all_landed_;
    landed_.clear();
    null_key_.clear();
    all_landed_ = true;

    KELT_ASSIGN_OR_RAISE(auto column, KeyArray(*keys.batch, null_key));
    if (!all_landed) {
      KELT_ASSIGN_OR_RAISE(column, KeepRows(column, landed));
    }
    if (column->length() != out.batch->num_rows()) {
      return Status::Invalid("the key column has " + std::to_string(column->length()) +
                             " rows and the values " +
                             std::to_string(out.batch->num_rows()));
    }
    std::vector<std::shared_ptr<arrow::Array>> arrays = out.batch->columns();
    arrays.push_back(std::move(column));
    out.batch =
        arrow::RecordBatch::Make(arrow_schema_, out.batch->num_rows(), std::move(arrays));

    // Records with a bad key count once, in the window's totals.
    KELT_ASSIGN_OR_RAISE(auto bad_keys, dead_letters_.Finish());
    if (bad_keys->num_rows() > 0) {
      auto joined = arrow::ConcatenateRecordBatches({out.dead_letters, bad_keys});
      KELT_RETURN_NOT_OK(FromArrow(joined.status(), "joining the dead letters"));
      out.dead_letters = *joined;
    }
    out.stats += bad_;
    bad_ = LoadStats{};
    return out;
  }

  bool needs_headers() const override { return values_->needs_headers(); }
  const Schema& schema() const override { return values_->schema(); }
  const std::shared_ptr<arrow::Schema>& arrow_schema() const override {
    return arrow_schema_;
  }
  void set_force_dom(bool force) override { values_->set_force_dom(force); }
  int32_t newer_writer_schema() const override { return values_->newer_writer_schema(); }
  int64_t rows() const override { return values_->rows(); }
  const BadRecordNote* last_bad() const override { return &last_bad_; }

 private:
  // The record's key did not decode: the record is bad by the window's policy, with the
  // key loader's code and the field under `_kafka_key`.
  Status BadKey(const RecordView& r) {
    const BadRecordNote* why = keys_->last_bad();
    BadRecordNote note{why ? why->code : std::string(kErrorMalformedPayload),
                       std::string(kKeyColumn), "the record key: "};
    if (why != nullptr) {
      if (!why->field.empty()) note.field += "." + why->field;
      note.message += why->message;
    }
    last_bad_ = note;
    ++bad_.records;  // HandleBadRecord takes it back under kFail
    Status st = HandleBadRecord(policy_, r, note.code, note.field, note.message, bad_,
                                dead_letters_);
    if (policy_ != BadRecordPolicy::kFail && r.value) {
      bad_.payload_bytes += static_cast<int64_t>(r.value->size());
    }
    return st;
  }

  // The key loader's batch as the `_kafka_key` column: its one column, or a struct of
  // its columns that is null where the record had no key.
  Result<std::shared_ptr<arrow::Array>> KeyArray(const arrow::RecordBatch& keys,
                                                 const std::vector<uint8_t>& null_key) {
    if (!record_key_) return keys.column(0);
    const int64_t n = keys.num_rows();
    std::shared_ptr<arrow::Buffer> validity;
    int64_t nulls = 0;
    if (std::find(null_key.begin(), null_key.end(), 1) != null_key.end()) {
      arrow::TypedBufferBuilder<bool> bits;
      KELT_RETURN_NOT_OK(FromArrow(bits.Reserve(n), "the key column"));
      for (uint8_t is_null : null_key) {
        bits.UnsafeAppend(is_null == 0);
        nulls += is_null;
      }
      KELT_RETURN_NOT_OK(FromArrow(bits.Finish(&validity), "the key column"));
    }
    auto type = arrow_schema_->field(arrow_schema_->num_fields() - 1)->type();
    return std::static_pointer_cast<arrow::Array>(std::make_shared<arrow::StructArray>(
        type, n, keys.columns(), std::move(validity), nulls));
  }

  std::unique_ptr<Loader::Impl> values_;
  std::unique_ptr<Loader::Impl> keys_;  // under the fail policy
  bool record_key_;                     // a struct of the key's fields
  BadRecordPolicy policy_;
  std::shared_ptr<arrow::Schema> arrow_schema_;  // the values', then _kafka_key
  std::vector<uint8_t> landed_;                  // per key row: its record landed
  std::vector<uint8_t> null_key_;                // per key row: the record had no key
  bool all_landed_ = true;
  DeadLetterWriter dead_letters_;  // records with a bad key
  LoadStats bad_;                  // their counts
  BadRecordNote last_bad_;
};

}  // namespace

Result<std::unique_ptr<Loader::Impl>> MakeKeyedLoad(std::unique_ptr<Loader::Impl> values,
                                                    const LoadOptions& options) {
  const LoadOptions& key = *options.key;
  if (key.key)
    return Status::Invalid("a key's load options cannot have a key of their own");
  if (!key.avro && !key.protobuf) {
    return Status::Invalid("decoded keys need their format (an Avro or Protobuf schema)");
  }
  if (values->arrow_schema()->GetFieldIndex(std::string(kKeyColumn)) >= 0) {
    return Status::Invalid(
        "landing schema: column '_kafka_key' takes the raw key; with decoded keys "
        "(key.format registry) the key lands there by itself: leave it out");
  }
  LoadOptions fail = key;
  fail.on_bad_record = BadRecordPolicy::kFail;
  auto keys = MakeLoadImpl(Schema{}, fail);
  if (!keys.ok()) return keys.status().WithPrefix("the key schema: ");
  bool record_key = true;  // a Protobuf key is a message
  if (key.avro) {
    auto parsed = AvroSchema::Parse(key.avro->reader_schema);
    if (!parsed.ok()) return parsed.status().WithPrefix("the key schema: ");
    record_key = parsed->root().type == AvroType::kRecord;
  }
  return std::unique_ptr<Loader::Impl>(new KeyedLoad(std::move(values), std::move(*keys),
                                                     record_key, options.on_bad_record));
}

}  // namespace kelt::load
