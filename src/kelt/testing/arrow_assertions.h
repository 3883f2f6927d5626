// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// GoogleTest checks of Arrow data (tests only): ExpectColumn(batch, name, json) — the
// batch has a column `name` equal to `json`, Arrow's JSON form of the column's type
// (arrow/json/from_string.h: `[1, null]`, `["a"]`, `[{"f": 1}]`, …). On failure it
// prints both arrays. ExpectCellHas(batch, name, row, text): the string or binary
// column `name` holds `text` somewhere in row `row`. Header-only; Arrow and GoogleTest
// are all it needs.
#pragma once

#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <string>

namespace kelt::testing {

inline void ExpectColumn(const arrow::RecordBatch& batch, const std::string& name,
                         const std::string& json) {
  auto column = batch.GetColumnByName(name);
  ASSERT_NE(column, nullptr) << name << " in " << batch.schema()->ToString();
  auto expected = arrow::json::ArrayFromJSONString(column->type(), json);
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();
  EXPECT_TRUE(column->Equals(**expected)) << name << ":\n  got " << column->ToString()
                                          << "\n  expected " << (*expected)->ToString();
}

inline void ExpectCellHas(const arrow::RecordBatch& batch, const std::string& name,
                          int64_t row, const std::string& text) {
  // A StringArray is a BinaryArray.
  auto column =
      std::dynamic_pointer_cast<arrow::BinaryArray>(batch.GetColumnByName(name));
  ASSERT_NE(column, nullptr) << name << " (string or binary) in "
                             << batch.schema()->ToString();
  ASSERT_LT(row, column->length()) << name;
  const std::string cell(column->GetView(row));
  EXPECT_NE(cell.find(text), std::string::npos)
      << name << "[" << row << "] = \"" << cell << "\" lacks \"" << text << "\"";
}

}  // namespace kelt::testing
