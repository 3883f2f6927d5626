// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/load/dom_reader.h"

#include <algorithm>

#include "kelt/common/text.h"
#include "kelt/load.h"

namespace kelt::load {

// --- DomPayload
// -------------------------------------------------------------------------

bool DomPayload::Classify(std::string_view payload, RecordError& error) {
  simdjson::error_code err = Parse(payload);
  if (err == simdjson::UTF8_ERROR && !strict_payload_) {
    // RDP sees broker bytes through a lossy UTF-8 conversion: do the same, then parse.
    lossy_payload_.clear();
    text::AppendUtf8Lossy(&lossy_payload_, payload);
    payload = lossy_payload_;
    err = Parse(payload);
  }
  if (!err && doc_.type() == simdjson::dom::element_type::OBJECT) {
    mode_ = PayloadMode::kObject;
    return true;
  }
  if (single_column_ >= 0) {
    // Rule 3: the raw payload text, converted to the single payload field's type.
    if (err == simdjson::UTF8_ERROR || !text::IsValidUtf8(payload)) {
      if (strict_payload_) {
        return error.BadRecord(kErrorInvalidUtf8,
                               "payload is not valid UTF-8 (byte " +
                                   std::to_string(text::FirstInvalidUtf8(payload)) + ")",
                               single_column_);
      }
      lossy_payload_.clear();
      text::AppendUtf8Lossy(&lossy_payload_, payload);
      payload = lossy_payload_;
    }
    raw_ = payload;
    mode_ = PayloadMode::kRawText;
    return true;
  }
  if (strict_payload_) {
    return error.BadRecord(
        kErrorMalformedPayload,
        err ? std::string("payload is not valid JSON: ") + simdjson::error_message(err)
            : "payload is not a JSON object",
        -1);
  }
  mode_ = PayloadMode::kAllNull;  // Rule 4.
  return true;
}

simdjson::error_code DomPayload::Parse(std::string_view payload) {
  auto result = parser_.parse(buffer_.Padded(payload), payload.size(), false);
  if (result.error()) return result.error();
  doc_ = result.value_unsafe();
  return simdjson::SUCCESS;
}

// --- DomFastReader
// ----------------------------------------------------------------------

bool DomFastReader::Write(const RecordView& r, simdjson::dom::object object, int64_t row,
                          RecordError& error) {
  if (!convert_.MetadataColumns(r, error)) return false;
  row_ = row;
  ++generation_;
  if (!Walk(plan_.paths(), object, error)) return false;
  const std::vector<int>& payload_columns = plan_.payload_columns();
  for (size_t p = 0; p < payload_columns.size(); ++p) {
    if (written_[p] != generation_ &&
        !convert_.Null(static_cast<size_t>(payload_columns[p]), error)) {
      return false;
    }
  }
  return true;
}

bool DomFastReader::Walk(PathNode& node, simdjson::dom::object obj, RecordError& error) {
  const std::vector<int>& payload_columns = plan_.payload_columns();
  size_t pos = 0;
  for (simdjson::dom::key_value_pair kv : obj) {
    PathNode* child = node.Find(kv.key, pos++);
    if (child == nullptr) continue;
    for (int p : child->payload_slots) {
      const auto slot = static_cast<size_t>(p);
      const auto c = static_cast<size_t>(payload_columns[slot]);
      if (written_[slot] == generation_) convert_.writer(c).Rewind(row_);
      if (!convert_.Element(kv.value, c, error)) return false;
      written_[slot] = generation_;
    }
    if (child->has_children && kv.value.type() == simdjson::dom::element_type::OBJECT) {
      if (!Walk(*child, kv.value.get_object().value_unsafe(), error)) return false;
    }
  }
  return true;
}

// --- DomExactReader
// ---------------------------------------------------------------------

bool DomExactReader::Write(const RecordView& r, PayloadMode mode,
                           const DomPayload& payload, RecordError& error) {
  if (mode == PayloadMode::kObject) {
    std::fill(slot_set_.begin(), slot_set_.end(), 0);
    Collect(plan_.paths(), payload.object());
  }
  const std::vector<PlannedColumn>& columns = plan_.columns();
  for (size_t c = 0; c < columns.size(); ++c) {
    const PlannedColumn& col = columns[c];
    bool ok;
    if (col.source != ColumnSource::kPayload) {
      ok = convert_.Metadata(r, c, error);
    } else if (mode == PayloadMode::kObject) {
      const auto p = static_cast<size_t>(col.payload_slot);
      ok = slot_set_[p] ? convert_.Element(slots_[p], c, error) : convert_.Null(c, error);
    } else if (mode == PayloadMode::kRawText) {
      ok = convert_.Text(payload.raw_text(), c, error);
    } else {
      ok = convert_.Null(c, error);
    }
    if (!ok) return false;
  }
  return true;
}

void DomExactReader::Collect(PathNode& node, simdjson::dom::object obj) {
  size_t pos = 0;
  for (simdjson::dom::key_value_pair kv : obj) {
    PathNode* child = node.Find(kv.key, pos++);
    if (child == nullptr) continue;
    for (int p : child->payload_slots) {
      slots_[static_cast<size_t>(p)] = kv.value;
      slot_set_[static_cast<size_t>(p)] = 1;
    }
    if (!child->children.empty() &&
        kv.value.type() == simdjson::dom::element_type::OBJECT) {
      Collect(*child, kv.value.get_object().value_unsafe());
    }
  }
}

}  // namespace kelt::load
