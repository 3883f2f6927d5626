// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// std::mutex with Clang's thread-safety annotations (common/thread_annotations.h), which
// libstdc++'s own lacks: state marked KELT_GUARDED_BY(mu_) is then checked at compile
// time by clang's -Wthread-safety. Nothing more than std::mutex and
// std::condition_variable underneath.
#pragma once

#include <condition_variable>
#include <mutex>

#include "kelt/common/thread_annotations.h"

namespace kelt::internal {

/// A mutex the analysis knows. Lock it with MutexLock.
class KELT_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() KELT_ACQUIRE() { mu_.lock(); }
  void Unlock() KELT_RELEASE() { mu_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

/// Holds `mu` for its scope (unless Unlock() gave it up for a while).
class KELT_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) KELT_ACQUIRE(mu) : lock_(mu->mu_) {}
  ~MutexLock() KELT_RELEASE() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  /// Give the mutex up, to call out without it; Lock() takes it again.
  void Unlock() KELT_RELEASE() { lock_.unlock(); }
  void Lock() KELT_ACQUIRE() { lock_.lock(); }

  /// Release the mutex until `cv` is notified (or wakes spuriously), then hold it again.
  /// Callers loop on their condition, which the analysis then checks under the lock.
  void Wait(std::condition_variable& cv) { cv.wait(lock_); }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace kelt::internal
