// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/common/parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
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
  std::condition_variable caller_ran_cv;
  bool caller_ran = false;
  std::set<std::thread::id> seen;
  const std::thread::id caller = std::this_thread::get_id();
  // A helper's index waits (10 s at most) until the caller ran one: helpers that start
  // first cannot take every index (under ThreadSanitizer they did, before the caller
  // claimed its first), so the caller's share is seen whatever the timing.
  ParallelFor(16, 3, [&](size_t) {
    std::unique_lock<std::mutex> lock(mu);
    seen.insert(std::this_thread::get_id());
    if (std::this_thread::get_id() == caller) {
      caller_ran = true;
      caller_ran_cv.notify_all();
    } else {
      caller_ran_cv.wait_for(lock, std::chrono::seconds(10), [&] { return caller_ran; });
    }
  });
  EXPECT_LE(seen.size(), 3u);
  EXPECT_TRUE(seen.count(caller)) << "the caller runs a share";
  std::set<std::thread::id> one;
  ParallelFor(5, 1, [&](size_t) { one.insert(std::this_thread::get_id()); });
  EXPECT_EQ(one, std::set<std::thread::id>{std::this_thread::get_id()});
}

}  // namespace
}  // namespace kelt::internal

namespace kelt::internal {
namespace {

TEST(UsableCores, TheAffinityMaskCappedByTheCgroupQuota) {
  EXPECT_EQ(CoresWithin(8, {}, -1, -1), 8u);
  EXPECT_EQ(CoresWithin(8, {"max 100000\n"}, -1, -1), 8u);
  EXPECT_EQ(CoresWithin(8, {"200000 100000\n"}, -1, -1), 2u);
  EXPECT_EQ(CoresWithin(8, {"150000 100000\n"}, -1, -1), 2u) << "1.5 CPUs round up";
  EXPECT_EQ(CoresWithin(8, {"50000 100000\n"}, -1, -1), 1u);
  // The smallest quota along the path wins; a level without one does not count.
  EXPECT_EQ(CoresWithin(8, {"max 100000", "300000 100000", "600000 100000"}, -1, -1), 3u);
  EXPECT_EQ(CoresWithin(2, {"400000 100000"}, -1, -1), 2u) << "affinity is the cap";
  EXPECT_EQ(CoresWithin(16, {}, 400000, 100000), 4u) << "cgroup v1";
  EXPECT_EQ(CoresWithin(0, {"garbage"}, -1, 0), 1u);
  EXPECT_GE(UsableCores(), 1u);
  EXPECT_LE(UsableCores(), std::max<size_t>(1, std::thread::hardware_concurrency()));
}

TEST(Executor, SubmitRunsOnAWorkerAndReturnsTheResult) {
  Executor ex(2);
  auto f = ex.Submit([] { return std::this_thread::get_id(); });
  EXPECT_NE(f.get(), std::this_thread::get_id());
  Executor inline_ex(0);
  auto g = inline_ex.Submit([] { return 7; });
  EXPECT_EQ(g.get(), 7);
}

// Start() starts the workers at once, and only once: later tasks find them running.
TEST(Executor, StartStartsTheWorkersOnce) {
  auto threads = [] {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
      (void)e;
      ++n;
    }
    return n;
  };
  const size_t before = threads();
  Executor ex(3);
  EXPECT_EQ(threads(), before);  // none until asked
  ex.Start();
  EXPECT_EQ(threads(), before + 3);
  ex.Start();
  EXPECT_EQ(ex.Submit([] { return 1; }).get(), 1);
  EXPECT_EQ(threads(), before + 3);
  Executor inline_ex(0);
  inline_ex.Start();  // no workers to start
  EXPECT_EQ(threads(), before + 3);
}

// A task that fork-joins on its own executor while every worker is busy does not
// deadlock: the caller takes what no worker does.
TEST(Executor, ParallelForFromATaskWhileEveryWorkerIsBusy) {
  Executor ex(1);
  std::atomic<int> sum{0};
  auto f = ex.Submit([&] {
    ex.ParallelFor(10, 4, [&](size_t i) { sum += static_cast<int>(i); });
    return sum.load();
  });
  ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(f.get(), 45);
}

}  // namespace
}  // namespace kelt::internal
