// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/load/value_converter.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kelt/testing/assertions.h"

namespace kelt::load {
namespace {

// One converter over the columns of `schema`, with room for a few rows.
class Converter {
 public:
  explicit Converter(const Schema& schema, bool strict_payload = false)
      : plan_(ColumnPlan::Make(schema).MoveValueUnsafe()),
        writers_(plan_.MakeWriters()),
        convert_(plan_, writers_, strict_payload) {
    Reserve();
  }

  // Make room for a few rows in every column (again after Finish()).
  void Reserve() {
    for (ColumnWriter& w : writers_) EXPECT_OK(w.Reserve(16, 1024));
  }

  ValueConverter& operator*() { return convert_; }
  ValueConverter* operator->() { return &convert_; }
  int64_t length(size_t c) const { return writers_[c].length(); }

  // Convert a JSON value into column c.
  bool Json(const std::string& json, size_t c, RecordError& error) {
    simdjson::dom::element e;
    EXPECT_EQ(parser_.parse(json).get(e), simdjson::SUCCESS) << json;
    return convert_.Element(e, c, error);
  }

  // Column c as an Arrow array (the column then starts empty).
  std::shared_ptr<arrow::Array> Finish(size_t c) {
    auto array =
        writers_[c].Finish(plan_.arrow_schema()->field(static_cast<int>(c))->type());
    EXPECT_OK(array);
    return array.ok() ? *array : nullptr;
  }

 private:
  ColumnPlan plan_;
  std::vector<ColumnWriter> writers_;
  ValueConverter convert_;
  simdjson::dom::parser parser_;
};

std::string StringAt(const std::shared_ptr<arrow::Array>& a, int64_t row) {
  return std::static_pointer_cast<arrow::BinaryArray>(a)->GetString(row);
}
int64_t Int64At(const std::shared_ptr<arrow::Array>& a, int64_t row) {
  return std::static_pointer_cast<arrow::Int64Array>(a)->Value(row);
}
int64_t MicrosAt(const std::shared_ptr<arrow::Array>& a, int64_t row) {
  return std::static_pointer_cast<arrow::TimestampArray>(a)->Value(row);
}

TEST(ValueConverterTest, JsonValuesIntoInt64) {
  Converter conv(Schema({{"other", TypeId::kUtf8}, {"i", TypeId::kInt64}}));
  RecordError error;
  EXPECT_TRUE(conv.Json("-42", 1, error));
  EXPECT_TRUE(conv.Json(R"("+12")", 1, error));
  EXPECT_TRUE(conv.Json("null", 1, error));
  EXPECT_EQ(error.kind(), RecordError::Kind::kNone);

  EXPECT_FALSE(conv.Json("1.0", 1, error));
  EXPECT_EQ(error.kind(), RecordError::Kind::kBadRecord);
  EXPECT_EQ(error.code(), kErrorTypeMismatch);
  EXPECT_EQ(error.message(), "schema mismatch: expected i64 in kafka value JSON");
  EXPECT_EQ(error.column(), 1);
  EXPECT_FALSE(conv.Json("9223372036854775808", 1, error));
  EXPECT_EQ(error.message(), "schema mismatch: expected i64 in kafka value JSON");
  EXPECT_FALSE(conv.Json("true", 1, error));
  EXPECT_EQ(error.message(),
            "schema mismatch: kafka value int64 cast failed: invalid digit found in "
            "string");
  EXPECT_FALSE(conv.Json(R"("")", 1, error));
  EXPECT_EQ(error.message(),
            "schema mismatch: kafka value int64 cast failed: cannot parse integer from "
            "empty string");
  // A value that does not convert writes nothing.
  EXPECT_EQ(conv.length(1), 3);
  auto a = conv.Finish(1);
  EXPECT_EQ(Int64At(a, 0), -42);
  EXPECT_EQ(Int64At(a, 1), 12);
  EXPECT_TRUE(a->IsNull(2));
}

TEST(ValueConverterTest, JsonValuesIntoFloat64AndBool) {
  Converter conv(Schema({{"f", TypeId::kFloat64}, {"b", TypeId::kBool}}));
  RecordError error;
  for (const char* json :
       {"3", "18446744073709551615", "2.5", R"("1e3")", R"("-Infinity")"}) {
    EXPECT_TRUE(conv.Json(json, 0, error)) << json;
  }
  EXPECT_FALSE(conv.Json("false", 0, error));
  EXPECT_EQ(error.message(),
            "schema mismatch: kafka value float64 cast failed: invalid float literal");
  auto f = std::static_pointer_cast<arrow::DoubleArray>(conv.Finish(0));
  EXPECT_EQ(f->Value(0), 3.0);
  EXPECT_EQ(f->Value(1), 18446744073709551615.0);
  EXPECT_EQ(f->Value(3), 1000.0);
  EXPECT_TRUE(std::isinf(f->Value(4)) && f->Value(4) < 0);

  EXPECT_TRUE(conv.Json("true", 1, error));
  EXPECT_TRUE(conv.Json(R"("false")", 1, error));
  EXPECT_FALSE(conv.Json("1", 1, error));
  EXPECT_EQ(error.message(),
            "schema mismatch: kafka value bool cast failed: provided string was not "
            "`true` or `false`");
  EXPECT_EQ(error.column(), 1);
}

TEST(ValueConverterTest, TimestampsAndDates) {
  Schema s(
      {{"ms", TypeId::kTimestamp}, {"ns", TypeId::kTimestamp}, {"d", TypeId::kDate}});
  s.fields[1].timestamp_unit = TimeUnit::kNano;
  Converter conv(s);
  RecordError error;
  EXPECT_TRUE(conv.Json("1700000000123", 0, error));
  EXPECT_TRUE(conv.Json(R"("2024-05-01T12:00:00.5Z")", 0, error));
  EXPECT_TRUE(conv.Json(R"("1700000000123")", 0, error));  // epoch text, in the unit
  EXPECT_TRUE(conv.Json("1.5", 0, error));
  EXPECT_FALSE(conv.Json("1e300", 0, error));
  EXPECT_EQ(error.message(),
            "schema mismatch: kafka value timestamp cast failed: epoch number out of "
            "range");
  EXPECT_FALSE(conv.Json(R"("yesterday")", 0, error));
  EXPECT_EQ(error.message(),
            "schema mismatch: kafka value timestamp cast failed: expected an RFC 3339 "
            "timestamp or an epoch number, got 'yesterday'");
  auto ms = conv.Finish(0);
  EXPECT_EQ(MicrosAt(ms, 0), 1700000000123000);
  EXPECT_EQ(MicrosAt(ms, 1), 1714564800500000);
  EXPECT_EQ(MicrosAt(ms, 2), 1700000000123000);
  EXPECT_EQ(MicrosAt(ms, 3), 1500);

  EXPECT_TRUE(conv.Json("-1", 1, error));  // -1 ns floors to -1 µs
  EXPECT_EQ(MicrosAt(conv.Finish(1), 0), -1);

  EXPECT_TRUE(conv.Json("19844", 2, error));
  EXPECT_TRUE(conv.Json(R"("2024-05-01")", 2, error));
  EXPECT_FALSE(conv.Json("2147483648", 2, error));
  EXPECT_EQ(error.message(),
            "schema mismatch: kafka value date cast failed: day number out of range");
  EXPECT_FALSE(conv.Json(R"("2023-02-29")", 2, error));
  EXPECT_EQ(error.message(),
            "schema mismatch: kafka value date cast failed: expected YYYY-MM-DD, got "
            "'2023-02-29'");
  auto d = std::static_pointer_cast<arrow::Date32Array>(conv.Finish(2));
  EXPECT_EQ(d->Value(0), 19844);
  EXPECT_EQ(d->Value(1), 19844);
}

TEST(ValueConverterTest, TextColumnsTakeStringsAndCompactJson) {
  Converter conv(Schema({{"u", TypeId::kUtf8}, {"x", TypeId::kBinary}}));
  RecordError error;
  for (const char* json : {R"("é \u0000")", "1.0", "1e2", "12345678901234567890",
                           R"({"z":1, "a" : [true,null,"s\n"]})", "false"}) {
    EXPECT_TRUE(conv.Json(json, 0, error)) << json;
  }
  EXPECT_TRUE(conv.Json("[1,2]", 1, error));
  auto u = conv.Finish(0);
  EXPECT_EQ(StringAt(u, 0), std::string("\xC3\xA9 \0", 4));
  EXPECT_EQ(StringAt(u, 1), "1.0");
  EXPECT_EQ(StringAt(u, 2), "100.0");
  EXPECT_EQ(StringAt(u, 3), "12345678901234567890");
  EXPECT_EQ(StringAt(u, 4), R"({"z":1,"a":[true,null,"s\n"]})");
  EXPECT_EQ(StringAt(u, 5), "false");
  EXPECT_EQ(StringAt(conv.Finish(1), 0), "[1,2]");
}

TEST(ValueConverterTest, LongTextIsTruncatedInErrors) {
  Converter conv(Schema({{"d", TypeId::kDate}}));
  RecordError error;
  EXPECT_FALSE(conv->Text(std::string(100, 'x'), 0, error));
  EXPECT_EQ(error.message(),
            "schema mismatch: kafka value date cast failed: expected YYYY-MM-DD, got '" +
                std::string(64, 'x') + "…'");
}

TEST(ValueConverterTest, RecordAttributes) {
  Schema s({{"_kafka_offset", TypeId::kUtf8},
            {"_kafka_partition", TypeId::kFloat64},
            {"_kafka_timestamp_ms", TypeId::kTimestamp},
            {"_kafka_key", TypeId::kUtf8},
            {"_kafka_key_bytes", TypeId::kBinary},
            {"_kafka_headers", TypeId::kUtf8},
            {"_kafka_header.trace", TypeId::kUtf8},
            {"_kafka_timestamp_type", TypeId::kUtf8}});
  Converter conv(s);
  const HeaderView headers[] = {
      {"trace", "abc"}, {"tenant", "t1"}, {"trace", "def"}, {"empty", std::nullopt}};
  RecordView r;
  r.topic = "events";
  r.partition = 3;
  r.offset = 42;
  r.timestamp_ms = 1700000000123;
  r.key = std::string_view("k\xff", 2);
  r.headers = headers;
  RecordError error;
  EXPECT_TRUE(conv->MetadataColumns(r, error));
  EXPECT_EQ(StringAt(conv.Finish(0), 0), "42");
  EXPECT_EQ(std::static_pointer_cast<arrow::DoubleArray>(conv.Finish(1))->Value(0), 3.0);
  EXPECT_EQ(MicrosAt(conv.Finish(2), 0), 1700000000123000);
  EXPECT_EQ(StringAt(conv.Finish(3), 0), "k\xEF\xBF\xBD");  // lossy for Utf8
  EXPECT_EQ(StringAt(conv.Finish(4), 0), std::string("k\xff", 2));
  EXPECT_EQ(StringAt(conv.Finish(5), 0),
            R"({"trace":["abc","def"],"tenant":"t1","empty":null})");
  EXPECT_EQ(StringAt(conv.Finish(6), 0), "def");  // the last header wins
  EXPECT_TRUE(conv.Finish(7)->IsNull(0));         // no timestamp type

  RecordView bare;
  bare.topic = "events";
  conv.Reserve();
  EXPECT_TRUE(conv->MetadataColumns(bare, error));
  for (size_t c : {2, 3, 4, 5, 6}) EXPECT_TRUE(conv.Finish(c)->IsNull(0)) << c;
}

TEST(ValueConverterTest, StrictPayloadRejectsARawValueThatIsNotUtf8) {
  Schema s({{"_kafka_value", TypeId::kUtf8}, {"_kafka_value_bytes", TypeId::kBinary}});
  RecordView r;
  r.value = std::string_view("a\xff", 2);
  RecordError error;
  Converter lax(s);
  EXPECT_TRUE(lax->MetadataColumns(r, error));
  EXPECT_EQ(StringAt(lax.Finish(0), 0), "a\xEF\xBF\xBD");

  Converter strict(s, /*strict_payload=*/true);
  EXPECT_TRUE(strict->Metadata(r, 1, error));  // raw bytes are fine in Binary
  EXPECT_FALSE(strict->Metadata(r, 0, error));
  EXPECT_EQ(error.code(), kErrorInvalidUtf8);
  EXPECT_EQ(error.message(), "payload is not valid UTF-8 (byte 1)");
  EXPECT_EQ(error.column(), 0);
}

TEST(ValueConverterTest, RecordErrorKeepsOneReason) {
  RecordError error;
  EXPECT_FALSE(
      error.BadRecord(kErrorMalformedPayload, "payload is not a JSON object", -1));
  EXPECT_EQ(error.kind(), RecordError::Kind::kBadRecord);
  EXPECT_FALSE(error.fatal());
  EXPECT_EQ(error.column(), -1);
  EXPECT_FALSE(error.Fatal(Status::IOError("out of memory")));
  EXPECT_TRUE(error.fatal());
  EXPECT_EQ(error.status().message(), "out of memory");
  error.Clear();
  EXPECT_EQ(error.kind(), RecordError::Kind::kNone);
  EXPECT_TRUE(error.status().ok());
}

TEST(ValueConverterTest, EpochNumbersInEveryUnit) {
  int64_t us = 0;
  EXPECT_TRUE(EpochToMicros(int64_t{2}, TimeUnit::kSecond, &us));
  EXPECT_EQ(us, 2000000);
  EXPECT_TRUE(EpochToMicros(int64_t{2}, TimeUnit::kMilli, &us));
  EXPECT_EQ(us, 2000);
  EXPECT_TRUE(EpochToMicros(int64_t{2}, TimeUnit::kMicro, &us));
  EXPECT_EQ(us, 2);
  EXPECT_TRUE(EpochToMicros(int64_t{-1}, TimeUnit::kNano, &us));
  EXPECT_EQ(us, -1);
  EXPECT_FALSE(EpochToMicros(INT64_MAX, TimeUnit::kSecond, &us));
  EXPECT_TRUE(EpochToMicros(-0.5, TimeUnit::kMilli, &us));
  EXPECT_EQ(us, -500);
  EXPECT_FALSE(EpochToMicros(std::nan(""), TimeUnit::kMilli, &us));
  EXPECT_FALSE(EpochToMicros(1e300, TimeUnit::kSecond, &us));
}

}  // namespace
}  // namespace kelt::load
