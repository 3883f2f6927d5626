// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Iceberg manifests and manifest lists (format version 2): Avro object container files
// whose records Apache Avro C encodes and decodes, to the spec's schemas with their
// field ids (readers such as pyiceberg resolve manifest fields by id).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kelt/iceberg/metadata.h"
#include "kelt/iceberg/table_schema.h"
#include "kelt/status.h"

namespace kelt::iceberg {

/// A partition value: int/date/hour/month (int32), long/timestamp (int64) or string.
using PartitionDatum = std::variant<int32_t, int64_t, std::string>;

/// One field of a partition tuple: the spec's field and its result type ("int",
/// "long", "string", "date", "timestamp", "timestamptz").
struct PartitionColumn {
  int field_id = 0;
  std::string name;
  std::string type;
};

/// A data file as a manifest entry describes it.
struct DataFile {
  std::string path;
  int64_t record_count = 0;
  int64_t file_size = 0;
  /// One value per PartitionColumn (nullopt: null).
  std::vector<std::optional<PartitionDatum>> partition;
  ColumnStats stats;
};

/// Everything a manifest's header says and its entries inherit.
struct ManifestContext {
  Schema schema;
  PartitionSpec spec;
  std::vector<PartitionColumn> partition;
  int64_t snapshot_id = 0;
};

/// Summary of one partition field over a manifest's files.
struct FieldSummary {
  bool contains_null = false;
  std::optional<bool> contains_nan;
  std::optional<std::string> lower_bound;
  std::optional<std::string> upper_bound;
};

/// One manifest as a manifest list describes it.
struct ManifestFile {
  std::string path;
  int64_t length = 0;
  int partition_spec_id = 0;
  int content = 0;  ///< 0 data, 1 deletes
  int64_t sequence_number = 0;
  int64_t min_sequence_number = 0;
  int64_t added_snapshot_id = 0;
  int32_t added_files_count = 0;
  int32_t existing_files_count = 0;
  int32_t deleted_files_count = 0;
  int64_t added_rows_count = 0;
  int64_t existing_rows_count = 0;
  int64_t deleted_rows_count = 0;
  std::optional<std::vector<FieldSummary>> partitions;
};

/// A manifest entry's status (the spec's `status` field).
enum class EntryStatus : int32_t { kExisting = 0, kAdded = 1, kDeleted = 2 };

/// One manifest entry: a data file with its status and the snapshot and sequence
/// numbers it belongs to (nullopt: inherited from the manifest list, as for entries
/// ADDED by the manifest's own snapshot).
struct ManifestEntry {
  EntryStatus status = EntryStatus::kAdded;
  std::optional<int64_t> snapshot_id;
  std::optional<int64_t> sequence_number;
  std::optional<int64_t> file_sequence_number;
  DataFile file;
};

/// Write a manifest of `entries` (any status; `snapshot_id` unset means
/// `ctx.snapshot_id`) at local `path`, fsynced. Returns the ManifestFile entry
/// describing it, with its file and row counts per status (sequence numbers left for
/// the caller).
Result<ManifestFile> WriteManifestEntries(const std::string& path,
                                          const ManifestContext& ctx,
                                          const std::vector<ManifestEntry>& entries);

/// Every entry of a manifest (DELETED ones included), with its data file's partition
/// tuple and column statistics, and sequence numbers as written (inheritance is the
/// caller's: see ManifestFile::sequence_number).
Result<std::vector<ManifestEntry>> ReadManifestEntries(const std::string& path);

/// Write a manifest of `files`, all ADDED by `ctx.snapshot_id` (their sequence numbers
/// inherited from the manifest list), at local `path`, fsynced. Returns the
/// ManifestFile entry describing it (sequence numbers left for the caller).
Result<ManifestFile> WriteManifest(const std::string& path, const ManifestContext& ctx,
                                   const std::vector<DataFile>& files);

/// The live (ADDED or EXISTING) data file paths of a manifest.
Result<std::vector<std::string>> ReadManifestDataFiles(const std::string& path);

/// Write a manifest list at local `path`, fsynced.
Status WriteManifestList(const std::string& path, int64_t snapshot_id,
                         std::optional<int64_t> parent_snapshot_id,
                         int64_t sequence_number, const std::vector<ManifestFile>& files);

Result<std::vector<ManifestFile>> ReadManifestList(const std::string& path);

/// Create local `path` (it must not exist), write `bytes`, fsync.
Status WriteLocalFile(const std::string& path, std::string_view bytes);

/// Iceberg's single-value serialization of a partition value.
std::string SerializeDatum(const PartitionDatum& d);

}  // namespace kelt::iceberg
