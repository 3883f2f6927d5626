// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Fork-join over a handful of independent tasks (a window's loader shares, the files of
// a window's partitions): the caller's thread runs task 0 and waits for the others.
// Threads are made per call; the tasks here take milliseconds, a thread microseconds.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace kelt::internal {

/// The cores this process may use for one window's work (at least 1).
inline size_t UsableCores() {
  return std::max<size_t>(1, std::thread::hardware_concurrency());
}

/// Runs fn(0) … fn(n - 1), at most `threads` at a time (the caller's included), each
/// index exactly once; returns when all have returned. fn must not throw.
template <typename Fn>
void ParallelFor(size_t n, size_t threads, Fn&& fn) {
  threads = std::clamp<size_t>(threads, 1, std::max<size_t>(n, 1));
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  // Worker w runs indices w, w + threads, …: each index once, no shared counter.
  auto worker = [&](size_t w) {
    for (size_t i = w; i < n; i += threads) fn(i);
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (size_t w = 1; w < threads; ++w) pool.emplace_back(worker, w);
  worker(0);
  for (auto& t : pool) t.join();
}

}  // namespace kelt::internal
