// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Load step for Avro payloads in the Confluent wire format: writer schemas by id,
// rows in window order across writer schemas and tombstones, metadata columns, and bad
// records by policy with their codes.
#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <map>

#include "kelt/load.h"
#include "kelt/load/wire_testing.h"
#include "kelt/testing/arrow_assertions.h"
#include "kelt/testing/assertions.h"
#include "kelt/testing/record_views.h"

namespace kelt {
namespace {

// Avro binary by hand: zigzag varints, length-prefixed strings.
std::string Long(int64_t v) { return load::testing::Zigzag(v); }
std::string Str(std::string_view s) {
  return Long(static_cast<int64_t>(s.size())) + std::string(s);
}
std::string Double(double d) {
  std::string out(8, '\0');
  std::memcpy(out.data(), &d, 8);
  return out;
}
std::string Wire(int32_t id, const std::string& body) {
  return load::testing::WireHeader(id) + body;
}

// Writer v1 (id 1): id, name. Reader v2 (id 2): adds an optional score. Id 3: `id` as
// a string (cannot be read as v2). Id 4: a Protobuf schema (not Avro).
constexpr const char* kV1 = R"({"type":"record","name":"Order","fields":[
  {"name":"id","type":"long"},{"name":"name","type":"string"}]})";
constexpr const char* kV2 = R"({"type":"record","name":"Order","fields":[
  {"name":"id","type":"long"},{"name":"name","type":"string"},
  {"name":"score","type":["null","double"],"default":null}]})";
constexpr const char* kV3 = R"({"type":"record","name":"Order","fields":[
  {"name":"id","type":"string"},{"name":"name","type":"string"}]})";

struct Registry {
  std::map<int32_t, std::string> schemas{{1, kV1}, {2, kV2}, {3, kV3}};
  Status down;  // when set: every lookup fails with it
  int lookups = 0;
  Result<std::string> operator()(int32_t id) {
    ++lookups;
    if (!down.ok()) return down;
    if (id == 4) return Status::Invalid("schema id 4 is a PROTOBUF schema, not AVRO");
    auto it = schemas.find(id);
    if (it == schemas.end()) return Status::NotFound("schema " + std::to_string(id));
    return it->second;
  }
};

class AvroLoadTest : public ::testing::Test {
 protected:
  Result<std::unique_ptr<Loader>> Make(BadRecordPolicy policy,
                                       std::vector<Field> metadata = {
                                           {"_kafka_partition", TypeId::kInt64},
                                           {"_kafka_offset", TypeId::kInt64}}) {
    auto avro = std::make_shared<AvroPayload>();
    avro->reader_schema = kV2;
    avro->reader_schema_id = 2;
    avro->writer_schema = [this](int32_t id) { return registry_(id); };
    LoadOptions o;
    o.on_bad_record = policy;
    o.avro = avro;
    return Loader::Make(Schema(std::move(metadata)), o);
  }
  static RecordView View(const std::optional<std::string>& value, int64_t offset) {
    return load::testing::OrdersRecord(value, offset);
  }
  Registry registry_;
};

using testing::ExpectCellHas;
using testing::ExpectColumn;
using testing::RecordAt;

TEST_F(AvroLoadTest, RowsOfSeveralWriterSchemasAndTombstonesKeepTheirOrder) {
  ASSERT_OK_AND_ASSIGN(auto loader, Make(BadRecordPolicy::kFail));
  EXPECT_EQ(loader->arrow_schema()->ToString(),
            "id: int64\nname: string\nscore: double\n_kafka_partition: int64\n"
            "_kafka_offset: int64");
  std::vector<std::optional<std::string>> values = {
      Wire(1, Long(1) + Str("a")),
      Wire(2, Long(2) + Str("b") + Long(1) + Double(2.5)),
      std::nullopt,
      Wire(1, Long(4) + Str("d")),
      Wire(1, Long(5) + Str("e")),
      Wire(2, Long(6) + Str("f") + Long(0)),
  };
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_OK(loader->Append(RecordAt(values[i], static_cast<int64_t>(i) + 10)));
  }
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, loader->Finish());
  ASSERT_OK(w.batch->ValidateFull().ok()
                ? Status::OK()
                : Status::Internal(w.batch->ValidateFull().ToString()));
  ExpectColumn(*w.batch, "id", "[1, 2, null, 4, 5, 6]");
  ExpectColumn(*w.batch, "name", R"(["a", "b", null, "d", "e", "f"])");
  ExpectColumn(*w.batch, "score", "[null, 2.5, null, null, null, null]");
  ExpectColumn(*w.batch, "_kafka_offset", "[10, 11, 12, 13, 14, 15]");
  ExpectColumn(*w.batch, "_kafka_partition", "[1, 1, 1, 1, 1, 1]");
  EXPECT_EQ(w.stats.rows, 6);
  EXPECT_EQ(w.stats.tombstones, 1);
  // One registry lookup per writer schema id, not per record.
  EXPECT_EQ(registry_.lookups, 2);

  // The next window starts empty and reuses the decoders.
  ASSERT_OK(loader->Append(RecordAt(Wire(1, Long(7) + Str("g")), 20)));
  ASSERT_OK_AND_ASSIGN(LoadedWindow w2, loader->Finish());
  ExpectColumn(*w2.batch, "id", "[7]");
  ExpectColumn(*w2.batch, "_kafka_offset", "[20]");
  EXPECT_EQ(registry_.lookups, 2);
}

TEST_F(AvroLoadTest, BadRecordsBecomeDeadLettersWithTheirCodes) {
  ASSERT_OK_AND_ASSIGN(auto loader, Make(BadRecordPolicy::kDeadLetter));
  std::vector<std::optional<std::string>> values = {
      Wire(1, Long(1) + Str("a")),
      std::string(R"({"id":2})"),           // JSON, not the wire format
      Wire(99, Long(3) + Str("c")),         // unknown id
      Wire(3, Str("4") + Str("d")),         // id as a string: cannot be read as v2
      Wire(4, Long(5)),                     // a Protobuf schema
      Wire(1, Long(6) + Long(10) + "abc"),  // name truncated
      Wire(1, Long(7) + Str("g") + "x"),    // trailing bytes
      Wire(1, Long(8) + Str("h")),
  };
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_OK(loader->Append(RecordAt(values[i], static_cast<int64_t>(i))));
  }
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, loader->Finish());
  ExpectColumn(*w.batch, "id", "[1, 8]");
  ExpectColumn(*w.batch, "_kafka_offset", "[0, 7]");
  EXPECT_EQ(w.stats.bad_records, 6);
  EXPECT_EQ(w.stats.dead_lettered, 6);
  ExpectColumn(*w.dead_letters, "_kafka_offset", "[1, 2, 3, 4, 5, 6]");
  ExpectColumn(*w.dead_letters, "_error_code",
               R"(["MALFORMED_PAYLOAD", "UNKNOWN_SCHEMA_ID", "INCOMPATIBLE_SCHEMA",
                   "INCOMPATIBLE_SCHEMA", "TRUNCATED", "TRAILING_BYTES"])");
  ExpectColumn(*w.dead_letters, "_error_field",
               R"([null, null, null, null, "name", null])");
  const arrow::RecordBatch& dead = *w.dead_letters;
  ExpectCellHas(dead, "_error_message", 1, "unknown schema id 99");
  // An incompatible writer schema names both ids.
  ExpectCellHas(dead, "_error_message", 2,
                "writer schema id 3 cannot be read as schema id 2");
  ExpectCellHas(dead, "_error_message", 3, "PROTOBUF");
  ExpectCellHas(dead, "_kafka_value", 1, *values[2]);  // the raw bytes are kept
}

TEST_F(AvroLoadTest, UnderFailABadRecordNamesItsPlaceAndTheLoaderGoesOn) {
  ASSERT_OK_AND_ASSIGN(auto loader, Make(BadRecordPolicy::kFail));
  ASSERT_OK(loader->Append(RecordAt(Wire(1, Long(1) + Str("a")), 0)));
  Status st = loader->Append(RecordAt(Wire(1, Long(2) + Long(10) + "ab"), 1));
  ASSERT_EQ(st.code(), StatusCode::kTypeError) << st.ToString();
  EXPECT_EQ(st.message().rfind("Avro record: field 'name' at byte 1: truncated", 0), 0u)
      << st.ToString();
  EXPECT_NE(st.message().find("orders[1]@1"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("field 'name'"), std::string::npos) << st.ToString();
  ASSERT_OK(loader->Append(RecordAt(Wire(1, Long(3) + Str("c")), 2)));
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, loader->Finish());
  ExpectColumn(*w.batch, "id", "[1, 3]");
  ExpectColumn(*w.batch, "_kafka_offset", "[0, 2]");
}

TEST_F(AvroLoadTest, ARegistryThatIsDownEndsTheWindowWhateverThePolicy) {
  registry_.down = Status::Unavailable("registry at http://r:8081 does not answer");
  ASSERT_OK_AND_ASSIGN(auto loader, Make(BadRecordPolicy::kDeadLetter));
  Status st = loader->Append(RecordAt(Wire(1, Long(1) + Str("a")), 0));
  ASSERT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("orders[1]@0"), std::string::npos) << st.ToString();
  // Not remembered as bad: once it answers, the id's records load.
  registry_.down = Status::OK();
  ASSERT_OK(loader->Append(RecordAt(Wire(1, Long(1) + Str("a")), 0)));
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, loader->Finish());
  EXPECT_EQ(w.batch->num_rows(), 1);
  EXPECT_EQ(w.stats.bad_records, 0);
}

TEST_F(AvroLoadTest, TheLandingSchemaListsOnlyMetadataColumns) {
  auto loader = Make(BadRecordPolicy::kFail, {{"id", TypeId::kInt64}});
  ASSERT_NOT_OK(loader);
  EXPECT_NE(loader.status().message().find("list only _kafka_* columns"),
            std::string::npos)
      << loader.status().ToString();
  // No metadata column at all: the payload's columns alone.
  ASSERT_OK_AND_ASSIGN(auto bare, Make(BadRecordPolicy::kFail, {}));
  ASSERT_OK(bare->Append(RecordAt(Wire(2, Long(1) + Str("a") + Long(0)), 0)));
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, bare->Finish());
  EXPECT_EQ(w.batch->num_columns(), 3);
}

TEST_F(AvroLoadTest, AWriterSchemaWithMoreColumnsStopsTheWindowAndTheLandingGrows) {
  auto avro = std::make_shared<AvroPayload>();
  avro->reader_schema = kV1;
  avro->reader_schema_id = 1;
  avro->writer_schema = [this](int32_t id) { return registry_(id); };
  avro->latest_schema = []() -> Result<std::pair<int32_t, std::string>> {
    return std::pair<int32_t, std::string>{2, kV2};
  };
  LoadOptions o;
  o.on_bad_record = BadRecordPolicy::kDeadLetter;
  o.avro = avro;
  const Schema metadata({{"_kafka_offset", TypeId::kInt64}});
  ASSERT_OK_AND_ASSIGN(auto loader, Loader::Make(metadata, o));
  const std::vector<std::string> window = {
      Wire(1, Long(1) + Str("a")), Wire(2, Long(2) + Str("b") + Long(1) + Double(0.5))};
  ASSERT_OK(loader->Append(RecordAt(window[0], 0)));
  Status st = loader->Append(RecordAt(window[1], 1));
  ASSERT_EQ(st.code(), StatusCode::kCancelled) << st.ToString();
  EXPECT_EQ(loader->newer_writer_schema(), 2);
  ASSERT_OK(loader->Finish().status());  // as LoadRange does after a failure
  EXPECT_EQ(loader->newer_writer_schema(), 2);
  // Id 3 changes a column's type: not a growth.
  EXPECT_NOT_OK(EvolvedAvroPayload(*avro, 3));

  ASSERT_OK_AND_ASSIGN(auto grown, EvolvedAvroPayload(*avro, 2));
  EXPECT_EQ(grown->reader_schema_id, 2);
  o.avro = grown;
  ASSERT_OK_AND_ASSIGN(auto again, Loader::Make(metadata, o));
  EXPECT_EQ(again->arrow_schema()->ToString(),
            "id: int64\nname: string\nscore: double\n_kafka_offset: int64");
  for (size_t i = 0; i < window.size(); ++i) {
    ASSERT_OK(again->Append(RecordAt(window[i], static_cast<int64_t>(i))));
  }
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, again->Finish());
  ExpectColumn(*w.batch, "score", "[null, 0.5]");
  ExpectColumn(*w.batch, "_kafka_offset", "[0, 1]");
  EXPECT_EQ(again->newer_writer_schema(), -1);
}

// A writer with columns the subject's latest lacks (an older producer during a rollout
// that removed a field, another record type) does not grow the landing: its extra
// fields are left out.
TEST_F(AvroLoadTest, AWriterWithColumnsTheLatestLacksIsReadWithoutThem) {
  registry_.schemas[5] = R"({"type":"record","name":"Order","fields":[
    {"name":"id","type":"long"},{"name":"name","type":"string"},
    {"name":"score","type":["null","double"],"default":null},
    {"name":"gone","type":"string"}]})";
  auto avro = std::make_shared<AvroPayload>();
  avro->reader_schema = kV2;
  avro->reader_schema_id = 2;
  avro->writer_schema = [this](int32_t id) { return registry_(id); };
  avro->latest_schema = []() -> Result<std::pair<int32_t, std::string>> {
    return std::pair<int32_t, std::string>{2, kV2};
  };
  LoadOptions o;
  o.avro = avro;
  ASSERT_OK_AND_ASSIGN(auto loader, Loader::Make(Schema(), o));
  ASSERT_OK(
      loader->Append(RecordAt(Wire(5, Long(1) + Str("a") + Long(0) + Str("x")), 0)));
  EXPECT_EQ(loader->newer_writer_schema(), -1);
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, loader->Finish());
  EXPECT_EQ(w.batch->num_columns(), 3);
  ExpectColumn(*w.batch, "id", "[1]");
  EXPECT_NOT_OK(EvolvedAvroPayload(*avro, 5));
}

TEST_F(AvroLoadTest, AnInvalidReaderSchemaIsRefusedAtMake) {
  auto avro = std::make_shared<AvroPayload>();
  avro->reader_schema =
      R"({"type":"record","name":"X","fields":[{"name":"a","type":"nope"}]})";
  avro->reader_schema_id = 7;
  avro->writer_schema = [](int32_t) -> Result<std::string> { return std::string(kV1); };
  LoadOptions o;
  o.avro = avro;
  auto loader = Loader::Make(Schema(), o);
  ASSERT_NOT_OK(loader);
  EXPECT_NE(loader.status().message().find("the reader schema (schema id 7)"),
            std::string::npos)
      << loader.status().ToString();
}

// --- decoded keys (LoadOptions::key) --------------------------------------------------

constexpr const char* kKeyRecord = R"({"type":"record","name":"OrderKey","fields":[
  {"name":"id","type":"long"},{"name":"region","type":"string"}]})";

class KeyedLoadTest : public AvroLoadTest {
 protected:
  void SetUp() override {
    registry_.schemas[10] = kKeyRecord;
    registry_.schemas[11] = R"("string")";
  }
  std::shared_ptr<const LoadOptions> KeyOptions(int32_t reader_id) {
    auto avro = std::make_shared<AvroPayload>();
    avro->reader_schema = registry_.schemas[reader_id];
    avro->reader_schema_id = reader_id;
    avro->writer_schema = [this](int32_t id) { return registry_(id); };
    auto key = std::make_shared<LoadOptions>();
    key->avro = avro;
    return key;
  }
  static RecordView Keyed(const std::optional<std::string>& key,
                          const std::optional<std::string>& value, int64_t offset) {
    RecordView r = View(value, offset);
    if (key) r.key = *key;
    return r;
  }
};

TEST_F(KeyedLoadTest, RecordKeysLandAsAStructAlignedWithTheRowsThatLanded) {
  auto avro = std::make_shared<AvroPayload>();
  avro->reader_schema = kV2;
  avro->reader_schema_id = 2;
  avro->writer_schema = [this](int32_t id) { return registry_(id); };
  LoadOptions o;
  o.on_bad_record = BadRecordPolicy::kDeadLetter;
  o.avro = avro;
  o.key = KeyOptions(10);
  ASSERT_OK_AND_ASSIGN(auto loader,
                       Loader::Make(Schema({{"_kafka_offset", TypeId::kInt64}}), o));
  EXPECT_EQ(loader->arrow_schema()->ToString(),
            "id: int64\nname: string\nscore: double\n_kafka_offset: int64\n"
            "_kafka_key: struct<id: int64, region: string>");
  const std::string key1 = Wire(10, Long(1) + Str("eu"));
  const std::string key3 = Wire(10, Long(3) + Str("us"));
  // 0: lands; 1: no key; 2: a bad value (its key row must go); 3: a key that is not in
  // the wire format; 4: a tombstone with its key (a delete); 5: an unknown key schema.
  ASSERT_OK(loader->Append(Keyed(key1, Wire(1, Long(1) + Str("a")), 0)));
  ASSERT_OK(loader->Append(Keyed(std::nullopt, Wire(1, Long(2) + Str("b")), 1)));
  ASSERT_OK(loader->Append(Keyed(key3, Wire(1, Long(3)), 2)));
  ASSERT_OK(loader->Append(Keyed("plain", Wire(1, Long(4) + Str("d")), 3)));
  ASSERT_OK(loader->Append(Keyed(key3, std::nullopt, 4)));
  ASSERT_OK(loader->Append(Keyed(Wire(99, Long(1)), Wire(1, Long(6) + Str("f")), 5)));
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, loader->Finish());
  ASSERT_TRUE(w.batch->ValidateFull().ok()) << w.batch->ValidateFull().ToString();
  ExpectColumn(*w.batch, "_kafka_offset", "[0, 1, 4]");
  ExpectColumn(*w.batch, "id", "[1, 2, null]");
  ExpectColumn(*w.batch, "_kafka_key",
               R"([{"id": 1, "region": "eu"}, null, {"id": 3, "region": "us"}])");
  EXPECT_EQ(w.stats.records, 6);
  EXPECT_EQ(w.stats.rows, 3);
  EXPECT_EQ(w.stats.bad_records, 3);
  EXPECT_EQ(w.stats.dead_lettered, 3);
  ExpectColumn(*w.dead_letters, "_kafka_offset", "[2, 3, 5]");
  ExpectColumn(*w.dead_letters, "_error_code",
               R"(["TRUNCATED", "MALFORMED_PAYLOAD", "UNKNOWN_SCHEMA_ID"])");
  ExpectColumn(*w.dead_letters, "_error_field",
               R"(["name", "_kafka_key", "_kafka_key"])");
}

TEST_F(KeyedLoadTest, APrimitiveKeyLandsAsItsOwnTypeBesideJsonPayloads) {
  LoadOptions o;
  o.key = KeyOptions(11);
  ASSERT_OK_AND_ASSIGN(auto loader, Loader::Make(Schema({{"n", TypeId::kInt64}}), o));
  EXPECT_EQ(loader->arrow_schema()->ToString(), "n: int64\n_kafka_key: string");
  ASSERT_OK(loader->Append(Keyed(Wire(11, Str("k1")), std::string(R"({"n":1})"), 0)));
  ASSERT_OK(loader->Append(Keyed(std::nullopt, std::string(R"({"n":2})"), 1)));
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, loader->Finish());
  ExpectColumn(*w.batch, "n", "[1, 2]");
  ExpectColumn(*w.batch, "_kafka_key", R"(["k1", null])");
}

TEST_F(KeyedLoadTest, UnderFailABadKeyNamesTheKeyAndTheLoaderGoesOn) {
  LoadOptions o;
  o.key = KeyOptions(10);
  ASSERT_OK_AND_ASSIGN(auto loader, Loader::Make(Schema({{"n", TypeId::kInt64}}), o));
  Status st = loader->Append(Keyed(Wire(10, Long(1)), std::string(R"({"n":1})"), 7));
  EXPECT_EQ(st.code(), StatusCode::kTypeError) << st.ToString();
  EXPECT_NE(st.message().find("the record key: "), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("orders[1]@7, field '_kafka_key.region'"),
            std::string::npos)
      << st.message();
  ASSERT_OK(
      loader->Append(Keyed(Wire(10, Long(2) + Str("x")), std::string(R"({"n":2})"), 8)));
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, loader->Finish());
  ExpectColumn(*w.batch, "n", "[2]");
  ExpectColumn(*w.batch, "_kafka_key", R"([{"id": 2, "region": "x"}])");
}

TEST_F(KeyedLoadTest, ARawKeyColumnBesideDecodedKeysIsRefused) {
  LoadOptions o;
  o.key = KeyOptions(10);
  auto loader =
      Loader::Make(Schema({{"n", TypeId::kInt64}, {"_kafka_key", TypeId::kUtf8}}), o);
  ASSERT_FALSE(loader.ok());
  EXPECT_NE(loader.status().message().find("column '_kafka_key' takes the raw key"),
            std::string::npos)
      << loader.status().message();
}

TEST_F(KeyedLoadTest, ARegistryThatIsDownForAKeyEndsTheWindow) {
  LoadOptions o;
  o.on_bad_record = BadRecordPolicy::kDeadLetter;
  o.key = KeyOptions(10);
  ASSERT_OK_AND_ASSIGN(auto loader, Loader::Make(Schema({{"n", TypeId::kInt64}}), o));
  registry_.down = Status::Unavailable("registry down");
  Status st =
      loader->Append(Keyed(Wire(10, Long(1) + Str("x")), std::string(R"({"n":1})"), 0));
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("the record key: "), std::string::npos) << st.message();
}

}  // namespace
}  // namespace kelt
