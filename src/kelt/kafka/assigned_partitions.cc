// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/kafka/assigned_partitions.h"

namespace kelt::kafka {

void AssignedPartitions::Assign(const TopicPartition& tp, int64_t start) {
  ForgetCache();  // the cache may say "not assigned"
  PartitionState ps;
  ps.generation = ++generation_;
  ps.start = start;
  partitions_[tp] = ps;
}

void AssignedPartitions::Revoke(const TopicPartition& tp) {
  ForgetCache();  // the cache may point at the state erased here
  partitions_.erase(tp);
}

bool AssignedPartitions::Holds(const TopicPartition& tp, uint64_t generation) const {
  auto it = partitions_.find(tp);
  return it != partitions_.end() && it->second.generation == generation;
}

PartitionState* AssignedPartitions::Find(const TopicPartition& tp) {
  auto it = partitions_.find(tp);
  return it == partitions_.end() ? nullptr : &it->second;
}

PartitionState* AssignedPartitions::Find(const rd_kafka_topic_t* rkt, int32_t partition) {
  if (rkt == cached_rkt_ && partition == cached_partition_) return cached_state_;
  cached_state_ = Find({rd_kafka_topic_name(rkt), partition});
  cached_rkt_ = rkt;
  cached_partition_ = partition;
  return cached_state_;
}

std::vector<TopicPartition> AssignedPartitions::List() const {
  std::vector<TopicPartition> out;
  for (const auto& [tp, ps] : partitions_) out.push_back(tp);
  return out;
}

PartitionListPtr AssignedPartitions::ToPartitionList() const {
  PartitionListPtr list(
      rd_kafka_topic_partition_list_new(static_cast<int>(partitions_.size())));
  for (const auto& [tp, ps] : partitions_) {
    rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition);
  }
  return list;
}

std::vector<TopicPartition> PartitionsOf(const rd_kafka_topic_partition_list_t* list) {
  std::vector<TopicPartition> out;
  out.reserve(static_cast<size_t>(list->cnt));
  for (int i = 0; i < list->cnt; ++i) {
    out.push_back({list->elems[i].topic, list->elems[i].partition});
  }
  return out;
}

PartitionListPtr OffsetList(const OffsetMap& offsets) {
  PartitionListPtr list(
      rd_kafka_topic_partition_list_new(static_cast<int>(offsets.size())));
  for (const auto& [tp, offset] : offsets) {
    rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition)
        ->offset = offset;
  }
  return list;
}

}  // namespace kelt::kafka
