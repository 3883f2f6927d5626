// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/record.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// CONTRACT §2's example, as one list.
constexpr std::string_view kRdpRecords =
    R"({"records":[{"topic":"events","partition":0,"offset":42,"timestamp_ms":1000,"key":"k",)"
    R"("value":"{\"id\":1}","headers":[{"name":"h","value":"v"}]}]})";

std::vector<StreamRecord> MustParse(std::string_view json) {
  auto r = ParseRecordsJson(json);
  EXPECT_OK(r) << json;
  return r.ok() ? *r : std::vector<StreamRecord>();
}

Status Fails(std::string_view json) {
  auto r = ParseRecordsJson(json);
  EXPECT_FALSE(r.ok()) << json;
  return r.status();
}

StreamRecord Minimal() {
  StreamRecord r;
  r.topic = "t";
  r.partition = 1;
  r.offset = 2;
  r.value = "v";
  return r;
}

TEST(RecordJson, RdpExampleRoundTripsByteExact) {
  auto records = MustParse(kRdpRecords);
  ASSERT_EQ(records.size(), 1u);
  const StreamRecord& r = records[0];
  EXPECT_EQ(r.topic, "events");
  EXPECT_EQ(r.partition, 0);
  EXPECT_EQ(r.offset, 42);
  EXPECT_EQ(r.timestamp_ms, 1000);
  EXPECT_EQ(r.timestamp_type, TimestampType::kNotAvailable);
  EXPECT_EQ(r.key, "k");
  EXPECT_EQ(r.value, R"({"id":1})");
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0], (RecordHeader{"h", "v"}));
  EXPECT_EQ(RecordsToJson(records), kRdpRecords);
  EXPECT_EQ(MustParse(RecordsToJson(records)), records);
}

TEST(RecordJson, BareArrayAccepted) {
  auto records = MustParse(R"([{"topic":"t","partition":1,"offset":2,"value":"v"}])");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0], Minimal());
  // Output is always the object form.
  EXPECT_EQ(RecordsToJson(records),
            R"({"records":[{"topic":"t","partition":1,"offset":2,"value":"v"}]})");
}

TEST(RecordJson, EmptyLists) {
  EXPECT_TRUE(MustParse(R"({"records":[]})").empty());
  EXPECT_TRUE(MustParse("[]").empty());
  EXPECT_EQ(RecordsToJson({}), R"({"records":[]})");
}

TEST(RecordJson, OptionalKeysOmittedWhenAbsent) {
  EXPECT_EQ(RecordToJson(Minimal()),
            R"({"topic":"t","partition":1,"offset":2,"value":"v"})");
  auto records = MustParse(
      R"([{"topic":"t","partition":1,"offset":2,"value":"v","timestamp_ms":null,"key":null,"headers":[]}])");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].timestamp_ms.has_value());
  EXPECT_FALSE(records[0].key.has_value());
  EXPECT_TRUE(records[0].headers.empty());
  EXPECT_EQ(RecordToJson(records[0]),
            R"({"topic":"t","partition":1,"offset":2,"value":"v"})");
  EXPECT_EQ(
      MustParse(
          R"([{"topic":"t","partition":1,"offset":2,"value":"v","headers":null}])")[0],
      Minimal());
}

TEST(RecordJson, KeyOrderIsFixedOnOutput) {
  auto records = MustParse(
      R"([{"headers":[["a","b"]],"value":"v","key":"k","timestamp_type":"log_append_time",)"
      R"("timestamp_ms":-5,"offset":9,"partition":3,"topic":"x"}])");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(RecordToJson(records[0]),
            R"({"topic":"x","partition":3,"offset":9,"timestamp_ms":-5,)"
            R"("timestamp_type":"log_append_time","key":"k","value":"v",)"
            R"("headers":[{"name":"a","value":"b"}]})");
}

TEST(RecordJson, TombstoneValue) {
  auto records = MustParse(R"([{"topic":"t","partition":0,"offset":0,"value":null}])");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].value.has_value());
  EXPECT_EQ(RecordToJson(records[0]),
            R"({"topic":"t","partition":0,"offset":0,"value":""})");
  // The empty string is a value, not a tombstone.
  records = MustParse(R"([{"topic":"t","partition":0,"offset":0,"value":""}])");
  EXPECT_EQ(records[0].value, "");
}

TEST(RecordJson, Headers) {
  auto records = MustParse(
      R"([{"topic":"t","partition":0,"offset":0,"value":"v","headers":[)"
      R"({"name":"a","value":"1"},{"name":"b","value":null},{"name":"c"},["d","4"],["e",null],)"
      R"({"value":"x","name":"f","other":true}]}])");
  ASSERT_EQ(records.size(), 1u);
  const auto& h = records[0].headers;
  ASSERT_EQ(h.size(), 6u);
  EXPECT_EQ(h[0], (RecordHeader{"a", "1"}));
  EXPECT_EQ(h[1], (RecordHeader{"b", std::nullopt}));
  EXPECT_EQ(h[2], (RecordHeader{"c", std::nullopt}));
  EXPECT_EQ(h[3], (RecordHeader{"d", "4"}));
  EXPECT_EQ(h[4], (RecordHeader{"e", std::nullopt}));
  EXPECT_EQ(h[5], (RecordHeader{"f", "x"}));
  EXPECT_EQ(
      RecordToJson(records[0]),
      R"({"topic":"t","partition":0,"offset":0,"value":"v","headers":[)"
      R"({"name":"a","value":"1"},{"name":"b","value":null},{"name":"c","value":null},)"
      R"({"name":"d","value":"4"},{"name":"e","value":null},{"name":"f","value":"x"}]})");
  EXPECT_EQ(MustParse(RecordsToJson(records)), records);
}

TEST(RecordJson, TimestampType) {
  EXPECT_EQ(TimestampTypeName(TimestampType::kNotAvailable), "not_available");
  EXPECT_EQ(TimestampTypeName(TimestampType::kCreateTime), "create_time");
  EXPECT_EQ(TimestampTypeName(TimestampType::kLogAppendTime), "log_append_time");
  for (TimestampType t : {TimestampType::kCreateTime, TimestampType::kLogAppendTime}) {
    StreamRecord r = Minimal();
    r.timestamp_ms = 7;
    r.timestamp_type = t;
    const std::string json = RecordToJson(r);
    EXPECT_EQ(
        json,
        R"({"topic":"t","partition":1,"offset":2,"timestamp_ms":7,"timestamp_type":")" +
            std::string(TimestampTypeName(t)) + R"(","value":"v"})");
    std::vector<StreamRecord> one{r};
    EXPECT_EQ(MustParse(RecordsToJson(one)), one);
  }
  // not_available is the default and is not written.
  auto records = MustParse(
      R"([{"topic":"t","partition":1,"offset":2,"value":"v","timestamp_type":"not_available"}])");
  EXPECT_EQ(RecordToJson(records[0]),
            R"({"topic":"t","partition":1,"offset":2,"value":"v"})");
  Status st = Fails(
      R"([{"topic":"t","partition":1,"offset":2,"value":"v","timestamp_type":"CreateTime"}])");
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_EQ(st.message(),
            R"(records[0].timestamp_type: expected "create_time", "log_append_time" or )"
            R"("not_available", got "CreateTime")");
  st =
      Fails(R"([{"topic":"t","partition":1,"offset":2,"value":"v","timestamp_type":1}])");
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
}

TEST(RecordJson, IntegerRanges) {
  auto records = MustParse(
      R"([{"topic":"t","partition":2147483647,"offset":9223372036854775807,"value":"v",)"
      R"("timestamp_ms":-9223372036854775808},)"
      R"({"topic":"t","partition":-2147483648,"offset":-1,"value":"v"}])");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].partition, std::numeric_limits<int32_t>::max());
  EXPECT_EQ(records[0].offset, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(records[0].timestamp_ms, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(records[1].partition, std::numeric_limits<int32_t>::min());
  EXPECT_EQ(MustParse(RecordsToJson(records)), records);
}

TEST(RecordJson, ErrorsNameRecordAndKey) {
  struct Case {
    std::string_view json;
    std::string_view message;
  };
  const Case cases[] = {
      {R"([{"topic":"t","partition":0,"offset":0,"value":"v"},{"topic":"t","partition":2147483648,"offset":0,"value":"v"}])",
       "records[1].partition: expected an integer that fits i32, got 2147483648"},
      {R"([{"topic":"t","partition":-2147483649,"offset":0,"value":"v"}])",
       "records[0].partition: expected an integer that fits i32, got -2147483649"},
      {R"([{"topic":"t","partition":1.0,"offset":0,"value":"v"}])",
       "records[0].partition: expected an integer that fits i32, got 1.0"},
      {R"([{"topic":"t","partition":"1","offset":0,"value":"v"}])",
       R"(records[0].partition: expected an integer that fits i32, got "1")"},
      {R"([{"topic":"t","partition":0,"offset":9223372036854775808,"value":"v"}])",
       "records[0].offset: expected an integer that fits i64, got 9223372036854775808"},
      {R"([{"topic":"t","partition":0,"offset":null,"value":"v"}])",
       "records[0].offset: expected an integer that fits i64, got null"},
      {R"([{"topic":5,"partition":0,"offset":0,"value":"v"}])",
       "records[0].topic: expected a string, got 5"},
      {R"([{"topic":"t","partition":0,"offset":0,"value":{"id":1}}])",
       R"(records[0].value: expected a string or null, got {"id":1})"},
      {R"([{"topic":"t","partition":0,"offset":0,"value":"v","key":1}])",
       "records[0].key: expected a string or null, got 1"},
      {R"([{"topic":"t","partition":0,"offset":0,"value":"v","timestamp_ms":1.5}])",
       "records[0].timestamp_ms: expected an integer (ms since the epoch) or null, got "
       "1.5"},
      {R"([{"topic":"t","partition":0,"offset":0,"value":"v","headers":{"a":"b"}}])",
       R"(records[0].headers: expected an array of headers, got {"a":"b"})"},
      {R"([{"topic":"t","partition":0,"offset":0,"value":"v","headers":[["a","b","c"]]}])",
       R"(records[0].headers[0]: expected {"name":"h","value":"v"} or ["h","v"], got ["a","b","c"])"},
      {R"([{"topic":"t","partition":0,"offset":0,"value":"v","headers":[{"value":"x"}]}])",
       R"(records[0].headers[0]: expected {"name":"h","value":"v"} or ["h","v"], got {"value":"x"})"},
      {R"([{"topic":"t","partition":0,"offset":0,"value":"v","headers":[[1,"b"]]}])",
       R"(records[0].headers[0]: expected {"name":"h","value":"v"} or ["h","v"], got [1,"b"])"},
      {R"([{"topic":"t","partition":0,"offset":0,"value":"v","headers":[["a",2]]}])",
       R"(records[0].headers[0]: expected {"name":"h","value":"v"} or ["h","v"], got ["a",2])"},
      {R"([{"partition":0,"offset":0,"value":"v"}])", "records[0]: missing key 'topic'"},
      {R"([{"topic":"t","offset":0,"value":"v"}])",
       "records[0]: missing key 'partition'"},
      {R"([{"topic":"t","partition":0,"value":"v"}])",
       "records[0]: missing key 'offset'"},
      {R"([{"topic":"t","partition":0,"offset":0},{}])",
       "records[0]: missing key 'value'"},
      {R"([{"topic":"t","topic":"u","partition":0,"offset":0,"value":"v"}])",
       "records[0]: duplicate key 'topic'"},
      {R"([{"topic":"t","partition":0,"offset":0,"value":"v"},"x"])",
       R"(records[1]: expected a record object like {"topic":…,"partition":…,"offset":…,"value":…}, got "x")"},
      {R"({"recs":[]})", "missing key 'records'"},
      {R"({"records":{}})", "records: expected an array of records, got {}"},
      {"5", R"(expected {"records":[…]} or an array of records, got 5)"},
  };
  for (const Case& c : cases) {
    Status st = Fails(c.json);
    EXPECT_EQ(st.code(), StatusCode::kInvalid) << c.json;
    EXPECT_EQ(st.message(), c.message) << c.json;
  }
}

TEST(RecordJson, MalformedJsonIsParseError) {
  for (std::string_view bad :
       {"", "[", R"({"records":[)", "[{}]]", "{\"records\":[\"\xC3\"]}"}) {
    Status st = Fails(bad);
    EXPECT_EQ(st.code(), StatusCode::kParseError) << bad;
    EXPECT_EQ(st.message().rfind("invalid JSON: ", 0), 0u) << st.message();
  }
}

TEST(RecordJson, UnknownKeysIgnored) {
  auto records = MustParse(
      R"({"records":[{"topic":"t","partition":1,"offset":2,"value":"v","leader_epoch":3,"x":{"y":[1]}}],"next":"z"})");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0], Minimal());
}

TEST(RecordJson, StringsEscapedUnicodeAndControl) {
  StreamRecord r = Minimal();
  r.topic = "t\xC3\xA9";
  r.key = std::string("k\0\x1f\"\\", 5);
  r.value = "line1\nline2\t\xF0\x9F\x98\x80";
  r.headers.push_back({"h\r", std::string("\0", 1)});
  const std::string json = RecordToJson(r);
  EXPECT_EQ(json,
            "{\"topic\":\"t\xC3\xA9\",\"partition\":1,\"offset\":2,\"key\":"
            "\"k\\u0000\\u001f\\\"\\\\\","
            "\"value\":\"line1\\nline2\\t\xF0\x9F\x98\x80\",\"headers\":[{\"name\":"
            "\"h\\r\",\"value\":"
            "\"\\u0000\"}]}");
  std::vector<StreamRecord> one{r};
  EXPECT_EQ(MustParse(RecordsToJson(one)), one);
  // Escaped input forms decode to the same bytes.
  auto parsed = MustParse(
      R"([{"topic":"t","partition":1,"offset":2,"value":"\u00e9\ud83d\ude00\/"}])");
  EXPECT_EQ(parsed[0].value, "\xC3\xA9\xF0\x9F\x98\x80/");
}

TEST(RecordJson, InvalidUtf8BecomesReplacementCharacter) {
  const std::string r(kReplacement);
  StreamRecord rec = Minimal();
  rec.key = "k\xFF";
  rec.value = "\xC3(";  // truncated sequence then '('
  rec.headers.push_back({"h\xED\xA0\x80", "\x80"});
  const std::string json = RecordToJson(rec);
  EXPECT_EQ(json, "{\"topic\":\"t\",\"partition\":1,\"offset\":2,\"key\":\"k" + r +
                      "\",\"value\":\"" + r + "(\",\"headers\":[{\"name\":\"h" + r + r +
                      r + "\",\"value\":\"" + r + "\"}]}");
  // The output is valid JSON and parses back with the replacements.
  auto back = MustParse("[" + json + "]");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].value, r + "(");
}

TEST(RecordJson, ManyRecordsRoundTrip) {
  std::vector<StreamRecord> records;
  for (int i = 0; i < 1000; ++i) {
    StreamRecord r;
    r.topic = "topic-" + std::to_string(i % 3);
    r.partition = i % 7;
    r.offset = i;
    if (i % 2 == 0) r.timestamp_ms = 1700000000000 + i;
    if (i % 3 == 0) r.key = "key" + std::to_string(i);
    if (i % 5 != 0)
      r.value = R"({"i":)" + std::to_string(i) + "}";
    else
      r.value = std::string();  // tombstones do not round-trip (they become ""), so no
                                // nullopt here
    if (i % 11 == 0) r.headers.push_back({"n", std::nullopt});
    records.push_back(std::move(r));
  }
  EXPECT_EQ(MustParse(RecordsToJson(records)), records);
}

TEST(RecordJson, ViewOfRecord) {
  StreamRecord r = Minimal();
  r.timestamp_ms = 99;
  r.timestamp_type = TimestampType::kCreateTime;
  r.key = "k";
  r.headers = {{"a", "1"}, {"b", std::nullopt}};
  std::vector<HeaderView> scratch = {{"stale", std::nullopt}};
  RecordView v = ViewOf(r, &scratch);
  EXPECT_EQ(v.topic, "t");
  EXPECT_EQ(v.topic.data(), r.topic.data());  // a view, not a copy
  EXPECT_EQ(v.partition, 1);
  EXPECT_EQ(v.offset, 2);
  EXPECT_EQ(v.timestamp_ms, 99);
  EXPECT_EQ(v.timestamp_type, TimestampType::kCreateTime);
  EXPECT_EQ(v.key, "k");
  EXPECT_EQ(v.value, "v");
  ASSERT_EQ(v.headers.size(), 2u);
  EXPECT_EQ(v.headers[0].name, "a");
  EXPECT_EQ(v.headers[0].value, "1");
  EXPECT_EQ(v.headers[1].name, "b");
  EXPECT_FALSE(v.headers[1].value.has_value());

  StreamRecord tomb = Minimal();
  tomb.value.reset();
  RecordView tv = ViewOf(tomb, &scratch);
  EXPECT_FALSE(tv.value.has_value());
  EXPECT_FALSE(tv.key.has_value());
  EXPECT_TRUE(tv.headers.empty());
}

}  // namespace
}  // namespace kelt
