// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/schema.h"

#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>
#include <gtest/gtest.h>

#include <string>

#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

// The contract's example (CONTRACT §1), exactly as RDP writes it.
constexpr std::string_view kRdpSchema =
    R"({"fields":[{"name":"id","data_type":"Int64"},{"name":"name","data_type":"Utf8"}]})";

Schema MustParse(std::string_view json, SchemaDialect dialect = SchemaDialect::kStrict) {
  auto r = ParseSchemaJson(json, dialect);
  EXPECT_OK(r) << json;
  return r.ok() ? *r : Schema();
}

Status ParseFails(std::string_view json, SchemaDialect dialect = SchemaDialect::kStrict) {
  auto r = ParseSchemaJson(json, dialect);
  EXPECT_FALSE(r.ok()) << json;
  return r.status();
}

TEST(SchemaJson, RdpExampleRoundTripsByteExact) {
  Schema s = MustParse(kRdpSchema);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s.fields[0], Field("id", TypeId::kInt64));
  EXPECT_EQ(s.fields[1], Field("name", TypeId::kUtf8));
  EXPECT_EQ(SchemaToJson(s), kRdpSchema);
}

TEST(SchemaJson, AllTypesRoundTrip) {
  const std::string json =
      R"({"fields":[{"name":"a","data_type":"Int64"},{"name":"b","data_type":"Float64"},)"
      R"({"name":"c","data_type":"Bool"},{"name":"d","data_type":"Utf8"},)"
      R"({"name":"e","data_type":"Timestamp"},{"name":"f","data_type":"Date"},)"
      R"({"name":"g","data_type":"Binary"}]})";
  Schema s = MustParse(json);
  ASSERT_EQ(s.size(), 7u);
  EXPECT_EQ(s.fields[4].type, TypeId::kTimestamp);
  EXPECT_EQ(s.fields[5].type, TypeId::kDate);
  EXPECT_EQ(s.fields[6].type, TypeId::kBinary);
  EXPECT_EQ(SchemaToJson(s), json);
  EXPECT_EQ(MustParse(SchemaToJson(s)), s);
}

TEST(SchemaJson, EmptySchema) {
  Schema s = MustParse(R"({"fields":[]})");
  EXPECT_EQ(s.size(), 0u);
  EXPECT_EQ(SchemaToJson(s), R"({"fields":[]})");
}

TEST(SchemaJson, TypeNames) {
  EXPECT_EQ(TypeName(TypeId::kInt64), "Int64");
  EXPECT_EQ(TypeName(TypeId::kFloat64), "Float64");
  EXPECT_EQ(TypeName(TypeId::kBool), "Bool");
  EXPECT_EQ(TypeName(TypeId::kUtf8), "Utf8");
  EXPECT_EQ(TypeName(TypeId::kTimestamp), "Timestamp");
  EXPECT_EQ(TypeName(TypeId::kDate), "Date");
  EXPECT_EQ(TypeName(TypeId::kBinary), "Binary");
  // Strict names are case-sensitive.
  EXPECT_EQ(ParseTypeName("Int64", false), TypeId::kInt64);
  EXPECT_FALSE(ParseTypeName("int64", false).has_value());
  EXPECT_FALSE(ParseTypeName("INT64", false).has_value());
  EXPECT_FALSE(ParseTypeName("string", false).has_value());
  EXPECT_FALSE(ParseTypeName("", false).has_value());
}

TEST(SchemaJson, LenientAliasesAreCaseInsensitive) {
  const std::pair<std::string_view, TypeId> cases[] = {
      {"int64", TypeId::kInt64},
      {"I64", TypeId::kInt64},
      {"Int64", TypeId::kInt64},
      {"float64", TypeId::kFloat64},
      {"F64", TypeId::kFloat64},
      {"Double", TypeId::kFloat64},
      {"bool", TypeId::kBool},
      {"BOOLEAN", TypeId::kBool},
      {"utf8", TypeId::kUtf8},
      {"String", TypeId::kUtf8},
      {"str", TypeId::kUtf8},
      {"TeXt", TypeId::kUtf8},
      {"timestamp", TypeId::kTimestamp},
      {"DateTime", TypeId::kTimestamp},
      {"date", TypeId::kDate},
      {"Binary", TypeId::kBinary},
      {"bytes", TypeId::kBinary},
  };
  for (const auto& [name, id] : cases) {
    EXPECT_EQ(ParseTypeName(name, true), id) << name;
  }
  EXPECT_FALSE(ParseTypeName("int32", true).has_value());
  EXPECT_FALSE(ParseTypeName("float", true).has_value());
  EXPECT_FALSE(ParseTypeName("int 64", true).has_value());
}

TEST(SchemaJson, LenientDialectTakesBareListAndAliases) {
  Schema s = MustParse(
      R"([{"name":"id","data_type":"int64"},{"name":"x","data_type":"double"}])",
      SchemaDialect::kLenient);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s.fields[0].type, TypeId::kInt64);
  EXPECT_EQ(s.fields[1].type, TypeId::kFloat64);
  // Serialization always uses the canonical names and the object form.
  EXPECT_EQ(
      SchemaToJson(s),
      R"({"fields":[{"name":"id","data_type":"Int64"},{"name":"x","data_type":"Float64"}]})");
  // The object form works in the lenient dialect too.
  EXPECT_EQ(MustParse(R"({"fields":[{"name":"id","data_type":"I64"}]})",
                      SchemaDialect::kLenient)
                .fields[0]
                .type,
            TypeId::kInt64);
}

TEST(SchemaJson, StrictDialectRejectsLenientForms) {
  Status st = ParseFails(R"([{"name":"id","data_type":"Int64"}])");
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_EQ(
      st.message(),
      R"(expected an object like {"fields":[…]}, got [{"name":"id","data_type":"Int64"}])");
  st = ParseFails(R"({"fields":[{"name":"id","data_type":"int64"}]})");
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_EQ(st.message().rfind("fields[0].data_type: unknown type 'int64'", 0), 0u)
      << st.message();
}

TEST(SchemaJson, ErrorsNameThePlace) {
  struct Case {
    std::string_view json;
    std::string_view message;
  };
  const Case cases[] = {
      {R"({"fields":[{"name":"a","data_type":"Int64"},{"name":"b","data_type":"Int32"}]})",
       "fields[1].data_type: unknown type 'Int32' (expected one of Int64, Float64, Bool, "
       "Utf8, Timestamp, Date, Binary)"},
      {R"({"fields":[{"data_type":"Int64"}]})", "fields[0]: missing key 'name'"},
      {R"({"fields":[{"name":"a"}]})", "fields[0]: missing key 'data_type'"},
      {R"({"fields":[{"name":1,"data_type":"Int64"}]})",
       "fields[0].name: expected a string, got 1"},
      {R"({"fields":[{"name":"a","data_type":7}]})",
       "fields[0].data_type: expected a type name string, got 7"},
      {R"({"fields":["id"]})",
       R"(fields[0]: expected an object like {"name":"id","data_type":"Int64"}, got "id")"},
      {R"({"fields":{}})", "fields: expected an array of fields, got {}"},
      {R"({"columns":[]})", "missing key 'fields'"},
      {R"("Int64")", R"(expected an object like {"fields":[…]}, got "Int64")"},
      {R"({"fields":[{"name":"a","name":"b","data_type":"Int64"}]})",
       "fields[0]: duplicate key 'name'"},
  };
  for (const Case& c : cases) {
    Status st = ParseFails(c.json);
    EXPECT_EQ(st.code(), StatusCode::kInvalid) << c.json;
    EXPECT_EQ(st.message(), c.message) << c.json;
  }
}

TEST(SchemaJson, LenientBareListErrorsUseIndex) {
  Status st = ParseFails(R"([{"name":"a","data_type":"nope"}])", SchemaDialect::kLenient);
  EXPECT_EQ(st.message().rfind("[0].data_type: unknown type 'nope'", 0), 0u)
      << st.message();
  st = ParseFails("5", SchemaDialect::kLenient);
  EXPECT_EQ(st.message(),
            R"(expected an object like {"fields":[…]} or an array of fields, got 5)");
}

TEST(SchemaJson, MalformedJsonIsParseError) {
  for (std::string_view bad :
       {"", "{", R"({"fields":[}")", R"({"fields":[]} x)", "nul",
        "{\"fields\":[{\"name\":\"\xFF\",\"data_type\":\"Int64\"}]}"}) {
    Status st = ParseFails(bad);
    EXPECT_EQ(st.code(), StatusCode::kParseError) << bad;
    EXPECT_EQ(st.message().rfind("invalid JSON: ", 0), 0u) << st.message();
  }
  EXPECT_NE(ParseFails("").message().find("no JSON found"), std::string::npos);
  EXPECT_NE(ParseFails("{\"fields\":[{\"name\":\"\xFF\"}]}").message().find("UTF-8"),
            std::string::npos);
}

TEST(SchemaJson, UnknownFieldKeysAreIgnored) {
  Schema s = MustParse(
      R"({"fields":[{"name":"a","nullable":true,"data_type":"Int64","meta":{"x":[1]}}],"extra":1})");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s.fields[0], Field("a", TypeId::kInt64));
  EXPECT_EQ(SchemaToJson(s), R"({"fields":[{"name":"a","data_type":"Int64"}]})");
}

TEST(SchemaJson, NamesAreEscapedAndUnicodeKept) {
  Field f(std::string("we\"ird\\ \n name \xC3\xA9\0x", 19), TypeId::kUtf8);
  const std::string json = FieldToJson(f);
  EXPECT_EQ(
      json,
      "{\"name\":\"we\\\"ird\\\\ \\n name \xC3\xA9\\u0000x\",\"data_type\":\"Utf8\"}");
  Schema s({f});
  EXPECT_EQ(MustParse(SchemaToJson(s)), s);
}

TEST(SchemaJson, SourceAsDottedStringOrArray) {
  Schema s = MustParse(
      R"({"fields":[{"name":"city","data_type":"Utf8","source":"user.address.city"},)"
      R"({"name":"v","data_type":"Float64","source":["metrics","cpu.load"]},)"
      R"({"name":"w","data_type":"Int64","source":null}]})");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s.fields[0].source, (std::vector<std::string>{"user", "address", "city"}));
  EXPECT_EQ(s.fields[1].source, (std::vector<std::string>{"metrics", "cpu.load"}));
  EXPECT_TRUE(s.fields[2].source.empty());
  // Dotted when no segment has a '.', else the array form; unset → no key.
  EXPECT_EQ(
      SchemaToJson(s),
      R"({"fields":[{"name":"city","data_type":"Utf8","source":"user.address.city"},)"
      R"({"name":"v","data_type":"Float64","source":["metrics","cpu.load"]},)"
      R"({"name":"w","data_type":"Int64"}]})");
  EXPECT_EQ(MustParse(SchemaToJson(s)), s);
  // An array of dot-free segments is written back in the dotted form (same meaning).
  Schema t =
      MustParse(R"({"fields":[{"name":"a","data_type":"Int64","source":["x","y"]}]})");
  EXPECT_EQ(t.fields[0].source, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(FieldToJson(t.fields[0]),
            R"({"name":"a","data_type":"Int64","source":"x.y"})");
  // Empty segments need the array form.
  Field f("e", TypeId::kUtf8);
  f.source = {"", "k"};
  EXPECT_EQ(FieldToJson(f), R"({"name":"e","data_type":"Utf8","source":["","k"]})");
  EXPECT_EQ(MustParse(SchemaToJson(Schema({f}))).fields[0], f);
}

TEST(SchemaJson, SourceErrors) {
  struct Case {
    std::string_view json;
    std::string_view prefix;
  };
  const Case cases[] = {
      {R"({"fields":[{"name":"a","data_type":"Int64","source":"a..b"}]})",
       R"(fields[0].source: empty path segment in "a..b")"},
      {R"({"fields":[{"name":"a","data_type":"Int64","source":""}]})",
       R"(fields[0].source: empty path segment in "")"},
      {R"({"fields":[{"name":"a","data_type":"Int64","source":[]}]})",
       "fields[0].source: expected at least one path segment"},
      {R"({"fields":[{"name":"a","data_type":"Int64","source":["x",1]}]})",
       "fields[0].source[1]: expected a string, got 1"},
      {R"({"fields":[{"name":"a","data_type":"Int64","source":5}]})",
       "fields[0].source: expected a dotted path string or an array of strings, got 5"},
  };
  for (const Case& c : cases) {
    Status st = ParseFails(c.json);
    EXPECT_EQ(st.code(), StatusCode::kInvalid);
    EXPECT_EQ(st.message().rfind(c.prefix, 0), 0u) << st.message();
  }
}

TEST(SchemaJson, TimestampUnit) {
  EXPECT_EQ(TimeUnitName(TimeUnit::kSecond), "s");
  EXPECT_EQ(TimeUnitName(TimeUnit::kMilli), "ms");
  EXPECT_EQ(TimeUnitName(TimeUnit::kMicro), "us");
  EXPECT_EQ(TimeUnitName(TimeUnit::kNano), "ns");
  for (TimeUnit u :
       {TimeUnit::kSecond, TimeUnit::kMilli, TimeUnit::kMicro, TimeUnit::kNano}) {
    EXPECT_EQ(ParseTimeUnit(TimeUnitName(u)), u);
  }
  EXPECT_FALSE(ParseTimeUnit("MS").has_value());
  EXPECT_FALSE(ParseTimeUnit("µs").has_value());

  const std::string json =
      R"({"fields":[{"name":"t","data_type":"Timestamp","source":"meta.ts","timestamp_unit":"ns"}]})";
  Schema s = MustParse(json);
  EXPECT_EQ(s.fields[0].timestamp_unit, TimeUnit::kNano);
  EXPECT_EQ(SchemaToJson(s), json);
  // Key order on output is fixed (name, data_type, source, timestamp_unit).
  Schema t = MustParse(
      R"({"fields":[{"timestamp_unit":"s","source":"x","data_type":"Timestamp","name":"t"}]})");
  EXPECT_EQ(
      SchemaToJson(t),
      R"({"fields":[{"name":"t","data_type":"Timestamp","source":"x","timestamp_unit":"s"}]})");
  EXPECT_FALSE(
      MustParse(
          R"({"fields":[{"name":"t","data_type":"Timestamp","timestamp_unit":null}]})")
          .fields[0]
          .timestamp_unit.has_value());
}

TEST(SchemaJson, TimestampUnitErrors) {
  Status st = ParseFails(
      R"({"fields":[{"name":"t","data_type":"Timestamp","timestamp_unit":"minutes"}]})");
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_EQ(
      st.message(),
      R"(fields[0].timestamp_unit: expected "s", "ms", "us" or "ns", got "minutes")");
  st = ParseFails(
      R"({"fields":[{"name":"n","data_type":"Int64","timestamp_unit":"ms"}]})");
  EXPECT_EQ(
      st.message(),
      "fields[0].timestamp_unit: only Timestamp fields take a timestamp_unit (this field "
      "is Int64)");
}

TEST(SchemaJson, FieldIndex) {
  Schema s = MustParse(kRdpSchema);
  EXPECT_EQ(s.FieldIndex("id"), 0);
  EXPECT_EQ(s.FieldIndex("name"), 1);
  EXPECT_EQ(s.FieldIndex("Name"), -1);
  EXPECT_EQ(s.FieldIndex(""), -1);
}

TEST(SchemaJson, ErrorExcerptsAreShortAndValidUtf8) {
  std::string long_name(200, 'x');
  long_name += "\xC3\xA9";
  Status st = ParseFails(R"({"fields":[")" + long_name + R"("]})");
  // "fields[0]: expected … got " + at most ~60 bytes of excerpt + "…".
  EXPECT_LT(st.message().size(), 160u) << st.message();
  EXPECT_EQ(st.message().substr(st.message().size() - 3), "\xE2\x80\xA6");
  std::string deep = R"({"fields":[)";
  for (int i = 0; i < 50; ++i) deep += R"([{"k":"€€€€€€"},)";
  deep += "1";
  for (int i = 0; i < 50; ++i) deep += "]";
  deep += "]}";
  st = ParseFails(deep);
  EXPECT_LT(st.message().size(), 200u) << st.message();
}

// --- Arrow ---------------------------------------------------------------------------

TEST(SchemaJson, ArrowTypes) {
  EXPECT_TRUE(ToArrowType(TypeId::kInt64)->Equals(*arrow::int64()));
  EXPECT_TRUE(ToArrowType(TypeId::kFloat64)->Equals(*arrow::float64()));
  EXPECT_TRUE(ToArrowType(TypeId::kBool)->Equals(*arrow::boolean()));
  EXPECT_TRUE(ToArrowType(TypeId::kUtf8)->Equals(*arrow::utf8()));
  EXPECT_TRUE(ToArrowType(TypeId::kTimestamp)
                  ->Equals(*arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")));
  EXPECT_TRUE(ToArrowType(TypeId::kDate)->Equals(*arrow::date32()));
  EXPECT_TRUE(ToArrowType(TypeId::kBinary)->Equals(*arrow::binary()));
}

TEST(SchemaJson, ArrowSchemaRoundTrip) {
  Schema s = MustParse(
      R"({"fields":[{"name":"id","data_type":"Int64"},{"name":"x","data_type":"Float64"},)"
      R"({"name":"b","data_type":"Bool"},{"name":"s","data_type":"Utf8","source":"a.b"},)"
      R"({"name":"t","data_type":"Timestamp","source":["m","t.s"],"timestamp_unit":"s"},)"
      R"({"name":"d","data_type":"Date"},{"name":"raw","data_type":"Binary","source":["[x]"]}]})");
  auto arrow_schema = ToArrowSchema(s);
  ASSERT_EQ(arrow_schema->num_fields(), 7);
  for (const auto& f : arrow_schema->fields()) EXPECT_TRUE(f->nullable()) << f->name();
  EXPECT_EQ(arrow_schema->field(0)->metadata(), nullptr);  // nothing set, nothing stored
  auto md = arrow_schema->field(3)->metadata();
  ASSERT_NE(md, nullptr);
  EXPECT_EQ(md->Get("kelt.source").ValueOrDie(), "a.b");
  md = arrow_schema->field(4)->metadata();
  EXPECT_EQ(md->Get("kelt.source").ValueOrDie(), R"(["m","t.s"])");
  EXPECT_EQ(md->Get("kelt.timestamp_unit").ValueOrDie(), "s");
  // A segment starting with '[' is stored in the array form so it reads back unchanged.
  EXPECT_EQ(arrow_schema->field(6)->metadata()->Get("kelt.source").ValueOrDie(),
            R"(["[x]"])");

  ASSERT_OK_AND_ASSIGN(auto back, FromArrowSchema(*arrow_schema));
  EXPECT_EQ(back, s);
}

TEST(SchemaJson, FromArrowSchemaWidensTypes) {
  auto schema = arrow::schema({
      arrow::field("i8", arrow::int8()),
      arrow::field("i32", arrow::int32()),
      arrow::field("u16", arrow::uint16()),
      arrow::field("u64", arrow::uint64()),
      arrow::field("f32", arrow::float32()),
      arrow::field("ls", arrow::large_utf8()),
      arrow::field("sv", arrow::utf8_view()),
      arrow::field("lb", arrow::large_binary()),
      arrow::field("fsb", arrow::fixed_size_binary(4)),
      arrow::field("tns", arrow::timestamp(arrow::TimeUnit::NANO)),
      arrow::field("tms", arrow::timestamp(arrow::TimeUnit::MILLI, "Europe/Paris")),
      arrow::field("d64", arrow::date64()),
      arrow::field("nothing", arrow::null()),
  });
  ASSERT_OK_AND_ASSIGN(auto r, FromArrowSchema(*schema));
  const TypeId want[] = {TypeId::kInt64,     TypeId::kInt64,     TypeId::kInt64,
                         TypeId::kInt64,     TypeId::kFloat64,   TypeId::kUtf8,
                         TypeId::kUtf8,      TypeId::kBinary,    TypeId::kBinary,
                         TypeId::kTimestamp, TypeId::kTimestamp, TypeId::kDate,
                         TypeId::kUtf8};
  ASSERT_EQ(r.size(), std::size(want));
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r.fields[i].type, want[i]) << r.fields[i].name;
    EXPECT_EQ(r.fields[i].name, schema->field(static_cast<int>(i))->name());
  }
}

TEST(SchemaJson, FromArrowSchemaErrorsNameTheColumn) {
  auto r =
      FromArrowSchema(*arrow::schema({arrow::field("ok", arrow::int64()),
                                      arrow::field("tags", arrow::list(arrow::utf8()))}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalid);
  EXPECT_EQ(r.status().message().rfind(
                "column 'tags': unsupported Arrow type list<item: string>", 0),
            0u)
      << r.status().message();

  auto bad_unit =
      arrow::field("t", arrow::timestamp(arrow::TimeUnit::MICRO))
          ->WithMetadata(arrow::key_value_metadata({"kelt.timestamp_unit"}, {"min"}));
  r = FromArrowSchema(*arrow::schema({bad_unit}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.status().message(),
      R"(column 't': metadata kelt.timestamp_unit must be "s", "ms", "us" or "ns", got 'min')");

  auto bad_source =
      arrow::field("s", arrow::utf8())
          ->WithMetadata(arrow::key_value_metadata({"kelt.source"}, {"[1,2]"}));
  r = FromArrowSchema(*arrow::schema({bad_source}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("column 's': metadata kelt.source"),
            std::string::npos);
}

TEST(SchemaJson, FromArrowSchemaReadsHandWrittenMetadata) {
  // What a pyarrow user would write by hand: a plain dotted path.
  auto f = arrow::field("city", arrow::utf8())
               ->WithMetadata(arrow::key_value_metadata({"kelt.source", "other"},
                                                        {"user.address.city", "x"}));
  ASSERT_OK_AND_ASSIGN(auto r, FromArrowSchema(*arrow::schema({f})));
  EXPECT_EQ(r.fields[0].source, (std::vector<std::string>{"user", "address", "city"}));
}

}  // namespace
}  // namespace kelt
