// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/sink/postgres_copy.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "kelt/sink/all_types_testing.h"
#include "kelt/testing/assertions.h"

namespace kelt::pg {
namespace {

// Reads big-endian fields back out of an encoded tuple.
struct Reader {
  std::string_view s;
  size_t at = 0;
  uint64_t U(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(s.at(at++));
    return v;
  }
  int32_t Len() { return static_cast<int32_t>(U(4)); }
  std::string_view Bytes(size_t n) {
    auto v = s.substr(at, n);
    at += n;
    return v;
  }
};

std::shared_ptr<arrow::RecordBatch> OneColumn(std::shared_ptr<arrow::Array> a,
                                              const std::string& name = "c") {
  return arrow::RecordBatch::Make(arrow::schema({arrow::field(name, a->type())}),
                                  a->length(), {a});
}

template <typename Builder, typename T>
std::shared_ptr<arrow::Array> Build(Builder b,
                                    std::initializer_list<std::optional<T>> values) {
  for (const auto& v : values) {
    if (v) {
      EXPECT_OK(b.Append(*v));
    } else {
      EXPECT_OK(b.AppendNull());
    }
  }
  return b.Finish().ValueOrDie();
}

std::shared_ptr<arrow::Array> Strings(
    std::initializer_list<std::optional<std::string>> v) {
  return Build<arrow::StringBuilder, std::string>(arrow::StringBuilder(), v);
}

BinaryCopyEncoder Encoder(const arrow::RecordBatch& batch,
                          NulPolicy nul = NulPolicy::kReject) {
  std::vector<PgType> types;
  for (const auto& f : batch.schema()->fields())
    types.push_back(*PgTypeOf(*f->type(), ""));
  auto e = BinaryCopyEncoder::Make(batch, types, nul);
  EXPECT_OK(e);
  return std::move(e).ValueOrDie();
}

// The single field of tuple `row`; nullopt for NULL.
std::optional<std::string> Field(const BinaryCopyEncoder& e, int64_t row) {
  std::string out;
  EXPECT_OK(e.AppendRow(row, &out));
  Reader r{out};
  EXPECT_EQ(r.U(2), 1u);
  int32_t n = r.Len();
  if (n < 0) return std::nullopt;
  std::string v(r.Bytes(static_cast<size_t>(n)));
  EXPECT_EQ(r.at, out.size());
  return v;
}

TEST(PostgresCopyTest, TypeMappingFollowsTheContract) {
  EXPECT_EQ(*PgTypeOf(*arrow::int64(), "c"), PgType::kBigInt);
  EXPECT_EQ(*PgTypeOf(*arrow::float64(), "c"), PgType::kDoublePrecision);
  EXPECT_EQ(*PgTypeOf(*arrow::boolean(), "c"), PgType::kBoolean);
  EXPECT_EQ(*PgTypeOf(*arrow::utf8(), "c"), PgType::kText);
  EXPECT_EQ(*PgTypeOf(*arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"), "c"),
            PgType::kTimestampTz);
  EXPECT_EQ(*PgTypeOf(*arrow::timestamp(arrow::TimeUnit::MICRO), "c"),
            PgType::kTimestamp);
  EXPECT_EQ(*PgTypeOf(*arrow::date32(), "c"), PgType::kDate);
  EXPECT_EQ(*PgTypeOf(*arrow::binary(), "c"), PgType::kBytea);
  EXPECT_EQ(PgTypeSql(PgType::kDoublePrecision), "DOUBLE PRECISION");
  EXPECT_EQ(PgTypeSql(PgType::kTimestampTz), "TIMESTAMPTZ");
  auto bad = PgTypeOf(*arrow::list(arrow::duration(arrow::TimeUnit::SECOND)), "tags");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'tags'"), std::string::npos);
}

TEST(PostgresCopyTest, ExistingColumnTypes) {
  EXPECT_TRUE(PgTypeAccepts(PgType::kBigInt, "bigint"));
  EXPECT_FALSE(PgTypeAccepts(PgType::kBigInt, "integer"));
  EXPECT_FALSE(PgTypeAccepts(PgType::kBigInt, "numeric"));  // not int8's binary format
  EXPECT_TRUE(PgTypeAccepts(PgType::kText, "character varying(10)"));
  EXPECT_FALSE(PgTypeAccepts(PgType::kText, "jsonb"));
  EXPECT_TRUE(PgTypeAccepts(PgType::kTimestampTz, "timestamp with time zone"));
  EXPECT_TRUE(PgTypeAccepts(PgType::kTimestampTz, "timestamp(3) with time zone"));
  EXPECT_FALSE(PgTypeAccepts(PgType::kTimestampTz, "timestamp without time zone"));
  EXPECT_TRUE(PgTypeAccepts(PgType::kTimestamp, "timestamp without time zone"));
  EXPECT_FALSE(PgTypeAccepts(PgType::kTimestamp, "timestamp with time zone"));
}

TEST(PostgresCopyTest, TableNamesSplitOnTheFirstDot) {
  EXPECT_EQ(*ParseTableName("landing", "table"), (TableName{"", "landing"}));
  EXPECT_EQ(*ParseTableName("Raw.Events", "table"), (TableName{"Raw", "Events"}));
  EXPECT_EQ(*ParseTableName("a.b.c", "table"), (TableName{"a", "b.c"}));
  EXPECT_EQ(*ParseTableName("we\"ird.t\"x", "table"), (TableName{"we\"ird", "t\"x"}));
  EXPECT_FALSE(ParseTableName("", "table").ok());
  EXPECT_FALSE(ParseTableName(".t", "table").ok());
  EXPECT_FALSE(ParseTableName("s.", "table").ok());
  EXPECT_FALSE(ParseTableName(std::string("a\0b", 3), "table").ok());
  EXPECT_FALSE(ParseTableName("\xff", "table").ok());
}

TEST(PostgresCopyTest, IdentifiersOver63BytesAreRejected) {
  std::string name63(63, 'x');
  EXPECT_OK(CheckIdentifier(name63, "table"));
  Status st = CheckIdentifier(name63 + "y", "table");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_NE(st.message().find("64 bytes"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("63"), std::string::npos);
  // Bytes, not characters: 32 two-byte characters are 64 bytes.
  std::string wide;
  for (int i = 0; i < 32; ++i) wide += "\xC3\xA9";
  EXPECT_FALSE(CheckIdentifier(wide, "column").ok());
  EXPECT_FALSE(ParseTableName(name63 + "y.t", "table").ok());
}

TEST(PostgresCopyTest, DerivedNamesStayWithin63Bytes) {
  EXPECT_EQ(DerivedName("landing", "_key"), "landing_key");
  std::string long_name(60, 'a');
  std::string a = DerivedName(long_name, "_kafka_offset_key");
  std::string b = DerivedName(long_name + "b", "_kafka_offset_key");
  EXPECT_LE(a.size(), 63u);
  EXPECT_TRUE(a.ends_with("_kafka_offset_key"));
  EXPECT_NE(a, b);  // the hash keeps long names apart
  std::string wide;
  for (int i = 0; i < 31; ++i) wide += "\xC3\xA9";
  EXPECT_OK(CheckIdentifier(DerivedName(wide, "_kafka_offset_key"), "index"));
}

TEST(PostgresCopyTest, ConnInfoKeepsWhereAndDropsNothingSecretIntoErrors) {
  ASSERT_OK_AND_ASSIGN(
      auto info,
      ParseConnInfo("host=db.example port=6543 dbname=lake user=u password=s3cr3t"));
  EXPECT_EQ(info.host, "db.example");
  EXPECT_EQ(info.port, "6543");
  EXPECT_EQ(info.dbname, "lake");
  EXPECT_EQ(info.password, "s3cr3t");
  ASSERT_OK_AND_ASSIGN(auto uri, ParseConnInfo("postgresql://u:pw%21@h:1234/d"));
  EXPECT_EQ(uri.host, "h");
  EXPECT_EQ(uri.password, "pw!");

  for (std::string bad :
       {"password=hunter2 bogus", "password=hunter2 nokey=1",
        "postgresql://u:hunter2@h:5432/d?zzz=1", "postgresql://u:hunter2@[::1/d",
        "postgresql://u:hun%zzter2@h/d", "password='hunter2 x' x"}) {
    auto r = ParseConnInfo(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalid);
    EXPECT_EQ(r.status().message().find("hunter2"), std::string::npos)
        << r.status().message();
    EXPECT_EQ(r.status().message().find("hun%zzter2"), std::string::npos);
    EXPECT_NE(r.status().message().find("invalid PostgreSQL connection string"),
              std::string::npos);
  }
}

TEST(PostgresCopyTest, Redact) {
  EXPECT_EQ(Redact("a pw b pw", "pw"), "a *** b ***");
  EXPECT_EQ(Redact("nothing", ""), "nothing");
}

TEST(PostgresCopyTest, HeaderAndTrailer) {
  std::string out;
  BinaryCopyEncoder::AppendHeader(&out);
  ASSERT_EQ(out.size(), 19u);
  EXPECT_EQ(out.substr(0, 11), std::string("PGCOPY\n\xff\r\n\0", 11));
  EXPECT_EQ(out.substr(11), std::string(8, '\0'));
  out.clear();
  BinaryCopyEncoder::AppendTrailer(&out);
  EXPECT_EQ(out, "\xff\xff");
}

TEST(PostgresCopyTest, TextNeedsNoEscapingInBinaryCopy) {
  std::string tricky =
      "tab\there\nnew \\ back \"q\" 'a' \x01\x1f \xE2\x82\xAC \xF0\x9F\x98\x80";
  auto batch = OneColumn(Strings({tricky, std::nullopt, std::string()}));
  auto e = Encoder(*batch);
  EXPECT_EQ(Field(e, 0), tricky);
  EXPECT_EQ(Field(e, 1), std::nullopt);
  EXPECT_EQ(Field(e, 2), std::string());  // empty is not NULL
}

TEST(PostgresCopyTest, NulBytesAreRejectedOrReplaced) {
  auto batch = OneColumn(Strings({std::string("a\0b", 3)}), "note");
  std::string out = "keep";
  Status st = Encoder(*batch).AppendRow(0, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kTypeError);
  EXPECT_NE(st.message().find("'note'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("NUL"), std::string::npos);
  EXPECT_EQ(out, "keep");  // nothing half-written
  EXPECT_EQ(Field(Encoder(*batch, NulPolicy::kReplace), 0),
            "a\xEF\xBF\xBD"
            "b");
  // Binary keeps NUL bytes: BYTEA can.
  auto bytes = Build<arrow::BinaryBuilder, std::string>(arrow::BinaryBuilder(),
                                                        {std::string("\0\xff", 2)});
  EXPECT_EQ(Field(Encoder(*OneColumn(bytes)), 0), std::string("\0\xff", 2));
}

TEST(PostgresCopyTest, InvalidUtf8IsATypeError) {
  arrow::StringBuilder b;
  ASSERT_OK(b.Append("\xC3\x28"));
  auto batch = OneColumn(b.Finish().ValueOrDie(), "s");
  std::string out;
  Status st = Encoder(*batch).AppendRow(0, &out);
  EXPECT_EQ(st.code(), StatusCode::kTypeError);
  EXPECT_NE(st.message().find("UTF-8"), std::string::npos);
}

TEST(PostgresCopyTest, NumbersAreBigEndianAndBitExact) {
  auto ints = Build<arrow::Int64Builder, int64_t>(
      arrow::Int64Builder(), {int64_t{-2}, std::numeric_limits<int64_t>::max()});
  auto e = Encoder(*OneColumn(ints));
  EXPECT_EQ(Field(e, 0), std::string("\xff\xff\xff\xff\xff\xff\xff\xfe", 8));
  EXPECT_EQ(Field(e, 1), std::string("\x7f\xff\xff\xff\xff\xff\xff\xff", 8));

  double nan = std::numeric_limits<double>::quiet_NaN();
  auto doubles = Build<arrow::DoubleBuilder, double>(
      arrow::DoubleBuilder(), {1.5, -0.0, nan, std::numeric_limits<double>::infinity()});
  auto d = Encoder(*OneColumn(doubles));
  EXPECT_EQ(Field(d, 0), std::string("\x3f\xf8\0\0\0\0\0\0", 8));
  EXPECT_EQ(Field(d, 1), std::string("\x80\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(Field(d, 3), std::string("\x7f\xf0\0\0\0\0\0\0", 8));
  std::string n = *Field(d, 2);
  uint64_t bits = 0;
  for (char c : n) bits = (bits << 8) | static_cast<unsigned char>(c);
  double back;
  std::memcpy(&back, &bits, 8);
  EXPECT_TRUE(std::isnan(back));

  auto bools = Build<arrow::BooleanBuilder, bool>(arrow::BooleanBuilder(), {true, false});
  auto b = Encoder(*OneColumn(bools));
  EXPECT_EQ(Field(b, 0), std::string("\x01", 1));
  EXPECT_EQ(Field(b, 1), std::string("\0", 1));
}

TEST(PostgresCopyTest, TimesCountFrom2000) {
  auto ts_type = arrow::timestamp(arrow::TimeUnit::MICRO, "UTC");
  arrow::TimestampBuilder tb(ts_type, arrow::default_memory_pool());
  ASSERT_OK(tb.Append(946'684'800'000'001));         // 2000-01-01T00:00:00.000001Z
  ASSERT_OK(tb.Append(0));                           // 1970-01-01
  auto batch = OneColumn(tb.Finish().ValueOrDie());  // outlives the encoder
  auto e = Encoder(*batch);
  EXPECT_EQ(Field(e, 0), std::string("\0\0\0\0\0\0\0\x01", 8));
  // -946684800000000 = 0xFFFC_A2FE_C4C8_2000 (two's complement)
  EXPECT_EQ(Field(e, 1), std::string("\xff\xfc\xa2\xfe\xc4\xc8\x20\x00", 8));

  // Nanoseconds floor to µs; seconds scale up.
  arrow::TimestampBuilder nb(arrow::timestamp(arrow::TimeUnit::NANO, "UTC"),
                             arrow::default_memory_pool());
  ASSERT_OK(nb.Append(946'684'800'000'001'999));
  EXPECT_EQ(Field(Encoder(*OneColumn(nb.Finish().ValueOrDie())), 0),
            std::string("\0\0\0\0\0\0\0\x01", 8));

  arrow::Date32Builder db;
  ASSERT_OK(db.Append(10'958));  // 2000-01-02
  EXPECT_EQ(Field(Encoder(*OneColumn(db.Finish().ValueOrDie())), 0),
            std::string("\0\0\0\x01", 4));
}

TEST(PostgresCopyTest, TimestampsOutsidePostgresRangeAreTypeErrors) {
  arrow::TimestampBuilder tb(arrow::timestamp(arrow::TimeUnit::SECOND, "UTC"),
                             arrow::default_memory_pool());
  ASSERT_OK(tb.Append(std::numeric_limits<int64_t>::max() / 10));  // overflows µs
  ASSERT_OK(tb.Append(-300'000'000'000));  // year -7537: before 4713 BC
  auto batch = OneColumn(tb.Finish().ValueOrDie(), "at");
  auto e = Encoder(*batch);
  for (int64_t row : {0, 1}) {
    std::string out;
    Status st = e.AppendRow(row, &out);
    EXPECT_EQ(st.code(), StatusCode::kTypeError) << row;
    EXPECT_NE(st.message().find("'at'"), std::string::npos);
  }
}

TEST(PostgresCopyTest, MakeChecksTheTypes) {
  auto batch = OneColumn(Strings({"x"}));
  EXPECT_FALSE(
      BinaryCopyEncoder::Make(*batch, {PgType::kBigInt}, NulPolicy::kReject).ok());
  EXPECT_FALSE(BinaryCopyEncoder::Make(*batch, {}, NulPolicy::kReject).ok());
}

TEST(PostgresCopyTest, DecodedPayloadTypesMapToColumns) {
  struct Case {
    std::shared_ptr<arrow::DataType> type;
    PgType pg;
    std::string sql;
  };
  std::vector<Case> cases = {
      {arrow::int32(), PgType::kInteger, "INTEGER"},
      {arrow::float32(), PgType::kReal, "REAL"},
      {arrow::decimal128(10, 2), PgType::kNumeric, "NUMERIC(10,2)"},
      {arrow::decimal256(50, 10), PgType::kNumeric, "NUMERIC(50,10)"},
      {arrow::decimal128(5, -2), PgType::kNumeric, "NUMERIC"},
      {arrow::time32(arrow::TimeUnit::MILLI), PgType::kTime, "TIME"},
      {arrow::time64(arrow::TimeUnit::MICRO), PgType::kTime, "TIME"},
      {arrow::timestamp(arrow::TimeUnit::NANO), PgType::kTimestamp, "TIMESTAMP"},
      {arrow::timestamp(arrow::TimeUnit::MILLI, "UTC"), PgType::kTimestampTz,
       "TIMESTAMPTZ"},
      {arrow::fixed_size_binary(4), PgType::kBytea, "BYTEA"},
      {arrow::dictionary(arrow::int32(), arrow::utf8()), PgType::kText, "TEXT"},
      {arrow::null(), PgType::kText, "TEXT"},
      {arrow::struct_({arrow::field("a", arrow::int32())}), PgType::kJsonb, "JSONB"},
      {arrow::list(arrow::int64()), PgType::kJsonb, "JSONB"},
      {arrow::map(arrow::utf8(), arrow::int32()), PgType::kJsonb, "JSONB"},
      {testing::TestUnionType(), PgType::kJsonb, "JSONB"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.type->ToString());
    ASSERT_OK_AND_ASSIGN(PgType pg, PgTypeOf(*c.type, "c"));
    EXPECT_EQ(pg, c.pg);
    EXPECT_EQ(PgColumnSql(*c.type, pg), c.sql);
  }
  EXPECT_TRUE(PgTypeAccepts(PgType::kNumeric, "numeric(10,2)"));
  EXPECT_TRUE(PgTypeAccepts(PgType::kNumeric, "numeric"));
  EXPECT_FALSE(PgTypeAccepts(PgType::kNumeric, "double precision"));
  EXPECT_TRUE(PgTypeAccepts(PgType::kTime, "time without time zone"));
  EXPECT_TRUE(PgTypeAccepts(PgType::kTime, "time(3) without time zone"));
  EXPECT_FALSE(PgTypeAccepts(PgType::kTime, "timestamp without time zone"));
  EXPECT_FALSE(PgTypeAccepts(PgType::kTime, "time with time zone"));
  EXPECT_TRUE(PgTypeAccepts(PgType::kJsonb, "jsonb"));
  EXPECT_FALSE(PgTypeAccepts(PgType::kJsonb, "json"));
  EXPECT_FALSE(PgTypeOf(*arrow::dictionary(arrow::int32(), arrow::int64()), "c").ok());
}

// A NUMERIC in binary: ndigits, weight, sign, dscale, then base-10000 digits.
std::string Numeric(std::initializer_list<uint16_t> head,
                    std::initializer_list<uint16_t> digits) {
  std::string out;
  for (uint16_t v : head) {
    out.push_back(static_cast<char>(v >> 8));
    out.push_back(static_cast<char>(v));
  }
  for (uint16_t v : digits) {
    out.push_back(static_cast<char>(v >> 8));
    out.push_back(static_cast<char>(v));
  }
  return out;
}

TEST(PostgresCopyTest, DecimalsUseTheBinaryNumericFormat) {
  auto batch = testing::AllTypesBatch();
  auto dec = OneColumn(batch->GetColumnByName("dec"));
  auto e = Encoder(*dec);
  // 12345678.90: 1234 5678 . 9000, weight 1, scale 2.
  EXPECT_EQ(Field(e, 0), Numeric({3, 1, 0, 2}, {1234, 5678, 9000}));
  // -0.05: one digit 0500 at weight -1, negative.
  EXPECT_EQ(Field(e, 1), Numeric({1, 0xFFFF, 0x4000, 2}, {500}));
  EXPECT_EQ(Field(e, 2), std::nullopt);
  EXPECT_EQ(Field(e, 3), Numeric({0, 0, 0, 2}, {}));  // zero has no digits
  auto wide = OneColumn(batch->GetColumnByName("dec256"));
  auto w = Encoder(*wide);
  EXPECT_EQ(Field(w, 0),
            Numeric({13, 9, 0, 10}, {1234, 5678, 9012, 3456, 7890, 1234, 5678, 9012, 3456,
                                     7890, 123, 4567, 8900}));
  EXPECT_EQ(Field(w, 1), Numeric({2, 0, 0x4000, 10}, {1, 5000}));
  // A negative scale: 12 at scale -3 is 12000 (1 2000, weight 1, scale 0).
  arrow::Decimal128Builder nb(arrow::decimal128(5, -3));
  ASSERT_OK(nb.Append(arrow::Decimal128(12)));
  ASSERT_OK_AND_ASSIGN(auto neg, nb.Finish());
  EXPECT_EQ(Field(Encoder(*OneColumn(neg)), 0), Numeric({2, 1, 0, 0}, {1, 2000}));
}

TEST(PostgresCopyTest, TimesOfDayAreMicroseconds) {
  auto batch = testing::AllTypesBatch();
  auto t32 = Encoder(*OneColumn(batch->GetColumnByName("t32")));
  // 12:34:56.789 = 45296789000 µs = 0x0000000A_8BE6_2608
  EXPECT_EQ(Field(t32, 1), std::string("\0\0\0\x0a\x8b\xe6\x26\x08", 8));
  auto t64 = Encoder(*OneColumn(batch->GetColumnByName("t64")));
  // 23:59:59.999999 = 86399999999 µs = 0x00000014_1DD7_5FFF
  EXPECT_EQ(Field(t64, 3), std::string("\0\0\0\x14\x1d\xd7\x5f\xff", 8));
  EXPECT_EQ(Field(t64, 2), std::nullopt);
}

TEST(PostgresCopyTest, EnumsFixedBinaryAndNullColumns) {
  auto batch = testing::AllTypesBatch();
  auto e = Encoder(*OneColumn(batch->GetColumnByName("e")));
  EXPECT_EQ(Field(e, 0), "RED");
  EXPECT_EQ(Field(e, 1), "GREEN");
  EXPECT_EQ(Field(e, 2), std::nullopt);
  auto fsb = Encoder(*OneColumn(batch->GetColumnByName("fsb")));
  EXPECT_EQ(Field(fsb, 1), "wxyz");
  EXPECT_EQ(Field(fsb, 2), std::nullopt);
  auto nul = Encoder(*OneColumn(batch->GetColumnByName("nul")));
  EXPECT_EQ(Field(nul, 0), std::nullopt);
}

// The JSON of each jsonb value (after jsonb's version byte 1).
std::vector<std::optional<std::string>> JsonColumn(const std::shared_ptr<arrow::Array>& a,
                                                   NulPolicy nul = NulPolicy::kReject) {
  auto batch = OneColumn(a);
  auto e = Encoder(*batch, nul);
  std::vector<std::optional<std::string>> out;
  for (int64_t row = 0; row < a->length(); ++row) {
    auto v = Field(e, row);
    if (v) {
      EXPECT_EQ(v->substr(0, 1), "\x01");
      v = v->substr(1);
    }
    out.push_back(v);
  }
  return out;
}

TEST(PostgresCopyTest, NestedValuesAreJsonb) {
  using J = std::vector<std::optional<std::string>>;
  auto batch = testing::AllTypesBatch();
  EXPECT_EQ(JsonColumn(batch->GetColumnByName("st")),
            (J{R"({"a":1,"inner":{"x":"p","y":1.5}})", R"({"a":null,"inner":null})",
               std::nullopt, R"({"a":3,"inner":{"x":null,"y":-2}})"}));
  EXPECT_EQ(JsonColumn(batch->GetColumnByName("lst")),
            (J{"[1,2,3]", "[]", std::nullopt, "[null,4]"}));
  EXPECT_EQ(
      JsonColumn(batch->GetColumnByName("lst_st")),
      (J{R"([{"k":"a","v":1}])", "[]", std::nullopt, R"([null,{"k":null,"v":2}])"}));
  EXPECT_EQ(JsonColumn(batch->GetColumnByName("m")),
            (J{R"({"a":1,"b":null})", "{}", std::nullopt, R"({"z":26})"}));
  // A union is its branch's value; a null branch value is SQL NULL.
  EXPECT_EQ(JsonColumn(batch->GetColumnByName("u")),
            (J{"5", R"("five")", std::nullopt, R"("x")"}));
  // Sliced arrays start at their own first row.
  EXPECT_EQ(JsonColumn(batch->GetColumnByName("lst_st")->Slice(3)),
            (J{R"([null,{"k":null,"v":2}])"}));
}

TEST(PostgresCopyTest, ScalarsInsideJsonb) {
  using J = std::vector<std::optional<std::string>>;
  auto batch = testing::AllTypesBatch();
  std::vector<std::string> names = {"f32", "dec",       "dec256s",   "d",     "t32",
                                    "t64", "ts_ms_utc", "ts_ns_utc", "ts_ms", "fsb",
                                    "bin", "s",         "b",         "nul",   "e"};
  arrow::ArrayVector children;
  arrow::FieldVector fields;
  for (const auto& n : names) {
    children.push_back(batch->GetColumnByName(n));
    fields.push_back(batch->schema()->GetFieldByName(n));
  }
  ASSERT_OK_AND_ASSIGN(auto st, arrow::StructArray::Make(children, fields));
  auto json = JsonColumn(st);
  ASSERT_EQ(json.size(), 4u);
  EXPECT_EQ(json[1],
            R"({"f32":-0.25,"dec":-0.05,"dec256s":-0.001,"d":"2022-01-08",)"
            R"("t32":"12:34:56.789000","t64":"12:34:56.789012",)"
            R"("ts_ms_utc":"2023-11-14T22:13:20.123000Z",)"
            R"("ts_ns_utc":"2023-11-14T22:13:20.123456789Z",)"
            R"("ts_ms":"2023-11-14T22:13:20.123000","fsb":"d3h5eg==","bin":"aGk=",)"
            R"("s":"","b":false,"nul":null,"e":"GREEN"})");
  EXPECT_EQ(json[3],
            R"({"f32":1e+30,"dec":0.00,"dec256s":0.000,"d":"1969-12-31",)"
            R"("t32":"23:59:59.999000","t64":"23:59:59.999999",)"
            R"("ts_ms_utc":"1969-12-31T23:59:59.999000Z",)"
            R"("ts_ns_utc":"1969-12-31T23:59:59.999999999Z",)"
            R"("ts_ms":"1969-12-31T23:59:59.999000","fsb":"MDEyMw==","bin":"eCJ5",)"
            R"("s":"q\" b\\ t\t","b":true,"nul":null,"e":"RED"})");
  EXPECT_EQ(json[2], R"({"f32":null,"dec":null,"dec256s":null,"d":null,"t32":null,)"
                     R"("t64":null,"ts_ms_utc":null,"ts_ns_utc":null,"ts_ms":null,)"
                     R"("fsb":null,"bin":null,"s":null,"b":null,"nul":null,"e":null})");
  // NaN and infinities have no JSON number: they are strings.
  arrow::DoubleBuilder db;
  ASSERT_OK(db.AppendValues({std::nan(""), INFINITY, -INFINITY, 0.1}));
  ASSERT_OK_AND_ASSIGN(auto doubles, db.Finish());
  ASSERT_OK_AND_ASSIGN(auto list,
                       arrow::ListArray::FromArrays(
                           *testing::ColumnFromJson(arrow::int32(), "[0, 4]"), *doubles));
  EXPECT_EQ(JsonColumn(list), (J{R"(["NaN","Infinity","-Infinity",0.1])"}));
  // NUL inside JSON text: rejected naming the column, or U+FFFD.
  auto nul_text =
      testing::ColumnFromJson(arrow::list(arrow::utf8()), R"([["a\u0000b"]])");
  auto e = Encoder(*OneColumn(nul_text, "tags"));
  std::string out;
  Status bad = e.AppendRow(0, &out);
  EXPECT_EQ(bad.code(), StatusCode::kTypeError);
  EXPECT_NE(bad.message().find("'tags'"), std::string::npos) << bad.ToString();
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(JsonColumn(nul_text, NulPolicy::kReplace), (J{"[\"a\xEF\xBF\xBD"
                                                          "b\"]"}));
}

}  // namespace
}  // namespace kelt::pg
