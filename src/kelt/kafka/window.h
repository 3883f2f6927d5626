// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// What a Window (include/kelt/kafka.h) holds: the rd_kafka_message_t objects it owns,
// so its RecordViews point straight into librdkafka's fetch buffers (no payload copy
// between the broker and the Load step), the offsets it covers per partition with each
// partition's assignment generation at poll time, why it ended, and its header views,
// built on first use. Internal header.
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "kelt/kafka.h"
#include "kelt/kafka/client.h"

namespace kelt {

class Window::Impl {
 public:
  // Keeps the librdkafka handle alive while this window's messages exist: destroying
  // the handle waits for every outstanding message, so a window that outlived its
  // Consumer would otherwise hang Close(). Declared first, destroyed last.
  std::shared_ptr<void> keepalive;
  std::vector<kafka::MessagePtr> messages;
  // Assignment generation of each span's partition when its records were polled:
  // Commit() skips partitions whose generation changed (revoked, maybe reassigned).
  std::vector<PartitionSpan> spans;
  std::vector<uint64_t> span_generations;
  WindowEnd end = WindowEnd::kDeadline;
  int64_t bytes = 0;
  bool caught_up = false;

  /// Append `m`, polled under its partition's assignment `generation`.
  void Add(kafka::MessagePtr m, uint64_t generation);

  /// Free the messages and their header views; the spans, bytes and end stay.
  void ReleaseMessages();

  /// Header views of all messages, built on the first record(i, true): most loads
  /// never ask for headers, and reading them costs a librdkafka parse per message.
  /// Thread-safe (once).
  void EnsureHeaders();
  /// The headers of message `i` (after EnsureHeaders).
  std::span<const HeaderView> headers_of(size_t i) const {
    auto [begin, end] = header_ranges_[i];
    return std::span<const HeaderView>(headers_.data() + begin, end - begin);
  }

  /// Keep only the messages for which keep(partition, generation) holds, rebuilding
  /// the spans (rare: after a rebalance served in the middle of a poll).
  template <typename Keep>
  void Retain(Keep keep) {
    std::vector<kafka::MessagePtr> old = std::move(messages);
    std::vector<PartitionSpan> old_spans = std::move(spans);
    std::vector<uint64_t> old_generations = std::move(span_generations);
    messages.clear();
    spans.clear();
    span_generations.clear();
    bytes = 0;
    last_rkt_ = nullptr;
    last_partition_ = -1;
    for (auto& m : old) {
      TopicPartition tp{rd_kafka_topic_name(m->rkt), m->partition};
      size_t k = 0;
      while (k < old_spans.size() && !(old_spans[k].tp == tp)) ++k;
      if (k < old_spans.size() && keep(tp, old_generations[k])) {
        Add(std::move(m), old_generations[k]);
      }
    }
  }

 private:
  const rd_kafka_topic_t* last_rkt_ = nullptr;  // cache of Add()
  int32_t last_partition_ = -1;
  size_t last_span_ = 0;
  std::once_flag headers_once_;
  std::vector<HeaderView> headers_;
  std::vector<std::pair<uint32_t, uint32_t>> header_ranges_;  // [begin, end) per message
};

}  // namespace kelt
