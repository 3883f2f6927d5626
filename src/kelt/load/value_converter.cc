// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/load/value_converter.h"

#include <algorithm>
#include <cstdio>

#include "kelt/common/text.h"

namespace kelt::load {

namespace {

std::string Truncated(std::string_view s) {
  constexpr size_t kMax = 64;
  std::string out = text::Utf8Lossy(s.substr(0, std::min(s.size(), kMax)));
  if (s.size() > kMax) out += "…";
  return out;
}

// Append the compact JSON text of a DOM element (serde_json's `to_string`): input key
// order, numbers re-printed from their parsed value.
void AppendCompactJson(std::string* out, simdjson::dom::element e) {
  using simdjson::dom::element_type;
  switch (e.type()) {
    case element_type::NULL_VALUE:
      out->append("null");
      break;
    case element_type::BOOL:
      out->append(e.get_bool().value_unsafe() ? "true" : "false");
      break;
    case element_type::INT64:
      text::AppendInt64(out, e.get_int64().value_unsafe());
      break;
    case element_type::UINT64: {
      char buf[24];
      int n =
          std::snprintf(buf, sizeof(buf), "%llu",
                        static_cast<unsigned long long>(e.get_uint64().value_unsafe()));
      out->append(buf, static_cast<size_t>(n));
      break;
    }
    case element_type::DOUBLE:
      text::AppendJsonDouble(out, e.get_double().value_unsafe());
      break;
    case element_type::STRING:
      text::AppendJsonString(out, e.get_string().value_unsafe());
      break;
    case element_type::ARRAY: {
      out->push_back('[');
      bool first = true;
      // Copy the array out of its simdjson_result first: iterating the temporary's
      // value_unsafe() would dangle.
      simdjson::dom::array array = e.get_array().value_unsafe();
      for (simdjson::dom::element child : array) {
        if (!first) out->push_back(',');
        first = false;
        AppendCompactJson(out, child);
      }
      out->push_back(']');
      break;
    }
    case element_type::OBJECT: {
      out->push_back('{');
      bool first = true;
      simdjson::dom::object object = e.get_object().value_unsafe();
      for (simdjson::dom::key_value_pair kv : object) {
        if (!first) out->push_back(',');
        first = false;
        text::AppendJsonString(out, kv.key);
        out->push_back(':');
        AppendCompactJson(out, kv.value);
      }
      out->push_back('}');
      break;
    }
  }
}

// {"name":"value",…}; a name that repeats maps to an array of its values in order.
void HeadersJson(std::span<const HeaderView> headers, std::string* out) {
  out->clear();
  out->push_back('{');
  bool first = true;
  auto append_value = [&](const HeaderView& hv) {
    if (hv.value) {
      text::AppendJsonString(out, *hv.value);
    } else {
      out->append("null");
    }
  };
  for (size_t i = 0; i < headers.size(); ++i) {
    const HeaderView& h = headers[i];
    bool seen = false;
    size_t count = 0;
    for (size_t j = 0; j < headers.size(); ++j) {
      if (headers[j].name == h.name) {
        if (j < i) seen = true;
        ++count;
      }
    }
    if (seen) continue;
    if (!first) out->push_back(',');
    first = false;
    text::AppendJsonString(out, h.name);
    out->push_back(':');
    if (count == 1) {
      append_value(h);
    } else {
      out->push_back('[');
      bool first_value = true;
      for (size_t j = i; j < headers.size(); ++j) {
        if (headers[j].name != h.name) continue;
        if (!first_value) out->push_back(',');
        first_value = false;
        append_value(headers[j]);
      }
      out->push_back(']');
    }
  }
  out->push_back('}');
}

}  // namespace

bool ValueConverter::WriteFailed(const Status& st, size_t c, RecordError& error) {
  return error.Fatal(st.WithPrefix("column '" + columns_[c].name + "': "));
}

// --- JSON values
// ------------------------------------------------------------------------

bool ValueConverter::EpochElement(simdjson::dom::element e, size_t c,
                                  RecordError& error) {
  const TimeUnit unit = columns_[c].unit;
  int64_t us = 0;
  const bool in_range = e.type() == simdjson::dom::element_type::INT64
                            ? EpochToMicros(e.get_int64().value_unsafe(), unit, &us)
                            : EpochToMicros(e.get_double().value_unsafe(), unit, &us);
  if (!in_range) {
    return error.BadRecord(
        kErrorTypeMismatch,
        "schema mismatch: kafka value timestamp cast failed: epoch number out of range",
        static_cast<int>(c));
  }
  writers_[c].AppendInt64(us);
  return true;
}

bool ValueConverter::DaysElement(int64_t days, size_t c, RecordError& error) {
  if (days < std::numeric_limits<int32_t>::min() ||
      days > std::numeric_limits<int32_t>::max()) {
    return error.BadRecord(
        kErrorTypeMismatch,
        "schema mismatch: kafka value date cast failed: day number out of range",
        static_cast<int>(c));
  }
  writers_[c].AppendDate(static_cast<int32_t>(days));
  return true;
}

bool ValueConverter::JsonText(simdjson::dom::element e, size_t c, RecordError& error) {
  scratch_.clear();
  AppendCompactJson(&scratch_, e);
  return Text(scratch_, c, error);
}

// --- text
// ---------------------------------------------------------------------------------

bool ValueConverter::Text(std::string_view s, size_t c, RecordError& error) {
  const PlannedColumn& col = columns_[c];
  ColumnWriter& w = writers_[c];
  const int column = static_cast<int>(c);
  std::string_view reason;
  switch (col.type) {
    case TypeId::kUtf8:
    case TypeId::kBinary:
      return Bytes(c, s, error);
    case TypeId::kInt64: {
      int64_t v = 0;
      if (!text::ParseInt64(s, &v, &reason)) {
        return error.BadRecord(
            kErrorTypeMismatch,
            "schema mismatch: kafka value int64 cast failed: " + std::string(reason),
            column);
      }
      w.AppendInt64(v);
      return true;
    }
    case TypeId::kFloat64: {
      double v = 0;
      if (!text::ParseFloat64(s, &v, &reason)) {
        return error.BadRecord(
            kErrorTypeMismatch,
            "schema mismatch: kafka value float64 cast failed: " + std::string(reason),
            column);
      }
      w.AppendDouble(v);
      return true;
    }
    case TypeId::kBool: {
      bool v = false;
      if (!text::ParseBool(s, &v, &reason)) {
        return error.BadRecord(
            kErrorTypeMismatch,
            "schema mismatch: kafka value bool cast failed: " + std::string(reason),
            column);
      }
      w.AppendBool(v);
      return true;
    }
    case TypeId::kTimestamp: {
      if (auto us = text::ParseTimestampMicros(s)) {
        w.AppendInt64(*us);
        return true;
      }
      int64_t epoch = 0, us = 0;
      if (text::ParseInt64(s, &epoch, &reason) && EpochToMicros(epoch, col.unit, &us)) {
        w.AppendInt64(us);
        return true;
      }
      return error.BadRecord(
          kErrorTypeMismatch,
          "schema mismatch: kafka value timestamp cast failed: expected an RFC 3339 "
          "timestamp or an epoch number, got '" +
              Truncated(s) + "'",
          column);
    }
    case TypeId::kDate: {
      if (auto days = text::ParseDateDays(s)) {
        w.AppendDate(*days);
        return true;
      }
      return error.BadRecord(
          kErrorTypeMismatch,
          "schema mismatch: kafka value date cast failed: expected YYYY-MM-DD, got '" +
              Truncated(s) + "'",
          column);
    }
  }
  return true;
}

// --- record attributes
// ------------------------------------------------------------------

bool ValueConverter::Integer(int64_t v, size_t c, RecordError& error) {
  ColumnWriter& w = writers_[c];
  switch (columns_[c].type) {
    case TypeId::kFloat64:
      w.AppendDouble(static_cast<double>(v));
      return true;
    case TypeId::kUtf8:
      scratch_.clear();
      text::AppendInt64(&scratch_, v);
      return Bytes(c, scratch_, error);
    case TypeId::kTimestamp:
      w.AppendInt64(v * 1000);  // _kafka_timestamp_ms into a Timestamp column
      return true;
    default:
      w.AppendInt64(v);
      return true;
  }
}

bool ValueConverter::Attribute(std::string_view v, size_t c, RecordError& error) {
  if (columns_[c].type == TypeId::kUtf8 && !text::IsValidUtf8(v)) {
    scratch_.clear();
    text::AppendUtf8Lossy(&scratch_, v);
    return Bytes(c, scratch_, error);
  }
  return Bytes(c, v, error);
}

bool ValueConverter::Metadata(const RecordView& r, size_t c, RecordError& error) {
  const PlannedColumn& col = columns_[c];
  switch (col.source) {
    case ColumnSource::kTopic:
      return Attribute(r.topic, c, error);
    case ColumnSource::kPartition:
      return Integer(r.partition, c, error);
    case ColumnSource::kOffset:
      return Integer(r.offset, c, error);
    case ColumnSource::kTimestampMs:
      return r.timestamp_ms ? Integer(*r.timestamp_ms, c, error) : Null(c, error);
    case ColumnSource::kTimestamp:
      if (!r.timestamp_ms) return Null(c, error);
      writers_[c].AppendInt64(*r.timestamp_ms * 1000);
      return true;
    case ColumnSource::kTimestampType:
      return r.timestamp_type == TimestampType::kNotAvailable
                 ? Null(c, error)
                 : Attribute(TimestampTypeName(r.timestamp_type), c, error);
    case ColumnSource::kKey:
    case ColumnSource::kKeyBytes:
      return r.key ? Attribute(*r.key, c, error) : Null(c, error);
    case ColumnSource::kValue:
    case ColumnSource::kValueBytes:
      if (!r.value) return Null(c, error);
      if (strict_payload_ && col.type == TypeId::kUtf8 && !text::IsValidUtf8(*r.value)) {
        return error.BadRecord(kErrorInvalidUtf8,
                               "payload is not valid UTF-8 (byte " +
                                   std::to_string(text::FirstInvalidUtf8(*r.value)) + ")",
                               static_cast<int>(c));
      }
      return Attribute(*r.value, c, error);
    case ColumnSource::kHeaders:
      if (r.headers.empty()) return Null(c, error);
      HeadersJson(r.headers, &scratch_);
      return Bytes(c, scratch_, error);
    case ColumnSource::kHeader: {
      const HeaderView* last = nullptr;
      for (const HeaderView& h : r.headers) {
        if (h.name == col.header_name) last = &h;
      }
      return (last != nullptr && last->value) ? Attribute(*last->value, c, error)
                                              : Null(c, error);
    }
    case ColumnSource::kPayload:
      break;
  }
  return Null(c, error);
}

}  // namespace kelt::load
