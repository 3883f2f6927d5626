// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// What the partitions' high watermarks tell the consumer: the catch-up marks (catch-up
// mode snapshots each assigned partition's high watermark, and each partition's
// assigned later, at assignment; records at or past it are not handed out and the
// partition is paused there), whether every partition is at its end or mark, and the
// lag per partition. The marks live in the assignment's PartitionState. Used on the
// polling thread only. Internal header.
#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <functional>
#include <vector>

#include "kelt/kafka.h"
#include "kelt/kafka/assigned_partitions.h"
#include "kelt/status.h"

namespace kelt::kafka {

class Watermarks {
 public:
  /// Marks of the consumer `rk`'s partitions, kept in `assigned` (both outlive this).
  Watermarks(rd_kafka_t* rk, AssignedPartitions& assigned)
      : rk_(rk), assigned_(assigned) {}

  /// Enter catch-up mode: snapshot the mark of every assigned partition.
  Status StartCatchUp();
  bool catching_up() const { return catch_up_; }
  /// Snapshot the marks of partitions assigned since (catch-up mode only).
  Status Refresh();

  /// Whether a record of `tp` (state `ps`) at `offset` may be handed out; in catch-up
  /// mode a record at or past the mark is not, and the partition pauses there.
  Result<bool> Admit(const TopicPartition& tp, PartitionState& ps, int64_t offset);
  /// A rewind to `offset` below a mark reached: read up to the mark again. Returns true
  /// when the partition, paused at its mark, must be resumed.
  static bool Reopen(PartitionState& ps, int64_t offset);

  /// True when, in catch-up mode, every partition reached its mark (or its end).
  bool CaughtUp() const;
  /// True when every assigned partition is at its end (or, catching up, at its mark).
  bool AllAtEnd() const;

  /// Lag per assigned partition. `carries(tp)` says whether records of `tp` are
  /// carried over to the next window (the end-of-partition offset does not count then).
  Result<std::vector<PartitionLag>> Lag(
      std::chrono::milliseconds timeout,
      const std::function<bool(const TopicPartition&)>& carries);

 private:
  // Snapshot the mark of `tp` unless it has one.
  Status EnsureMark(const TopicPartition& tp, PartitionState* ps);
  void Pause(const TopicPartition& tp);

  rd_kafka_t* const rk_;
  AssignedPartitions& assigned_;
  bool catch_up_ = false;
};

}  // namespace kelt::kafka
