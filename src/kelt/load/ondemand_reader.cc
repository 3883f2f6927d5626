// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/load/ondemand_reader.h"

#include <cmath>
#include <limits>
#include <utility>

#include "kelt/common/text.h"

namespace kelt::load {

bool OnDemandReader::Write(const RecordView& r, std::string_view payload, int64_t row,
                           RecordError& error) {
  const char* input = buffer_.Padded(payload);
  simdjson::ondemand::document doc;
  if (parser_.iterate(input, payload.size(), payload.size() + simdjson::SIMDJSON_PADDING)
          .get(doc) != simdjson::SUCCESS) {
    return false;
  }
  simdjson::ondemand::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) return false;
  if (!convert_.MetadataColumns(r, error)) return false;
  row_ = row;
  ++generation_;
  written_count_ = 0;
  if (!Walk(plan_.paths(), obj, input + payload.size(), error)) return false;
  // The document must end with the object: trailing content goes to the DOM path,
  // which rejects it. (simdjson 3.0 has no document::at_end().)
  const char* rest = nullptr;
  if (doc.current_location().get(rest) != simdjson::OUT_OF_BOUNDS) return false;
  const std::vector<int>& payload_columns = plan_.payload_columns();
  if (written_count_ == payload_columns.size()) return true;
  for (size_t p = 0; p < payload_columns.size(); ++p) {
    if (written_[p] != generation_ &&
        !convert_.Null(static_cast<size_t>(payload_columns[p]), error)) {
      return false;
    }
  }
  return true;
}

// Convert one value into column c; false declines the record, or reports it bad or
// fatal (the DOM path reports conversion errors with RDP's texts).
inline bool OnDemandReader::Value(simdjson::ondemand::value value, size_t c,
                                  RecordError& error) {
  using simdjson::ondemand::json_type;
  const TypeId type = convert_.column(c).type;
  json_type json;
  if (value.type().get(json) != simdjson::SUCCESS) return false;
  switch (json) {
    case json_type::null: {
      bool is_null = false;
      if (value.is_null().get(is_null) != simdjson::SUCCESS || !is_null) return false;
      return convert_.Null(c, error);
    }
    case json_type::string: {
      std::string_view s;
      if (value.get_string().get(s) != simdjson::SUCCESS) return false;
      if (type == TypeId::kUtf8 || type == TypeId::kBinary) {
        return convert_.Bytes(c, s, error);
      }
      // The converter's first timestamp rule, without its dispatch.
      if (type == TypeId::kTimestamp) {
        if (auto us = text::ParseTimestampMicros(s)) {
          convert_.writer(c).AppendInt64(*us);
          return true;
        }
      }
      return convert_.Text(s, c, error);
    }
    case json_type::boolean: {
      bool b;
      if (type != TypeId::kBool || value.get_bool().get(b) != simdjson::SUCCESS) {
        return false;
      }
      convert_.writer(c).AppendBool(b);
      return true;
    }
    case json_type::number:
      return Number(value, c);
    default:
      return false;  // object/array values convert through their compact JSON text
  }
}

// get_double() also reads an integer beyond 64 bits, which the DOM parser refuses (the
// document is then malformed; found by load_fuzzer). get_number() refuses it too but
// reads some long decimals (26 digits and a fraction) as 0, so a number read as a large
// double is checked instead: an integer token must fit in uint64 or int64.
inline bool DomTakes(simdjson::ondemand::value& value, double d) {
  if (std::fabs(d) < 9.2e18) return true;
  if (value.raw_json_token().find_first_of(".eE") != std::string_view::npos) return true;
  uint64_t u;
  int64_t i;
  return value.get_uint64().get(u) == simdjson::SUCCESS ||
         value.get_int64().get(i) == simdjson::SUCCESS;
}

// get_int64() succeeds exactly for the numbers the DOM parser stores as INT64 (at most
// 19 digits, no fraction or exponent, in range), so integer columns need no
// get_number_type() scan first. False declines the record.
inline bool OnDemandReader::Number(simdjson::ondemand::value value, size_t c) {
  using simdjson::ondemand::number_type;
  const PlannedColumn& col = convert_.column(c);
  ColumnWriter& w = convert_.writer(c);
  switch (col.type) {
    case TypeId::kInt64: {
      int64_t v;
      if (value.get_int64().get(v) != simdjson::SUCCESS) return false;
      w.AppendInt64(v);
      return true;
    }
    case TypeId::kFloat64: {
      double d;
      if (value.get_double().get(d) != simdjson::SUCCESS || !DomTakes(value, d)) {
        return false;
      }
      w.AppendDouble(d);
      return true;
    }
    case TypeId::kTimestamp: {
      number_type nt;
      if (value.get_number_type().get(nt) != simdjson::SUCCESS) return false;
      int64_t us = 0;
      if (nt == number_type::signed_integer) {
        int64_t v;
        if (value.get_int64().get(v) != simdjson::SUCCESS ||
            !EpochToMicros(v, col.unit, &us)) {
          return false;
        }
      } else {
        double d;
        if (value.get_double().get(d) != simdjson::SUCCESS || !DomTakes(value, d) ||
            !EpochToMicros(d, col.unit, &us)) {
          return false;
        }
      }
      w.AppendInt64(us);
      return true;
    }
    case TypeId::kDate: {
      int64_t v;
      if (value.get_int64().get(v) != simdjson::SUCCESS ||
          v < std::numeric_limits<int32_t>::min() ||
          v > std::numeric_limits<int32_t>::max()) {
        return false;
      }
      w.AppendDate(static_cast<int32_t>(v));
      return true;
    }
    default:
      return false;  // a number as text: the DOM path re-prints it as RDP does
  }
}

bool OnDemandReader::Walk(PathNode& node, simdjson::ondemand::object obj, const char* end,
                          RecordError& error) {
  size_t pos = 0;
  for (auto field_result : obj) {
    simdjson::ondemand::field field;
    if (std::move(field_result).get(field) != simdjson::SUCCESS) return false;
    PathNode* child;
    if (!node.FindPredictedRaw(field.key().raw(), end, pos, &child)) {
      std::string_view key;
      if (field.unescaped_key().get(key) != simdjson::SUCCESS) return false;
      child = node.FindAndPredict(key, pos);
    }
    ++pos;
    simdjson::ondemand::value& value = field.value();
    if (child == nullptr) {
      if (!Skip(value)) return false;
      continue;
    }
    if (child->column >= 0) {
      const auto slot = static_cast<size_t>(child->slot);
      const auto c = static_cast<size_t>(child->column);
      if (written_[slot] == generation_) {
        convert_.writer(c).Rewind(row_);  // last one wins
      } else {
        written_[slot] = generation_;
        ++written_count_;
      }
      if (!Value(value, c, error)) return false;
      continue;
    }
    simdjson::ondemand::json_type type;
    if (value.type().get(type) != simdjson::SUCCESS) return false;
    if (type == simdjson::ondemand::json_type::object) {
      simdjson::ondemand::object inner;
      if (value.get_object().get(inner) != simdjson::SUCCESS) return false;
      if (!Walk(*child, inner, end, error)) return false;
    } else if (!Skip(value)) {
      return false;
    }
  }
  return true;
}

bool OnDemandReader::Skip(simdjson::ondemand::value value) {
  using simdjson::ondemand::json_type;
  json_type type;
  if (value.type().get(type) != simdjson::SUCCESS) return false;
  switch (type) {
    case json_type::object: {
      simdjson::ondemand::object obj;
      if (value.get_object().get(obj) != simdjson::SUCCESS) return false;
      for (auto field_result : obj) {
        simdjson::ondemand::field field;
        std::string_view key;
        if (std::move(field_result).get(field) != simdjson::SUCCESS ||
            field.unescaped_key().get(key) != simdjson::SUCCESS || !Skip(field.value())) {
          return false;
        }
      }
      return true;
    }
    case json_type::array: {
      simdjson::ondemand::array arr;
      if (value.get_array().get(arr) != simdjson::SUCCESS) return false;
      for (auto element : arr) {
        simdjson::ondemand::value v;
        if (std::move(element).get(v) != simdjson::SUCCESS || !Skip(v)) return false;
      }
      return true;
    }
    case json_type::number: {
      simdjson::ondemand::number n;
      return value.get_number().get(n) == simdjson::SUCCESS;
    }
    case json_type::string: {
      std::string_view s;
      return value.get_string().get(s) == simdjson::SUCCESS;
    }
    case json_type::boolean: {
      bool b;
      return value.get_bool().get(b) == simdjson::SUCCESS;
    }
    case json_type::null: {
      bool is_null = false;
      return value.is_null().get(is_null) == simdjson::SUCCESS && is_null;
    }
  }
  return false;
}

}  // namespace kelt::load
