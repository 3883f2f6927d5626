// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Arrow across the Python boundary (STYLE rule 6) through the Arrow PyCapsule
// interface: tables leave as `arrow_array_stream` / `arrow_schema` capsules whose
// arrays point at kelt's buffers (no copy), and anything that offers
// `__arrow_c_stream__` (pyarrow, polars, kelt's own windows) comes in the same way.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <vector>

namespace arrow {
class RecordBatch;
class Schema;
class Table;
}  // namespace arrow

namespace kelt::python {

/// An Arrow table held by the module, exposed through the PyCapsule interface.
class ArrowTable {
 public:
  explicit ArrowTable(std::shared_ptr<arrow::Table> table) : table_(std::move(table)) {}
  /// Wrap one batch (zero-copy: the table's only chunk).
  static ArrowTable FromBatch(const std::shared_ptr<arrow::RecordBatch>& batch);
  /// Several batches of `schema`, in order, as the table's chunks (zero-copy).
  static ArrowTable FromBatches(
      const std::shared_ptr<arrow::Schema>& schema,
      const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches);

  const std::shared_ptr<arrow::Table>& table() const { return table_; }
  int64_t num_rows() const;
  nanobind::list column_names() const;

  /// `__arrow_c_stream__`: a capsule "arrow_array_stream" over the table's chunks.
  nanobind::object StreamCapsule(nanobind::handle requested_schema) const;
  /// `__arrow_c_schema__`: a capsule "arrow_schema".
  nanobind::object SchemaCapsule() const;

 private:
  std::shared_ptr<arrow::Table> table_;
};

/// Read an object offering `__arrow_c_stream__` (or a stream capsule) into a table. The
/// buffers stay the producer's (no copy). Raises InvalidError naming `what` otherwise.
std::shared_ptr<arrow::Table> ImportArrow(nanobind::handle obj, const char* what);

}  // namespace kelt::python
