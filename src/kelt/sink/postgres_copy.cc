// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/sink/postgres_copy.h"

#include <arrow/api.h>
#include <libpq-fe.h>

#include <bit>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#include "kelt/common/text.h"

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
    default:
      return Status::Invalid("column '" + std::string(column) + "': Arrow type " +
                             type.ToString() + " has no PostgreSQL mapping");
  }
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
    if (c.array->type_id() == arrow::Type::TIMESTAMP) {
      switch (static_cast<const arrow::TimestampType&>(*c.array->type()).unit()) {
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
    if (a.IsNull(row)) {
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
        std::string_view v;
        switch (a.type_id()) {
          case arrow::Type::STRING:
          case arrow::Type::BINARY:
            v = static_cast<const arrow::BinaryArray&>(a).GetView(row);
            break;
          default:  // LARGE_STRING, LARGE_BINARY
            v = static_cast<const arrow::LargeBinaryArray&>(a).GetView(row);
            break;
        }
        st = AppendText(c, v, out);
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

}  // namespace kelt::pg
