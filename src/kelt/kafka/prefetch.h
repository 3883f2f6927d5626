// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Prefetch flow control: how much librdkafka fetches ahead of the reader, and how soon
// it fetches again once the reader made room.
//
// Prefetch stalls (librdkafka#2879): once the consumer queue holds queued.min.messages
// or queued.max.messages.kbytes, librdkafka before 2.2 stops fetching and looks again
// only when its broker thread next wakes up: after up to 1 s when no request is in
// flight. A reader slower than the fetcher then gets one queue-full (64 MB by default)
// per second, whatever its own speed. kelt raises queued.min.messages (the byte limit
// bounds memory) and, after draining a quarter of either limit, wakes the broker threads
// with a ListOffsets request (FetchWaker, off the polling thread). From 2.2 on,
// fetch.queue.backoff.ms (20 ms here) does this instead. Internal header.
#pragma once

#include <librdkafka/rdkafka.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kelt/common/mutex.h"
#include "kelt/common/thread_annotations.h"
#include "kelt/kafka/client.h"

namespace kelt::kafka {

/// librdkafka from 2.2 has fetch.queue.backoff.ms and needs no waker.
bool HasFetchQueueBackoff();

/// Set kelt's prefetch limits in `props` (a user's properties may override them later).
void SetPrefetchDefaults(std::map<std::string, std::string>* props);

// Wakes the broker threads that fetch the assigned partitions, so a partition that
// stopped fetching because the queue was full looks again now rather than after up to
// 1 s: a ListOffsets request for every assigned partition (one per leader) is an op
// for each leader's broker thread, whose loop re-decides which partitions to fetch. The
// answer is not used. One request is in flight at a time; nudges during it coalesce.
class FetchWaker {
 public:
  explicit FetchWaker(rd_kafka_t* rk) : rk_(rk), thread_([this] { Run(); }) {}
  ~FetchWaker();
  FetchWaker(const FetchWaker&) = delete;
  FetchWaker& operator=(const FetchWaker&) = delete;

  /// Ask for a wake-up (from the polling thread).
  void Nudge() KELT_EXCLUDES(mu_);

 private:
  void Run() KELT_EXCLUDES(mu_);
  // The request that wakes the broker threads (without the mutex).
  void Wake();

  static constexpr int kWakeTimeoutMs = 2000;
  rd_kafka_t* const rk_;
  internal::Mutex mu_;
  std::condition_variable cv_;
  bool nudged_ KELT_GUARDED_BY(mu_) = false;
  bool stop_ KELT_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts after the members it uses
};

/// Counts what the reader drained and, with a FetchWaker (librdkafka before 2.2), wakes
/// the fetchers once a quarter of either prefetch limit was drained.
class PrefetchControl {
 public:
  /// The limits are read from the client's final properties.
  explicit PrefetchControl(const std::map<std::string, std::string>& props);

  /// Start the waker for `rk` if this librdkafka needs one.
  void Start(rd_kafka_t* rk);
  /// Stop the waker (joins its thread, which uses the handle).
  void Stop() { waker_.reset(); }

  /// Note a batch the reader took from the queue.
  void NoteDrained(const std::vector<MessagePtr>& batch);

 private:
  std::unique_ptr<FetchWaker> waker_;  // before librdkafka 2.2
  int64_t nudge_bytes_ = 0;            // wake the fetchers after draining this much
  int64_t nudge_messages_ = 0;         // ... or this many messages
  int64_t drained_bytes_ = 0;          // since the last wake
  int64_t drained_messages_ = 0;
};

}  // namespace kelt::kafka
