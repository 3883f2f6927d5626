// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The decoder against Apache Avro C: values are encoded by Avro C (avro_value_write)
// and the Arrow columns kelt decodes from those bytes are compared with the values.
#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include "kelt/avro.h"
#include "kelt/avro/avro_c_testing.h"
#include "kelt/testing/arrow_assertions.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

using avro::testing::EncodeWithAvroC;

Status FromArrow(const arrow::Status& st) {
  return st.ok() ? Status::OK() : Status::Internal(st.ToString());
}

// Encode each value with Avro C under `writer`, decode with kelt as `reader`.
Result<std::shared_ptr<arrow::RecordBatch>> Decode(
    std::string_view writer, std::string_view reader,
    const std::vector<std::string>& values) {
  KELT_ASSIGN_OR_RAISE(AvroSchema w, AvroSchema::Parse(writer));
  KELT_ASSIGN_OR_RAISE(AvroSchema r, AvroSchema::Parse(reader));
  KELT_ASSIGN_OR_RAISE(auto plan, AvroPlan::Compile(w, r));
  KELT_ASSIGN_OR_RAISE(auto decoder, AvroDecoder::Make(plan));
  for (const std::string& v : values) {
    KELT_ASSIGN_OR_RAISE(std::string bytes, EncodeWithAvroC(writer, v));
    KELT_RETURN_NOT_OK(decoder->Append(bytes));
  }
  KELT_ASSIGN_OR_RAISE(auto batch, decoder->Finish());
  KELT_RETURN_NOT_OK(FromArrow(batch->ValidateFull()));
  if (!batch->schema()->Equals(*plan->arrow_schema())) {
    return Status::Internal("batch schema differs from the plan's");
  }
  return batch;
}

Result<std::shared_ptr<arrow::RecordBatch>> Decode(
    std::string_view schema, const std::vector<std::string>& values) {
  return Decode(schema, schema, values);
}

using testing::ExpectColumn;

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

// The failure of appending `body` to a fresh decoder of `schema`.
AvroDecodeError FailureOf(std::string_view schema, std::string_view body,
                          Status* status = nullptr) {
  auto s = AvroSchema::Parse(schema);
  EXPECT_OK(s);
  auto plan = AvroPlan::Compile(*s, *s);
  EXPECT_OK(plan);
  auto decoder = AvroDecoder::Make(*plan);
  EXPECT_OK(decoder);
  Status st = (*decoder)->Append(body);
  EXPECT_NOT_OK(st);
  if (status) *status = st;
  EXPECT_EQ((*decoder)->num_rows(), 0);
  return (*decoder)->last_error();
}

constexpr const char* kPrimitives = R"({"type": "record", "name": "P", "fields": [
  {"name": "n", "type": "null"},
  {"name": "b", "type": "boolean"},
  {"name": "i", "type": "int"},
  {"name": "l", "type": "long"},
  {"name": "f", "type": "float"},
  {"name": "d", "type": "double"},
  {"name": "by", "type": "bytes"},
  {"name": "s", "type": "string"}
]})";

TEST(AvroDecoderTest, Primitives) {
  ASSERT_OK_AND_ASSIGN(
      auto batch,
      Decode(
          kPrimitives,
          {R"({"n": null, "b": true, "i": 1, "l": 2, "f": 1.5, "d": 2.25, "by": "ab", "s": "x"})",
           R"({"n": null, "b": false, "i": -2147483648, "l": -9223372036854775808,
                  "f": -0.0, "d": 1e300, "by": "", "s": "héllo ✓"})",
           R"({"n": null, "b": true, "i": 2147483647, "l": 9223372036854775807,
                  "f": "Infinity", "d": "-Infinity", "by": "\u0000z", "s": ""})"}));
  ASSERT_EQ(batch->num_rows(), 3);
  ExpectColumn(*batch, "n", "[null, null, null]");
  ExpectColumn(*batch, "b", "[true, false, true]");
  ExpectColumn(*batch, "i", "[1, -2147483648, 2147483647]");
  ExpectColumn(*batch, "l", "[2, -9223372036854775808, 9223372036854775807]");
  ExpectColumn(*batch, "f", "[1.5, -0.0, Inf]");
  ExpectColumn(*batch, "d", "[2.25, 1e300, -Inf]");
  ExpectColumn(*batch, "by", R"(["ab", "", "\u0000z"])");
  ExpectColumn(*batch, "s", R"(["x", "héllo ✓", ""])");
}

TEST(AvroDecoderTest, NaNAndBytesAbove127) {
  ASSERT_OK_AND_ASSIGN(auto batch,
                       Decode(R"({"type": "record", "name": "R", "fields": [
                 {"name": "d", "type": "double"}, {"name": "by", "type": "bytes"}]})",
                              {R"({"d": "NaN", "by": "\u00ff\u0080\u0001"})"}));
  auto d = std::static_pointer_cast<arrow::DoubleArray>(batch->column(0));
  EXPECT_TRUE(std::isnan(d->Value(0)));
  auto by = std::static_pointer_cast<arrow::BinaryArray>(batch->column(1));
  EXPECT_EQ(by->GetView(0), Bytes({0xff, 0x80, 0x01}));
}

TEST(AvroDecoderTest, LogicalTypes) {
  constexpr const char* kSchema = R"({"type": "record", "name": "L", "fields": [
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "decf", "type": {"type": "fixed", "name": "F8", "size": 8, "logicalType": "decimal", "precision": 18, "scale": 3}},
    {"name": "date", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "tsn", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
    {"name": "ltm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "ltu", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "ltn", "type": {"type": "long", "logicalType": "local-timestamp-nanos"}},
    {"name": "uuid", "type": {"type": "string", "logicalType": "uuid"}}
  ]})";
  // 12345 = 0x3039 (123.45); -1 = 0xff (-0.01); 1 = 0x01 (0.01 as 0x0000000001: leading
  // sign bytes are allowed). decf: 8-byte big-endian 1234567 = 0x12D687 (1234.567) and
  // -2.
  ASSERT_OK_AND_ASSIGN(
      auto batch,
      Decode(
          kSchema,
          {R"({"dec": "\u0030\u0039", "decf": "\u0000\u0000\u0000\u0000\u0000\u0012\u00d6\u0087",
                  "date": 19000, "tm": 3600000, "tu": 3600000000, "tsm": 1700000000123,
                  "tsu": 1700000000123456, "tsn": 1700000000123456789,
                  "ltm": 1, "ltu": 2, "ltn": 3, "uuid": "3f2504e0-4f89-11d3-9a0c-0305e82c3301"})",
           R"({"dec": "\u00ff", "decf": "\u00ff\u00ff\u00ff\u00ff\u00ff\u00ff\u00ff\u00fe",
                  "date": -1, "tm": 0, "tu": 0, "tsm": -1, "tsu": 0, "tsn": 0,
                  "ltm": 0, "ltu": 0, "ltn": -3, "uuid": ""})",
           R"({"dec": "\u0000\u0000\u0000\u0000\u0001", "decf": "\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000",
                  "date": 0, "tm": 1, "tu": 1, "tsm": 0, "tsu": 0, "tsn": 0,
                  "ltm": 0, "ltu": 0, "ltn": 0, "uuid": "x"})"}));
  ExpectColumn(*batch, "dec", R"(["123.45", "-0.01", "0.01"])");
  ExpectColumn(*batch, "decf", R"(["1234.567", "-0.002", "0.000"])");
  ExpectColumn(*batch, "date", "[19000, -1, 0]");
  ExpectColumn(*batch, "tm", "[3600000, 0, 1]");
  ExpectColumn(*batch, "tu", "[3600000000, 0, 1]");
  ExpectColumn(*batch, "tsm", "[1700000000123, -1, 0]");
  ExpectColumn(*batch, "tsu", "[1700000000123456, 0, 0]");
  ExpectColumn(*batch, "tsn", "[1700000000123456789, 0, 0]");
  ExpectColumn(*batch, "ltm", "[1, 0, 0]");
  ExpectColumn(*batch, "ltu", "[2, 0, 0]");
  ExpectColumn(*batch, "ltn", "[3, -3, 0]");
  ExpectColumn(*batch, "uuid", R"(["3f2504e0-4f89-11d3-9a0c-0305e82c3301", "", "x"])");
  EXPECT_EQ(batch->schema()->field(5)->type()->ToString(), "timestamp[ms, tz=UTC]");
  EXPECT_EQ(batch->schema()->field(8)->type()->ToString(), "timestamp[ms]");
  EXPECT_EQ(batch->schema()->field(10)->type()->ToString(), "timestamp[ns]");
}

TEST(AvroDecoderTest, WideDecimalsLandAsDecimal256) {
  // 10^39 needs 17 bytes: 0x02F050FE938943ACC45F65568000000000.
  ASSERT_OK_AND_ASSIGN(
      auto batch,
      Decode(
          R"({"type": "record", "name": "R", "fields": [{"name": "d", "type":
                 {"type": "bytes", "logicalType": "decimal", "precision": 45, "scale": 1}}]})",
          {R"({"d": "\u0002\u00f0\u0050\u00fe\u0093\u0089\u0043\u00ac\u00c4\u005f\u0065\u0056\u0080\u0000\u0000\u0000\u0000"})",
           R"({"d": "\u00ff"})"}));
  ExpectColumn(*batch, "d", R"(["100000000000000000000000000000000000000.0", "-0.1"])");
}

TEST(AvroDecoderTest, FixedAndEnum) {
  ASSERT_OK_AND_ASSIGN(auto batch,
                       Decode(R"({"type": "record", "name": "R", "fields": [
                 {"name": "fx", "type": {"type": "fixed", "name": "F3", "size": 3}},
                 {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["RED", "GREEN", "BLUE"]}},
                 {"name": "oe", "type": ["null", "E"]}]})",
                              {R"({"fx": "abc", "e": "BLUE", "oe": null})",
                               R"({"fx": "xyz", "e": "RED", "oe": {"E": "GREEN"}})"}));
  ExpectColumn(*batch, "fx", R"(["abc", "xyz"])");
  auto expected = arrow::json::DictArrayFromJSONString(
      arrow::dictionary(arrow::int32(), arrow::utf8()), "[2, 0]",
      R"(["RED", "GREEN", "BLUE"])");
  ASSERT_TRUE(expected.ok());
  EXPECT_TRUE(batch->GetColumnByName("e")->Equals(**expected))
      << batch->GetColumnByName("e")->ToString();
  auto oe = arrow::json::DictArrayFromJSONString(
      arrow::dictionary(arrow::int32(), arrow::utf8()), "[null, 1]",
      R"(["RED", "GREEN", "BLUE"])");
  EXPECT_TRUE(batch->GetColumnByName("oe")->Equals(**oe))
      << batch->GetColumnByName("oe")->ToString();
}

constexpr const char* kNested = R"({"type": "record", "name": "Order", "fields": [
  {"name": "id", "type": "long"},
  {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
    {"name": "name", "type": "string"},
    {"name": "address", "type": ["null", {"type": "record", "name": "Address", "fields": [
      {"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "int"]}]}]}]}},
  {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
    {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"},
    {"name": "tags", "type": {"type": "array", "items": "string"}}]}}},
  {"name": "attrs", "type": {"type": "map", "values": {"type": "array", "items": "long"}}},
  {"name": "maybe_list", "type": ["null", {"type": "array", "items": "int"}]}
]})";

TEST(AvroDecoderTest, NestedRecordsArraysAndMaps) {
  ASSERT_OK_AND_ASSIGN(
      auto batch,
      Decode(
          kNested,
          {R"({"id": 1, "customer": {"name": "Ann", "address": {"Address": {"city": "Oslo", "zip": {"int": 150}}}},
                  "lines": [{"sku": "A", "qty": 2, "tags": ["x", "y"]}, {"sku": "B", "qty": 1, "tags": []}],
                  "attrs": {"k": [1, 2], "e": []}, "maybe_list": {"array": [7]}})",
           R"({"id": 2, "customer": {"name": "Bo", "address": null},
                  "lines": [], "attrs": {}, "maybe_list": null})",
           R"({"id": 3, "customer": {"name": "Cy", "address": {"Address": {"city": "Rome", "zip": null}}},
                  "lines": [{"sku": "C", "qty": 5, "tags": ["z"]}], "attrs": {"a": [3]},
                  "maybe_list": {"array": []}})"}));
  ExpectColumn(*batch, "id", "[1, 2, 3]");
  ExpectColumn(*batch, "customer", R"([
    {"name": "Ann", "address": {"city": "Oslo", "zip": 150}},
    {"name": "Bo", "address": null},
    {"name": "Cy", "address": {"city": "Rome", "zip": null}}])");
  ExpectColumn(*batch, "lines", R"([
    [{"sku": "A", "qty": 2, "tags": ["x", "y"]}, {"sku": "B", "qty": 1, "tags": []}],
    [],
    [{"sku": "C", "qty": 5, "tags": ["z"]}]])");
  ExpectColumn(*batch, "attrs", R"([[["k", [1, 2]], ["e", []]], [], [["a", [3]]]])");
  ExpectColumn(*batch, "maybe_list", "[[7], null, []]");
}

TEST(AvroDecoderTest, GeneralUnionsLandAsDenseUnions) {
  ASSERT_OK_AND_ASSIGN(
      auto batch,
      Decode(R"({"type": "record", "name": "R", "fields": [{"name": "u", "type": [
                 "null", "int", "string", {"type": "record", "name": "P", "fields": [{"name": "x", "type": "int"}]}]}]})",
             {R"({"u": {"int": 5}})", R"({"u": null})", R"({"u": {"string": "s"}})",
              R"({"u": {"P": {"x": 9}}})", R"({"u": {"int": 6}})"}));
  ExpectColumn(*batch, "u", R"([[1, 5], [0, null], [2, "s"], [3, {"x": 9}], [1, 6]])");
}

TEST(AvroDecoderTest, ANonRecordSchemaLandsAsAValueColumn) {
  ASSERT_OK_AND_ASSIGN(auto batch,
                       Decode(R"(["null", "string"])",
                              {R"({"string": "a"})", "null", R"({"string": "b"})"}));
  ExpectColumn(*batch, "value", R"(["a", null, "b"])");
  ASSERT_OK_AND_ASSIGN(auto longs, Decode(R"("long")", {"1", "-5"}));
  ExpectColumn(*longs, "value", "[1, -5]");
}

TEST(AvroDecoderTest, FinishStartsAFreshBatch) {
  ASSERT_OK_AND_ASSIGN(AvroSchema s, AvroSchema::Parse(kNested));
  ASSERT_OK_AND_ASSIGN(auto plan, AvroPlan::Compile(s, s));
  ASSERT_OK_AND_ASSIGN(auto decoder, AvroDecoder::Make(plan));
  ASSERT_OK(decoder->Reserve(10));
  const std::string one = R"({"id": 1, "customer": {"name": "Ann", "address": null},
      "lines": [{"sku": "A", "qty": 2, "tags": ["x"]}], "attrs": {"k": [1]}, "maybe_list": null})";
  ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeWithAvroC(kNested, one));
  ASSERT_OK(decoder->Append(bytes));
  ASSERT_OK_AND_ASSIGN(auto first, decoder->Finish());
  ASSERT_OK_AND_ASSIGN(auto empty, decoder->Finish());
  EXPECT_EQ(empty->num_rows(), 0);
  EXPECT_TRUE(empty->ValidateFull().ok());
  ASSERT_OK(decoder->Append(bytes));
  ASSERT_OK(decoder->Append(bytes));
  ASSERT_OK_AND_ASSIGN(auto second, decoder->Finish());
  ASSERT_TRUE(second->ValidateFull().ok()) << second->ValidateFull().ToString();
  ASSERT_EQ(second->num_rows(), 2);
  EXPECT_TRUE(second->Slice(0, 1)->Equals(*first)) << second->ToString();
  EXPECT_TRUE(first->ValidateFull().ok());  // the first batch's buffers were handed over
}

TEST(AvroDecoderTest, ManyRowsGrowTheColumns) {
  std::vector<std::string> values;
  std::string expected_s = "[", expected_l = "[";
  for (int i = 0; i < 5000; ++i) {
    values.push_back(
        R"({"s": ")" + std::string(i % 7, 'a') + R"(", "l": )" +
        (i % 3 == 0 ? std::string("null") : R"({"long": )" + std::to_string(i) + "}") +
        "}");
    expected_s += std::string(i ? "," : "") + "\"" + std::string(i % 7, 'a') + "\"";
    expected_l += std::string(i ? "," : "") + (i % 3 == 0 ? "null" : std::to_string(i));
  }
  ASSERT_OK_AND_ASSIGN(auto batch, Decode(R"({"type": "record", "name": "R", "fields": [
                                {"name": "s", "type": "string"}, {"name": "l", "type": ["null", "long"]}]})",
                                          values));
  ExpectColumn(*batch, "s", expected_s + "]");
  ExpectColumn(*batch, "l", expected_l + "]");
}

// A fixed of 0 bytes takes no bytes (Avro C cannot write one; the body is empty).
TEST(AvroDecoderTest, FixedOfZeroBytes) {
  ASSERT_OK_AND_ASSIGN(AvroSchema s,
                       AvroSchema::Parse(R"({"type":"fixed","name":"Z","size":0})"));
  ASSERT_OK_AND_ASSIGN(auto plan, AvroPlan::Compile(s, s));
  ASSERT_OK_AND_ASSIGN(auto decoder, AvroDecoder::Make(plan));
  ASSERT_OK(decoder->Append(""));
  ASSERT_OK(decoder->Append(""));
  ASSERT_OK_AND_ASSIGN(auto batch, decoder->Finish());
  ASSERT_TRUE(batch->ValidateFull().ok()) << batch->ValidateFull().ToString();
  EXPECT_EQ(batch->num_rows(), 2);
  EXPECT_EQ(batch->schema()->field(0)->type()->ToString(), "fixed_size_binary[0]");
}

// --- bad bytes ---

TEST(AvroDecoderTest, TruncatedValues) {
  Status st;
  AvroDecodeError e = FailureOf(kPrimitives, Bytes({0x01}), &st);  // b=1, then nothing
  EXPECT_EQ(e.kind, AvroErrorKind::kTruncated);
  EXPECT_EQ(e.field, "i");
  EXPECT_EQ(e.offset, 1);
  EXPECT_EQ(st.code(), StatusCode::kParseError);
  EXPECT_EQ(
      st.message(),
      "Avro record: field 'i' at byte 1: truncated: the record ends inside a value (1 "
      "bytes in all)");
  // A string of 12 bytes with 3 left.
  e = FailureOf(R"("string")", Bytes({0x18, 'a', 'b', 'c'}));
  EXPECT_EQ(e.kind, AvroErrorKind::kTruncated);
  EXPECT_EQ(e.offset, 0);
  // A float needs 4 bytes.
  e = FailureOf(R"({"type":"record","name":"R","fields":[{"name":"f","type":"float"}]})",
                Bytes({0, 0, 0}));
  EXPECT_EQ(e.kind, AvroErrorKind::kTruncated);
  EXPECT_EQ(e.field, "f");
  // A fixed needs its size.
  e = FailureOf(R"({"type":"fixed","name":"F","size":4})", Bytes({1, 2}));
  EXPECT_EQ(e.kind, AvroErrorKind::kTruncated);
  // A varint cut short.
  e = FailureOf(R"("long")", Bytes({0x80, 0x80}));
  EXPECT_EQ(e.kind, AvroErrorKind::kTruncated);
  // An empty body.
  e = FailureOf(kNested, "");
  EXPECT_EQ(e.kind, AvroErrorKind::kTruncated);
  EXPECT_EQ(e.field, "id");
}

TEST(AvroDecoderTest, HostileLengthsAndCounts) {
  // A string claiming 2^62 bytes: refused before anything is allocated.
  AvroDecodeError e = FailureOf(
      R"("string")", Bytes({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}));
  EXPECT_EQ(e.kind, AvroErrorKind::kTruncated);
  e = FailureOf(R"("bytes")", Bytes({0x01}));  // -1
  EXPECT_EQ(e.kind, AvroErrorKind::kNegativeLength);
  // An array claiming 2^40 longs in 8 bytes.
  e = FailureOf(R"({"type":"array","items":"long"})",
                Bytes({0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0, 0}));
  EXPECT_EQ(e.kind, AvroErrorKind::kBadBlockCount);
  EXPECT_EQ(e.offset, 0);
  // A map claiming 3 entries in 2 bytes (an entry takes at least a key length and a
  // value).
  e = FailureOf(R"({"type":"map","values":"int"})", Bytes({0x06, 0x00, 0x00}));
  EXPECT_EQ(e.kind, AvroErrorKind::kBadBlockCount);
  // The most negative block count has no absolute value.
  e = FailureOf(R"({"type":"array","items":"int"})",
                Bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
  EXPECT_EQ(e.kind, AvroErrorKind::kBadBlockCount);
  // Items that take no bytes are capped per record.
  e = FailureOf(R"({"type":"array","items":"null"})",
                Bytes({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00}));
  EXPECT_EQ(e.kind, AvroErrorKind::kTooLarge);
  // But a few of them decode.
  ASSERT_OK_AND_ASSIGN(AvroSchema s,
                       AvroSchema::Parse(R"({"type":"array","items":"null"})"));
  ASSERT_OK_AND_ASSIGN(auto plan, AvroPlan::Compile(s, s));
  ASSERT_OK_AND_ASSIGN(auto decoder, AvroDecoder::Make(plan));
  ASSERT_OK(decoder->Append(Bytes({0x06, 0x00})));
  ASSERT_OK_AND_ASSIGN(auto batch, decoder->Finish());
  ExpectColumn(*batch, "value", "[[null, null, null]]");
}

TEST(AvroDecoderTest, VarintsAndInts) {
  // 11 bytes of continuation.
  AvroDecodeError e = FailureOf(R"("long")", Bytes({0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                                    0x80, 0x80, 0x80, 0x80, 0x00}));
  EXPECT_EQ(e.kind, AvroErrorKind::kVarintTooLong);
  // 2^31 is not an int.
  e = FailureOf(R"("int")", Bytes({0x80, 0x80, 0x80, 0x80, 0x10}));
  EXPECT_EQ(e.kind, AvroErrorKind::kIntOutOfRange);
  // An int written in more bytes than it needs is still an int (as Avro C reads it).
  ASSERT_OK_AND_ASSIGN(AvroSchema s, AvroSchema::Parse(R"("int")"));
  ASSERT_OK_AND_ASSIGN(auto plan, AvroPlan::Compile(s, s));
  ASSERT_OK_AND_ASSIGN(auto decoder, AvroDecoder::Make(plan));
  ASSERT_OK(decoder->Append(Bytes({0x82, 0x80, 0x80, 0x80, 0x80, 0x00})));
  ASSERT_OK_AND_ASSIGN(auto batch, decoder->Finish());
  ExpectColumn(*batch, "value", "[1]");
}

TEST(AvroDecoderTest, BadUnionEnumAndBoolean) {
  Status st;
  AvroDecodeError e = FailureOf(R"(["null","int"])", Bytes({0x04}), &st);
  EXPECT_EQ(e.kind, AvroErrorKind::kBadUnionIndex);
  EXPECT_EQ(st.message(),
            "Avro record: at byte 0: a union branch index outside the writer's union");
  e = FailureOf(R"(["null","int"])", Bytes({0x01}));  // -1
  EXPECT_EQ(e.kind, AvroErrorKind::kBadUnionIndex);
  e = FailureOf(R"({"type":"record","name":"R","fields":[{"name":"x","type":"int"},
                   {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}}]})",
                Bytes({0x02, 0x04}));
  EXPECT_EQ(e.kind, AvroErrorKind::kBadEnumIndex);
  EXPECT_EQ(e.field, "e");
  EXPECT_EQ(e.offset, 1);
  e = FailureOf(R"("boolean")", Bytes({0x02}));
  EXPECT_EQ(e.kind, AvroErrorKind::kBadBoolean);
}

TEST(AvroDecoderTest, InvalidUtf8) {
  Status st;
  AvroDecodeError e = FailureOf(R"({"type":"record","name":"R","fields":[
                                    {"name":"s","type":"string"}]})",
                                Bytes({0x04, 0xc3, 0x28}), &st);
  EXPECT_EQ(e.kind, AvroErrorKind::kInvalidUtf8);
  EXPECT_EQ(e.field, "s");
  EXPECT_EQ(st.message(),
            "Avro record: field 's' at byte 0: a string that is not valid UTF-8");
  // Surrogates and overlong forms are not UTF-8 either; bytes may hold anything.
  EXPECT_EQ(FailureOf(R"("string")", Bytes({0x06, 0xed, 0xa0, 0x80})).kind,
            AvroErrorKind::kInvalidUtf8);
  EXPECT_EQ(FailureOf(R"("string")", Bytes({0x04, 0xc0, 0xaf})).kind,
            AvroErrorKind::kInvalidUtf8);
  // Map keys are strings.
  e = FailureOf(R"({"type":"map","values":"int"})",
                Bytes({0x02, 0x02, 0xff, 0x02, 0x00}));
  EXPECT_EQ(e.kind, AvroErrorKind::kInvalidUtf8);
  EXPECT_EQ(e.offset, 1);
}

TEST(AvroDecoderTest, DecimalOverflow) {
  Status st;
  // 1000 has 4 digits; the precision is 3.
  AvroDecodeError e =
      FailureOf(R"({"type":"bytes","logicalType":"decimal","precision":3,"scale":0})",
                Bytes({0x04, 0x03, 0xe8}), &st);
  EXPECT_EQ(e.kind, AvroErrorKind::kDecimalOverflow);
  EXPECT_EQ(st.code(), StatusCode::kTypeError);
  // 17 significant bytes do not fit a decimal128.
  std::string big = Bytes({0x22, 0x01});
  big += std::string(16, '\0');
  EXPECT_EQ(
      FailureOf(R"({"type":"bytes","logicalType":"decimal","precision":38,"scale":0})",
                big)
          .kind,
      AvroErrorKind::kDecimalOverflow);
}

TEST(AvroDecoderTest, TrailingBytes) {
  Status st;
  AvroDecodeError e = FailureOf(R"("int")", Bytes({0x02, 0x00, 0x00}), &st);
  EXPECT_EQ(e.kind, AvroErrorKind::kTrailingBytes);
  EXPECT_EQ(e.offset, 1);
  EXPECT_EQ(st.message(), "Avro record: at byte 1: 2 bytes after the end of the record");
  ASSERT_OK_AND_ASSIGN(AvroSchema s, AvroSchema::Parse(R"("int")"));
  ASSERT_OK_AND_ASSIGN(auto plan, AvroPlan::Compile(s, s));
  AvroDecoderOptions options;
  options.allow_trailing_bytes = true;
  ASSERT_OK_AND_ASSIGN(auto decoder, AvroDecoder::Make(plan, options));
  ASSERT_OK(decoder->Append(Bytes({0x02, 0x00, 0x00})));
  EXPECT_EQ(decoder->num_rows(), 1);
}

// A record that fails anywhere leaves every column as it was: the batch of good records
// with bad ones in between equals the batch of the good records alone.
TEST(AvroDecoderTest, AFailedRecordLeavesNoTrace) {
  const std::vector<std::string> good = {
      R"({"id": 1, "customer": {"name": "Ann", "address": {"Address": {"city": "Oslo", "zip": {"int": 150}}}},
          "lines": [{"sku": "A", "qty": 2, "tags": ["x", "y"]}], "attrs": {"k": [1, 2]}, "maybe_list": null})",
      R"({"id": 2, "customer": {"name": "Bo", "address": null}, "lines": [], "attrs": {},
          "maybe_list": {"array": [1, 2, 3]}})"};
  // Bad records: each is a good one cut at every length (they fail at every place: in
  // strings, nested arrays, maps, after nulls started a validity bitmap), then one with
  // invalid UTF-8 deep inside.
  std::vector<std::string> bad;
  for (const std::string& g : good) {
    ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeWithAvroC(kNested, g));
    for (size_t n = 0; n < bytes.size(); ++n) bad.push_back(bytes.substr(0, n));
  }
  ASSERT_OK_AND_ASSIGN(
      std::string deep,
      EncodeWithAvroC(kNested, R"({"id": 3, "customer": {"name": "C", "address": null},
          "lines": [{"sku": "S", "qty": 1, "tags": ["ok", "zz"]}], "attrs": {}, "maybe_list": null})"));
  const size_t zz = deep.find("zz");
  ASSERT_NE(zz, std::string::npos);
  deep[zz] = static_cast<char>(0xff);
  bad.push_back(deep);

  ASSERT_OK_AND_ASSIGN(AvroSchema s, AvroSchema::Parse(kNested));
  ASSERT_OK_AND_ASSIGN(auto plan, AvroPlan::Compile(s, s));
  ASSERT_OK_AND_ASSIGN(auto clean, AvroDecoder::Make(plan));
  ASSERT_OK_AND_ASSIGN(auto mixed, AvroDecoder::Make(plan));
  for (const std::string& g : good) {
    ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeWithAvroC(kNested, g));
    ASSERT_OK(clean->Append(bytes));
    for (const std::string& b : bad) {
      ASSERT_NOT_OK(mixed->Append(b));
    }
    ASSERT_OK(mixed->Append(bytes));
  }
  for (const std::string& b : bad) ASSERT_NOT_OK(mixed->Append(b));
  EXPECT_EQ(mixed->last_error().kind, AvroErrorKind::kInvalidUtf8);
  EXPECT_EQ(mixed->last_error().field, "lines[].tags[]");
  ASSERT_OK_AND_ASSIGN(auto want, clean->Finish());
  ASSERT_OK_AND_ASSIGN(auto got, mixed->Finish());
  ASSERT_TRUE(got->ValidateFull().ok()) << got->ValidateFull().ToString();
  EXPECT_TRUE(got->Equals(*want)) << got->ToString() << "\nexpected\n"
                                  << want->ToString();
}

}  // namespace
}  // namespace kelt
