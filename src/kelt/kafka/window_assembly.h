// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Window assembly: the steps of Consumer::Poll that fill a window from the consumer
// queue, and the seeks that move where the next window starts.
//  - Messages come in batches from the consumer queue (rd_kafka_consume_batch_queue),
//    which also serves the rebalance callback on this thread. Each batch is owned
//    (MessagePtr) from the moment it is returned, so every error path releases it.
//  - Messages that would overflow a window (bytes) are carried over to the next one,
//    in order; messages of partitions revoked mid-window are dropped (their next owner
//    re-reads them, since nothing past the last commit was committed).
//  - A batch call can serve a rebalance in its middle. From librdkafka 2.1 a version
//    barrier purges the batch's messages of a partition whose assignment changed, so
//    what the batch returns is current. Before 2.1 (the system-library fallback) a batch
//    may hold messages of a partition revoked during the call and, when it came straight
//    back, messages of its new assignment that cannot be told apart: both are dropped
//    and the partition is sought back to its new start. (An rd_kafka_yield() in the
//    rebalance callback does not end the batch: the queue serving it goes on after a
//    callback that handled its op, in 2.0.2 as in 2.11, so kelt no longer calls it.)
//    Records of revoked partitions held from earlier batch calls are dropped either way.
//  - A rebalance pauses every assigned partition and resumes those it keeps at their
//    application position, which librdkafka before 2.13.2 moves one past an
//    end-of-partition event: the callback first seeks those back to their end
//    (RestoreFetchPositions), or a record written there would be skipped.
//  - End-of-partition events and the catch-up marks (watermarks.h) end a window early;
//    Rewind gives a window back, so the next one starts at its first records.
// Used on the polling thread only. Internal header.
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include "kelt/kafka.h"
#include "kelt/kafka/assigned_partitions.h"
#include "kelt/kafka/client.h"
#include "kelt/kafka/fatal_error.h"
#include "kelt/kafka/prefetch.h"
#include "kelt/kafka/watermarks.h"
#include "kelt/kafka/window.h"
#include "kelt/status.h"

namespace kelt::kafka {

class WindowAssembler {
 public:
  /// Everything it reads from or writes to; all outlive it.
  struct Parts {
    rd_kafka_t* rk;
    rd_kafka_queue_t* queue;  // the consumer queue
    AutoOffsetReset auto_offset_reset;
    AssignedPartitions& assigned;
    Watermarks& watermarks;
    PrefetchControl& prefetch;
    FatalError& fatal;
  };
  explicit WindowAssembler(const Parts& parts);

  /// Fill `win` until it holds max_records or max_bytes, every partition is at its end
  /// (with stop_at_end), or max_wait passed; messages carried over come first.
  Status Fill(Window::Impl& win, const WindowOptions& opts);
  /// Seek the partitions of `win` this consumer still owns back to its first records;
  /// windows polled before can no longer commit them.
  Status Rewind(const Window::Impl& win);

  /// The rebalance callback revoked `tps`: their records carried over go, and the
  /// batch call serving it is told.
  void NoteRevoked(const std::vector<TopicPartition>& tps);
  /// A rebalance begins: seek the partitions it keeps (all assigned but `leaving`)
  /// back to where their fetch must go on, where librdkafka moved it past an
  /// end-of-partition event (see the .cc).
  Status RestoreFetchPositions(const std::set<TopicPartition>& leaving);
  /// Whether records of `tp` are carried over to the next window.
  bool Carries(const TopicPartition& tp) const;
  /// Drop every record carried over (closing).
  void DropCarriedOver() { carried_.clear(); }

 private:
  // --- the steps of Fill
  // Whether `win` holds max_records or max_bytes (and then why it ends).
  static bool Full(Window::Impl& win, const WindowOptions& opts);
  // Hand the messages carried over from the previous window to `win`.
  Status TakeCarriedOver(Window::Impl& win, const WindowOptions& opts);
  // One batch call.
  Result<std::vector<MessagePtr>> ConsumeBatch(int timeout_ms, size_t want);
  // Drop what `win` holds of partitions revoked during the batch call.
  void DropRevoked(Window::Impl& win);
  // Hand a batch's messages to `win` in order, or carry them over.
  Status Accept(Window::Impl& win, std::vector<MessagePtr>& batch, bool revoked_in_call,
                const WindowOptions& opts);
  // Add one message to `win`, unless its partition is no longer ours or is at its mark.
  Status Offer(Window::Impl& win, MessagePtr m);
  // An error message of a batch: end of partition, or an error (fatal_error.h).
  Status OnMessageError(const rd_kafka_message_t& m);

  // --- seeks
  // Seek every partition of `list` to its offset; `what` names the seek in errors.
  Status Seek(rd_kafka_topic_partition_list_t* list, const char* what);
  // The seek alone (Seek without its carried-over records dropped).
  Status SeekFetcher(rd_kafka_topic_partition_list_t* list, const char* what);
  // Seek `tps` (assigned, nothing handed out since) to where their assignment starts.
  Status SeekToStart(const std::set<TopicPartition>& tps);

  rd_kafka_t* const rk_;
  rd_kafka_queue_t* const queue_;
  const AutoOffsetReset auto_offset_reset_;
  AssignedPartitions& assigned_;
  Watermarks& watermarks_;
  PrefetchControl& prefetch_;
  FatalError& fatal_;
  const bool purges_outdated_;                  // librdkafka 2.1 or later (see above)
  const bool moves_position_past_eof_;          // before librdkafka 2.13.2 (see .cc)
  std::deque<MessagePtr> carried_;              // carried over to the next window
  std::vector<rd_kafka_message_t*> raw_batch_;  // ConsumeBatch's buffer, owned there
  uint64_t revocations_ = 0;                    // revocations served so far
  std::set<TopicPartition> just_revoked_;       // revoked during the current batch call
};

}  // namespace kelt::kafka
