// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The identity of Kafka data, shared by every stage: a topic partition, the offsets a
// window covers in it, and next offsets per partition (what a sink holds durably, what
// is committed). Part of the data model (src/kelt/model/).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace kelt {

/// A topic and a partition.
struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
  auto operator<=>(const TopicPartition&) const = default;
};

/// Return "topic[partition]".
std::string ToString(const TopicPartition& tp);

/// The offsets a window covers in one partition: [first, last], `count` records.
struct PartitionSpan {
  TopicPartition tp;
  int64_t first_offset = 0;
  int64_t last_offset = -1;
  int64_t count = 0;
};

/// Next offset to read, per partition.
using OffsetMap = std::map<TopicPartition, int64_t>;

}  // namespace kelt
