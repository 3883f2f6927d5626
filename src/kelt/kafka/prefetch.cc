// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/kafka/prefetch.h"

#include <algorithm>
#include <exception>

namespace kelt::kafka {

bool HasFetchQueueBackoff() { return rd_kafka_version() >= 0x02020000; }

void SetPrefetchDefaults(std::map<std::string, std::string>* props) {
  // Prefetch is bounded by bytes only (see prefetch.h): 8 MB keeps a loop that loads
  // and lands 100,000-record windows fed (bench/README.md) at an eighth of librdkafka's
  // default 64 MB; 16 MB brought no speed and ~25-30 MB more peak RSS (issue 18).
  (*props)["queued.min.messages"] = "10000000";
  (*props)["queued.max.messages.kbytes"] = "8192";
  // fetch.max.bytes is left unset on purpose: librdkafka then bounds it by this prefetch
  // limit (and raises it to message.max.bytes), so one fetch response over hundreds of
  // partitions stays near 8 MB. Setting it here would stop that adjustment (a lower
  // queued.max.messages.kbytes would no longer lower it, a message.max.bytes above it
  // would be refused).
  if (HasFetchQueueBackoff()) (*props)["fetch.queue.backoff.ms"] = "20";
}

FetchWaker::~FetchWaker() {
  {
    internal::MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void FetchWaker::Nudge() {
  {
    internal::MutexLock lock(&mu_);
    nudged_ = true;
  }
  cv_.notify_one();
}

void FetchWaker::Run() {
  internal::MutexLock lock(&mu_);
  while (true) {
    while (!stop_ && !nudged_) lock.Wait(cv_);
    if (stop_) return;
    nudged_ = false;
    lock.Unlock();
    Wake();
    lock.Lock();
  }
}

void FetchWaker::Wake() {
  rd_kafka_topic_partition_list_t* assigned = nullptr;
  if (rd_kafka_assignment(rk_, &assigned) == RD_KAFKA_RESP_ERR_NO_ERROR &&
      assigned != nullptr) {
    PartitionListPtr list(assigned);
    if (list->cnt > 0) {
      for (int i = 0; i < list->cnt; ++i) list->elems[i].offset = RD_KAFKA_OFFSET_END;
      (void)rd_kafka_offsets_for_times(rk_, list.get(), kWakeTimeoutMs);
    }
  }
}

PrefetchControl::PrefetchControl(const std::map<std::string, std::string>& props) {
  // Wake the fetchers after a quarter of either prefetch limit was drained.
  auto limit = [&](const char* key, int64_t fallback) {
    auto it = props.find(key);
    if (it == props.end()) return fallback;
    try {
      return static_cast<int64_t>(std::stoll(it->second));
    } catch (const std::exception&) {
      return fallback;  // librdkafka rejects it when the client is made, naming it
    }
  };
  nudge_bytes_ = std::max<int64_t>(1, limit("queued.max.messages.kbytes", 65536) * 256);
  nudge_messages_ = std::max<int64_t>(1, limit("queued.min.messages", 100000) / 4);
}

void PrefetchControl::Start(rd_kafka_t* rk) {
  if (!HasFetchQueueBackoff()) waker_ = std::make_unique<FetchWaker>(rk);
}

void PrefetchControl::NoteDrained(const std::vector<MessagePtr>& batch) {
  if (waker_ == nullptr) return;
  drained_messages_ += static_cast<int64_t>(batch.size());
  for (const auto& m : batch) drained_bytes_ += static_cast<int64_t>(m->len + m->key_len);
  if (drained_bytes_ >= nudge_bytes_ || drained_messages_ >= nudge_messages_) {
    waker_->Nudge();
    drained_bytes_ = drained_messages_ = 0;
  }
}

}  // namespace kelt::kafka
