// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/kafka/rebalance.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kelt/log.h"

namespace kelt::kafka {

void RebalanceHandler::Serve(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                             rd_kafka_topic_partition_list_t* parts) {
  // Before the change is applied: applying it resumes the partitions kept through the
  // rebalance, which librdkafka paused, at a position that may be wrong.
  const std::vector<TopicPartition> changing = PartitionsOf(parts);
  if (Status st = p_.windows.RestoreFetchPositions({changing.begin(), changing.end()});
      !st.ok()) {
    p_.fatal.SetIfFirst(std::move(st));  // going on would skip a record
  }
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    Assign(rk, parts);
  } else {
    Revoke(rk, parts);
  }
}

OffsetMap RebalanceHandler::ResumePoints(rd_kafka_topic_partition_list_t* parts) {
  OffsetMap starts;
  if (!p_.options.resume) return starts;
  auto resumed = p_.options.resume(PartitionsOf(parts));
  if (resumed.ok()) {
    starts = std::move(*resumed);
  } else {
    // Reading from the committed offset instead could land rows twice: stop.
    p_.fatal.SetIfFirst(
        resumed.status().WithPrefix("reading the resume point of assigned partitions: "));
  }
  for (int i = 0; i < parts->cnt; ++i) {
    auto it = starts.find({parts->elems[i].topic, parts->elems[i].partition});
    if (it != starts.end() && it->second >= 0) parts->elems[i].offset = it->second;
  }
  return starts;
}

void RebalanceHandler::Assign(rd_kafka_t* rk, rd_kafka_topic_partition_list_t* parts) {
  const OffsetMap starts = ResumePoints(parts);
  Apply(rk, parts, /*assign=*/true);
  // A partition paused at its catch-up mark, revoked and assigned back, would stay
  // paused (librdkafka keeps an application's pause across assignments) while its new
  // mark lies further on: kelt pauses only for catch-up, so resume what is assigned.
  rd_kafka_resume_partitions(rk, parts);
  for (const TopicPartition& tp : PartitionsOf(parts)) {
    auto it = starts.find(tp);
    p_.assigned.Assign(tp, it != starts.end() ? it->second : -1);
  }
  Log(LogLevel::kInfo, "kafka",
      "assigned " + std::to_string(parts->cnt) + " partition(s)");
}

// Nothing but what the caller made durable is committed here: the caller commits each
// window once it is durable, and a window's records of a revoked partition are dropped
// before they are handed out.
void RebalanceHandler::Revoke(rd_kafka_t* rk, rd_kafka_topic_partition_list_t* parts) {
  const bool lost = rd_kafka_assignment_lost(rk);
  const std::vector<TopicPartition> tps = PartitionsOf(parts);
  if (p_.options.before_revoke) {
    // What the write it finished made durable is committed with the rest below.
    OffsetMap durable = p_.options.before_revoke(tps);
    if (!lost) p_.committer.Add(durable);
  }
  if (!lost) p_.committer.CommitRevoked(parts);
  for (const TopicPartition& tp : tps) {
    p_.assigned.Revoke(tp);
    p_.committer.Forget(tp);  // committed just above, or no longer ours to commit
    lost_.push_back(tp);
  }
  p_.windows.NoteRevoked(tps);
  Apply(rk, parts, /*assign=*/false);
  Log(LogLevel::kInfo, "kafka",
      std::string(lost ? "lost " : "revoked ") + std::to_string(parts->cnt) +
          " partition(s)");
}

// Incrementally under a cooperative protocol (KIP-848's is always), else the whole
// assignment at once. A failure stops the consumer.
void RebalanceHandler::Apply(rd_kafka_t* rk, rd_kafka_topic_partition_list_t* parts,
                             bool assign) {
  // KIP-848 is always incremental (librdkafka may still say NONE before its first
  // subscription completed); classic follows its assignor.
  const char* protocol = rd_kafka_rebalance_protocol(rk);
  const bool incremental =
      p_.options.group_protocol == GroupProtocol::kConsumer ||
      (protocol != nullptr && std::string_view(protocol) == "COOPERATIVE");
  rd_kafka_error_t* error = nullptr;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
  if (incremental) {
    error = assign ? rd_kafka_incremental_assign(rk, parts)
                   : rd_kafka_incremental_unassign(rk, parts);
  } else {
    err = rd_kafka_assign(rk, assign ? parts : nullptr);
  }
  std::string what;
  if (error != nullptr) {
    what = rd_kafka_error_string(error);
    rd_kafka_error_destroy(error);
  } else if (err) {
    what = rd_kafka_err2str(err);
  }
  if (!what.empty()) {
    p_.fatal.SetIfFirst(Status::Kafka(std::string(assign ? "assigning" : "revoking") +
                                      " " + std::to_string(parts->cnt) +
                                      " partition(s): " + what));
  }
}

}  // namespace kelt::kafka
