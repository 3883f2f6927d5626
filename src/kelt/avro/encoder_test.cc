// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The encoder against Apache Avro C and kelt's own decoder. Avro's binary encoding is
// canonical for the values kelt writes (one block per array or map, minimal varints and
// decimals), so a row encoded by kelt must equal, byte for byte, the same value encoded
// by Avro C; the Arrow rows come from kelt's decoder of Avro C's bytes, which also
// checks that encoding then decoding gives back the same Arrow values.
#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include "kelt/avro.h"
#include "kelt/avro/avro_c_testing.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

using avro::testing::EncodeWithAvroC;

std::string Hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    auto b = static_cast<uint8_t>(c);
    out += kHex[b >> 4];
    out += kHex[b & 15];
    out += ' ';
  }
  return out;
}

// Encode `values` (Avro C's value JSON) with Avro C, decode them with kelt into a
// batch, encode the batch with kelt, and expect Avro C's bytes back; decode kelt's bytes
// and expect the same batch.
void ExpectRoundTrip(const std::string& schema, const std::vector<std::string>& values) {
  ASSERT_OK_AND_ASSIGN(AvroSchema s, AvroSchema::Parse(schema));
  ASSERT_OK_AND_ASSIGN(auto plan, AvroPlan::Compile(s, s));
  ASSERT_OK_AND_ASSIGN(auto decoder, AvroDecoder::Make(plan));
  std::vector<std::string> expected;
  for (const std::string& v : values) {
    ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeWithAvroC(schema, v));
    ASSERT_OK(decoder->Append(bytes));
    expected.push_back(std::move(bytes));
  }
  ASSERT_OK_AND_ASSIGN(auto batch, decoder->Finish());
  ASSERT_OK_AND_ASSIGN(auto encoder, AvroEncoder::Make(batch->schema(), s));
  std::vector<std::string> bodies;
  ASSERT_OK(encoder->Encode(*batch, &bodies));
  ASSERT_EQ(bodies.size(), expected.size());
  for (size_t i = 0; i < bodies.size(); ++i) {
    EXPECT_EQ(Hex(bodies[i]), Hex(expected[i]))
        << "row " << i << ": " << values[i] << "\n"
        << encoder->ToString();
  }
  for (const std::string& body : bodies) ASSERT_OK(decoder->Append(body));
  ASSERT_OK_AND_ASSIGN(auto again, decoder->Finish());
  EXPECT_TRUE(
      again->Equals(*batch, false, arrow::EqualOptions::Defaults().nans_equal(true)))
      << again->ToString() << "\n"
      << batch->ToString();
}

TEST(AvroEncoderTest, Primitives) {
  ExpectRoundTrip(R"({"type":"record","name":"R","fields":[
      {"name":"b","type":"boolean"},{"name":"i","type":"int"},
      {"name":"l","type":"long"},{"name":"f","type":"float"},
      {"name":"d","type":"double"},{"name":"s","type":"string"},
      {"name":"y","type":"bytes"},{"name":"n","type":"null"}]})",
                  {R"({"b":true,"i":-1,"l":-9223372036854775808,"f":1.5,"d":-0.25,
                       "s":"h\u00e9","y":"\u0000\u00ff","n":null})",
                   R"({"b":false,"i":2147483647,"l":9223372036854775807,"f":0,
                       "d":1e300,"s":"","y":"","n":null})",
                   R"({"b":false,"i":-2147483648,"l":63,"f":-3.25,"d":"NaN",
                       "s":"x","y":"a","n":null})"});
}

TEST(AvroEncoderTest, NullableUnionsEitherWay) {
  ExpectRoundTrip(R"({"type":"record","name":"R","fields":[
      {"name":"a","type":["null","long"]},{"name":"b","type":["string","null"]}]})",
                  {R"({"a":null,"b":{"string":"x"}})", R"({"a":{"long":7},"b":null})"});
}

TEST(AvroEncoderTest, NestedRecordsArraysMaps) {
  ExpectRoundTrip(R"({"type":"record","name":"R","fields":[
      {"name":"addr","type":{"type":"record","name":"A","fields":[
          {"name":"zip","type":"string"},
          {"name":"geo","type":["null",{"type":"record","name":"G","fields":[
              {"name":"lat","type":"double"}]}]}]}},
      {"name":"tags","type":{"type":"array","items":"string"}},
      {"name":"nested","type":{"type":"array","items":{"type":"array","items":["null","int"]}}},
      {"name":"attrs","type":{"type":"map","values":["null","long"]}},
      {"name":"people","type":{"type":"map","values":"A"}}]})",
                  {R"({"addr":{"zip":"1","geo":{"G":{"lat":1.5}}},"tags":["a","b"],
                       "nested":[[{"int":1},null],[]],"attrs":{"k":{"long":1},"z":null},
                       "people":{"p":{"zip":"2","geo":null}}})",
                   R"({"addr":{"zip":"","geo":null},"tags":[],"nested":[],"attrs":{},
                       "people":{}})"});
}

TEST(AvroEncoderTest, EnumsFixedAndOtherUnions) {
  ExpectRoundTrip(
      R"({"type":"record","name":"R","fields":[
      {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B","C"]}},
      {"name":"oe","type":["null","E"]},
      {"name":"fx","type":{"type":"fixed","name":"F","size":3}},
      {"name":"u","type":["null","int","string",{"type":"array","items":"long"}]},
      {"name":"v","type":["long","string"]}]})",
      {R"({"e":"C","oe":{"E":"A"},"fx":"abc","u":{"string":"s"},
                       "v":{"long":5}})",
       R"({"e":"A","oe":null,"fx":"\u0000\u0001\u0002","u":null,
                       "v":{"string":"x"}})",
       R"({"e":"B","oe":null,"fx":"zzz","u":{"array":[1,-2]},"v":{"long":-1}})",
       R"({"e":"B","oe":null,"fx":"zzz","u":{"int":-3},"v":{"long":0}})"});
}

TEST(AvroEncoderTest, LogicalTypes) {
  ExpectRoundTrip(
      R"({"type":"record","name":"R","fields":[
      {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
      {"name":"decf","type":{"type":"fixed","name":"D","size":8,"logicalType":"decimal",
                             "precision":12,"scale":3}},
      {"name":"day","type":{"type":"int","logicalType":"date"}},
      {"name":"tm","type":{"type":"int","logicalType":"time-millis"}},
      {"name":"tu","type":{"type":"long","logicalType":"time-micros"}},
      {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
      {"name":"tsu","type":{"type":"long","logicalType":"timestamp-micros"}},
      {"name":"lts","type":{"type":"long","logicalType":"local-timestamp-micros"}},
      {"name":"id","type":{"type":"string","logicalType":"uuid"}}]})",
      {R"({"dec":"\u0000\u0080","decf":"\u00ff\u00ff\u00ff\u00ff\u00ff\u00ff\u00ff\u0000",
                       "day":19000,"tm":1000,"tu":-1,"ts":1700000000000,
                       "tsu":1700000000000001,"lts":5,
                       "id":"123e4567-e89b-12d3-a456-426614174000"})",
       R"({"dec":"\u00ff\u007f","decf":"\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000",
                       "day":-1,"tm":0,"tu":86399999999,"ts":-1,"tsu":0,"lts":0,"id":""})",
       R"({"dec":"\u0000","decf":"\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0001",
                       "day":0,"tm":1,"tu":1,"ts":0,"tsu":1,"lts":-5,"id":"x"})"});
}

// Decimals Arrow holds as other precisions: the bytes are minimal two's complement,
// big-endian (the spec's "decimal" on bytes).
TEST(AvroEncoderTest, DecimalBytesAreMinimal) {
  ASSERT_OK_AND_ASSIGN(AvroSchema s, AvroSchema::Parse(R"({"type":"record","name":"R",
      "fields":[{"name":"d","type":{"type":"bytes","logicalType":"decimal",
                                    "precision":5,"scale":1}}]})"));
  auto type = arrow::decimal128(20, 1);
  auto array = arrow::json::ArrayFromJSONString(type, R"(["12.7", "-0.1", "0.0",
                                                          "9999.9", "10000.0"])")
                   .ValueOrDie();
  auto batch = arrow::RecordBatch::Make(arrow::schema({arrow::field("d", type, false)}),
                                        5, {array});
  ASSERT_OK_AND_ASSIGN(auto encoder, AvroEncoder::Make(batch->schema(), s));
  std::vector<std::string> bodies;
  Status st = encoder->Encode(*batch, &bodies);
  // 127 = 0x7f (one byte), -1 = 0xff, 0 = 0x00, 99999 = 0x01869f; 100000 has 6 digits.
  ASSERT_EQ(bodies.size(), 4u);
  EXPECT_EQ(Hex(bodies[0]), "02 7f ");
  EXPECT_EQ(Hex(bodies[1]), "02 ff ");
  EXPECT_EQ(Hex(bodies[2]), "02 00 ");
  EXPECT_EQ(Hex(bodies[3]), "06 01 86 9f ");
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_NE(st.message().find("field 'd', row 4"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("precision 5"), std::string::npos) << st.message();
}

std::shared_ptr<arrow::RecordBatch> BatchFromJson(
    const std::shared_ptr<arrow::Schema>& schema, const std::string& rows) {
  auto array = arrow::json::ArrayFromJSONString(arrow::struct_(schema->fields()), rows)
                   .ValueOrDie();
  return arrow::RecordBatch::FromStructArray(array).ValueOrDie();
}

// Columns by name in any order, extra columns left out, missing fields take their
// default, wider Arrow types checked per value.
TEST(AvroEncoderTest, MatchesColumnsByNameAndWritesDefaults) {
  const std::string writer = R"({"type":"record","name":"R","fields":[
      {"name":"a","type":"int"},
      {"name":"d","type":"string","default":"dflt"},
      {"name":"b","type":["null","double"]},
      {"name":"r","type":{"type":"record","name":"S","fields":[
          {"name":"x","type":"long","default":3}]},"default":{}}]})";
  ASSERT_OK_AND_ASSIGN(AvroSchema s, AvroSchema::Parse(writer));
  auto schema = arrow::schema({arrow::field("extra", arrow::utf8()),
                               arrow::field("b", arrow::int64()),
                               arrow::field("a", arrow::int64())});
  auto batch = BatchFromJson(schema, R"([{"extra":"z","b":2,"a":1},
                                         {"extra":null,"b":null,"a":-5}])");
  ASSERT_OK_AND_ASSIGN(auto encoder, AvroEncoder::Make(schema, s));
  std::vector<std::string> bodies;
  ASSERT_OK(encoder->Encode(*batch, &bodies));
  ASSERT_EQ(bodies.size(), 2u);
  ASSERT_OK_AND_ASSIGN(std::string c0, EncodeWithAvroC(writer, R"({"a":1,"d":"dflt",
      "b":{"double":2},"r":{"x":3}})"));
  ASSERT_OK_AND_ASSIGN(std::string c1, EncodeWithAvroC(writer, R"({"a":-5,"d":"dflt",
      "b":null,"r":{"x":3}})"));
  EXPECT_EQ(Hex(bodies[0]), Hex(c0));
  EXPECT_EQ(Hex(bodies[1]), Hex(c1));

  // An int64 beyond an Avro int fails its row, naming it.
  auto big = BatchFromJson(schema, R"([{"extra":"z","b":2,"a":1},
                                       {"extra":null,"b":null,"a":2147483648}])");
  bodies.clear();
  Status st = encoder->Encode(*big, &bodies);
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_NE(st.message().find("field 'a', row 1"), std::string::npos) << st.message();
}

// A null where the field's type admits none is the field's default (an NDJSON record
// without the key); without a default it fails the row.
TEST(AvroEncoderTest, NullTakesTheFieldsDefault) {
  const std::string writer = R"({"type":"record","name":"R","fields":[
      {"name":"d","type":"string","default":"dflt"},
      {"name":"n","type":"int","default":7}]})";
  ASSERT_OK_AND_ASSIGN(AvroSchema s, AvroSchema::Parse(writer));
  auto schema = arrow::schema(
      {arrow::field("d", arrow::utf8()), arrow::field("n", arrow::int64())});
  ASSERT_OK_AND_ASSIGN(auto encoder, AvroEncoder::Make(schema, s));
  std::vector<std::string> bodies;
  ASSERT_OK(encoder->Encode(*BatchFromJson(schema, R"([{"d":null,"n":1},
                                                       {"d":"x","n":null}])"),
                            &bodies));
  ASSERT_OK_AND_ASSIGN(std::string c0, EncodeWithAvroC(writer, R"({"d":"dflt","n":1})"));
  ASSERT_OK_AND_ASSIGN(std::string c1, EncodeWithAvroC(writer, R"({"d":"x","n":7})"));
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(Hex(bodies[0]), Hex(c0));
  EXPECT_EQ(Hex(bodies[1]), Hex(c1));
}

TEST(AvroEncoderTest, CompileErrorsNameTheField) {
  ASSERT_OK_AND_ASSIGN(AvroSchema s, AvroSchema::Parse(R"({"type":"record","name":"R",
      "fields":[{"name":"a","type":"int"},
                {"name":"r","type":{"type":"record","name":"S","fields":[
                    {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
                    {"name":"e","type":{"type":"enum","name":"E","symbols":["X"]}}]}}]})"));
  auto no_a = arrow::schema({arrow::field("b", arrow::int32())});
  auto r = AvroEncoder::Make(no_a, s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "field 'a': no column of that name and no default in the Avro schema");

  auto ns = arrow::schema(
      {arrow::field("a", arrow::int32()),
       arrow::field("r", arrow::struct_({arrow::field(
                             "ts", arrow::timestamp(arrow::TimeUnit::NANO, "UTC"))}))});
  r = AvroEncoder::Make(ns, s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(
      r.status().message().find("field 'r.ts': Arrow timestamp[ns, tz=UTC] cannot be "
                                "written as Avro timestamp-millis (long)"),
      std::string::npos)
      << r.status().message();

  auto str = arrow::schema({arrow::field("a", arrow::utf8())});
  r = AvroEncoder::Make(str, s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(
      r.status().message().find("field 'a': Arrow string cannot be written as Avro int"),
      std::string::npos)
      << r.status().message();
}

TEST(AvroEncoderTest, ValueErrorsNameFieldAndRow) {
  const std::string writer = R"({"type":"record","name":"R","fields":[
      {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
      {"name":"s","type":"string"}]})";
  ASSERT_OK_AND_ASSIGN(AvroSchema s, AvroSchema::Parse(writer));
  auto schema =
      arrow::schema({arrow::field("e", arrow::utf8()), arrow::field("s", arrow::utf8())});
  ASSERT_OK_AND_ASSIGN(auto encoder, AvroEncoder::Make(schema, s));
  std::vector<std::string> bodies;
  Status st = encoder->Encode(*BatchFromJson(schema, R"([{"e":"A","s":"x"},
                                                          {"e":"Q","s":"x"}])"),
                              &bodies);
  EXPECT_EQ(st.message(),
            "Avro encoding: field 'e', row 1: 'Q', not a symbol of the enum");
  st = encoder->Encode(*BatchFromJson(schema, R"([{"e":"B","s":null}])"), &bodies);
  EXPECT_EQ(
      st.message(),
      "Avro encoding: field 's', row 0: a null, and the Avro type does not admit null");
  // A batch of another schema is refused whole.
  auto other = arrow::schema(
      {arrow::field("e", arrow::utf8()), arrow::field("s", arrow::int32())});
  st = encoder->Encode(*BatchFromJson(other, R"([{"e":"B","s":1}])"), &bodies);
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
}

// A writer schema derived from Arrow encodes the batch, and reads back as the same
// Arrow types (nullability kept; dictionaries come back as strings, see README).
TEST(AvroSchemaFromArrowTest, DerivedSchemaRoundTrips) {
  auto schema = arrow::schema({
      arrow::field("id", arrow::int64(), false),
      arrow::field("name", arrow::utf8()),
      arrow::field("small", arrow::int32(), false),
      arrow::field("flag", arrow::boolean()),
      arrow::field("f", arrow::float32()),
      arrow::field("price", arrow::decimal128(10, 2)),
      arrow::field("day", arrow::date32()),
      arrow::field("at", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
      arrow::field("local", arrow::timestamp(arrow::TimeUnit::MILLI)),
      arrow::field("tod", arrow::time64(arrow::TimeUnit::MICRO)),
      arrow::field("raw", arrow::binary()),
      arrow::field("fx", arrow::fixed_size_binary(2)),
      arrow::field("tags", arrow::list(arrow::utf8())),
      arrow::field("m", arrow::map(arrow::utf8(), arrow::int32())),
      arrow::field("addr", arrow::struct_({arrow::field("zip", arrow::utf8(), false)})),
  });
  ASSERT_OK_AND_ASSIGN(
      std::string json,
      AvroSchemaFromArrow(*schema, {.name = "Order", .name_space = "x.y"}));
  ASSERT_OK_AND_ASSIGN(AvroSchema s, AvroSchema::Parse(json));
  EXPECT_EQ(s.root().name, "x.y.Order");
  ASSERT_OK_AND_ASSIGN(auto back, s.ToArrowSchema());
  EXPECT_TRUE(back->Equals(*schema)) << json << "\n" << back->ToString();

  auto batch = BatchFromJson(schema, R"([
      {"id":1,"name":"a","small":-2,"flag":true,"f":1.5,"price":"12.34","day":19000,
       "at":1700000000000000,"local":5,"tod":1,"raw":"xy","fx":"ab","tags":["p",null],
       "m":[["k",1]],"addr":{"zip":"z"}},
      {"id":2,"name":null,"small":0,"flag":null,"f":null,"price":null,"day":null,
       "at":null,"local":null,"tod":null,"raw":null,"fx":null,"tags":null,"m":null,
       "addr":null}])");
  ASSERT_OK_AND_ASSIGN(auto encoder, AvroEncoder::Make(schema, s));
  std::vector<std::string> bodies;
  ASSERT_OK(encoder->Encode(*batch, &bodies));
  ASSERT_OK_AND_ASSIGN(auto plan, AvroPlan::Compile(s, s));
  ASSERT_OK_AND_ASSIGN(auto decoder, AvroDecoder::Make(plan));
  for (const auto& b : bodies) ASSERT_OK(decoder->Append(b));
  ASSERT_OK_AND_ASSIGN(auto decoded, decoder->Finish());
  EXPECT_TRUE(decoded->Equals(*batch)) << decoded->ToString() << "\n"
                                       << batch->ToString();
  // And Avro C reads the bytes as the same value.
  ASSERT_OK_AND_ASSIGN(std::string c1, EncodeWithAvroC(json, R"({"id":2,"name":null,
      "small":0,"flag":null,"f":null,"price":null,"day":null,"at":null,"local":null,
      "tod":null,"raw":null,"fx":null,"tags":null,"m":null,"addr":null})"));
  EXPECT_EQ(Hex(bodies[1]), Hex(c1));
}

TEST(AvroSchemaFromArrowTest, RefusesWhatAvroCannotHold) {
  auto r = AvroSchemaFromArrow(*arrow::schema({arrow::field("a-b", arrow::int32())}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'a-b'"), std::string::npos);
  r = AvroSchemaFromArrow(
      *arrow::schema({arrow::field("d", arrow::duration(arrow::TimeUnit::SECOND))}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("column 'd': Arrow duration[s] has no Avro"),
            std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace kelt
