// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#pragma once

#include <iosfwd>

namespace arrow {
class RecordBatch;
}

namespace kelt::cli {

/// Print a batch as an aligned text table with a header row and a row count footer.
/// Cells are shown as text; nulls as "null"; long cells are cut at 40 characters.
void PrintTable(const arrow::RecordBatch& batch, std::ostream& out);

}  // namespace kelt::cli
