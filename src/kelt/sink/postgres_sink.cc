// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The PostgreSQL sink: each window lands in one transaction that COPYs the rows (binary
// format) and moves the group's offsets rows, guarded so that a consumer which lost a
// partition cannot land its records twice (KAFKA-NOTES.md, "Exactly-once landing").
#include <arrow/api.h>
#include <libpq-fe.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kelt/log.h"
#include "kelt/sink.h"
#include "kelt/sink/postgres_copy.h"
#include "kelt/sink/postgres_load.h"
#include "kelt/sink/schema_evolution.h"

namespace kelt {
namespace {

using pg::PgType;
using pg::TableName;

struct ConnDeleter {
  void operator()(PGconn* c) const { PQfinish(c); }
};
struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using ConnPtr = std::unique_ptr<PGconn, ConnDeleter>;
using ResultPtr = std::unique_ptr<PGresult, ResultDeleter>;

constexpr std::string_view kComponent = "postgresql";
// COPY data goes to libpq in pieces of about this size.
constexpr size_t kCopyChunkBytes = 1 << 20;

// Server notices ("relation ... already exists, skipping") go to the log hook: the
// library never prints (STYLE rule 9).
void ReceiveNotice(void*, const PGresult* result) {
  const char* severity = PQresultErrorField(result, PG_DIAG_SEVERITY_NONLOCALIZED);
  const char* message = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
  std::string_view s = severity != nullptr ? severity : "";
  Log(s == "WARNING" ? LogLevel::kWarning : LogLevel::kDebug, kComponent,
      message != nullptr ? message : "");
}

// SQLSTATE classes worth a retry: connection exceptions, serialization failures and
// deadlocks, insufficient resources, operator intervention (shutdown).
bool RetriableSqlState(std::string_view state) {
  return state.starts_with("08") || state.starts_with("40") || state.starts_with("53") ||
         state.starts_with("57");
}

// The partition columns a batch may carry, when their types allow guard filtering.
struct OffsetColumns {
  const arrow::StringArray* topic = nullptr;
  const arrow::Int64Array* partition = nullptr;
  const arrow::Int64Array* offset = nullptr;
};

OffsetColumns FindOffsetColumns(const arrow::RecordBatch& batch) {
  OffsetColumns c;
  auto column = [&](const char* name, arrow::Type::type type) -> const arrow::Array* {
    int i = batch.schema()->GetFieldIndex(name);
    if (i < 0 || batch.column(i)->type_id() != type) return nullptr;
    return batch.column(i).get();
  };
  c.topic =
      static_cast<const arrow::StringArray*>(column("_kafka_topic", arrow::Type::STRING));
  c.partition = static_cast<const arrow::Int64Array*>(
      column("_kafka_partition", arrow::Type::INT64));
  c.offset =
      static_cast<const arrow::Int64Array*>(column("_kafka_offset", arrow::Type::INT64));
  return c;
}

bool HasGuardColumns(const arrow::Schema& schema) {
  return schema.GetFieldIndex("_kafka_topic") >= 0 &&
         schema.GetFieldIndex("_kafka_partition") >= 0 &&
         schema.GetFieldIndex("_kafka_offset") >= 0;
}

// One table the sink writes: its parsed name, quoted name and column types.
struct Target {
  TableName name;
  std::string quoted;  // "schema"."table" (or "table")
  std::string label;   // the name as configured, for messages
  std::shared_ptr<arrow::Schema> schema;
  std::vector<PgType> types;
  std::string copy_sql;
};

class PostgresSink final : public Sink {
 public:
  PostgresSink(PostgresSinkOptions options, pg::ConnInfo info, Target landing,
               Target dead_letter, Target offsets)
      : options_(std::move(options)),
        info_(std::move(info)),
        landing_(std::move(landing)),
        dead_letter_(std::move(dead_letter)),
        offsets_(std::move(offsets)) {}

  std::string name() const override {
    return "postgresql:" + info_.host + ":" + info_.port + "/" + info_.dbname + "#" +
           options_.table;
  }

  Status Open(const std::shared_ptr<arrow::Schema>& landing,
              const std::shared_ptr<arrow::Schema>& dead_letter) override;
  Result<OffsetMap> Resume(const std::vector<TopicPartition>& partitions) override;
  Result<OffsetMap> Write(const SinkWindow& window) override;
  Status Evolve(const std::shared_ptr<arrow::Schema>& landing) override;
  Result<OffsetMap> Flush() override { return OffsetMap{}; }  // durable at COMMIT
  Status Drop(const std::vector<TopicPartition>&) override { return {}; }
  /// pg::LoadTable: one transaction on a connection of its own, closed after.
  Result<int64_t> LoadOnce(const arrow::RecordBatch& batch, bool truncate);
  Status Close() override {
    conn_.reset();
    opened_ = false;
    return {};
  }

 private:
  std::string Prefix(const Target* t) const {
    return "postgresql sink " + name() + (t != nullptr ? ": table " + t->quoted : "") +
           ": ";
  }
  std::string Clean(std::string_view message) const {
    std::string s = pg::Redact(message, info_.password);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }
  // A Status from a failed result (or the connection's message when there is none).
  Status ErrorOf(const PGresult* r, const Target* t, std::string_view what) const;

  Status Connect();
  Status EnsureReady();
  Result<std::string> Quote(std::string_view id);
  Status QuoteTarget(Target* t);

  // Run a statement expecting `want`; the result is returned for reading.
  Result<ResultPtr> Run(std::string_view sql, const std::vector<std::string>& params,
                        ExecStatusType want, const Target* t, std::string_view what);
  Status Command(std::string_view sql, const Target* t, std::string_view what) {
    return Run(sql, {}, PGRES_COMMAND_OK, t, what).status();
  }
  // BEGIN, then take the DDL lock, held to COMMIT: one DDL transaction at a time across
  // sinks and loads, so two that start together do not race in CREATE TABLE IF NOT
  // EXISTS (which is not atomic in PostgreSQL).
  Status BeginWithDdlLock() {
    KELT_RETURN_NOT_OK(Command("BEGIN", nullptr, "begin"));
    return Run("SELECT pg_advisory_xact_lock(hashtext('kelt.postgres_sink.ddl'))", {},
               PGRES_TUPLES_OK, nullptr, "lock")
        .status();
  }
  void Rollback() {
    if (conn_ != nullptr && PQtransactionStatus(conn_.get()) != PQTRANS_IDLE) {
      ResultPtr r(PQexec(conn_.get(), "ROLLBACK"));
    }
  }

  Status PrepareTable(Target* t, bool create);
  Status PrepareOffsetsTable();
  Status CreateGuardIndex(const Target& t);
  Status Copy(const Target& t, const arrow::RecordBatch& batch,
              const std::vector<uint8_t>* keep);
  Result<OffsetMap> WriteInTransaction(const SinkWindow& window);

  PostgresSinkOptions options_;
  pg::ConnInfo info_;
  Target landing_;
  Target dead_letter_;
  Target offsets_;
  ConnPtr conn_;
  bool opened_ = false;
};

Status PostgresSink::ErrorOf(const PGresult* r, const Target* t,
                             std::string_view what) const {
  std::string message = Prefix(t) + std::string(what) + ": ";
  std::string state;
  if (r != nullptr && PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) != nullptr) {
    message += PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    for (int field : {PG_DIAG_MESSAGE_DETAIL, PG_DIAG_MESSAGE_HINT, PG_DIAG_CONTEXT}) {
      const char* v = PQresultErrorField(r, field);
      if (v != nullptr) message += std::string(" (") + v + ")";
    }
    const char* s = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (s != nullptr) state = s;
  } else if (r != nullptr && *PQresultErrorMessage(r) != '\0') {
    message += PQresultErrorMessage(r);
  } else {
    message += conn_ != nullptr ? PQerrorMessage(conn_.get()) : "no connection";
  }
  if (!state.empty()) message += " [SQLSTATE " + state + "]";
  bool lost = conn_ == nullptr || PQstatus(conn_.get()) == CONNECTION_BAD;
  return Status::IOError(Clean(message), lost || RetriableSqlState(state));
}

Status PostgresSink::Connect() {
  conn_.reset(pg::Connect(options_.conninfo));
  if (conn_ == nullptr) return Status::IOError(Prefix(nullptr) + "out of memory");
  if (PQstatus(conn_.get()) != CONNECTION_OK) {
    Status st = Status::IOError(
        Clean(Prefix(nullptr) + "cannot connect: " + PQerrorMessage(conn_.get())), true);
    conn_.reset();
    return st;
  }
  PQsetNoticeReceiver(conn_.get(), ReceiveNotice, nullptr);
  return {};
}

Status PostgresSink::EnsureReady() {
  if (!opened_) return Status::Invalid(Prefix(nullptr) + "not open (call Open first)");
  if (conn_ == nullptr) {
    KELT_RETURN_NOT_OK(Connect());
  } else if (PQstatus(conn_.get()) == CONNECTION_BAD) {
    PQreset(conn_.get());
    if (PQstatus(conn_.get()) != CONNECTION_OK) {
      return Status::IOError(
          Clean(Prefix(nullptr) + "reconnect failed: " + PQerrorMessage(conn_.get())),
          true);
    }
  }
  Rollback();  // a transaction left open by a failure that lost its ROLLBACK
  return {};
}

Result<std::string> PostgresSink::Quote(std::string_view id) {
  char* q = PQescapeIdentifier(conn_.get(), id.data(), id.size());
  if (q == nullptr) {
    return Status::Invalid(Clean(
        Prefix(nullptr) + "cannot quote identifier: " + PQerrorMessage(conn_.get())));
  }
  std::string out(q);
  PQfreemem(q);
  return out;
}

Status PostgresSink::QuoteTarget(Target* t) {
  KELT_ASSIGN_OR_RAISE(std::string table, Quote(t->name.table));
  if (t->name.schema.empty()) {
    t->quoted = table;
  } else {
    KELT_ASSIGN_OR_RAISE(std::string schema, Quote(t->name.schema));
    t->quoted = schema + "." + table;
  }
  return {};
}

Result<ResultPtr> PostgresSink::Run(std::string_view sql,
                                    const std::vector<std::string>& params,
                                    ExecStatusType want, const Target* t,
                                    std::string_view what) {
  std::string text(sql);
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const std::string& p : params) values.push_back(p.c_str());
  ResultPtr r(PQexecParams(conn_.get(), text.c_str(), static_cast<int>(values.size()),
                           nullptr, values.data(), nullptr, nullptr, 0));
  if (r == nullptr || PQresultStatus(r.get()) != want) return ErrorOf(r.get(), t, what);
  return r;
}

Status PostgresSink::PrepareTable(Target* t, bool create) {
  KELT_RETURN_NOT_OK(QuoteTarget(t));
  t->types.clear();
  std::string columns;
  std::string copy_columns;
  for (const auto& field : t->schema->fields()) {
    KELT_RETURN_NOT_OK(
        pg::CheckIdentifier(field->name(), "column").WithPrefix(Prefix(t)));
    auto type = pg::PgTypeOf(*field->type(), field->name());
    if (!type.ok()) return type.status().WithPrefix(Prefix(t));
    t->types.push_back(*type);
    KELT_ASSIGN_OR_RAISE(std::string q, Quote(field->name()));
    if (!columns.empty()) {
      columns += ", ";
      copy_columns += ", ";
    }
    columns += q + " " + pg::PgColumnSql(*field->type(), *type);
    copy_columns += q;
  }
  t->copy_sql =
      "COPY " + t->quoted + " (" + copy_columns + ") FROM STDIN WITH (FORMAT binary)";

  KELT_ASSIGN_OR_RAISE(ResultPtr reg, Run("SELECT to_regclass($1)::oid", {t->quoted},
                                          PGRES_TUPLES_OK, t, "look up"));
  if (PQgetisnull(reg.get(), 0, 0)) {
    if (!create) {
      return Status::NotFound(Prefix(t) +
                              "does not exist (and create_table_if_missing is off)");
    }
    if (!t->name.schema.empty()) {
      KELT_ASSIGN_OR_RAISE(std::string schema, Quote(t->name.schema));
      KELT_RETURN_NOT_OK(
          Command("CREATE SCHEMA IF NOT EXISTS " + schema, t, "create schema"));
    }
    return Command("CREATE TABLE IF NOT EXISTS " + t->quoted + " (" + columns + ")", t,
                   "create");
  }
  std::string oid = PQgetvalue(reg.get(), 0, 0);
  KELT_ASSIGN_OR_RAISE(
      ResultPtr cols,
      Run("SELECT attname, format_type(atttypid, atttypmod), attnotnull, atthasdef "
          "FROM pg_catalog.pg_attribute WHERE attrelid = $1::oid AND attnum > 0 "
          "AND NOT attisdropped",
          {oid}, PGRES_TUPLES_OK, t, "read columns"));
  std::map<std::string, std::string, std::less<>> have;
  for (int i = 0; i < PQntuples(cols.get()); ++i) {
    std::string column = PQgetvalue(cols.get(), i, 0);
    have[column] = PQgetvalue(cols.get(), i, 1);
    bool not_null = PQgetvalue(cols.get(), i, 2)[0] == 't';
    bool has_default = PQgetvalue(cols.get(), i, 3)[0] == 't';
    if (not_null && !has_default && t->schema->GetFieldIndex(column) < 0) {
      return Status::Invalid(Prefix(t) + "column '" + column +
                             "' is NOT NULL without a default and is not in the batch "
                             "schema");
    }
  }
  for (int i = 0; i < t->schema->num_fields(); ++i) {
    const std::string& column = t->schema->field(i)->name();
    auto it = have.find(column);
    std::string want = pg::PgColumnSql(*t->schema->field(i)->type(), t->types[i]);
    if (it == have.end() && create && t->schema->field(i)->nullable()) {
      // The landing grew since the table was made (a new version of a registry
      // subject, a field added to the schema file): add the column, as Evolve does.
      KELT_ASSIGN_OR_RAISE(std::string q, Quote(column));
      KELT_RETURN_NOT_OK(Command(
          "ALTER TABLE " + t->quoted + " ADD COLUMN IF NOT EXISTS " + q + " " + want, t,
          "add column " + column));
      continue;
    }
    if (it == have.end()) {
      return Status::Invalid(Prefix(t) + "has no column '" + column +
                             "' (the batch needs " + want + ")");
    }
    if (!pg::PgTypeAccepts(t->types[i], it->second)) {
      return Status::Invalid(Prefix(t) + "column '" + column + "' is " + it->second +
                             "; the batch needs " + want);
    }
  }
  return {};
}

Status PostgresSink::PrepareOffsetsTable() {
  Target* t = &offsets_;
  KELT_RETURN_NOT_OK(QuoteTarget(t));
  KELT_ASSIGN_OR_RAISE(ResultPtr reg, Run("SELECT to_regclass($1)::oid", {t->quoted},
                                          PGRES_TUPLES_OK, t, "look up"));
  if (PQgetisnull(reg.get(), 0, 0)) {
    if (!t->name.schema.empty()) {
      KELT_ASSIGN_OR_RAISE(std::string schema, Quote(t->name.schema));
      KELT_RETURN_NOT_OK(
          Command("CREATE SCHEMA IF NOT EXISTS " + schema, t, "create schema"));
    }
    return Command("CREATE TABLE IF NOT EXISTS " + t->quoted +
                       " (group_id TEXT NOT NULL, topic TEXT NOT NULL, partition INTEGER "
                       "NOT NULL, next_offset BIGINT NOT NULL, "
                       "PRIMARY KEY (group_id, topic, partition))",
                   t, "create");
  }
  // An existing table must have the columns and the key the guard's upsert relies on.
  KELT_ASSIGN_OR_RAISE(
      ResultPtr cols,
      Run("SELECT a.attname, format_type(a.atttypid, a.atttypmod) "
          "FROM pg_catalog.pg_attribute a WHERE a.attrelid = $1::oid AND a.attnum > 0 "
          "AND NOT a.attisdropped",
          {PQgetvalue(reg.get(), 0, 0)}, PGRES_TUPLES_OK, t, "read columns"));
  std::map<std::string, std::string> have;
  for (int i = 0; i < PQntuples(cols.get()); ++i) {
    have[PQgetvalue(cols.get(), i, 0)] = PQgetvalue(cols.get(), i, 1);
  }
  const std::pair<const char*, const char*> kWant[] = {{"group_id", "text"},
                                                       {"topic", "text"},
                                                       {"partition", "integer"},
                                                       {"next_offset", "bigint"}};
  for (const auto& [column, type] : kWant) {
    auto it = have.find(column);
    if (it == have.end() || it->second != type) {
      return Status::Invalid(Prefix(t) + "column '" + column + "' " +
                             (it == have.end() ? "is missing" : "is " + it->second) +
                             "; an offsets table needs " + type);
    }
  }
  return {};
}

Status PostgresSink::CreateGuardIndex(const Target& t) {
  if (!HasGuardColumns(*t.schema)) return {};
  KELT_ASSIGN_OR_RAISE(std::string index,
                       Quote(pg::DerivedName(t.name.table, "_kafka_offset_key")));
  return Command("CREATE UNIQUE INDEX IF NOT EXISTS " + index + " ON " + t.quoted +
                     " (_kafka_topic, _kafka_partition, _kafka_offset)",
                 &t, "create the unique (topic, partition, offset) index");
}

Status PostgresSink::Open(const std::shared_ptr<arrow::Schema>& landing,
                          const std::shared_ptr<arrow::Schema>& dead_letter) {
  if (landing == nullptr) return Status::Invalid(Prefix(nullptr) + "no landing schema");
  KELT_RETURN_NOT_OK(Connect());
  landing_.schema = landing;
  dead_letter_.schema = dead_letter;
  Status st = [&]() -> Status {
    KELT_RETURN_NOT_OK(BeginWithDdlLock());
    KELT_RETURN_NOT_OK(PrepareTable(&landing_, options_.create_table_if_missing));
    KELT_RETURN_NOT_OK(CreateGuardIndex(landing_));
    if (dead_letter_.schema != nullptr) {
      KELT_RETURN_NOT_OK(PrepareTable(&dead_letter_, true));
      KELT_RETURN_NOT_OK(CreateGuardIndex(dead_letter_));
    }
    KELT_RETURN_NOT_OK(PrepareOffsetsTable());
    return Command("COMMIT", nullptr, "commit");
  }();
  if (!st.ok()) {
    Rollback();
    conn_.reset();
    return st;
  }
  opened_ = true;
  return {};
}

// Under the DDL lock, one transaction adds each new column (ADD COLUMN IF NOT EXISTS:
// another sink may have evolved the table first), then reads the table's columns back
// as Open does, so a column that was already there with another type fails naming it.
// The COPY statement lists the new columns from then on.
Status PostgresSink::Evolve(const std::shared_ptr<arrow::Schema>& landing) {
  KELT_RETURN_NOT_OK(EnsureReady());
  KELT_RETURN_NOT_OK(internal::AddedColumns(*landing_.schema, *landing, name()).status());
  if (!options_.create_table_if_missing) {
    return Status::Invalid(Prefix(&landing_) +
                           "the landing schema grows, and kelt may not change tables "
                           "(create_table_if_missing is off): add the new columns first");
  }
  Target next = landing_;
  next.schema = landing;
  Status st = [&]() -> Status {
    KELT_RETURN_NOT_OK(BeginWithDdlLock());
    // ADD COLUMN waits for every reader of the table: bounded, so that a long query
    // fails the growth with a clear error instead of holding the loop (and its group
    // membership) indefinitely.
    KELT_RETURN_NOT_OK(
        Command("SET LOCAL lock_timeout = '30s'", &next, "set lock_timeout"));
    KELT_RETURN_NOT_OK(QuoteTarget(&next));
    for (const auto& field : landing->fields()) {
      if (landing_.schema->GetFieldIndex(field->name()) >= 0) continue;
      KELT_RETURN_NOT_OK(
          pg::CheckIdentifier(field->name(), "column").WithPrefix(Prefix(&next)));
      auto type = pg::PgTypeOf(*field->type(), field->name());
      if (!type.ok()) return type.status().WithPrefix(Prefix(&next));
      KELT_ASSIGN_OR_RAISE(std::string column, Quote(field->name()));
      KELT_RETURN_NOT_OK(Command("ALTER TABLE " + next.quoted +
                                     " ADD COLUMN IF NOT EXISTS " + column + " " +
                                     pg::PgColumnSql(*field->type(), *type),
                                 &next, "add column " + field->name()));
    }
    KELT_RETURN_NOT_OK(PrepareTable(&next, /*create=*/false));
    return Command("COMMIT", nullptr, "commit");
  }();
  if (!st.ok()) {
    Rollback();
    return st;
  }
  landing_ = std::move(next);
  return {};
}

Result<int64_t> PostgresSink::LoadOnce(const arrow::RecordBatch& batch, bool truncate) {
  KELT_RETURN_NOT_OK(Connect());
  landing_.schema = batch.schema();
  Status st = [&]() -> Status {
    KELT_RETURN_NOT_OK(BeginWithDdlLock());
    KELT_RETURN_NOT_OK(PrepareTable(&landing_, options_.create_table_if_missing));
    if (truncate) {
      KELT_RETURN_NOT_OK(Command("TRUNCATE " + landing_.quoted, &landing_, "truncate"));
    }
    KELT_RETURN_NOT_OK(Copy(landing_, batch, nullptr));
    return Command("COMMIT", nullptr, "commit");
  }();
  if (!st.ok()) Rollback();
  conn_.reset();
  KELT_RETURN_NOT_OK(st);
  return batch.num_rows();
}

Result<OffsetMap> PostgresSink::Resume(const std::vector<TopicPartition>& partitions) {
  KELT_RETURN_NOT_OK(EnsureReady());
  KELT_ASSIGN_OR_RAISE(
      ResultPtr r, Run("SELECT topic, partition, next_offset FROM " + offsets_.quoted +
                           " WHERE group_id = $1",
                       {options_.group_id}, PGRES_TUPLES_OK, &offsets_, "read offsets"));
  OffsetMap stored;
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    TopicPartition tp{PQgetvalue(r.get(), i, 0),
                      static_cast<int32_t>(std::stol(PQgetvalue(r.get(), i, 1)))};
    stored[tp] = std::stoll(PQgetvalue(r.get(), i, 2));
  }
  OffsetMap out;
  for (const TopicPartition& tp : partitions) {
    auto it = stored.find(tp);
    if (it != stored.end()) out[tp] = it->second;
  }
  return out;
}

// The rows of `batch` that are not already stored: a row of a partition whose stored
// next offset is past it is skipped. Null when every row is kept.
Result<std::unique_ptr<std::vector<uint8_t>>> KeepMask(
    const arrow::RecordBatch& batch, const OffsetMap& stored_after,
    const std::vector<PartitionSpan>& spans, std::string_view table) {
  // Partitions whose window starts below the stored next offset: their first records
  // are already in the table.
  OffsetMap skip_below;
  for (const PartitionSpan& s : spans) {
    auto it = stored_after.find(s.tp);
    if (it != stored_after.end() && it->second > s.first_offset)
      skip_below[s.tp] = it->second;
  }
  if (skip_below.empty() || batch.num_rows() == 0) return nullptr;
  OffsetColumns c = FindOffsetColumns(batch);
  const bool one_partition = spans.size() == 1;
  if (c.offset == nullptr || (c.partition == nullptr && !one_partition) ||
      (c.topic == nullptr && !one_partition)) {
    return Status::Invalid(
        std::string(table) + ": part of the window is already stored (" +
        ToString(skip_below.begin()->first) + " resumes at " +
        std::to_string(skip_below.begin()->second) +
        ") and the batch has no int64 _kafka_offset/_kafka_partition and utf8 "
        "_kafka_topic columns to tell those rows apart; write from the resume point");
  }
  auto keep = std::make_unique<std::vector<uint8_t>>(batch.num_rows(), 1);
  TopicPartition tp = spans.front().tp;
  for (int64_t row = 0; row < batch.num_rows(); ++row) {
    if (c.offset->IsNull(row)) continue;
    if (c.topic != nullptr && c.topic->IsValid(row))
      tp.topic = std::string(c.topic->GetView(row));
    if (c.partition != nullptr && c.partition->IsValid(row)) {
      tp.partition = static_cast<int32_t>(c.partition->Value(row));
    }
    auto it = skip_below.find(tp);
    if (it != skip_below.end() && c.offset->Value(row) < it->second) (*keep)[row] = 0;
  }
  return keep;
}

// "events[0] offset 42" (or "row 7" without the metadata columns), for row errors.
std::string RowLabel(const arrow::RecordBatch& batch, int64_t row) {
  OffsetColumns c = FindOffsetColumns(batch);
  if (c.offset == nullptr || c.offset->IsNull(row)) return "row " + std::to_string(row);
  std::string label = "record ";
  if (c.topic != nullptr && c.topic->IsValid(row)) label += c.topic->GetString(row);
  if (c.partition != nullptr && c.partition->IsValid(row)) {
    label += "[" + std::to_string(c.partition->Value(row)) + "]";
  }
  return label + " offset " + std::to_string(c.offset->Value(row));
}

Status PostgresSink::Copy(const Target& t, const arrow::RecordBatch& batch,
                          const std::vector<uint8_t>* keep) {
  if (!batch.schema()->Equals(*t.schema, /*check_metadata=*/false)) {
    return Status::Invalid(Prefix(&t) + "batch schema " + batch.schema()->ToString() +
                           " is not the schema given to Open");
  }
  int64_t rows = 0;
  for (int64_t row = 0; row < batch.num_rows(); ++row)
    rows += keep == nullptr || (*keep)[row];
  if (rows == 0) return {};
  auto encoder = pg::BinaryCopyEncoder::Make(
      batch, t.types,
      options_.replace_nul_in_text ? pg::NulPolicy::kReplace : pg::NulPolicy::kReject);
  if (!encoder.ok()) return encoder.status().WithPrefix(Prefix(&t));

  KELT_RETURN_NOT_OK(Run(t.copy_sql, {}, PGRES_COPY_IN, &t, "COPY").status());
  std::string buffer;
  buffer.reserve(kCopyChunkBytes + (kCopyChunkBytes >> 2));
  pg::BinaryCopyEncoder::AppendHeader(&buffer);
  Status row_error;
  bool send_failed = false;
  for (int64_t row = 0; row < batch.num_rows(); ++row) {
    if (keep != nullptr && !(*keep)[row]) continue;
    Status st = encoder->AppendRow(row, &buffer);
    if (!st.ok()) {
      row_error =
          Status(st.code(), Prefix(&t) + RowLabel(batch, row) + ": " + st.message());
      break;
    }
    if (buffer.size() >= kCopyChunkBytes) {
      if (PQputCopyData(conn_.get(), buffer.data(), static_cast<int>(buffer.size())) !=
          1) {
        send_failed = true;
        break;
      }
      buffer.clear();
    }
  }
  if (row_error.ok() && !send_failed) {
    pg::BinaryCopyEncoder::AppendTrailer(&buffer);
    send_failed =
        PQputCopyData(conn_.get(), buffer.data(), static_cast<int>(buffer.size())) != 1;
  }
  // Ending with an error message makes the server abort the COPY.
  const char* abort_reason =
      row_error.ok() && !send_failed ? nullptr : "kelt: row rejected";
  PQputCopyEnd(conn_.get(), abort_reason);
  Status result;
  while (ResultPtr r{PQgetResult(conn_.get())}) {
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK && result.ok()) {
      result = ErrorOf(r.get(), &t, "COPY");
    }
  }
  if (!row_error.ok()) return row_error;
  if (send_failed && result.ok()) result = ErrorOf(nullptr, &t, "COPY");
  return result;
}

Result<OffsetMap> PostgresSink::WriteInTransaction(const SinkWindow& window) {
  std::vector<PartitionSpan> spans;
  for (const PartitionSpan& s : window.spans) {
    if (s.last_offset >= s.first_offset) spans.push_back(s);
  }
  // Lock offsets rows in one order in every writer, so two cannot deadlock.
  std::sort(spans.begin(), spans.end(),
            [](const PartitionSpan& a, const PartitionSpan& b) { return a.tp < b.tp; });

  KELT_RETURN_NOT_OK(Command("BEGIN", nullptr, "begin"));
  // The guard: lock each partition's offsets row (inserting a missing one) and read the
  // stored next offset. A no-op DO UPDATE takes the row lock and returns the row, so a
  // concurrent writer of the same partition waits here until this one commits, then sees
  // its offsets.
  const std::string upsert =
      "INSERT INTO " + offsets_.quoted +
      " AS o (group_id, topic, partition, next_offset) "
      "VALUES ($1, $2, $3::integer, $4::bigint) "
      "ON CONFLICT (group_id, topic, partition) "
      "DO UPDATE SET next_offset = o.next_offset RETURNING next_offset";
  OffsetMap stored;
  for (const PartitionSpan& s : spans) {
    KELT_ASSIGN_OR_RAISE(
        ResultPtr r,
        Run(upsert,
            {options_.group_id, s.tp.topic, std::to_string(s.tp.partition),
             std::to_string(s.first_offset)},
            PGRES_TUPLES_OK, &offsets_, "lock offsets of " + ToString(s.tp)));
    stored[s.tp] = std::stoll(PQgetvalue(r.get(), 0, 0));
  }

  if (window.batch != nullptr) {
    auto keep = KeepMask(*window.batch, stored, spans, landing_.quoted);
    if (!keep.ok()) return keep.status().WithPrefix(Prefix(nullptr));
    KELT_RETURN_NOT_OK(Copy(landing_, *window.batch, keep->get()));
  }
  if (window.dead_letters != nullptr && window.dead_letters->num_rows() > 0) {
    if (dead_letter_.schema == nullptr) {
      return Status::Invalid(Prefix(nullptr) +
                             "dead letters to write but Open had no dead-letter schema");
    }
    auto keep = KeepMask(*window.dead_letters, stored, spans, dead_letter_.quoted);
    if (!keep.ok()) return keep.status().WithPrefix(Prefix(nullptr));
    KELT_RETURN_NOT_OK(Copy(dead_letter_, *window.dead_letters, keep->get()));
  }

  OffsetMap durable;
  const std::string update = "UPDATE " + offsets_.quoted +
                             " SET next_offset = $4::bigint WHERE group_id = $1 "
                             "AND topic = $2 AND partition = $3::integer";
  for (const PartitionSpan& s : spans) {
    int64_t next = std::max(stored[s.tp], s.last_offset + 1);
    durable[s.tp] = next;
    if (next == stored[s.tp]) continue;
    KELT_RETURN_NOT_OK(Run(update,
                           {options_.group_id, s.tp.topic, std::to_string(s.tp.partition),
                            std::to_string(next)},
                           PGRES_COMMAND_OK, &offsets_,
                           "update offsets of " + ToString(s.tp))
                           .status());
  }
  KELT_RETURN_NOT_OK(Command("COMMIT", nullptr, "commit"));
  return durable;
}

Result<OffsetMap> PostgresSink::Write(const SinkWindow& window) {
  KELT_RETURN_NOT_OK(EnsureReady());
  bool rows = (window.batch != nullptr && window.batch->num_rows() > 0) ||
              (window.dead_letters != nullptr && window.dead_letters->num_rows() > 0);
  if (!rows && window.spans.empty()) return OffsetMap{};
  auto result = WriteInTransaction(window);
  if (!result.ok()) Rollback();
  return result;
}

Result<Target> MakeTarget(std::string_view text, std::string_view what) {
  Target t;
  t.label = std::string(text);
  KELT_ASSIGN_OR_RAISE(t.name, pg::ParseTableName(text, what));
  return t;
}

}  // namespace

std::string PostgresConnectionPassword(std::string_view conninfo) {
  auto info = pg::ParseConnInfo(conninfo);
  return info.ok() ? info->password : "";
}

Result<std::unique_ptr<Sink>> MakePostgresSink(PostgresSinkOptions options) {
  auto info = pg::ParseConnInfo(options.conninfo);
  if (!info.ok()) return info.status().WithPrefix("postgresql sink: ");
  if (options.group_id.empty()) {
    return Status::Invalid(
        "postgresql sink: group_id is empty (offsets are kept per group)");
  }
  if (options.group_id.find('\0') != std::string::npos) {
    return Status::Invalid("postgresql sink: group_id contains a NUL byte");
  }
  if (options.dead_letter_table.empty()) {
    options.dead_letter_table = options.table + "_dead_letter";
  }
  auto prefix = "postgresql sink: ";
  auto landing = MakeTarget(options.table, "table");
  if (!landing.ok()) return landing.status().WithPrefix(prefix);
  auto dead_letter = MakeTarget(options.dead_letter_table, "dead_letter_table");
  if (!dead_letter.ok()) return dead_letter.status().WithPrefix(prefix);
  auto offsets = MakeTarget(options.offsets_table, "offsets_table");
  if (!offsets.ok()) return offsets.status().WithPrefix(prefix);
  return std::unique_ptr<Sink>(
      new PostgresSink(std::move(options), std::move(*info), std::move(*landing),
                       std::move(*dead_letter), std::move(*offsets)));
}

namespace pg {

Result<int64_t> LoadTable(const TableLoadOptions& options,
                          const arrow::RecordBatch& batch) {
  constexpr std::string_view kPrefix = "postgresql: ";
  auto info = ParseConnInfo(options.conninfo);
  if (!info.ok()) return info.status().WithPrefix(kPrefix);
  auto landing = MakeTarget(options.table, "table");
  if (!landing.ok()) return landing.status().WithPrefix(kPrefix);
  PostgresSinkOptions sink_options;
  sink_options.conninfo = options.conninfo;
  sink_options.table = options.table;
  sink_options.create_table_if_missing = options.create_table_if_missing;
  sink_options.replace_nul_in_text = options.replace_nul_in_text;
  PostgresSink sink(std::move(sink_options), std::move(*info), std::move(*landing),
                    Target{}, Target{});
  return sink.LoadOnce(batch, options.truncate_before_load);
}

}  // namespace pg
}  // namespace kelt
