// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/common/memory_pool.h"

#include <arrow/memory_pool.h>

#include <cstdlib>

namespace kelt::internal {

arrow::MemoryPool* WindowPool() {
  static arrow::MemoryPool* const pool = [] {
    const char* chosen = std::getenv("ARROW_DEFAULT_MEMORY_POOL");
    if (chosen == nullptr || *chosen == '\0') {
      arrow::MemoryPool* je = nullptr;
      if (arrow::jemalloc_memory_pool(&je).ok() && je != nullptr) return je;
    }
    return arrow::default_memory_pool();
  }();
  return pool;
}

}  // namespace kelt::internal
