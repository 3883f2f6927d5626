// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// ProtobufSchemaFromArrow: the .proto it derives, that it builds, that its message lands
// back as the same columns, and that rows of those columns round-trip through
// ProtobufEncoder and ProtobufDecoder.
#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include "kelt/protobuf.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

std::shared_ptr<arrow::Schema> Rich() {
  auto line = arrow::struct_(
      {arrow::field("sku", arrow::utf8()), arrow::field("qty", arrow::int32(), false)});
  return arrow::schema({
      arrow::field("id", arrow::int64(), false),
      arrow::field("name", arrow::utf8()),
      arrow::field("price", arrow::float64()),
      arrow::field("ok", arrow::boolean()),
      arrow::field("small", arrow::uint32()),
      arrow::field("at", arrow::timestamp(arrow::TimeUnit::NANO, "UTC")),
      arrow::field("tags", arrow::list(arrow::field("item", arrow::utf8(), false))),
      arrow::field("lines", arrow::list(arrow::field("item", line, false))),
      arrow::field("ship_to", arrow::struct_({arrow::field("city", arrow::utf8())})),
      arrow::field("counts", arrow::map(arrow::utf8(), arrow::int64())),
      arrow::field("blob", arrow::binary()),
  });
}

TEST(ProtobufSchemaFromArrowTest, WritesTheDocumentedMapping) {
  ProtobufSchemaFromArrowOptions o;
  o.message_name = "Order";
  o.package = "shop";
  ASSERT_OK_AND_ASSIGN(std::string text, ProtobufSchemaFromArrow(*Rich(), o));
  EXPECT_EQ(text,
            "syntax = \"proto3\";\n"
            "package shop;\n"
            "import \"google/protobuf/timestamp.proto\";\n"
            "\n"
            "message Order {\n"
            "  message Lines {\n"
            "    optional string sku = 1;\n"
            "    int32 qty = 2;\n"
            "  }\n"
            "  message ShipTo {\n"
            "    optional string city = 1;\n"
            "  }\n"
            "  int64 id = 1;\n"
            "  optional string name = 2;\n"
            "  optional double price = 3;\n"
            "  optional bool ok = 4;\n"
            "  optional uint32 small = 5;\n"
            "  google.protobuf.Timestamp at = 6;\n"
            "  repeated string tags = 7;\n"
            "  repeated Lines lines = 8;\n"
            "  ShipTo ship_to = 9;\n"
            "  map<string, int64> counts = 10;\n"
            "  optional bytes blob = 11;\n"
            "}\n");
}

TEST(ProtobufSchemaFromArrowTest, LandsBackAsTheSameColumns) {
  const auto rich = Rich();
  ASSERT_OK_AND_ASSIGN(std::string text, ProtobufSchemaFromArrow(*rich, {}));
  ASSERT_OK_AND_ASSIGN(ProtobufSchema schema, ProtobufSchema::Parse(text));
  ASSERT_OK_AND_ASSIGN(auto plan, ProtobufPlan::Compile(schema, {0}));
  EXPECT_EQ(plan->message_name(), "Record");
  const arrow::Schema& landed = *plan->arrow_schema();
  ASSERT_EQ(landed.num_fields(), rich->num_fields()) << landed.ToString();
  for (int i = 0; i < landed.num_fields(); ++i) {
    const auto& want = *rich->field(i);
    const auto& got = *landed.field(i);
    EXPECT_EQ(got.name(), want.name());
    // Map entries and list items are named by the decoder's convention; compare types
    // by id at the top and exactly for the scalars.
    EXPECT_EQ(got.type()->id(), want.type()->id())
        << want.name() << ": " << got.ToString();
    if (arrow::is_primitive(want.type()->id()) || arrow::is_string(want.type()->id())) {
      EXPECT_TRUE(got.type()->Equals(*want.type())) << got.ToString();
      EXPECT_EQ(got.nullable(), want.nullable()) << want.name();
    }
  }
}

TEST(ProtobufSchemaFromArrowTest, RowsRoundTripThroughEncoderAndDecoder) {
  auto columns = arrow::schema({
      arrow::field("id", arrow::int64(), false),
      arrow::field("name", arrow::utf8()),
      arrow::field("tags", arrow::list(arrow::field("item", arrow::utf8(), false)),
                   false),
      arrow::field("ship_to", arrow::struct_({arrow::field("city", arrow::utf8())})),
  });
  ASSERT_OK_AND_ASSIGN(std::string text, ProtobufSchemaFromArrow(*columns, {}));
  ASSERT_OK_AND_ASSIGN(ProtobufSchema schema, ProtobufSchema::Parse(text));
  auto rows = arrow::json::ArrayFromJSONString(arrow::struct_(columns->fields()), R"([
      {"id": 1, "name": "a", "tags": ["x", "y"], "ship_to": {"city": "Oslo"}},
      {"id": -2, "name": null, "tags": [], "ship_to": null},
      {"id": 0, "name": "", "tags": ["z"], "ship_to": {"city": null}}])")
                  .ValueOrDie();
  auto batch = arrow::RecordBatch::FromStructArray(rows).ValueOrDie();
  ASSERT_OK_AND_ASSIGN(auto encoder, ProtobufEncoder::Make(schema, {0}, columns));
  std::vector<std::string> bodies;
  ASSERT_OK(encoder->Encode(*batch, &bodies));
  ASSERT_EQ(bodies.size(), 3u);
  ASSERT_OK_AND_ASSIGN(auto plan, ProtobufPlan::Compile(schema, {0}));
  ASSERT_OK_AND_ASSIGN(auto decoder, ProtobufDecoder::Make(plan));
  for (const auto& body : bodies) ASSERT_OK(decoder->Append(body));
  ASSERT_OK_AND_ASSIGN(auto back, decoder->Finish());
  // A null `name` stays null (optional), "" stays "" (present), not a default. (Equals:
  // what a child holds under a null struct is no value.)
  for (int c = 0; c < batch->num_columns(); ++c) {
    EXPECT_TRUE(back->column(c)->Equals(*batch->column(c)))
        << columns->field(c)->name() << ": " << back->column(c)->ToString();
  }
  EXPECT_TRUE(back->column(1)->IsNull(1));
  EXPECT_EQ(back->column(1)->GetScalar(2).ValueOrDie()->ToString(), "");
}

TEST(ProtobufSchemaFromArrowTest, RefusesWhatHasNoProtobufType) {
  auto date = arrow::schema({arrow::field("day", arrow::date32())});
  EXPECT_STATUS(ProtobufSchemaFromArrow(*date, {}), StatusCode::kTypeError,
                "column 'day': date32[day] has no Protobuf type");
  auto nested =
      arrow::schema({arrow::field("m", arrow::list(arrow::list(arrow::int32())))});
  EXPECT_STATUS(ProtobufSchemaFromArrow(*nested, {}), StatusCode::kTypeError,
                "column 'm': ");
  auto bad_name = arrow::schema({arrow::field("order-id", arrow::int32())});
  EXPECT_STATUS(ProtobufSchemaFromArrow(*bad_name, {}), StatusCode::kInvalid,
                "column 'order-id': not a Protobuf field name");
  ProtobufSchemaFromArrowOptions o;
  o.message_name = "orders-value";
  EXPECT_STATUS(ProtobufSchemaFromArrow(*date, o), StatusCode::kInvalid,
                "'orders-value' is not a Protobuf message name");
}

TEST(ProtobufSchemaFromArrowTest, ANestedMessageNeverSharesAFieldsName) {
  auto columns = arrow::schema(
      {arrow::field("Inner", arrow::struct_({arrow::field("a", arrow::int32())}))});
  ASSERT_OK_AND_ASSIGN(std::string text, ProtobufSchemaFromArrow(*columns, {}));
  EXPECT_NE(text.find("message Inner2 {"), std::string::npos) << text;
  EXPECT_OK(ProtobufSchema::Parse(text));
}

TEST(ProtobufSchemaTest, MessageIndexesFindMessagesByFullName) {
  ASSERT_OK_AND_ASSIGN(ProtobufSchema schema, ProtobufSchema::Parse(R"(
      syntax = "proto3";
      package shop;
      message A { message B { message C {} } message D {} }
      message E {})"));
  EXPECT_EQ(schema.MessageIndexes("").ValueOrDie(), std::vector<int32_t>({0}));
  EXPECT_EQ(schema.MessageIndexes("shop.A").ValueOrDie(), std::vector<int32_t>({0}));
  EXPECT_EQ(schema.MessageIndexes("shop.A.B.C").ValueOrDie(),
            std::vector<int32_t>({0, 0, 0}));
  EXPECT_EQ(schema.MessageIndexes("shop.A.D").ValueOrDie(), std::vector<int32_t>({0, 1}));
  EXPECT_EQ(schema.MessageIndexes("shop.E").ValueOrDie(), std::vector<int32_t>({1}));
  EXPECT_STATUS(schema.MessageIndexes("E"), StatusCode::kInvalid,
                "(schema.proto) has no message E");
}

}  // namespace
}  // namespace kelt
