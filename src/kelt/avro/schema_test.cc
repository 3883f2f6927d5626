// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include <arrow/api.h>
#include <gtest/gtest.h>

#include "kelt/avro.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

AvroSchema Parse(std::string_view json) {
  auto s = AvroSchema::Parse(json);
  EXPECT_TRUE(s.ok()) << s.status().ToString() << "\n" << json;
  return std::move(s).ValueOrDie();
}

TEST(AvroSchemaTest, Primitives) {
  for (auto [json, type] : std::vector<std::pair<std::string, AvroType>>{
           {R"("null")", AvroType::kNull},
           {R"("boolean")", AvroType::kBoolean},
           {R"("int")", AvroType::kInt},
           {R"({"type":"long"})", AvroType::kLong},
           {R"("float")", AvroType::kFloat},
           {R"("double")", AvroType::kDouble},
           {R"("bytes")", AvroType::kBytes},
           {R"({"type":"string","doc":"ignored"})", AvroType::kString}}) {
    EXPECT_EQ(Parse(json).root().type, type) << json;
  }
}

TEST(AvroSchemaTest, RecordWithEveryComplexType) {
  AvroSchema s = Parse(R"({
    "type": "record", "name": "Order", "namespace": "com.shop", "aliases": ["Purchase"],
    "fields": [
      {"name": "id", "type": "long"},
      {"name": "status", "type": {"type": "enum", "name": "Status",
                                  "symbols": ["NEW", "PAID", "UNKNOWN"],
                                  "default": "UNKNOWN"}},
      {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
      {"name": "attrs", "type": {"type": "map", "values": "int"}},
      {"name": "note", "type": ["null", "string"], "default": null, "aliases": ["comment"]},
      {"name": "hash", "type": {"type": "fixed", "name": "MD5", "size": 16}},
      {"name": "other_status", "type": "Status"},
      {"name": "full_ref", "type": "com.shop.MD5"}
    ]})");
  const AvroNode& r = s.root();
  ASSERT_EQ(r.type, AvroType::kRecord);
  EXPECT_EQ(r.name, "com.shop.Order");
  EXPECT_EQ(r.aliases, std::vector<std::string>{"com.shop.Purchase"});
  ASSERT_EQ(r.fields.size(), 8u);
  const AvroNode& status = *r.fields[1].type;
  EXPECT_EQ(status.name, "com.shop.Status");
  EXPECT_EQ(status.symbols, (std::vector<std::string>{"NEW", "PAID", "UNKNOWN"}));
  EXPECT_EQ(status.enum_default, 2);
  EXPECT_EQ(r.fields[2].type->type, AvroType::kArray);
  EXPECT_EQ(r.fields[2].type->items->type, AvroType::kString);
  EXPECT_EQ(r.fields[2].default_json, "[]");
  EXPECT_EQ(r.fields[3].type->items->type, AvroType::kInt);
  EXPECT_EQ(r.fields[4].type->branches.size(), 2u);
  EXPECT_EQ(r.fields[4].default_json, "null");
  EXPECT_EQ(r.fields[4].aliases, std::vector<std::string>{"comment"});
  EXPECT_FALSE(r.fields[0].default_json.has_value());
  EXPECT_EQ(r.fields[5].type->size, 16);
  // References share the node they name.
  EXPECT_EQ(r.fields[6].type, &status);
  EXPECT_EQ(r.fields[7].type, r.fields[5].type);
}

// The spec's example of how full names are determined.
TEST(AvroSchemaTest, NamespacesFollowTheSpec) {
  AvroSchema s = Parse(R"({
    "type": "record", "name": "Example",
    "fields": [
      {"name": "inheritNull", "type": {"type": "enum", "name": "Simple", "symbols": ["a"]}},
      {"name": "explicitNamespace",
       "type": {"type": "fixed", "name": "Simple", "namespace": "explicit", "size": 12}},
      {"name": "fullName", "type": {
        "type": "record", "name": "a.full.Name", "namespace": "ignored",
        "fields": [{"name": "inheritNamespace",
                    "type": {"type": "enum", "name": "Understanding", "symbols": ["d"]}}]}},
      {"name": "refNull", "type": "Simple"},
      {"name": "refExplicit", "type": "explicit.Simple"}
    ]})");
  const AvroNode& r = s.root();
  EXPECT_EQ(r.name, "Example");
  EXPECT_EQ(r.fields[0].type->name, "Simple");
  EXPECT_EQ(r.fields[1].type->name, "explicit.Simple");
  EXPECT_EQ(r.fields[2].type->name, "a.full.Name");
  EXPECT_EQ(r.fields[2].type->fields[0].type->name, "a.full.Understanding");
  EXPECT_EQ(r.fields[3].type, r.fields[0].type);
  EXPECT_EQ(r.fields[4].type, r.fields[1].type);
}

TEST(AvroSchemaTest, SimpleNamesResolveInTheEnclosingNamespaceThenTheNullOne) {
  AvroSchema s = Parse(R"({
    "type": "record", "name": "Outer",
    "fields": [
      {"name": "a", "type": {"type": "fixed", "name": "F", "size": 1}},
      {"name": "b", "type": {"type": "record", "name": "Inner", "namespace": "ns",
                              "fields": [{"name": "f", "type": "F"}]}}
    ]})");
  EXPECT_EQ(s.root().fields[1].type->fields[0].type, s.root().fields[0].type);
}

TEST(AvroSchemaTest, LogicalTypes) {
  AvroSchema s = Parse(R"({"type": "record", "name": "L", "fields": [
    {"name": "d1", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "d2", "type": {"type": "fixed", "name": "D", "size": 16, "logicalType": "decimal", "precision": 38}},
    {"name": "uuid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "date", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "tsn", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
    {"name": "ltm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "ltu", "type": {"type": "long", "logicalType": "local-timestamp-micros"}}
  ]})");
  const auto& f = s.root().fields;
  EXPECT_EQ(f[0].type->logical_type, AvroLogicalType::kDecimal);
  EXPECT_EQ(f[0].type->precision, 10);
  EXPECT_EQ(f[0].type->scale, 2);
  EXPECT_EQ(f[1].type->logical_type, AvroLogicalType::kDecimal);
  EXPECT_EQ(f[1].type->scale, 0);
  EXPECT_EQ(f[2].type->logical_type, AvroLogicalType::kUuid);
  EXPECT_EQ(f[3].type->logical_type, AvroLogicalType::kDate);
  EXPECT_EQ(f[4].type->logical_type, AvroLogicalType::kTimeMillis);
  EXPECT_EQ(f[5].type->logical_type, AvroLogicalType::kTimeMicros);
  EXPECT_EQ(f[6].type->logical_type, AvroLogicalType::kTimestampMillis);
  EXPECT_EQ(f[7].type->logical_type, AvroLogicalType::kTimestampMicros);
  EXPECT_EQ(f[8].type->logical_type, AvroLogicalType::kTimestampNanos);
  EXPECT_EQ(f[9].type->logical_type, AvroLogicalType::kLocalTimestampMillis);
  EXPECT_EQ(f[10].type->logical_type, AvroLogicalType::kLocalTimestampMicros);
}

// The spec: "If a logical type is invalid ... implementations should ignore the logical
// type and use the underlying Avro type"; unknown ones likewise.
TEST(AvroSchemaTest, InvalidAndUnknownLogicalTypesAreIgnored) {
  for (
      const char* json :
      {R"({"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 3})",
       R"({"type": "bytes", "logicalType": "decimal", "precision": 0})",
       R"({"type": "bytes", "logicalType": "decimal"})",
       R"({"type": "bytes", "logicalType": "decimal", "precision": 77})",
       R"({"type": "fixed", "name": "F", "size": 4, "logicalType": "decimal", "precision": 10})",
       R"({"type": "string", "logicalType": "date"})",
       R"({"type": "int", "logicalType": "timestamp-millis"})",
       R"({"type": "long", "logicalType": "uuid"})",
       R"({"type": "fixed", "name": "Dur", "size": 12, "logicalType": "duration"})",
       R"({"type": "long", "logicalType": "something-new"})"}) {
    EXPECT_EQ(Parse(json).root().logical_type, AvroLogicalType::kNone) << json;
  }
  // A fixed of 4 bytes holds 9 digits.
  EXPECT_EQ(Parse(R"({"type": "fixed", "name": "F", "size": 4, "logicalType": "decimal",
                      "precision": 9})")
                .root()
                .logical_type,
            AvroLogicalType::kDecimal);
}

TEST(AvroSchemaTest, RecursiveRecordsParse) {
  AvroSchema s = Parse(R"({"type": "record", "name": "LongList", "fields": [
    {"name": "value", "type": "long"},
    {"name": "next", "type": ["null", "LongList"]}]})");
  EXPECT_EQ(s.root().fields[1].type->branches[1], &s.root());
  EXPECT_STATUS(s.ToArrowSchema(), StatusCode::kInvalid,
                "field 'next': the recursive type 'LongList' has no Arrow type");
}

TEST(AvroSchemaTest, ErrorsNameThePlace) {
  struct Case {
    const char* json;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"type":"record","name":"R","fields":[{"name":"a","type":"int"},
               {"name":"b","type":"int"},{"name":"c","type":"foo"}]})",
            "fields[2].type: unknown type 'foo'"},
           {R"("foo")", "unknown type 'foo'"},
           {R"({"type":"record","name":"R","fields":[{"name":"a","type":"int"},
               {"name":"a","type":"long"}]})",
            "fields[1].name: field 'a' is defined twice"},
           {R"({"type":"record","name":"R","fields":[{"name":"1a","type":"int"}]})",
            "fields[0].name: invalid field name '1a'"},
           {R"({"type":"record","name":"R"})", "missing key 'fields'"},
           {R"({"type":"record","fields":[]})", "missing key 'name'"},
           {R"({"type":"record","name":"R","fields":[{"name":"a"}]})",
            "fields[0]: missing key 'type'"},
           {R"({"type":"record","name":"R","fields":[
               {"name":"a","type":{"type":"fixed","name":"R","size":1}}]})",
            "fields[0].type.name: type 'R' is defined twice"},
           {R"(["null",["int"]])",
            "[1]: a union may not immediately contain another union"},
           {R"(["null","int","null"])",
            "[2]: the union already has a branch of type 'null'"},
           {R"([])", "a union needs at least one branch"},
           {R"({"type":"enum","name":"E","symbols":["A","A"]})",
            "symbols[1]: symbol 'A' is defined twice"},
           {R"({"type":"enum","name":"E","symbols":["A"],"default":"B"})",
            "default: the default 'B' is not one of the symbols"},
           {R"({"type":"enum","name":"E","symbols":["A-B"]})",
            "symbols[0]: invalid symbol"},
           {R"({"type":"fixed","name":"F","size":-1})", "size: expected a size in bytes"},
           {R"({"type":"array"})", "missing key 'items'"},
           {R"({"type":"map","values":"nope"})", "values: unknown type 'nope'"},
           {R"({"type":"record","name":"int","fields":[]})",
            "name: a named type may not be called 'int'"},
           {R"({"type":{"type":"int"}})", "type: expected a type name"},
           {R"(42)", "expected a type name, an object or a union"},
           {R"({"type":"record","name":"R","fields":[{"name":"a","type":"Later"},
               {"name":"b","type":{"type":"fixed","name":"Later","size":1}}]})",
            "fields[0].type: unknown type 'Later'"}}) {
    auto s = AvroSchema::Parse(c.json);
    EXPECT_STATUS(s, StatusCode::kInvalid, c.message) << c.json;
  }
  EXPECT_STATUS(AvroSchema::Parse("{\"type\":"), StatusCode::kParseError, "");
}

TEST(AvroSchemaTest, DeepNestingIsRefused) {
  std::string json;
  for (int i = 0; i < 200; ++i) json += R"({"type":"array","items":)";
  json += R"("int")";
  for (int i = 0; i < 200; ++i) json += "}";
  EXPECT_STATUS(AvroSchema::Parse(json), StatusCode::kInvalid, "nested deeper than 128");
}

// The mapping table of src/kelt/avro/README.md.
TEST(AvroSchemaTest, ArrowMapping) {
  AvroSchema s = Parse(R"({"type": "record", "name": "All", "fields": [
    {"name": "n", "type": "null"},
    {"name": "b", "type": "boolean"},
    {"name": "i", "type": "int"},
    {"name": "l", "type": "long"},
    {"name": "f", "type": "float"},
    {"name": "d", "type": "double"},
    {"name": "by", "type": "bytes"},
    {"name": "s", "type": "string"},
    {"name": "rec", "type": {"type": "record", "name": "Sub", "fields": [{"name": "x", "type": "int"}]}},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
    {"name": "arr", "type": {"type": "array", "items": ["null", "long"]}},
    {"name": "m", "type": {"type": "map", "values": "string"}},
    {"name": "opt", "type": ["null", "string"]},
    {"name": "opt2", "type": ["string", "null"]},
    {"name": "only", "type": ["int"]},
    {"name": "u", "type": ["null", "int", "string", "Sub"]},
    {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "dec256", "type": {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 5}},
    {"name": "decf", "type": {"type": "fixed", "name": "F8", "size": 8, "logicalType": "decimal", "precision": 18, "scale": 3}},
    {"name": "date", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "ltm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "ltu", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "uuid", "type": {"type": "string", "logicalType": "uuid"}}
  ]})");
  ASSERT_OK_AND_ASSIGN(auto schema, s.ToArrowSchema());
  auto sub = arrow::struct_({arrow::field("x", arrow::int32(), false)});
  auto expected = arrow::schema({
      arrow::field("n", arrow::null(), true),
      arrow::field("b", arrow::boolean(), false),
      arrow::field("i", arrow::int32(), false),
      arrow::field("l", arrow::int64(), false),
      arrow::field("f", arrow::float32(), false),
      arrow::field("d", arrow::float64(), false),
      arrow::field("by", arrow::binary(), false),
      arrow::field("s", arrow::utf8(), false),
      arrow::field("rec", sub, false),
      arrow::field("e", arrow::dictionary(arrow::int32(), arrow::utf8()), false),
      arrow::field("arr", arrow::list(arrow::field("item", arrow::int64(), true)), false),
      arrow::field(
          "m",
          std::make_shared<arrow::MapType>(arrow::field("key", arrow::utf8(), false),
                                           arrow::field("value", arrow::utf8(), false)),
          false),
      arrow::field("opt", arrow::utf8(), true),
      arrow::field("opt2", arrow::utf8(), true),
      arrow::field("only", arrow::int32(), false),
      arrow::field("u",
                   arrow::dense_union({arrow::field("null", arrow::null(), true),
                                       arrow::field("int", arrow::int32(), false),
                                       arrow::field("string", arrow::utf8(), false),
                                       arrow::field("Sub", sub, false)},
                                      {0, 1, 2, 3}),
                   true),
      arrow::field("fx", arrow::fixed_size_binary(4), false),
      arrow::field("dec", arrow::decimal128(10, 2), false),
      arrow::field("dec256", arrow::decimal256(40, 5), false),
      arrow::field("decf", arrow::decimal128(18, 3), false),
      arrow::field("date", arrow::date32(), false),
      arrow::field("tm", arrow::time32(arrow::TimeUnit::MILLI), false),
      arrow::field("tu", arrow::time64(arrow::TimeUnit::MICRO), false),
      arrow::field("tsm", arrow::timestamp(arrow::TimeUnit::MILLI, "UTC"), false),
      arrow::field("tsu", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"), false),
      arrow::field("ltm", arrow::timestamp(arrow::TimeUnit::MILLI), false),
      arrow::field("ltu", arrow::timestamp(arrow::TimeUnit::MICRO), false),
      arrow::field("uuid", arrow::utf8(), false),
  });
  EXPECT_TRUE(schema->Equals(*expected, /*check_metadata=*/false))
      << schema->ToString() << "\nexpected\n"
      << expected->ToString();
}

TEST(AvroSchemaTest, ANonRecordLandsAsOneColumnNamedValue) {
  ASSERT_OK_AND_ASSIGN(auto schema, Parse(R"(["null","string"])").ToArrowSchema());
  EXPECT_EQ(schema->ToString(), "value: string");
}

}  // namespace
}  // namespace kelt
