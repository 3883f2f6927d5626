// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/load.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "kelt/dataset.h"
#include "kelt/load/loader_testing.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

StreamRecord Rec(std::string value, int64_t offset = 0, std::string topic = "events",
                 int32_t partition = 0) {
  StreamRecord r;
  r.topic = std::move(topic);
  r.partition = partition;
  r.offset = offset;
  r.value = std::move(value);
  return r;
}

Schema S(std::initializer_list<std::pair<const char*, TypeId>> fields) {
  Schema s;
  for (const auto& [name, type] : fields) s.fields.emplace_back(name, type);
  return s;
}

LoadedWindow MustLoad(const std::vector<StreamRecord>& records, const Schema& schema,
                      LoadOptions options = {}) {
  auto r = LoadRecords(records, schema, options);
  EXPECT_OK(r);
  return r.ok() ? *r : LoadedWindow{};
}

Status LoadError(const std::vector<StreamRecord>& records, const Schema& schema,
                 LoadOptions options = {}) {
  auto r = LoadRecords(records, schema, options);
  EXPECT_FALSE(r.ok());
  return r.status();
}

const arrow::Array& Col(const LoadedWindow& w, int c) { return *w.batch->column(c); }
bool IsNull(const LoadedWindow& w, int c, int64_t row) { return Col(w, c).IsNull(row); }
int64_t I64(const LoadedWindow& w, int c, int64_t row) {
  return static_cast<const arrow::Int64Array&>(Col(w, c)).Value(row);
}
double F64(const LoadedWindow& w, int c, int64_t row) {
  return static_cast<const arrow::DoubleArray&>(Col(w, c)).Value(row);
}
bool B(const LoadedWindow& w, int c, int64_t row) {
  return static_cast<const arrow::BooleanArray&>(Col(w, c)).Value(row);
}
std::string Str(const LoadedWindow& w, int c, int64_t row) {
  return std::string(static_cast<const arrow::StringArray&>(Col(w, c)).GetView(row));
}
std::string Bin(const LoadedWindow& w, int c, int64_t row) {
  return std::string(static_cast<const arrow::BinaryArray&>(Col(w, c)).GetView(row));
}
int64_t Ts(const LoadedWindow& w, int c, int64_t row) {
  return static_cast<const arrow::TimestampArray&>(Col(w, c)).Value(row);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// --- the RDP fixture
// --------------------------------------------------------------------

// RDP's fixture records (tests/fixtures/kafka/stream_records.json), loaded with the
// landing schema of RDP's fixture test.
Result<LoadedWindow> LoadRdpFixture() {
  return LoadRecordsJson(
      ReadFile(std::string(KELT_FIXTURES_DIR) + "/kafka/stream_records.json"),
      S({{"event_id", TypeId::kInt64},
         {"payload", TypeId::kUtf8},
         {"_kafka_partition", TypeId::kInt64}}));
}

TEST(LoaderTest, RdpFixtureWithRdpLandingSchema) {
  ASSERT_OK_AND_ASSIGN(const LoadedWindow w, LoadRdpFixture());
  ASSERT_EQ(w.batch->num_rows(), 2);
  EXPECT_EQ(I64(w, 0, 0), 100);
  EXPECT_EQ(Str(w, 1, 0), "alpha");
  EXPECT_EQ(I64(w, 2, 0), 0);
  EXPECT_EQ(I64(w, 0, 1), 101);
  EXPECT_EQ(Str(w, 1, 1), "beta");
  EXPECT_EQ(I64(w, 2, 1), 1);
  EXPECT_EQ(w.stats.records, 2);
  EXPECT_EQ(w.stats.rows, 2);
  EXPECT_EQ(w.stats.bad_records, 0);
}

TEST(LoaderTest, RdpUnitTestLandingTable) {
  // The landing table of RDP's own unit test: payload columns then topic and offset.
  std::string json = R"({"records":[
      {"topic":"events","partition":0,"offset":42,"timestamp_ms":1000,
       "value":"{\"id\":1,\"name\":\"Ada\"}"}]})";
  Schema landing = S({{"id", TypeId::kInt64},
                      {"name", TypeId::kUtf8},
                      {"_kafka_topic", TypeId::kUtf8},
                      {"_kafka_offset", TypeId::kInt64}});
  ASSERT_OK_AND_ASSIGN(auto r, LoadRecordsJson(json, landing));
  EXPECT_EQ(I64(r, 0, 0), 1);
  EXPECT_EQ(Str(r, 1, 0), "Ada");
  EXPECT_EQ(Str(r, 2, 0), "events");
  EXPECT_EQ(I64(r, 3, 0), 42);
}

TEST(LoaderTest, FixtureDataSetJsonIsRdpShaped) {
  ASSERT_OK_AND_ASSIGN(auto r, LoadRdpFixture());
  ASSERT_OK_AND_ASSIGN(auto ds, RecordBatchToDataSet(*r.batch));
  EXPECT_EQ(DataSetToJson(ds),
            R"({"schema":{"fields":[{"name":"event_id","data_type":"Int64"},)"
            R"({"name":"payload","data_type":"Utf8"},)"
            R"({"name":"_kafka_partition","data_type":"Int64"}]},)"
            R"("rows":[[{"Int64":100},{"Utf8":"alpha"},{"Int64":0}],)"
            R"([{"Int64":101},{"Utf8":"beta"},{"Int64":1}]]})");
}

// --- rule 1: metadata
// -------------------------------------------------------------------

TEST(LoaderTest, AllRdpMetadataColumns) {
  StreamRecord r = Rec(R"({"x":1})", 42, "events", 3);
  r.timestamp_ms = 1000;
  r.key = "k1";
  StreamRecord no_ts = Rec(R"({"x":2})", 43, "events", 3);
  Schema s = S({{"_kafka_topic", TypeId::kUtf8},
                {"_kafka_partition", TypeId::kInt64},
                {"_kafka_offset", TypeId::kInt64},
                {"_kafka_timestamp_ms", TypeId::kInt64},
                {"_kafka_key", TypeId::kUtf8}});
  LoadedWindow w = MustLoad({r, no_ts}, s);
  ASSERT_EQ(w.batch->num_rows(), 2);
  EXPECT_EQ(Str(w, 0, 0), "events");
  EXPECT_EQ(I64(w, 1, 0), 3);
  EXPECT_EQ(I64(w, 2, 0), 42);
  EXPECT_EQ(I64(w, 3, 0), 1000);
  EXPECT_EQ(Str(w, 4, 0), "k1");
  EXPECT_TRUE(IsNull(w, 3, 1));  // no timestamp → null
  EXPECT_TRUE(IsNull(w, 4, 1));  // no key → null
}

TEST(LoaderTest, UnknownMetadataColumnIsAnError) {
  auto r = Loader::Make(S({{"_kafka_bogus", TypeId::kUtf8}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "schema mismatch: unknown kafka metadata column '_kafka_bogus'");
}

TEST(LoaderTest, MetadataColumnWithImpossibleTypeIsAnError) {
  auto r = Loader::Make(S({{"_kafka_offset", TypeId::kBool}}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'_kafka_offset' cannot have type Bool"),
            std::string::npos);
}

TEST(LoaderTest, MetadataIntoOtherCompatibleTypes) {
  StreamRecord r = Rec("{}", 7);
  r.timestamp_ms = 1700000000123;
  Schema s = S({{"_kafka_offset", TypeId::kUtf8}, {"_kafka_offset", TypeId::kInt64}});
  // Duplicate names are rejected…
  EXPECT_FALSE(Loader::Make(s).ok());
  // …but one attribute may land as text, float or timestamp.
  Schema ok = S({{"_kafka_offset", TypeId::kUtf8},
                 {"_kafka_partition", TypeId::kFloat64},
                 {"_kafka_timestamp_ms", TypeId::kTimestamp}});
  LoadedWindow w = MustLoad({r}, ok);
  EXPECT_EQ(Str(w, 0, 0), "7");
  EXPECT_EQ(F64(w, 1, 0), 0.0);
  EXPECT_EQ(Ts(w, 2, 0), 1700000000123000);
}

TEST(LoaderTest, KeltMetadataColumns) {
  StreamRecord r = Rec(R"({"x":1})", 5);
  r.timestamp_ms = 1700000000000;
  r.timestamp_type = TimestampType::kLogAppendTime;
  r.key = std::string("k\xff", 2);  // not UTF-8
  r.headers = {
      {"trace", "abc"}, {"tenant", "t1"}, {"trace", "def"}, {"empty", std::nullopt}};
  Schema s = S({{"_kafka_timestamp", TypeId::kTimestamp},
                {"_kafka_timestamp_type", TypeId::kUtf8},
                {"_kafka_key_bytes", TypeId::kBinary},
                {"_kafka_key", TypeId::kUtf8},
                {"_kafka_headers", TypeId::kUtf8},
                {"_kafka_header.trace", TypeId::kUtf8},
                {"_kafka_header.tenant", TypeId::kUtf8},
                {"_kafka_header.missing", TypeId::kUtf8},
                {"_kafka_value", TypeId::kUtf8},
                {"_kafka_value_bytes", TypeId::kBinary}});
  ASSERT_OK_AND_ASSIGN(auto loader, Loader::Make(s));
  EXPECT_TRUE(loader->needs_headers());
  LoadedWindow w = MustLoad({r}, s);
  EXPECT_EQ(Ts(w, 0, 0), 1700000000000000);
  EXPECT_EQ(Str(w, 1, 0), "log_append_time");
  EXPECT_EQ(Bin(w, 2, 0), std::string("k\xff", 2));
  EXPECT_EQ(Str(w, 3, 0), "k\xEF\xBF\xBD");  // lossy for Utf8
  EXPECT_EQ(Str(w, 4, 0), R"({"trace":["abc","def"],"tenant":"t1","empty":null})");
  EXPECT_EQ(Str(w, 5, 0), "def");  // last header wins
  EXPECT_EQ(Str(w, 6, 0), "t1");
  EXPECT_TRUE(IsNull(w, 7, 0));
  EXPECT_EQ(Str(w, 8, 0), R"({"x":1})");
  EXPECT_EQ(Bin(w, 9, 0), R"({"x":1})");
}

TEST(LoaderTest, NoHeadersGiveNullHeaderColumns) {
  Schema s =
      S({{"_kafka_headers", TypeId::kUtf8}, {"_kafka_timestamp_type", TypeId::kUtf8}});
  LoadedWindow w = MustLoad({Rec("{}")}, s);
  EXPECT_TRUE(IsNull(w, 0, 0));
  EXPECT_TRUE(IsNull(w, 1, 0));
}

// --- rule 2: object payloads ----------------------------------------------------------

TEST(LoaderTest, ObjectKeysByExactNameMissingAndNullAreNull) {
  Schema s = S({{"a", TypeId::kInt64}, {"b", TypeId::kUtf8}, {"A", TypeId::kInt64}});
  LoadedWindow w = MustLoad({Rec(R"({"a":1,"b":null,"extra":[1,2]})")}, s);
  EXPECT_EQ(I64(w, 0, 0), 1);
  EXPECT_TRUE(IsNull(w, 1, 0));  // JSON null
  EXPECT_TRUE(IsNull(w, 2, 0));  // key names are case-sensitive
}

TEST(LoaderTest, DuplicateKeysLastWins) {
  Schema s = S({{"a", TypeId::kInt64}, {"b", TypeId::kUtf8}});
  LoadedWindow w = MustLoad({Rec(R"({"a":"oops","a":2,"b":"x"})")}, s);
  EXPECT_EQ(I64(w, 0, 0), 2);
}

TEST(LoaderTest, DottedKeyIsATopLevelNameWithoutSource) {
  Schema s = S({{"a.b", TypeId::kInt64}, {"c", TypeId::kInt64}});
  LoadedWindow w = MustLoad({Rec(R"({"a.b":5,"a":{"b":6}})")}, s);
  EXPECT_EQ(I64(w, 0, 0), 5);
}

TEST(LoaderTest, NestedFieldsBySourcePath) {
  Schema s;
  s.fields.emplace_back("city", TypeId::kUtf8);
  s.fields.back().source = {"address", "city"};
  s.fields.emplace_back("zip", TypeId::kInt64);
  s.fields.back().source = {"address", "geo", "zip"};
  s.fields.emplace_back("address", TypeId::kUtf8);  // the whole object as JSON text
  s.fields.emplace_back("dotted", TypeId::kInt64);
  s.fields.back().source = {"x.y"};
  LoadedWindow w = MustLoad(
      {Rec(R"({"address":{"city":"Oslo","geo":{"zip":"0150"}},"x.y":3})"),
       Rec(R"({"address":"not an object"})"), Rec(R"({"address":{"geo":null}})")},
      s);
  EXPECT_EQ(Str(w, 0, 0), "Oslo");
  EXPECT_EQ(I64(w, 1, 0), 150);
  EXPECT_EQ(Str(w, 2, 0), R"({"city":"Oslo","geo":{"zip":"0150"}})");
  EXPECT_EQ(I64(w, 3, 0), 3);
  EXPECT_TRUE(IsNull(w, 0, 1));
  EXPECT_TRUE(IsNull(w, 1, 1));
  EXPECT_EQ(Str(w, 2, 1), "not an object");
  EXPECT_TRUE(IsNull(w, 1, 2));
}

// --- rules 3 and 4: non-object payloads
// -------------------------------------------------

TEST(LoaderTest, SingleFieldGetsRawPayloadText) {
  Schema s = S({{"n", TypeId::kInt64}, {"_kafka_offset", TypeId::kInt64}});
  LoadedWindow w = MustLoad({Rec("42"), Rec("-7")}, s);
  EXPECT_EQ(I64(w, 0, 0), 42);
  EXPECT_EQ(I64(w, 0, 1), -7);

  Schema t = S({{"line", TypeId::kUtf8}});
  LoadedWindow w2 = MustLoad({Rec("plain text"), Rec("[1,2]"), Rec("\"quoted\"")}, t);
  EXPECT_EQ(Str(w2, 0, 0), "plain text");
  EXPECT_EQ(Str(w2, 0, 1), "[1,2]");
  EXPECT_EQ(Str(w2, 0, 2), "\"quoted\"");
}

TEST(LoaderTest, SingleFieldObjectPayloadUsesRule2) {
  Schema s = S({{"n", TypeId::kInt64}});
  LoadedWindow w = MustLoad({Rec(R"({"m":1})")}, s);
  EXPECT_TRUE(IsNull(w, 0, 0));
}

TEST(LoaderTest, SingleFieldRawTextConversionError) {
  Schema s = S({{"n", TypeId::kInt64}});
  Status st = LoadError({Rec("abc", 9)}, s);
  EXPECT_EQ(st.code(), StatusCode::kTypeError);
  EXPECT_EQ(
      st.message(),
      "schema mismatch: kafka value int64 cast failed: invalid digit found in string "
      "(at events[0]@9, field 'n')");
}

TEST(LoaderTest, MalformedJsonWithSeveralFieldsIsNullUnderRdpRules) {
  Schema s =
      S({{"a", TypeId::kInt64}, {"b", TypeId::kUtf8}, {"_kafka_offset", TypeId::kInt64}});
  LoadedWindow w = MustLoad({Rec("{not json", 1), Rec("[1]", 2), Rec("", 3)}, s);
  ASSERT_EQ(w.batch->num_rows(), 3);
  for (int row = 0; row < 3; ++row) {
    EXPECT_TRUE(IsNull(w, 0, row));
    EXPECT_TRUE(IsNull(w, 1, row));
    EXPECT_EQ(I64(w, 2, row), row + 1);
  }
}

TEST(LoaderTest, StrictPayloadMakesMalformedJsonBad) {
  Schema s = S({{"a", TypeId::kInt64}, {"b", TypeId::kUtf8}});
  LoadOptions o;
  o.strict_payload = true;
  o.on_bad_record = BadRecordPolicy::kDeadLetter;
  LoadedWindow w =
      MustLoad({Rec("{not json", 1), Rec("[1]", 2), Rec(R"({"a":1})", 3)}, s, o);
  EXPECT_EQ(w.batch->num_rows(), 1);
  ASSERT_EQ(w.dead_letters->num_rows(), 2);
  auto codes = std::static_pointer_cast<arrow::StringArray>(w.dead_letters->column(6));
  auto msgs = std::static_pointer_cast<arrow::StringArray>(w.dead_letters->column(8));
  EXPECT_EQ(codes->GetString(0), "MALFORMED_PAYLOAD");
  EXPECT_NE(msgs->GetString(0).find("payload is not valid JSON"), std::string::npos);
  EXPECT_EQ(msgs->GetString(1), "payload is not a JSON object");
}

TEST(LoaderTest, OnlyMetadataFieldsIgnorePayload) {
  Schema s = S({{"_kafka_offset", TypeId::kInt64}});
  LoadedWindow w = MustLoad({Rec("garbage", 1)}, s);
  EXPECT_EQ(I64(w, 0, 0), 1);
}

// --- conversions ----------------------------------------------------------------------

TEST(LoaderTest, NumberToInt64MustFitI64) {
  Schema s = S({{"a", TypeId::kInt64}, {"b", TypeId::kUtf8}});
  for (const char* payload :
       {R"({"a":1.5})", R"({"a":1.0})", R"({"a":9223372036854775808})"}) {
    Status st = LoadError({Rec(payload, 4)}, s);
    EXPECT_EQ(
        st.message(),
        "schema mismatch: expected i64 in kafka value JSON (at events[0]@4, field 'a')")
        << payload;
  }
  LoadedWindow w = MustLoad({Rec(R"({"a":-9223372036854775808})"),
                             Rec(R"({"a":9223372036854775807})"), Rec(R"({"a":"+12"})")},
                            s);
  EXPECT_EQ(I64(w, 0, 0), INT64_MIN);
  EXPECT_EQ(I64(w, 0, 1), INT64_MAX);
  EXPECT_EQ(I64(w, 0, 2), 12);
}

TEST(LoaderTest, StringToInt64Errors) {
  Schema s = S({{"a", TypeId::kInt64}, {"b", TypeId::kUtf8}});
  struct Case {
    const char* payload;
    const char* error;
  } cases[] = {
      {R"({"a":""})", "cannot parse integer from empty string"},
      {R"({"a":"1.5"})", "invalid digit found in string"},
      {R"({"a":" 1"})", "invalid digit found in string"},
      {R"({"a":"99999999999999999999"})", "number too large to fit in target type"},
      {R"({"a":"-99999999999999999999"})", "number too small to fit in target type"},
      {R"({"a":true})", "invalid digit found in string"},
      {R"({"a":[1]})", "invalid digit found in string"},
      {R"({"a":{"x":1}})", "invalid digit found in string"},
  };
  for (const Case& c : cases) {
    Status st = LoadError({Rec(c.payload)}, s);
    EXPECT_EQ(st.message(),
              std::string("schema mismatch: kafka value int64 cast failed: ") + c.error +
                  " (at events[0]@0, field 'a')")
        << c.payload;
  }
}

TEST(LoaderTest, Float64Conversions) {
  Schema s = S({{"a", TypeId::kFloat64}, {"b", TypeId::kUtf8}});
  LoadedWindow w =
      MustLoad({Rec(R"({"a":40.7})"), Rec(R"({"a":3})"), Rec(R"({"a":"1e3"})"),
                Rec(R"({"a":"inf"})"), Rec(R"({"a":"NaN"})"), Rec(R"({"a":"-Infinity"})"),
                Rec(R"({"a":18446744073709551615})")},
               s);
  EXPECT_DOUBLE_EQ(F64(w, 0, 0), 40.7);
  EXPECT_DOUBLE_EQ(F64(w, 0, 1), 3.0);
  EXPECT_DOUBLE_EQ(F64(w, 0, 2), 1000.0);
  EXPECT_TRUE(std::isinf(F64(w, 0, 3)) && F64(w, 0, 3) > 0);
  EXPECT_TRUE(std::isnan(F64(w, 0, 4)));
  EXPECT_TRUE(std::isinf(F64(w, 0, 5)) && F64(w, 0, 5) < 0);
  EXPECT_DOUBLE_EQ(F64(w, 0, 6), 18446744073709551615.0);
  Status st = LoadError({Rec(R"({"a":"abc"})")}, s);
  EXPECT_EQ(st.message(),
            "schema mismatch: kafka value float64 cast failed: invalid float literal (at "
            "events[0]@0, field 'a')");
  st = LoadError({Rec(R"({"a":false})")}, s);
  EXPECT_NE(st.message().find("float64 cast failed: invalid float literal"),
            std::string::npos);
  st = LoadError({Rec(R"({"a":""})")}, s);
  EXPECT_NE(st.message().find("cannot parse float from empty string"), std::string::npos);
}

TEST(LoaderTest, BoolConversions) {
  Schema s = S({{"a", TypeId::kBool}, {"b", TypeId::kUtf8}});
  LoadedWindow w = MustLoad({Rec(R"({"a":true})"), Rec(R"({"a":"false"})")}, s);
  EXPECT_TRUE(B(w, 0, 0));
  EXPECT_FALSE(B(w, 0, 1));
  for (const char* payload : {R"({"a":1})", R"({"a":"TRUE"})", R"({"a":"yes"})"}) {
    Status st = LoadError({Rec(payload)}, s);
    EXPECT_NE(
        st.message().find(
            "schema mismatch: kafka value bool cast failed: provided string was not "
            "`true` or `false`"),
        std::string::npos)
        << payload;
  }
}

TEST(LoaderTest, Utf8TakesCompactJsonOfOtherValues) {
  Schema s = S({{"a", TypeId::kUtf8}, {"b", TypeId::kUtf8}});
  LoadedWindow w = MustLoad({Rec(R"({"a":1.5,"b":{"z":1, "a" : [true,null,"s\n"]}})"),
                             Rec(R"({"a":1,"b":false})"), Rec(R"({"a":1.0,"b":1e2})"),
                             Rec(R"({"a":"é \u0000","b":12345678901234567890})")},
                            s);
  EXPECT_EQ(Str(w, 0, 0), "1.5");
  EXPECT_EQ(Str(w, 1, 0), R"({"z":1,"a":[true,null,"s\n"]})");
  EXPECT_EQ(Str(w, 0, 1), "1");
  EXPECT_EQ(Str(w, 1, 1), "false");
  EXPECT_EQ(Str(w, 0, 2), "1.0");
  EXPECT_EQ(Str(w, 1, 2), "100.0");
  EXPECT_EQ(Str(w, 0, 3), std::string("\xC3\xA9 \0", 4));
  EXPECT_EQ(Str(w, 1, 3), "12345678901234567890");
}

TEST(LoaderTest, TimestampAndDateColumns) {
  Schema s;
  s.fields.emplace_back("ts", TypeId::kTimestamp);  // numbers are epoch ms by default
  s.fields.emplace_back("ts_s", TypeId::kTimestamp);
  s.fields.back().timestamp_unit = TimeUnit::kSecond;
  s.fields.emplace_back("d", TypeId::kDate);
  LoadedWindow w = MustLoad(
      {Rec(R"({"ts":"2024-05-01T12:00:00.5Z","ts_s":1700000000,"d":"2024-05-01"})"),
       Rec(R"({"ts":1700000000123,"ts_s":"2024-05-01T14:00:00+02:00","d":19844})"),
       Rec(R"({"ts":"1700000000123","ts_s":1.5,"d":null})")},
      s);
  EXPECT_EQ(Ts(w, 0, 0), 1714564800500000);
  EXPECT_EQ(Ts(w, 1, 0), 1700000000000000);
  EXPECT_EQ(static_cast<const arrow::Date32Array&>(Col(w, 2)).Value(0), 19844);
  EXPECT_EQ(Ts(w, 0, 1), 1700000000123000);
  EXPECT_EQ(Ts(w, 1, 1), 1714564800000000);
  EXPECT_EQ(Ts(w, 0, 2), 1700000000123000);
  EXPECT_EQ(Ts(w, 1, 2), 1500000);
  EXPECT_TRUE(IsNull(w, 2, 2));
  Status st = LoadError({Rec(R"({"ts":"yesterday"})")}, s);
  EXPECT_NE(st.message().find("timestamp cast failed"), std::string::npos);
  st = LoadError({Rec(R"({"d":"2023-02-29"})")}, s);
  EXPECT_NE(st.message().find("date cast failed"), std::string::npos);
  st = LoadError({Rec(R"({"ts_s":9223372036854775807})")}, s);
  EXPECT_NE(st.message().find("out of range"), std::string::npos);
}

TEST(LoaderTest, BinaryColumnTakesStringBytes) {
  Schema s = S({{"a", TypeId::kBinary}, {"b", TypeId::kBinary}});
  LoadedWindow w = MustLoad({Rec(R"({"a":"raw","b":[1,2]})")}, s);
  EXPECT_EQ(Bin(w, 0, 0), "raw");
  EXPECT_EQ(Bin(w, 1, 0), "[1,2]");
}

// --- nasty input
// ------------------------------------------------------------------------

TEST(LoaderTest, InvalidUtf8Payloads) {
  // Invalid UTF-8 inside a JSON string: RDP sees a lossy conversion and still parses.
  Schema s = S({{"a", TypeId::kUtf8}, {"b", TypeId::kInt64}});
  std::string payload = std::string(R"({"a":"x)") + "\xff" + R"(","b":1})";
  LoadedWindow w = MustLoad({Rec(payload)}, s);
  EXPECT_EQ(Str(w, 0, 0), "x\xEF\xBF\xBD");
  EXPECT_EQ(I64(w, 1, 0), 1);

  LoadOptions strict;
  strict.strict_payload = true;
  strict.on_bad_record = BadRecordPolicy::kDeadLetter;
  LoadedWindow w2 = MustLoad({Rec(payload, 8)}, s, strict);
  EXPECT_EQ(w2.batch->num_rows(), 0);
  ASSERT_EQ(w2.dead_letters->num_rows(), 1);
  EXPECT_EQ(std::static_pointer_cast<arrow::BinaryArray>(w2.dead_letters->column(5))
                ->GetString(0),
            payload);

  // A raw single-field payload.
  Schema one = S({{"line", TypeId::kUtf8}});
  LoadedWindow w3 = MustLoad({Rec("ab\xc3")}, one);
  EXPECT_EQ(Str(w3, 0, 0), "ab\xEF\xBF\xBD");
  LoadedWindow w4 = MustLoad({Rec("ab\xc3")}, one, strict);
  EXPECT_EQ(w4.batch->num_rows(), 0);
  EXPECT_EQ(w4.stats.dead_lettered, 1);
  auto codes = std::static_pointer_cast<arrow::StringArray>(w4.dead_letters->column(6));
  EXPECT_EQ(codes->GetString(0), "INVALID_UTF8");
}

TEST(LoaderTest, TombstonesLandWithNullPayloadColumns) {
  StreamRecord t = Rec("", 5);
  t.value.reset();
  t.key = "deleted-key";
  Schema s = S({{"n", TypeId::kInt64},
                {"_kafka_key", TypeId::kUtf8},
                {"_kafka_value", TypeId::kUtf8}});
  LoadedWindow w = MustLoad({t}, s);
  ASSERT_EQ(w.batch->num_rows(), 1);
  EXPECT_TRUE(IsNull(w, 0, 0));
  EXPECT_EQ(Str(w, 1, 0), "deleted-key");
  EXPECT_TRUE(IsNull(w, 2, 0));
  EXPECT_EQ(w.stats.tombstones, 1);
}

TEST(LoaderTest, HugeAndDeepPayloads) {
  std::string big(8 << 20, 'x');
  Schema s = S({{"a", TypeId::kUtf8}, {"b", TypeId::kInt64}});
  LoadedWindow w =
      MustLoad({Rec(R"({"b":1,"a":")" + big + R"("})"), Rec(R"({"b":2})")}, s);
  EXPECT_EQ(Str(w, 0, 0).size(), big.size());
  EXPECT_EQ(I64(w, 1, 1), 2);
  // Nesting deeper than the parser allows is not an object: rule 4 (nulls).
  std::string deep(5000, '[');
  deep += std::string(5000, ']');
  LoadedWindow w2 = MustLoad({Rec(R"({"b":1,"a":)" + deep + "}")}, s);
  EXPECT_TRUE(IsNull(w2, 1, 0));
}

// --- policies
// ---------------------------------------------------------------------------

TEST(LoaderTest, PoliciesOnAPoisonedRecord) {
  Schema s = S({{"id", TypeId::kInt64},
                {"name", TypeId::kUtf8},
                {"_kafka_offset", TypeId::kInt64}});
  StreamRecord poison = Rec(R"({"id":"not a number","name":"bad"})", 2, "events", 1);
  poison.key = "k";
  poison.timestamp_ms = 99;
  std::vector<StreamRecord> records = {Rec(R"({"id":1,"name":"a"})", 1, "events", 1),
                                       poison,
                                       Rec(R"({"id":3,"name":"c"})", 3, "events", 1)};

  Status st = LoadError(records, s);
  EXPECT_EQ(st.code(), StatusCode::kTypeError);
  EXPECT_EQ(
      st.message(),
      "schema mismatch: kafka value int64 cast failed: invalid digit found in string "
      "(at events[1]@2, field 'id')");

  LoadOptions skip;
  skip.on_bad_record = BadRecordPolicy::kSkip;
  LoadedWindow w = MustLoad(records, s, skip);
  ASSERT_EQ(w.batch->num_rows(), 2);
  EXPECT_EQ(I64(w, 2, 0), 1);
  EXPECT_EQ(I64(w, 2, 1), 3);
  EXPECT_EQ(w.stats.records, 3);
  EXPECT_EQ(w.stats.bad_records, 1);
  EXPECT_EQ(w.stats.skipped, 1);
  EXPECT_EQ(w.dead_letters->num_rows(), 0);

  LoadOptions dl;
  dl.on_bad_record = BadRecordPolicy::kDeadLetter;
  LoadedWindow w2 = MustLoad(records, s, dl);
  ASSERT_EQ(w2.batch->num_rows(), 2);
  ASSERT_EQ(w2.dead_letters->num_rows(), 1);
  EXPECT_EQ(w2.stats.dead_lettered, 1);
  const auto& d = *w2.dead_letters;
  EXPECT_TRUE(d.schema()->Equals(*DeadLetterSchema()));
  EXPECT_EQ(std::static_pointer_cast<arrow::StringArray>(d.column(0))->GetString(0),
            "events");
  EXPECT_EQ(std::static_pointer_cast<arrow::Int64Array>(d.column(1))->Value(0), 1);
  EXPECT_EQ(std::static_pointer_cast<arrow::Int64Array>(d.column(2))->Value(0), 2);
  EXPECT_EQ(std::static_pointer_cast<arrow::Int64Array>(d.column(3))->Value(0), 99);
  EXPECT_EQ(std::static_pointer_cast<arrow::BinaryArray>(d.column(4))->GetString(0), "k");
  EXPECT_EQ(std::static_pointer_cast<arrow::BinaryArray>(d.column(5))->GetString(0),
            R"({"id":"not a number","name":"bad"})");
  EXPECT_EQ(std::static_pointer_cast<arrow::StringArray>(d.column(6))->GetString(0),
            "TYPE_MISMATCH");
  EXPECT_EQ(std::static_pointer_cast<arrow::StringArray>(d.column(7))->GetString(0),
            "id");
  EXPECT_EQ(
      std::static_pointer_cast<arrow::StringArray>(d.column(8))->GetString(0),
      "schema mismatch: kafka value int64 cast failed: invalid digit found in string");
  ASSERT_OK(w2.batch->ValidateFull());
  ASSERT_OK(w2.dead_letters->ValidateFull());
}

TEST(LoaderTest, FailKeepsTheLoaderUsableAndAligned) {
  Schema s = S({{"id", TypeId::kInt64}, {"name", TypeId::kUtf8}});
  ASSERT_OK_AND_ASSIGN(auto loader, Loader::Make(s));
  Loader& l = *loader;
  ASSERT_OK(l.Append(Rec(R"({"id":1,"name":"a"})")));
  // The bad record converts "name" before failing on nothing; columns must stay aligned.
  ASSERT_FALSE(l.Append(Rec(R"({"name":"b","id":"x"})")).ok());
  ASSERT_OK(l.Append(Rec(R"({"id":3,"name":"c"})")));
  ASSERT_OK_AND_ASSIGN(auto w, l.Finish());
  ASSERT_OK(w.batch->ValidateFull());
  EXPECT_EQ(w.batch->num_rows(), 2);
  EXPECT_EQ(Str(w, 1, 1), "c");
  EXPECT_EQ(w.stats.records, 2);
  // The loader is reusable for the next window.
  ASSERT_OK(l.Append(Rec(R"({"id":4,"name":"d"})")));
  ASSERT_OK_AND_ASSIGN(auto w2, l.Finish());
  EXPECT_EQ(w2.batch->num_rows(), 1);
  EXPECT_EQ(I64(w2, 0, 0), 4);
}

TEST(LoaderTest, EmptyWindowHasTheLandingSchema) {
  Schema s = S({{"id", TypeId::kInt64}, {"_kafka_topic", TypeId::kUtf8}});
  LoadedWindow w = MustLoad({}, s);
  EXPECT_EQ(w.batch->num_rows(), 0);
  EXPECT_TRUE(w.batch->schema()->Equals(*ToArrowSchema(s)));
}

TEST(LoaderTest, SchemaErrors) {
  EXPECT_FALSE(Loader::Make(Schema{}).ok());
  EXPECT_FALSE(Loader::Make(S({{"", TypeId::kInt64}})).ok());
  auto dup = Loader::Make(S({{"a", TypeId::kInt64}, {"a", TypeId::kUtf8}}));
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("duplicate field name 'a'"), std::string::npos);
}

TEST(LoaderTest, RecordsJsonErrorsAreSchemaMismatch) {
  Schema s = S({{"a", TypeId::kInt64}});
  auto r = LoadRecordsJson("{\"records\":[{\"topic\":1}]}", s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind(
                "schema mismatch: invalid kafka stream record JSON: ", 0),
            0u)
      << r.status().message();
  auto r2 = LoadRecordsJson("[", s);
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.status().code(), StatusCode::kParseError);
}

TEST(LoaderTest, ManyRecordsAcrossReserveBoundaries) {
  Schema s = S({{"i", TypeId::kInt64}, {"s", TypeId::kUtf8}, {"f", TypeId::kFloat64}});
  ASSERT_OK_AND_ASSIGN(auto loader, Loader::Make(s));
  ASSERT_OK(loader->Reserve(10, 100));  // deliberately too small
  for (int i = 0; i < 5000; ++i) {
    StreamRecord r = Rec("{\"i\":" + std::to_string(i) + ",\"s\":\"v" +
                         std::to_string(i) + "\",\"f\":" + std::to_string(i) + ".25}");
    ASSERT_OK(loader->Append(r));
  }
  ASSERT_OK_AND_ASSIGN(auto w, loader->Finish());
  ASSERT_OK(w.batch->ValidateFull());
  ASSERT_EQ(w.batch->num_rows(), 5000);
  EXPECT_EQ(I64(w, 0, 4999), 4999);
  EXPECT_EQ(Str(w, 1, 1234), "v1234");
  EXPECT_DOUBLE_EQ(F64(w, 2, 77), 77.25);
}

TEST(LoaderTest, PolicyNamesRoundTrip) {
  for (auto p :
       {BadRecordPolicy::kFail, BadRecordPolicy::kSkip, BadRecordPolicy::kDeadLetter}) {
    EXPECT_EQ(ParseBadRecordPolicy(BadRecordPolicyName(p)), p);
  }
  EXPECT_FALSE(ParseBadRecordPolicy("ignore").has_value());
}

}  // namespace
}  // namespace kelt

namespace kelt {
namespace {

// The On-Demand fast path and the DOM path must land identical batches and report
// identical errors, whatever the payload.
TEST(LoaderTest, FastPathAndDomPathAgree) {
  Schema s;
  s.fields = {Field("i", TypeId::kInt64),     Field("f", TypeId::kFloat64),
              Field("b", TypeId::kBool),      Field("u", TypeId::kUtf8),
              Field("t", TypeId::kTimestamp), Field("d", TypeId::kDate),
              Field("x", TypeId::kBinary),    Field("_kafka_offset", TypeId::kInt64)};
  s.fields.emplace_back("nested", TypeId::kInt64);
  s.fields.back().source = {"o", "n"};
  const std::vector<std::string> payloads = {
      R"({"i":1,"f":2.5,"b":true,"u":"x","t":"2024-05-01T12:00:00.123Z","d":"2024-05-01","x":"raw"})",
      R"({"i":-9223372036854775808,"f":1e308,"u":"\u00e9\n","o":{"n":7,"m":[1,{"z":null}]}})",
      R"({"i":"42","f":"inf","b":"false","t":1700000000000,"d":19844})",
      R"({"i":null,"f":null,"b":null,"u":null,"extra":{"deep":[true,false,null,"s",1.5e-3]}})",
      R"({"u":1.50,"x":[1,2],"i":3})",     // number/array as text
      R"({"i":1.0})",                      // expected i64
      R"({"i":9223372036854775808})",      // too big for i64
      R"({"b":1})",                        // bool from number
      R"({"i":"nope"})",                   // cast error
      R"({"i":1,"i":2,"u":"a","u":"b"})",  // duplicates: last wins
      R"({"i":"bad","i":5})",              // a bad duplicate overwritten
      R"({"i":1} trailing)",               // trailing content
      R"({"i":1,})",                       // trailing comma
      R"({"i":1,"skip":[1,2,}})",          // malformed skipped value
      R"({"i":1,"skip":tru})",             // bad literal in skipped value
      R"({"i":1,"skip":nul})",
      R"({"i":1,"skip":"\x"})",                            // bad escape in skipped value
      R"({"i":1,"skip":123456789012345678901234567890})",  // big integer
      R"({"o":{"n":"8"},"o":{"n":9}})",                    // duplicate parent object
      R"({"o":[1],"i":2})",                                // parent not an object
      R"([1,2])",
      R"("str")",
      "42",
      "",
      "{",
      "not json",
      std::string("{\"u\":\"a\xff\"}"),  // invalid UTF-8
      R"({"t":"yesterday"})",
      R"({"d":"2023-02-29"})",
      R"({"t":1e300})",
      // Integers beyond 64 bits make the document malformed for the DOM parser; the
      // On-Demand path read them as doubles into float64 columns (found by load_fuzzer).
      R"({"f":123456789012345678901234567890})",
      R"({"f":18446744073709551616})",
      R"({"f":-9223372036854775809})",
      R"({"f":18446744073709551615,"t":9223372036854775807})",  // the largest that parse
      R"({"t":18446744073709551616})",
      R"({"t":11111111111111111111111111.111})",  // read as 0 by On-Demand get_number()
      R"({"f":11111111111111111111111111.111})",
  };
  for (BadRecordPolicy policy : {BadRecordPolicy::kFail, BadRecordPolicy::kDeadLetter}) {
    for (bool strict : {false, true}) {
      LoadOptions o;
      o.on_bad_record = policy;
      o.strict_payload = strict;
      for (const std::string& p : payloads) {
        ASSERT_OK_AND_ASSIGN(auto fast, Loader::Make(s, o));
        ASSERT_OK_AND_ASSIGN(auto dom, Loader::Make(s, o));
        LoaderTesting::ForceDomPath(dom.get(), true);
        StreamRecord r = Rec(p, 3);
        Status a = fast->Append(r), b = dom->Append(r);
        EXPECT_EQ(a.ToString(), b.ToString()) << p;
        ASSERT_OK_AND_ASSIGN(auto wa, fast->Finish());
        ASSERT_OK_AND_ASSIGN(auto wb, dom->Finish());
        EXPECT_TRUE(wa.batch->Equals(*wb.batch)) << p << "\n"
                                                 << wa.batch->ToString() << "\nvs DOM\n"
                                                 << wb.batch->ToString();
        EXPECT_TRUE(wa.dead_letters->Equals(*wb.dead_letters)) << p;
        ASSERT_OK(wa.batch->ValidateFull());
      }
    }
  }
}

// The On-Demand path matches keys in the input text against the keys it saw at the
// same position in earlier records; one window exercises hits and every kind of miss.
TEST(LoaderTest, KeysMatchedInTheInputTextAgreeWithDom) {
  Schema s;
  s.fields = {
      Field("id", TypeId::kInt64),       Field("a_key_longer_than_16", TypeId::kUtf8),
      Field("q\"uo\\te", TypeId::kUtf8), Field("k9_abcdef", TypeId::kInt64),
      Field("s\\", TypeId::kInt64),      Field("_kafka_partition", TypeId::kInt64)};
  s.fields.emplace_back("inner", TypeId::kUtf8);
  s.fields.back().source = {"o", "in"};
  const std::string full =
      R"({"id":1,"a_key_longer_than_16":"a","q\"uo\\te":"b","k9_abcdef":2,"o":{"in":"c"}})";
  const std::vector<std::string> payloads = {
      full,
      full,
      R"({"\u0069d":3,"a_key_longer_than_16":"d"})",  // escaped key at a predicted
                                                      // position
      R"({"idx":4})",                                 // the predicted key is a prefix
      R"({"i":6})",                                   // a shorter key
      R"({"id\u0000":7})",                            // the key plus an escaped byte
      R"({"a_key_longer_than_16":"e","id":9})",       // another order
      R"({"a_key_longer_than_17":"f","id":10})",
      R"({"q\"uo\\te":"g","q\u0022uo\\te":"h"})",  // the same key written two ways
      R"({"o":{"in":"i","in2":"j"},"o":{"inn":1}})",
      R"({"s\\":1})",
      R"({"s\"":2})",  // `s\` then a quote that belongs to the key
      full,
      R"({"id":11,"a_key_longer_than_16":"k","q\"uo\\te":"l","k9_abcdef")",  // truncated
      R"({"id")",
      full,
  };
  for (BadRecordPolicy policy : {BadRecordPolicy::kSkip, BadRecordPolicy::kDeadLetter}) {
    LoadOptions o;
    o.on_bad_record = policy;
    ASSERT_OK_AND_ASSIGN(auto fast, Loader::Make(s, o));
    ASSERT_OK_AND_ASSIGN(auto dom, Loader::Make(s, o));
    LoaderTesting::ForceDomPath(dom.get(), true);
    for (size_t i = 0; i < payloads.size(); ++i) {
      StreamRecord r = Rec(payloads[i], static_cast<int64_t>(i));
      Status a = fast->Append(r), b = dom->Append(r);
      EXPECT_EQ(a.ToString(), b.ToString()) << payloads[i];
    }
    ASSERT_OK_AND_ASSIGN(auto wa, fast->Finish());
    ASSERT_OK_AND_ASSIGN(auto wb, dom->Finish());
    EXPECT_TRUE(wa.batch->Equals(*wb.batch)) << wa.batch->ToString() << "\nvs DOM\n"
                                             << wb.batch->ToString();
    EXPECT_TRUE(wa.dead_letters->Equals(*wb.dead_letters));
    ASSERT_OK(wa.batch->ValidateFull());
    EXPECT_EQ(wa.batch->num_rows(), 16);  // truncated payloads land as nulls (rule 4)
  }
}

}  // namespace
}  // namespace kelt
