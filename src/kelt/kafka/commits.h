// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The consumer's offset commits: the offsets the caller made durable, kept until the
// group takes them; synchronous commits with retries of transient errors; one
// asynchronous commit in flight, whose result the next call takes in; the commit made
// at a revocation, whose failure is reported by the next commit call or Close.
//
// When the group is in the middle of a rebalance the broker refuses commits of this
// generation (classic) or member epoch (KIP-848); the offsets then stay pending and are
// committed in the revoke callback (before the partitions are given up, as eager
// rebalancing allows), at the next Poll, or at Close. Used on the polling thread only.
// Internal header.
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "kelt/kafka/assigned_partitions.h"
#include "kelt/kafka/client.h"
#include "kelt/offsets.h"
#include "kelt/status.h"

namespace kelt::kafka {

class Committer {
 public:
  /// Commits for the consumer `rk` of the partitions `assigned` holds; the answers to
  /// asynchronous commits arrive on `queue` (a queue of its own). All outlive this
  /// object, or at least its last call.
  Committer(rd_kafka_t* rk, rd_kafka_queue_t* queue, const AssignedPartitions& assigned)
      : rk_(rk), queue_(queue), assigned_(assigned) {}

  /// Keep `next_offsets` for the partitions still assigned (the larger offset wins);
  /// others are skipped: their next owner resumes.
  void Add(const OffsetMap& next_offsets);
  /// Commit, synchronously, every pending offset (after the commit in flight).
  Status Flush();
  /// Send the pending offsets and `next_offsets` without waiting for the answer, after
  /// taking in the previous one's; a commit that cannot be sent is made synchronously.
  Status SendAsync(const OffsetMap& next_offsets);
  /// Take in the result of the asynchronous commit in flight, if any: waiting for it,
  /// or only when it already came (wait false). Retriable failures are retried
  /// synchronously; a commit refused during a rebalance stays pending.
  Status Await(bool wait);
  bool in_flight() const { return !in_flight_.empty(); }

  /// At a revocation, before `parts` are given up: commit what the caller made durable
  /// for them (the group accepts commits of this generation while it prepares a
  /// rebalance); a failure is kept for TakeError.
  void CommitRevoked(const rd_kafka_topic_partition_list_t* parts);
  /// Drop what is pending for `tp` (committed, or no longer ours to commit).
  void Forget(const TopicPartition& tp) { pending_.erase(tp); }
  /// Partitions whose durable offsets are not committed yet.
  size_t pending() const { return pending_.size(); }

  /// A commit refused for good in a revoke callback, reported once.
  Status TakeError() { return std::exchange(error_, Status::OK()); }

  /// The committed offsets of the assigned partitions (-1 when none).
  Result<std::vector<std::pair<TopicPartition, int64_t>>> Committed(int timeout_ms);

 private:
  // Take in the result of a commit that carried `sent`: committed offsets leave the
  // pending set (unless a larger one came since); one refused because the group is
  // rebalancing stays pending.
  Status Settled(rd_kafka_resp_err_t err, const OffsetMap& sent);
  // Synchronous commit with retries of transient errors; the first error, if any.
  rd_kafka_resp_err_t CommitList(rd_kafka_topic_partition_list_t* list);
  // The answer to the commit in flight, or nullptr after waiting (or not) for it.
  rd_kafka_event_t* PollAnswer(bool wait);

  rd_kafka_t* const rk_;
  rd_kafka_queue_t* const queue_;  // the asynchronous commit's result arrives here
  const AssignedPartitions& assigned_;
  OffsetMap pending_;    // durable, not yet committed
  OffsetMap in_flight_;  // sent asynchronously
  Status error_;         // see TakeError
};

/// The group moved on while the commit was sent: classic's generation errors, and
/// KIP-848's member epoch errors (Kafka up to 4.2 refuses a commit of any epoch but the
/// member's current one, which every join or leave in the group bumps).
bool IsRebalanceError(rd_kafka_resp_err_t err);

}  // namespace kelt::kafka
