// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Transform: SQL (DuckDB, embedded) over landed data — an Arrow table in memory, a
// Parquet landing directory, a DuckDB landing database — and incremental models that
// follow a landing source by its Kafka offsets (src/kelt/transform/README.md).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/offsets.h"
#include "kelt/status.h"

namespace arrow {
class RecordBatch;
class RecordBatchReader;
class Table;
}  // namespace arrow

namespace kelt {

/// RDP's `sql::query`: run `sql` over `df` (visible to the query as the table `df`) and
/// return the result. The input is scanned in place through the Arrow C stream
/// interface (fixed-width buffers are not copied; transform/README.md says what is).
/// A SQL error is kInvalid with DuckDB's message and the query text.
Result<std::shared_ptr<arrow::Table>> QuerySql(std::string_view sql,
                                               std::shared_ptr<arrow::Table> df);
Result<std::shared_ptr<arrow::Table>> QuerySql(std::string_view sql,
                                               std::shared_ptr<arrow::RecordBatch> df);

/// Landed data at rest.
struct LandingSource {
  enum class Format { kParquet, kDuckDb, kIceberg };
  Format format = Format::kParquet;
  /// kParquet: the Parquet sink's root, a local directory or `s3://bucket/prefix`.
  /// kDuckDb: the database file (opened read-only).
  /// kIceberg: the SQL catalog's SQLite file; the table is read at its current snapshot
  /// (the committed data files only).
  std::string location;
  /// For `s3://`: endpoint override (`http://127.0.0.1:9000`), region, credentials
  /// (never logged). Empty: the AWS defaults and environment.
  std::string s3_endpoint;
  std::string s3_region;
  std::string s3_access_key;
  std::string s3_secret_key;
  /// kParquet: the topic whose files to read (`<root>/<topic>/**`).
  std::string topic;
  /// kParquet: read the topic's dead letters (`<root>/_dead_letter/<topic>/`) instead
  /// of its rows.
  bool dead_letters = false;
  /// kParquet: the sink's `dead_letter_dir` (relative to the root).
  std::string dead_letter_dir = "_dead_letter";
  /// kDuckDb: the landing table ("schema.table" allowed). kIceberg: "namespace.table".
  std::string table = "landing";
  /// kIceberg: the catalog's name (the `catalog_name` column).
  std::string catalog_name = "kelt";
};

/// An embedded, in-memory DuckDB session with named relations registered over Arrow
/// data and landing sources. Used from one thread at a time.
class SqlSession {
 public:
  static Result<std::unique_ptr<SqlSession>> Make();
  ~SqlSession();

  /// Make `table` queryable as view `name`, scanned in place through the Arrow C stream
  /// interface each time a query reads it. The session keeps `table` alive.
  Status RegisterArrow(const std::string& name, std::shared_ptr<arrow::Table> table);

  /// Make a landing source queryable as view `name` (the `_kafka_*` columns included).
  /// Parquet: only published files of complete ranges, never in-progress ones; the
  /// set of files is the one listed now (register again to see newer files).
  Status RegisterLanding(const std::string& name, const LandingSource& source);

  /// Run one statement and return its result (an empty table for statements without
  /// rows). A SQL error is kInvalid naming the query.
  Result<std::shared_ptr<arrow::Table>> Query(std::string_view sql);

  struct Impl;

 private:
  explicit SqlSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// --- incremental models ----------------------------------------------------------------

/// A SQL model that follows a landing source: each run reads only what was landed
/// since the previous run and appends (or upserts) its result to a curated table.
struct IncrementalModel {
  /// The model's name: the key of its progress in the state table.
  std::string name;
  /// The model: a SELECT over `df`, the rows landed since the last run. Per-row
  /// transforms and filters are exact; an aggregate is computed per run (see `key`).
  std::string sql;
  LandingSource source;
  /// Output DuckDB database file (created if missing).
  std::string output_path;
  /// The curated table, created from the first run's result.
  std::string output_table = "curated";
  /// The progress table `(model, topic, partition, next_offset)`, written in the same
  /// transaction as the curated rows.
  std::string state_table = "_kelt_transform_state";
  /// Empty: append the result. Otherwise the result replaces the curated rows with the
  /// same key (upsert), so a model may keep "latest value per key".
  std::vector<std::string> key;
};

/// What one run did.
struct IncrementalRun {
  int64_t files_read = 0;    ///< landed Parquet files read (0 for a DuckDB source)
  int64_t rows_read = 0;     ///< landed rows the model saw as `df`
  int64_t rows_written = 0;  ///< rows appended or upserted into the curated table
  /// Next offset per partition after the run (the stored state).
  OffsetMap next_offsets;
};

/// Run `model` once: read the data landed at or after its stored offsets, apply the
/// SQL, write the result and the new offsets in one transaction (a crash or an error
/// leaves both as they were).
Result<IncrementalRun> RunIncremental(const IncrementalModel& model);

}  // namespace kelt
