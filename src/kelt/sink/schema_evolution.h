// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The check every sink's Evolve() starts with: the new landing schema keeps each
// current column (by name, same Arrow type, nullability aside) and only adds nullable
// ones. Internal header (tested through each sink's Evolve tests).
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "kelt/status.h"

namespace arrow {
class Schema;
}  // namespace arrow

namespace kelt::internal {

/// The indices in `next` of the columns `current` lacks, or an error (prefixed with
/// `sink`, the sink's name) naming a column that is missing, changed type (both types
/// named) or is new and not nullable.
Result<std::vector<int>> AddedColumns(const arrow::Schema& current,
                                      const arrow::Schema& next, std::string_view sink);

}  // namespace kelt::internal
