// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/dataset.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
constexpr int64_t kMay1Micros = 1714564800123456;  // 2024-05-01T12:00:00.123456Z

Value MustParseValue(std::string_view json) {
  auto r = ParseValueJson(json);
  EXPECT_OK(r) << json;
  return r.ok() ? *r : Value();
}

Status ValueFails(std::string_view json) {
  auto r = ParseValueJson(json);
  EXPECT_FALSE(r.ok()) << json << " parsed as " << (r.ok() ? ValueToJson(*r) : "");
  return r.status();
}

DataSet MustParse(std::string_view json, SchemaDialect dialect = SchemaDialect::kStrict) {
  auto r = ParseDataSetJson(json, dialect);
  EXPECT_OK(r) << json;
  return r.ok() ? *r : DataSet();
}

Status DataSetFails(std::string_view json,
                    SchemaDialect dialect = SchemaDialect::kStrict) {
  auto r = ParseDataSetJson(json, dialect);
  EXPECT_FALSE(r.ok()) << json;
  return r.status();
}

bool StartsWith(const std::string& s, std::string_view prefix) {
  return s.rfind(prefix, 0) == 0;
}

// --- values --------------------------------------------------------------------------

TEST(DataSetJson, RdpValueForms) {
  EXPECT_EQ(MustParseValue(R"({"Int64":1})"), Value::Int64(1));
  EXPECT_EQ(MustParseValue(R"({"Float64":40.7})"), Value::Float64(40.7));
  EXPECT_EQ(MustParseValue(R"({"Bool":true})"), Value::Bool(true));
  EXPECT_EQ(MustParseValue(R"({"Bool":false})"), Value::Bool(false));
  EXPECT_EQ(MustParseValue(R"({"Utf8":"x"})"), Value::Utf8("x"));
  EXPECT_TRUE(MustParseValue(R"("Null")").is_null());
  EXPECT_TRUE(MustParseValue(R"({"Null":null})").is_null());
  EXPECT_TRUE(MustParseValue("null").is_null());  // kelt addition
  for (std::string_view json : {R"({"Int64":1})", R"({"Float64":40.7})",
                                R"({"Bool":true})", R"({"Utf8":"x"})", R"("Null")"}) {
    EXPECT_EQ(ValueToJson(MustParseValue(json)), json);
  }
  EXPECT_EQ(ValueToJson(MustParseValue(R"({"Null":null})")), R"("Null")");
}

TEST(DataSetJson, IntegerFloatRules) {
  // {"Float64":1} is accepted (and written back with the fraction).
  Value v = MustParseValue(R"({"Float64":1})");
  EXPECT_EQ(v, Value::Float64(1.0));
  EXPECT_EQ(ValueToJson(v), R"({"Float64":1.0})");
  EXPECT_EQ(MustParseValue(R"({"Float64":18446744073709551615})"),
            Value::Float64(18446744073709551615.0));
  EXPECT_EQ(MustParseValue(R"({"Float64":-5})"), Value::Float64(-5.0));
  // {"Int64":1.0} is an error.
  Status st = ValueFails(R"({"Int64":1.0})");
  EXPECT_EQ(st.code(), StatusCode::kTypeError);
  EXPECT_EQ(st.message(), R"(expected an integer that fits i64 in {"Int64":…}, got 1.0)");
  EXPECT_EQ(ValueFails(R"({"Int64":1e3})").code(), StatusCode::kTypeError);
  EXPECT_EQ(ValueFails(R"({"Int64":"1"})").code(), StatusCode::kTypeError);
}

TEST(DataSetJson, Int64Extremes) {
  EXPECT_EQ(MustParseValue(R"({"Int64":9223372036854775807})"),
            Value::Int64(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(MustParseValue(R"({"Int64":-9223372036854775808})"),
            Value::Int64(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(ValueToJson(Value::Int64(std::numeric_limits<int64_t>::min())),
            R"({"Int64":-9223372036854775808})");
  EXPECT_EQ(ValueToJson(Value::Int64(std::numeric_limits<int64_t>::max())),
            R"({"Int64":9223372036854775807})");
  Status st = ValueFails(R"({"Int64":9223372036854775808})");
  EXPECT_EQ(st.code(), StatusCode::kTypeError);
  EXPECT_EQ(
      st.message(),
      R"(expected an integer that fits i64 in {"Int64":…}, got 9223372036854775808)");
  // simdjson cannot represent integers beyond 64 bits at all: a parse error.
  EXPECT_EQ(ValueFails(R"({"Int64":-9223372036854775809})").code(),
            StatusCode::kParseError);
  EXPECT_EQ(ValueFails(R"({"Int64":100000000000000000000})").code(),
            StatusCode::kParseError);
}

TEST(DataSetJson, NonFiniteFloats) {
  const double inf = std::numeric_limits<double>::infinity();
  // NaN, inf and -inf all serialize as {"Float64":null}...
  EXPECT_EQ(ValueToJson(Value::Float64(std::nan(""))), R"({"Float64":null})");
  EXPECT_EQ(ValueToJson(Value::Float64(inf)), R"({"Float64":null})");
  EXPECT_EQ(ValueToJson(Value::Float64(-inf)), R"({"Float64":null})");
  // ...which parses back as NaN.
  Value nan = MustParseValue(R"({"Float64":null})");
  ASSERT_FALSE(nan.is_null());
  EXPECT_EQ(nan.type(), TypeId::kFloat64);
  EXPECT_TRUE(std::isnan(nan.float64()));
  // kelt addition: the spelled-out strings keep infinities apart.
  EXPECT_TRUE(std::isnan(MustParseValue(R"({"Float64":"NaN"})").float64()));
  EXPECT_EQ(MustParseValue(R"({"Float64":"inf"})").float64(), inf);
  EXPECT_EQ(MustParseValue(R"({"Float64":"-inf"})").float64(), -inf);
  EXPECT_EQ(MustParseValue(R"({"Float64":"Infinity"})").float64(), inf);
  // Finite numbers must be written as numbers.
  Status st = ValueFails(R"({"Float64":"1.5"})");
  EXPECT_EQ(st.code(), StatusCode::kTypeError);
  EXPECT_EQ(
      st.message(),
      R"(expected a number, null, "NaN", "inf" or "-inf" in {"Float64":…}, got "1.5")");
  EXPECT_EQ(ValueFails(R"({"Float64":true})").code(), StatusCode::kTypeError);
  EXPECT_EQ(ValueFails(R"j({"Float64":"nan(1)"})j").code(), StatusCode::kTypeError);
  // NaN equals NaN for Value, so datasets compare equal to their round trip.
  EXPECT_EQ(Value::Float64(std::nan("")), Value::Float64(std::nan("")));
}

TEST(DataSetJson, FloatFormatting) {
  EXPECT_EQ(ValueToJson(Value::Float64(0.1)), R"({"Float64":0.1})");
  EXPECT_EQ(ValueToJson(Value::Float64(1e20)), R"({"Float64":1e20})");
  EXPECT_EQ(ValueToJson(Value::Float64(1.5e-7)), R"({"Float64":1.5e-7})");
  EXPECT_EQ(ValueToJson(Value::Float64(-73.9549)), R"({"Float64":-73.9549})");
  EXPECT_EQ(ValueToJson(Value::Float64(-0.0)), R"({"Float64":-0.0})");
  for (double d : {0.1, 1e20, 1.5e-7, 5e-324, 1.7976931348623157e308, -0.0, 1.0 / 3}) {
    Value back = MustParseValue(ValueToJson(Value::Float64(d)));
    EXPECT_EQ(back.float64(), d);
    EXPECT_EQ(std::signbit(back.float64()), std::signbit(d));
  }
}

TEST(DataSetJson, StringsEscapedAndUnicode) {
  static constexpr char kTricky[] =
      "q\"b\\s/\n\r\t\b\f\x01\x1f\0end \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
  const std::string tricky(kTricky, sizeof(kTricky) - 1);
  const std::string json = ValueToJson(Value::Utf8(tricky));
  EXPECT_EQ(json,
            "{\"Utf8\":\"q\\\"b\\\\s/\\n\\r\\t\\b\\f\\u0001\\u001f\\u0000end "
            "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"}");
  EXPECT_EQ(MustParseValue(json), Value::Utf8(tricky));
  // JSON escapes on input, including surrogate pairs.
  EXPECT_EQ(MustParseValue(R"({"Utf8":"\u00e9\ud83d\ude00\u0000"})"),
            Value::Utf8(std::string("\xC3\xA9\xF0\x9F\x98\x80\0", 7)));
  // Bytes that are not UTF-8 (only constructible from C++) are written as U+FFFD.
  EXPECT_EQ(ValueToJson(Value::Utf8("a\xFF"
                                    "b")),
            "{\"Utf8\":\"a" + std::string(kReplacement) + "b\"}");
}

TEST(DataSetJson, TimestampValues) {
  Value ts = Value::Timestamp(kMay1Micros);
  EXPECT_EQ(ValueToJson(ts), R"({"Timestamp":"2024-05-01T12:00:00.123456Z"})");
  EXPECT_EQ(MustParseValue(R"({"Timestamp":"2024-05-01T12:00:00.123456Z"})"), ts);
  EXPECT_EQ(MustParseValue(R"({"Timestamp":"2024-05-01T14:00:00.123456+02:00"})"), ts);
  EXPECT_EQ(MustParseValue(R"({"Timestamp":1714564800123456})"), ts);
  EXPECT_EQ(MustParseValue(R"({"Timestamp":-1})"), Value::Timestamp(-1));
  EXPECT_EQ(ValueToJson(Value::Timestamp(-1)),
            R"({"Timestamp":"1969-12-31T23:59:59.999999Z"})");
  // Outside years 0000–9999 the text form could not be read back: integers instead.
  for (int64_t micros :
       {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
        int64_t{253402300800000000}}) {
    const std::string json = ValueToJson(Value::Timestamp(micros));
    EXPECT_EQ(json, "{\"Timestamp\":" + std::to_string(micros) + "}");
    EXPECT_EQ(MustParseValue(json), Value::Timestamp(micros));
  }
  EXPECT_EQ(ValueToJson(Value::Timestamp(253402300799999999)),
            R"({"Timestamp":"9999-12-31T23:59:59.999999Z"})");
  Status st = ValueFails(R"({"Timestamp":"yesterday"})");
  EXPECT_EQ(st.code(), StatusCode::kTypeError);
  EXPECT_EQ(st.message(),
            "expected an RFC 3339 timestamp or an integer (µs since the epoch) in "
            "{\"Timestamp\":…}, got \"yesterday\"");
  EXPECT_EQ(ValueFails(R"({"Timestamp":1.5})").code(), StatusCode::kTypeError);
  EXPECT_EQ(ValueFails(R"({"Timestamp":"2023-02-29T00:00:00Z"})").code(),
            StatusCode::kTypeError);
}

TEST(DataSetJson, DateValues) {
  EXPECT_EQ(ValueToJson(Value::Date(19844)), R"({"Date":"2024-05-01"})");
  EXPECT_EQ(MustParseValue(R"({"Date":"2024-05-01"})"), Value::Date(19844));
  EXPECT_EQ(MustParseValue(R"({"Date":19844})"), Value::Date(19844));
  EXPECT_EQ(MustParseValue(R"({"Date":"2024-02-29"})"), Value::Date(19782));
  EXPECT_EQ(ValueToJson(Value::Date(-1)), R"({"Date":"1969-12-31"})");
  const int32_t far = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(ValueToJson(Value::Date(far)), "{\"Date\":" + std::to_string(far) + "}");
  EXPECT_EQ(MustParseValue(ValueToJson(Value::Date(far))), Value::Date(far));
  Status st = ValueFails(R"({"Date":"2023-02-29"})");
  EXPECT_EQ(st.code(), StatusCode::kTypeError);
  EXPECT_TRUE(StartsWith(st.message(), R"(expected a "YYYY-MM-DD" date)"))
      << st.message();
  st = ValueFails(R"({"Date":2147483648})");
  EXPECT_EQ(st.message(),
            R"(expected a day count that fits i32 in {"Date":…}, got 2147483648)");
}

TEST(DataSetJson, BinaryValues) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  const std::string json = ValueToJson(Value::Binary(bytes));
  EXPECT_TRUE(StartsWith(json, R"({"Binary":"AAECAwQF)")) << json;
  EXPECT_EQ(MustParseValue(json), Value::Binary(bytes));
  EXPECT_EQ(ValueToJson(Value::Binary("foo")), R"({"Binary":"Zm9v"})");
  EXPECT_EQ(ValueToJson(Value::Binary("")), R"({"Binary":""})");
  Status st = ValueFails(R"({"Binary":"Zm9v!"})");
  EXPECT_EQ(st.code(), StatusCode::kTypeError);
  EXPECT_EQ(st.message(), R"(expected a base64 string in {"Binary":…}, got "Zm9v!")");
  // Binary and Utf8 with the same bytes are different values.
  EXPECT_FALSE(Value::Binary("x") == Value::Utf8("x"));
}

TEST(DataSetJson, ValueShapeErrors) {
  struct Case {
    std::string_view json;
    StatusCode code;
    std::string_view message;
  };
  const Case cases[] = {
      {"5", StatusCode::kInvalid, R"(expected a value object like {"Int64":1}, got 5)"},
      {R"("null")", StatusCode::kInvalid,
       R"(expected a value object like {"Int64":1}, got "null")"},
      {"{}", StatusCode::kInvalid, R"(expected a value object like {"Int64":1}, got {})"},
      {"[1]", StatusCode::kInvalid,
       R"(expected a value object like {"Int64":1}, got [1])"},
      {R"({"Int64":1,"Utf8":"x"})", StatusCode::kInvalid,
       R"(expected a value object like {"Int64":1}, got {"Int64":1,"Utf8":"x"})"},
      {R"({"Int32":1})", StatusCode::kInvalid,
       "unknown value type 'Int32' (expected Null, Int64, Float64, Bool, Utf8, "
       "Timestamp, "
       "Date or Binary)"},
      {R"({"int64":1})", StatusCode::kInvalid, "unknown value type 'int64'"},
      {R"({"Null":1})", StatusCode::kTypeError, R"(expected null in {"Null":…}, got 1)"},
      {R"({"Bool":"true"})", StatusCode::kTypeError,
       R"(expected true or false in {"Bool":…}, got "true")"},
      {R"({"Utf8":1})", StatusCode::kTypeError,
       R"(expected a string in {"Utf8":…}, got 1)"},
  };
  for (const Case& c : cases) {
    Status st = ValueFails(c.json);
    EXPECT_EQ(st.code(), c.code) << c.json;
    EXPECT_TRUE(StartsWith(st.message(), c.message)) << c.json << " → " << st.message();
  }
}

TEST(DataSetJson, ParseValueTakesExactlyOneValue) {
  EXPECT_EQ(ValueFails(R"({"Int64":1} {"Int64":2})").code(), StatusCode::kParseError);
  EXPECT_EQ(ValueFails(R"("Null" x)").code(), StatusCode::kParseError);
  EXPECT_EQ(ValueFails("").code(), StatusCode::kParseError);
  // Surrounding whitespace is fine.
  EXPECT_EQ(MustParseValue(" \n{\"Int64\":3}\t "), Value::Int64(3));
}

TEST(DataSetJson, ValueEquality) {
  EXPECT_EQ(Value(), Value::Null());
  EXPECT_FALSE(Value::Null() == Value::Int64(0));
  EXPECT_FALSE(Value::Int64(0) == Value::Null());
  EXPECT_FALSE(Value::Int64(1) == Value::Float64(1.0));
  EXPECT_FALSE(Value::Int64(1) == Value::Timestamp(1));
  EXPECT_FALSE(Value::Date(1) == Value::Timestamp(1));
  EXPECT_EQ(Value::Bool(true), Value::Bool(true));
  EXPECT_FALSE(Value::Bool(true) == Value::Bool(false));
  EXPECT_EQ(Value::Float64(0.0), Value::Float64(-0.0));
}

// --- datasets ------------------------------------------------------------------------

// The contract's example, extended to all RDP types.
constexpr std::string_view kRdpDataSet =
    R"({"schema":{"fields":[{"name":"id","data_type":"Int64"},{"name":"name","data_type":"Utf8"},)"
    R"({"name":"score","data_type":"Float64"},{"name":"ok","data_type":"Bool"}]},)"
    R"("rows":[[{"Int64":1},{"Utf8":"Ada"},"Null",{"Bool":true}],)"
    R"([{"Int64":2},"Null",{"Float64":40.7},{"Bool":false}]]})";

TEST(DataSetJson, RdpExampleRoundTripsByteExact) {
  DataSet ds = MustParse(kRdpDataSet);
  ASSERT_EQ(ds.row_count(), 2u);
  ASSERT_EQ(ds.schema.size(), 4u);
  EXPECT_EQ(ds.rows[0][0], Value::Int64(1));
  EXPECT_EQ(ds.rows[0][1], Value::Utf8("Ada"));
  EXPECT_TRUE(ds.rows[0][2].is_null());
  EXPECT_EQ(ds.rows[1][2], Value::Float64(40.7));
  EXPECT_EQ(DataSetToJson(ds), kRdpDataSet);
  EXPECT_EQ(MustParse(DataSetToJson(ds)), ds);
  // The contract's literal example (three fields, one row).
  constexpr std::string_view kContract =
      R"({"schema":{"fields":[{"name":"id","data_type":"Int64"},{"name":"name","data_type":"Utf8"},)"
      R"({"name":"x","data_type":"Float64"}]},"rows":[[{"Int64":1},{"Utf8":"Ada"},"Null"]]})";
  EXPECT_EQ(DataSetToJson(MustParse(kContract)), kContract);
}

TEST(DataSetJson, KeltTypesRoundTrip) {
  DataSet ds;
  ds.schema = Schema({Field("t", TypeId::kTimestamp), Field("d", TypeId::kDate),
                      Field("b", TypeId::kBinary)});
  ds.rows.push_back({Value::Timestamp(kMay1Micros), Value::Date(19844),
                     Value::Binary(std::string("\x00\xFF", 2))});
  ds.rows.push_back({Value::Null(), Value::Null(), Value::Null()});
  const std::string json = DataSetToJson(ds);
  EXPECT_EQ(
      json,
      R"({"schema":{"fields":[{"name":"t","data_type":"Timestamp"},{"name":"d","data_type":"Date"},)"
      R"({"name":"b","data_type":"Binary"}]},"rows":[[{"Timestamp":"2024-05-01T12:00:00.123456Z"},)"
      R"({"Date":"2024-05-01"},{"Binary":"AP8="}],["Null","Null","Null"]]})");
  EXPECT_EQ(MustParse(json), ds);
}

TEST(DataSetJson, EmptyDataSetKeepsSchema) {
  constexpr std::string_view json =
      R"({"schema":{"fields":[{"name":"id","data_type":"Int64"}]},"rows":[]})";
  DataSet ds = MustParse(json);
  EXPECT_EQ(ds.row_count(), 0u);
  EXPECT_EQ(ds.schema.size(), 1u);
  EXPECT_EQ(DataSetToJson(ds), json);
  EXPECT_EQ(DataSetToJson(DataSet()), R"({"schema":{"fields":[]},"rows":[]})");
  // Rows with no fields are still rows.
  DataSet no_fields = MustParse(R"({"schema":{"fields":[]},"rows":[[],[]]})");
  EXPECT_EQ(no_fields.row_count(), 2u);
}

TEST(DataSetJson, Int64CellConvertsInFloat64Column) {
  DataSet ds = MustParse(
      R"({"schema":{"fields":[{"name":"x","data_type":"Float64"}]},"rows":[[{"Int64":2}],[{"Float64":2.5}]]})");
  EXPECT_EQ(ds.rows[0][0], Value::Float64(2.0));
  EXPECT_EQ(
      DataSetToJson(ds),
      R"({"schema":{"fields":[{"name":"x","data_type":"Float64"}]},"rows":[[{"Float64":2.0}],[{"Float64":2.5}]]})");
}

TEST(DataSetJson, CellTypeMismatchIsTypeError) {
  Status st = DataSetFails(
      R"({"schema":{"fields":[{"name":"id","data_type":"Int64"},{"name":"name","data_type":"Utf8"}]},)"
      R"("rows":[[{"Int64":1},{"Utf8":"a"}],[{"Int64":2},{"Int64":3}]]})");
  EXPECT_EQ(st.code(), StatusCode::kTypeError);
  EXPECT_EQ(st.message(), "rows[1][1]: column 'name' is Utf8 but the cell is Int64");
  // A Float64 cell does not go into an Int64 column.
  st = DataSetFails(
      R"({"schema":{"fields":[{"name":"id","data_type":"Int64"}]},"rows":[[{"Float64":1.0}]]})");
  EXPECT_EQ(st.message(), "rows[0][0]: column 'id' is Int64 but the cell is Float64");
}

TEST(DataSetJson, ErrorsNameThePlace) {
  struct Case {
    std::string_view json;
    StatusCode code;
    std::string_view message;
  };
  const std::string_view s1 =
      R"({"schema":{"fields":[{"name":"a","data_type":"Int64"},)"
      R"({"name":"b","data_type":"Utf8"},{"name":"c","data_type":"Bool"}]},)";
  const std::string p(s1);
  const std::string c1 =
      p + R"("rows":[[{"Int64":1},"Null","Null"],[{"Int64":1},"Null",7]]})";
  const std::string c2 =
      p + R"("rows":[[{"Int64":1},"Null","Null"],[{"Int64":1},"Null"]]})";
  const std::string c3 = p + R"("rows":[[{"Int64":1},"Null","Null"],{"a":1}]})";
  const std::string c4 = p + R"("rows":{}})";
  const std::string c5 = p + R"("rows":[["Null","Null",{"Bool":1}]]})";
  const std::string c6 = p + R"("rows":[["Null","Null",{"Boolean":true}]]})";
  const Case cases[] = {
      {c1, StatusCode::kInvalid,
       R"(rows[1][2]: expected a value object like {"Int64":1}, got 7)"},
      {c2, StatusCode::kInvalid, "rows[1]: expected 3 cells (one per field), got 2"},
      {c3, StatusCode::kInvalid, R"(rows[1]: expected an array of cells, got {"a":1})"},
      {c4, StatusCode::kInvalid, "rows: expected an array of rows, got {}"},
      {c5, StatusCode::kTypeError,
       R"(rows[0][2]: expected true or false in {"Bool":…}, got 1)"},
      {c6, StatusCode::kInvalid, "rows[0][2]: unknown value type 'Boolean'"},
      {R"({"rows":[]})", StatusCode::kInvalid, "missing key 'schema'"},
      {R"({"schema":{"fields":[]}})", StatusCode::kInvalid, "missing key 'rows'"},
      {R"([])", StatusCode::kInvalid,
       R"(expected an object like {"schema":{…},"rows":[…]}, got [])"},
      {R"({"schema":{"fields":[{"name":"a","data_type":"Int32"}]},"rows":[]})",
       StatusCode::kInvalid, "schema.fields[0].data_type: unknown type 'Int32'"},
      {R"({"schema":[],"rows":[]})", StatusCode::kInvalid,
       R"(schema: expected an object like {"fields":[…]}, got [])"},
      {R"({"schema":{},"rows":[]})", StatusCode::kInvalid,
       "schema: missing key 'fields'"},
      {R"({"schema":{"fields":[]},"rows":[})", StatusCode::kParseError, "invalid JSON: "},
  };
  for (const Case& c : cases) {
    Status st = DataSetFails(c.json);
    EXPECT_EQ(st.code(), c.code) << c.json << " → " << st.message();
    EXPECT_TRUE(StartsWith(st.message(), c.message)) << c.json << " → " << st.message();
  }
}

TEST(DataSetJson, LenientDialect) {
  constexpr std::string_view json =
      R"({"schema":[{"name":"id","data_type":"int64"},{"name":"s","data_type":"string"}],)"
      R"("rows":[[{"Int64":1},{"Utf8":"x"}]]})";
  DataSet ds = MustParse(json, SchemaDialect::kLenient);
  EXPECT_EQ(ds.schema.fields[1].type, TypeId::kUtf8);
  EXPECT_EQ(ds.rows[0][1], Value::Utf8("x"));
  EXPECT_EQ(
      DataSetToJson(ds),
      R"({"schema":{"fields":[{"name":"id","data_type":"Int64"},{"name":"s","data_type":"Utf8"}]},)"
      R"("rows":[[{"Int64":1},{"Utf8":"x"}]]})");
  EXPECT_EQ(DataSetFails(json).code(), StatusCode::kInvalid);  // strict
}

TEST(DataSetJson, UnknownTopLevelKeysIgnored) {
  DataSet ds = MustParse(
      R"({"meta":{"x":1},"rows":[[{"Int64":5}]],"schema":{"fields":[{"name":"a","data_type":"Int64"}]}})");
  EXPECT_EQ(ds.rows[0][0], Value::Int64(5));
}

// --- Arrow ---------------------------------------------------------------------------

DataSet AllTypesDataSet() {
  DataSet ds;
  ds.schema = Schema({Field("i", TypeId::kInt64), Field("f", TypeId::kFloat64),
                      Field("b", TypeId::kBool), Field("s", TypeId::kUtf8),
                      Field("t", TypeId::kTimestamp), Field("d", TypeId::kDate),
                      Field("raw", TypeId::kBinary)});
  const double inf = std::numeric_limits<double>::infinity();
  ds.rows.push_back({Value::Int64(std::numeric_limits<int64_t>::min()),
                     Value::Float64(1.5), Value::Bool(true), Value::Utf8("h\xC3\xA9llo"),
                     Value::Timestamp(kMay1Micros), Value::Date(19844),
                     Value::Binary(std::string("\0\1\2", 3))});
  ds.rows.push_back({Value::Null(), Value::Null(), Value::Null(), Value::Null(),
                     Value::Null(), Value::Null(), Value::Null()});
  ds.rows.push_back({Value::Int64(std::numeric_limits<int64_t>::max()),
                     Value::Float64(inf), Value::Bool(false), Value::Utf8(""),
                     Value::Timestamp(-1), Value::Date(-1), Value::Binary("")});
  ds.rows.push_back({Value::Int64(0), Value::Float64(std::nan("")), Value::Null(),
                     Value::Utf8(std::string("a\0b", 3)), Value::Null(), Value::Date(0),
                     Value::Null()});
  return ds;
}

TEST(DataSetJson, ArrowRoundTripAllTypes) {
  DataSet ds = AllTypesDataSet();
  ASSERT_OK_AND_ASSIGN(auto batch, DataSetToRecordBatch(ds));
  ASSERT_OK(batch->ValidateFull());
  EXPECT_EQ(batch->num_rows(), 4);
  EXPECT_TRUE(batch->schema()->Equals(*ToArrowSchema(ds.schema)));
  EXPECT_EQ(batch->column(0)->null_count(), 1);
  EXPECT_EQ(batch->column(2)->null_count(), 2);
  const auto& ints = static_cast<const arrow::Int64Array&>(*batch->column(0));
  EXPECT_EQ(ints.Value(2), std::numeric_limits<int64_t>::max());
  const auto& strs = static_cast<const arrow::StringArray&>(*batch->column(3));
  EXPECT_EQ(strs.GetView(0), "h\xC3\xA9llo");
  EXPECT_EQ(strs.GetView(3), std::string_view("a\0b", 3));
  const auto& ts = static_cast<const arrow::TimestampArray&>(*batch->column(4));
  EXPECT_EQ(ts.Value(0), kMay1Micros);

  ASSERT_OK_AND_ASSIGN(auto back, RecordBatchToDataSet(*batch));
  EXPECT_EQ(back, ds);  // inf survives Arrow (only JSON folds it into NaN)
}

TEST(DataSetJson, ArrowEmptyDataSet) {
  DataSet ds;
  ds.schema = Schema({Field("id", TypeId::kInt64), Field("name", TypeId::kUtf8)});
  ASSERT_OK_AND_ASSIGN(auto batch, DataSetToRecordBatch(ds));
  EXPECT_EQ(batch->num_rows(), 0);
  EXPECT_EQ(batch->num_columns(), 2);
  ASSERT_OK_AND_ASSIGN(auto back, RecordBatchToDataSet(*batch));
  EXPECT_EQ(back, ds);
}

TEST(DataSetJson, ArrowSlicedBatch) {
  DataSet ds = AllTypesDataSet();
  ASSERT_OK_AND_ASSIGN(auto batch, DataSetToRecordBatch(ds));
  for (int64_t offset = 0; offset < 4; ++offset) {
    for (int64_t len = 0; offset + len <= 4; ++len) {
      auto sliced = batch->Slice(offset, len);
      ASSERT_OK_AND_ASSIGN(auto back, RecordBatchToDataSet(*sliced));
      DataSet want;
      want.schema = ds.schema;
      want.rows.assign(ds.rows.begin() + offset, ds.rows.begin() + offset + len);
      EXPECT_EQ(back, want) << "offset " << offset << " len " << len;
    }
  }
}

TEST(DataSetJson, ArrowSlicedArraysWithNullsAcrossByteBoundary) {
  // 20 values, every third null; a slice starting at bit 5 exercises the bitmap offset.
  arrow::Int32Builder b;
  for (int i = 0; i < 20; ++i) {
    ASSERT_OK(i % 3 == 0 ? b.AppendNull() : b.Append(i * 10));
  }
  std::shared_ptr<arrow::Array> arr;
  ASSERT_OK(b.Finish(&arr));
  auto batch = arrow::RecordBatch::Make(
                   arrow::schema({arrow::field("n", arrow::int32())}), 20, {arr})
                   ->Slice(5, 11);
  ASSERT_OK_AND_ASSIGN(auto ds, RecordBatchToDataSet(*batch));
  ASSERT_EQ(ds.row_count(), 11u);
  EXPECT_EQ(ds.schema.fields[0].type, TypeId::kInt64);
  for (int i = 5; i < 16; ++i) {
    const Value& v = ds.rows[static_cast<size_t>(i - 5)][0];
    if (i % 3 == 0) {
      EXPECT_TRUE(v.is_null()) << i;
    } else {
      EXPECT_EQ(v, Value::Int64(int64_t{i} * 10)) << i;
    }
  }
}

template <typename Builder, typename T>
std::shared_ptr<arrow::Array> MakeArray(Builder* b,
                                        const std::vector<std::optional<T>>& values) {
  for (const auto& v : values) {
    arrow::Status st = v ? b->Append(*v) : b->AppendNull();
    EXPECT_OK(st);
  }
  std::shared_ptr<arrow::Array> out;
  EXPECT_OK(b->Finish(&out));
  return out;
}

TEST(DataSetJson, ArrowWiderTypesConvert) {
  arrow::Int8Builder i8;
  arrow::UInt64Builder u64;
  arrow::FloatBuilder f32;
  arrow::LargeStringBuilder ls;
  arrow::LargeBinaryBuilder lb;
  arrow::TimestampBuilder tns(arrow::timestamp(arrow::TimeUnit::NANO),
                              arrow::default_memory_pool());
  arrow::TimestampBuilder ts(arrow::timestamp(arrow::TimeUnit::SECOND, "Asia/Tokyo"),
                             arrow::default_memory_pool());
  arrow::TimestampBuilder tms(arrow::timestamp(arrow::TimeUnit::MILLI),
                              arrow::default_memory_pool());
  arrow::Date64Builder d64;
  arrow::FixedSizeBinaryBuilder fsb(arrow::fixed_size_binary(2));
  arrow::NullBuilder nb;
  ASSERT_OK(nb.AppendNulls(2));
  std::shared_ptr<arrow::Array> nulls;
  ASSERT_OK(nb.Finish(&nulls));
  ASSERT_OK(fsb.Append("ab"));
  ASSERT_OK(fsb.AppendNull());
  std::shared_ptr<arrow::Array> fixed;
  ASSERT_OK(fsb.Finish(&fixed));

  auto schema = arrow::schema({
      arrow::field("i8", arrow::int8()),
      arrow::field("u64", arrow::uint64()),
      arrow::field("f32", arrow::float32()),
      arrow::field("ls", arrow::large_utf8()),
      arrow::field("lb", arrow::large_binary()),
      arrow::field("tns", arrow::timestamp(arrow::TimeUnit::NANO)),
      arrow::field("ts", arrow::timestamp(arrow::TimeUnit::SECOND, "Asia/Tokyo")),
      arrow::field("tms", arrow::timestamp(arrow::TimeUnit::MILLI)),
      arrow::field("d64", arrow::date64()),
      arrow::field("fsb", arrow::fixed_size_binary(2)),
      arrow::field("nothing", arrow::null()),
  });
  auto batch = arrow::RecordBatch::Make(
      schema, 2,
      {MakeArray<arrow::Int8Builder, int8_t>(&i8, {-128, std::nullopt}),
       MakeArray<arrow::UInt64Builder, uint64_t>(&u64, {9223372036854775807ULL, 0}),
       MakeArray<arrow::FloatBuilder, float>(&f32, {1.5f, std::nullopt}),
       MakeArray<arrow::LargeStringBuilder, std::string>(&ls, {"big", std::nullopt}),
       MakeArray<arrow::LargeBinaryBuilder, std::string>(&lb, {std::nullopt, "\x01"}),
       // -1 ns is 1969-12-31T23:59:59.999999999Z: floor to -1 µs, not 0.
       MakeArray<arrow::TimestampBuilder, int64_t>(
           &tns, {int64_t{1714564800123456789}, int64_t{-1}}),
       MakeArray<arrow::TimestampBuilder, int64_t>(&ts,
                                                   {int64_t{1714564800}, std::nullopt}),
       MakeArray<arrow::TimestampBuilder, int64_t>(&tms, {int64_t{-1}, int64_t{1000}}),
       MakeArray<arrow::Date64Builder, int64_t>(
           &d64, {int64_t{1714521600000}, int64_t{-86400000}}),
       fixed, nulls});
  arrow::Status valid = batch->ValidateFull();
  ASSERT_OK(valid);
  ASSERT_OK_AND_ASSIGN(auto ds, RecordBatchToDataSet(*batch));
  const auto& r = ds.rows;
  EXPECT_EQ(r[0][0], Value::Int64(-128));
  EXPECT_TRUE(r[1][0].is_null());
  EXPECT_EQ(r[0][1], Value::Int64(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(r[0][2], Value::Float64(1.5));
  EXPECT_EQ(r[0][3], Value::Utf8("big"));
  EXPECT_EQ(r[1][4], Value::Binary("\x01"));
  EXPECT_EQ(r[0][5], Value::Timestamp(kMay1Micros));
  EXPECT_EQ(r[1][5], Value::Timestamp(-1));
  EXPECT_EQ(r[0][6], Value::Timestamp(kMay1Micros - 123456));
  EXPECT_EQ(r[0][7], Value::Timestamp(-1000));
  EXPECT_EQ(r[1][7], Value::Timestamp(1000000));
  EXPECT_EQ(r[0][8], Value::Date(19844));
  EXPECT_EQ(r[1][8], Value::Date(-1));
  EXPECT_EQ(r[0][9], Value::Binary("ab"));
  EXPECT_TRUE(r[1][9].is_null());
  EXPECT_TRUE(r[0][10].is_null() && r[1][10].is_null());
  EXPECT_EQ(ds.schema.fields[10].type, TypeId::kUtf8);
}

TEST(DataSetJson, ArrowOutOfRangeValuesAreErrors) {
  arrow::UInt64Builder u64;
  auto too_big =
      MakeArray<arrow::UInt64Builder, uint64_t>(&u64, {1, 9223372036854775808ULL});
  auto batch = arrow::RecordBatch::Make(
      arrow::schema({arrow::field("u", arrow::uint64())}), 2, {too_big});
  auto ds = RecordBatchToDataSet(*batch);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalid);
  EXPECT_EQ(ds.status().message(),
            "column 'u' row 1: uint64 value 9223372036854775808 does not fit Int64");

  arrow::TimestampBuilder ts(arrow::timestamp(arrow::TimeUnit::SECOND),
                             arrow::default_memory_pool());
  auto secs = MakeArray<arrow::TimestampBuilder, int64_t>(
      &ts, {std::numeric_limits<int64_t>::max()});
  batch = arrow::RecordBatch::Make(
      arrow::schema({arrow::field("t", arrow::timestamp(arrow::TimeUnit::SECOND))}), 1,
      {secs});
  ds = RecordBatchToDataSet(*batch);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().message(),
            "column 't' row 0: timestamp does not fit µs since the epoch");

  batch = arrow::RecordBatch::Make(
      arrow::schema({arrow::field("l", arrow::list(arrow::int64()))}), 0,
      {arrow::MakeArrayOfNull(arrow::list(arrow::int64()), 0).ValueOrDie()});
  ds = RecordBatchToDataSet(*batch);
  ASSERT_FALSE(ds.ok());
  EXPECT_TRUE(StartsWith(ds.status().message(), "column 'l': unsupported Arrow type"));
}

TEST(DataSetJson, ArrowFromDataSetChecksCells) {
  DataSet ds;
  ds.schema = Schema({Field("a", TypeId::kInt64), Field("x", TypeId::kFloat64)});
  ds.rows.push_back({Value::Int64(1), Value::Int64(2)});  // Int64 into Float64: converted
  ASSERT_OK_AND_ASSIGN(auto batch, DataSetToRecordBatch(ds));
  EXPECT_EQ(static_cast<const arrow::DoubleArray&>(*batch->column(1)).Value(0), 2.0);

  ds.rows.push_back({Value::Int64(1)});
  auto bad = DataSetToRecordBatch(ds);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalid);
  EXPECT_EQ(bad.status().message(), "rows[1]: expected 2 cells (one per field), got 1");

  ds.rows.back() = {Value::Utf8("1"), Value::Null()};
  bad = DataSetToRecordBatch(ds);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kTypeError);
  EXPECT_EQ(bad.status().message(),
            "rows[1][0]: column 'a' is Int64 but the cell is Utf8");

  DataSet text;
  text.schema = Schema({Field("s", TypeId::kUtf8)});
  text.rows.push_back({Value::Utf8("ok")});
  text.rows.push_back({Value::Utf8("bad \xFF")});
  bad = DataSetToRecordBatch(text);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kTypeError);
  EXPECT_EQ(bad.status().message(),
            "rows[1][0]: column 's': Utf8 value is not valid UTF-8");
}

TEST(DataSetJson, ArrowKeepsFieldMetadata) {
  DataSet ds;
  Field t("t", TypeId::kTimestamp);
  t.source = {"meta", "ts"};
  t.timestamp_unit = TimeUnit::kMilli;
  ds.schema = Schema({t});
  ds.rows.push_back({Value::Timestamp(5)});
  ASSERT_OK_AND_ASSIGN(auto batch, DataSetToRecordBatch(ds));
  ASSERT_OK_AND_ASSIGN(auto back, RecordBatchToDataSet(*batch));
  EXPECT_EQ(back, ds);
}

TEST(DataSetJson, JsonToArrowToJson) {
  DataSet ds = MustParse(kRdpDataSet);
  ASSERT_OK_AND_ASSIGN(auto batch, DataSetToRecordBatch(ds));
  ASSERT_OK_AND_ASSIGN(auto back, RecordBatchToDataSet(*batch));
  EXPECT_EQ(DataSetToJson(back), kRdpDataSet);
}

}  // namespace
}  // namespace kelt
