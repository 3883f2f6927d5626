// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The DuckDB sink: an embedded database file. Every window is one transaction that
// appends the landed rows and the dead letters and moves the offsets rows forward, so
// the resume point read back after a crash is exactly the one the rows were committed
// with (KAFKA-NOTES.md, "Exactly-once landing").
//
// Rows go in as Arrow, never row by row: each batch is cut into slices of at most
// 2048 rows (DuckDB's vector size), exported through the Arrow C data interface,
// turned into a DuckDB data chunk by `duckdb_data_chunk_from_arrow` (which references
// the Arrow buffers) and handed to an appender on the transaction's connection. These
// are the stable, non-deprecated calls of DuckDB 1.5.6; `duckdb_arrow_scan` and
// `duckdb_arrow_array_scan` are deprecated since 1.0.
#define DUCKDB_API_NO_DEPRECATED
#include <arrow/api.h>
#include <arrow/c/bridge.h>
#include <duckdb.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "kelt/common/duckdb_handles.h"
#include "kelt/sink.h"
#include "kelt/sink/boundary_types.h"
#include "kelt/sink/schema_evolution.h"

namespace kelt {
namespace {

// ---- identifiers --------------------------------------------------------------------

/// Return `name` as a double-quoted SQL identifier (embedded quotes doubled).
std::string QuoteIdentifier(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 2);
  out.push_back('"');
  for (char c : name) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

/// A table name as the user wrote it, split on the first dot into schema and table.
struct TableName {
  std::string display;  // as given, for messages
  std::string schema;   // "main" when unqualified
  std::string table;
  std::string sql;  // "schema"."table"
};

Result<TableName> ParseTableName(std::string_view full, std::string_view what) {
  TableName name;
  name.display = std::string(full);
  size_t dot = full.find('.');
  if (dot == std::string_view::npos) {
    name.schema = "main";
    name.table = std::string(full);
  } else {
    name.schema = std::string(full.substr(0, dot));
    name.table = std::string(full.substr(dot + 1));
  }
  if (name.schema.empty() || name.table.empty()) {
    return Status::Invalid("duckdb sink: " + std::string(what) + " name '" +
                           std::string(full) + "' is not \"table\" or \"schema.table\"");
  }
  name.sql = QuoteIdentifier(name.schema) + "." + QuoteIdentifier(name.table);
  return name;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; };
    return lower(x) == lower(y);
  });
}

// ---- types --------------------------------------------------------------------------

/// The Arrow types DuckDB's Arrow import does not take as they are, rewritten before
/// the batch is handed over: decimal256 (DuckDB's decimals are 128-bit, at most 38
/// digits) becomes decimal128, or its exact text (VARCHAR) beyond 38 digits; the null
/// type becomes an all-NULL VARCHAR (a table column needs a type); a union becomes a
/// struct with one nullable field per branch, as in Parquet files (DuckDB 1.5's Arrow
/// import takes no dense union: "Unsupported Internal Arrow Type: "d" Union").
internal::BoundaryRules DuckDbRules() {
  internal::BoundaryRules rules;
  rules.union_as_struct = true;
  rules.narrow_decimal256 = true;
  rules.null_as_utf8 = true;
  return rules;
}

/// The DuckDB column type of an Arrow landing type (after DuckDbRules()), as
/// `duckdb_columns()` spells it for the flat types (so the same string both creates a
/// table and checks an existing one); nested types quote their field names, and an
/// existing table's type is compared with DuckDB's own spelling of them
/// (CanonicalType). Each is the type DuckDB's Arrow import gives the column, so the
/// appender never casts.
std::optional<std::string> DuckDbTypeOf(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::INT8:
      return "TINYINT";
    case arrow::Type::INT16:
      return "SMALLINT";
    case arrow::Type::INT64:
      return "BIGINT";
    case arrow::Type::INT32:
      return "INTEGER";
    case arrow::Type::UINT8:
      return "UTINYINT";
    case arrow::Type::UINT16:
      return "USMALLINT";
    case arrow::Type::UINT32:
      return "UINTEGER";
    case arrow::Type::UINT64:
      return "UBIGINT";
    case arrow::Type::FLOAT:
      return "FLOAT";
    case arrow::Type::DOUBLE:
      return "DOUBLE";
    case arrow::Type::BOOL:
      return "BOOLEAN";
    case arrow::Type::STRING:
    case arrow::Type::LARGE_STRING:
      return "VARCHAR";
    case arrow::Type::BINARY:
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::FIXED_SIZE_BINARY:
      return "BLOB";
    case arrow::Type::DATE32:
      return "DATE";
    case arrow::Type::DECIMAL128: {
      const auto& d = static_cast<const arrow::Decimal128Type&>(type);
      if (d.scale() < 0 || d.scale() > d.precision()) return std::nullopt;
      return "DECIMAL(" + std::to_string(d.precision()) + "," +
             std::to_string(d.scale()) + ")";
    }
    case arrow::Type::TIME32:
    case arrow::Type::TIME64:
      return "TIME";  // µs; DuckDB's import cuts time64[ns] to µs
    case arrow::Type::TIMESTAMP: {
      // An instant when the Arrow type names a zone (kelt's timestamp[us, UTC]), a
      // wall-clock value otherwise, in the Arrow type's unit (DuckDB has all four).
      const auto& ts = static_cast<const arrow::TimestampType&>(type);
      if (!ts.timezone().empty()) return "TIMESTAMP WITH TIME ZONE";
      switch (ts.unit()) {
        case arrow::TimeUnit::SECOND:
          return "TIMESTAMP_S";
        case arrow::TimeUnit::MILLI:
          return "TIMESTAMP_MS";
        case arrow::TimeUnit::MICRO:
          return "TIMESTAMP";
        case arrow::TimeUnit::NANO:
          return "TIMESTAMP_NS";
      }
      return std::nullopt;
    }
    case arrow::Type::DICTIONARY: {
      // An enum lands as its symbol's text: robust to symbols added later, where an
      // ENUM column would need an ALTER.
      const auto& values = *static_cast<const arrow::DictionaryType&>(type).value_type();
      if (values.id() == arrow::Type::STRING ||
          values.id() == arrow::Type::LARGE_STRING) {
        return "VARCHAR";
      }
      return std::nullopt;
    }
    case arrow::Type::LIST:
    case arrow::Type::LARGE_LIST: {
      auto item = DuckDbTypeOf(*type.field(0)->type());
      if (!item) return std::nullopt;
      return *item + "[]";
    }
    case arrow::Type::MAP: {
      const auto& m = static_cast<const arrow::MapType&>(type);
      auto key = DuckDbTypeOf(*m.key_type());
      auto item = DuckDbTypeOf(*m.item_type());
      if (!key || !item) return std::nullopt;
      return "MAP(" + *key + ", " + *item + ")";
    }
    case arrow::Type::STRUCT:
    case arrow::Type::DENSE_UNION:
    case arrow::Type::SPARSE_UNION: {
      if (type.num_fields() == 0) return std::nullopt;
      std::string out = type.id() == arrow::Type::STRUCT ? "STRUCT(" : "UNION(";
      for (int i = 0; i < type.num_fields(); ++i) {
        auto child = DuckDbTypeOf(*type.field(i)->type());
        if (!child) return std::nullopt;
        if (i > 0) out += ", ";
        out += QuoteIdentifier(type.field(i)->name()) + " " + *child;
      }
      return out + ")";
    }
    default:
      return std::nullopt;
  }
}

// ---- RAII over the C API ------------------------------------------------------------

using namespace internal::duckdb;  // NOLINT: the RAII handles (common/duckdb_handles.h)

void DestroyAppender(duckdb_appender* a) { (void)duckdb_appender_destroy(a); }
using AppenderPtr = Owned<duckdb_appender, DestroyAppender>;

std::string_view VarcharAt(duckdb_vector vector, idx_t row) {
  auto* strings = static_cast<duckdb_string_t*>(duckdb_vector_get_data(vector));
  return {duckdb_string_t_data(&strings[row]), duckdb_string_t_length(strings[row])};
}

bool ValidAt(duckdb_vector vector, idx_t row) {
  uint64_t* validity = duckdb_vector_get_validity(vector);
  return validity == nullptr || duckdb_validity_row_is_valid(validity, row);
}

// ---- the sink -----------------------------------------------------------------------

/// Where a batch's `_kafka_*` coordinates are, when it has them in types the guard
/// can read (topic utf8/binary, partition int32/int64, offset int64).
struct OffsetColumns {
  const arrow::BinaryArray* topic = nullptr;  // StringArray derives from BinaryArray
  const arrow::Array* partition = nullptr;
  const arrow::Int64Array* offset = nullptr;

  static std::optional<OffsetColumns> Find(const arrow::RecordBatch& batch) {
    OffsetColumns c;
    auto topic = batch.GetColumnByName("_kafka_topic");
    auto partition = batch.GetColumnByName("_kafka_partition");
    auto offset = batch.GetColumnByName("_kafka_offset");
    if (!topic || !partition || !offset) return std::nullopt;
    if (topic->type_id() != arrow::Type::STRING &&
        topic->type_id() != arrow::Type::BINARY) {
      return std::nullopt;
    }
    if (partition->type_id() != arrow::Type::INT64 &&
        partition->type_id() != arrow::Type::INT32) {
      return std::nullopt;
    }
    if (offset->type_id() != arrow::Type::INT64) return std::nullopt;
    c.topic = static_cast<const arrow::BinaryArray*>(topic.get());
    c.partition = partition.get();
    c.offset = static_cast<const arrow::Int64Array*>(offset.get());
    c.keep_alive = {std::move(topic), std::move(partition), std::move(offset)};
    return c;
  }

  std::optional<int64_t> PartitionAt(int64_t row) const {
    if (partition->IsNull(row)) return std::nullopt;
    if (partition->type_id() == arrow::Type::INT32) {
      return static_cast<const arrow::Int32Array*>(partition)->Value(row);
    }
    return static_cast<const arrow::Int64Array*>(partition)->Value(row);
  }

  std::vector<std::shared_ptr<arrow::Array>> keep_alive;
};

/// Same column names and types (nullability and metadata aside): the batch converts
/// with the schema given to Open().
bool SameColumns(const arrow::Schema& a, const arrow::Schema& b) {
  if (a.num_fields() != b.num_fields()) return false;
  for (int i = 0; i < a.num_fields(); ++i) {
    if (a.field(i)->name() != b.field(i)->name() ||
        !a.field(i)->type()->Equals(*b.field(i)->type())) {
      return false;
    }
  }
  return true;
}

/// A run of rows [start, start + length) of a batch.
struct RowRun {
  int64_t start;
  int64_t length;
};

/// One destination table with what appending to it needs.
struct TargetTable {
  TableName name;
  std::shared_ptr<arrow::Schema> schema;  // as given to Open()
  std::shared_ptr<arrow::Schema> stored;  // after DuckDbRules(): what DuckDB is handed
  ConvertedSchemaPtr converted;
};

class DuckDbSink final : public Sink {
 public:
  DuckDbSink(DuckDbSinkOptions options, TableName landing, TableName dead_letter,
             TableName offsets)
      : options_(std::move(options)),
        offsets_(std::move(offsets)),
        name_("duckdb:" + options_.path + "#" + options_.table) {
    landing_.name = std::move(landing);
    dead_letter_.name = std::move(dead_letter);
  }

  ~DuckDbSink() override { Release(); }

  std::string name() const override { return name_; }

  Status Open(const std::shared_ptr<arrow::Schema>& landing,
              const std::shared_ptr<arrow::Schema>& dead_letter) override {
    if (con_) return Status::Invalid(name_ + ": already open");
    if (!landing || !dead_letter) {
      return Status::Invalid(name_ + ": Open needs the landing and dead-letter schemas");
    }
    Status st = OpenDatabase();
    if (st.ok()) st = Exec("BEGIN TRANSACTION", landing_.name);
    if (st.ok()) st = EnsureTable(landing_, landing);
    if (st.ok()) st = EnsureTable(dead_letter_, dead_letter);
    if (st.ok()) st = EnsureOffsetsTable();
    if (st.ok()) st = Exec("COMMIT", landing_.name);
    if (!st.ok()) {
      Release();
      return st;
    }
    return Status::OK();
  }

  Result<OffsetMap> Resume(const std::vector<TopicPartition>& partitions) override {
    if (!con_) return Status::Invalid(name_ + ": not open");
    KELT_ASSIGN_OR_RAISE(OffsetMap stored, ReadOffsets());
    OffsetMap out;
    for (const auto& tp : partitions) {
      auto it = stored.find(tp);
      if (it != stored.end()) out.emplace(tp, it->second);
    }
    return out;
  }

  Result<OffsetMap> Write(const SinkWindow& window) override {
    if (!con_) return Status::Invalid(name_ + ": not open");
    KELT_RETURN_NOT_OK(Exec("BEGIN TRANSACTION", landing_.name));
    auto result = WriteInTransaction(window);
    if (result.ok()) {
      Status st = Exec("COMMIT", landing_.name);
      if (st.ok()) return result;
      result = st;
    }
    // A failed COMMIT has already rolled back; ROLLBACK then reports "no transaction".
    (void)Exec("ROLLBACK", landing_.name);
    return result;
  }

  /// One transaction adds the new columns (nullable, so landed rows read null); a
  /// column that is already there (another sink evolved the table first) is taken when
  /// its type is the one the new schema needs. The appender names its columns, so the
  /// table's column order does not matter.
  Status Evolve(const std::shared_ptr<arrow::Schema>& landing) override {
    if (!con_) return Status::Invalid(name_ + ": not open");
    KELT_RETURN_NOT_OK(
        internal::AddedColumns(*landing_.schema, *landing, name_).status());
    TargetTable next;
    next.name = landing_.name;
    next.schema = landing;
    next.stored = internal::BoundarySchema(landing, DuckDbRules());
    KELT_RETURN_NOT_OK(Exec("BEGIN TRANSACTION", next.name));
    Status st = EnsureColumns(next.name, *next.stored, "", /*add_missing=*/true);
    if (st.ok()) st = Exec("COMMIT", next.name);
    if (!st.ok()) {
      (void)Exec("ROLLBACK", next.name);  // a failed COMMIT has rolled back already
      return st;
    }
    KELT_RETURN_NOT_OK(ConvertSchema(next));
    landing_ = std::move(next);
    return Status::OK();
  }

  /// Every Write is durable at its COMMIT (DuckDB's WAL), so there is nothing to flush.
  Result<OffsetMap> Flush() override { return OffsetMap{}; }

  /// Nothing is held outside a committed transaction.
  Status Drop(const std::vector<TopicPartition>& partitions) override {
    return Status::OK();
  }

  Status Close() override {
    Release();
    return Status::OK();
  }

 private:
  void Release() {
    landing_.converted.reset();
    dead_letter_.converted.reset();
    con_.reset();
    db_.reset();
  }

  Status Error(const TableName& table, std::string_view message) const {
    return Status::IOError(name_ + ": table " + table.display + ": " +
                           std::string(message));
  }

  Status OpenDatabase() {
    duckdb_config raw_config = nullptr;
    if (duckdb_create_config(&raw_config) != DuckDBSuccess) {
      return Status::IOError(name_ + ": cannot create a DuckDB config");
    }
    ConfigPtr config(raw_config);
    // The library is silent and offline: never fetch an extension behind the user's
    // back (the ones kelt needs are linked in).
    (void)duckdb_set_config(raw_config, "autoinstall_known_extensions", "false");
    (void)duckdb_set_config(raw_config, "autoload_known_extensions", "false");
    duckdb_database db = nullptr;
    char* error = nullptr;
    if (duckdb_open_ext(options_.path.c_str(), &db, raw_config, &error) !=
        DuckDBSuccess) {
      std::string message = error ? error : "unknown error";
      duckdb_free(error);
      return Status::IOError(name_ + ": cannot open " + options_.path + ": " + message);
    }
    db_.reset(db);
    duckdb_connection con = nullptr;
    if (duckdb_connect(db, &con) != DuckDBSuccess) {
      db_.reset();
      return Status::IOError(name_ + ": cannot connect to " + options_.path);
    }
    con_.reset(con);
    return Status::OK();
  }

  Status Exec(const std::string& sql, const TableName& table) {
    QueryResult result;
    if (duckdb_query(con_.get(), sql.c_str(), result.out()) != DuckDBSuccess) {
      return Error(table, duckdb_result_error(&result.get()));
    }
    return Status::OK();
  }

  Result<PreparedPtr> Prepare(const std::string& sql, const TableName& table) {
    duckdb_prepared_statement raw = nullptr;
    duckdb_state state = duckdb_prepare(con_.get(), sql.c_str(), &raw);
    PreparedPtr stmt(raw);
    if (state != DuckDBSuccess) {
      const char* error = raw ? duckdb_prepare_error(raw) : nullptr;
      return Error(table, error ? error : "cannot prepare a statement");
    }
    return stmt;
  }

  Status Execute(duckdb_prepared_statement stmt, const TableName& table,
                 QueryResult* result) {
    if (duckdb_execute_prepared(stmt, result->out()) != DuckDBSuccess) {
      return Error(table, duckdb_result_error(&result->get()));
    }
    return Status::OK();
  }

  Status BindVarchar(duckdb_prepared_statement stmt, idx_t index, std::string_view value,
                     const TableName& table) {
    if (duckdb_bind_varchar_length(stmt, index, value.data(), value.size()) !=
        DuckDBSuccess) {
      return Error(table, "cannot bind a parameter");
    }
    return Status::OK();
  }

  /// The columns of an existing table, name → type; empty when there is no table.
  Result<std::vector<std::pair<std::string, std::string>>> ExistingColumns(
      const TableName& table) {
    KELT_ASSIGN_OR_RAISE(
        PreparedPtr stmt,
        Prepare("SELECT column_name, data_type FROM duckdb_columns() WHERE "
                "database_name = current_database() AND schema_name = $1 AND "
                "table_name = $2 ORDER BY column_index",
                table));
    KELT_RETURN_NOT_OK(BindVarchar(stmt.get(), 1, table.schema, table));
    KELT_RETURN_NOT_OK(BindVarchar(stmt.get(), 2, table.table, table));
    QueryResult result;
    KELT_RETURN_NOT_OK(Execute(stmt.get(), table, &result));
    std::vector<std::pair<std::string, std::string>> columns;
    while (ChunkPtr chunk{duckdb_fetch_chunk(result.get())}) {
      idx_t n = duckdb_data_chunk_get_size(chunk.get());
      if (n == 0) break;
      duckdb_vector names = duckdb_data_chunk_get_vector(chunk.get(), 0);
      duckdb_vector types = duckdb_data_chunk_get_vector(chunk.get(), 1);
      for (idx_t i = 0; i < n; ++i) {
        columns.emplace_back(std::string(VarcharAt(names, i)),
                             std::string(VarcharAt(types, i)));
      }
    }
    return columns;
  }

  /// DuckDB's own spelling of the type `sql` (what duckdb_columns() reports).
  Result<std::string> CanonicalType(const std::string& sql, const TableName& table) {
    QueryResult result;
    std::string query = "SELECT typeof(CAST(NULL AS " + sql + "))";
    if (duckdb_query(con_.get(), query.c_str(), result.out()) != DuckDBSuccess) {
      return Error(table, duckdb_result_error(&result.get()));
    }
    ChunkPtr chunk{duckdb_fetch_chunk(result.get())};
    if (!chunk || duckdb_data_chunk_get_size(chunk.get()) == 0) {
      return Error(table, "cannot read the spelling of type " + sql);
    }
    return std::string(VarcharAt(duckdb_data_chunk_get_vector(chunk.get(), 0), 0));
  }

  /// Create `table` from `schema` when missing, else check that every column of
  /// `schema` exists with the same type (extra table columns are left alone: the
  /// appender fills them with their defaults); `add_missing` adds a missing column
  /// (ALTER TABLE … ADD COLUMN, for Evolve) instead of failing.
  Status EnsureColumns(const TableName& table, const arrow::Schema& schema,
                       const std::string& extra_ddl, bool add_missing = false) {
    std::vector<std::string> wanted;
    for (const auto& field : schema.fields()) {
      auto type = DuckDbTypeOf(*field->type());
      if (!type) {
        return Status::Invalid(name_ + ": table " + table.display + ": column " +
                               field->name() + " has Arrow type " +
                               field->type()->ToString() +
                               ", which has no DuckDB mapping");
      }
      wanted.push_back(std::move(*type));
    }
    KELT_ASSIGN_OR_RAISE(auto existing, ExistingColumns(table));
    if (existing.empty()) {
      if (table.schema != "main") {
        KELT_RETURN_NOT_OK(
            Exec("CREATE SCHEMA IF NOT EXISTS " + QuoteIdentifier(table.schema), table));
      }
      std::string ddl = "CREATE TABLE " + table.sql + " (";
      for (int i = 0; i < schema.num_fields(); ++i) {
        if (i > 0) ddl += ", ";
        ddl += QuoteIdentifier(schema.field(i)->name()) + " " + wanted[i];
      }
      ddl += extra_ddl + ")";
      return Exec(ddl, table);
    }
    for (int i = 0; i < schema.num_fields(); ++i) {
      const std::string& column = schema.field(i)->name();
      auto it = std::find_if(existing.begin(), existing.end(), [&](const auto& c) {
        return EqualsIgnoreCase(c.first, column);
      });
      if (it == existing.end() && add_missing) {
        KELT_RETURN_NOT_OK(Exec("ALTER TABLE " + table.sql + " ADD COLUMN " +
                                    QuoteIdentifier(column) + " " + wanted[i],
                                table));
        continue;
      }
      if (it == existing.end()) {
        return Status::Invalid(name_ + ": table " + table.display +
                               " exists without column " + column + " (" + wanted[i] +
                               ")");
      }
      if (it->second != wanted[i]) {
        // Nested types: DuckDB quotes a field name only where it must.
        KELT_ASSIGN_OR_RAISE(std::string canonical, CanonicalType(wanted[i], table));
        if (it->second == canonical) continue;
        return Status::Invalid(name_ + ": table " + table.display + " column " + column +
                               " is " + it->second + ", the landing schema needs " +
                               wanted[i]);
      }
    }
    return Status::OK();
  }

  Status EnsureTable(TargetTable& target, const std::shared_ptr<arrow::Schema>& schema) {
    target.stored = internal::BoundarySchema(schema, DuckDbRules());
    // A landing that grew since the table was made (a new version of a registry
    // subject, a field added to the schema file) adds its columns, as Evolve does.
    KELT_RETURN_NOT_OK(
        EnsureColumns(target.name, *target.stored, "", /*add_missing=*/true));
    target.schema = schema;
    if (schema->GetFieldIndex("_kafka_topic") >= 0 &&
        schema->GetFieldIndex("_kafka_partition") >= 0 &&
        schema->GetFieldIndex("_kafka_offset") >= 0) {
      // The backstop: a record can be stored once. An ART index costs about as much
      // per appended row as the append itself (README), so it is an option.
      if (options_.unique_offsets_index) {
        std::string index = QuoteIdentifier(target.name.table + "_kafka_offset_key");
        KELT_RETURN_NOT_OK(
            Exec("CREATE UNIQUE INDEX IF NOT EXISTS " + index + " ON " + target.name.sql +
                     " (\"_kafka_topic\", \"_kafka_partition\", \"_kafka_offset\")",
                 target.name));
      }
    }
    return ConvertSchema(target);
  }

  /// DuckDB's conversion of `target.stored`, which each appended chunk is made with.
  Status ConvertSchema(TargetTable& target) {
    ArrowSchema exported;
    auto arrow_status = arrow::ExportSchema(*target.stored, &exported);
    if (!arrow_status.ok()) {
      return Status::Internal(name_ + ": cannot export the schema of table " +
                              target.name.display + ": " + arrow_status.ToString());
    }
    duckdb_arrow_converted_schema converted = nullptr;
    ErrorPtr error(duckdb_schema_from_arrow(con_.get(), &exported, &converted));
    if (exported.release) exported.release(&exported);
    target.converted.reset(converted);
    if (error) return Error(target.name, duckdb_error_data_message(error.get()));
    return Status::OK();
  }

  Status EnsureOffsetsTable() {
    auto schema = arrow::schema({arrow::field("group_id", arrow::utf8()),
                                 arrow::field("topic", arrow::utf8()),
                                 arrow::field("partition", arrow::int32()),
                                 arrow::field("next_offset", arrow::int64())});
    return EnsureColumns(offsets_, *schema,
                         ", PRIMARY KEY (\"group_id\", \"topic\", \"partition\")");
  }

  /// The group's stored next offsets (in the current transaction, if one is open).
  Result<OffsetMap> ReadOffsets() {
    KELT_ASSIGN_OR_RAISE(
        PreparedPtr stmt,
        Prepare("SELECT CAST(\"topic\" AS VARCHAR), CAST(\"partition\" AS INTEGER), "
                "CAST(\"next_offset\" AS BIGINT) FROM " +
                    offsets_.sql + " WHERE \"group_id\" = $1",
                offsets_));
    KELT_RETURN_NOT_OK(BindVarchar(stmt.get(), 1, options_.group_id, offsets_));
    QueryResult result;
    KELT_RETURN_NOT_OK(Execute(stmt.get(), offsets_, &result));
    OffsetMap out;
    while (ChunkPtr chunk{duckdb_fetch_chunk(result.get())}) {
      idx_t n = duckdb_data_chunk_get_size(chunk.get());
      if (n == 0) break;
      duckdb_vector topics = duckdb_data_chunk_get_vector(chunk.get(), 0);
      duckdb_vector partitions = duckdb_data_chunk_get_vector(chunk.get(), 1);
      duckdb_vector offsets = duckdb_data_chunk_get_vector(chunk.get(), 2);
      auto* p = static_cast<const int32_t*>(duckdb_vector_get_data(partitions));
      auto* o = static_cast<const int64_t*>(duckdb_vector_get_data(offsets));
      for (idx_t i = 0; i < n; ++i) {
        if (!ValidAt(topics, i) || !ValidAt(partitions, i) || !ValidAt(offsets, i)) {
          continue;
        }
        out[TopicPartition{std::string(VarcharAt(topics, i)), p[i]}] = o[i];
      }
    }
    return out;
  }

  /// The rows of `batch` to store: all of them unless a partition's stored next offset
  /// lies past some of its rows (a replay of an already committed range), in which
  /// case those rows are left out. `guard` maps the partitions concerned to their
  /// stored next offset.
  Result<std::vector<RowRun>> RowsToStore(const arrow::RecordBatch& batch,
                                          const OffsetMap& guard,
                                          const TableName& table) {
    const int64_t rows = batch.num_rows();
    if (rows == 0) return std::vector<RowRun>{};
    if (guard.empty()) return std::vector<RowRun>{{0, rows}};
    auto columns = OffsetColumns::Find(batch);
    if (!columns) {
      return Status::Invalid(
          name_ + ": table " + table.display +
          ": the window overlaps offsets already stored and its batch has no "
          "_kafka_topic/_kafka_partition/_kafka_offset columns (utf8, int64, int64) to "
          "tell the stored rows apart; refusing to write them twice");
    }
    std::vector<RowRun> runs;
    // Rows come in runs of one partition: remember the last lookup.
    std::string_view last_topic;
    std::optional<int64_t> last_partition;
    std::optional<int64_t> threshold;
    bool have_last = false;
    for (int64_t row = 0; row < rows; ++row) {
      bool keep = true;
      auto partition = columns->PartitionAt(row);
      if (!columns->topic->IsNull(row) && partition && !columns->offset->IsNull(row)) {
        std::string_view topic = columns->topic->GetView(row);
        if (!have_last || topic != last_topic || partition != last_partition) {
          auto it = guard.find(
              TopicPartition{std::string(topic), static_cast<int32_t>(*partition)});
          threshold = it == guard.end() ? std::nullopt : std::optional(it->second);
          last_topic = topic;
          last_partition = partition;
          have_last = true;
        }
        keep = !threshold || columns->offset->Value(row) >= *threshold;
      }
      if (!keep) continue;
      if (!runs.empty() && runs.back().start + runs.back().length == row) {
        ++runs.back().length;
      } else {
        runs.push_back({row, 1});
      }
    }
    return runs;
  }

  /// Append `runs` of `batch` to `target` through a DuckDB appender, one data chunk of
  /// at most 2048 rows (STANDARD_VECTOR_SIZE, the most duckdb_data_chunk_from_arrow
  /// takes) at a time.
  Status Append(TargetTable& target, const arrow::RecordBatch& batch,
                const std::vector<RowRun>& runs) {
    if (runs.empty()) return Status::OK();
    if (!SameColumns(*batch.schema(), *target.schema)) {
      return Status::Invalid(name_ + ": table " + target.name.display +
                             ": batch schema " + batch.schema()->ToString() +
                             " is not the one given to Open()");
    }
    duckdb_appender raw = nullptr;
    duckdb_state state = duckdb_appender_create_ext(
        con_.get(), nullptr, target.name.schema.c_str(), target.name.table.c_str(), &raw);
    AppenderPtr appender(raw);
    auto appender_error = [&]() {
      ErrorPtr error(duckdb_appender_error_data(appender.get()));
      return Error(target.name,
                   error ? duckdb_error_data_message(error.get()) : "appender failed");
    };
    if (state != DuckDBSuccess) return appender_error();
    // Append by name, so a table with its columns in another order (or with extra
    // columns, filled with their defaults) takes the batch.
    for (const auto& field : target.schema->fields()) {
      if (duckdb_appender_add_column(appender.get(), field->name().c_str()) !=
          DuckDBSuccess) {
        return appender_error();
      }
    }
    // The rows as DuckDB takes them (DuckDbRules()), rewritten once per batch.
    const arrow::RecordBatch* rows = &batch;
    std::shared_ptr<arrow::RecordBatch> rewritten;
    if (target.stored != target.schema) {
      arrow::ArrayVector columns;
      for (int c = 0; c < batch.num_columns(); ++c) {
        auto column = internal::ToBoundary(batch.column(c), DuckDbRules(),
                                           batch.schema()->field(c)->name());
        if (!column.ok()) {
          return column.status().WithPrefix(name_ + ": table " + target.name.display +
                                            ": ");
        }
        columns.push_back(std::move(*column));
      }
      rewritten =
          arrow::RecordBatch::Make(target.stored, batch.num_rows(), std::move(columns));
      rows = rewritten.get();
    }
    constexpr int64_t kChunkRows = 2048;
    for (const RowRun& run : runs) {
      for (int64_t start = run.start; start < run.start + run.length;
           start += kChunkRows) {
        int64_t length = std::min(kChunkRows, run.start + run.length - start);
        std::shared_ptr<arrow::RecordBatch> slice = rows->Slice(start, length);
        ArrowArray exported;
        auto arrow_status = arrow::ExportRecordBatch(*slice, &exported);
        if (!arrow_status.ok()) {
          return Status::Internal(name_ + ": table " + target.name.display +
                                  ": cannot export a batch: " + arrow_status.ToString());
        }
        duckdb_data_chunk raw_chunk = nullptr;
        ErrorPtr error(duckdb_data_chunk_from_arrow(con_.get(), &exported,
                                                    target.converted.get(), &raw_chunk));
        ChunkPtr chunk(raw_chunk);
        // On success DuckDB has taken the array (its release is cleared); on failure
        // it may not have.
        if (exported.release) exported.release(&exported);
        if (error) return Error(target.name, duckdb_error_data_message(error.get()));
        if (duckdb_append_data_chunk(appender.get(), chunk.get()) != DuckDBSuccess) {
          return appender_error();
        }
      }
    }
    if (duckdb_appender_close(appender.get()) != DuckDBSuccess) return appender_error();
    return Status::OK();
  }

  /// Update (existing rows) or insert the group's offsets rows, each kind in one
  /// statement. Measured for 16 partitions per window: one UPDATE … FROM (VALUES …)
  /// 7 ms, 16 single-row UPDATEs 25 ms, 16 INSERT … ON CONFLICT DO UPDATE 145 ms.
  Status StoreOffsets(const std::vector<std::pair<TopicPartition, int64_t>>& rows,
                      bool update) {
    if (rows.empty()) return Status::OK();
    std::string values;
    for (size_t i = 0; i < rows.size(); ++i) {
      size_t p = 2 + 3 * i;  // $1 is the group
      values += (i > 0 ? ", ($" : "($") + std::to_string(p) + "::VARCHAR, $" +
                std::to_string(p + 1) + "::INTEGER, $" + std::to_string(p + 2) +
                "::BIGINT)";
    }
    std::string sql =
        update ? "UPDATE " + offsets_.sql +
                     " AS o SET \"next_offset\" = v.n FROM (VALUES " + values +
                     ") AS v(t, p, n) WHERE o.\"group_id\" = $1 AND o.\"topic\" = v.t "
                     "AND o.\"partition\" = v.p"
               : "INSERT INTO " + offsets_.sql +
                     " (\"group_id\", \"topic\", \"partition\", \"next_offset\") "
                     "SELECT $1, t, p, n FROM (VALUES " +
                     values + ") AS v(t, p, n)";
    KELT_ASSIGN_OR_RAISE(PreparedPtr stmt, Prepare(sql, offsets_));
    KELT_RETURN_NOT_OK(BindVarchar(stmt.get(), 1, options_.group_id, offsets_));
    for (size_t i = 0; i < rows.size(); ++i) {
      idx_t p = 2 + 3 * i;
      KELT_RETURN_NOT_OK(BindVarchar(stmt.get(), p, rows[i].first.topic, offsets_));
      if (duckdb_bind_int32(stmt.get(), p + 1, rows[i].first.partition) !=
              DuckDBSuccess ||
          duckdb_bind_int64(stmt.get(), p + 2, rows[i].second) != DuckDBSuccess) {
        return Error(offsets_, "cannot bind a parameter");
      }
    }
    QueryResult result;
    return Execute(stmt.get(), offsets_, &result);
  }

  Result<OffsetMap> WriteInTransaction(const SinkWindow& window) {
    KELT_ASSIGN_OR_RAISE(OffsetMap stored, ReadOffsets());
    // The durable next offset of each partition after this window, and the partitions
    // whose stored next offset lies past the window's first offset (the guard).
    OffsetMap next;
    OffsetMap guard;
    bool all_stored = true;  // every span entirely below its stored next offset
    for (const PartitionSpan& span : window.spans) {
      if (span.last_offset < span.first_offset) continue;
      auto it = stored.find(span.tp);
      int64_t before = it == stored.end() ? -1 : it->second;
      if (before > span.first_offset) guard[span.tp] = before;
      if (before <= span.last_offset) all_stored = false;
      int64_t after = std::max(before, span.last_offset + 1);
      auto [pos, inserted] = next.emplace(span.tp, after);
      if (!inserted) pos->second = std::max(pos->second, after);
    }
    if (window.batch) {
      std::vector<RowRun> runs;
      if (!guard.empty() && all_stored && !OffsetColumns::Find(*window.batch)) {
        // Nothing new, and no column to tell rows apart: the whole batch was stored.
      } else {
        KELT_ASSIGN_OR_RAISE(runs, RowsToStore(*window.batch, guard, landing_.name));
      }
      KELT_RETURN_NOT_OK(Append(landing_, *window.batch, runs));
    }
    if (window.dead_letters && window.dead_letters->num_rows() > 0) {
      KELT_ASSIGN_OR_RAISE(auto runs,
                           RowsToStore(*window.dead_letters, guard, dead_letter_.name));
      KELT_RETURN_NOT_OK(Append(dead_letter_, *window.dead_letters, runs));
    }
    std::vector<std::pair<TopicPartition, int64_t>> updates;
    std::vector<std::pair<TopicPartition, int64_t>> inserts;
    for (const auto& [tp, offset] : next) {
      auto it = stored.find(tp);
      if (it == stored.end()) {
        inserts.emplace_back(tp, offset);
      } else if (it->second < offset) {
        updates.emplace_back(tp, offset);
      }
    }
    KELT_RETURN_NOT_OK(StoreOffsets(updates, /*update=*/true));
    KELT_RETURN_NOT_OK(StoreOffsets(inserts, /*update=*/false));
    return next;
  }

  DuckDbSinkOptions options_;
  TargetTable landing_;
  TargetTable dead_letter_;
  TableName offsets_;
  std::string name_;
  DatabasePtr db_;
  ConnectionPtr con_;
};

}  // namespace

Result<std::unique_ptr<Sink>> MakeDuckDbSink(DuckDbSinkOptions options) {
  if (options.path.empty()) return Status::Invalid("duckdb sink: path is required");
  if (options.group_id.empty()) {
    return Status::Invalid(
        "duckdb sink: group_id is required (the offsets are keyed by it)");
  }
  if (options.dead_letter_table.empty()) {
    options.dead_letter_table = options.table + "_dead_letter";
  }
  KELT_ASSIGN_OR_RAISE(TableName landing, ParseTableName(options.table, "table"));
  KELT_ASSIGN_OR_RAISE(TableName dead_letter,
                       ParseTableName(options.dead_letter_table, "dead_letter_table"));
  KELT_ASSIGN_OR_RAISE(TableName offsets,
                       ParseTableName(options.offsets_table, "offsets_table"));
  return std::unique_ptr<Sink>(new DuckDbSink(std::move(options), std::move(landing),
                                              std::move(dead_letter),
                                              std::move(offsets)));
}

}  // namespace kelt
