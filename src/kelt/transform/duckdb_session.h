// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// One embedded DuckDB database and connection with Arrow in and out: the engine behind
// SqlSession and RunIncremental. No DuckDB type appears here (STYLE rule 4).
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/landing/layout.h"
#include "kelt/status.h"
#include "kelt/transform.h"

namespace arrow {
class RecordBatchReader;
class Schema;
class Table;
namespace fs {
class FileSystem;
}
}  // namespace arrow

namespace kelt::transform {

/// Return `text` as a SQL string literal (single quotes doubled).
std::string QuoteLiteral(std::string_view text);
/// Return `name` as a double-quoted SQL identifier.
std::string QuoteIdentifier(std::string_view name);
/// "schema.table" or "table" → "schema"."table" (schema "main" when absent).
std::string QuoteTableName(std::string_view name);

using landing::LandedFile;

/// Published landing files and the filesystem they are on.
struct LandedFiles {
  std::shared_ptr<arrow::fs::FileSystem> fs;
  bool local = true;
  std::vector<LandedFile> files;
};

/// The landed files of `source` (kParquet) that belong to complete ranges (all `n`
/// parts present, counted over the topic and dead-letter directories), in (partition,
/// first offset, part) order. Hidden (in-progress) files and names that are not
/// landing names are left out.
Result<LandedFiles> ListLandedFiles(const LandingSource& source);

/// Test hook: called for every column of every chunk the Arrow scan hands to DuckDB,
/// with the data pointer of DuckDB's vector and the Arrow array it came from.
using ScanObserver = std::function<void(int column, const void* duckdb_data,
                                        const void* arrow_values, int64_t arrow_offset)>;
void SetScanObserverForTesting(ScanObserver observer);

class DuckDbSession {
 public:
  /// Open `path` (a database file, created if missing) or an in-memory database ("").
  static Result<std::unique_ptr<DuckDbSession>> Open(const std::string& path);
  ~DuckDbSession();

  /// Run statements whose result is not needed.
  Status Exec(std::string_view sql);
  /// Run one statement and return its result as Arrow.
  Result<std::shared_ptr<arrow::Table>> Query(std::string_view sql);
  /// Run a query whose result is one BIGINT.
  Result<int64_t> QueryInt(std::string_view sql);

  /// Create or replace the temporary view `name` over `table`, scanned through the
  /// Arrow C stream interface.
  Status RegisterArrow(const std::string& name, std::shared_ptr<arrow::Table> table);
  /// The same over any source of batches: `open` gives a fresh reader of batches of at
  /// most 2048 rows of `schema` for each scan.
  Status RegisterStream(
      const std::string& name, std::shared_ptr<arrow::Schema> schema,
      std::function<arrow::Result<std::shared_ptr<arrow::RecordBatchReader>>()> open);
  /// Create or replace the temporary view `name` over these Parquet files.
  /// Local files are read by DuckDB's Parquet reader; object-store files by Arrow's,
  /// streamed in like an Arrow table.
  Status RegisterParquetFiles(const std::string& name, const LandedFiles& files);
  /// Attach a DuckDB landing database read-only (once per path) and return its alias.
  Result<std::string> AttachReadOnly(const std::string& path);

  struct Impl;

 private:
  explicit DuckDbSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kelt::transform
