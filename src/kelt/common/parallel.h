// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// kelt's threads: one executor per process, sized by the CPU the process may use (its
// affinity mask and its cgroup's CPU quota), for the ELT loop's writer task and the
// fork-join work of a window (loader shares, the files of its partitions). librdkafka's
// and the AWS SDK's threads are their own.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "kelt/common/mutex.h"

namespace kelt::internal {

/// The cores this process may use: the CPUs of its affinity mask, capped by its
/// cgroup's CPU quota (cgroup v2 cpu.max, or v1 cfs_quota_us / cfs_period_us, the
/// smallest along the path, rounded up). At least 1. Read once.
size_t UsableCores();

/// What UsableCores() computes, from the text of the files it reads (for tests):
/// `cpus` in the affinity mask; cgroup v2 "cpu.max" contents from the process's cgroup
/// up to the root (empty when absent); v1 quota and period (-1 when absent).
size_t CoresWithin(size_t cpus, const std::vector<std::string>& cpu_max_files,
                   long long v1_quota_us, long long v1_period_us);

/// A fixed set of worker threads and a queue of tasks. Thread-safe.
class Executor {
 public:
  /// `threads` workers, started when the first task comes.
  explicit Executor(size_t threads);
  ~Executor();  // runs what is queued, then joins the workers
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  size_t threads() const { return threads_; }

  /// Start the workers now if they are not running (in this process) yet, rather than
  /// with the first task: a service's thread count then stays flat after its start.
  void Start();

  /// Run `fn` on a worker; the future holds its result.
  template <typename Fn>
  std::future<std::invoke_result_t<Fn>> Submit(Fn fn) {
    auto task =
        std::make_shared<std::packaged_task<std::invoke_result_t<Fn>()>>(std::move(fn));
    auto result = task->get_future();
    Post([task] { (*task)(); });
    return result;
  }

  /// Run fn(0) … fn(n - 1), each exactly once, at most `parallel` at a time; the caller
  /// runs indices too and returns when all have returned. Safe from a task of this
  /// executor (the caller does whatever no free worker takes). fn must not throw.
  void ParallelFor(size_t n, size_t parallel, const std::function<void(size_t)>& fn);

 private:
  void Post(std::function<void()> task);
  void Work();
  // Start the workers unless this process did already.
  void StartLocked() KELT_REQUIRES(mu_);

  const size_t threads_;
  Mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_ KELT_GUARDED_BY(mu_);
  std::vector<std::thread> workers_ KELT_GUARDED_BY(mu_);
  bool stopping_ KELT_GUARDED_BY(mu_) = false;
  // The pid that started workers_ (a forked child starts its own).
  long started_by_ KELT_GUARDED_BY(mu_) = 0;
};

/// The process's executor: UsableCores() workers.
Executor& SharedExecutor();

/// SharedExecutor().ParallelFor(n, threads, fn).
template <typename Fn>
void ParallelFor(size_t n, size_t threads, Fn&& fn) {
  SharedExecutor().ParallelFor(n, threads, std::function<void(size_t)>(fn));
}

/// Workers for work that mostly waits on the disk or the network (fsync, renames,
/// uploads): kIoThreads of them whatever the cores, so that finishing hundreds of
/// partitions' files does not wait for one fsync after another on two cores.
inline constexpr size_t kIoThreads = 8;
Executor& IoExecutor();

/// IoExecutor().ParallelFor(n, kIoThreads, fn).
template <typename Fn>
void IoParallelFor(size_t n, Fn&& fn) {
  IoExecutor().ParallelFor(n, kIoThreads, std::function<void(size_t)>(fn));
}

}  // namespace kelt::internal
