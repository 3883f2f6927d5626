// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Partition specs from config ("day(at), base") and the partition values of rows:
// Iceberg's identity, year, month, day and hour transforms. bucket[N] (Iceberg's
// 32-bit murmur3 of the value's single-value form) and truncate[W] come later.
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
/// transform year, month, day or hour, into a spec over `schema` (field ids from 1000,
/// names `column` or `column_<transform>`). Empty text: unpartitioned. Errors name the
/// item: unknown column or transform, a time transform on a non-time column.
Result<PartitionSpec> ParsePartitionSpec(std::string_view text, const Schema& schema);

/// The partition tuple's fields and their result types (manifest's `r102` record).
Result<std::vector<PartitionColumn>> PartitionColumns(const PartitionSpec& spec,
                                                      const Schema& schema);

/// For each field of `spec`, the value of every row of `batch` (a batch of the
/// schema's Arrow form, ToIcebergBatch's output): `out[field][row]`, nullopt for null.
Result<std::vector<std::vector<std::optional<PartitionDatum>>>> PartitionValues(
    const arrow::RecordBatch& batch, const PartitionSpec& spec, const Schema& schema);

}  // namespace kelt::iceberg
