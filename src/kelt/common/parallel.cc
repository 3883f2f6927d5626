// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/common/parallel.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>
#include <string>

namespace kelt::internal {

size_t CoresWithin(size_t cpus, const std::vector<std::string>& cpu_max_files,
                   long long v1_quota_us, long long v1_period_us) {
  double limit = static_cast<double>(std::max<size_t>(cpus, 1));
  // cgroup v2: "max 100000" (no limit) or "<quota> <period>", per level.
  for (const std::string& text : cpu_max_files) {
    std::istringstream in(text);
    std::string quota;
    long long period = 0;
    if (!(in >> quota >> period) || quota == "max" || period <= 0) continue;
    try {
      const long long q = std::stoll(quota);
      if (q > 0) limit = std::min(limit, static_cast<double>(q) / period);
    } catch (const std::exception&) {
    }
  }
  if (v1_quota_us > 0 && v1_period_us > 0) {
    limit = std::min(limit, static_cast<double>(v1_quota_us) / v1_period_us);
  }
  // 1.5 CPUs of quota keep 2 threads busy half the time: round up.
  const auto cores = static_cast<size_t>(limit + 0.999);
  return std::max<size_t>(cores, 1);
}

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

long long ReadNumber(const std::string& path) {
  std::ifstream in(path);
  long long v = -1;
  if (!(in >> v)) return -1;
  return v;
}

size_t ComputeUsableCores() {
  size_t cpus = std::thread::hardware_concurrency();
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    cpus = static_cast<size_t>(CPU_COUNT(&set));
  }
  // The process's cgroup: "0::/path" (v2) or "N:cpu,cpuacct:/path" (v1).
  std::vector<std::string> cpu_max;
  long long v1_quota = -1, v1_period = -1;
  std::ifstream cgroups("/proc/self/cgroup");
  for (std::string line; std::getline(cgroups, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    if (controllers.empty()) {  // v2: every level from the process's cgroup up
      while (true) {
        std::string text = ReadFile("/sys/fs/cgroup" + path + "/cpu.max");
        if (!text.empty()) cpu_max.push_back(std::move(text));
        if (path.empty() || path == "/") break;
        path = path.substr(0, path.rfind('/'));
      }
    } else if (controllers.find("cpu") != std::string::npos &&
               controllers.find("cpuset") == std::string::npos) {
      for (const char* root : {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"}) {
        for (const std::string& dir : {std::string(root) + path, std::string(root)}) {
          const long long q = ReadNumber(dir + "/cpu.cfs_quota_us");
          const long long p = ReadNumber(dir + "/cpu.cfs_period_us");
          if (q > 0 && p > 0) {
            v1_quota = q;
            v1_period = p;
            break;
          }
        }
        if (v1_quota > 0) break;
      }
    }
  }
  return CoresWithin(cpus, cpu_max, v1_quota, v1_period);
}

}  // namespace

size_t UsableCores() {
  static const size_t cores = ComputeUsableCores();
  return cores;
}

Executor::Executor(size_t threads) : threads_(threads) {}

Executor::~Executor() {
  std::vector<std::thread> workers;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    if (started_by_ == static_cast<long>(::getpid())) workers = std::move(workers_);
  }
  wake_.notify_all();
  for (auto& t : workers) t.join();
  // Workers of a parent process (this is a forked child) are not ours to join.
  MutexLock lock(&mu_);
  for (auto& t : workers_) t.detach();
}

void Executor::Post(std::function<void()> task) {
  if (threads_ == 0) {
    task();
    return;
  }
  {
    MutexLock lock(&mu_);
    StartLocked();
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void Executor::Start() {
  if (threads_ == 0) return;
  MutexLock lock(&mu_);
  StartLocked();
}

void Executor::StartLocked() {
  const long pid = static_cast<long>(::getpid());
  if (started_by_ == pid) return;
  // First task, or the first in a forked child: its parent's workers do not exist
  // here, and their std::thread objects must not be joined.
  for (auto& t : workers_) t.detach();
  workers_.clear();
  started_by_ = pid;
  for (size_t i = 0; i < threads_; ++i) workers_.emplace_back([this] { Work(); });
}

void Executor::Work() {
  MutexLock lock(&mu_);
  while (true) {
    while (!stopping_ && queue_.empty()) lock.Wait(wake_);
    if (queue_.empty()) return;  // stopping, nothing left
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    lock.Unlock();
    task();
    lock.Lock();
  }
}

void Executor::ParallelFor(size_t n, size_t parallel,
                           const std::function<void(size_t)>& fn) {
  parallel = std::clamp<size_t>(parallel, 1, std::max<size_t>(n, 1));
  if (parallel <= 1 || threads_ == 0) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  // Indices are claimed from a counter by the caller and by helpers posted to the
  // workers; a helper that starts after all are claimed returns at once. The caller
  // waits only for indices claimed, never for a helper to start, so a task of this
  // executor can call ParallelFor while every worker is busy.
  struct Shared {
    std::atomic<size_t> next{0};
    std::mutex mu;
    std::condition_variable done_cv;
    size_t done = 0;
  };
  auto shared = std::make_shared<Shared>();
  auto run = [shared, n, &fn] {
    size_t finished = 0;
    for (size_t i; (i = shared->next.fetch_add(1)) < n;) {
      fn(i);
      ++finished;
    }
    if (finished > 0) {
      std::lock_guard lock(shared->mu);
      shared->done += finished;
      if (shared->done == n) shared->done_cv.notify_all();
    }
  };
  for (size_t h = 1; h < parallel; ++h) Post(run);
  run();
  std::unique_lock lock(shared->mu);
  shared->done_cv.wait(lock, [&] { return shared->done == n; });
}

Executor& SharedExecutor() {
  // Never destroyed: tasks may still be posted by static destructors of other objects.
  static Executor* executor = new Executor(UsableCores());
  return *executor;
}

Executor& IoExecutor() {
  static Executor* executor = new Executor(kIoThreads);  // as SharedExecutor
  return *executor;
}

}  // namespace kelt::internal
