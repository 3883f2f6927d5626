// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The consumer's own record of its assignment: for every partition assigned to it, the
// generation it was assigned (or rewound) under, where reading started, how far records
// were handed out, where the partition ended, and its catch-up mark. The rebalance
// callback adds and removes partitions; windows, commits and catch-up read them. A
// window's records carry their partition's generation, so a commit can tell a partition
// it still owns from one revoked (and maybe assigned back) since the poll. Used on the
// polling thread only. Internal header.
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <map>
#include <vector>

#include "kelt/kafka/client.h"
#include "kelt/offsets.h"

namespace kelt::kafka {

/// What the consumer knows of one assigned partition.
struct PartitionState {
  uint64_t generation = 0;
  // End of partition, by offsets: EOF events come once per arrival at the end and may
  // be served before carried-over records of the same partition are handed out.
  int64_t eof_offset = -1;   // offset of the last end-of-partition event
  int64_t next_offset = -1;  // offset after the last record handed out
  // Offset after the last record librdkafka returned (handed out, carried over or left
  // past a catch-up mark): where its fetcher must go on after a pause.
  int64_t fetched_next = -1;
  bool at_end() const {
    return eof_offset >= 0 && (next_offset < 0 || next_offset == eof_offset);
  }
  int64_t start = -1;         // where reading started when the resume hook chose it
  int64_t mark = -1;          // catch-up: stop before this offset (-1: not yet known)
  bool mark_reached = false;  // catch-up: nothing left below the mark
};

/// The current assignment, partition by partition.
class AssignedPartitions {
 public:
  using Map = std::map<TopicPartition, PartitionState>;

  /// Take `tp` on under a new generation; `start` is where the resume hook said reading
  /// starts (-1: the group's committed offset).
  void Assign(const TopicPartition& tp, int64_t start);
  /// Give `tp` up.
  void Revoke(const TopicPartition& tp);
  /// Give `ps` a new generation: windows polled before can no longer commit it.
  void Renew(PartitionState& ps) { ps.generation = ++generation_; }

  /// Whether `tp` is assigned, and still under `generation` (not revoked since).
  bool contains(const TopicPartition& tp) const { return partitions_.count(tp) > 0; }
  bool Holds(const TopicPartition& tp, uint64_t generation) const;

  /// The state of `tp`, or nullptr when it is not assigned.
  PartitionState* Find(const TopicPartition& tp);
  /// The state of a message's partition, or nullptr when it is not assigned. One-entry
  /// cache by topic handle and partition: batches come in runs of one partition.
  PartitionState* Find(const rd_kafka_topic_t* rkt, int32_t partition);
  /// The state of `tp`, which callers know is assigned (a default one is added if not).
  PartitionState& at(const TopicPartition& tp) { return partitions_[tp]; }
  /// Drop Find's cache (the topic handles it is keyed by may have changed).
  void ForgetCache() { cached_rkt_ = nullptr; }

  bool empty() const { return partitions_.empty(); }
  size_t size() const { return partitions_.size(); }
  Map::iterator begin() { return partitions_.begin(); }
  Map::iterator end() { return partitions_.end(); }
  Map::const_iterator begin() const { return partitions_.begin(); }
  Map::const_iterator end() const { return partitions_.end(); }

  /// The assigned partitions, in order.
  std::vector<TopicPartition> List() const;
  /// The assigned partitions as a librdkafka list (offsets unset).
  PartitionListPtr ToPartitionList() const;

 private:
  Map partitions_;
  uint64_t generation_ = 0;
  const rd_kafka_topic_t* cached_rkt_ = nullptr;  // Find's cache
  int32_t cached_partition_ = -1;
  PartitionState* cached_state_ = nullptr;
};

/// The partitions of a librdkafka list.
std::vector<TopicPartition> PartitionsOf(const rd_kafka_topic_partition_list_t* list);

/// A librdkafka list of these partitions, each at its offset.
PartitionListPtr OffsetList(const OffsetMap& offsets);

}  // namespace kelt::kafka
