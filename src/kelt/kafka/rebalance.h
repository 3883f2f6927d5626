// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The rebalance callback, served on the polling thread inside a batch call (or at
// Close). The classic protocol's eager assignor assigns and revokes the whole
// assignment at once; KIP-848's is incremental (so is classic's when librdkafka says
// the protocol is COOPERATIVE). On assignment: the resume hook says where each
// partition starts, partitions paused at a catch-up mark are resumed, and each gets a
// new generation. On revocation: the before_revoke hook finishes the writes in flight,
// what they made durable is committed with the rest before the partitions go (unless
// rd_kafka_assignment_lost() says they already belong to someone else), records carried
// over for them are dropped, and they are reported by TakeLost(). Internal header.
#pragma once

#include <librdkafka/rdkafka.h>

#include <utility>
#include <vector>

#include "kelt/kafka.h"
#include "kelt/kafka/assigned_partitions.h"
#include "kelt/kafka/commits.h"
#include "kelt/kafka/fatal_error.h"
#include "kelt/kafka/window_assembly.h"

namespace kelt::kafka {

class RebalanceHandler {
 public:
  /// Everything it reads from or writes to; all outlive it.
  struct Parts {
    const ConsumerOptions& options;  // group_protocol, resume, before_revoke
    AssignedPartitions& assigned;
    Committer& committer;
    WindowAssembler& windows;
    FatalError& fatal;
  };
  explicit RebalanceHandler(const Parts& parts) : p_(parts) {}

  /// Serve librdkafka's rebalance callback: `err` says whether `parts` are assigned or
  /// revoked. A failure stops the consumer (FatalError).
  void Serve(rd_kafka_t* rk, rd_kafka_resp_err_t err,
             rd_kafka_topic_partition_list_t* parts);

  /// Partitions revoked or lost since the last call.
  std::vector<TopicPartition> TakeLost() { return std::exchange(lost_, {}); }

 private:
  void Assign(rd_kafka_t* rk, rd_kafka_topic_partition_list_t* parts);
  void Revoke(rd_kafka_t* rk, rd_kafka_topic_partition_list_t* parts);
  // Ask the resume hook where `parts` start and set their offsets to it.
  OffsetMap ResumePoints(rd_kafka_topic_partition_list_t* parts);
  // Assign or revoke `parts` in librdkafka.
  void Apply(rd_kafka_t* rk, rd_kafka_topic_partition_list_t* parts, bool assign);

  Parts p_;
  std::vector<TopicPartition> lost_;
};

}  // namespace kelt::kafka
