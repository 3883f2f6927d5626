// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The value-format keys of a producer config and the encoder's failures that need no
// registry (the registry itself: tests/registry/test_kelt_produce.py).
#include <arrow/api.h>
#include <gtest/gtest.h>

#include "kelt/serde.h"
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
