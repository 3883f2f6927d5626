// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Load step for Protobuf payloads in the Confluent wire format: writer schemas by
// id, messages by their indexes, columns by name across writer versions, rows in window
// order across writers and tombstones, bad records by policy with their codes and
// fields, and a landing that grows.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "kelt/load.h"
#include "kelt/load/wire_testing.h"
#include "kelt/testing/arrow_assertions.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

// Protobuf binary by hand.
using load::testing::Varint;
using load::testing::WireHeader;
using load::testing::Zigzag;
std::string Int(int field, int64_t v) {
  return Varint(static_cast<uint64_t>(field) << 3) + Varint(static_cast<uint64_t>(v));
}
std::string Len(int field, const std::string& bytes) {
  return Varint((static_cast<uint64_t>(field) << 3) | 2) + Varint(bytes.size()) + bytes;
}
std::string Double(int field, double d) {
  std::string out = Varint((static_cast<uint64_t>(field) << 3) | 1);
  out.append(reinterpret_cast<const char*>(&d), 8);
  return out;
}
// The wire format: magic byte, id, message indexes ([0]: a single 0), body.
std::string Wire(int32_t id, const std::vector<int32_t>& indexes,
                 const std::string& body) {
  std::string out = load::testing::WireHeader(id);
  if (indexes == std::vector<int32_t>{0}) {
    out.push_back('\0');
  } else {
    out += Zigzag(static_cast<int64_t>(indexes.size()));
    for (int32_t i : indexes) out += Zigzag(i);
  }
  return out + body;
}
std::string Wire(int32_t id, const std::string& body) { return Wire(id, {0}, body); }

// Writer v1 (id 1): id, name, status, lines. Reader v2 (id 2): adds an optional score
// and an enum value. Id 3: `id` as a string. Id 5: v2's Order after another message.
constexpr const char* kV1 = R"(syntax = "proto3";
package shop;
enum Status { NEW = 0; PAID = 1; }
message Order {
  message Line { string sku = 1; int32 qty = 2; }
  int64 id = 1;
  string name = 2;
  Status status = 3;
  repeated Line lines = 4;
})";
// v1 with SHIPPED and the score.
std::string V2() {
  std::string v2 = kV1;
  v2.replace(v2.find("PAID = 1;"), 9, "PAID = 1; SHIPPED = 2;");
  v2.insert(v2.rfind('}'), "  optional double score = 5;\n");
  return v2;
}
constexpr const char* kV3 = R"(syntax = "proto3";
package shop;
message Order { string id = 1; string name = 2; })";
constexpr const char* kV5 = R"(syntax = "proto3";
package shop;
message Header { string trace = 1; }
message Order { string name = 2; int64 id = 1; optional double score = 5; })";

struct Registry {
  std::map<int32_t, std::string> schemas{{1, kV1}, {2, V2()}, {3, kV3}, {5, kV5}};
  Status down;  // when set: every lookup fails with it
  int lookups = 0;
  Result<ProtobufSchemaSource> operator()(int32_t id) {
    ++lookups;
    if (!down.ok()) return down;
    if (id == 4) return Status::Invalid("schema id 4 is an AVRO schema, not PROTOBUF");
    auto it = schemas.find(id);
    if (it == schemas.end()) return Status::NotFound("schema " + std::to_string(id));
    return ProtobufSchemaSource{id, it->second, {}};
  }
};

std::string Line(const std::string& sku, int qty) { return Len(1, sku) + Int(2, qty); }

// The enum column's values as text (null for null).
std::vector<std::string> Names(const arrow::RecordBatch& batch, const std::string& name) {
  auto column = batch.GetColumnByName(name);
  std::vector<std::string> out;
  if (column == nullptr || column->type_id() != arrow::Type::DICTIONARY) return out;
  const auto& dict = static_cast<const arrow::DictionaryArray&>(*column);
  const auto& values = static_cast<const arrow::StringArray&>(*dict.dictionary());
  for (int64_t i = 0; i < dict.length(); ++i) {
    out.push_back(dict.IsNull(i) ? "null" : values.GetString(dict.GetValueIndex(i)));
  }
  return out;
}

class ProtobufLoadTest : public ::testing::Test {
 protected:
  std::shared_ptr<ProtobufPayload> Payload(int32_t reader_id = 2) {
    auto payload = std::make_shared<ProtobufPayload>();
    payload->reader = *registry_(reader_id);
    payload->writer_schema = [this](int32_t id) { return registry_(id); };
    registry_.lookups = 0;
    return payload;
  }
  Result<std::unique_ptr<Loader>> Make(BadRecordPolicy policy,
                                       std::shared_ptr<const ProtobufPayload> payload,
                                       std::vector<Field> metadata = {
                                           {"_kafka_offset", TypeId::kInt64}}) {
    LoadOptions o;
    o.on_bad_record = policy;
    o.protobuf = std::move(payload);
    return Loader::Make(Schema(std::move(metadata)), o);
  }
  static RecordView View(const std::optional<std::string>& value, int64_t offset) {
    return load::testing::OrdersRecord(value, offset);
  }
  static void Validate(const arrow::RecordBatch& batch) {
    arrow::Status st = batch.ValidateFull();
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  Registry registry_;
};

using testing::ExpectCellHas;
using testing::ExpectColumn;

TEST_F(ProtobufLoadTest, RowsOfTwoWriterVersionsAndATombstoneKeepTheirOrder) {
  ASSERT_OK_AND_ASSIGN(auto loader, Make(BadRecordPolicy::kFail, Payload()));
  EXPECT_EQ(loader->arrow_schema()->ToString(),
            "id: int64\nname: string\nstatus: dictionary<values=string, indices=int32, "
            "ordered=0>\nlines: list<item: struct<sku: string, qty: int32>>\n"
            "score: double\n_kafka_offset: int64");
  std::vector<std::optional<std::string>> values = {
      Wire(1, Int(1, 1) + Len(2, "a") + Int(3, 1) + Len(4, Line("x", 2))),
      Wire(2, Int(1, 2) + Len(2, "b") + Int(3, 2) + Double(5, 2.5)),
      std::nullopt,
      Wire(1, Int(1, 4) + Len(2, "d")),
      Wire(5, {1}, Len(2, "e") + Int(1, 5) + Double(5, 0.5)),  // Order is message [1]
      Wire(2, Int(1, 6) + Len(4, Line("y", 1)) + Len(4, Line("z", 3))),
  };
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_OK(loader->Append(View(values[i], static_cast<int64_t>(i) + 10)));
  }
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, loader->Finish());
  Validate(*w.batch);
  ExpectColumn(*w.batch, "id", "[1, 2, null, 4, 5, 6]");
  ExpectColumn(*w.batch, "name", R"(["a", "b", null, "d", "e", ""])");
  ExpectColumn(*w.batch, "score", "[null, 2.5, null, null, 0.5, null]");
  ExpectColumn(*w.batch, "lines",
               R"([[{"sku": "x", "qty": 2}], [], null, [], null,
                   [{"sku": "y", "qty": 1}, {"sku": "z", "qty": 3}]])");
  // Each writer's enum dictionary (v1 lacks SHIPPED) joins into one column.
  EXPECT_EQ(Names(*w.batch, "status"),
            (std::vector<std::string>{"PAID", "SHIPPED", "null", "NEW", "null", "NEW"}));
  ExpectColumn(*w.batch, "_kafka_offset", "[10, 11, 12, 13, 14, 15]");
  EXPECT_EQ(w.stats.rows, 6);
  EXPECT_EQ(w.stats.tombstones, 1);
  // One registry lookup per writer schema id (none for the reader's), not per record.
  EXPECT_EQ(registry_.lookups, 2);

  // The next window starts empty and reuses the decoders.
  ASSERT_OK(loader->Append(View(Wire(1, Int(1, 7)), 20)));
  ASSERT_OK_AND_ASSIGN(LoadedWindow w2, loader->Finish());
  ExpectColumn(*w2.batch, "id", "[7]");
  ExpectColumn(*w2.batch, "_kafka_offset", "[20]");
  EXPECT_EQ(registry_.lookups, 2);
}

TEST_F(ProtobufLoadTest, BadRecordsBecomeDeadLettersWithTheirCodesAndFields) {
  ASSERT_OK_AND_ASSIGN(auto loader, Make(BadRecordPolicy::kDeadLetter, Payload()));
  std::vector<std::optional<std::string>> values = {
      Wire(1, Int(1, 1)),
      std::string(R"({"id":2})"),  // JSON, not the wire format
      Wire(99, Int(1, 3)),         // unknown id
      Wire(3, Len(1, "4")),        // id as a string: INCOMPATIBLE
      Wire(4, Int(1, 5)),          // an Avro schema
      Wire(1, Int(1, 6) + Varint(2 << 3 | 2) + Varint(10) + "abc"),  // name cut short
      Wire(2, Int(1, 7) + Len(4, Len(1, "\xff"))),  // a sku that is not UTF-8
      Wire(2, {}, "").substr(0, 5) + "\x7f",        // message indexes: a negative count
      Wire(2, {7}, Int(1, 9)),                      // indexes of no message
      Wire(2, {0, 0}, Len(1, "s")),                 // a Line, not an Order
      Wire(2, Int(1, 10)),
  };
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_OK(loader->Append(View(values[i], static_cast<int64_t>(i))));
  }
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, loader->Finish());
  Validate(*w.batch);
  ExpectColumn(*w.batch, "id", "[1, 10]");
  ExpectColumn(*w.batch, "_kafka_offset", "[0, 10]");
  EXPECT_EQ(w.stats.bad_records, 9);
  EXPECT_EQ(w.stats.dead_lettered, 9);
  ExpectColumn(*w.dead_letters, "_kafka_offset", "[1, 2, 3, 4, 5, 6, 7, 8, 9]");
  ExpectColumn(*w.dead_letters, "_error_code",
               R"(["MALFORMED_PAYLOAD", "UNKNOWN_SCHEMA_ID", "INCOMPATIBLE_SCHEMA",
                   "INCOMPATIBLE_SCHEMA", "TRUNCATED", "INVALID_UTF8",
                   "MALFORMED_PAYLOAD", "MALFORMED_PAYLOAD", "INCOMPATIBLE_SCHEMA"])");
  ExpectColumn(*w.dead_letters, "_error_field",
               R"([null, null, null, null, "name", "lines[].sku", null, null, null])");
  const arrow::RecordBatch& dead = *w.dead_letters;
  ExpectCellHas(dead, "_error_message", 1, "unknown schema id 99");
  // A column of another type names both ids.
  ExpectCellHas(
      dead, "_error_message", 2,
      "field 'id' of shop.Order is string in schema id 3 but int64 in schema id 2");
  ExpectCellHas(dead, "_error_message", 3, "AVRO");
  ExpectCellHas(dead, "_error_message", 4, "(schema id 1)");
  ExpectCellHas(dead, "_error_message", 8, "shop.Order.Line");
  ExpectCellHas(dead, "_kafka_value", 1, *values[2]);  // the raw bytes are kept
}

TEST_F(ProtobufLoadTest, TheConfiguredMessageMayBeNestedAndIndexesSelectIt) {
  auto payload = Payload();
  payload->message = "shop.Order.Line";
  ASSERT_OK_AND_ASSIGN(auto loader, Make(BadRecordPolicy::kDeadLetter, payload));
  EXPECT_EQ(loader->arrow_schema()->ToString(),
            "sku: string\nqty: int32\n_kafka_offset: int64");
  ASSERT_OK(loader->Append(View(Wire(2, {0, 0}, Line("x", 4)), 0)));
  ASSERT_OK(loader->Append(View(Wire(1, {0, 0}, Line("y", 5)), 1)));
  ASSERT_OK(loader->Append(View(Wire(2, Int(1, 1)), 2)));  // an Order
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, loader->Finish());
  ExpectColumn(*w.batch, "sku", R"(["x", "y"])");
  ExpectColumn(*w.batch, "qty", "[4, 5]");
  ExpectColumn(*w.dead_letters, "_error_code", R"(["INCOMPATIBLE_SCHEMA"])");

  payload->message = "shop.Nope";
  auto refused = Make(BadRecordPolicy::kFail, payload);
  ASSERT_NOT_OK(refused);
  EXPECT_NE(refused.status().message().find("has no message shop.Nope"),
            std::string::npos)
      << refused.status().ToString();
}

TEST_F(ProtobufLoadTest, ARegistryThatIsDownEndsTheWindowWhateverThePolicy) {
  auto payload = Payload();
  registry_.down = Status::Unavailable("registry at http://r:8081 does not answer");
  ASSERT_OK_AND_ASSIGN(auto loader, Make(BadRecordPolicy::kDeadLetter, payload));
  Status st = loader->Append(View(Wire(1, Int(1, 1)), 0));
  ASSERT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("orders[1]@0"), std::string::npos) << st.ToString();
  registry_.down = Status::OK();
  ASSERT_OK(loader->Append(View(Wire(1, Int(1, 1)), 0)));
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, loader->Finish());
  EXPECT_EQ(w.batch->num_rows(), 1);
  EXPECT_EQ(w.stats.bad_records, 0);
}

TEST_F(ProtobufLoadTest, AWriterWithMoreColumnsStopsTheWindowAndTheLandingGrows) {
  auto payload = Payload(1);
  payload->latest_schema = [this]() { return registry_(2); };
  ASSERT_OK_AND_ASSIGN(auto loader, Make(BadRecordPolicy::kDeadLetter, payload));
  const std::vector<std::string> window = {Wire(1, Int(1, 1)),
                                           Wire(2, Int(1, 2) + Double(5, 0.5))};
  ASSERT_OK(loader->Append(View(window[0], 0)));
  Status st = loader->Append(View(window[1], 1));
  ASSERT_EQ(st.code(), StatusCode::kCancelled) << st.ToString();
  EXPECT_EQ(loader->newer_writer_schema(), 2);
  ASSERT_OK(loader->Finish().status());
  EXPECT_EQ(loader->newer_writer_schema(), 2);
  EXPECT_NOT_OK(EvolvedProtobufPayload(*payload, 3));  // a column changes its type

  ASSERT_OK_AND_ASSIGN(auto grown, EvolvedProtobufPayload(*payload, 2));
  EXPECT_EQ(grown->reader.id, 2);
  EXPECT_EQ(grown->message, "shop.Order");
  ASSERT_OK_AND_ASSIGN(auto again, Make(BadRecordPolicy::kDeadLetter, grown));
  for (size_t i = 0; i < window.size(); ++i) {
    ASSERT_OK(again->Append(View(window[i], static_cast<int64_t>(i))));
  }
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, again->Finish());
  ExpectColumn(*w.batch, "score", "[null, 0.5]");
  EXPECT_EQ(again->newer_writer_schema(), -1);

  // Without latest_schema the extra field is left out.
  payload->latest_schema = nullptr;
  ASSERT_OK_AND_ASSIGN(auto fixed, Make(BadRecordPolicy::kDeadLetter, payload));
  ASSERT_OK(fixed->Append(View(window[1], 1)));
  ASSERT_OK_AND_ASSIGN(LoadedWindow w2, fixed->Finish());
  EXPECT_EQ(w2.batch->schema()->GetFieldIndex("score"), -1);
  ExpectColumn(*w2.batch, "id", "[2]");
}

// Random bytes after the header (and after valid message indexes) land or become dead
// letters, never a crash or a broken batch, and every record is accounted for.
TEST_F(ProtobufLoadTest, RandomBodiesLandOrBecomeDeadLetters) {
  ASSERT_OK_AND_ASSIGN(auto loader, Make(BadRecordPolicy::kDeadLetter, Payload()));
  std::mt19937 rng(7);
  std::vector<std::string> values;
  for (int i = 0; i < 3000; ++i) {
    std::string body(rng() % 24, '\0');
    for (char& c : body) c = static_cast<char>(rng());
    const int32_t id = static_cast<int32_t>(rng() % 3) + 1;  // 1, 2 or 3
    values.push_back(i % 2 == 0 ? Wire(id, body) : WireHeader(id) + body);
  }
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_OK(loader->Append(View(values[i], static_cast<int64_t>(i))));
  }
  ASSERT_OK_AND_ASSIGN(LoadedWindow w, loader->Finish());
  Validate(*w.batch);
  Validate(*w.dead_letters);
  EXPECT_EQ(w.batch->num_rows() + w.dead_letters->num_rows(),
            static_cast<int64_t>(values.size()));
  EXPECT_GT(w.batch->num_rows(), 0);
  EXPECT_GT(w.dead_letters->num_rows(), 0);
}

}  // namespace
}  // namespace kelt
