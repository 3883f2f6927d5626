// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/common/text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace kelt::text {
namespace {

constexpr std::string_view kIntEmpty = "cannot parse integer from empty string";
constexpr std::string_view kIntInvalid = "invalid digit found in string";
constexpr std::string_view kIntPosOverflow = "number too large to fit in target type";
constexpr std::string_view kIntNegOverflow = "number too small to fit in target type";
constexpr std::string_view kFloatEmpty = "cannot parse float from empty string";
constexpr std::string_view kFloatInvalid = "invalid float literal";
constexpr std::string_view kBoolInvalid = "provided string was not `true` or `false`";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// For a finite decimal literal that from_chars found out of range, return true if it
// overflows (its value is ≥ 1) rather than underflows. `s` matches the grammar
// digits* ['.' digits*] [(e|E) [+-] digits+] with at least one mantissa digit.
bool DecimalMagnitudeIsLarge(std::string_view s) {
  // Exponent of the first significant digit: (integer digits after leading zeros) - 1,
  // or -(fraction zeros before it) - 1, plus the written exponent.
  int64_t pos = 0;  // decimal exponent of the leading significant digit
  bool found = false;
  size_t i = 0;
  int64_t int_digits = 0;
  while (i < s.size() && IsDigit(s[i])) {
    if (found || s[i] != '0') {
      found = true;
      ++int_digits;
    }
    ++i;
  }
  if (found) {
    pos = int_digits - 1;
  } else if (i < s.size() && s[i] == '.') {
    ++i;
    int64_t zeros = 0;
    while (i < s.size() && s[i] == '0') ++i, ++zeros;
    if (i < s.size() && IsDigit(s[i])) found = true;
    pos = -zeros - 1;
  }
  if (!found) return false;  // zero never overflows
  size_t e = s.find_first_of("eE");
  int64_t exp = 0;
  if (e != std::string_view::npos) {
    size_t j = e + 1;
    bool neg = false;
    if (s[j] == '+' || s[j] == '-') neg = s[j++] == '-';
    for (; j < s.size(); ++j) {
      exp = std::min<int64_t>(exp * 10 + (s[j] - '0'), int64_t{1} << 40);  // saturate
    }
    if (neg) exp = -exp;
  }
  return pos + exp >= 0;
}

}  // namespace

bool EqualsIgnoreAsciiCase(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

bool ParseInt64(std::string_view s, int64_t* out, std::string_view* error) {
  if (s.empty()) {
    *error = kIntEmpty;
    return false;
  }
  bool negative = false;
  size_t i = 0;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    i = 1;
    if (s.size() == 1) {
      *error = kIntInvalid;
      return false;
    }
  }
  // Rust's rule, digit by digit: an invalid digit is reported where it occurs, and
  // overflow is reported as soon as it happens (so "99999999999999999999x" is an
  // overflow, "1x99999999999999999999" an invalid digit).
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  uint64_t acc = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (!IsDigit(c)) {
      *error = kIntInvalid;
      return false;
    }
    auto d = static_cast<uint64_t>(c - '0');
    if (acc > (limit - d) / 10) {
      *error = negative ? kIntNegOverflow : kIntPosOverflow;
      return false;
    }
    acc = acc * 10 + d;
  }
  // acc <= 2^63; negate in unsigned arithmetic so INT64_MIN needs no special case.
  *out = negative ? static_cast<int64_t>(0 - acc) : static_cast<int64_t>(acc);
  return true;
}

bool ParseFloat64(std::string_view s, double* out, std::string_view* error) {
  if (s.empty()) {
    *error = kFloatEmpty;
    return false;
  }
  bool negative = false;
  std::string_view body = s;
  if (body[0] == '+' || body[0] == '-') {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (EqualsIgnoreAsciiCase(body, "inf") || EqualsIgnoreAsciiCase(body, "infinity")) {
    *out = negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
    return true;
  }
  if (EqualsIgnoreAsciiCase(body, "nan")) {
    *out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  // Grammar: digits* ['.' digits*] [(e|E) [+-] digits+], at least one mantissa digit.
  size_t i = 0, n = body.size();
  size_t mantissa_digits = 0;
  while (i < n && IsDigit(body[i])) ++i, ++mantissa_digits;
  if (i < n && body[i] == '.') {
    ++i;
    while (i < n && IsDigit(body[i])) ++i, ++mantissa_digits;
  }
  if (mantissa_digits == 0) {
    *error = kFloatInvalid;
    return false;
  }
  if (i < n && (body[i] == 'e' || body[i] == 'E')) {
    ++i;
    if (i < n && (body[i] == '+' || body[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < n && IsDigit(body[i])) ++i, ++exp_digits;
    if (exp_digits == 0) {
      *error = kFloatInvalid;
      return false;
    }
  }
  if (i != n) {
    *error = kFloatInvalid;
    return false;
  }
  double v = 0;
  auto res = std::from_chars(body.data(), body.data() + n, v, std::chars_format::general);
  if (res.ec == std::errc::result_out_of_range) {
    // from_chars reports overflow and underflow alike and leaves `v` alone; Rust rounds
    // to inf or to zero. The grammar was checked above, so decide by the magnitude
    // (no strtod: it depends on the process locale, which a host may have changed).
    v = DecimalMagnitudeIsLarge(body) ? std::numeric_limits<double>::infinity() : 0.0;
  } else if (res.ec != std::errc() || res.ptr != body.data() + n) {
    *error = kFloatInvalid;
    return false;
  }
  *out = negative ? -v : v;
  return true;
}

bool ParseBool(std::string_view s, bool* out, std::string_view* error) {
  if (s == "true") {
    *out = true;
    return true;
  }
  if (s == "false") {
    *out = false;
    return true;
  }
  *error = kBoolInvalid;
  return false;
}

namespace {

// Length of the valid sequence at s[i], or 0 if the sequence is invalid; `*bad_len`
// receives the length of the maximal invalid subpart (≥ 1) when invalid.
size_t ValidSequenceLength(const unsigned char* s, size_t n, size_t i, size_t* bad_len) {
  unsigned char c = s[i];
  if (c < 0x80) return 1;
  auto cont = [&](size_t k) { return i + k < n && (s[i + k] & 0xC0) == 0x80; };
  unsigned char lo = 0x80, hi = 0xBF;
  size_t len;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    *bad_len = 1;
    return 0;
  }
  // Second byte has a restricted range; the rest are plain continuation bytes.
  if (!(i + 1 < n && s[i + 1] >= lo && s[i + 1] <= hi)) {
    *bad_len = 1;
    return 0;
  }
  for (size_t k = 2; k < len; ++k) {
    if (!cont(k)) {
      *bad_len = k;
      return 0;
    }
  }
  return len;
}

}  // namespace

// --- JSON output ---------------------------------------------------------------------

void AppendJsonString(std::string* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    // Copy the longest run of bytes that need no escaping in one go.
    size_t run = i;
    while (run < n) {
      auto c = static_cast<unsigned char>(s[run]);
      if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) break;
      ++run;
    }
    out->append(s.data() + i, run - i);
    i = run;
    if (i >= n) break;
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t bad = 1;
      size_t len = ValidSequenceLength(reinterpret_cast<const unsigned char*>(s.data()),
                                       n, i, &bad);
      if (len > 0) {
        out->append(s.data() + i, len);
        i += len;
      } else {
        out->append("\xEF\xBF\xBD");
        i += bad;
      }
      continue;
    }
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default: {
        char buf[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        out->append(buf, 6);
      }
    }
    ++i;
  }
  out->push_back('"');
}

void AppendInt64(std::string* out, int64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, res.ptr);
}

namespace {

// Format like Rust's ryu "pretty" output used by serde_json and f64 Display-alike:
// decimal notation when the decimal point sits within [-5, 16] digits, else
// scientific with a bare exponent ("1e16", "1.5e-7"); integers keep ".0".
void AppendPrettyDouble(std::string* out, double v) {
  if (v == 0) {
    out->append(std::signbit(v) ? "-0.0" : "0.0");
    return;
  }
  char buf[40];
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  bool negative = false;
  if (sci[0] == '-') {
    negative = true;
    sci.remove_prefix(1);
  }
  size_t e_pos = sci.find('e');
  std::string_view mant = sci.substr(0, e_pos);
  int exp10 = 0;
  std::from_chars(sci.data() + e_pos + 1 + (sci[e_pos + 1] == '+' ? 1 : 0),
                  sci.data() + sci.size(), exp10);
  std::string digits;
  digits.reserve(20);
  for (char c : mant) {
    if (c != '.') digits.push_back(c);
  }
  const int length = static_cast<int>(digits.size());
  const int kk = exp10 + 1;  // position of the decimal point relative to digits
  if (negative) out->push_back('-');
  if (0 < kk && kk <= 16) {
    if (length <= kk) {
      out->append(digits);
      out->append(static_cast<size_t>(kk - length), '0');
      out->append(".0");
    } else {
      out->append(digits, 0, static_cast<size_t>(kk));
      out->push_back('.');
      out->append(digits, static_cast<size_t>(kk), std::string::npos);
    }
  } else if (-5 < kk && kk <= 0) {
    out->append("0.");
    out->append(static_cast<size_t>(-kk), '0');
    out->append(digits);
  } else {
    out->push_back(digits[0]);
    if (length > 1) {
      out->push_back('.');
      out->append(digits, 1, std::string::npos);
    }
    out->push_back('e');
    AppendInt64(out, kk - 1);
  }
}

}  // namespace

void AppendJsonDouble(std::string* out, double v) {
  if (!std::isfinite(v)) {
    out->append("null");
    return;
  }
  AppendPrettyDouble(out, v);
}

std::string FormatDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string out;
  AppendPrettyDouble(&out, v);
  return out;
}

std::string FormatDoubleDisplay(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0" : "0";
  char buf[40];
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  std::string out;
  if (sci[0] == '-') {
    out.push_back('-');
    sci.remove_prefix(1);
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos)) {
    if (c != '.') digits.push_back(c);
  }
  int exp10 = 0;
  std::string_view exp_text = sci.substr(e_pos + 1);
  if (!exp_text.empty() && exp_text[0] == '+') exp_text.remove_prefix(1);
  std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exp10);
  const int point = exp10 + 1;  // digits before the decimal point
  const int n = static_cast<int>(digits.size());
  if (point <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-point), '0');
    out += digits;
  } else if (point >= n) {
    out += digits;
    out.append(static_cast<size_t>(point - n), '0');
  } else {
    out.append(digits, 0, static_cast<size_t>(point));
    out.push_back('.');
    out.append(digits, static_cast<size_t>(point), std::string::npos);
  }
  return out;
}

// --- UTF-8 ---------------------------------------------------------------------------

size_t FirstInvalidUtf8(std::string_view sv) {
  const auto* s = reinterpret_cast<const unsigned char*>(sv.data());
  const size_t n = sv.size();
  size_t i = 0;
  while (i < n) {
    // Fast path: 8 ASCII bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, s + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    if (s[i] < 0x80) {
      ++i;
      continue;
    }
    size_t bad = 0;
    size_t len = ValidSequenceLength(s, n, i, &bad);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

bool IsValidUtf8(std::string_view s) {
  return FirstInvalidUtf8(s) == std::string_view::npos;
}

void AppendUtf8Lossy(std::string* out, std::string_view sv) {
  const auto* s = reinterpret_cast<const unsigned char*>(sv.data());
  const size_t n = sv.size();
  size_t i = 0;
  while (i < n) {
    size_t rel = FirstInvalidUtf8(sv.substr(i));
    if (rel == std::string_view::npos) {
      out->append(sv.data() + i, n - i);
      return;
    }
    out->append(sv.data() + i, rel);
    i += rel;
    size_t bad = 1;
    ValidSequenceLength(s, n, i, &bad);
    out->append("\xEF\xBF\xBD");
    i += bad;
  }
}

std::string Utf8Lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  AppendUtf8Lossy(&out, s);
  return out;
}

// --- base64 --------------------------------------------------------------------------

std::string Base64Encode(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = (b[i] << 16) | (b[i + 1] << 8) | b[i + 2];
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  size_t rest = bytes.size() - i;
  if (rest == 1) {
    uint32_t v = b[i] << 16;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.append("==");
  } else if (rest == 2) {
    uint32_t v = (b[i] << 16) | (b[i + 1] << 8);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back('=');
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  auto decode = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = text[i + k];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        v[k] = 0;
        ++pad;
      } else {
        if (pad > 0) return std::nullopt;  // data after padding
        v[k] = decode(c);
        if (v[k] < 0) return std::nullopt;
      }
    }
    uint32_t w = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out.push_back(static_cast<char>((w >> 16) & 0xFF));
    if (pad < 2) out.push_back(static_cast<char>((w >> 8) & 0xFF));
    if (pad < 1) out.push_back(static_cast<char>(w & 0xFF));
  }
  return out;
}

// --- time ----------------------------------------------------------------------------

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  // Howard Hinnant's days_from_civil.
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

namespace {

void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2);
}

bool Digits(std::string_view s, size_t pos, size_t count, int* out) {
  if (pos + count > s.size()) return false;
  int v = 0;
  for (size_t i = 0; i < count; ++i) {
    char c = s[pos + i];
    if (!IsDigit(c)) return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned DaysInMonth(int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

// Parse "YYYY-MM-DD" at the start of s.
bool ParseCivilDate(std::string_view s, int* y, int* m, int* d) {
  if (!Digits(s, 0, 4, y) || s.size() < 10 || s[4] != '-' || !Digits(s, 5, 2, m) ||
      s[7] != '-' || !Digits(s, 8, 2, d)) {
    return false;
  }
  if (*m < 1 || *m > 12 || *d < 1 || static_cast<unsigned>(*d) > DaysInMonth(*y, *m)) {
    return false;
  }
  return true;
}

}  // namespace

std::optional<int64_t> ParseTimestampMicros(std::string_view s) {
  // Fast path for the shape producers emit most: "YYYY-MM-DDTHH:MM:SS.mmmZ".
  if (s.size() == 24 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' &&
      s[16] == ':' && s[19] == '.' && s[23] == 'Z') {
    const char* p = s.data();
    auto dig = [p](int i) { return static_cast<unsigned>(p[i] - '0'); };
    auto d2 = [&dig](int i) { return static_cast<int>(dig(i) * 10 + dig(i + 1)); };
    auto ok = [&dig](int i) { return dig(i) <= 9; };  // exactly for '0'..'9'
    // All 17 digit positions, combined without branches.
    const bool digits = ok(0) & ok(1) & ok(2) & ok(3) & ok(5) & ok(6) & ok(8) & ok(9) &
                        ok(11) & ok(12) & ok(14) & ok(15) & ok(17) & ok(18) & ok(20) &
                        ok(21) & ok(22);
    if (digits) {
      const int y = d2(0) * 100 + d2(2), mo = d2(5), d = d2(8), h = d2(11), mi = d2(14);
      const int sec = d2(17), ms = static_cast<int>(dig(20)) * 100 + d2(21);
      if (mo >= 1 && mo <= 12 && d >= 1 &&
          static_cast<unsigned>(d) <= DaysInMonth(y, mo) && h <= 23 && mi <= 59 &&
          sec <= 59) {
        const int64_t days =
            DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
        return (days * 86400 + h * 3600 + mi * 60 + sec) * 1000000 + ms * 1000;
      }
    }
  }
  int y, mo, d, h, mi, sec;
  if (!ParseCivilDate(s, &y, &mo, &d)) return std::nullopt;
  if (s.size() < 19 || (s[10] != 'T' && s[10] != 't' && s[10] != ' '))
    return std::nullopt;
  if (!Digits(s, 11, 2, &h) || s[13] != ':' || !Digits(s, 14, 2, &mi) || s[16] != ':' ||
      !Digits(s, 17, 2, &sec)) {
    return std::nullopt;
  }
  if (h > 23 || mi > 59 || sec > 60) return std::nullopt;
  if (sec == 60) sec = 59;  // a leap second is clamped, as most engines do
  size_t i = 19;
  int64_t micros = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    size_t start = i;
    int64_t scale = 100000;
    while (i < s.size() && IsDigit(s[i])) {
      if (i - start < 6) micros += (s[i] - '0') * scale, scale /= 10;
      ++i;
    }
    if (i == start || i - start > 9) return std::nullopt;
  }
  int64_t offset_s = 0;
  if (i < s.size()) {
    if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == s.size()) {
      ++i;
    } else if (s[i] == '+' || s[i] == '-') {
      int oh, om;
      if (s.size() != i + 6 || !Digits(s, i + 1, 2, &oh) || s[i + 3] != ':' ||
          !Digits(s, i + 4, 2, &om) || oh > 23 || om > 59) {
        return std::nullopt;
      }
      offset_s = (int64_t{oh} * 3600 + int64_t{om} * 60) * (s[i] == '-' ? -1 : 1);
      i = s.size();
    } else {
      return std::nullopt;
    }
  }
  if (i != s.size()) return std::nullopt;
  int64_t days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  int64_t secs = days * 86400 + int64_t{h} * 3600 + int64_t{mi} * 60 + sec - offset_s;
  return secs * 1000000 + micros;
}

std::string FormatTimestampMicros(int64_t micros) {
  int64_t secs = micros / 1000000;
  int64_t frac = micros % 1000000;
  if (frac < 0) {
    frac += 1000000;
    secs -= 1;
  }
  int64_t days = secs / 86400;
  int64_t sod = secs % 86400;
  if (sod < 0) {
    sod += 86400;
    days -= 1;
  }
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[48];
  int n =
      std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%06lldZ",
                    static_cast<long long>(y), m, d, static_cast<long long>(sod / 3600),
                    static_cast<long long>((sod / 60) % 60),
                    static_cast<long long>(sod % 60), static_cast<long long>(frac));
  return std::string(buf, static_cast<size_t>(n));
}

std::optional<int32_t> ParseDateDays(std::string_view s) {
  int y, m, d;
  if (s.size() != 10 || !ParseCivilDate(s, &y, &m, &d)) return std::nullopt;
  return static_cast<int32_t>(
      DaysFromCivil(y, static_cast<unsigned>(m), static_cast<unsigned>(d)));
}

std::string FormatDateDays(int32_t days) {
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[32];
  int n = std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02u", static_cast<long long>(y),
                        m, d);
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace kelt::text
