// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include <arrow/api.h>
#include <google/protobuf/descriptor.pb.h>
#include <gtest/gtest.h>

#include "kelt/common/text.h"
#include "kelt/protobuf.h"
#include "kelt/protobuf/schema.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

constexpr std::string_view kShop = R"(
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order {
  message Line { string sku = 1; int32 qty = 2; message Note { string text = 1; } }
  int64 id = 1;
  repeated Line lines = 2;
  google.protobuf.Timestamp at = 3;
}
message Refund { int64 order_id = 1; }
)";

TEST(ProtobufSchemaTest, ParsesTextWithWellKnownImports) {
  ASSERT_OK_AND_ASSIGN(ProtobufSchema schema, ProtobufSchema::Parse(kShop));
  EXPECT_EQ(schema.file_name(), "schema.proto");
  EXPECT_EQ(schema.package(), "shop");
  ASSERT_OK_AND_ASSIGN(std::string name, schema.MessageName({}));
  EXPECT_EQ(name, "shop.Order");
}

TEST(ProtobufSchemaTest, MessageIndexesSelectNestedMessages) {
  ASSERT_OK_AND_ASSIGN(ProtobufSchema schema, ProtobufSchema::Parse(kShop));
  for (auto [indexes, name] : std::vector<std::pair<std::vector<int32_t>, std::string>>{
           {{0}, "shop.Order"},
           {{1}, "shop.Refund"},
           {{0, 0}, "shop.Order.Line"},
           {{0, 0, 0}, "shop.Order.Line.Note"}}) {
    ASSERT_OK_AND_ASSIGN(std::string got, schema.MessageName(indexes));
    EXPECT_EQ(got, name);
  }
  EXPECT_STATUS(schema.MessageName({2}), StatusCode::kInvalid, "message index 2");
  EXPECT_STATUS(schema.MessageName({1, 0}), StatusCode::kInvalid, "shop.Refund has 0");
  EXPECT_STATUS(schema.MessageName({-1}), StatusCode::kInvalid, "message index -1");
}

TEST(ProtobufSchemaTest, SyntaxErrorsNameFileLineAndColumn) {
  EXPECT_STATUS(
      ProtobufSchema::Parse("syntax = \"proto3\";\nmessage A {\n  int32 x = 1\n}\n"),
      StatusCode::kParseError, "schema.proto:4:1: Expected \";\"");
  EXPECT_STATUS(
      ProtobufSchema::Parse("syntax = \"proto3\";\nmessage A { Missing x = 1; }\n"),
      StatusCode::kInvalid, "\"Missing\" is not defined");
}

TEST(ProtobufSchemaTest, ParsesBase64Descriptors) {
  ASSERT_OK_AND_ASSIGN(ProtobufSchema text, ProtobufSchema::Parse(kShop));
  google::protobuf::FileDescriptorProto proto;
  text.pool()->file->CopyTo(&proto);
  proto.set_name("orders.proto");
  std::string base64 = text::Base64Encode(proto.SerializeAsString());
  ASSERT_OK_AND_ASSIGN(ProtobufSchema schema, ProtobufSchema::Parse(base64 + "\n"));
  EXPECT_EQ(schema.file_name(), "orders.proto");
  ASSERT_OK_AND_ASSIGN(std::string name, schema.MessageName({0, 0}));
  EXPECT_EQ(name, "shop.Order.Line");
  EXPECT_STATUS(ProtobufSchema::Parse("AAAA"), StatusCode::kParseError,
                "neither .proto text nor a base64 FileDescriptorProto");
}

TEST(ProtobufSchemaTest, ResolvesImportsRecursively) {
  constexpr std::string_view kMain = R"(
syntax = "proto3";
import "common/money.proto";
message Invoice { common.Money total = 1; }
)";
  constexpr std::string_view kMoney = R"(
syntax = "proto3";
package common;
import "common/currency.proto";
message Money { int64 units = 1; Currency currency = 2; }
)";
  constexpr std::string_view kCurrency = R"(
syntax = "proto3";
package common;
enum Currency { EUR = 0; USD = 1; }
)";
  // The currency file as a base64 descriptor (an import may be either).
  ASSERT_OK_AND_ASSIGN(ProtobufSchema currency, ProtobufSchema::Parse(kCurrency));
  google::protobuf::FileDescriptorProto proto;
  currency.pool()->file->CopyTo(&proto);
  std::string currency_base64 = text::Base64Encode(proto.SerializeAsString());
  ASSERT_OK_AND_ASSIGN(
      ProtobufSchema schema,
      ProtobufSchema::Parse(kMain, {{"common/money.proto", std::string(kMoney)},
                                    {"common/currency.proto", currency_base64}}));
  ASSERT_OK_AND_ASSIGN(auto plan, ProtobufPlan::Compile(schema));
  EXPECT_EQ(plan->arrow_schema()->ToString(),
            "total: struct<units: int64 not null, currency: dictionary<values=string, "
            "indices=int32, ordered=0> not null>");

  EXPECT_STATUS(
      ProtobufSchema::Parse(kMain, {{"common/money.proto", std::string(kMoney)}}),
      StatusCode::kInvalid,
      "common/money.proto: import \"common/currency.proto\" is neither");
  EXPECT_STATUS(
      ProtobufSchema::Parse("syntax = \"proto3\";\nimport \"a.proto\";\n",
                            {{"a.proto", "syntax = \"proto3\"; import \"b.proto\";"},
                             {"b.proto", "syntax = \"proto3\"; import \"a.proto\";"}}),
      StatusCode::kInvalid, "import cycle");
  EXPECT_STATUS(ProtobufSchema::Parse(kMain, {{"common/money.proto", "message {"}}),
                StatusCode::kParseError, "common/money.proto:1:9");
}

TEST(ProtobufSchemaTest, EveryWellKnownTypeResolves) {
  ASSERT_OK(ProtobufSchema::Parse(R"(
syntax = "proto3";
import "google/protobuf/any.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/empty.proto";
import "google/protobuf/field_mask.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
message A { google.protobuf.Any any = 1; google.protobuf.FieldMask mask = 2; }
)")
                .status());
}

TEST(ProtobufPlanTest, RefusesRecursiveMessagesAndGroups) {
  ASSERT_OK_AND_ASSIGN(ProtobufSchema tree, ProtobufSchema::Parse(R"(
syntax = "proto3";
package t;
message Node { string name = 1; repeated Node children = 2; }
)"));
  EXPECT_STATUS(ProtobufPlan::Compile(tree), StatusCode::kInvalid,
                "children[]: recursive message t.Node");
  ASSERT_OK_AND_ASSIGN(ProtobufSchema value, ProtobufSchema::Parse(R"(
syntax = "proto3";
import "google/protobuf/struct.proto";
message A { google.protobuf.Struct s = 1; }
)"));
  // Struct, Value and ListValue are recursive too, but land as JSON text.
  ASSERT_OK_AND_ASSIGN(auto plan, ProtobufPlan::Compile(value));
  EXPECT_EQ(plan->arrow_schema()->ToString(), "s: string");
  ASSERT_OK_AND_ASSIGN(ProtobufSchema group, ProtobufSchema::Parse(R"(
syntax = "proto2";
message A { optional group G = 1 { optional int32 x = 2; } }
)"));
  EXPECT_STATUS(ProtobufPlan::Compile(group), StatusCode::kInvalid,
                "g: proto2 group fields are not supported");
}

}  // namespace
}  // namespace kelt
