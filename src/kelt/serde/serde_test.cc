// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The value-format keys of a producer config and the encoder's failures that need no
// registry (the registry itself: tests/registry/test_kelt_produce.py).
#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include "kelt/serde.h"
#include "kelt/serde/record_encoders.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

TEST(ValueFormatJsonTest, JsonIsTheDefaultAndNeedsNoRegistry) {
  ASSERT_OK_AND_ASSIGN(auto o, ParseValueFormatJson(R"({"brokers":"b","topic":"t"})"));
  EXPECT_EQ(o.encoder.format, ValueFormat::kJson);
  ASSERT_OK_AND_ASSIGN(auto encoder, MakeValueEncoder(o));
  EXPECT_EQ(encoder, nullptr);
}

TEST(ValueFormatJsonTest, AvroReadsSubjectAndRegistry) {
  ASSERT_OK_AND_ASSIGN(auto o, ParseValueFormatJson(R"({"value_format":"avro",
      "subject":"orders-value","auto_register":true,"record_name":"Order",
      "registry":{"url":"http://r:8081","username":"u","password":"p",
                  "timeout_ms":2500}})"));
  EXPECT_EQ(o.encoder.format, ValueFormat::kAvro);
  EXPECT_EQ(o.encoder.subject, "orders-value");
  EXPECT_TRUE(o.encoder.auto_register);
  EXPECT_EQ(o.encoder.record_name, "Order");
  EXPECT_EQ(o.registry.url, "http://r:8081");
  EXPECT_EQ(o.registry.username, "u");
  EXPECT_EQ(o.registry.password, "p");
  EXPECT_EQ(o.registry.timeout.count(), 2500);
}

TEST(ValueFormatJsonTest, MistakesNameTheKey) {
  auto r = ParseValueFormatJson(R"({"value_format":"avro","registry":{"url":"u"}})");
  EXPECT_EQ(r.status().message(), "subject: value_format avro needs a registry subject");
  r = ParseValueFormatJson(R"({"value_format":"avro","subject":"s"})");
  EXPECT_EQ(r.status().message(),
            "registry.url: value_format avro needs the registry's URL");
  r = ParseValueFormatJson(R"({"value_format":"xml"})");
  EXPECT_EQ(r.status().message(),
            "value_format must be json, avro, protobuf or json-schema, not 'xml'");
  r = ParseValueFormatJson(
      R"({"value_format":"avro","subject":"s","registry":{"url":"u","user":"x"}})");
  EXPECT_NE(r.status().message().find("registry.user: unknown key"), std::string::npos);
  r = ParseValueFormatJson(R"({"subject":"s"})");
  EXPECT_EQ(r.status().message(),
            "subject: needs value_format avro, protobuf or json-schema");
  r = ParseValueFormatJson(
      R"({"value_format":"avro","subject":"s","message":"a.B","registry":{"url":"u"}})");
  EXPECT_EQ(r.status().message(),
            "message: names a Protobuf message: it needs value_format protobuf");
  r = ParseValueFormatJson(R"({"value_format":"protobuf","subject":"s","message":"a.B",
      "auto_register":true,"registry":{"url":"u"}})");
  EXPECT_NE(r.status().message().find("message: picks a message of the subject's latest"),
            std::string::npos)
      << r.status().message();
}

TEST(ValueFormatJsonTest, ProtobufAndJsonSchemaReadTheirKeys) {
  ASSERT_OK_AND_ASSIGN(auto o, ParseValueFormatJson(R"({"value_format":"protobuf",
      "subject":"orders-value","message":"shop.Order.Line","registry":{"url":"u"}})"));
  EXPECT_EQ(o.encoder.format, ValueFormat::kProtobuf);
  EXPECT_EQ(o.encoder.message, "shop.Order.Line");
  EXPECT_FALSE(o.encoder.auto_register);
  ASSERT_OK_AND_ASSIGN(o, ParseValueFormatJson(R"({"value_format":"json-schema",
      "subject":"s","auto_register":true,"registry":{"url":"u"}})"));
  EXPECT_EQ(o.encoder.format, ValueFormat::kJsonSchema);
  EXPECT_TRUE(o.encoder.auto_register);
}

TEST(RegistryEncoderTest, ARegistryThatDoesNotAnswerIsUnavailable) {
  RegistryOptions registry;
  registry.url = "http://127.0.0.1:9";
  registry.retries = 0;
  registry.timeout = std::chrono::milliseconds(2000);
  RegistryEncoderOptions options;
  options.subject = "s-value";
  auto r = MakeRegistryEncoder(registry, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  EXPECT_NE(r.status().message().find("127.0.0.1:9"), std::string::npos);
  for (ValueFormat f : {ValueFormat::kProtobuf, ValueFormat::kJsonSchema}) {
    options.format = f;
    r = MakeRegistryEncoder(registry, options);
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  }
  options.format = ValueFormat::kJsonSchema;
  options.message = "a.B";
  r = MakeRegistryEncoder(registry, options);
  EXPECT_STATUS(r, StatusCode::kInvalid, "it needs value format protobuf");
}

}  // namespace
}  // namespace kelt

namespace kelt::serde {
namespace {

std::shared_ptr<arrow::RecordBatch> BatchOf(const std::shared_ptr<arrow::Schema>& schema,
                                            std::string_view json) {
  auto rows = arrow::json::ArrayFromJSONString(arrow::struct_(schema->fields()), json)
                  .ValueOrDie();
  return arrow::RecordBatch::FromStructArray(rows).ValueOrDie();
}

TEST(JsonRowsTest, RowsBecomeObjectsWithoutTheirNulls) {
  auto schema = arrow::schema({
      arrow::field("id", arrow::int64()),
      arrow::field("w", arrow::float64()),
      arrow::field("name", arrow::utf8()),
      arrow::field("at", arrow::timestamp(arrow::TimeUnit::NANO, "UTC")),
      arrow::field("day", arrow::date32()),
      arrow::field("blob", arrow::binary()),
      arrow::field("tags", arrow::list(arrow::utf8())),
      arrow::field("pos", arrow::struct_({arrow::field("x", arrow::int32()),
                                          arrow::field("y", arrow::int32())})),
  });
  ASSERT_OK(CheckJsonWritable(*schema));
  auto batch = BatchOf(schema, R"([
      {"id": 1, "w": 2.0, "name": "a\"b", "at": 1764590400123456789, "day": 20423,
       "blob": "hi", "tags": ["x", null], "pos": {"x": 1, "y": null}},
      {"id": null, "w": null, "name": null, "at": null, "day": null, "blob": null,
       "tags": null, "pos": null}])");
  std::vector<std::string> out;
  ASSERT_OK(AppendRowsJson(*batch, "H", &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0],
            R"(H{"id":1,"w":2.0,"name":"a\"b","at":"2025-12-01T12:00:00.123456Z",)"
            R"("day":"2025-12-01","blob":"aGk=","tags":["x",null],"pos":{"x":1}})");
  EXPECT_EQ(out[1], "H{}");
}

TEST(JsonRowsTest, TypesWithoutAJsonFormAreRefusedByName) {
  auto schema = arrow::schema({arrow::field(
      "s", arrow::struct_({arrow::field("t", arrow::time32(arrow::TimeUnit::SECOND))}))});
  EXPECT_STATUS(CheckJsonWritable(*schema), StatusCode::kTypeError,
                "column 's.t': time32[s] has no JSON form");
}

constexpr std::string_view kOrderSchema = R"({
  "type": "object",
  "properties": {
    "id": {"type": "integer"}, "w": {"type": "number"}, "ok": {"type": "boolean"},
    "name": {"type": ["string", "null"]}, "any": {},
    "at": {"type": "string", "format": "date-time"},
    "pos": {"type": "object", "properties": {"x": {"type": "integer"}}}}})";

TEST(JsonSchemaCheckTest, ValuesThatFitPass) {
  auto schema = arrow::schema({
      arrow::field("id", arrow::float64()),  // integral floats are integers
      arrow::field("w", arrow::int64()),     // integers are numbers
      arrow::field("ok", arrow::boolean()),
      arrow::field("name", arrow::utf8()),
      arrow::field("any", arrow::int64()),  // an untyped property takes anything
      arrow::field("at", arrow::utf8()),
      arrow::field("pos", arrow::struct_({arrow::field("x", arrow::int64())})),
  });
  ASSERT_OK_AND_ASSIGN(auto check, JsonSchemaCheck::Make(kOrderSchema, schema));
  auto batch = BatchOf(schema, R"([
      {"id": 3.0, "w": 1, "ok": true, "name": "a", "any": 5,
       "at": "2026-01-01T00:00:00Z", "pos": {"x": 2}},
      {"id": null, "w": null, "ok": null, "name": null, "any": null, "at": null,
       "pos": null}])");
  EXPECT_OK(check.CheckRows(*batch, "s"));
}

TEST(JsonSchemaCheckTest, TheFirstMisfitIsNamedByRecordAndField) {
  struct Case {
    std::shared_ptr<arrow::Schema> schema;
    std::string rows;
    std::string error;
  };
  const std::vector<Case> cases = {
      {arrow::schema({arrow::field("id", arrow::float64())}),
       R"([{"id": 1.0}, {"id": null}, {"id": 2.5}])",
       "record 2: field 'id': 2.5 is not an integer (subject 's')"},
      {arrow::schema({arrow::field("name", arrow::int64())}),
       R"([{"name": null}, {"name": 7}])",
       "record 1: field 'name': an integer where the schema wants a string"},
      {arrow::schema({arrow::field("ok", arrow::utf8())}), R"([{"ok": "yes"}])",
       "record 0: field 'ok': a string where the schema wants a boolean"},
      {arrow::schema({arrow::field("at", arrow::utf8())}), R"([{"at": "noon"}])",
       R"(record 0: field 'at': "noon" is not a date-time string)"},
      {arrow::schema({arrow::field("coupon", arrow::utf8())}),
       R"([{"coupon": null}, {"coupon": "X"}])",
       "record 1: field 'coupon': not a property of the subject's JSON Schema"},
      {arrow::schema(
           {arrow::field("pos", arrow::struct_({arrow::field("x", arrow::utf8())}))}),
       R"([{"pos": null}, {"pos": {"x": "left"}}])",
       "record 1: field 'pos.x': a string where the schema wants an integer"},
  };
  for (const Case& c : cases) {
    ASSERT_OK_AND_ASSIGN(auto check, JsonSchemaCheck::Make(kOrderSchema, c.schema));
    EXPECT_STATUS(check.CheckRows(*BatchOf(c.schema, c.rows), "s"),
                  StatusCode::kTypeError, c.error);
  }
}

}  // namespace
}  // namespace kelt::serde
