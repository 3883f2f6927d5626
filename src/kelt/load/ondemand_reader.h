// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The On-Demand reader, the Load step's first path. Most records are well-formed
// objects whose values convert without error; for them simdjson's On-Demand API
// converts each value straight from the input, skipping the DOM tape. It walks the
// object once against the column plan's path trie, matching keys in the input text
// against the keys predicted at each position (PathNode::FindPredictedRaw), writes each
// value into its column (a repeated key rewinds its column and writes again: the last
// one wins), and nulls into the payload columns whose key did not appear. Every value
// is consumed (values of keys the schema does not use are validated by walking them),
// and the document must end after the object, so a record passes here only if the DOM
// parser would accept it too.
//
// Anything unusual — not an object, a conversion that fails, a value that would need its
// compact JSON text — declines the record (Write returns false); the loader rewinds the
// columns and redoes it on the DOM readers (dom_reader.h), which decide exactly as RDP
// does. The unit tests and the fuzz target check that both land the same. Used only
// when the plan allows it (ColumnPlan::ondemand_ok). Internal header.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "kelt/load/column_plan.h"
#include "kelt/load/payload_buffer.h"
#include "kelt/load/record_error.h"
#include "kelt/load/value_converter.h"
#include "kelt/record.h"

namespace kelt::load {

class OnDemandReader {
 public:
  /// `plan`, `convert` and `buffer` must outlive the reader.
  OnDemandReader(ColumnPlan& plan, ValueConverter& convert, PayloadBuffer& buffer)
      : plan_(plan),
        convert_(convert),
        buffer_(buffer),
        written_(plan.payload_columns().size()) {}

  /// Write record `r` (whose payload is `payload`) as row `row` of every column. False
  /// when the record is declined, bad or fatal (see `error`); the columns may then
  /// hold part of the row, and the caller rewinds them.
  bool Write(const RecordView& r, std::string_view payload, int64_t row,
             RecordError& error);

 private:
  // `end` is the end of the document (keys are matched in the input text).
  bool Walk(PathNode& node, simdjson::ondemand::object obj, const char* end,
            RecordError& error);
  // Value() and Number() inline into Walk(): a call per value would cost more than
  // most conversions.
  [[gnu::always_inline]] bool Value(simdjson::ondemand::value value, size_t c,
                                    RecordError& error);
  [[gnu::always_inline]] bool Number(simdjson::ondemand::value value, size_t c);
  // Consume a value the schema does not use, validating it completely.
  static bool Skip(simdjson::ondemand::value value);

  ColumnPlan& plan_;
  ValueConverter& convert_;
  PayloadBuffer& buffer_;
  simdjson::ondemand::parser parser_;
  std::vector<uint64_t> written_;  // generation_ when a payload slot was written
  uint64_t generation_ = 0;        // one per record
  size_t written_count_ = 0;       // payload slots written this record
  int64_t row_ = 0;                // the row being written
};

}  // namespace kelt::load
