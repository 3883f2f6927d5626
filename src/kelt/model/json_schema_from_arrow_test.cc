// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// JsonSchemaFromArrow: the JSON Schema it derives, and that kelt lands it (the registry
// round trip of the produce side) as the columns the rows had.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include "kelt/json_schema.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

TEST(JsonSchemaFromArrowTest, WritesDraft07WithNullableTypes) {
  auto schema = arrow::schema({
      arrow::field("id", arrow::int64(), false),
      arrow::field("price", arrow::float64()),
      arrow::field("ok", arrow::boolean()),
      arrow::field("name", arrow::utf8()),
      arrow::field("at", arrow::timestamp(arrow::TimeUnit::SECOND)),
      arrow::field("day", arrow::date32()),
      arrow::field("blob", arrow::binary()),
      arrow::field("tags", arrow::list(arrow::utf8())),
      arrow::field("ship", arrow::struct_({arrow::field("city", arrow::utf8(), false)})),
      arrow::field("none", arrow::null()),
  });
  ASSERT_OK_AND_ASSIGN(std::string text, JsonSchemaFromArrow(*schema, "Order"));
  EXPECT_EQ(text,
            R"({"$schema":"http://json-schema.org/draft-07/schema#","title":"Order",)"
            R"("type":"object","properties":{"id":{"type":"integer"},)"
            R"("price":{"type":["number","null"]},"ok":{"type":["boolean","null"]},)"
            R"("name":{"type":["string","null"]},)"
            R"("at":{"type":["string","null"],"format":"date-time"},)"
            R"("day":{"type":["string","null"],"format":"date"},)"
            R"("blob":{"type":["string","null"],"contentEncoding":"base64"},)"
            R"("tags":{"type":["array","null"],"items":{"type":["string","null"]}},)"
            R"("ship":{"type":["object","null"],"properties":{"city":{"type":"string"}},)"
            R"("required":["city"]},"none":{}},"required":["id"]})");
}

TEST(JsonSchemaFromArrowTest, LandsAsTheRowsColumns) {
  auto schema = arrow::schema({
      arrow::field("id", arrow::int64()),
      arrow::field("price", arrow::float32()),
      arrow::field("ok", arrow::boolean()),
      arrow::field("name", arrow::utf8()),
      arrow::field("at", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
      arrow::field("day", arrow::date32()),
      arrow::field("tags", arrow::list(arrow::int32())),
      arrow::field("ship", arrow::struct_({arrow::field("city", arrow::utf8())})),
  });
  ASSERT_OK_AND_ASSIGN(std::string text, JsonSchemaFromArrow(*schema, "R"));
  ASSERT_OK_AND_ASSIGN(Schema landing, SchemaFromJsonSchema(text));
  ASSERT_EQ(landing.fields.size(), 8u);
  const std::vector<std::pair<std::string, TypeId>> want = {
      {"id", TypeId::kInt64},       {"price", TypeId::kFloat64}, {"ok", TypeId::kBool},
      {"name", TypeId::kUtf8},      {"at", TypeId::kTimestamp},  {"day", TypeId::kDate},
      {"tags", TypeId::kUtf8},  // an array lands as its JSON text
      {"ship_city", TypeId::kUtf8},
  };
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(landing.fields[i].name, want[i].first);
    EXPECT_EQ(landing.fields[i].type, want[i].second) << want[i].first;
  }
  EXPECT_EQ(landing.fields[7].source, std::vector<std::string>({"ship", "city"}));
}

TEST(JsonSchemaFromArrowTest, RefusesTypesWithoutAJsonForm) {
  auto schema = arrow::schema({arrow::field(
      "s",
      arrow::struct_({arrow::field("d", arrow::duration(arrow::TimeUnit::MILLI))}))});
  EXPECT_STATUS(JsonSchemaFromArrow(*schema, "R"), StatusCode::kTypeError,
                "column 's.d': duration[ms] has no JSON Schema type");
}

}  // namespace
}  // namespace kelt
