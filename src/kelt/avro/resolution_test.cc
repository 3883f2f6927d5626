// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Schema resolution (the Avro spec's "Schema Resolution"): records written with one
// schema by Avro C, read by kelt with another.
#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include "kelt/avro.h"
#include "kelt/avro/avro_c_testing.h"
#include "kelt/testing/arrow_assertions.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

using avro::testing::EncodeWithAvroC;

// Writes each value with Avro C under `writer` and reads them all as `reader`.
Result<std::shared_ptr<arrow::RecordBatch>> Read(std::string_view writer,
                                                 std::string_view reader,
                                                 const std::vector<std::string>& values) {
  KELT_ASSIGN_OR_RAISE(AvroSchema w, AvroSchema::Parse(writer));
  KELT_ASSIGN_OR_RAISE(AvroSchema r, AvroSchema::Parse(reader));
  KELT_ASSIGN_OR_RAISE(auto plan, AvroPlan::Compile(w, r));
  KELT_ASSIGN_OR_RAISE(auto decoder, AvroDecoder::Make(plan));
  for (const std::string& v : values) {
    KELT_ASSIGN_OR_RAISE(std::string bytes, EncodeWithAvroC(writer, v));
    KELT_RETURN_NOT_OK(decoder->Append(bytes));
  }
  KELT_ASSIGN_OR_RAISE(auto batch, decoder->Finish());
  auto st = batch->ValidateFull();
  if (!st.ok()) return Status::Internal(st.ToString());
  return batch;
}

// The one failing record's error.
AvroDecodeError ReadFails(std::string_view writer, std::string_view reader,
                          const std::string& value, Status* status = nullptr) {
  auto w = AvroSchema::Parse(writer);
  auto r = AvroSchema::Parse(reader);
  EXPECT_OK(w);
  EXPECT_OK(r);
  auto plan = AvroPlan::Compile(*w, *r);
  EXPECT_OK(plan);
  auto decoder = AvroDecoder::Make(*plan);
  auto bytes = EncodeWithAvroC(writer, value);
  EXPECT_OK(bytes);
  Status st = (*decoder)->Append(*bytes);
  EXPECT_NOT_OK(st);
  if (status) *status = st;
  return (*decoder)->last_error();
}

Status CompileError(std::string_view writer, std::string_view reader) {
  auto w = AvroSchema::Parse(writer);
  auto r = AvroSchema::Parse(reader);
  EXPECT_OK(w);
  EXPECT_OK(r);
  return AvroPlan::Compile(*w, *r).status();
}

using testing::ExpectColumn;

std::string Record(const std::string& fields, const std::string& name = "R") {
  return R"({"type": "record", "name": ")" + name + R"(", "fields": [)" + fields + "]}";
}

TEST(AvroResolutionTest, FieldsAreMatchedByNameInAnyOrder) {
  const std::string w =
      Record(R"({"name": "a", "type": "int"}, {"name": "b", "type": "string"},
                                  {"name": "c", "type": "double"})");
  const std::string r =
      Record(R"({"name": "c", "type": "double"}, {"name": "a", "type": "int"},
                                  {"name": "b", "type": "string"})");
  ASSERT_OK_AND_ASSIGN(auto batch, Read(w, r, {R"({"a": 1, "b": "x", "c": 2.5})"}));
  EXPECT_EQ(batch->schema()->field(0)->name(), "c");
  ExpectColumn(*batch, "a", "[1]");
  ExpectColumn(*batch, "b", R"(["x"])");
  ExpectColumn(*batch, "c", "[2.5]");
}

TEST(AvroResolutionTest, WriterFieldsTheReaderLacksAreSkipped) {
  const std::string w = Record(R"(
    {"name": "keep1", "type": "int"},
    {"name": "s_bool", "type": "boolean"},
    {"name": "s_int", "type": "int"},
    {"name": "s_long", "type": "long"},
    {"name": "s_float", "type": "float"},
    {"name": "s_double", "type": "double"},
    {"name": "s_bytes", "type": "bytes"},
    {"name": "s_string", "type": "string"},
    {"name": "s_fixed", "type": {"type": "fixed", "name": "F", "size": 3}},
    {"name": "s_enum", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
    {"name": "s_array", "type": {"type": "array", "items": {"type": "array", "items": "string"}}},
    {"name": "s_map", "type": {"type": "map", "values": ["null", "long"]}},
    {"name": "s_union", "type": ["null", "string", {"type": "record", "name": "U", "fields": [
        {"name": "u", "type": "int"}]}]},
    {"name": "s_record", "type": {"type": "record", "name": "S", "fields": [
        {"name": "x", "type": "string"}, {"name": "y", "type": {"type": "array", "items": "int"}}]}},
    {"name": "s_null", "type": "null"},
    {"name": "keep2", "type": "string"})");
  const std::string r = Record(R"({"name": "keep2", "type": "string"},
                                  {"name": "keep1", "type": "int"})");
  ASSERT_OK_AND_ASSIGN(
      auto batch,
      Read(
          w, r,
          {R"({"keep1": 7, "s_bool": true, "s_int": -3, "s_long": 123456789012, "s_float": 1.5,
                "s_double": 2.5, "s_bytes": "abc", "s_string": "def", "s_fixed": "xyz",
                "s_enum": "B", "s_array": [["a", "b"], [], ["c"]], "s_map": {"k": {"long": 5}, "n": null},
                "s_union": {"U": {"u": 4}}, "s_record": {"x": "q", "y": [1, 2]}, "s_null": null,
                "keep2": "end"})",
           R"({"keep1": 8, "s_bool": false, "s_int": 0, "s_long": 0, "s_float": 0, "s_double": 0,
                "s_bytes": "", "s_string": "", "s_fixed": "123", "s_enum": "A", "s_array": [],
                "s_map": {}, "s_union": {"string": "s"}, "s_record": {"x": "", "y": []},
                "s_null": null, "keep2": "again"})"}));
  ASSERT_EQ(batch->num_columns(), 2);
  ExpectColumn(*batch, "keep1", "[7, 8]");
  ExpectColumn(*batch, "keep2", R"(["end", "again"])");
}

// Avro C writes positive block counts; a writer may also write a negative count and the
// block's size in bytes, which a skipped field jumps over and a read field ignores.
TEST(AvroResolutionTest, BlocksWithByteSizesAreSkippedWhole) {
  const std::string w =
      Record(R"({"name": "skip", "type": {"type": "array", "items": "long"}},
                                  {"name": "m", "type": {"type": "map", "values": "int"}},
                                  {"name": "keep", "type": {"type": "array", "items": "int"}})");
  const std::string r =
      Record(R"({"name": "keep", "type": {"type": "array", "items": "int"}},
                                  {"name": "m", "type": {"type": "map", "values": "int"}})");
  // skip: count -2, 2 bytes, items 1 and 2, then count 0; m: count -1, 3 bytes, "a" -> 3,
  // 0; keep: count -2, size 2, items 4 and 5, 0.
  const std::string body = {0x03, 0x04, 0x02, 0x04, 0x00, 0x01, 0x06, 0x02,
                            'a',  0x06, 0x00, 0x03, 0x04, 0x08, 0x0a, 0x00};
  ASSERT_OK_AND_ASSIGN(AvroSchema ws, AvroSchema::Parse(w));
  ASSERT_OK_AND_ASSIGN(AvroSchema rs, AvroSchema::Parse(r));
  ASSERT_OK_AND_ASSIGN(auto plan, AvroPlan::Compile(ws, rs));
  ASSERT_OK_AND_ASSIGN(auto decoder, AvroDecoder::Make(plan));
  ASSERT_OK(decoder->Append(body));
  ASSERT_OK_AND_ASSIGN(auto batch, decoder->Finish());
  ExpectColumn(*batch, "keep", "[[4, 5]]");
  ExpectColumn(*batch, "m", R"([[["a", 3]]])");
  // A skipped block whose size runs past the record is truncated.
  const std::string short_body = {0x01, 0x40, 0x02};
  ASSERT_OK_AND_ASSIGN(auto again, AvroDecoder::Make(plan));
  ASSERT_NOT_OK(again->Append(short_body));
  EXPECT_EQ(again->last_error().kind, AvroErrorKind::kTruncated);
  EXPECT_EQ(again->last_error().field, "skip");
}

TEST(AvroResolutionTest, ReaderFieldsTheWriterLacksTakeTheirDefaults) {
  const std::string w = Record(R"({"name": "id", "type": "int"})");
  const std::string r = Record(R"(
    {"name": "id", "type": "int"},
    {"name": "b", "type": "boolean", "default": true},
    {"name": "l", "type": "long", "default": -5},
    {"name": "f", "type": "float", "default": 1.5},
    {"name": "d", "type": "double", "default": "NaN"},
    {"name": "s", "type": "string", "default": "dflt"},
    {"name": "by", "type": "bytes", "default": "\u0041\u0042"},
    {"name": "fx", "type": {"type": "fixed", "name": "F2", "size": 2}, "default": "zz"},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}, "default": "Y"},
    {"name": "arr", "type": {"type": "array", "items": "int"}, "default": [1, 2]},
    {"name": "m", "type": {"type": "map", "values": "string"}, "default": {"k": "v"}},
    {"name": "opt", "type": ["null", "string"], "default": null},
    {"name": "opt2", "type": ["string", "null"], "default": "first"},
    {"name": "late", "type": ["null", "long"], "default": 42},
    {"name": "rec", "type": {"type": "record", "name": "Sub", "fields": [
      {"name": "x", "type": "int"}, {"name": "y", "type": "string", "default": "yy"}]},
     "default": {"x": 3}},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2},
     "default": "\u0001\u0000"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}, "default": 1000})");
  ASSERT_OK_AND_ASSIGN(auto batch, Read(w, r, {R"({"id": 1})", R"({"id": 2})"}));
  ExpectColumn(*batch, "id", "[1, 2]");
  ExpectColumn(*batch, "b", "[true, true]");
  ExpectColumn(*batch, "l", "[-5, -5]");
  ExpectColumn(*batch, "f", "[1.5, 1.5]");
  ExpectColumn(*batch, "s", R"(["dflt", "dflt"])");
  ExpectColumn(*batch, "by", R"(["AB", "AB"])");
  ExpectColumn(*batch, "fx", R"(["zz", "zz"])");
  ExpectColumn(*batch, "arr", "[[1, 2], [1, 2]]");
  ExpectColumn(*batch, "m", R"([[["k", "v"]], [["k", "v"]]])");
  ExpectColumn(*batch, "opt", "[null, null]");
  ExpectColumn(*batch, "opt2", R"(["first", "first"])");
  ExpectColumn(*batch, "late", "[42, 42]");  // Avro 1.12: any branch the default fits
  ExpectColumn(*batch, "rec", R"([{"x": 3, "y": "yy"}, {"x": 3, "y": "yy"}])");
  ExpectColumn(*batch, "dec", R"(["2.56", "2.56"])");
  ExpectColumn(*batch, "ts", "[1000, 1000]");
  auto d = std::static_pointer_cast<arrow::DoubleArray>(batch->GetColumnByName("d"));
  EXPECT_TRUE(std::isnan(d->Value(1)));
  auto e = std::static_pointer_cast<arrow::DictionaryArray>(batch->GetColumnByName("e"));
  EXPECT_EQ(e->GetValueIndex(0), 1);
}

TEST(AvroResolutionTest, AReaderFieldWithoutDefaultFailsTheCompile) {
  Status st = CompileError(Record(R"({"name": "id", "type": "int"})", "v1.Order"),
                           Record(R"({"name": "id", "type": "int"},
                                     {"name": "currency", "type": "string"})",
                                  "v2.Order"));
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_EQ(
      st.message(),
      "field 'currency': the reader's field 'v2.Order.currency' has no default and the "
      "writer's record 'v1.Order' has no field 'currency'");
}

TEST(AvroResolutionTest, BadDefaultsFailTheCompile) {
  const std::string w = Record(R"({"name": "id", "type": "int"})");
  EXPECT_STATUS(CompileError(w, Record(R"({"name": "id", "type": "int"},
                                          {"name": "x", "type": "int", "default": "one"})")),
                StatusCode::kInvalid,
                "field 'x': the default \"one\" is not a value of type int");
  EXPECT_STATUS(CompileError(w, Record(R"({"name": "id", "type": "int"},
                                          {"name": "x", "type": "int", "default": 3000000000})")),
                StatusCode::kInvalid, "is not a value of type int");
  EXPECT_STATUS(CompileError(w, Record(R"({"name": "id", "type": "int"},
                                          {"name": "x", "type": ["null", "int"], "default": "s"})")),
                StatusCode::kInvalid, "is not a value of type union");
  EXPECT_STATUS(CompileError(w, Record(R"({"name": "id", "type": "int"},
                               {"name": "x", "type": {"type": "record", "name": "S", "fields": [
                                 {"name": "a", "type": "int"}]}, "default": {}})")),
                StatusCode::kInvalid, "has no field 'a' and that field has no default");
  EXPECT_STATUS(CompileError(w, Record(R"({"name": "id", "type": "int"},
                                          {"name": "x", "type": "bytes", "default": "\u0100"})")),
                StatusCode::kInvalid, "is not a value of type bytes");
}

TEST(AvroResolutionTest, FieldsMatchByReaderAliases) {
  const std::string w = Record(R"({"name": "old_name", "type": "string"},
                                  {"name": "name", "type": "string"})",
                               "com.a.Old");
  // The reader's `name` takes the writer's `name`, `renamed` the writer's `old_name`.
  const std::string r = R"({"type": "record", "name": "New", "namespace": "com.b",
    "aliases": ["com.a.Old"], "fields": [
      {"name": "renamed", "type": "string", "aliases": ["old_name"]},
      {"name": "name", "type": "string", "aliases": ["old_name"]}]})";
  ASSERT_OK_AND_ASSIGN(auto batch, Read(w, r, {R"({"old_name": "o", "name": "n"})"}));
  ExpectColumn(*batch, "renamed", R"(["o"])");
  ExpectColumn(*batch, "name", R"(["n"])");
}

TEST(AvroResolutionTest, NamedTypesMatchByNameOrAlias) {
  const std::string w =
      Record(R"({"name": "sub", "type": {"type": "record", "name": "a.Point",
                                    "fields": [{"name": "x", "type": "int"}]}})");
  // Same unqualified name in another namespace.
  ASSERT_OK(Read(w,
                 Record(R"({"name": "sub", "type": {"type": "record", "name": "b.Point",
                                "fields": [{"name": "x", "type": "int"}]}})"),
                 {R"({"sub": {"x": 1}})"})
                .status());
  // By the reader's alias.
  ASSERT_OK(Read(w, Record(R"({"name": "sub", "type": {"type": "record", "name": "Coord",
                                "aliases": ["a.Point"], "fields": [{"name": "x", "type": "int"}]}})"),
                 {R"({"sub": {"x": 1}})"})
                .status());
  EXPECT_STATUS(
      CompileError(w,
                   Record(R"({"name": "sub", "type": {"type": "record", "name": "Other",
                                         "fields": [{"name": "x", "type": "int"}]}})")),
      StatusCode::kInvalid,
      "field 'sub': the writer's record 'a.Point' cannot be read as the reader's "
      "record 'Other'");
  // Fixed types need the same size too.
  EXPECT_STATUS(CompileError(R"({"type": "fixed", "name": "F", "size": 2})",
                             R"({"type": "fixed", "name": "F", "size": 3})"),
                StatusCode::kInvalid, "cannot be read as");
}

TEST(AvroResolutionTest, Promotions) {
  const std::string w = Record(R"(
    {"name": "i2l", "type": "int"}, {"name": "i2f", "type": "int"}, {"name": "i2d", "type": "int"},
    {"name": "l2f", "type": "long"}, {"name": "l2d", "type": "long"}, {"name": "f2d", "type": "float"},
    {"name": "s2b", "type": "string"}, {"name": "b2s", "type": "bytes"},
    {"name": "i2ts", "type": "int"})");
  const std::string r = Record(R"(
    {"name": "i2l", "type": "long"}, {"name": "i2f", "type": "float"}, {"name": "i2d", "type": "double"},
    {"name": "l2f", "type": "float"}, {"name": "l2d", "type": "double"}, {"name": "f2d", "type": "double"},
    {"name": "s2b", "type": "bytes"}, {"name": "b2s", "type": "string"},
    {"name": "i2ts", "type": {"type": "long", "logicalType": "timestamp-millis"}})");
  ASSERT_OK_AND_ASSIGN(
      auto batch,
      Read(
          w, r,
          {R"({"i2l": -7, "i2f": 16777217, "i2d": 2147483647, "l2f": 3, "l2d": 9007199254740993,
                "f2d": 0.1, "s2b": "str", "b2s": "byt", "i2ts": 1000})"}));
  ExpectColumn(*batch, "i2l", "[-7]");
  ExpectColumn(*batch, "i2f", "[16777216]");  // float rounds, as Java's promotion does
  ExpectColumn(*batch, "i2d", "[2147483647]");
  ExpectColumn(*batch, "l2f", "[3]");
  ExpectColumn(*batch, "l2d", "[9007199254740992]");
  auto f2d = std::static_pointer_cast<arrow::DoubleArray>(batch->GetColumnByName("f2d"));
  EXPECT_EQ(f2d->Value(0), static_cast<double>(0.1f));
  ExpectColumn(*batch, "s2b", R"(["str"])");
  ExpectColumn(*batch, "b2s", R"(["byt"])");
  ExpectColumn(*batch, "i2ts", "[1000]");
  // Bytes read as a string must be UTF-8.
  EXPECT_EQ(ReadFails(R"("bytes")", R"("string")", R"("\u00ff")").kind,
            AvroErrorKind::kInvalidUtf8);
  // No demotions.
  EXPECT_STATUS(CompileError(R"("long")", R"("int")"), StatusCode::kInvalid,
                "the writer's long cannot be read as the reader's int");
  EXPECT_STATUS(CompileError(R"("double")", R"("float")"), StatusCode::kInvalid, "");
  EXPECT_STATUS(CompileError(R"("string")", R"("int")"), StatusCode::kInvalid, "");
}

TEST(AvroResolutionTest, EnumSymbolsMapByName) {
  const std::string w = Record(R"({"name": "e", "type": {"type": "enum", "name": "Suit",
                                    "symbols": ["SPADES", "HEARTS", "DIAMONDS", "CLUBS"]}})");
  // Reordered, DIAMONDS unknown to the reader, which has a default.
  const std::string with_default =
      Record(R"({"name": "e", "type": {"type": "enum", "name": "Suit",
      "symbols": ["UNKNOWN", "CLUBS", "HEARTS", "SPADES"], "default": "UNKNOWN"}})");
  ASSERT_OK_AND_ASSIGN(auto batch, Read(w, with_default,
                                        {R"({"e": "SPADES"})", R"({"e": "HEARTS"})",
                                         R"({"e": "DIAMONDS"})", R"({"e": "CLUBS"})"}));
  auto e = std::static_pointer_cast<arrow::DictionaryArray>(batch->column(0));
  EXPECT_EQ(e->indices()->ToString(),
            arrow::json::ArrayFromJSONString(arrow::int32(), "[3, 2, 0, 1]")
                .ValueOrDie()
                ->ToString());
  EXPECT_EQ(e->dictionary()->ToString(),
            arrow::json::ArrayFromJSONString(
                arrow::utf8(), R"(["UNKNOWN", "CLUBS", "HEARTS", "SPADES"])")
                .ValueOrDie()
                ->ToString());
  // Without a default the unknown symbol fails its record only.
  const std::string no_default =
      Record(R"({"name": "e", "type": {"type": "enum", "name": "Suit",
      "symbols": ["CLUBS", "HEARTS", "SPADES"]}})");
  ASSERT_OK(Read(w, no_default, {R"({"e": "HEARTS"})"}).status());
  Status st;
  AvroDecodeError err = ReadFails(w, no_default, R"({"e": "DIAMONDS"})", &st);
  EXPECT_EQ(err.kind, AvroErrorKind::kUnknownEnumSymbol);
  EXPECT_EQ(err.field, "e");
  EXPECT_EQ(st.code(), StatusCode::kTypeError);
}

TEST(AvroResolutionTest, WriterUnionIntoAReaderType) {
  const std::string w = Record(R"({"name": "v", "type": ["null", "int", "string"]})");
  // Reader long: int branches promote, others fail their record.
  const std::string r = Record(R"({"name": "v", "type": "long"})");
  ASSERT_OK_AND_ASSIGN(auto batch,
                       Read(w, r, {R"({"v": {"int": 4}})", R"({"v": {"int": -1}})"}));
  ExpectColumn(*batch, "v", "[4, -1]");
  Status st;
  AvroDecodeError e = ReadFails(w, r, R"({"v": {"string": "x"}})", &st);
  EXPECT_EQ(e.kind, AvroErrorKind::kUnionBranchMismatch);
  EXPECT_EQ(e.field, "v");
  EXPECT_EQ(e.offset, 0);
  EXPECT_EQ(st.code(), StatusCode::kTypeError);
  EXPECT_EQ(ReadFails(w, r, R"({"v": null})").kind, AvroErrorKind::kUnionBranchMismatch);
  // When no branch can be read the plan is refused.
  EXPECT_STATUS(CompileError(R"(["null", "string"])", R"("int")"), StatusCode::kInvalid,
                "cannot be read as the reader's int");
}

TEST(AvroResolutionTest, AWriterTypeIntoAReaderUnion) {
  const std::string w =
      Record(R"({"name": "a", "type": "int"}, {"name": "b", "type": "string"},
                                  {"name": "c", "type": "int"}, {"name": "d", "type": "null"})");
  // a: the first branch int promotes to; b: nullable string; c: a dense union whose exact
  // int branch wins over the earlier long (as Java's resolver picks); d: null into it.
  const std::string r = Record(R"({"name": "a", "type": ["null", "double"]},
                                  {"name": "b", "type": ["null", "string"]},
                                  {"name": "c", "type": ["null", "long", "int"]},
                                  {"name": "d", "type": ["null", "long", "int"]})");
  ASSERT_OK_AND_ASSIGN(auto batch,
                       Read(w, r, {R"({"a": 3, "b": "x", "c": 5, "d": null})"}));
  ExpectColumn(*batch, "a", "[3.0]");
  ExpectColumn(*batch, "b", R"(["x"])");
  ExpectColumn(*batch, "c", "[[2, 5]]");
  ExpectColumn(*batch, "d", "[[0, null]]");
  EXPECT_STATUS(CompileError(R"("string")", R"(["null", "int"])"), StatusCode::kInvalid,
                "the writer's string cannot be read as the reader's union [null, int]");
}

TEST(AvroResolutionTest, UnionIntoUnion) {
  const std::string w = Record(R"({"name": "u", "type": ["string", "null", "int"]})");
  const std::string r = Record(R"({"name": "u", "type": ["null", "long", "string"]})");
  ASSERT_OK_AND_ASSIGN(auto batch, Read(w, r,
                                        {R"({"u": {"string": "s"}})", R"({"u": null})",
                                         R"({"u": {"int": 9}})"}));
  ExpectColumn(*batch, "u", R"([[2, "s"], [0, null], [1, 9]])");
  // Into a nullable type.
  ASSERT_OK_AND_ASSIGN(auto nullable, Read(R"(["null", "int"])", R"(["long", "null"])",
                                           {R"({"int": 1})", "null"}));
  ExpectColumn(*nullable, "value", "[1, null]");
}

TEST(AvroResolutionTest, NullableRecordsAndNullsBelowThem) {
  const std::string w =
      Record(R"({"name": "p", "type": ["null", {"type": "record", "name": "P",
      "fields": [{"name": "x", "type": "int"},
                 {"name": "tags", "type": {"type": "array", "items": "string"}},
                 {"name": "u", "type": ["int", "string"]}]}]})");
  ASSERT_OK_AND_ASSIGN(
      auto batch,
      Read(w, w,
           {R"({"p": null})",
            R"({"p": {"P": {"x": 1, "tags": ["a"], "u": {"string": "s"}}}})"}));
  ExpectColumn(*batch, "p", R"([null, {"x": 1, "tags": ["a"], "u": [1, "s"]}])");
}

TEST(AvroResolutionTest, DecimalsMustAgreeOnScale) {
  auto dec = [](int p, int s) {
    return R"({"type": "bytes", "logicalType": "decimal", "precision": )" +
           std::to_string(p) + R"(, "scale": )" + std::to_string(s) + "}";
  };
  ASSERT_OK(CompileError(dec(5, 2), dec(5, 2)));
  ASSERT_OK(CompileError(dec(5, 2), dec(9, 2)));  // a wider reader holds every value
  EXPECT_STATUS(
      CompileError(dec(5, 2), dec(5, 3)), StatusCode::kInvalid,
      "the scales must be equal and the reader's precision at least the writer's");
  EXPECT_STATUS(CompileError(dec(9, 2), dec(5, 2)), StatusCode::kInvalid, "");
  // Plain bytes may be read as a decimal, and a decimal as plain bytes.
  ASSERT_OK(CompileError(R"("bytes")", dec(5, 2)));
  ASSERT_OK(CompileError(dec(5, 2), R"("bytes")"));
}

TEST(AvroResolutionTest, RecursiveWriterTypesAreRefused) {
  const std::string list = R"({"type": "record", "name": "LongList", "fields": [
    {"name": "value", "type": "long"}, {"name": "next", "type": ["null", "LongList"]}]})";
  EXPECT_STATUS(CompileError(list, R"({"type": "record", "name": "LongList", "fields": [
                                      {"name": "value", "type": "long"}]})"),
                StatusCode::kInvalid,
                "field 'next': the recursive type 'LongList' is not supported");
}

TEST(AvroResolutionTest, PlansAreFlat) {
  ASSERT_OK_AND_ASSIGN(AvroSchema w, AvroSchema::Parse(Record(R"(
      {"name": "a", "type": "int"}, {"name": "gone", "type": "double"},
      {"name": "gone2", "type": "float"}, {"name": "b", "type": "string"})")));
  ASSERT_OK_AND_ASSIGN(AvroSchema r, AvroSchema::Parse(Record(R"(
      {"name": "b", "type": "string"}, {"name": "a", "type": "long"},
      {"name": "c", "type": "int", "default": 1})")));
  ASSERT_OK_AND_ASSIGN(auto plan, AvroPlan::Compile(w, r));
  EXPECT_EQ(plan->ToString(),
            "program 0:\n"
            "  record col=0 a=0 b=0\n"
            "  int_to_long col=2 a=0 b=0 'a'\n"
            "  skip a=12 b=0 'gone'\n"
            "  string col=1 a=0 b=0 'b'\n"
            "  default col=1 a=0 b=1 'c'\n"
            "program 1:\n"
            "  int col=3 a=0 b=0 'c'\n");
}

}  // namespace
}  // namespace kelt
