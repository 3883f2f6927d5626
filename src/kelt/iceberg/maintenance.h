// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Table maintenance for the many small files streaming makes (issue #15, "Small
// files"): expire old snapshots and delete the files only they referenced, and compact
// a partition's small data files into larger ones as a `replace` snapshot. Both commit
// with the catalog's compare-and-swap, so they are safe while a sink lands into the
// same table: a lost swap re-reads the table and plans again on top.
#pragma once

#include <arrow/type_fwd.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kelt/iceberg/catalog.h"
#include "kelt/iceberg/file_io.h"
#include "kelt/iceberg/metadata.h"
#include "kelt/status.h"

namespace kelt::iceberg {

/// The prefix of the snapshot summary keys holding a consumer group's next offsets.
inline constexpr std::string_view kOffsetsKeyPrefix = "kelt.offsets.";

/// Every `kelt.offsets.<group>` entry as the current snapshot sees it: for each group,
/// the value of the newest snapshot in the current snapshot's lineage that carries it
/// (what the sink resumes from).
std::map<std::string, std::string> LineageOffsets(const TableMetadata& m);

struct ExpireOptions {
  /// Snapshots committed before this time (ms since the epoch) may be expired.
  int64_t older_than_ms = 0;
  /// The newest snapshots of the current lineage always kept (at least 1: the current).
  int retain_last = 1;
  /// Compare-and-swap attempts before giving up.
  int max_attempts = 10;
};

struct ExpireOutcome {
  std::vector<int64_t> expired;  ///< the snapshot ids expired (empty: nothing to do)
  int64_t snapshots_kept = 0;
  int64_t data_files_deleted = 0;
  int64_t manifests_deleted = 0;
  int64_t manifest_lists_deleted = 0;
  /// Files only expired snapshots referenced that lie outside the table's location:
  /// never deleted (a path in a manifest is data), listed for the operator.
  std::vector<std::string> files_outside_table;
  int attempts = 0;
};

/// Expire the snapshots older than `older_than_ms`, never the current one, the newest
/// `retain_last` of its lineage, or the lineage up to the newest snapshot carrying
/// each group's offsets (so the sink's resume point survives), as a new metadata file
/// committed by compare-and-swap (a lost swap re-reads the table and plans again).
/// After the swap, deletes the manifest lists of the expired snapshots and the
/// manifests and data files no kept snapshot references.
Result<ExpireOutcome> ExpireSnapshots(Catalog& catalog, const TableIdentifier& id,
                                      const ExpireOptions& options,
                                      const FileIO& io = FileIO::Local());

/// Reads and writes one data file at a local path (the Parquet reader and writer are
/// sink/'s; this module does not link Parquet).
struct DataFileCodec {
  std::function<Result<std::shared_ptr<arrow::RecordBatch>>(const std::string& path)>
      read;
  std::function<Status(const arrow::RecordBatch& batch, const std::string& path)> write;
};

struct CompactOptions {
  /// Files smaller than this are compacted, into files of about this size.
  int64_t target_file_size = int64_t{128} << 20;
  /// A partition is compacted when it has at least this many small files.
  int min_files = 2;
  /// Compare-and-swap attempts before giving up.
  int max_attempts = 5;
  /// Called before each attempt's swap (tests land a concurrent append here).
  std::function<void(int attempt)> before_commit;
};

struct CompactOutcome {
  bool committed = false;  ///< false: nothing to compact, the table is unchanged
  int64_t snapshot_id = 0;
  int64_t files_rewritten = 0;
  int64_t files_written = 0;
  int64_t partitions = 0;
  int64_t records = 0;
  int attempts = 0;
};

/// Rewrite, per partition of the current snapshot, the data files smaller than the
/// target (when there are at least min_files of them) into larger files, read and
/// written by `codec`, and commit them as one `replace` snapshot (the old files
/// DELETED in its manifest, the new ones ADDED) whose summary carries every group's
/// offsets (LineageOffsets). A lost swap removes this attempt's files, re-reads the
/// table and plans again. Old files stay: readers of older snapshots need them until
/// ExpireSnapshots.
Result<CompactOutcome> CompactTable(Catalog& catalog, const TableIdentifier& id,
                                    const CompactOptions& options,
                                    const DataFileCodec& codec,
                                    const FileIO& io = FileIO::Local());

}  // namespace kelt::iceberg
