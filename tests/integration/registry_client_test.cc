// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// kelt's registry client against a real registry: Apicurio Registry's Confluent API,
// started by the schema_registry ctest fixture (scripts/registry.sh). KELT_REGISTRY_ENV
// names its env file.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include "kelt/registry.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

std::string RegistryUrl() {
  const char* env = std::getenv("KELT_REGISTRY_ENV");
  if (env == nullptr) return "";
  std::ifstream in(env);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("KELT_REGISTRY_URL=", 0) == 0) return line.substr(18);
  }
  return "";
}

std::string FreshSubject(const std::string& stem) {
  std::random_device rd;
  return stem + "-" + std::to_string(rd()) + "-value";
}

class RegistryClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    url_ = RegistryUrl();
    ASSERT_FALSE(url_.empty())
        << "KELT_REGISTRY_ENV must name a running registry's env file";
    RegistryOptions o;
    o.url = url_;
    ASSERT_OK_AND_ASSIGN(registry_, SchemaRegistry::Make(o));
  }
  std::string url_;
  std::unique_ptr<SchemaRegistry> registry_;
};

constexpr const char* kV1 =
    R"({"type":"record","name":"Order","namespace":"shop","fields":[)"
    R"({"name":"id","type":"long"},{"name":"item","type":"string"}]})";
// v1 plus a field with a default: BACKWARD compatible.
constexpr const char* kV2 =
    R"({"type":"record","name":"Order","namespace":"shop","fields":[)"
    R"({"name":"id","type":"long"},{"name":"item","type":"string"},)"
    R"({"name":"qty","type":"int","default":1}]})";
// v1 plus a field without a default: not BACKWARD compatible.
constexpr const char* kBad =
    R"({"type":"record","name":"Order","namespace":"shop","fields":[)"
    R"({"name":"id","type":"long"},{"name":"item","type":"string"},)"
    R"({"name":"price","type":"double"}]})";

TEST_F(RegistryClientTest, AvroSubjectEvolvesUnderBackwardCompatibility) {
  const std::string subject = FreshSubject("orders");
  ASSERT_OK_AND_ASSIGN(bool first_ok,
                       registry_->IsCompatible(subject, SchemaFormat::kAvro, kV1));
  EXPECT_TRUE(first_ok);
  ASSERT_OK_AND_ASSIGN(int32_t id1,
                       registry_->Register(subject, SchemaFormat::kAvro, kV1));
  // Registering the same schema again finds it.
  ASSERT_OK_AND_ASSIGN(int32_t again,
                       registry_->Register(subject, SchemaFormat::kAvro, kV1));
  EXPECT_EQ(again, id1);
  ASSERT_OK_AND_ASSIGN(auto latest, registry_->Latest(subject));
  EXPECT_EQ(latest->id, id1);
  EXPECT_EQ(latest->version, 1);
  EXPECT_EQ(latest->format, SchemaFormat::kAvro);

  ASSERT_OK_AND_ASSIGN(bool bad_ok,
                       registry_->IsCompatible(subject, SchemaFormat::kAvro, kBad));
  EXPECT_FALSE(bad_ok);
  ASSERT_STATUS(registry_->Register(subject, SchemaFormat::kAvro, kBad),
                StatusCode::kInvalid, "refused it");

  ASSERT_OK_AND_ASSIGN(int32_t id2,
                       registry_->Register(subject, SchemaFormat::kAvro, kV2));
  EXPECT_NE(id2, id1);
  ASSERT_OK_AND_ASSIGN(auto v2, registry_->Latest(subject));
  EXPECT_EQ(v2->version, 2);
  ASSERT_OK_AND_ASSIGN(auto by_id, registry_->ById(id2));
  EXPECT_NE(by_id->text.find("qty"), std::string::npos) << by_id->text;
  ASSERT_OK_AND_ASSIGN(auto v1, registry_->Version(subject, 1));
  EXPECT_EQ(v1->id, id1);
}

TEST_F(RegistryClientTest, ProtobufAndJsonSchemasKeepTheirType) {
  const std::string proto_subject = FreshSubject("proto");
  ASSERT_OK_AND_ASSIGN(
      int32_t pid,
      registry_->Register(proto_subject, SchemaFormat::kProtobuf,
                          "syntax = \"proto3\";\npackage shop;\n"
                          "message Order { int64 id = 1; string item = 2; }\n"));
  ASSERT_OK_AND_ASSIGN(auto p, registry_->ById(pid));
  EXPECT_EQ(p->format, SchemaFormat::kProtobuf);
  EXPECT_NE(p->text.find("Order"), std::string::npos) << p->text;

  const std::string json_subject = FreshSubject("json");
  ASSERT_OK_AND_ASSIGN(
      int32_t jid,
      registry_->Register(json_subject, SchemaFormat::kJson,
                          R"({"type":"object","properties":{"id":{"type":"integer"}}})"));
  ASSERT_OK_AND_ASSIGN(auto j, registry_->ById(jid));
  EXPECT_EQ(j->format, SchemaFormat::kJson);
}

TEST_F(RegistryClientTest, UnknownIdsAndSubjectsAreNotFound) {
  ASSERT_STATUS(registry_->ById(987654321), StatusCode::kNotFound,
                "schema id 987654321 is not in the schema registry at " + url_);
  ASSERT_STATUS(registry_->Latest(FreshSubject("nobody")), StatusCode::kNotFound,
                "is not in the schema registry");
}

}  // namespace
}  // namespace kelt
