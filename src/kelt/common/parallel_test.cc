// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/common/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace kelt::internal {
namespace {

TEST(ParallelFor, RunsEveryIndexExactlyOnce) {
  for (size_t n : {0u, 1u, 2u, 3u, 7u, 64u}) {
    for (size_t threads : {0u, 1u, 2u, 4u, 100u}) {
      std::vector<std::atomic<int>> runs(n);
      ParallelFor(n, threads, [&](size_t i) { runs[i].fetch_add(1); });
      for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(runs[i].load(), 1) << "n=" << n << " threads=" << threads << " i=" << i;
      }
    }
  }
}

TEST(ParallelFor, UsesAtMostTheThreadsAskedFor) {
  std::mutex mu;
  std::set<std::thread::id> seen;
  ParallelFor(16, 3, [&](size_t) {
    std::lock_guard<std::mutex> lock(mu);
    seen.insert(std::this_thread::get_id());
  });
  EXPECT_LE(seen.size(), 3u);
  EXPECT_TRUE(seen.count(std::this_thread::get_id())) << "the caller runs a share";
  std::set<std::thread::id> one;
  ParallelFor(5, 1, [&](size_t) { one.insert(std::this_thread::get_id()); });
  EXPECT_EQ(one, std::set<std::thread::id>{std::this_thread::get_id()});
}

}  // namespace
}  // namespace kelt::internal
