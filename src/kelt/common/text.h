// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Text primitives shared by the model and the Load step: RDP-compatible scalar
// parsing, JSON output, UTF-8 checks, base64 and RFC 3339 time. Internal header.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kelt::text {

// --- Scalar parsing with RDP's (Rust std) rules and error texts -------------------

/// Parse optional sign then ASCII digits, fitting i64. On failure `*error` receives
/// Rust's message ("cannot parse integer from empty string", "invalid digit found in
/// string", "number too large to fit in target type", "number too small to fit in
/// target type").
bool ParseInt64(std::string_view s, int64_t* out, std::string_view* error);

/// Parse a decimal/exponent float, `inf`/`infinity`/`nan` (any case, optional sign).
/// Errors: "cannot parse float from empty string", "invalid float literal".
bool ParseFloat64(std::string_view s, double* out, std::string_view* error);

/// Accept exactly "true" or "false". Error: "provided string was not `true` or `false`".
bool ParseBool(std::string_view s, bool* out, std::string_view* error);

/// True when `s` equals `lower` ignoring ASCII case (`lower` must be lower case).
bool EqualsIgnoreAsciiCase(std::string_view s, std::string_view lower);

// --- JSON output ---------------------------------------------------------------------

/// Append `s` as a JSON string literal (with quotes). Invalid UTF-8 becomes U+FFFD.
void AppendJsonString(std::string* out, std::string_view s);

/// Append the shortest text that round-trips `v` (serde_json style: "1.0", "1e20").
/// Non-finite values append "null".
void AppendJsonDouble(std::string* out, double v);

/// Return the shortest round-trip text of a double as RDP prints it inside strings.
std::string FormatDouble(double v);

/// Return a double as Rust's `f64::to_string` (Display) prints it: shortest round-trip
/// digits in positional notation, never an exponent ("1", "1.5", "100000000000000000000",
/// "0.00000015", "NaN", "inf", "-inf"). RDP uses it for cells sent as Kafka keys/values.
std::string FormatDoubleDisplay(double v);

void AppendInt64(std::string* out, int64_t v);

// --- UTF-8 ---------------------------------------------------------------------------

/// Return true if `s` is valid UTF-8 (no overlongs, no surrogates, ≤ U+10FFFF).
bool IsValidUtf8(std::string_view s);

/// Byte offset of the first invalid sequence, or npos.
size_t FirstInvalidUtf8(std::string_view s);

/// Append `s` to `out`, replacing each maximal invalid sequence by U+FFFD
/// (the WHATWG / Rust `from_utf8_lossy` rule).
void AppendUtf8Lossy(std::string* out, std::string_view s);
std::string Utf8Lossy(std::string_view s);

// --- base64 (RFC 4648, with padding) -------------------------------------------------

std::string Base64Encode(std::string_view bytes);
std::optional<std::string> Base64Decode(std::string_view text);

// --- time ----------------------------------------------------------------------------

/// Parse an RFC 3339 timestamp into µs since the epoch, UTC. Accepts 'T' or ' ' between
/// date and time, 0–9 fraction digits (truncated to µs), 'Z'/'z' or ±hh:mm offsets, and
/// no offset (taken as UTC). Returns nullopt on any other text.
std::optional<int64_t> ParseTimestampMicros(std::string_view s);

/// Format µs since the epoch as "YYYY-MM-DDTHH:MM:SS.ffffffZ".
std::string FormatTimestampMicros(int64_t micros);

/// Parse "YYYY-MM-DD" into days since the epoch.
std::optional<int32_t> ParseDateDays(std::string_view s);
std::string FormatDateDays(int32_t days);

/// Days since 1970-01-01 of a proleptic Gregorian civil date.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d);

}  // namespace kelt::text
