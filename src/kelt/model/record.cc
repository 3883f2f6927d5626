// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The records JSON of RDP_COMPATIBILITY.md §2. kelt additions, both optional and
// additive: "timestamp_type" ("create_time" | "log_append_time" | "not_available";
// written after "timestamp_ms" only when known) and the header pair form ["name","value"]
// on input.
#include "kelt/record.h"

#include <limits>

#include "kelt/common/text.h"
#include "kelt/model/json_dom.h"

namespace kelt {

namespace dom = simdjson::dom;

std::string_view TimestampTypeName(TimestampType t) {
  switch (t) {
    case TimestampType::kNotAvailable:
      return "not_available";
    case TimestampType::kCreateTime:
      return "create_time";
    case TimestampType::kLogAppendTime:
      return "log_append_time";
  }
  return "not_available";
}

namespace {

std::string RecordPath(size_t i) { return "records[" + std::to_string(i) + "]"; }

std::string KeyPath(size_t i, std::string_view key) {
  return model::JoinPath(RecordPath(i), key);
}

Status KeyError(size_t i, std::string_view key, std::string_view expected,
                dom::element v) {
  return Status::Invalid(
      model::Located(KeyPath(i, key),
                     "expected " + std::string(expected) + ", got " + model::Excerpt(v)));
}

// Read a string or null into `out` (null → nullopt).
bool GetOptionalString(dom::element v, std::optional<std::string>* out) {
  if (v.is_null()) {
    out->reset();
    return true;
  }
  std::string_view s;
  if (v.get_string().get(s) != simdjson::SUCCESS) return false;
  out->emplace(s);
  return true;
}

Status HeaderFromJson(dom::element e, size_t record, size_t index, RecordHeader* out) {
  auto bad = [&]() {
    return Status::Invalid(model::Located(
        KeyPath(record, "headers[" + std::to_string(index) + "]"),
        "expected {\"name\":\"h\",\"value\":\"v\"} or [\"h\",\"v\"], got " +
            model::Excerpt(e)));
  };
  std::string_view name;
  dom::array pair;
  dom::object obj;
  if (e.get_array().get(pair) == simdjson::SUCCESS) {
    if (pair.size() != 2) return bad();
    auto it = pair.begin();
    if ((*it).get_string().get(name) != simdjson::SUCCESS) return bad();
    ++it;
    if (!GetOptionalString(*it, &out->value)) return bad();
    out->name.assign(name);
    return Status::OK();
  }
  if (e.get_object().get(obj) != simdjson::SUCCESS) return bad();
  bool has_name = false;
  for (dom::key_value_pair kv : obj) {
    if (kv.key == "name") {
      if (kv.value.get_string().get(name) != simdjson::SUCCESS) return bad();
      out->name.assign(name);
      has_name = true;
    } else if (kv.key == "value") {
      if (!GetOptionalString(kv.value, &out->value)) return bad();
    }
  }
  if (!has_name) return bad();
  return Status::OK();
}

Status RecordFromJson(dom::element e, size_t i, StreamRecord* out) {
  dom::object obj;
  if (e.get_object().get(obj) != simdjson::SUCCESS) {
    return Status::Invalid(model::Located(RecordPath(i),
                                          "expected a record object like "
                                          "{\"topic\":…,\"partition\":…,"
                                          "\"offset\":…,\"value\":…}, got " +
                                              model::Excerpt(e)));
  }
  // Bit per known key, to report duplicates (serde rejects them) and missing keys.
  enum : unsigned {
    kTopic = 1,
    kPartition = 2,
    kOffset = 4,
    kValue = 8,
    kTimestamp = 16,
    kKey = 32,
    kHeaders = 64,
    kTimestampType = 128,
  };
  unsigned seen = 0;
  for (dom::key_value_pair kv : obj) {
    const std::string_view key = kv.key;
    const dom::element v = kv.value;
    unsigned bit = 0;
    if (key == "topic") {
      bit = kTopic;
    } else if (key == "partition") {
      bit = kPartition;
    } else if (key == "offset") {
      bit = kOffset;
    } else if (key == "value") {
      bit = kValue;
    } else if (key == "timestamp_ms") {
      bit = kTimestamp;
    } else if (key == "key") {
      bit = kKey;
    } else if (key == "headers") {
      bit = kHeaders;
    } else if (key == "timestamp_type") {
      bit = kTimestampType;
    } else {
      continue;  // unknown keys are ignored
    }
    if ((seen & bit) != 0) {
      return Status::Invalid(
          model::Located(RecordPath(i), "duplicate key '" + std::string(key) + "'"));
    }
    seen |= bit;
    switch (bit) {
      case kTopic: {
        std::string_view s;
        if (v.get_string().get(s) != simdjson::SUCCESS) {
          return KeyError(i, key, "a string", v);
        }
        out->topic.assign(s);
        break;
      }
      case kPartition: {
        int64_t p = 0;
        if (!model::GetInt64(v, &p) || p < std::numeric_limits<int32_t>::min() ||
            p > std::numeric_limits<int32_t>::max()) {
          return KeyError(i, key, "an integer that fits i32", v);
        }
        out->partition = static_cast<int32_t>(p);
        break;
      }
      case kOffset:
        if (!model::GetInt64(v, &out->offset)) {
          return KeyError(i, key, "an integer that fits i64", v);
        }
        break;
      case kValue:  // null is a tombstone
        if (!GetOptionalString(v, &out->value))
          return KeyError(i, key, "a string or null", v);
        break;
      case kKey:
        if (!GetOptionalString(v, &out->key))
          return KeyError(i, key, "a string or null", v);
        break;
      case kTimestamp: {
        int64_t ts = 0;
        if (v.is_null()) {
          out->timestamp_ms.reset();
        } else if (model::GetInt64(v, &ts)) {
          out->timestamp_ms = ts;
        } else {
          return KeyError(i, key, "an integer (ms since the epoch) or null", v);
        }
        break;
      }
      case kTimestampType: {
        std::string_view s;
        if (v.is_null()) {
          out->timestamp_type = TimestampType::kNotAvailable;
          break;
        }
        if (v.get_string().get(s) != simdjson::SUCCESS) s = {};
        if (s == "create_time") {
          out->timestamp_type = TimestampType::kCreateTime;
        } else if (s == "log_append_time") {
          out->timestamp_type = TimestampType::kLogAppendTime;
        } else if (s == "not_available") {
          out->timestamp_type = TimestampType::kNotAvailable;
        } else {
          return KeyError(i, key,
                          "\"create_time\", \"log_append_time\" or \"not_available\"", v);
        }
        break;
      }
      case kHeaders: {
        out->headers.clear();
        if (v.is_null()) break;
        dom::array arr;
        if (v.get_array().get(arr) != simdjson::SUCCESS) {
          return KeyError(i, key, "an array of headers", v);
        }
        out->headers.reserve(arr.size());
        size_t h = 0;
        for (dom::element he : arr) {
          KELT_RETURN_NOT_OK(HeaderFromJson(he, i, h, &out->headers.emplace_back()));
          ++h;
        }
        break;
      }
    }
  }
  static constexpr struct {
    unsigned bit;
    std::string_view name;
  } kRequired[] = {{kTopic, "topic"},
                   {kPartition, "partition"},
                   {kOffset, "offset"},
                   {kValue, "value"}};
  for (const auto& req : kRequired) {
    if ((seen & req.bit) == 0) {
      return Status::Invalid(
          model::Located(RecordPath(i), "missing key '" + std::string(req.name) + "'"));
    }
  }
  return Status::OK();
}

void AppendRecordJson(std::string* out, const StreamRecord& r) {
  out->append("{\"topic\":");
  text::AppendJsonString(out, r.topic);
  out->append(",\"partition\":");
  text::AppendInt64(out, r.partition);
  out->append(",\"offset\":");
  text::AppendInt64(out, r.offset);
  if (r.timestamp_ms) {
    out->append(",\"timestamp_ms\":");
    text::AppendInt64(out, *r.timestamp_ms);
  }
  if (r.timestamp_type != TimestampType::kNotAvailable) {
    out->append(",\"timestamp_type\":\"");
    out->append(TimestampTypeName(r.timestamp_type));
    out->push_back('"');
  }
  if (r.key) {
    out->append(",\"key\":");
    text::AppendJsonString(out, *r.key);
  }
  out->append(",\"value\":");
  std::string_view value;  // a tombstone is written as ""
  if (r.value) value = *r.value;
  text::AppendJsonString(out, value);
  if (!r.headers.empty()) {
    out->append(",\"headers\":[");
    for (size_t h = 0; h < r.headers.size(); ++h) {
      if (h > 0) out->push_back(',');
      out->append("{\"name\":");
      text::AppendJsonString(out, r.headers[h].name);
      out->append(",\"value\":");
      if (r.headers[h].value) {
        text::AppendJsonString(out, *r.headers[h].value);
      } else {
        out->append("null");
      }
      out->push_back('}');
    }
    out->push_back(']');
  }
  out->push_back('}');
}

}  // namespace

Result<std::vector<StreamRecord>> ParseRecordsJson(std::string_view json) {
  dom::element root;
  KELT_RETURN_NOT_OK(model::ParseDocument(json, &root));
  dom::array arr;
  dom::object obj;
  if (root.get_object().get(obj) == simdjson::SUCCESS) {
    dom::element records;
    if (obj["records"].get(records) != simdjson::SUCCESS) {
      return Status::Invalid("missing key 'records'");
    }
    if (records.get_array().get(arr) != simdjson::SUCCESS) {
      return Status::Invalid("records: expected an array of records, got " +
                             model::Excerpt(records));
    }
  } else if (root.get_array().get(arr) != simdjson::SUCCESS) {
    return Status::Invalid("expected {\"records\":[…]} or an array of records, got " +
                           model::Excerpt(root));
  }
  std::vector<StreamRecord> out;
  out.reserve(arr.size());
  size_t i = 0;
  for (dom::element e : arr) {
    KELT_RETURN_NOT_OK(RecordFromJson(e, i, &out.emplace_back()));
    ++i;
  }
  return out;
}

std::string RecordsToJson(std::span<const StreamRecord> records) {
  std::string out;
  size_t estimate = 16;
  for (const StreamRecord& r : records) {
    estimate += 64 + r.topic.size() + (r.key ? r.key->size() : 0) +
                (r.value ? r.value->size() + r.value->size() / 8 : 0);
  }
  out.reserve(estimate);
  out.append("{\"records\":[");
  for (size_t i = 0; i < records.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendRecordJson(&out, records[i]);
  }
  out.append("]}");
  return out;
}

std::string RecordToJson(const StreamRecord& record) {
  std::string out;
  AppendRecordJson(&out, record);
  return out;
}

RecordView ViewOf(const StreamRecord& record, std::vector<HeaderView>* header_scratch) {
  RecordView view;
  view.topic = record.topic;
  view.partition = record.partition;
  view.offset = record.offset;
  view.timestamp_ms = record.timestamp_ms;
  view.timestamp_type = record.timestamp_type;
  if (record.key) view.key.emplace(*record.key);
  if (record.value) view.value.emplace(*record.value);
  header_scratch->clear();
  header_scratch->reserve(record.headers.size());
  for (const RecordHeader& h : record.headers) {
    HeaderView hv;
    hv.name = h.name;
    if (h.value) hv.value.emplace(*h.value);
    header_scratch->push_back(hv);
  }
  view.headers = std::span<const HeaderView>(*header_scratch);
  return view;
}

}  // namespace kelt
