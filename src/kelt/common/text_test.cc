// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/common/text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace kelt::text {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// --- ParseInt64 ----------------------------------------------------------------------

std::string IntError(std::string_view s) {
  int64_t v = 0;
  std::string_view err;
  EXPECT_FALSE(ParseInt64(s, &v, &err)) << "'" << s << "' parsed as " << v;
  return std::string(err);
}

int64_t IntValue(std::string_view s) {
  int64_t v = -12345;
  std::string_view err;
  EXPECT_TRUE(ParseInt64(s, &v, &err)) << "'" << s << "': " << err;
  return v;
}

TEST(TextTest, ParseInt64Accepts) {
  EXPECT_EQ(IntValue("0"), 0);
  EXPECT_EQ(IntValue("42"), 42);
  EXPECT_EQ(IntValue("+5"), 5);
  EXPECT_EQ(IntValue("-5"), -5);
  EXPECT_EQ(IntValue("-0"), 0);
  EXPECT_EQ(IntValue("007"), 7);
  EXPECT_EQ(IntValue("9223372036854775807"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(IntValue("-9223372036854775808"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(IntValue("00000000000000000000009"), 9);  // leading zeros do not overflow
}

TEST(TextTest, ParseInt64RustErrorTexts) {
  EXPECT_EQ(IntError(""), "cannot parse integer from empty string");
  EXPECT_EQ(IntError("-"), "invalid digit found in string");
  EXPECT_EQ(IntError("+"), "invalid digit found in string");
  EXPECT_EQ(IntError(" 1"), "invalid digit found in string");
  EXPECT_EQ(IntError("1 "), "invalid digit found in string");
  EXPECT_EQ(IntError("1.0"), "invalid digit found in string");
  EXPECT_EQ(IntError("1e3"), "invalid digit found in string");
  EXPECT_EQ(IntError("0x10"), "invalid digit found in string");
  EXPECT_EQ(IntError("--1"), "invalid digit found in string");
  EXPECT_EQ(IntError("+-1"), "invalid digit found in string");
  EXPECT_EQ(IntError("1_000"), "invalid digit found in string");
  EXPECT_EQ(IntError("9223372036854775808"), "number too large to fit in target type");
  EXPECT_EQ(IntError("+9223372036854775808"), "number too large to fit in target type");
  EXPECT_EQ(IntError("-9223372036854775809"), "number too small to fit in target type");
  EXPECT_EQ(IntError("99999999999999999999999"),
            "number too large to fit in target type");
}

TEST(TextTest, ParseInt64ReportsWhicheverErrorRustMeetsFirst) {
  // Rust checks digit by digit: overflow is reported as soon as it happens...
  EXPECT_EQ(IntError("99999999999999999999x"), "number too large to fit in target type");
  EXPECT_EQ(IntError("9223372036854775808x"), "number too large to fit in target type");
  EXPECT_EQ(IntError("-9223372036854775809x"), "number too small to fit in target type");
  // ...and an invalid digit before the overflow point wins.
  EXPECT_EQ(IntError("1x99999999999999999999"), "invalid digit found in string");
  EXPECT_EQ(IntError("922337203685477580x"), "invalid digit found in string");
}

// --- ParseFloat64 --------------------------------------------------------------------

double FloatValue(std::string_view s) {
  double v = -12345;
  std::string_view err;
  EXPECT_TRUE(ParseFloat64(s, &v, &err)) << "'" << s << "': " << err;
  return v;
}

std::string FloatError(std::string_view s) {
  double v = 0;
  std::string_view err;
  EXPECT_FALSE(ParseFloat64(s, &v, &err)) << "'" << s << "' parsed as " << v;
  return std::string(err);
}

TEST(TextTest, ParseFloat64Decimal) {
  EXPECT_EQ(FloatValue("1.5"), 1.5);
  EXPECT_EQ(FloatValue("-2"), -2.0);
  EXPECT_EQ(FloatValue("+3"), 3.0);
  EXPECT_EQ(FloatValue(".5"), 0.5);
  EXPECT_EQ(FloatValue("1."), 1.0);
  EXPECT_EQ(FloatValue("1.e3"), 1000.0);
  EXPECT_EQ(FloatValue("1e5"), 1e5);
  EXPECT_EQ(FloatValue("1E-2"), 0.01);
  EXPECT_EQ(FloatValue("1e+2"), 100.0);
  EXPECT_EQ(FloatValue("0.1"), 0.1);
  EXPECT_EQ(FloatValue("40.7"), 40.7);
  EXPECT_EQ(FloatValue("-73.9549"), -73.9549);
  EXPECT_EQ(FloatValue("3.14159265358979323846264338327950288"), 3.141592653589793);
  EXPECT_EQ(FloatValue("1.7976931348623157e308"), std::numeric_limits<double>::max());
  EXPECT_EQ(FloatValue("5e-324"), std::numeric_limits<double>::denorm_min());
  double neg_zero = FloatValue("-0.0");
  EXPECT_EQ(neg_zero, 0.0);
  EXPECT_TRUE(std::signbit(neg_zero));
}

TEST(TextTest, ParseFloat64OutOfRangeRoundsLikeRust) {
  EXPECT_EQ(FloatValue("1e400"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(FloatValue("-1e400"), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(FloatValue("123456789e999"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(FloatValue("0.001e312"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(FloatValue("1e-400"), 0.0);
  EXPECT_TRUE(std::signbit(FloatValue("-1e-400")));
  EXPECT_EQ(FloatValue("1000000e-340"), 0.0);
  EXPECT_EQ(FloatValue("0e999999"), 0.0);
  EXPECT_EQ(FloatValue("1e99999999999999999999"),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(FloatValue("1e-99999999999999999999"), 0.0);
}

TEST(TextTest, ParseFloat64InfAndNan) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(FloatValue("inf"), inf);
  EXPECT_EQ(FloatValue("+inf"), inf);
  EXPECT_EQ(FloatValue("-inf"), -inf);
  EXPECT_EQ(FloatValue("INF"), inf);
  EXPECT_EQ(FloatValue("Infinity"), inf);
  EXPECT_EQ(FloatValue("-infinity"), -inf);
  EXPECT_TRUE(std::isnan(FloatValue("NaN")));
  EXPECT_TRUE(std::isnan(FloatValue("nan")));
  EXPECT_TRUE(std::isnan(FloatValue("-nan")));
}

TEST(TextTest, ParseFloat64RustErrorTexts) {
  EXPECT_EQ(FloatError(""), "cannot parse float from empty string");
  for (std::string_view bad :
       {".",       "+",         "-",     "e5", "1e",   "1e+",   "1e-", "nan(1)",
        "infinit", "infinityy", "1.5x",  " 1", "1 ",   "0x1p3", "1,5", "1..2",
        "--1",     "+-1",       "1e5.0", "in", "NaNa", "1_0"}) {
    EXPECT_EQ(FloatError(bad), "invalid float literal") << bad;
  }
}

// --- ParseBool -----------------------------------------------------------------------

TEST(TextTest, ParseBoolIsExact) {
  bool v = false;
  std::string_view err;
  ASSERT_TRUE(ParseBool("true", &v, &err));
  EXPECT_TRUE(v);
  ASSERT_TRUE(ParseBool("false", &v, &err));
  EXPECT_FALSE(v);
  for (std::string_view bad : {"True", "FALSE", "1", "0", "", " true", "yes"}) {
    EXPECT_FALSE(ParseBool(bad, &v, &err)) << bad;
    EXPECT_EQ(err, "provided string was not `true` or `false`");
  }
}

// --- doubles out ---------------------------------------------------------------------

std::string JsonDouble(double v) {
  std::string out;
  AppendJsonDouble(&out, v);
  return out;
}

TEST(TextTest, FormatDoubleLikeSerdeJson) {
  struct Case {
    double v;
    std::string_view text;
  };
  const Case cases[] = {
      {1.0, "1.0"},
      {0.1, "0.1"},
      {1e20, "1e20"},
      {1.5e-7, "1.5e-7"},
      {123.456, "123.456"},
      {1e15, "1000000000000000.0"},
      {1e16, "1e16"},
      {0.0, "0.0"},
      {-0.0, "-0.0"},
      {-1.5, "-1.5"},
      {100.0, "100.0"},
      {40.7, "40.7"},
      {-73.9549, "-73.9549"},
      {1e-5, "0.00001"},
      {1e-6, "1e-6"},
      {0.3, "0.3"},
      {1.2345678901234567e17, "1.2345678901234566e17"},
      {123456789012345.6, "123456789012345.6"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e308"},
      {-2.5e-300, "-2.5e-300"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FormatDouble(c.v), c.text);
    EXPECT_EQ(JsonDouble(c.v), c.text);
  }
}

TEST(TextTest, NonFiniteDoubles) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(FormatDouble(std::nan("")), "NaN");
  EXPECT_EQ(FormatDouble(inf), "inf");
  EXPECT_EQ(FormatDouble(-inf), "-inf");
  EXPECT_EQ(JsonDouble(std::nan("")), "null");
  EXPECT_EQ(JsonDouble(inf), "null");
  EXPECT_EQ(JsonDouble(-inf), "null");
}

TEST(TextTest, FormatDoubleRoundTripsThroughParse) {
  for (double v :
       {0.1, 1.0 / 3, 2.0 / 3, 1e-310, 6.02214076e23, -123.456e-20, 9007199254740993.0}) {
    double back = 0;
    std::string_view err;
    ASSERT_TRUE(ParseFloat64(FormatDouble(v), &back, &err));
    EXPECT_EQ(back, v) << FormatDouble(v);
  }
}

TEST(TextTest, AppendInt64Extremes) {
  std::string out;
  AppendInt64(&out, std::numeric_limits<int64_t>::min());
  out.push_back(' ');
  AppendInt64(&out, std::numeric_limits<int64_t>::max());
  out.push_back(' ');
  AppendInt64(&out, 0);
  EXPECT_EQ(out, "-9223372036854775808 9223372036854775807 0");
}

// --- JSON strings --------------------------------------------------------------------

std::string JsonString(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out;
}

TEST(TextTest, JsonStringEscapes) {
  EXPECT_EQ(JsonString(""), "\"\"");
  EXPECT_EQ(JsonString("plain"), "\"plain\"");
  EXPECT_EQ(JsonString("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonString("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"");
  EXPECT_EQ(JsonString(std::string_view("a\0b", 3)), "\"a\\u0000b\"");
  EXPECT_EQ(JsonString("\x01\x1f"), "\"\\u0001\\u001f\"");
  EXPECT_EQ(JsonString("\x7f/"),
            "\"\x7f/\"");  // DEL and '/' stay as they are (serde_json)
  EXPECT_EQ(JsonString("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"");
}

TEST(TextTest, JsonStringReplacesInvalidUtf8) {
  const std::string r(kReplacement);
  EXPECT_EQ(JsonString("a\xFF"
                       "b"),
            "\"a" + r + "b\"");
  // A truncated sequence is one maximal subpart: one replacement.
  EXPECT_EQ(JsonString("\xE2\x82"), "\"" + r + "\"");
  EXPECT_EQ(JsonString("\xF0\x9F\x98"
                       "x"),
            "\"" + r + "x\"");
  // Overlong encodings, surrogates and code points above U+10FFFF: one per byte.
  EXPECT_EQ(JsonString("\xC0\xAF"), "\"" + r + r + "\"");
  EXPECT_EQ(JsonString("\xE0\x80\xAF"), "\"" + r + r + r + "\"");
  EXPECT_EQ(JsonString("\xED\xA0\x80"), "\"" + r + r + r + "\"");
  EXPECT_EQ(JsonString("\xF4\x90\x80\x80"), "\"" + r + r + r + r + "\"");
  // Escaping still applies around replacements.
  EXPECT_EQ(JsonString("\x80\n"), "\"" + r + "\\n\"");
}

// --- UTF-8 ---------------------------------------------------------------------------

TEST(TextTest, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("hello, world and more than eight bytes"));
  EXPECT_TRUE(IsValidUtf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));
  EXPECT_TRUE(IsValidUtf8("\xED\x9F\xBF"));      // U+D7FF, just below the surrogates
  EXPECT_TRUE(IsValidUtf8("\xEE\x80\x80"));      // U+E000, just above
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF
  EXPECT_TRUE(IsValidUtf8(std::string_view("\0", 1)));
  EXPECT_FALSE(IsValidUtf8("\xC0\x80"));          // overlong NUL
  EXPECT_FALSE(IsValidUtf8("\xC1\xBF"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xE0\x9F\xBF"));      // overlong 3-byte
  EXPECT_FALSE(IsValidUtf8("\xF0\x8F\xBF\xBF"));  // overlong 4-byte
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // U+D800
  EXPECT_FALSE(IsValidUtf8("\xED\xBF\xBF"));      // U+DFFF
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // U+110000
  EXPECT_FALSE(IsValidUtf8("\xF5\x80\x80\x80"));
  EXPECT_FALSE(IsValidUtf8("\xFF"));
  EXPECT_FALSE(IsValidUtf8("\x80"));
  EXPECT_FALSE(IsValidUtf8("\xC3"));  // truncated at the end
  EXPECT_EQ(FirstInvalidUtf8("abc"), std::string_view::npos);
  EXPECT_EQ(FirstInvalidUtf8("abcdefghij\xFFk"), 10u);  // past the 8-byte fast path
  EXPECT_EQ(FirstInvalidUtf8("\xC3\xA9\xC3"), 2u);
}

TEST(TextTest, Utf8LossyMatchesRust) {
  const std::string r(kReplacement);
  // Rust's documented example: b"Hello \xF0\x90\x80World" → "Hello �World".
  EXPECT_EQ(Utf8Lossy("Hello \xF0\x90\x80World"), "Hello " + r + "World");
  EXPECT_EQ(Utf8Lossy("ok"), "ok");
  EXPECT_EQ(Utf8Lossy("\xC3\xA9"), "\xC3\xA9");
  EXPECT_EQ(Utf8Lossy("a\xC0\xAF"
                      "b"),
            "a" + r + r + "b");
  EXPECT_EQ(Utf8Lossy("\xFF\xFE"), r + r);
  std::string out = "prefix:";
  AppendUtf8Lossy(&out, "\xE2\x82");
  EXPECT_EQ(out, "prefix:" + r);
}

// --- base64 --------------------------------------------------------------------------

TEST(TextTest, Base64Rfc4648Vectors) {
  const std::pair<std::string_view, std::string_view> vectors[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(Base64Encode(plain), encoded);
    auto decoded = Base64Decode(encoded);
    ASSERT_TRUE(decoded.has_value()) << encoded;
    EXPECT_EQ(*decoded, plain);
  }
}

TEST(TextTest, Base64RoundTripsAllBytes) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  for (size_t len = 0; len <= bytes.size(); len += 37) {
    std::string_view part(bytes.data(), len);
    auto back = Base64Decode(Base64Encode(part));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, part);
  }
  EXPECT_EQ(Base64Encode("\xFF\xFF\xFF"), "////");
  EXPECT_EQ(Base64Encode("\xFB\xEF"), "++8=");
}

TEST(TextTest, Base64Rejects) {
  for (std::string_view bad : {"Zg=", "Zg", "Z", "Zg=a", "Z===", "====", "Zm9v!A==",
                               "Zg==Zg==", "Zm9-", "Zm9_", "Zm 9v", "Zm9v\n"}) {
    EXPECT_FALSE(Base64Decode(bad).has_value()) << bad;
  }
}

// --- time ----------------------------------------------------------------------------

constexpr int64_t kMay1Micros = 1714564800123456;  // 2024-05-01T12:00:00.123456Z

int64_t Ts(std::string_view s) {
  auto v = ParseTimestampMicros(s);
  EXPECT_TRUE(v.has_value()) << s;
  return v.value_or(-1);
}

TEST(TextTest, ParseTimestampForms) {
  EXPECT_EQ(Ts("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(Ts("2024-05-01T12:00:00.123456Z"), kMay1Micros);
  EXPECT_EQ(Ts("2024-05-01t12:00:00.123456z"), kMay1Micros);
  EXPECT_EQ(Ts("2024-05-01 12:00:00.123456Z"), kMay1Micros);
  EXPECT_EQ(Ts("2024-05-01T12:00:00.123456"), kMay1Micros);  // no offset → UTC
  EXPECT_EQ(Ts("2024-05-01T14:00:00.123456+02:00"), kMay1Micros);
  EXPECT_EQ(Ts("2024-05-01T06:30:00.123456-05:30"), kMay1Micros);
  EXPECT_EQ(Ts("2024-05-01T12:00:00.123456789Z"), kMay1Micros);  // ns truncated
  EXPECT_EQ(Ts("2024-05-01T12:00:00.1Z"), kMay1Micros - 23456);
  EXPECT_EQ(Ts("2024-05-01T12:00:00Z"), kMay1Micros - 123456);
  EXPECT_EQ(Ts("2024-05-02T00:30:00+14:00"), Ts("2024-05-01T10:30:00Z"));
  EXPECT_EQ(Ts("2016-12-31T23:59:60Z"),
            Ts("2016-12-31T23:59:59Z"));  // leap second clamped
}

TEST(TextTest, ParseTimestampBeforeEpoch) {
  EXPECT_EQ(Ts("1969-12-31T23:59:59.5Z"), -500000);
  EXPECT_EQ(Ts("1969-12-31T23:59:59.999999Z"), -1);
  EXPECT_EQ(Ts("1900-01-01T00:00:00Z"), int64_t{-2208988800} * 1000000);
  EXPECT_EQ(Ts("0000-01-01T00:00:00Z"), int64_t{-62167219200} * 1000000);
}

TEST(TextTest, ParseTimestampRejects) {
  for (std::string_view bad : {"",
                               "2024-05-01",
                               "2024-05-01T12:00",
                               "2024-05-01T12:00:00.",
                               "2024-05-01T12:00:00.1234567890Z",
                               "2024-05-01T24:00:00Z",
                               "2024-05-01T12:60:00Z",
                               "2024-05-01T12:00:61Z",
                               "2024-13-01T00:00:00Z",
                               "2024-00-01T00:00:00Z",
                               "2024-04-31T00:00:00Z",
                               "2023-02-29T00:00:00Z",
                               "1900-02-29T00:00:00Z",
                               "2024-05-01X12:00:00Z",
                               "2024-05-01T12:00:00+0200",
                               "2024-05-01T12:00:00+24:00",
                               "2024-05-01T12:00:00ZZ",
                               "2024-05-01T12:00:00Z ",
                               "2024-5-01T12:00:00Z",
                               "24-05-01T12:00:00Z",
                               "2024-05-01T12:00:00 UTC",
                               "1714564800"}) {
    EXPECT_FALSE(ParseTimestampMicros(bad).has_value()) << bad;
  }
  EXPECT_TRUE(ParseTimestampMicros("2024-02-29T00:00:00Z").has_value());
  EXPECT_TRUE(ParseTimestampMicros("2000-02-29T00:00:00Z").has_value());
}

TEST(TextTest, FormatTimestamp) {
  EXPECT_EQ(FormatTimestampMicros(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatTimestampMicros(kMay1Micros), "2024-05-01T12:00:00.123456Z");
  EXPECT_EQ(FormatTimestampMicros(-1), "1969-12-31T23:59:59.999999Z");
  EXPECT_EQ(FormatTimestampMicros(-500000), "1969-12-31T23:59:59.500000Z");
  EXPECT_EQ(FormatTimestampMicros(Ts("2024-02-29T23:59:59.000001Z")),
            "2024-02-29T23:59:59.000001Z");
  for (int64_t v : {int64_t{0}, int64_t{-1}, kMay1Micros, int64_t{-62167219200000000},
                    int64_t{253402300799999999}}) {
    EXPECT_EQ(Ts(FormatTimestampMicros(v)), v);
  }
  // The extremes of the range format without undefined behaviour.
  EXPECT_FALSE(FormatTimestampMicros(std::numeric_limits<int64_t>::min()).empty());
  EXPECT_FALSE(FormatTimestampMicros(std::numeric_limits<int64_t>::max()).empty());
}

TEST(TextTest, Dates) {
  EXPECT_EQ(ParseDateDays("1970-01-01"), 0);
  EXPECT_EQ(ParseDateDays("2024-05-01"), 19844);
  EXPECT_EQ(ParseDateDays("1969-12-31"), -1);
  EXPECT_EQ(ParseDateDays("2024-02-29"), 19782);
  EXPECT_FALSE(ParseDateDays("2023-02-29").has_value());
  EXPECT_FALSE(ParseDateDays("2100-02-29").has_value());
  EXPECT_FALSE(ParseDateDays("2024-05-01T00:00:00Z").has_value());
  EXPECT_FALSE(ParseDateDays("2024-5-1").has_value());
  EXPECT_FALSE(ParseDateDays("").has_value());
  EXPECT_EQ(FormatDateDays(19844), "2024-05-01");
  EXPECT_EQ(FormatDateDays(-1), "1969-12-31");
  EXPECT_EQ(FormatDateDays(0), "1970-01-01");
  EXPECT_EQ(DaysFromCivil(2000, 3, 1), 11017);
  EXPECT_EQ(DaysFromCivil(1600, 1, 1), -135140);
  for (int32_t d = -719528; d <= 2932896; d += 997) {
    auto back = ParseDateDays(FormatDateDays(d));
    ASSERT_TRUE(back.has_value()) << FormatDateDays(d);
    EXPECT_EQ(*back, d);
  }
}

}  // namespace
}  // namespace kelt::text

namespace kelt::text {
namespace {

// "YYYY-MM-DDTHH:MM:SS.mmmZ" takes a fast path; it must agree with the general parser.
TEST(TextTest, TimestampMillisShapeFastPathAgreesWithGeneralForm) {
  struct Case {
    const char* fast;     // 24-character shape
    const char* general;  // same instant, a shape the fast path does not take
  } cases[] = {
      {"2024-05-01T12:00:00.123Z", "2024-05-01T12:00:00.123000+00:00"},
      {"1970-01-01T00:00:00.000Z", "1970-01-01 00:00:00Z"},
      {"1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999000Z"},
      {"2024-02-29T23:59:59.001Z", "2024-02-29T23:59:59.001+00:00"},
      {"9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999000Z"},
  };
  for (const Case& c : cases) {
    auto fast = ParseTimestampMicros(c.fast);
    auto general = ParseTimestampMicros(c.general);
    ASSERT_TRUE(fast.has_value()) << c.fast;
    ASSERT_TRUE(general.has_value()) << c.general;
    EXPECT_EQ(*fast, *general) << c.fast;
  }
  EXPECT_EQ(*ParseTimestampMicros("2024-05-01T12:00:00.123Z"), 1714564800123000);
  // Invalid calendar values are rejected on both paths; a leap second is clamped.
  EXPECT_FALSE(ParseTimestampMicros("2023-02-29T00:00:00.000Z").has_value());
  EXPECT_FALSE(ParseTimestampMicros("2024-13-01T00:00:00.000Z").has_value());
  EXPECT_FALSE(ParseTimestampMicros("2024-01-01T24:00:00.000Z").has_value());
  EXPECT_FALSE(ParseTimestampMicros("2024-01-01T00:00:00.0a0Z").has_value());
  EXPECT_FALSE(ParseTimestampMicros("2024-01-0aT00:00:00.000Z").has_value());
  EXPECT_EQ(*ParseTimestampMicros("2016-12-31T23:59:60.000Z"),
            *ParseTimestampMicros("2016-12-31T23:59:59Z"));
}

}  // namespace
}  // namespace kelt::text

namespace kelt::text {
namespace {

TEST(TextTest, FormatDoubleDisplayMatchesRustToString) {
  EXPECT_EQ(FormatDoubleDisplay(1.0), "1");
  EXPECT_EQ(FormatDoubleDisplay(-1.5), "-1.5");
  EXPECT_EQ(FormatDoubleDisplay(40.7), "40.7");
  EXPECT_EQ(FormatDoubleDisplay(-73.9549), "-73.9549");
  EXPECT_EQ(FormatDoubleDisplay(1e20), "100000000000000000000");
  EXPECT_EQ(FormatDoubleDisplay(1.5e-7), "0.00000015");
  EXPECT_EQ(FormatDoubleDisplay(0.1), "0.1");
  EXPECT_EQ(FormatDoubleDisplay(123456.789), "123456.789");
  EXPECT_EQ(FormatDoubleDisplay(0.0), "0");
  EXPECT_EQ(FormatDoubleDisplay(-0.0), "-0");
  EXPECT_EQ(FormatDoubleDisplay(std::nan("")), "NaN");
  EXPECT_EQ(FormatDoubleDisplay(-std::numeric_limits<double>::infinity()), "-inf");
}

}  // namespace
}  // namespace kelt::text
