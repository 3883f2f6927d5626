// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/kafka/commits.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "kelt/log.h"

namespace kelt::kafka {

namespace {
// How long a commit call waits for the answer to the asynchronous commit in flight.
constexpr int kAnswerWaitSeconds = 120;
}  // namespace

bool IsRebalanceError(rd_kafka_resp_err_t err) {
  return err == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS ||
         err == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION ||
         err == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID ||
         err == RD_KAFKA_RESP_ERR_STALE_MEMBER_EPOCH ||
         err == RD_KAFKA_RESP_ERR_FENCED_MEMBER_EPOCH;
}

void Committer::Add(const OffsetMap& next_offsets) {
  for (const auto& [tp, offset] : next_offsets) {
    if (!assigned_.contains(tp)) continue;
    int64_t& pending = pending_[tp];
    pending = std::max(pending, offset);
  }
}

Status Committer::Flush() {
  KELT_RETURN_NOT_OK(Await(/*wait=*/true));
  if (pending_.empty()) return Status::OK();
  const OffsetMap sent = pending_;
  return Settled(CommitList(OffsetList(sent).get()), sent);
}

Status Committer::SendAsync(const OffsetMap& next_offsets) {
  KELT_RETURN_NOT_OK(Await(/*wait=*/true));
  Add(next_offsets);
  if (pending_.empty()) return Status::OK();
  PartitionListPtr list = OffsetList(pending_);
  rd_kafka_resp_err_t err =
      rd_kafka_commit_queue(rk_, list.get(), queue_, nullptr, nullptr);
  if (err) return Flush();  // not sent: commit synchronously instead
  in_flight_ = pending_;
  return Status::OK();
}

rd_kafka_event_t* Committer::PollAnswer(bool wait) {
  rd_kafka_event_t* ev = nullptr;
  for (int waited = 0; ev == nullptr;) {
    ev = rd_kafka_queue_poll(queue_, wait ? 1000 : 0);
    if (ev != nullptr && rd_kafka_event_type(ev) != RD_KAFKA_EVENT_OFFSET_COMMIT) {
      rd_kafka_event_destroy(ev);  // nothing else is sent to this queue
      ev = nullptr;
    }
    if (ev == nullptr && (!wait || ++waited >= kAnswerWaitSeconds)) break;
  }
  return ev;
}

Status Committer::Await(bool wait) {
  if (in_flight_.empty()) return Status::OK();
  rd_kafka_event_t* ev = PollAnswer(wait);
  if (ev == nullptr) {
    if (!wait) return Status::OK();
    return Status::Kafka("committing offsets: no answer from the group coordinator in " +
                         std::to_string(kAnswerWaitSeconds) + " s");
  }
  rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
  if (!err) {
    if (const rd_kafka_topic_partition_list_t* list =
            rd_kafka_event_topic_partition_list(ev)) {
      for (int i = 0; i < list->cnt && !err; ++i) err = list->elems[i].err;
    }
  }
  rd_kafka_event_destroy(ev);
  OffsetMap sent = std::exchange(in_flight_, {});
  if (err && IsRetriable(err) && !IsRebalanceError(err)) return Flush();
  return Settled(err, sent);
}

Status Committer::Settled(rd_kafka_resp_err_t err, const OffsetMap& sent) {
  if (!err || err == RD_KAFKA_RESP_ERR__NO_OFFSET) {
    for (const auto& [tp, offset] : sent) {
      auto it = pending_.find(tp);
      if (it != pending_.end() && it->second <= offset) pending_.erase(it);
    }
    return Status::OK();
  }
  if (IsRebalanceError(err)) {
    Log(LogLevel::kInfo, "kafka",
        std::string("offset commit deferred until the rebalance: ") +
            rd_kafka_err2str(err));
    return Status::OK();
  }
  return KafkaError(err, "committing offsets");
}

rd_kafka_resp_err_t Committer::CommitList(rd_kafka_topic_partition_list_t* list) {
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
  for (int attempt = 0; attempt < 5; ++attempt) {
    err = rd_kafka_commit(rk_, list, 0);
    if (!err) {
      for (int i = 0; i < list->cnt; ++i) {
        if (list->elems[i].err) {
          err = list->elems[i].err;
          break;
        }
      }
    }
    // A stale member epoch is cured by the next heartbeat (librdkafka sends it early
    // when it sees this error): try again a few times before keeping it pending.
    const bool stale_epoch = err == RD_KAFKA_RESP_ERR_STALE_MEMBER_EPOCH && attempt < 3;
    if (!stale_epoch && (!err || err == RD_KAFKA_RESP_ERR__NO_OFFSET ||
                         IsRebalanceError(err) || !IsRetriable(err))) {
      return err;
    }
    Log(LogLevel::kWarning, "kafka",
        std::string("offset commit failed, retrying: ") + rd_kafka_err2str(err));
    std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));
  }
  return err;
}

void Committer::CommitRevoked(const rd_kafka_topic_partition_list_t* parts) {
  if (Status st = Await(/*wait=*/true); !st.ok() && error_.ok()) {
    error_ = std::move(st);
  }
  OffsetMap revoked;
  for (int i = 0; i < parts->cnt; ++i) {
    auto it = pending_.find({parts->elems[i].topic, parts->elems[i].partition});
    if (it != pending_.end()) revoked.insert(*it);
  }
  if (revoked.empty()) return;
  rd_kafka_resp_err_t err = CommitList(OffsetList(revoked).get());
  if (!err || err == RD_KAFKA_RESP_ERR__NO_OFFSET) return;
  const std::string what =
      "could not commit the durable offsets of " + std::to_string(revoked.size()) +
      " revoked partition(s) (their next owner reads those records again)";
  if (IsRebalanceError(err)) {
    // The group moved on without this member's offsets: nothing more can be done.
    Log(LogLevel::kWarning, "kafka", what + ": " + rd_kafka_err2str(err));
  } else if (error_.ok()) {
    error_ = KafkaError(err, what);
  }
}

Result<std::vector<std::pair<TopicPartition, int64_t>>> Committer::Committed(
    int timeout_ms) {
  PartitionListPtr list = assigned_.ToPartitionList();
  rd_kafka_resp_err_t err = rd_kafka_committed(rk_, list.get(), timeout_ms);
  if (err) return KafkaError(err, "fetching committed offsets");
  std::vector<std::pair<TopicPartition, int64_t>> out;
  out.reserve(static_cast<size_t>(list->cnt));
  for (int i = 0; i < list->cnt; ++i) {
    out.emplace_back(TopicPartition{list->elems[i].topic, list->elems[i].partition},
                     list->elems[i].offset >= 0 ? list->elems[i].offset : -1);
  }
  return out;
}

}  // namespace kelt::kafka
