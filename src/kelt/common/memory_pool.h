// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#pragma once

namespace arrow {
class MemoryPool;
}

namespace kelt::internal {

/// The Arrow memory pool for kelt's windows (loaders, Parquet writers): jemalloc when
/// this Arrow build has it and ARROW_DEFAULT_MEMORY_POOL does not choose, otherwise
/// Arrow's default pool. Windows allocate and free the same sizes again and again;
/// jemalloc keeps those pages, where mimalloc (Arrow's default) gives them back and
/// faults them in again: measured on the ELT benchmark, ~55 MB lower peak RSS and a
/// third less system time (bench/README.md).
arrow::MemoryPool* WindowPool();

/// Use `pool` from now on (loaders and writers made later). The Python module sets
/// Arrow's default pool, pyarrow's, so kelt's tables count in pa.total_allocated_bytes()
/// and follow pyarrow's pool settings.
void SetWindowPool(arrow::MemoryPool* pool);

}  // namespace kelt::internal
