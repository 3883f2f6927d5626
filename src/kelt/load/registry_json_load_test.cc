// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Load step for JSON payloads in the Confluent wire format (JSON Schema subjects):
// the header taken off, writer schema ids checked once each, the landing of the
// subject's JSON Schema, and bad records by policy with their codes.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "kelt/json_schema.h"
#include "kelt/load.h"
#include "kelt/load/loader_testing.h"
#include "kelt/registry.h"
#include "kelt/testing/arrow_assertions.h"
#include "kelt/testing/assertions.h"
#include "kelt/testing/record_views.h"

namespace kelt {
namespace {

std::string Wire(int32_t id, std::string_view json) {
  return WireHeaderBytes(id) + std::string(json);
}

constexpr std::string_view kOrder = R"({"type":"object","properties":{
  "id":{"type":"integer"},
  "placed":{"type":"string","format":"date-time"},
  "address":{"oneOf":[{"type":"null"},{"$ref":"#/$defs/Address"}]},
  "tags":{"type":"array","items":{"type":"string"}}},
  "$defs":{"Address":{"type":"object","properties":{"city":{"type":"string"}}}}})";

// Ids 1 and 2: JSON schemas; 3: an Avro schema; anything else unknown.
struct Registry {
  Status down;  // when set: every lookup fails with it
  std::map<int32_t, int> lookups;
  Status operator()(int32_t id) {
    ++lookups[id];
    if (!down.ok()) return down;
    if (id == 3) return Status::Invalid("schema id 3 is a AVRO schema, not JSON");
    if (id == 1 || id == 2) return Status::OK();
    return Status::NotFound("schema " + std::to_string(id) + " not found");
  }
};

class RegistryJsonLoadTest : public ::testing::TestWithParam<bool> {
 protected:
  Result<std::unique_ptr<Loader>> Make(BadRecordPolicy policy) {
    KELT_ASSIGN_OR_RAISE(Schema landing, SchemaFromJsonSchema(kOrder));
    landing.fields.insert(landing.fields.begin(), {Field("_kafka_offset", TypeId::kInt64),
                                                   Field("_kafka_value", TypeId::kUtf8)});
    auto json = std::make_shared<RegistryJsonPayload>();
    json->check_schema_id = [this](int32_t id) { return registry_(id); };
    LoadOptions o;
    o.on_bad_record = policy;
    o.registry_json = json;
    KELT_ASSIGN_OR_RAISE(auto loader, Loader::Make(landing, o));
    LoaderTesting::ForceDomPath(loader.get(), GetParam());
    return loader;
  }
  Registry registry_;
};

using testing::ExpectColumn;
using testing::RecordAt;

TEST_P(RegistryJsonLoadTest, TheHeaderComesOffAndEachIdIsCheckedOnce) {
  ASSERT_OK_AND_ASSIGN(auto loader, Make(BadRecordPolicy::kFail));
  EXPECT_EQ(loader->arrow_schema()->ToString(),
            "_kafka_offset: int64\n_kafka_value: string\nid: int64\n"
            "placed: timestamp[us, tz=UTC]\naddress_city: string\ntags: string");
  const std::string first = R"({"id":1,"placed":"2026-12-01T12:00:00Z",)"
                            R"("address":{"city":"Oslo"},"tags":["a","b"]})";
  std::vector<std::optional<std::string>> values = {
      Wire(1, first),
      Wire(2, R"({"id":2,"address":null,"tags":[]})"),
      std::nullopt,  // a tombstone: a row of nulls
      Wire(1, R"({"placed":"2026-12-01T12:00:01.5Z","id":3})"),
      Wire(2, R"({"id":4})"),
  };
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_OK(loader->Append(RecordAt(values[i], static_cast<int64_t>(i))));
  }
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, loader->Finish());
  ExpectColumn(*w.batch, "id", "[1, 2, null, 3, 4]");
  ExpectColumn(*w.batch, "placed",
               "[1796126400000000, null, null, 1796126401500000, null]");
  ExpectColumn(*w.batch, "address_city", R"(["Oslo", null, null, null, null])");
  ExpectColumn(*w.batch, "tags", R"(["[\"a\",\"b\"]", "[]", null, null, null])");
  // `_kafka_value` holds the JSON text, without the header.
  auto value = std::static_pointer_cast<arrow::StringArray>(
      w.batch->GetColumnByName("_kafka_value"));
  EXPECT_EQ(value->GetString(0), first);
  EXPECT_EQ(w.stats.rows, 5);
  EXPECT_EQ(w.stats.tombstones, 1);
  EXPECT_EQ(w.stats.payload_bytes,
            static_cast<int64_t>(values[0]->size() + values[1]->size() +
                                 values[3]->size() + values[4]->size()));
  EXPECT_EQ(registry_.lookups, (std::map<int32_t, int>{{1, 1}, {2, 1}}));

  // The next window remembers the ids.
  ASSERT_OK(loader->Append(RecordAt(Wire(2, R"({"id":5})"), 5)));
  ASSERT_OK_AND_ASSIGN(LoadedWindow w2, loader->Finish());
  ExpectColumn(*w2.batch, "id", "[5]");
  EXPECT_EQ(registry_.lookups, (std::map<int32_t, int>{{1, 1}, {2, 1}}));
}

TEST_P(RegistryJsonLoadTest, BadRecordsBecomeDeadLettersWithTheirCodes) {
  ASSERT_OK_AND_ASSIGN(auto loader, Make(BadRecordPolicy::kDeadLetter));
  std::vector<std::optional<std::string>> values = {
      Wire(1, R"({"id":1})"),
      std::string(R"({"id":2})"),  // plain JSON, without the header
      std::string("\0\0\0", 3),    // too short for a header
      Wire(99, R"({"id":4})"),     // unknown id
      Wire(3, R"({"id":5})"),      // an Avro schema's id
      Wire(1, R"({"id":"six"})"),  // a value of the wrong type
      Wire(1, R"({"id":7)"),       // not JSON
      Wire(99, R"({"id":8})"),     // unknown again: no second lookup
      Wire(-1, R"({"id":8})"),     // ff ff ff ff: an id like any other
      Wire(2, R"({"id":9})"),
  };
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_OK(loader->Append(RecordAt(values[i], static_cast<int64_t>(i))));
  }
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, loader->Finish());
  ExpectColumn(*w.batch, "id", "[1, 9]");
  ExpectColumn(*w.batch, "_kafka_offset", "[0, 9]");
  EXPECT_EQ(w.stats.records, 10);
  EXPECT_EQ(w.stats.bad_records, 8);
  EXPECT_EQ(w.stats.dead_lettered, 8);
  ExpectColumn(*w.dead_letters, "_kafka_offset", "[1, 2, 3, 4, 5, 6, 7, 8]");
  ExpectColumn(*w.dead_letters, "_error_code",
               R"(["MALFORMED_PAYLOAD", "MALFORMED_PAYLOAD", "UNKNOWN_SCHEMA_ID",
                   "INCOMPATIBLE_SCHEMA", "TYPE_MISMATCH", "MALFORMED_PAYLOAD",
                   "UNKNOWN_SCHEMA_ID", "UNKNOWN_SCHEMA_ID"])");
  ExpectColumn(*w.dead_letters, "_error_field",
               R"([null, null, null, null, "id", null, null, null])");
  auto messages = std::static_pointer_cast<arrow::StringArray>(
      w.dead_letters->GetColumnByName("_error_message"));
  EXPECT_NE(messages->GetString(0).find("not in the schema registry's wire format"),
            std::string::npos)
      << messages->GetString(0);
  EXPECT_NE(messages->GetString(2).find("unknown schema id 99"), std::string::npos)
      << messages->GetString(2);
  EXPECT_NE(messages->GetString(3).find("AVRO"), std::string::npos)
      << messages->GetString(3);
  EXPECT_EQ(registry_.lookups,
            (std::map<int32_t, int>{{-1, 1}, {1, 1}, {2, 1}, {3, 1}, {99, 1}}));
  // Dead letters keep the raw record, header included.
  auto raw = std::static_pointer_cast<arrow::BinaryArray>(
      w.dead_letters->GetColumnByName("_kafka_value"));
  EXPECT_EQ(raw->GetString(4), *values[5]);
  EXPECT_EQ(raw->GetString(0), *values[1]);
}

TEST_P(RegistryJsonLoadTest, UnderFailABadRecordNamesItsPlaceAndTheLoaderGoesOn) {
  ASSERT_OK_AND_ASSIGN(auto loader, Make(BadRecordPolicy::kFail));
  ASSERT_OK(loader->Append(RecordAt(Wire(1, R"({"id":1})"), 0)));
  Status st = loader->Append(RecordAt(std::string(R"({"id":2})"), 1));
  ASSERT_EQ(st.code(), StatusCode::kTypeError) << st.ToString();
  EXPECT_NE(st.message().find("wire format"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("orders[1]@1"), std::string::npos) << st.ToString();
  st = loader->Append(RecordAt(Wire(1, R"({"id":true})"), 2));
  ASSERT_EQ(st.code(), StatusCode::kTypeError) << st.ToString();
  EXPECT_NE(st.message().find("field 'id'"), std::string::npos) << st.ToString();
  ASSERT_OK(loader->Append(RecordAt(Wire(1, R"({"id":3})"), 3)));
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, loader->Finish());
  ExpectColumn(*w.batch, "id", "[1, 3]");
  EXPECT_EQ(w.stats.records, 2);
}

TEST_P(RegistryJsonLoadTest, ARegistryThatIsDownEndsTheWindowWhateverThePolicy) {
  registry_.down = Status::Unavailable("registry at http://r:8081 does not answer");
  ASSERT_OK_AND_ASSIGN(auto loader, Make(BadRecordPolicy::kDeadLetter));
  Status st = loader->Append(RecordAt(Wire(1, R"({"id":1})"), 0));
  ASSERT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("orders[1]@0"), std::string::npos) << st.ToString();
  // Not remembered: once it answers, the id's records load.
  registry_.down = Status::OK();
  ASSERT_OK(loader->Append(RecordAt(Wire(1, R"({"id":1})"), 0)));
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, loader->Finish());
  EXPECT_EQ(w.batch->num_rows(), 1);
  EXPECT_EQ(w.stats.records, 1);
  EXPECT_EQ(w.stats.bad_records, 0);
}

INSTANTIATE_TEST_SUITE_P(Readers, RegistryJsonLoadTest, ::testing::Values(false, true),
                         [](const auto& info) {
                           return info.param ? "Dom" : "OnDemand";
                         });

TEST(RegistryJsonLoadOptions, MakeRefusesAvroTogetherAndAMissingCheck) {
  Schema landing({Field("id", TypeId::kInt64)});
  LoadOptions o;
  o.registry_json = std::make_shared<RegistryJsonPayload>();
  EXPECT_STATUS(Loader::Make(landing, o), StatusCode::kInvalid, "a check of schema ids");
  o.avro = std::make_shared<AvroPayload>();
  EXPECT_STATUS(Loader::Make(landing, o), StatusCode::kInvalid, "set one of LoadOptions");
}

}  // namespace
}  // namespace kelt
