// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Test helper shared by the sinks' Evolve tests: landing schema A (id int64, name utf8
// and the `_kafka_*` columns), schema B (A plus nullable `coupon` utf8 and `extra`
// struct<a: int64>, its columns in another order), and windows of each: one row per
// offset of partition 0 (and 1) of topic "t", id = offset, name "n<offset>", coupon
// "c<offset>", extra {"a": offset * 10}.
#pragma once

#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "kelt/sink.h"

namespace kelt::testing {

inline std::shared_ptr<arrow::Schema> EvolveSchemaA() {
  return arrow::schema({arrow::field("id", arrow::int64()),
                        arrow::field("name", arrow::utf8()),
                        arrow::field("_kafka_topic", arrow::utf8()),
                        arrow::field("_kafka_partition", arrow::int64()),
                        arrow::field("_kafka_offset", arrow::int64())});
}

inline std::shared_ptr<arrow::DataType> EvolveExtraType() {
  return arrow::struct_({arrow::field("a", arrow::int64())});
}

/// B: A's columns (another order) plus `coupon` and `extra` (nullable).
inline std::shared_ptr<arrow::Schema> EvolveSchemaB() {
  return arrow::schema(
      {arrow::field("id", arrow::int64()), arrow::field("coupon", arrow::utf8()),
       arrow::field("name", arrow::utf8()), arrow::field("_kafka_topic", arrow::utf8()),
       arrow::field("_kafka_partition", arrow::int64()),
       arrow::field("_kafka_offset", arrow::int64()),
       arrow::field("extra", EvolveExtraType())});
}

/// A window of `schema` (A or B) with offsets [first, last] of each of `partitions`.
inline SinkWindow EvolveWindow(const std::shared_ptr<arrow::Schema>& schema,
                               int64_t first, int64_t last,
                               const std::vector<int32_t>& partitions = {0}) {
  std::vector<std::string> json(schema->num_fields(), "[");
  SinkWindow w;
  int64_t rows = 0;
  for (int32_t p : partitions) {
    for (int64_t o = first; o <= last; ++o) {
      const std::string sep = rows == 0 ? "" : ",";
      for (int c = 0; c < schema->num_fields(); ++c) {
        const std::string& name = schema->field(c)->name();
        std::string v;
        if (name == "id" || name == "_kafka_offset") v = std::to_string(o);
        if (name == "name") v = "\"n" + std::to_string(o) + "\"";
        if (name == "coupon") v = "\"c" + std::to_string(o) + "\"";
        if (name == "extra") v = "{\"a\":" + std::to_string(o * 10) + "}";
        if (name == "_kafka_topic") v = "\"t\"";
        if (name == "_kafka_partition") v = std::to_string(p);
        json[c] += sep + v;
      }
      ++rows;
    }
    w.spans.push_back(PartitionSpan{{"t", p}, first, last, last - first + 1});
  }
  arrow::ArrayVector columns;
  for (int c = 0; c < schema->num_fields(); ++c) {
    auto a = arrow::json::ArrayFromJSONString(schema->field(c)->type(), json[c] + "]");
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    if (!a.ok()) return w;
    columns.push_back(*a);
  }
  w.batch = arrow::RecordBatch::Make(schema, rows, std::move(columns));
  return w;
}

/// B with `name` made int64: a type change Evolve must refuse.
inline std::shared_ptr<arrow::Schema> EvolveSchemaNameChanged() {
  auto s = EvolveSchemaB();
  return *s->SetField(s->GetFieldIndex("name"), arrow::field("name", arrow::int64()));
}

}  // namespace kelt::testing
