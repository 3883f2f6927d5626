// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/load/column_plan.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kelt/testing/assertions.h"

namespace kelt::load {
namespace {

Field Nested(std::string name, TypeId type, std::vector<std::string> source) {
  Field f(std::move(name), type);
  f.source = std::move(source);
  return f;
}

TEST(ColumnPlanTest, ColumnsKeepSchemaOrderAndKnowTheirSource) {
  ASSERT_OK_AND_ASSIGN(auto plan, ColumnPlan::Make(Schema({
                                      {"id", TypeId::kInt64},
                                      {"_kafka_offset", TypeId::kInt64},
                                      {"name", TypeId::kUtf8},
                                      {"_kafka_header.trace", TypeId::kBinary},
                                      {"_kafka_key", TypeId::kUtf8},
                                  })));
  const std::vector<PlannedColumn>& cols = plan.columns();
  ASSERT_EQ(cols.size(), 5u);
  EXPECT_EQ(cols[0].source, ColumnSource::kPayload);
  EXPECT_EQ(cols[0].payload_slot, 0);
  EXPECT_EQ(cols[1].source, ColumnSource::kOffset);
  EXPECT_EQ(cols[1].payload_slot, -1);
  EXPECT_EQ(cols[2].source, ColumnSource::kPayload);
  EXPECT_EQ(cols[2].payload_slot, 1);
  EXPECT_EQ(cols[3].source, ColumnSource::kHeader);
  EXPECT_EQ(cols[3].header_name, "trace");
  EXPECT_EQ(cols[4].source, ColumnSource::kKey);
  EXPECT_EQ(plan.payload_columns(), (std::vector<int>{0, 2}));
  EXPECT_EQ(plan.metadata_columns(), (std::vector<int>{1, 3, 4}));
  EXPECT_TRUE(plan.needs_headers());
  EXPECT_EQ(plan.text_columns(), 3);
  EXPECT_EQ(plan.arrow_schema()->num_fields(), 5);
  EXPECT_EQ(plan.schema().fields[2].name, "name");
}

TEST(ColumnPlanTest, HeadersAreNeededOnlyByHeaderColumns) {
  ASSERT_OK_AND_ASSIGN(auto plain, ColumnPlan::Make(Schema({{"a", TypeId::kInt64}})));
  EXPECT_FALSE(plain.needs_headers());
  ASSERT_OK_AND_ASSIGN(auto all,
                       ColumnPlan::Make(Schema({{"_kafka_headers", TypeId::kUtf8}})));
  EXPECT_TRUE(all.needs_headers());
  EXPECT_TRUE(all.payload_columns().empty());
}

TEST(ColumnPlanTest, TimestampUnitDefaultsToMilliseconds) {
  Schema s({{"ms", TypeId::kTimestamp}, {"s", TypeId::kTimestamp}});
  s.fields[1].timestamp_unit = TimeUnit::kSecond;
  ASSERT_OK_AND_ASSIGN(auto plan, ColumnPlan::Make(s));
  EXPECT_EQ(plan.columns()[0].unit, TimeUnit::kMilli);
  EXPECT_EQ(plan.columns()[1].unit, TimeUnit::kSecond);
}

TEST(ColumnPlanTest, MetadataColumnTypes) {
  struct Case {
    const char* name;
    TypeId type;
    bool ok;
  } cases[] = {
      {"_kafka_partition", TypeId::kFloat64, true},
      {"_kafka_offset", TypeId::kUtf8, true},
      {"_kafka_offset", TypeId::kTimestamp, false},
      {"_kafka_timestamp_ms", TypeId::kTimestamp, true},
      {"_kafka_timestamp", TypeId::kInt64, true},
      {"_kafka_timestamp", TypeId::kUtf8, false},
      {"_kafka_key", TypeId::kBinary, true},
      {"_kafka_key_bytes", TypeId::kUtf8, false},
      {"_kafka_value_bytes", TypeId::kBinary, true},
      {"_kafka_headers", TypeId::kInt64, false},
      {"_kafka_header.x", TypeId::kBool, false},
  };
  for (const Case& c : cases) {
    auto plan = ColumnPlan::Make(Schema({{c.name, c.type}}));
    EXPECT_EQ(plan.ok(), c.ok) << c.name << " " << TypeName(c.type);
    if (!c.ok) {
      EXPECT_EQ(plan.status().message(), std::string("schema mismatch: kafka metadata "
                                                     "column '") +
                                             c.name + "' cannot have type " +
                                             std::string(TypeName(c.type)));
    }
  }
}

TEST(ColumnPlanTest, SchemaErrors) {
  EXPECT_STATUS(ColumnPlan::Make(Schema{}), StatusCode::kInvalid,
                "landing schema has no fields");
  EXPECT_STATUS(ColumnPlan::Make(Schema({{"a", TypeId::kInt64}, {"", TypeId::kInt64}})),
                StatusCode::kInvalid, "landing schema: fields[1] has an empty name");
  EXPECT_STATUS(ColumnPlan::Make(Schema({{"a", TypeId::kInt64}, {"a", TypeId::kUtf8}})),
                StatusCode::kInvalid, "landing schema: duplicate field name 'a'");
  for (const char* name : {"_kafka_bogus", "_kafka_header."}) {
    auto plan = ColumnPlan::Make(Schema({{name, TypeId::kUtf8}}));
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(
        plan.status().message(),
        std::string("schema mismatch: unknown kafka metadata column '") + name + "'");
  }
}

TEST(ColumnPlanTest, PayloadPathsFormATrie) {
  ASSERT_OK_AND_ASSIGN(auto plan,
                       ColumnPlan::Make(Schema({
                           Nested("city", TypeId::kUtf8, {"address", "city"}),
                           Nested("zip", TypeId::kInt64, {"address", "geo", "zip"}),
                           Field("address", TypeId::kUtf8),
                           Nested("dotted", TypeId::kInt64, {"x.y"}),
                       })));
  PathNode& root = plan.paths();
  ASSERT_EQ(root.children.size(), 2u);  // "address" and "x.y"
  PathNode* address = root.children[0].second.get();
  EXPECT_EQ(root.children[0].first, "address");
  EXPECT_EQ(address->payload_slots, (std::vector<int>{2}));
  EXPECT_TRUE(address->has_children);
  ASSERT_GE(address->FindIndex("geo"), 0);
  PathNode* geo =
      address->children[static_cast<size_t>(address->FindIndex("geo"))].second.get();
  EXPECT_EQ(geo->children[0].first, "zip");
  EXPECT_EQ(geo->children[0].second->payload_slots, (std::vector<int>{1}));
  EXPECT_EQ(root.FindIndex("x"), -1);
  EXPECT_EQ(root.FindIndex("x.y"), 1);
  // "address" is both a column and the parent of nested columns: DOM path only.
  EXPECT_FALSE(plan.ondemand_ok());
}

TEST(ColumnPlanTest, OnDemandTakesSchemasThatReadEachKeyOnce) {
  ASSERT_OK_AND_ASSIGN(auto plan, ColumnPlan::Make(Schema({
                                      Field("_kafka_offset", TypeId::kInt64),
                                      Field("a", TypeId::kInt64),
                                      Nested("n", TypeId::kUtf8, {"o", "n"}),
                                  })));
  ASSERT_TRUE(plan.ondemand_ok());
  PathNode& root = plan.paths();
  PathNode* a = root.children[0].second.get();
  EXPECT_EQ(a->slot, 0);
  EXPECT_EQ(a->column, 1);
  PathNode* o = root.children[1].second.get();
  EXPECT_EQ(o->column, -1);  // a parent only
  EXPECT_EQ(o->children[0].second->slot, 1);
  EXPECT_EQ(o->children[0].second->column, 2);

  // Two columns from one key.
  ASSERT_OK_AND_ASSIGN(auto twice, ColumnPlan::Make(Schema({
                                       Field("a", TypeId::kInt64),
                                       Nested("a_text", TypeId::kUtf8, {"a"}),
                                   })));
  EXPECT_FALSE(twice.ondemand_ok());
  EXPECT_EQ(twice.paths().children[0].second->payload_slots, (std::vector<int>{0, 1}));
}

TEST(ColumnPlanTest, NodesLearnTheKeyOrder) {
  std::vector<Field> fields;
  fields.reserve(13);
  for (int i = 0; i < 12; ++i) {
    fields.emplace_back("k" + std::to_string(i), TypeId::kInt64);
  }
  fields.emplace_back("q\"uote", TypeId::kInt64);
  ASSERT_OK_AND_ASSIGN(auto plan, ColumnPlan::Make(Schema(fields)));
  PathNode& root = plan.paths();
  EXPECT_FALSE(root.index.empty());  // a wide node looks keys up in its index
  PathNode* k5 = root.children[5].second.get();
  PathNode* quote = root.children[12].second.get();

  PathNode* found = nullptr;
  EXPECT_FALSE(root.FindPredictedRaw("k5\"", "k5\"" + 3, 0, &found));  // nothing learned
  EXPECT_EQ(root.Find("k5", 0), k5);
  EXPECT_EQ(root.Find("nope", 1), nullptr);
  EXPECT_EQ(root.Find("q\"uote", 2), quote);
  ASSERT_EQ(root.order.size(), 3u);
  EXPECT_EQ(root.order[0].key, "k5");
  EXPECT_TRUE(root.order[0].plain);
  EXPECT_FALSE(root.order[2].plain);

  // Keys in their JSON text: the raw bytes must equal the predicted key and a quote
  // must close them.
  const std::string text = R"(k5":1)";
  EXPECT_TRUE(root.FindPredictedRaw(text.data(), text.data() + text.size(), 0, &found));
  EXPECT_EQ(found, k5);
  const std::string longer = R"(k55":1)";
  EXPECT_FALSE(
      root.FindPredictedRaw(longer.data(), longer.data() + longer.size(), 0, &found));
  const std::string cut = "k5";
  EXPECT_FALSE(root.FindPredictedRaw(cut.data(), cut.data() + cut.size(), 0, &found));
  // A predicted key with a quote is never matched raw (its JSON text differs).
  const std::string escaped = R"(q\"uote":1)";
  EXPECT_FALSE(
      root.FindPredictedRaw(escaped.data(), escaped.data() + escaped.size(), 2, &found));
  // A key the schema does not use is predicted too: as no column.
  const std::string nope = R"(nope":1)";
  found = k5;
  EXPECT_TRUE(root.FindPredictedRaw(nope.data(), nope.data() + nope.size(), 1, &found));
  EXPECT_EQ(found, nullptr);
  // Another key at a learned position replaces the prediction.
  EXPECT_EQ(root.Find("k7", 0), root.children[7].second.get());
  EXPECT_EQ(root.order[0].key, "k7");
}

TEST(ColumnPlanTest, WritersFollowTheDeclaredTypes) {
  ASSERT_OK_AND_ASSIGN(auto plan, ColumnPlan::Make(Schema({
                                      {"i", TypeId::kInt64},
                                      {"d", TypeId::kDate},
                                      {"_kafka_value_bytes", TypeId::kBinary},
                                  })));
  std::vector<ColumnWriter> writers = plan.MakeWriters();
  ASSERT_EQ(writers.size(), 3u);
  EXPECT_EQ(writers[0].type(), TypeId::kInt64);
  EXPECT_EQ(writers[1].type(), TypeId::kDate);
  EXPECT_EQ(writers[2].type(), TypeId::kBinary);
  EXPECT_EQ(writers[0].length(), 0);
}

}  // namespace
}  // namespace kelt::load
