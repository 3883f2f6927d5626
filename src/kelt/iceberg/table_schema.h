// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The landing schema as an Iceberg (format version 2) schema: one field id per column,
// the Arrow form the data files are written in (each field carrying its id as
// "PARQUET:field_id"), and the per-file column statistics a manifest stores.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kelt/status.h"

namespace arrow {
class RecordBatch;
class Schema;
}  // namespace arrow

namespace kelt::iceberg {

/// One top-level column of an Iceberg schema. `type` is the spec's primitive type name
/// ("long", "timestamptz", "decimal(10, 2)", "fixed[16]", …).
struct Field {
  int id = 0;
  std::string name;
  std::string type;
  bool required = false;
  bool operator==(const Field&) const = default;
};

struct Schema {
  int schema_id = 0;
  std::vector<Field> fields;
  /// The field named `name`, or nullptr.
  const Field* Find(const std::string& name) const;
  bool operator==(const Schema&) const = default;
};

/// The landing schema mapped to Iceberg (user guide, "Iceberg column types").
struct LandingMapping {
  Schema schema;
  /// The Arrow schema data files are written with: the landing's columns in order,
  /// converted where Iceberg needs it (ms → µs), each with its "PARQUET:field_id".
  std::shared_ptr<arrow::Schema> arrow;
};

/// Map `landing` to an Iceberg schema with field ids 1..n in column order. A column
/// type Iceberg v2 cannot hold (timestamp[ns], null) or this milestone does not
/// (nested types, unions, decimal256) is kNotImplemented naming the column.
Result<LandingMapping> MapLandingSchema(const arrow::Schema& landing);

/// Map `landing` onto an existing table schema: a column the table has (by name) keeps
/// its field id and must have the same Iceberg type (else kInvalid naming both types);
/// a column it lacks gets the next id after `last_column_id`, in landing order, and is
/// listed in `added` (its Iceberg field; the caller adds it to the table's schema).
Result<LandingMapping> MapLandingSchemaOnto(const arrow::Schema& landing,
                                            const Schema& table, int last_column_id,
                                            std::vector<Field>* added);

/// Convert a batch of the landing schema to `mapping.arrow` (timestamps and times in
/// µs, dictionaries decoded).
Result<std::shared_ptr<arrow::RecordBatch>> ToIcebergBatch(
    const std::shared_ptr<arrow::RecordBatch>& batch, const LandingMapping& mapping);

/// The JSON of `schema` as table metadata holds it ({"type":"struct",…}).
std::string SchemaJson(const Schema& schema);

/// Per-column statistics of one data file, keyed by field id. Bounds are in Iceberg's
/// single-value binary serialization; a column without bounds (binary, decimal, all
/// null, only NaN) has no entry in them.
struct ColumnStats {
  std::map<int, int64_t> value_counts;
  std::map<int, int64_t> null_counts;
  std::map<int, std::string> lower_bounds;
  std::map<int, std::string> upper_bounds;
};

/// Compute the statistics of `batch` (of a LandingMapping's Arrow schema). The columns
/// (indices) in `without_bounds` get counts only: bounds are optional, and the writer
/// leaves them out where they cannot prune (mostly distinct, unordered text).
Result<ColumnStats> ComputeStats(const arrow::RecordBatch& batch, const Schema& schema,
                                 const std::vector<int>& without_bounds = {});

/// Iceberg's single-value serialization of an int/date (4 bytes) or a long/timestamp/
/// time (8 bytes), little-endian.
std::string SerializeInt32(int32_t v);
std::string SerializeInt64(int64_t v);

}  // namespace kelt::iceberg
