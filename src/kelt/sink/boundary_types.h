// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Arrow types a sink cannot take as they are, rewritten at the sink's boundary into
// ones it can: a union (Parquet has no union type) becomes a struct with one nullable
// child per branch, a decimal256 becomes a decimal128 or its text (DuckDB's decimals
// stop at 38 digits and its Arrow import takes 128-bit ones only), the null type
// becomes an all-null utf8 column (a SQL column needs a type). The rewrite descends
// into struct, list and map columns, so a union inside a list is found too; columns
// without such a type are passed through untouched (no copy). Internal header (tested
// by boundary_types_test.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kelt/status.h"

namespace arrow {
class Array;
class DataType;
class Schema;
}  // namespace arrow

namespace kelt::internal {

/// Which rewrites a sink needs.
struct BoundaryRules {
  /// dense_union / sparse_union → struct<branch name: branch type, …> (every child
  /// nullable); row i has the chosen branch's value in its child and null in every
  /// other, so all children are null when the union value is null.
  bool union_as_struct = false;
  /// decimal256(p ≤ 38, s) → decimal128(p, s); decimal256(p > 38, s) → utf8 (the
  /// exact decimal text, e.g. "-12.50").
  bool narrow_decimal256 = false;
  /// null → utf8 (every value null).
  bool null_as_utf8 = false;
};

/// Return the type `type` becomes under `rules` (the same object when unchanged).
std::shared_ptr<arrow::DataType> BoundaryType(
    const std::shared_ptr<arrow::DataType>& type, const BoundaryRules& rules);

/// Return `schema` with each field's type rewritten (the same object when unchanged).
std::shared_ptr<arrow::Schema> BoundarySchema(
    const std::shared_ptr<arrow::Schema>& schema, const BoundaryRules& rules);

/// Rewrite one column's values to BoundaryType(column.type()). Errors name `column`.
Result<std::shared_ptr<arrow::Array>> ToBoundary(
    const std::shared_ptr<arrow::Array>& array, const BoundaryRules& rules,
    const std::string& column);

/// True when row `row` of a union array is null: a union has no validity bitmap of its
/// own, its value is null when the chosen child's value is.
bool IsUnionNull(const arrow::Array& union_array, int64_t row);

}  // namespace kelt::internal
