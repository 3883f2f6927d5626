// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/common/memory_pool.h"

#include <arrow/memory_pool.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace kelt::internal {
namespace {

std::atomic<arrow::MemoryPool*> chosen{nullptr};

arrow::MemoryPool* Preferred() {
  const char* env = std::getenv("ARROW_DEFAULT_MEMORY_POOL");
  if (env == nullptr || *env == '\0') {
    arrow::MemoryPool* je = nullptr;
    if (arrow::jemalloc_memory_pool(&je).ok() && je != nullptr) return je;
  }
  return arrow::default_memory_pool();
}

}  // namespace

arrow::MemoryPool* WindowPool() {
  arrow::MemoryPool* pool = chosen.load(std::memory_order_acquire);
  if (pool != nullptr) return pool;
  arrow::MemoryPool* expected = nullptr;
  chosen.compare_exchange_strong(expected, Preferred(), std::memory_order_acq_rel);
  return chosen.load(std::memory_order_acquire);
}

void SetWindowPool(arrow::MemoryPool* pool) {
  chosen.store(pool != nullptr ? pool : arrow::default_memory_pool(),
               std::memory_order_release);
}

void RestartWithWindowAllocatorConf(char** argv) {
  constexpr const char* kVar = "JE_ARROW_MALLOC_CONF";
  if (std::getenv(kVar) != nullptr || argv == nullptr || argv[0] == nullptr) return;
  // Not when /proc/self/exe is not this program: started through the dynamic loader
  // (`ld-linux-x86-64.so.2 ./kelt`), or under valgrind (its preload), which would go on
  // checking the image left behind.
  std::error_code ec;
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).filename();
  if (ec || exe.rfind("ld-", 0) == 0) return;
  if (const char* preload = std::getenv("LD_PRELOAD");
      preload != nullptr && std::strstr(preload, "vgpreload") != nullptr) {
    return;
  }
  if (setenv(kVar, kWindowAllocatorConf, 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv(kVar);  // not restarted: run as we are, and leave children the defaults
}

}  // namespace kelt::internal
