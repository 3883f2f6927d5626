// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Partition specs from config ("day(at), bucket[16](id), base") and the partition
// values of rows: Iceberg's identity, year, month, day, hour and bucket[N] transforms
// (truncate[W] comes later).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/iceberg/manifest.h"
#include "kelt/iceberg/metadata.h"
#include "kelt/iceberg/table_schema.h"
#include "kelt/status.h"

namespace arrow {
class RecordBatch;
}  // namespace arrow

namespace kelt::iceberg {

/// Parse a comma-separated list of `column` (identity) or `transform(column)` with
/// transform year, month, day, hour or bucket[N], into a spec over `schema` (field ids
/// from 1000, names `column`, `column_<transform>` or `column_bucket`). Empty text:
/// unpartitioned. Errors name the item: unknown column or transform, a time transform on
/// a non-time column.
Result<PartitionSpec> ParsePartitionSpec(std::string_view text, const Schema& schema);

/// Iceberg's bucket hash: 32-bit Murmur3 (x86, seed 0) of the value's hash form (int,
/// long, date, time, timestamp: the value as 8 little-endian bytes of a long; string:
/// its UTF-8 bytes; binary/fixed: the bytes).
int32_t BucketHash(std::string_view bytes);
int32_t BucketHashLong(int64_t v);

/// The partition tuple's fields and their result types (manifest's `r102` record).
Result<std::vector<PartitionColumn>> PartitionColumns(const PartitionSpec& spec,
                                                      const Schema& schema);

/// For each field of `spec`, the value of every row of `batch` (a batch of the
/// schema's Arrow form, ToIcebergBatch's output): `out[field][row]`, nullopt for null.
Result<std::vector<std::vector<std::optional<PartitionDatum>>>> PartitionValues(
    const arrow::RecordBatch& batch, const PartitionSpec& spec, const Schema& schema);

}  // namespace kelt::iceberg
