// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Iceberg table metadata (format version 2): the `vN-….metadata.json` document a
// catalog points at. Parsed with simdjson, written with common/'s JSON text helpers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kelt/iceberg/table_schema.h"
#include "kelt/status.h"

namespace kelt::iceberg {

/// One field of a partition spec: `transform` is "identity", "year", "month", "day",
/// "hour", "void" or "bucket[N]"/"truncate[W]" (the last two not written by kelt yet).
struct PartitionField {
  int source_id = 0;
  int field_id = 0;
  std::string name;
  std::string transform;
  bool operator==(const PartitionField&) const = default;
};

struct PartitionSpec {
  int spec_id = 0;
  std::vector<PartitionField> fields;
  bool operator==(const PartitionSpec&) const = default;
};

struct Snapshot {
  int64_t snapshot_id = 0;
  std::optional<int64_t> parent_snapshot_id;
  int64_t sequence_number = 0;
  int64_t timestamp_ms = 0;
  std::string manifest_list;
  /// "operation" and the rest of the summary, as strings.
  std::map<std::string, std::string> summary;
  int schema_id = 0;
  bool operator==(const Snapshot&) const = default;
};

struct LogEntry {
  int64_t timestamp_ms = 0;
  std::string value;  ///< a snapshot id (decimal) or a metadata file location
  bool operator==(const LogEntry&) const = default;
};

struct TableMetadata {
  int format_version = 2;
  std::string table_uuid;
  std::string location;
  int64_t last_sequence_number = 0;
  int64_t last_updated_ms = 0;
  int last_column_id = 0;
  std::vector<Schema> schemas;
  int current_schema_id = 0;
  std::vector<PartitionSpec> partition_specs;
  int default_spec_id = 0;
  int last_partition_id = 999;  // partition field ids start at 1000
  std::map<std::string, std::string> properties;
  std::optional<int64_t> current_snapshot_id;
  std::vector<Snapshot> snapshots;
  std::vector<LogEntry> snapshot_log;
  std::vector<LogEntry> metadata_log;
  bool operator==(const TableMetadata&) const = default;

  const Schema* CurrentSchema() const;
  const PartitionSpec* DefaultSpec() const;
  const Snapshot* FindSnapshot(int64_t id) const;
  const Snapshot* CurrentSnapshot() const;
};

/// The metadata of a new, empty table.
TableMetadata NewTableMetadata(std::string location, Schema schema, PartitionSpec spec,
                               std::string table_uuid, int64_t now_ms);

/// Serialize (one line, keys in the spec's kebab-case).
std::string MetadataToJson(const TableMetadata& m);

/// Parse a format-version 2 document; v1 and v3 are kNotImplemented. Sort orders and
/// refs other than "main" are not kept (kelt writes one unsorted order and "main").
Result<TableMetadata> MetadataFromJson(std::string_view json);

/// The JSON of a partition spec ({"spec-id":…,"fields":[…]}) and of its fields alone.
std::string PartitionSpecJson(const PartitionSpec& spec);
std::string PartitionFieldsJson(const PartitionSpec& spec);

/// A random version-4 UUID in its 36-character text form.
std::string RandomUuid();

}  // namespace kelt::iceberg
