// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Kafka stream record (RDP_COMPATIBILITY.md §2): an owning struct for the JSON
// boundary and a non-owning view for the hot path (the Kafka module builds views over
// librdkafka message buffers without copying payloads).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/status.h"

namespace kelt {

/// How the broker stamped a record's timestamp.
enum class TimestampType : uint8_t { kNotAvailable = 0, kCreateTime, kLogAppendTime };

/// "create_time", "log_append_time" or "not_available".
std::string_view TimestampTypeName(TimestampType t);

struct RecordHeader {
  std::string name;
  std::optional<std::string> value;  // a header may carry a null value
  bool operator==(const RecordHeader&) const = default;
};

/// One Kafka record, owning its bytes.
struct StreamRecord {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  std::optional<int64_t> timestamp_ms;
  TimestampType timestamp_type = TimestampType::kNotAvailable;
  std::optional<std::string> key;
  /// nullopt is a tombstone (null payload); its JSON form is "".
  std::optional<std::string> value;
  std::vector<RecordHeader> headers;

  bool operator==(const StreamRecord&) const = default;
};

struct HeaderView {
  std::string_view name;
  std::optional<std::string_view> value;
};

/// A non-owning view of one record; valid while the bytes it points to live.
struct RecordView {
  std::string_view topic;
  int32_t partition = 0;
  int64_t offset = 0;
  std::optional<int64_t> timestamp_ms;
  TimestampType timestamp_type = TimestampType::kNotAvailable;
  std::optional<std::string_view> key;
  std::optional<std::string_view> value;
  std::span<const HeaderView> headers;
};

/// Parse `{"records":[…]}` or a bare array of records. Required per record: topic,
/// partition (i32), offset (i64), value (string; null is accepted as a tombstone).
/// Optional: timestamp_ms, key, headers, timestamp_type. Errors name the record index
/// and key, e.g. "records[3].partition: expected an integer that fits i32".
Result<std::vector<StreamRecord>> ParseRecordsJson(std::string_view json);

/// Serialize as `{"records":[…]}`; key/timestamp_ms/headers omitted when absent or empty,
/// a tombstone's value is "". Bytes that are not valid UTF-8 become U+FFFD.
std::string RecordsToJson(std::span<const StreamRecord> records);
std::string RecordToJson(const StreamRecord& record);

/// Return a view of an owning record. `header_scratch` receives the header views and
/// must outlive the returned view.
RecordView ViewOf(const StreamRecord& record, std::vector<HeaderView>* header_scratch);

}  // namespace kelt
