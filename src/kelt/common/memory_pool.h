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

/// The options kelt's programs give Arrow's jemalloc (`JE_ARROW_MALLOC_CONF`): one arena
/// instead of four per core. A window's buffers are allocated and freed by several
/// threads (poll, loaders, writers); with an arena per thread each keeps its own freed
/// pages, with one they are reused by whichever thread allocates next: ~15 MB lower peak
/// RSS of the ELT loop at no measured CPU cost (bench/README.md).
inline constexpr const char* kWindowAllocatorConf = "narenas:1";

/// For a program's main(), first thing: unless JE_ARROW_MALLOC_CONF is set (the user's
/// choice, even empty, wins), start this program again, same pid and arguments, with
/// kWindowAllocatorConf in it. jemalloc reads its options when libarrow is loaded,
/// before main() runs, so there is no other way to set them for this process. Returns
/// (doing nothing more) if the variable was set, if /proc/self/exe is not the program
/// (run through the dynamic loader, or under valgrind) or if it cannot be started again.
void RestartWithWindowAllocatorConf(char** argv);

}  // namespace kelt::internal
