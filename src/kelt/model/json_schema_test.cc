// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/json_schema.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

// The columns of a mapped schema as "name:Type", with "@a.b" for a nested source.
std::vector<std::string> Columns(std::string_view json_schema) {
  auto schema = SchemaFromJsonSchema(json_schema);
  EXPECT_OK(schema) << json_schema;
  std::vector<std::string> out;
  if (!schema.ok()) return out;
  for (const Field& f : schema->fields) {
    std::string c = f.name + ":" + std::string(TypeName(f.type));
    for (size_t i = 0; i < f.source.size(); ++i) c += (i == 0 ? "@" : ".") + f.source[i];
    out.push_back(c);
  }
  return out;
}

using Strings = std::vector<std::string>;

TEST(JsonSchema, EveryTypeInPropertyOrder) {
  EXPECT_EQ(Columns(R"({"$schema":"http://json-schema.org/draft-07/schema#",
      "type":"object","properties":{
        "id":{"type":"integer"},"price":{"type":"number"},"paid":{"type":"boolean"},
        "name":{"type":"string"},"at":{"type":"string","format":"date-time"},
        "day":{"type":"string","format":"date"},"clock":{"type":"string","format":"time"},
        "uid":{"type":"string","format":"uuid"},"tags":{"type":"array","items":{}},
        "attrs":{"type":"object","additionalProperties":{"type":"string"}},
        "anything":{},"yes":true,"nothing":{"type":"null"}}})"),
            (Strings{"id:Int64", "price:Float64", "paid:Bool", "name:Utf8",
                     "at:Timestamp", "day:Date", "clock:Utf8", "uid:Utf8", "tags:Utf8",
                     "attrs:Utf8", "anything:Utf8", "yes:Utf8", "nothing:Utf8"}));
}

TEST(JsonSchema, NullableFormsLandTheirType) {
  EXPECT_EQ(Columns(R"({"type":"object","required":["a"],"properties":{
        "a":{"type":["integer","null"]},
        "b":{"anyOf":[{"type":"null"},{"type":"string","format":"date-time"}]},
        "c":{"oneOf":[{"type":"boolean"},{"type":"null"}]},
        "d":{"type":["null","number"]}}})"),
            (Strings{"a:Int64", "b:Timestamp", "c:Bool", "d:Float64"}));
}

TEST(JsonSchema, UnionsOfUnlikeTypesLandAsText) {
  EXPECT_EQ(Columns(R"({"type":"object","properties":{
        "n":{"type":["integer","number"]},
        "s":{"type":["string","integer"]},
        "o":{"oneOf":[{"type":"string"},{"type":"object","properties":{"x":{}}}]},
        "e":{"enum":["a","b",null]},
        "k":{"const":3},
        "m":{"enum":[1,2.5]},
        "x":{"enum":[1,"one"]}}})"),
            (Strings{"n:Float64", "s:Utf8", "o:Utf8", "e:Utf8", "k:Int64", "m:Float64",
                     "x:Utf8"}));
}

TEST(JsonSchema, NestedObjectsFlattenWithSourcePaths) {
  EXPECT_EQ(Columns(R"({"type":"object","properties":{
        "id":{"type":"integer"},
        "address":{"type":["object","null"],"properties":{
          "city":{"type":"string"},
          "geo":{"type":"object","properties":{"lat":{"type":"number"},
                                               "lon":{"type":"number"}}}}},
        "empty":{"type":"object","properties":{}}}})"),
            (Strings{"id:Int64", "address_city:Utf8@address.city",
                     "address_geo_lat:Float64@address.geo.lat",
                     "address_geo_lon:Float64@address.geo.lon", "empty:Utf8"}));
}

TEST(JsonSchema, LocalRefsResolveInBothDrafts) {
  // draft-07 `definitions`, 2020-12 `$defs`, the root's $id before the fragment, an
  // escaped pointer token, the same definition used twice.
  EXPECT_EQ(Columns(R"({"$id":"https://example.com/order.json","type":"object",
        "definitions":{"Money":{"type":"number"}},
        "$defs":{"Address":{"type":"object","properties":{"city":{"type":"string"}}},
                 "a/b":{"type":"boolean"}},
        "properties":{
          "total":{"$ref":"#/definitions/Money"},
          "ship":{"$ref":"#/$defs/Address"},
          "bill":{"oneOf":[{"type":"null"},
                           {"$ref":"https://example.com/order.json#/$defs/Address"}]},
          "flag":{"$ref":"#/$defs/a~1b"}}})"),
            (Strings{"total:Float64", "ship_city:Utf8@ship.city",
                     "bill_city:Utf8@bill.city", "flag:Bool"}));
}

TEST(JsonSchema, AllOfAndRefSiblingsMergeProperties) {
  EXPECT_EQ(Columns(R"({"$defs":{"Base":{"type":"object","properties":{
                           "id":{"type":"integer"},"kind":{"type":"string"}}}},
        "allOf":[{"$ref":"#/$defs/Base"},
                 {"properties":{"kind":{"type":"integer"},"extra":{"type":"number"}}},
                 {"required":["id"]}],
        "properties":{"own":{"type":"string"},
                      "when":{"allOf":[{"type":"string"},{"format":"date"}]},
                      "big":{"allOf":[{"type":"number"},{"type":"integer"}]}}})"),
            (Strings{"own:Utf8", "when:Utf8", "big:Int64", "id:Int64", "kind:Utf8",
                     "extra:Float64"}));
}

TEST(JsonSchema, ARefBesideKeywordsComesFirst) {
  // 2020-12: a $ref beside `properties` extends the referred object.
  EXPECT_EQ(Columns(R"({"$schema":"https://json-schema.org/draft/2020-12/schema",
        "$defs":{"Base":{"type":"object","properties":{"id":{"type":"integer"}}}},
        "$ref":"#/$defs/Base","properties":{"more":{"type":"boolean"}},
        "allOf":[{"properties":{"last":{"type":"number"}}}]})"),
            (Strings{"id:Int64", "more:Bool", "last:Float64"}));
}

TEST(JsonSchema, RootRefIsFollowed) {
  EXPECT_EQ(Columns(R"({"$ref":"#/definitions/Order","definitions":{"Order":{
        "type":"object","properties":{"id":{"type":"integer"}}}}})"),
            (Strings{"id:Int64"}));
}

// The message names the JSON pointer of what cannot map.
void ExpectRefused(const std::string& json_schema, std::string_view pointer_and_why) {
  auto schema = SchemaFromJsonSchema(json_schema);
  EXPECT_STATUS(schema, StatusCode::kInvalid, std::string(pointer_and_why))
      << json_schema;
}

TEST(JsonSchema, RefusalsNameThePointer) {
  ExpectRefused(R"({"type":"string"})", "#: the root schema is not an object");
  ExpectRefused(R"({"type":"object"})", "#: the root schema is not an object");
  ExpectRefused(R"({"properties":{"a":{"type":"decimal"}}})",
                "#/properties/a/type: unknown type 'decimal'");
  ExpectRefused(R"({"properties":{"a":false}})",
                "#/properties/a: the schema false admits no value");
  ExpectRefused(R"({"properties":{"a":{"$ref":"other.json#/x"}}})",
                "#/properties/a: $ref 'other.json#/x' is outside this schema");
  ExpectRefused(R"({"properties":{"a":{"$ref":"#node"}}})",
                "#/properties/a: $ref '#node' names an anchor");
  ExpectRefused(R"({"properties":{"a":{"$ref":"#/$defs/missing"}}})",
                "#/properties/a: $ref '#/$defs/missing' points at nothing");
  ExpectRefused(R"({"properties":{"a":{"type":"object","properties":{"b":{}}},
                                   "a_b":{"type":"integer"}}})",
                "#/properties/a_b: lands as column 'a_b', as #/properties/a/properties/b "
                "does");
  ExpectRefused(
      R"({"properties":{"a":{"allOf":[{"type":"string"},{"type":"integer"}]}}})",
      "#/properties/a/allOf: its subschemas (allOf, $ref) want both Utf8 and Int64; "
      "no value is both");
  ExpectRefused(R"({"properties":{"":{"type":"integer"}}})",
                "#/properties/: an empty property name cannot name a column");
  ExpectRefused(R"({"properties":{"a":{"type":7}}})", "#/properties/a/type: expected");
  ExpectRefused(R"({"properties":{"a":{"anyOf":[]}}})",
                "#/properties/a/anyOf: expected a non-empty list of schemas");
  ExpectRefused(R"({"properties":"nope"})", "#/properties: expected an object");
}

TEST(JsonSchema, RefCyclesAreRefused) {
  // A tree: a node's parent is a node.
  ExpectRefused(R"({"$ref":"#/$defs/Node","$defs":{"Node":{"type":"object",
                    "properties":{"name":{"type":"string"},
                                  "parent":{"$ref":"#/$defs/Node"}}}}})",
                "#/$defs/Node/properties/parent: $ref '#/$defs/Node' refers back to a "
                "schema it is inside");
  // The root itself, and refs that only point at each other.
  ExpectRefused(R"({"properties":{"self":{"$ref":"#"}}})",
                "#/properties/self: $ref '#' refers back");
  ExpectRefused(R"({"properties":{"a":{"$ref":"#/$defs/x"}},
                    "$defs":{"x":{"$ref":"#/$defs/y"},"y":{"$ref":"#/$defs/x"}}})",
                "#/$defs/y: $ref '#/$defs/x' refers back");
  // A recursive schema under an array is fine: the array lands as JSON text.
  EXPECT_EQ(Columns(R"({"$defs":{"Node":{"type":"object","properties":{
        "children":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}},
        "properties":{"root":{"$ref":"#/$defs/Node"}}})"),
            (Strings{"root_children:Utf8@root.children"}));
}

TEST(JsonSchema, SchemasThatExplodeAreRefused) {
  // Each definition uses the next twice: 2^20 columns without any recursion.
  std::string defs;
  for (int i = 0; i < 20; ++i) {
    const std::string next = "#/$defs/d" + std::to_string(i + 1);
    defs += "\"d" + std::to_string(i) + R"(":{"properties":{"a":{"$ref":")" + next +
            R"("},"b":{"$ref":")" + next + "\"}}},";
  }
  defs += R"("d20":{"type":"integer"})";
  ExpectRefused(R"({"$defs":{)" + defs + R"(},"properties":{"x":{"$ref":"#/$defs/d0"}}})",
                "columns");
  // Nesting deeper than the limit.
  std::string deep = R"({"type":"integer"})";
  for (int i = 0; i < 80; ++i) deep = R"({"properties":{"n":)" + deep + "}}";
  ExpectRefused(deep, "nests deeper than 64 levels");
}

TEST(JsonSchema, MalformedJsonIsAParseError) {
  EXPECT_STATUS(SchemaFromJsonSchema("{\"properties\":"), StatusCode::kParseError,
                "the JSON Schema is not JSON");
}

}  // namespace
}  // namespace kelt
