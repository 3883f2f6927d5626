// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Incremental models: the data landed since the stored offsets → the model's SQL → the
// curated table, with the new offsets, in one DuckDB transaction of the output
// database (a crash or an error leaves both as they were).
#include <arrow/api.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "kelt/common/arrow_status.h"
#include "kelt/transform.h"
#include "kelt/transform/duckdb_session.h"

namespace kelt {
namespace {

using transform::DuckDbSession;
using transform::QuoteIdentifier;
using transform::QuoteLiteral;
using transform::QuoteTableName;

/// The model's SQL without trailing semicolons and blanks, to nest it in a statement.
std::string TrimmedSql(std::string sql) {
  while (!sql.empty() &&
         (sql.back() == ';' || std::isspace(static_cast<unsigned char>(sql.back())))) {
    sql.pop_back();
  }
  return sql;
}

/// Rows of (topic VARCHAR, partition BIGINT, offset BIGINT) → map.
Result<OffsetMap> ReadOffsets(DuckDbSession& db, const std::string& sql) {
  KELT_ASSIGN_OR_RAISE(auto table, db.Query(sql));
  OffsetMap out;
  if (table->num_rows() == 0) return out;
  KELT_ARROW_ASSIGN_OR_RAISE(auto batch, table->CombineChunksToBatch());
  auto topics = std::dynamic_pointer_cast<arrow::StringArray>(batch->column(0));
  auto partitions = std::dynamic_pointer_cast<arrow::Int64Array>(batch->column(1));
  auto offsets = std::dynamic_pointer_cast<arrow::Int64Array>(batch->column(2));
  if (!topics || !partitions || !offsets) {
    return Status::Internal("transform: unexpected offsets types " +
                            batch->schema()->ToString());
  }
  for (int64_t i = 0; i < batch->num_rows(); ++i) {
    if (topics->IsNull(i) || partitions->IsNull(i) || offsets->IsNull(i)) continue;
    out[TopicPartition{topics->GetString(i),
                       static_cast<int32_t>(partitions->Value(i))}] = offsets->Value(i);
  }
  return out;
}

class ModelRun {
 public:
  ModelRun(const IncrementalModel& model, DuckDbSession& db)
      : model_(model),
        db_(db),
        state_(QuoteTableName(model.state_table)),
        output_(QuoteTableName(model.output_table)) {}

  Result<IncrementalRun> Run() {
    KELT_RETURN_NOT_OK(db_.Exec(
        "CREATE TABLE IF NOT EXISTS " + state_ +
        " (model VARCHAR, topic VARCHAR, \"partition\" INTEGER, next_offset BIGINT, "
        "PRIMARY KEY (model, topic, \"partition\"))"));
    KELT_RETURN_NOT_OK(db_.Exec("BEGIN TRANSACTION"));
    auto result = RunInTransaction();
    if (result.ok()) {
      Status st = db_.Exec("COMMIT");
      if (st.ok()) return result;
      result = st;
    }
    (void)db_.Exec("ROLLBACK");
    return result;
  }

 private:
  Result<IncrementalRun> RunInTransaction() {
    if (model_.source.format == LandingSource::Format::kIceberg) {
      return Status::NotImplemented(
          "transform: model " + model_.name +
          ": incremental models over an Iceberg table come later "
          "(SqlSession::RegisterLanding reads one)");
    }
    IncrementalRun run;
    KELT_ASSIGN_OR_RAISE(
        OffsetMap stored,
        ReadOffsets(db_, "SELECT topic, \"partition\"::BIGINT, next_offset FROM " +
                             state_ + " WHERE model = " + QuoteLiteral(model_.name)));
    OffsetMap next = stored;
    if (model_.source.format == LandingSource::Format::kParquet) {
      KELT_ASSIGN_OR_RAISE(auto listed, transform::ListLandedFiles(model_.source));
      transform::LandedFiles fresh;
      fresh.fs = listed.fs;
      fresh.local = listed.local;
      for (auto& f : listed.files) {
        auto it = stored.find(f.info.tp);
        int64_t from = it == stored.end() ? 0 : it->second;
        if (f.info.last < from) continue;  // read by an earlier run
        if (f.info.first < from) {
          return Status::Invalid("transform: model " + model_.name + ": landed file " +
                                 f.path + " overlaps offset " + std::to_string(from) +
                                 " already read (ranges must not overlap)");
        }
        int64_t& n = next[f.info.tp];
        n = std::max(n, f.info.last + 1);
        fresh.files.push_back(std::move(f));
      }
      run.files_read = static_cast<int64_t>(fresh.files.size());
      if (fresh.files.empty()) {
        run.next_offsets = std::move(stored);
        return run;
      }
      KELT_RETURN_NOT_OK(db_.RegisterParquetFiles("df", fresh));
    } else {
      KELT_ASSIGN_OR_RAISE(std::string alias, db_.AttachReadOnly(model_.source.location));
      // The attached database is read at one snapshot for the whole transaction, so
      // the bounds below and the rows the model reads agree.
      KELT_RETURN_NOT_OK(db_.Exec(
          "CREATE OR REPLACE TEMP VIEW df AS SELECT l.* FROM " + QuoteIdentifier(alias) +
          "." + QuoteTableName(model_.source.table) + " AS l LEFT JOIN " + state_ +
          " AS s ON s.model = " + QuoteLiteral(model_.name) +
          " AND s.topic = l._kafka_topic AND s.\"partition\" = l._kafka_partition "
          "WHERE s.next_offset IS NULL OR l._kafka_offset >= s.next_offset"));
      KELT_ASSIGN_OR_RAISE(
          OffsetMap seen,
          ReadOffsets(db_,
                      "SELECT _kafka_topic::VARCHAR, _kafka_partition::BIGINT, "
                      "max(_kafka_offset)::BIGINT + 1 FROM df GROUP BY ALL"));
      for (const auto& [tp, n] : seen) next[tp] = std::max(next[tp], n);
    }
    KELT_ASSIGN_OR_RAISE(run.rows_read, db_.QueryInt("SELECT count(*) FROM df"));
    if (run.rows_read > 0 || model_.source.format == LandingSource::Format::kParquet) {
      KELT_ASSIGN_OR_RAISE(run.rows_written, WriteOutput());
    }
    KELT_RETURN_NOT_OK(StoreOffsets(stored, next));
    run.next_offsets = std::move(next);
    return run;
  }

  Result<int64_t> WriteOutput() {
    const std::string out = "_kelt_model_out";
    KELT_RETURN_NOT_OK(db_.Exec("CREATE OR REPLACE TEMP TABLE " + out +
                                " AS SELECT * FROM (" + TrimmedSql(model_.sql) + ")"));
    KELT_ASSIGN_OR_RAISE(int64_t rows, db_.QueryInt("SELECT count(*) FROM " + out));
    size_t dot = model_.output_table.find('.');
    std::string schema =
        dot == std::string::npos ? "main" : model_.output_table.substr(0, dot);
    std::string table = dot == std::string::npos ? model_.output_table
                                                 : model_.output_table.substr(dot + 1);
    KELT_ASSIGN_OR_RAISE(
        int64_t exists,
        db_.QueryInt("SELECT count(*) FROM duckdb_tables() WHERE database_name = "
                     "current_database() AND schema_name = " +
                     QuoteLiteral(schema) + " AND table_name = " + QuoteLiteral(table)));
    if (!model_.key.empty()) {
      std::string keys;
      std::string match;
      for (size_t i = 0; i < model_.key.size(); ++i) {
        keys += (i ? ", " : "") + QuoteIdentifier(model_.key[i]);
        match += std::string(i ? " AND " : "") + "t." + QuoteIdentifier(model_.key[i]) +
                 " IS NOT DISTINCT FROM m." + QuoteIdentifier(model_.key[i]);
      }
      KELT_ASSIGN_OR_RAISE(int64_t distinct,
                           db_.QueryInt("SELECT count(*) FROM (SELECT DISTINCT " + keys +
                                        " FROM " + out + ")"));
      if (distinct != rows) {
        return Status::Invalid("transform: model " + model_.name +
                               ": its result has several rows with the same key (" +
                               keys + "); an upsert needs one row per key and run");
      }
      if (exists) {
        KELT_RETURN_NOT_OK(db_.Exec("DELETE FROM " + output_ + " AS t USING " + out +
                                    " AS m WHERE " + match));
      }
    }
    if (exists) {
      KELT_RETURN_NOT_OK(
          db_.Exec("INSERT INTO " + output_ + " BY NAME SELECT * FROM " + out));
    } else {
      KELT_RETURN_NOT_OK(
          db_.Exec("CREATE TABLE " + output_ + " AS SELECT * FROM " + out));
    }
    KELT_RETURN_NOT_OK(db_.Exec("DROP TABLE " + out));
    return rows;
  }

  Status StoreOffsets(const OffsetMap& stored, const OffsetMap& next) {
    std::string values;
    for (const auto& [tp, n] : next) {
      auto it = stored.find(tp);
      if (it != stored.end() && it->second == n) continue;
      values += std::string(values.empty() ? "" : ", ") + "(" +
                QuoteLiteral(model_.name) + ", " + QuoteLiteral(tp.topic) + ", " +
                std::to_string(tp.partition) + ", " + std::to_string(n) + ")";
    }
    if (values.empty()) return Status::OK();
    return db_.Exec("INSERT OR REPLACE INTO " + state_ + " VALUES " + values);
  }

  const IncrementalModel& model_;
  DuckDbSession& db_;
  std::string state_;
  std::string output_;
};

}  // namespace

Result<IncrementalRun> RunIncremental(const IncrementalModel& model) {
  if (model.name.empty()) return Status::Invalid("transform: a model needs a name");
  if (model.sql.empty())
    return Status::Invalid("transform: model " + model.name + " has no SQL");
  if (model.output_path.empty()) {
    return Status::Invalid("transform: model " + model.name + " needs an output_path");
  }
  KELT_ASSIGN_OR_RAISE(auto db, DuckDbSession::Open(model.output_path));
  return ModelRun(model, *db).Run();
}

}  // namespace kelt
