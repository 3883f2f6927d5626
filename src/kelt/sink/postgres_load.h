// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// A one-shot load of a record batch into a PostgreSQL table, with the sink's type
// mapping, identifier quoting and binary COPY (postgres_sink.cc), for callers that are
// not the ELT loop: the pipeline JSON runner's `postgresql` sink. Internal header.
#pragma once

#include <cstdint>
#include <string>

#include "kelt/status.h"

namespace arrow {
class RecordBatch;
}  // namespace arrow

namespace kelt::pg {

struct TableLoadOptions {
  /// libpq connection string or URI (its password is never in a message).
  std::string conninfo;
  /// "schema.table" or "table" (each part quoted as one identifier).
  std::string table;
  bool create_table_if_missing = true;
  bool truncate_before_load = false;
  /// As PostgresSinkOptions::replace_nul_in_text.
  bool replace_nul_in_text = false;
};

/// Load `batch` into the table in one transaction: create it from the batch's schema
/// when missing (and allowed), else check its columns take the batch's types; TRUNCATE
/// when asked; COPY (binary) the rows; COMMIT. Any error rolls everything back.
/// Returns the rows loaded.
Result<int64_t> LoadTable(const TableLoadOptions& options,
                          const arrow::RecordBatch& batch);

}  // namespace kelt::pg
