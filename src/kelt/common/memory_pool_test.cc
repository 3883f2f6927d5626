// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/common/memory_pool.h"

#include <arrow/memory_pool.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace kelt::internal {
namespace {

TEST(WindowPool, PrefersJemallocUnlessChosenAndCanBeSet) {
  arrow::MemoryPool* before = WindowPool();
  ASSERT_NE(before, nullptr);
  arrow::MemoryPool* je = nullptr;
  const char* env = std::getenv("ARROW_DEFAULT_MEMORY_POOL");
  if ((env == nullptr || *env == '\0') && arrow::jemalloc_memory_pool(&je).ok()) {
    EXPECT_EQ(before, je);
    EXPECT_EQ(before->backend_name(), "jemalloc");
  } else {
    EXPECT_EQ(before, arrow::default_memory_pool());
  }
  SetWindowPool(arrow::system_memory_pool());
  EXPECT_EQ(WindowPool(), arrow::system_memory_pool());
  SetWindowPool(nullptr);  // Arrow's default
  EXPECT_EQ(WindowPool(), arrow::default_memory_pool());
  SetWindowPool(before);
  EXPECT_EQ(WindowPool(), before);
}

}  // namespace
}  // namespace kelt::internal
