// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Test helper shared by the sink tests: one record batch with a column of every Arrow
// type a decoded Avro (or Protobuf) payload can carry, nulls at every level, an empty
// list and map, and the `_kafka_*` columns. Four rows, offsets 0..3 of partition 0 of
// topic "t". The values each sink must land are spelled out in the sink's test.
#pragma once

#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include "kelt/sink.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kelt::testing {

inline std::shared_ptr<arrow::Array> ColumnFromJson(
    const std::shared_ptr<arrow::DataType>& type, const std::string& json) {
  auto a = arrow::json::ArrayFromJSONString(type, json);
  EXPECT_TRUE(a.ok()) << type->ToString() << ": " << a.status().ToString();
  return a.ok() ? *a : nullptr;
}

/// The dense union of the batch: branch "i" (code 0) int32, branch "s" (code 1) utf8.
inline std::shared_ptr<arrow::DataType> TestUnionType() {
  return arrow::dense_union(
      {arrow::field("i", arrow::int32()), arrow::field("s", arrow::utf8())}, {0, 1});
}

/// The batch (see the top of the file). Column by column, rows 0..3:
///   i32       1, -2147483648, null, 2147483647
///   f32       1.5, -0.25, null, 1e30
///   dec       decimal128(10,2): 12345678.90, -0.05, null, 0.00
///   dec256    decimal256(50,10): 1234567890123456789012345678901234567890.0123456789,
///             -1.5000000000, null, 0.0000000000
///   dec256s   decimal256(20,3): 12345678901234567.891, -0.001, null, 0.000
///   d         date32: 1970-01-01, 2022-01-08, null, 1969-12-31
///   t32       time32[ms]: 00:00:00, 12:34:56.789, null, 23:59:59.999
///   t64       time64[us]: 00:00:00, 12:34:56.789012, null, 23:59:59.999999
///   ts_ms_utc / ts_us_utc / ts_ns_utc   timestamp[unit, UTC]
///   ts_ms / ts_us / ts_ns               timestamp[unit], no zone
///             each: 1970-01-01 00:00:00, 2023-11-14 22:13:20.123456789 (cut to the
///             unit), null, 1969-12-31 23:59:59.999 (ms; -1 unit otherwise)
///   fsb       fixed_size_binary(4): "abcd", "wxyz", null, "0123"
///   bin       binary: "", "hi", null, "x\"y"
///   s         utf8: "héllo", "", null, "q\" b\\ t\t"
///   b         bool: true, false, null, true
///   nul       null ×4
///   e         dictionary<int32, utf8>: RED, GREEN, null, RED
///   st        struct<a: int32, inner: struct<x: utf8, y: double>>:
///             {1, {"p", 1.5}}, {null, null}, null, {3, {null, -2}}
///   lst       list<int64>: [1,2,3], [], null, [null,4]
///   lst_st    list<struct<k: utf8, v: int32>>: [{"a",1}], [], null, [null, {null,2}]
///   m         map<utf8, int32>: {a:1, b:null}, {}, null, {z:26}
///   u         dense_union<i: int32, s: utf8>: i=5, s="five", null (i=null), s="x"
inline std::shared_ptr<arrow::RecordBatch> AllTypesBatch() {
  using arrow::field;
  std::vector<std::pair<std::shared_ptr<arrow::Field>, std::string>> cols = {
      {field("i32", arrow::int32()), "[1, -2147483648, null, 2147483647]"},
      {field("f32", arrow::float32()), "[1.5, -0.25, null, 1e30]"},
      {field("dec", arrow::decimal128(10, 2)),
       R"(["12345678.90", "-0.05", null, "0.00"])"},
      {field("dec256", arrow::decimal256(50, 10)),
       R"(["1234567890123456789012345678901234567890.0123456789", "-1.5000000000", null,
           "0.0000000000"])"},
      {field("dec256s", arrow::decimal256(20, 3)),
       R"(["12345678901234567.891", "-0.001", null, "0.000"])"},
      {field("d", arrow::date32()), "[0, 19000, null, -1]"},
      {field("t32", arrow::time32(arrow::TimeUnit::MILLI)),
       "[0, 45296789, null, 86399999]"},
      {field("t64", arrow::time64(arrow::TimeUnit::MICRO)),
       "[0, 45296789012, null, 86399999999]"},
      {field("ts_ms_utc", arrow::timestamp(arrow::TimeUnit::MILLI, "UTC")),
       "[0, 1700000000123, null, -1]"},
      {field("ts_us_utc", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
       "[0, 1700000000123456, null, -1]"},
      {field("ts_ns_utc", arrow::timestamp(arrow::TimeUnit::NANO, "UTC")),
       "[0, 1700000000123456789, null, -1]"},
      {field("ts_ms", arrow::timestamp(arrow::TimeUnit::MILLI)),
       "[0, 1700000000123, null, -1]"},
      {field("ts_us", arrow::timestamp(arrow::TimeUnit::MICRO)),
       "[0, 1700000000123456, null, -1]"},
      {field("ts_ns", arrow::timestamp(arrow::TimeUnit::NANO)),
       "[0, 1700000000123456789, null, -1]"},
      {field("fsb", arrow::fixed_size_binary(4)), R"(["abcd", "wxyz", null, "0123"])"},
      {field("bin", arrow::binary()), R"(["", "hi", null, "x\"y"])"},
      {field("s", arrow::utf8()), R"(["héllo", "", null, "q\" b\\ t\t"])"},
      {field("b", arrow::boolean()), "[true, false, null, true]"},
      {field("nul", arrow::null()), "[null, null, null, null]"},
      {field("st", arrow::struct_(
                       {field("a", arrow::int32()),
                        field("inner", arrow::struct_({field("x", arrow::utf8()),
                                                       field("y", arrow::float64())}))})),
       R"([{"a": 1, "inner": {"x": "p", "y": 1.5}}, {"a": null, "inner": null}, null,
           {"a": 3, "inner": {"x": null, "y": -2}}])"},
      {field("lst", arrow::list(arrow::int64())), "[[1, 2, 3], [], null, [null, 4]]"},
      {field("lst_st", arrow::list(arrow::struct_(
                           {field("k", arrow::utf8()), field("v", arrow::int32())}))),
       R"([[{"k": "a", "v": 1}], [], null, [null, {"k": null, "v": 2}]])"},
      {field("m", arrow::map(arrow::utf8(), arrow::int32())),
       R"([[["a", 1], ["b", null]], [], null, [["z", 26]]])"},
      {field("u", TestUnionType()), R"([[0, 5], [1, "five"], [0, null], [1, "x"]])"},
      {field("_kafka_topic", arrow::utf8()), R"(["t", "t", "t", "t"])"},
      {field("_kafka_partition", arrow::int64()), "[0, 0, 0, 0]"},
      {field("_kafka_offset", arrow::int64()), "[0, 1, 2, 3]"},
  };
  arrow::FieldVector fields;
  arrow::ArrayVector arrays;
  for (auto& [f, json] : cols) {
    fields.push_back(f);
    arrays.push_back(ColumnFromJson(f->type(), json));
  }
  // Insert the enum (a dictionary array needs its own constructor) after "nul".
  auto enum_type = arrow::dictionary(arrow::int32(), arrow::utf8());
  auto e = arrow::json::DictArrayFromJSONString(enum_type, "[0, 1, null, 0]",
                                                R"(["RED", "GREEN"])");
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  auto at = std::find_if(fields.begin(), fields.end(),
                         [](const auto& f) { return f->name() == "nul"; }) -
            fields.begin() + 1;
  fields.insert(fields.begin() + at, field("e", enum_type));
  arrays.insert(arrays.begin() + at, e.ok() ? *e : nullptr);
  return arrow::RecordBatch::Make(arrow::schema(fields), 4, arrays);
}

/// A window of AllTypesBatch(): partition 0 of "t", offsets 0..3.
inline SinkWindow AllTypesWindow() {
  SinkWindow w;
  w.batch = AllTypesBatch();
  w.spans.push_back(PartitionSpan{TopicPartition{"t", 0}, 0, 3, 4});
  return w;
}

}  // namespace kelt::testing
