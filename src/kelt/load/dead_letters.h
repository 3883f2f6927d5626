// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The dead-letter batch of a window: one row per bad record under the dead_letter
// policy, in DeadLetterSchema() (load.h), each column written by name.
#pragma once

#include <arrow/builder.h>

#include <memory>
#include <string>
#include <string_view>

#include "kelt/load.h"
#include "kelt/record.h"
#include "kelt/status.h"

namespace arrow {
class RecordBatch;
}  // namespace arrow

namespace kelt::load {

class DeadLetterWriter {
 public:
  DeadLetterWriter();

  /// One bad record: its metadata and raw bytes, and why it is bad (`field` empty when
  /// the record as a whole is).
  Status Append(const RecordView& r, std::string_view code, std::string_view field,
                std::string_view message);

  /// The rows so far as a batch of DeadLetterSchema(); the writer starts empty again.
  Result<std::shared_ptr<arrow::RecordBatch>> Finish();

 private:
  arrow::StringBuilder topic_;
  arrow::Int64Builder partition_;
  arrow::Int64Builder offset_;
  arrow::Int64Builder timestamp_ms_;
  arrow::BinaryBuilder key_;
  arrow::BinaryBuilder value_;
  arrow::StringBuilder error_code_;
  arrow::StringBuilder error_field_;
  arrow::StringBuilder error_message_;
};

/// " (at <topic>[<partition>]@<offset>": where a record is, for messages (the caller
/// closes the parenthesis).
std::string RecordPlace(const RecordView& r);

/// A bad record under `policy`: kFail returns kTypeError "<message> (at …, field 'f')"
/// and takes the record out of `stats.records`; kSkip counts it; kDeadLetter counts it
/// and appends it to `dead_letters`.
Status HandleBadRecord(BadRecordPolicy policy, const RecordView& r, std::string_view code,
                       std::string_view field, const std::string& message,
                       LoadStats& stats, DeadLetterWriter& dead_letters);

}  // namespace kelt::load
