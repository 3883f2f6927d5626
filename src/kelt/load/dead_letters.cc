// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/load/dead_letters.h"

#include <arrow/api.h>

#include "kelt/common/memory_pool.h"
#include "kelt/common/text.h"
#include "kelt/load.h"

namespace kelt {

std::shared_ptr<arrow::Schema> DeadLetterSchema() {
  static const std::shared_ptr<arrow::Schema> kSchema = arrow::schema({
      arrow::field("_kafka_topic", arrow::utf8()),
      arrow::field("_kafka_partition", arrow::int64()),
      arrow::field("_kafka_offset", arrow::int64()),
      arrow::field("_kafka_timestamp_ms", arrow::int64()),
      arrow::field("_kafka_key", arrow::binary()),
      arrow::field("_kafka_value", arrow::binary()),
      arrow::field("_error_code", arrow::utf8()),
      arrow::field("_error_field", arrow::utf8()),
      arrow::field("_error_message", arrow::utf8()),
  });
  return kSchema;
}

namespace load {

DeadLetterWriter::DeadLetterWriter()
    : topic_(internal::WindowPool()),
      partition_(internal::WindowPool()),
      offset_(internal::WindowPool()),
      timestamp_ms_(internal::WindowPool()),
      key_(internal::WindowPool()),
      value_(internal::WindowPool()),
      error_code_(internal::WindowPool()),
      error_field_(internal::WindowPool()),
      error_message_(internal::WindowPool()) {}

Status DeadLetterWriter::Append(const RecordView& r, std::string_view code,
                                std::string_view field, std::string_view message) {
  arrow::Status st;
  st &= topic_.Append(text::Utf8Lossy(r.topic));
  st &= partition_.Append(r.partition);
  st &= offset_.Append(r.offset);
  st &=
      r.timestamp_ms ? timestamp_ms_.Append(*r.timestamp_ms) : timestamp_ms_.AppendNull();
  st &= r.key ? key_.Append(*r.key) : key_.AppendNull();
  st &= r.value ? value_.Append(*r.value) : value_.AppendNull();
  st &= error_code_.Append(code);
  st &= field.empty() ? error_field_.AppendNull() : error_field_.Append(field);
  st &= error_message_.Append(message);
  if (!st.ok()) return Status::Invalid("dead-letter batch cannot grow: " + st.message());
  return Status::OK();
}

Result<std::shared_ptr<arrow::RecordBatch>> DeadLetterWriter::Finish() {
  const int64_t rows = topic_.length();
  std::vector<std::shared_ptr<arrow::Array>> columns(9);
  arrow::Status st;
  st &= topic_.Finish(&columns[0]);
  st &= partition_.Finish(&columns[1]);
  st &= offset_.Finish(&columns[2]);
  st &= timestamp_ms_.Finish(&columns[3]);
  st &= key_.Finish(&columns[4]);
  st &= value_.Finish(&columns[5]);
  st &= error_code_.Finish(&columns[6]);
  st &= error_field_.Finish(&columns[7]);
  st &= error_message_.Finish(&columns[8]);
  if (!st.ok()) return Status::Internal("finishing dead letters: " + st.ToString());
  return arrow::RecordBatch::Make(DeadLetterSchema(), rows, std::move(columns));
}

std::string RecordPlace(const RecordView& r) {
  std::string out = " (at ";
  out += text::Utf8Lossy(r.topic);
  out += '[';
  out += std::to_string(r.partition);
  out += "]@";
  out += std::to_string(r.offset);
  return out;
}

Status HandleBadRecord(BadRecordPolicy policy, const RecordView& r, std::string_view code,
                       std::string_view field, const std::string& message,
                       LoadStats& stats, DeadLetterWriter& dead_letters) {
  if (policy == BadRecordPolicy::kFail) {
    --stats.records;  // the record is not part of the window
    std::string msg = message + RecordPlace(r);
    if (!field.empty()) msg += ", field '" + std::string(field) + "'";
    msg += ')';
    return Status::TypeError(std::move(msg));
  }
  ++stats.bad_records;
  if (policy == BadRecordPolicy::kSkip) {
    ++stats.skipped;
    return Status::OK();
  }
  ++stats.dead_lettered;
  return dead_letters.Append(r, code, field, message);
}

}  // namespace load
}  // namespace kelt
