// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/sink/postgres_copy.h"

#include <arrow/api.h>
#include <libpq-fe.h>

#include <arrow/util/decimal.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#include "kelt/common/text.h"
#include "kelt/common/time_units.h"
#include "kelt/sink/boundary_types.h"

namespace kelt::pg {
namespace {

// PostgreSQL counts timestamps from 2000-01-01 (µs) and dates from 2000-01-01 (days).
constexpr int64_t kPgEpochMicros = 946'684'800'000'000;
constexpr int64_t kPgEpochDays = 10'957;
// Valid ranges (src/include/datatype/timestamp.h): 4714-11-24 BC up to, not including,
// 294277-01-01 for timestamps and 5874898-01-01 for dates.
constexpr int64_t kPgMinTimestamp = -211'813'488'000'000'000;
constexpr int64_t kPgEndTimestamp = 9'223'371'331'200'000'000;
constexpr int64_t kPgMinDate = -2'451'545;
constexpr int64_t kPgEndDate = 2'147'483'494 - 2'451'545;

void PutU16(std::string* out, uint16_t v) {
  char b[2] = {static_cast<char>(v >> 8), static_cast<char>(v)};
  out->append(b, 2);
}
void PutU32(std::string* out, uint32_t v) {
  char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
               static_cast<char>(v >> 8), static_cast<char>(v)};
  out->append(b, 4);
}
void PutU64(std::string* out, uint64_t v) {
  PutU32(out, static_cast<uint32_t>(v >> 32));
  PutU32(out, static_cast<uint32_t>(v));
}
// A field: its byte length, then the bytes.
void PutLength(std::string* out, int32_t n) { PutU32(out, static_cast<uint32_t>(n)); }

uint32_t Fnv1a(std::string_view s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

// Cut `s` to at most `n` bytes without splitting a UTF-8 character.
std::string_view CutUtf8(std::string_view s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

struct ConninfoOptionsDeleter {
  void operator()(PQconninfoOption* o) const { PQconninfoFree(o); }
};

// A best-effort guess at the password of a conninfo that libpq could not parse, so that
// it can be redacted from libpq's message: `password=...` (maybe quoted) or the
// `user:password@` of a URI.
std::vector<std::string> GuessSecrets(std::string_view conninfo) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = conninfo.find("password", at)) != std::string_view::npos) {
    size_t i = at + 8;
    at = i;
    while (i < conninfo.size() && conninfo[i] == ' ') ++i;
    if (i >= conninfo.size() || conninfo[i] != '=') continue;
    ++i;
    while (i < conninfo.size() && conninfo[i] == ' ') ++i;
    size_t end = i;
    if (end < conninfo.size() && conninfo[end] == '\'') {
      ++i;
      end = i;
      while (end < conninfo.size() && conninfo[end] != '\'')
        end += conninfo[end] == '\\' ? 2 : 1;
    } else {
      while (end < conninfo.size() && conninfo[end] != ' ' && conninfo[end] != '&') ++end;
    }
    end = std::min(end, conninfo.size());
    if (end > i) out.emplace_back(conninfo.substr(i, end - i));
  }
  size_t scheme = conninfo.find("://");
  if (scheme != std::string_view::npos) {
    std::string_view rest = conninfo.substr(scheme + 3);
    size_t amp = rest.rfind('@');
    if (amp != std::string_view::npos) {
      std::string_view userinfo = rest.substr(0, amp);
      size_t colon = userinfo.find(':');
      if (colon != std::string_view::npos && colon + 1 < userinfo.size()) {
        out.emplace_back(userinfo.substr(colon + 1));
      }
    }
  }
  return out;
}

// Whether every value of `type` (nested types included) has a JSON form.
bool HasJsonForm(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::NA:
    case arrow::Type::BOOL:
    case arrow::Type::INT8:
    case arrow::Type::INT16:
    case arrow::Type::INT32:
    case arrow::Type::INT64:
    case arrow::Type::UINT8:
    case arrow::Type::UINT16:
    case arrow::Type::UINT32:
    case arrow::Type::UINT64:
    case arrow::Type::FLOAT:
    case arrow::Type::DOUBLE:
    case arrow::Type::STRING:
    case arrow::Type::LARGE_STRING:
    case arrow::Type::BINARY:
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::FIXED_SIZE_BINARY:
    case arrow::Type::DECIMAL128:
    case arrow::Type::DECIMAL256:
    case arrow::Type::DATE32:
    case arrow::Type::TIME32:
    case arrow::Type::TIME64:
    case arrow::Type::TIMESTAMP:
      return true;
    case arrow::Type::DICTIONARY:
      return HasJsonForm(*static_cast<const arrow::DictionaryType&>(type).value_type());
    case arrow::Type::STRUCT:
    case arrow::Type::LIST:
    case arrow::Type::LARGE_LIST:
    case arrow::Type::FIXED_SIZE_LIST:
    case arrow::Type::MAP:
    case arrow::Type::DENSE_UNION:
    case arrow::Type::SPARSE_UNION:
      for (const auto& f : type.fields()) {
        if (!HasJsonForm(*f->type())) return false;
      }
      return true;
    default:
      return false;
  }
}

// The unscaled value of a decimal as decimal digits ("-1234" for -12.34 at scale 2).
std::string DecimalDigits(const arrow::Array& a, int64_t row) {
  if (a.type_id() == arrow::Type::DECIMAL128) {
    return arrow::Decimal128(static_cast<const arrow::Decimal128Array&>(a).GetValue(row))
        .ToIntegerString();
  }
  return arrow::Decimal256(static_cast<const arrow::Decimal256Array&>(a).GetValue(row))
      .ToIntegerString();
}

int32_t DecimalScale(const arrow::DataType& type) {
  return static_cast<const arrow::DecimalType&>(type).scale();
}

// PostgreSQL's binary NUMERIC (src/backend/utils/adt/numeric.c, numeric_send): digit
// count, weight (of the first base-10000 digit), sign, display scale, then the
// base-10000 digits, most significant first, without leading or trailing zero digits.
void AppendNumeric(std::string_view unscaled, int32_t scale, std::string* out) {
  bool negative = !unscaled.empty() && unscaled[0] == '-';
  std::string digits(negative ? unscaled.substr(1) : unscaled);
  if (scale < 0) {  // 12 at scale -3 is 12000
    digits.append(static_cast<size_t>(-scale), '0');
    scale = 0;
  }
  if (digits.size() <= static_cast<size_t>(scale)) {
    digits.insert(0, static_cast<size_t>(scale) + 1 - digits.size(), '0');
  }
  std::string integer = digits.substr(0, digits.size() - scale);
  std::string fraction = digits.substr(digits.size() - scale);
  integer.insert(0, (4 - integer.size() % 4) % 4, '0');
  fraction.append((4 - fraction.size() % 4) % 4, '0');
  std::vector<int16_t> groups;
  auto group_of = [](std::string_view four) {
    return static_cast<int16_t>((four[0] - '0') * 1000 + (four[1] - '0') * 100 +
                                (four[2] - '0') * 10 + (four[3] - '0'));
  };
  for (size_t i = 0; i < integer.size(); i += 4)
    groups.push_back(group_of(integer.substr(i, 4)));
  for (size_t i = 0; i < fraction.size(); i += 4) {
    groups.push_back(group_of(fraction.substr(i, 4)));
  }
  int weight = static_cast<int>(integer.size() / 4) - 1;
  size_t first = 0;
  while (first < groups.size() && groups[first] == 0) {
    ++first;
    --weight;
  }
  size_t last = groups.size();
  while (last > first && groups[last - 1] == 0) --last;
  const size_t n = last - first;
  if (n == 0) {  // zero: no digits, weight 0, positive
    weight = 0;
    negative = false;
  }
  PutLength(out, static_cast<int32_t>(8 + 2 * n));
  PutU16(out, static_cast<uint16_t>(n));
  PutU16(out, static_cast<uint16_t>(static_cast<int16_t>(weight)));
  PutU16(out, negative ? 0x4000 : 0x0000);
  PutU16(out, static_cast<uint16_t>(scale));
  for (size_t i = first; i < last; ++i) PutU16(out, static_cast<uint16_t>(groups[i]));
}

// "HH:MM:SS.ffffff" (or 9 fraction digits with `nanos`) of a time of day in the unit
// given by `per_second` (1, 1e3, 1e6, 1e9).
std::string FormatTimeOfDay(int64_t v, int64_t per_second) {
  if (v < 0) v = 0;
  int64_t seconds = v / per_second;
  int64_t fraction = v % per_second;
  const int digits = per_second == 1'000'000'000 ? 9 : 6;
  int64_t scaled = digits == 9 ? fraction : fraction * (1'000'000 / per_second);
  char buf[96];
  std::snprintf(
      buf, sizeof(buf), "%02lld:%02lld:%02lld.%0*lld",
      static_cast<long long>(seconds / 3600), static_cast<long long>(seconds / 60 % 60),
      static_cast<long long>(seconds % 60), digits, static_cast<long long>(scaled));
  return buf;
}

}  // namespace

Result<PgType> PgTypeOf(const arrow::DataType& type, std::string_view column) {
  switch (type.id()) {
    case arrow::Type::INT8:
    case arrow::Type::INT16:
      return PgType::kSmallInt;
    case arrow::Type::INT32:
      return PgType::kInteger;
    case arrow::Type::INT64:
      return PgType::kBigInt;
    case arrow::Type::FLOAT:
      return PgType::kReal;
    case arrow::Type::DOUBLE:
      return PgType::kDoublePrecision;
    case arrow::Type::BOOL:
      return PgType::kBoolean;
    case arrow::Type::STRING:
    case arrow::Type::LARGE_STRING:
      return PgType::kText;
    case arrow::Type::BINARY:
    case arrow::Type::LARGE_BINARY:
      return PgType::kBytea;
    case arrow::Type::TIMESTAMP:
      return static_cast<const arrow::TimestampType&>(type).timezone().empty()
                 ? PgType::kTimestamp
                 : PgType::kTimestampTz;
    case arrow::Type::DATE32:
      return PgType::kDate;
    case arrow::Type::DECIMAL128:
    case arrow::Type::DECIMAL256:
      return PgType::kNumeric;
    case arrow::Type::TIME32:
    case arrow::Type::TIME64:
      return PgType::kTime;
    case arrow::Type::FIXED_SIZE_BINARY:
      return PgType::kBytea;
    case arrow::Type::NA:
      return PgType::kText;
    case arrow::Type::DICTIONARY: {
      const auto& values = *static_cast<const arrow::DictionaryType&>(type).value_type();
      if (values.id() == arrow::Type::STRING ||
          values.id() == arrow::Type::LARGE_STRING) {
        return PgType::kText;
      }
      break;
    }
    case arrow::Type::STRUCT:
    case arrow::Type::LIST:
    case arrow::Type::LARGE_LIST:
    case arrow::Type::FIXED_SIZE_LIST:
    case arrow::Type::MAP:
    case arrow::Type::DENSE_UNION:
    case arrow::Type::SPARSE_UNION:
      if (HasJsonForm(type)) return PgType::kJsonb;
      break;
    default:
      break;
  }
  return Status::Invalid("column '" + std::string(column) + "': Arrow type " +
                         type.ToString() + " has no PostgreSQL mapping");
}

std::string PgColumnSql(const arrow::DataType& type, PgType pg) {
  if (pg == PgType::kNumeric) {
    const auto& d = static_cast<const arrow::DecimalType&>(type);
    // PostgreSQL takes precision 1..1000 and, before 15, a scale in 0..precision.
    if (d.precision() >= 1 && d.precision() <= 1000 && d.scale() >= 0 &&
        d.scale() <= d.precision()) {
      return "NUMERIC(" + std::to_string(d.precision()) + "," +
             std::to_string(d.scale()) + ")";
    }
  }
  return std::string(PgTypeSql(pg));
}

std::string_view PgTypeSql(PgType type) {
  switch (type) {
    case PgType::kSmallInt:
      return "SMALLINT";
    case PgType::kInteger:
      return "INTEGER";
    case PgType::kBigInt:
      return "BIGINT";
    case PgType::kReal:
      return "REAL";
    case PgType::kDoublePrecision:
      return "DOUBLE PRECISION";
    case PgType::kBoolean:
      return "BOOLEAN";
    case PgType::kText:
      return "TEXT";
    case PgType::kBytea:
      return "BYTEA";
    case PgType::kTimestampTz:
      return "TIMESTAMPTZ";
    case PgType::kTimestamp:
      return "TIMESTAMP";
    case PgType::kDate:
      return "DATE";
    case PgType::kNumeric:
      return "NUMERIC";
    case PgType::kTime:
      return "TIME";
    case PgType::kJsonb:
      return "JSONB";
  }
  return "TEXT";
}

bool PgTypeAccepts(PgType type, std::string_view t) {
  switch (type) {
    case PgType::kSmallInt:
      return t == "smallint";
    case PgType::kInteger:
      return t == "integer";
    case PgType::kBigInt:
      return t == "bigint";
    case PgType::kReal:
      return t == "real";
    case PgType::kDoublePrecision:
      return t == "double precision";
    case PgType::kBoolean:
      return t == "boolean";
    case PgType::kText:
      // varchar has text's binary format; a length limit is checked by the server.
      return t == "text" || t.starts_with("character varying");
    case PgType::kBytea:
      return t == "bytea";
    case PgType::kTimestampTz:
      return t.starts_with("timestamp") && t.ends_with("with time zone") &&
             !t.ends_with("without time zone");
    case PgType::kTimestamp:
      return t.starts_with("timestamp") && t.ends_with("without time zone");
    case PgType::kDate:
      return t == "date";
    case PgType::kNumeric:
      // Any precision: the server checks that a value fits the column's typmod.
      return t.starts_with("numeric");
    case PgType::kTime:
      return t.starts_with("time") && !t.starts_with("timestamp") &&
             t.ends_with("without time zone");
    case PgType::kJsonb:
      return t == "jsonb";
  }
  return false;
}

Status CheckIdentifier(std::string_view id, std::string_view what) {
  std::string w(what);
  if (id.empty()) return Status::Invalid(w + " name is empty");
  if (id.find('\0') != std::string_view::npos) {
    return Status::Invalid(w + " name contains a NUL byte");
  }
  if (!text::IsValidUtf8(id)) return Status::Invalid(w + " name is not valid UTF-8");
  if (id.size() > kMaxIdentifierBytes) {
    return Status::Invalid(w + " name '" + std::string(id) + "' is " +
                           std::to_string(id.size()) +
                           " bytes; PostgreSQL identifiers are at most 63 bytes");
  }
  return {};
}

Result<TableName> ParseTableName(std::string_view text, std::string_view what) {
  TableName name;
  size_t dot = text.find('.');
  if (dot == std::string_view::npos) {
    name.table = std::string(text);
  } else {
    name.schema = std::string(text.substr(0, dot));
    name.table = std::string(text.substr(dot + 1));
    KELT_RETURN_NOT_OK(CheckIdentifier(name.schema, std::string(what) + " schema"));
  }
  KELT_RETURN_NOT_OK(CheckIdentifier(name.table, what));
  return name;
}

std::string DerivedName(std::string_view base, std::string_view suffix) {
  if (base.size() + suffix.size() <= kMaxIdentifierBytes) {
    return std::string(base) + std::string(suffix);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string full = std::string(base) + std::string(suffix);
  uint32_t h = Fnv1a(full);
  std::string tag = "_";
  for (int shift = 28; shift >= 0; shift -= 4) tag += kHex[(h >> shift) & 0xF];
  std::string_view keep =
      suffix.size() + tag.size() < kMaxIdentifierBytes
          ? CutUtf8(base, kMaxIdentifierBytes - suffix.size() - tag.size())
          : std::string_view();
  std::string out = std::string(keep) + tag + std::string(suffix);
  return std::string(CutUtf8(out, kMaxIdentifierBytes));
}

pg_conn* Connect(const std::string& conninfo) {
  // The conninfo is expanded as dbname: it overrides the keywords before it, the ones
  // after it override the conninfo (kelt writes UTF-8).
  const char* keys[] = {"connect_timeout",  "keepalives",
                        "keepalives_idle",  "keepalives_interval",
                        "keepalives_count", "tcp_user_timeout",
                        "dbname",           "fallback_application_name",
                        "client_encoding",  nullptr};
  const char* values[] = {"30",   "1",    "30",   "10", "3", "60000", conninfo.c_str(),
                          "kelt", "UTF8", nullptr};
  return PQconnectdbParams(keys, values, /*expand_dbname=*/1);
}

std::string Redact(std::string_view message, std::string_view secret) {
  std::string out(message);
  if (secret.empty()) return out;
  size_t at = 0;
  while ((at = out.find(secret, at)) != std::string::npos) {
    out.replace(at, secret.size(), "***");
    at += 3;
  }
  return out;
}

Result<ConnInfo> ParseConnInfo(std::string_view conninfo) {
  std::string text(conninfo);
  char* err = nullptr;
  std::unique_ptr<PQconninfoOption, ConninfoOptionsDeleter> options(
      PQconninfoParse(text.c_str(), &err));
  if (options == nullptr) {
    std::string message = err != nullptr ? err : "out of memory";
    if (err != nullptr) PQfreemem(err);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
      message.pop_back();
    }
    // libpq quotes pieces of the string (a whole URI, even); none may leak a password.
    std::string redacted;
    size_t i = 0;
    while (i < message.size()) {
      size_t open = message.find('"', i);
      size_t close = open == std::string::npos ? open : message.find('"', open + 1);
      if (close == std::string::npos) {
        redacted += message.substr(i);
        break;
      }
      std::string_view piece(message.data() + open + 1, close - open - 1);
      redacted += message.substr(i, open + 1 - i);
      redacted += piece.size() > 1 && conninfo.find(piece) != std::string_view::npos
                      ? std::string("***")
                      : std::string(piece);
      redacted += '"';
      i = close + 1;
    }
    for (const std::string& s : GuessSecrets(conninfo)) redacted = Redact(redacted, s);
    return Status::Invalid("invalid PostgreSQL connection string: " + redacted);
  }
  ConnInfo info;
  for (const PQconninfoOption* o = options.get(); o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    std::string_view key = o->keyword;
    if (key == "host" || (key == "hostaddr" && info.host.empty())) info.host = o->val;
    if (key == "port") info.port = o->val;
    if (key == "dbname") info.dbname = o->val;
    if (key == "user") info.user = o->val;
    if (key == "password") info.password = o->val;
  }
  auto env_or = [](const char* var, const char* fallback) {
    const char* v = std::getenv(var);
    return std::string(v != nullptr && *v != '\0' ? v : fallback);
  };
  if (info.host.empty()) info.host = env_or("PGHOST", "localhost");
  if (info.port.empty()) info.port = env_or("PGPORT", "5432");
  if (info.user.empty()) info.user = env_or("PGUSER", "");
  if (info.dbname.empty()) info.dbname = env_or("PGDATABASE", info.user.c_str());
  return info;
}

// --- binary COPY -------------------------------------------------------------------

Result<BinaryCopyEncoder> BinaryCopyEncoder::Make(const arrow::RecordBatch& batch,
                                                  std::vector<PgType> types,
                                                  NulPolicy nul) {
  if (static_cast<int>(types.size()) != batch.num_columns()) {
    return Status::Internal("COPY encoder: column count mismatch");
  }
  std::vector<Column> columns;
  columns.reserve(types.size());
  for (int i = 0; i < batch.num_columns(); ++i) {
    const std::string& name = batch.schema()->field(i)->name();
    KELT_ASSIGN_OR_RAISE(PgType have, PgTypeOf(*batch.column(i)->type(), name));
    if (have != types[i]) {
      return Status::Invalid("column '" + name + "': batch type " +
                             batch.column(i)->type()->ToString() + " is not " +
                             std::string(PgTypeSql(types[i])));
    }
    Column c;
    c.array = batch.column(i).get();
    c.name = name;
    c.type = types[i];
    if (c.array->type_id() == arrow::Type::TIMESTAMP ||
        c.array->type_id() == arrow::Type::TIME32 ||
        c.array->type_id() == arrow::Type::TIME64) {
      const arrow::DataType& t = *c.array->type();
      switch (t.id() == arrow::Type::TIMESTAMP
                  ? static_cast<const arrow::TimestampType&>(t).unit()
                  : static_cast<const arrow::TimeType&>(t).unit()) {
        case arrow::TimeUnit::SECOND:
          c.micros_per_unit = 1'000'000;
          break;
        case arrow::TimeUnit::MILLI:
          c.micros_per_unit = 1'000;
          break;
        case arrow::TimeUnit::MICRO:
          c.micros_per_unit = 1;
          break;
        case arrow::TimeUnit::NANO:
          c.nanos = true;
          break;
      }
    }
    columns.push_back(std::move(c));
  }
  return BinaryCopyEncoder(std::move(columns), nul);
}

void BinaryCopyEncoder::AppendHeader(std::string* out) {
  static constexpr char kSignature[] = "PGCOPY\n\377\r\n";  // + the terminating NUL
  out->append(kSignature, sizeof(kSignature));
  PutU32(out, 0);  // flags: no OIDs
  PutU32(out, 0);  // header extension length
}

void BinaryCopyEncoder::AppendTrailer(std::string* out) { PutU16(out, 0xFFFF); }

Status BinaryCopyEncoder::AppendText(const Column& c, std::string_view v,
                                     std::string* out) const {
  if (v.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return Status::TypeError("column '" + c.name + "': value of " +
                             std::to_string(v.size()) + " bytes is too large");
  }
  if (c.type == PgType::kBytea) {
    PutLength(out, static_cast<int32_t>(v.size()));
    out->append(v);
    return {};
  }
  if (!text::IsValidUtf8(v)) {
    return Status::TypeError("column '" + c.name + "': text is not valid UTF-8");
  }
  size_t nul = v.find('\0');
  if (nul == std::string_view::npos) {
    PutLength(out, static_cast<int32_t>(v.size()));
    out->append(v);
    return {};
  }
  if (nul_ == NulPolicy::kReject) {
    return Status::TypeError(
        "column '" + c.name + "': text contains a NUL byte at byte " +
        std::to_string(nul) +
        ", which PostgreSQL TEXT cannot store (replace_nul_in_text lands it as U+FFFD)");
  }
  std::string replaced;
  replaced.reserve(v.size() + 8);
  for (char ch : v) {
    if (ch == '\0') {
      replaced += "\xEF\xBF\xBD";
    } else {
      replaced += ch;
    }
  }
  if (replaced.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return Status::TypeError("column '" + c.name + "': value is too large");
  }
  PutLength(out, static_cast<int32_t>(replaced.size()));
  out->append(replaced);
  return {};
}

Status BinaryCopyEncoder::AppendRow(int64_t row, std::string* out) const {
  const size_t start = out->size();
  PutU16(out, static_cast<uint16_t>(columns_.size()));
  for (const Column& c : columns_) {
    const arrow::Array& a = *c.array;
    const bool is_union = a.type_id() == arrow::Type::DENSE_UNION ||
                          a.type_id() == arrow::Type::SPARSE_UNION;
    if (a.IsNull(row) || (is_union && internal::IsUnionNull(a, row))) {
      PutLength(out, -1);
      continue;
    }
    Status st;
    switch (c.type) {
      case PgType::kSmallInt: {
        int16_t v = a.type_id() == arrow::Type::INT8
                        ? static_cast<const arrow::Int8Array&>(a).Value(row)
                        : static_cast<const arrow::Int16Array&>(a).Value(row);
        PutLength(out, 2);
        PutU16(out, static_cast<uint16_t>(v));
        break;
      }
      case PgType::kInteger:
        PutLength(out, 4);
        PutU32(out, static_cast<uint32_t>(
                        static_cast<const arrow::Int32Array&>(a).Value(row)));
        break;
      case PgType::kBigInt:
        PutLength(out, 8);
        PutU64(out, static_cast<uint64_t>(
                        static_cast<const arrow::Int64Array&>(a).Value(row)));
        break;
      case PgType::kReal:
        PutLength(out, 4);
        PutU32(out, std::bit_cast<uint32_t>(
                        static_cast<const arrow::FloatArray&>(a).Value(row)));
        break;
      case PgType::kDoublePrecision:
        PutLength(out, 8);
        PutU64(out, std::bit_cast<uint64_t>(
                        static_cast<const arrow::DoubleArray&>(a).Value(row)));
        break;
      case PgType::kBoolean:
        PutLength(out, 1);
        out->push_back(static_cast<const arrow::BooleanArray&>(a).Value(row) ? 1 : 0);
        break;
      case PgType::kText:
      case PgType::kBytea: {
        const arrow::Array* values = &a;
        int64_t at = row;
        if (a.type_id() == arrow::Type::DICTIONARY) {  // an enum: its symbol
          const auto& dict = static_cast<const arrow::DictionaryArray&>(a);
          values = dict.dictionary().get();
          at = dict.GetValueIndex(row);
          if (values->IsNull(at)) {
            PutLength(out, -1);
            break;
          }
        }
        std::string_view v;
        switch (values->type_id()) {
          case arrow::Type::STRING:
          case arrow::Type::BINARY:
            v = static_cast<const arrow::BinaryArray&>(*values).GetView(at);
            break;
          case arrow::Type::FIXED_SIZE_BINARY:
            v = static_cast<const arrow::FixedSizeBinaryArray&>(*values).GetView(at);
            break;
          default:  // LARGE_STRING, LARGE_BINARY
            v = static_cast<const arrow::LargeBinaryArray&>(*values).GetView(at);
            break;
        }
        st = AppendText(c, v, out);
        break;
      }
      case PgType::kNumeric:
        AppendNumeric(DecimalDigits(a, row), DecimalScale(*a.type()), out);
        break;
      case PgType::kTime: {
        int64_t v = a.type_id() == arrow::Type::TIME32
                        ? static_cast<const arrow::Time32Array&>(a).Value(row)
                        : static_cast<const arrow::Time64Array&>(a).Value(row);
        int64_t micros = c.nanos ? v / 1000 : v * c.micros_per_unit;
        if (micros < 0 || micros > 86'400'000'000) {
          st = Status::TypeError("column '" + c.name + "': time of day " +
                                 std::to_string(v) + " is outside 00:00 to 24:00");
          break;
        }
        PutLength(out, 8);
        PutU64(out, static_cast<uint64_t>(micros));
        break;
      }
      case PgType::kJsonb: {
        // jsonb's binary format: a version byte (1), then the JSON text.
        const size_t length_at = out->size();
        PutLength(out, 0);
        out->push_back(1);
        st = AppendJson(c, a, row, out);
        if (!st.ok()) break;
        const size_t length = out->size() - length_at - 4;
        if (length > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
          st = Status::TypeError("column '" + c.name + "': JSON value of " +
                                 std::to_string(length) + " bytes is too large");
          break;
        }
        std::string patch;
        PutLength(&patch, static_cast<int32_t>(length));
        out->replace(length_at, 4, patch);
        break;
      }
      case PgType::kTimestampTz:
      case PgType::kTimestamp: {
        int64_t v = static_cast<const arrow::TimestampArray&>(a).Value(row);
        int64_t micros = 0;
        if (c.nanos) {
          micros = v / 1000 - ((v % 1000) < 0 ? 1 : 0);  // floor: PostgreSQL keeps µs
        } else if (__builtin_mul_overflow(v, c.micros_per_unit, &micros)) {
          micros = std::numeric_limits<int64_t>::min();
        }
        int64_t pg = 0;
        if (micros == std::numeric_limits<int64_t>::min() ||
            __builtin_sub_overflow(micros, kPgEpochMicros, &pg) || pg < kPgMinTimestamp ||
            pg >= kPgEndTimestamp) {
          st = Status::TypeError("column '" + c.name +
                                 "': timestamp is outside PostgreSQL's range "
                                 "(4713 BC to 294276 AD)");
          break;
        }
        PutLength(out, 8);
        PutU64(out, static_cast<uint64_t>(pg));
        break;
      }
      case PgType::kDate: {
        int64_t pg =
            static_cast<int64_t>(static_cast<const arrow::Date32Array&>(a).Value(row)) -
            kPgEpochDays;
        if (pg < kPgMinDate || pg >= kPgEndDate) {
          st = Status::TypeError("column '" + c.name +
                                 "': date is outside PostgreSQL's range");
          break;
        }
        PutLength(out, 4);
        PutU32(out, static_cast<uint32_t>(static_cast<int32_t>(pg)));
        break;
      }
    }
    if (!st.ok()) {
      out->resize(start);
      return st;
    }
  }
  return {};
}

Status BinaryCopyEncoder::AppendJsonText(const Column& c, std::string_view v,
                                         std::string* out) const {
  if (!text::IsValidUtf8(v)) {
    return Status::TypeError("column '" + c.name +
                             "': text inside the JSON value is "
                             "not valid UTF-8");
  }
  size_t nul = v.find('\0');
  if (nul == std::string_view::npos) {
    text::AppendJsonString(out, v);
    return {};
  }
  // jsonb cannot hold \u0000 either.
  if (nul_ == NulPolicy::kReject) {
    return Status::TypeError(
        "column '" + c.name +
        "': text inside the JSON value contains a NUL byte at "
        "byte " +
        std::to_string(nul) +
        ", which PostgreSQL JSONB cannot store (replace_nul_in_text lands it as U+FFFD)");
  }
  std::string replaced;
  replaced.reserve(v.size() + 8);
  for (char ch : v) {
    if (ch == '\0') {
      replaced += "\xEF\xBF\xBD";
    } else {
      replaced += ch;
    }
  }
  text::AppendJsonString(out, replaced);
  return {};
}

// One value in JSON: numbers as JSON numbers (decimals in their exact text; NaN and
// ±Infinity as the strings "NaN", "Infinity", "-Infinity", which JSON has no number
// for), text as strings, bytes as base64 strings, dates "YYYY-MM-DD", times
// "HH:MM:SS.ffffff", timestamps RFC 3339 ("…Z" with a time zone, no offset without),
// enums as their symbol, structs as objects, lists as arrays, maps as objects (a key
// that is not text is written as its JSON text; of duplicate keys jsonb keeps the
// last), a union as its branch's value, nulls as null.
Status BinaryCopyEncoder::AppendJson(const Column& c, const arrow::Array& a, int64_t row,
                                     std::string* out) const {
  if (a.IsNull(row)) {
    out->append("null");
    return {};
  }
  auto append_float = [out](auto v) {
    if (std::isnan(v)) {
      out->append("\"NaN\"");
    } else if (std::isinf(v)) {
      out->append(v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    } else {
      char buf[64];
      auto r = std::to_chars(buf, buf + sizeof(buf), v);
      out->append(buf, r.ptr);
    }
  };
  auto append_int = [out](auto v) {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof(buf), v);
    out->append(buf, r.ptr);
  };
  switch (a.type_id()) {
    case arrow::Type::NA:
      out->append("null");
      return {};
    case arrow::Type::BOOL:
      out->append(static_cast<const arrow::BooleanArray&>(a).Value(row) ? "true"
                                                                        : "false");
      return {};
    case arrow::Type::INT8:
      append_int(static_cast<const arrow::Int8Array&>(a).Value(row));
      return {};
    case arrow::Type::INT16:
      append_int(static_cast<const arrow::Int16Array&>(a).Value(row));
      return {};
    case arrow::Type::INT32:
      append_int(static_cast<const arrow::Int32Array&>(a).Value(row));
      return {};
    case arrow::Type::INT64:
      append_int(static_cast<const arrow::Int64Array&>(a).Value(row));
      return {};
    case arrow::Type::UINT8:
      append_int(static_cast<const arrow::UInt8Array&>(a).Value(row));
      return {};
    case arrow::Type::UINT16:
      append_int(static_cast<const arrow::UInt16Array&>(a).Value(row));
      return {};
    case arrow::Type::UINT32:
      append_int(static_cast<const arrow::UInt32Array&>(a).Value(row));
      return {};
    case arrow::Type::UINT64:
      append_int(static_cast<const arrow::UInt64Array&>(a).Value(row));
      return {};
    case arrow::Type::FLOAT:
      append_float(static_cast<const arrow::FloatArray&>(a).Value(row));
      return {};
    case arrow::Type::DOUBLE:
      append_float(static_cast<const arrow::DoubleArray&>(a).Value(row));
      return {};
    case arrow::Type::STRING:
      return AppendJsonText(c, static_cast<const arrow::StringArray&>(a).GetView(row),
                            out);
    case arrow::Type::LARGE_STRING:
      return AppendJsonText(
          c, static_cast<const arrow::LargeStringArray&>(a).GetView(row), out);
    case arrow::Type::BINARY:
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::FIXED_SIZE_BINARY: {
      std::string_view v =
          a.type_id() == arrow::Type::BINARY
              ? static_cast<const arrow::BinaryArray&>(a).GetView(row)
          : a.type_id() == arrow::Type::LARGE_BINARY
              ? static_cast<const arrow::LargeBinaryArray&>(a).GetView(row)
              : static_cast<const arrow::FixedSizeBinaryArray&>(a).GetView(row);
      text::AppendJsonString(out, text::Base64Encode(v));
      return {};
    }
    case arrow::Type::DECIMAL128:
      out->append(
          arrow::Decimal128(static_cast<const arrow::Decimal128Array&>(a).GetValue(row))
              .ToString(DecimalScale(*a.type())));
      return {};
    case arrow::Type::DECIMAL256:
      out->append(
          arrow::Decimal256(static_cast<const arrow::Decimal256Array&>(a).GetValue(row))
              .ToString(DecimalScale(*a.type())));
      return {};
    case arrow::Type::DATE32:
      text::AppendJsonString(
          out,
          text::FormatDateDays(static_cast<const arrow::Date32Array&>(a).Value(row)));
      return {};
    case arrow::Type::TIME32:
    case arrow::Type::TIME64: {
      int64_t v = a.type_id() == arrow::Type::TIME32
                      ? static_cast<const arrow::Time32Array&>(a).Value(row)
                      : static_cast<const arrow::Time64Array&>(a).Value(row);
      text::AppendJsonString(
          out,
          FormatTimeOfDay(v, TimeUnitsPerSecond(
                                 static_cast<const arrow::TimeType&>(*a.type()).unit())));
      return {};
    }
    case arrow::Type::TIMESTAMP: {
      const auto& type = static_cast<const arrow::TimestampType&>(*a.type());
      const int64_t v = static_cast<const arrow::TimestampArray&>(a).Value(row);
      const int64_t per_second = TimeUnitsPerSecond(type.unit());
      int64_t micros = 0;
      int64_t sub_micro = -1;  // the ns digits below µs, for ns timestamps
      if (per_second == 1'000'000'000) {
        micros = v / 1000 - ((v % 1000) < 0 ? 1 : 0);
        sub_micro = v - micros * 1000;
      } else if (__builtin_mul_overflow(v, 1'000'000 / per_second, &micros)) {
        return Status::TypeError("column '" + c.name +
                                 "': timestamp inside the JSON value is out of range");
      }
      std::string t = text::FormatTimestampMicros(micros);  // "…ffffffZ"
      if (!t.empty() && t.back() == 'Z') t.pop_back();
      if (sub_micro >= 0) {
        char ns[24];
        std::snprintf(ns, sizeof(ns), "%03lld", static_cast<long long>(sub_micro));
        t += ns;
      }
      if (!type.timezone().empty()) t += 'Z';
      text::AppendJsonString(out, t);
      return {};
    }
    case arrow::Type::DICTIONARY: {
      const auto& dict = static_cast<const arrow::DictionaryArray&>(a);
      return AppendJson(c, *dict.dictionary(), dict.GetValueIndex(row), out);
    }
    case arrow::Type::STRUCT: {
      const auto& st = static_cast<const arrow::StructArray&>(a);
      out->push_back('{');
      for (int i = 0; i < st.num_fields(); ++i) {
        if (i > 0) out->push_back(',');
        KELT_RETURN_NOT_OK(AppendJsonText(c, st.type()->field(i)->name(), out));
        out->push_back(':');
        // field() applies the struct's offset.
        KELT_RETURN_NOT_OK(AppendJson(c, *st.field(i), row, out));
      }
      out->push_back('}');
      return {};
    }
    case arrow::Type::MAP: {
      const auto& map = static_cast<const arrow::MapArray&>(a);
      out->push_back('{');
      for (int64_t i = map.value_offset(row); i < map.value_offset(row + 1); ++i) {
        if (i > map.value_offset(row)) out->push_back(',');
        const arrow::Array& keys = *map.keys();
        if (keys.type_id() == arrow::Type::STRING ||
            keys.type_id() == arrow::Type::LARGE_STRING ||
            keys.type_id() == arrow::Type::DICTIONARY) {
          KELT_RETURN_NOT_OK(AppendJson(c, keys, i, out));
        } else {
          std::string key;
          KELT_RETURN_NOT_OK(AppendJson(c, keys, i, &key));
          text::AppendJsonString(out, key);
        }
        out->push_back(':');
        KELT_RETURN_NOT_OK(AppendJson(c, *map.items(), i, out));
      }
      out->push_back('}');
      return {};
    }
    case arrow::Type::LIST:
    case arrow::Type::LARGE_LIST:
    case arrow::Type::FIXED_SIZE_LIST: {
      int64_t begin = 0;
      int64_t end = 0;
      const arrow::Array* values = nullptr;
      if (a.type_id() == arrow::Type::LIST) {
        const auto& l = static_cast<const arrow::ListArray&>(a);
        begin = l.value_offset(row);
        end = l.value_offset(row + 1);
        values = l.values().get();
      } else if (a.type_id() == arrow::Type::LARGE_LIST) {
        const auto& l = static_cast<const arrow::LargeListArray&>(a);
        begin = l.value_offset(row);
        end = l.value_offset(row + 1);
        values = l.values().get();
      } else {
        const auto& l = static_cast<const arrow::FixedSizeListArray&>(a);
        begin = l.value_offset(row);
        end = begin + l.value_length(row);
        values = l.values().get();
      }
      out->push_back('[');
      for (int64_t i = begin; i < end; ++i) {
        if (i > begin) out->push_back(',');
        KELT_RETURN_NOT_OK(AppendJson(c, *values, i, out));
      }
      out->push_back(']');
      return {};
    }
    case arrow::Type::DENSE_UNION: {
      const auto& u = static_cast<const arrow::DenseUnionArray&>(a);
      return AppendJson(c, *u.field(u.child_id(row)), u.value_offset(row), out);
    }
    case arrow::Type::SPARSE_UNION: {
      const auto& u = static_cast<const arrow::SparseUnionArray&>(a);
      return AppendJson(c, *u.field(u.child_id(row)), row, out);
    }
    default:
      return Status::TypeError("column '" + c.name + "': Arrow type " +
                               a.type()->ToString() + " has no JSON form");
  }
}

}  // namespace kelt::pg
