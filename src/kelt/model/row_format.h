// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Arrow cells as text and rows as JSON objects, the way RDP's Kafka sink writes them:
// a row is `{"col":value,…}` in schema order (null → null, numbers, bools, strings;
// non-finite floats → null; kelt types as their Value JSON payloads: RFC 3339 text,
// YYYY-MM-DD, base64), and a cell as text is the string itself, integers in decimal,
// floats as Rust's Display prints them, booleans as true/false. Internal header.
#pragma once

#include <arrow/api.h>

#include <memory>
#include <string>
#include <vector>

#include "kelt/status.h"

namespace kelt::model {

class RowFormatter {
 public:
  /// Bind to one batch; fails for column types kelt does not map.
  static Result<RowFormatter> Make(const arrow::RecordBatch& batch);

  /// Append row `row` as a JSON object.
  void AppendRowJson(int64_t row, std::string* out) const;
  /// Write column `col`'s cell as text; false (and nothing written) when it is null.
  bool CellText(int col, int64_t row, std::string* out) const;

 private:
  struct Column {
    std::shared_ptr<arrow::Array> array;
    std::string json_key;  // "\"name\":"
  };
  std::vector<Column> columns_;
};

}  // namespace kelt::model
