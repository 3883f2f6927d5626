// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The DOM readers, the Load step's second and third paths, for every record the
// On-Demand reader (ondemand_reader.h) does not take.
//  - DomPayload parses a payload once with simdjson's DOM parser and decides the RDP rule
//    that applies (RDP_COMPATIBILITY.md §3): an object (rule 2); the raw text for a
//    single payload column (rule 3); all-null payload columns otherwise (rule 4). Broker
//    bytes that are not UTF-8 are seen through a lossy conversion, as RDP sees them;
//    under strict_payload a payload that is not UTF-8 or not an object is a bad record.
//  - DomFastReader writes an object payload's values while walking the document once
//    (columns are independent, so order does not matter; a repeated key rewinds its
//    column and writes again). When a value does not convert it stops at that value,
//    which need not be the column RDP would name, so the loader redoes the record on:
//  - DomExactReader, which converts the columns in schema order, so that the first
//    failing column in schema order and the last duplicate key decide, exactly as RDP
//    does. It takes every record the other readers do not, and its bad records are the
//    ones the policy sees.
// All write through the value converter (value_converter.h). Internal header.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/load/column_plan.h"
#include "kelt/load/payload_buffer.h"
#include "kelt/load/record_error.h"
#include "kelt/load/value_converter.h"
#include "kelt/record.h"

namespace kelt::load {

/// How the payload columns of a record are filled.
enum class PayloadMode : uint8_t {
  kNone,     // the schema has no payload columns
  kObject,   // rule 2: by key
  kRawText,  // rule 3: the single payload column converts the payload text
  kAllNull,  // rule 4, and tombstones
};

class DomPayload {
 public:
  /// `plan` and `buffer` must outlive it.
  DomPayload(const ColumnPlan& plan, bool strict_payload, PayloadBuffer& buffer)
      : single_column_(plan.payload_columns().size() == 1 ? plan.payload_columns().front()
                                                          : -1),
        strict_payload_(strict_payload),
        buffer_(buffer) {}

  /// Parse `payload` and decide its mode; false for a bad record (strict_payload).
  bool Classify(std::string_view payload, RecordError& error);

  PayloadMode mode() const { return mode_; }
  /// The parsed object (kObject), valid until the next Classify().
  simdjson::dom::object object() const { return doc_.get_object().value_unsafe(); }
  /// The payload text, valid UTF-8 (kRawText), valid until the next Classify().
  std::string_view raw_text() const { return raw_; }

 private:
  simdjson::error_code Parse(std::string_view payload);

  int single_column_;  // the payload column when there is exactly one, else -1
  bool strict_payload_;
  PayloadBuffer& buffer_;
  simdjson::dom::parser parser_;
  simdjson::dom::element doc_;
  std::string lossy_payload_;
  PayloadMode mode_ = PayloadMode::kNone;
  std::string_view raw_;
};

class DomFastReader {
 public:
  /// `plan` and `convert` must outlive the reader.
  DomFastReader(ColumnPlan& plan, ValueConverter& convert)
      : plan_(plan), convert_(convert), written_(plan.payload_columns().size()) {}

  /// Write record `r`, whose payload is `object`, as row `row`. False when a value does
  /// not convert (a bad record the exact reader redoes) or on a fatal failure (see
  /// `error`); the caller rewinds the columns.
  bool Write(const RecordView& r, simdjson::dom::object object, int64_t row,
             RecordError& error);

 private:
  bool Walk(PathNode& node, simdjson::dom::object obj, RecordError& error);

  ColumnPlan& plan_;
  ValueConverter& convert_;
  std::vector<uint64_t> written_;  // generation_ when a payload slot was written
  uint64_t generation_ = 0;        // one per record
  int64_t row_ = 0;                // the row being written
};

class DomExactReader {
 public:
  /// `plan` and `convert` must outlive the reader.
  DomExactReader(ColumnPlan& plan, ValueConverter& convert)
      : plan_(plan),
        convert_(convert),
        slots_(plan.payload_columns().size()),
        slot_set_(plan.payload_columns().size()) {}

  /// Write record `r` in schema order, its payload columns filled by `mode` from
  /// `payload` (classified unless the mode is kNone or kAllNull). False for a bad record
  /// or a fatal failure (see `error`); the caller rewinds the columns.
  bool Write(const RecordView& r, PayloadMode mode, const DomPayload& payload,
             RecordError& error);

 private:
  // Find the value of every payload slot; a duplicate key: the last one wins.
  void Collect(PathNode& node, simdjson::dom::object obj);

  ColumnPlan& plan_;
  ValueConverter& convert_;
  std::vector<simdjson::dom::element> slots_;
  std::vector<uint8_t> slot_set_;
};

}  // namespace kelt::load
