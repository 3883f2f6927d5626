// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The parts of the PostgreSQL sink that need no server: the Arrow → PostgreSQL type
// mapping, table-name parsing, conninfo parsing and secret redaction, and the binary
// COPY encoder. Internal header (tested by postgres_copy_test.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kelt/status.h"

namespace arrow {
class Array;
class DataType;
class RecordBatch;
class Schema;
}  // namespace arrow

struct pg_conn;  // libpq's PGconn

namespace kelt::pg {

/// The PostgreSQL column types the sink writes (binary COPY formats of each).
enum class PgType : uint8_t {
  kSmallInt,
  kInteger,
  kBigInt,
  kReal,
  kDoublePrecision,
  kBoolean,
  kText,
  kBytea,
  kTimestampTz,
  kTimestamp,
  kDate,
  kNumeric,  ///< decimal128/256 as NUMERIC(p,s), binary numeric format
  kTime,     ///< time32/time64 as TIME (µs; ns truncated)
  kJsonb,    ///< struct, list, map and union values as one JSON document each
};

/// Return the type of a landing column: Int64→BIGINT, Float64→DOUBLE PRECISION,
/// Bool→BOOLEAN, Utf8→TEXT (RDP_COMPATIBILITY.md §6), timestamp with a time
/// zone→TIMESTAMPTZ (any unit; stored in µs), without→TIMESTAMP, date32→DATE,
/// binary→BYTEA, and the narrower Arrow integers and float32; for decoded Avro and
/// Protobuf payloads also decimal128/256→NUMERIC, time32/time64→TIME,
/// fixed_size_binary→BYTEA, dictionary<int, utf8> (enums)→TEXT, the null type→TEXT
/// (always NULL), and struct, list, map, dense/sparse union→JSONB (sink/README.md
/// says why jsonb and not composite types, and how each value is written in JSON).
/// Other Arrow types, also when nested, are kInvalid naming `column`.
Result<PgType> PgTypeOf(const arrow::DataType& type, std::string_view column);

/// The type as CREATE TABLE spells it ("BIGINT").
std::string_view PgTypeSql(PgType type);

/// The column type of `type` (mapped to `pg`) as CREATE TABLE spells it: PgTypeSql,
/// except a decimal, which keeps its precision and scale ("NUMERIC(10,2)").
std::string PgColumnSql(const arrow::DataType& type, PgType pg);

/// True when an existing column of type `format_type` (pg_catalog.format_type output,
/// e.g. "bigint", "character varying(20)") takes this type's binary COPY format.
bool PgTypeAccepts(PgType type, std::string_view format_type);

/// Longest identifier PostgreSQL keeps (NAMEDATALEN - 1 bytes); longer ones it would
/// silently truncate, so the sink rejects them.
inline constexpr size_t kMaxIdentifierBytes = 63;

/// Check one identifier: non-empty, at most 63 bytes, valid UTF-8, no NUL byte.
/// Errors are kInvalid and name `what` ("table", "column").
Status CheckIdentifier(std::string_view id, std::string_view what);

/// A table name split on its first dot: "schema.table" or "table" (empty schema: the
/// search_path decides).
struct TableName {
  std::string schema;
  std::string table;
  bool operator==(const TableName&) const = default;
};
Result<TableName> ParseTableName(std::string_view text, std::string_view what);

/// Return `base` + `suffix` cut to 63 bytes: a name that would be longer keeps a prefix
/// of `base` (whole UTF-8 characters) and an 8-hex-digit hash of the full name instead.
std::string DerivedName(std::string_view base, std::string_view suffix);

/// What the sink shows of a connection string: never the password.
struct ConnInfo {
  std::string
      host;  ///< as given (maybe a list or a socket directory); else PGHOST/localhost
  std::string port;  ///< else PGPORT/5432
  std::string dbname;
  std::string user;
  std::string password;  ///< only to redact it from messages
};

/// Parse a libpq connection string or URI (PQconninfoParse). A parse error is kInvalid;
/// libpq quotes pieces of the string in its messages, so every quoted piece that
/// occurs in `conninfo` is replaced by "***".
Result<ConnInfo> ParseConnInfo(std::string_view conninfo);

/// Connect (PQconnectdbParams; the caller checks PQstatus and PQfinish-es it) with
/// `conninfo`, UTF-8 client encoding and application name `kelt` unless the conninfo
/// names one, and bounded waits on a network that stops answering, which the conninfo's
/// own settings override: connect_timeout 30 s, TCP keepalives after 30 s idle (every
/// 10 s, 3 probes) and tcp_user_timeout 60 s. Without them a sink whose server went
/// silent waited in the kernel (unacknowledged data: about 15 min of retransmissions;
/// a reply lost while kelt only waits for it: the kernel's keepalive time, 2 h).
pg_conn* Connect(const std::string& conninfo);

/// Return `message` with each occurrence of `secret` replaced by "***" (empty secret:
/// unchanged).
std::string Redact(std::string_view message, std::string_view secret);

/// What to do with a NUL byte in a text value (PostgreSQL TEXT cannot hold one).
enum class NulPolicy : uint8_t { kReject, kReplace };

/// Encodes rows of a record batch as PostgreSQL binary COPY tuples. Type dispatch is
/// done once in Make(); AppendRow is the per-row loop.
class BinaryCopyEncoder {
 public:
  /// `columns`: the PostgreSQL type of each batch column (from PgTypeOf). Fails when the
  /// batch's types do not match. The encoder reads `batch`'s arrays: keep it alive.
  static Result<BinaryCopyEncoder> Make(const arrow::RecordBatch& batch,
                                        std::vector<PgType> columns, NulPolicy nul);

  /// The 19-byte file header ("PGCOPY\n\377\r\n\0", flags, extension length).
  static void AppendHeader(std::string* out);
  /// The file trailer (a field count of -1).
  static void AppendTrailer(std::string* out);

  /// Append tuple `row`. Errors (kTypeError, naming the column): a NUL byte in text
  /// under NulPolicy::kReject, text that is not UTF-8, a timestamp that does not fit
  /// PostgreSQL's µs range. On error `out` is left as it was.
  Status AppendRow(int64_t row, std::string* out) const;

 private:
  struct Column {
    const arrow::Array* array = nullptr;
    std::string name;
    PgType type = PgType::kText;
    int64_t micros_per_unit = 1;  // timestamps, times: s=1e6, ms=1e3, us=1; ns divides
    bool nanos = false;
  };
  Status AppendJson(const Column& c, const arrow::Array& a, int64_t row,
                    std::string* out) const;
  Status AppendJsonText(const Column& c, std::string_view v, std::string* out) const;
  BinaryCopyEncoder(std::vector<Column> columns, NulPolicy nul)
      : columns_(std::move(columns)), nul_(nul) {}
  Status AppendText(const Column& c, std::string_view v, std::string* out) const;
  std::vector<Column> columns_;
  NulPolicy nul_;
};

}  // namespace kelt::pg
