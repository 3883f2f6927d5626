// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/kafka/window_assembly.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "kelt/log.h"

namespace kelt::kafka {

namespace {

constexpr int kBatchSize = 2048;

// From 2.1 librdkafka purges a batch's messages of a partition whose assignment changed
// during the batch call (a version barrier), so what a batch holds is current.
bool PurgesOutdatedMessages() { return rd_kafka_version() >= 0x02010000; }

// Before 2.13.2 rd_kafka_consume_batch_queue moves a partition's application position
// one past an end-of-partition event it returns (librdkafka issue 4844, fixed by 5213).
bool MovesPositionPastEof() { return rd_kafka_version() < 0x020d0200; }

TopicPartition PartitionOf(const rd_kafka_message_t& m) {
  return {rd_kafka_topic_name(m.rkt), m.partition};
}

}  // namespace

WindowAssembler::WindowAssembler(const Parts& parts)
    : rk_(parts.rk),
      queue_(parts.queue),
      auto_offset_reset_(parts.auto_offset_reset),
      assigned_(parts.assigned),
      watermarks_(parts.watermarks),
      prefetch_(parts.prefetch),
      fatal_(parts.fatal),
      purges_outdated_(PurgesOutdatedMessages()),
      moves_position_past_eof_(MovesPositionPastEof()) {}

Status WindowAssembler::Fill(Window::Impl& win, const WindowOptions& opts) {
  const auto deadline = std::chrono::steady_clock::now() + opts.max_wait;
  KELT_RETURN_NOT_OK(TakeCarriedOver(win, opts));
  // When every partition was already at its end, look once more before saying so:
  // records may have arrived since the last window.
  bool probed = !watermarks_.AllAtEnd();
  while (!Full(win, opts) && carried_.empty()) {
    KELT_RETURN_NOT_OK(watermarks_.Refresh());
    if (opts.stop_at_end && probed && watermarks_.AllAtEnd()) {
      win.end = WindowEnd::kEndOfPartitions;
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      win.end = WindowEnd::kDeadline;
      break;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    const int timeout_ms = static_cast<int>(std::min<int64_t>(100, left + 1));
    const size_t want = static_cast<size_t>(std::min<int64_t>(
        kBatchSize, opts.max_records - static_cast<int64_t>(win.messages.size())));
    const uint64_t revocations_before = revocations_;
    KELT_ASSIGN_OR_RAISE(std::vector<MessagePtr> batch, ConsumeBatch(timeout_ms, want));
    probed = true;
    const bool revoked_in_call = revocations_ != revocations_before;
    if (revoked_in_call) DropRevoked(win);
    KELT_RETURN_NOT_OK(Accept(win, batch, revoked_in_call, opts));
    if (!carried_.empty()) win.end = WindowEnd::kMaxBytes;
  }
  if (watermarks_.catching_up()) win.caught_up = watermarks_.CaughtUp();
  return Status::OK();
}

bool WindowAssembler::Full(Window::Impl& win, const WindowOptions& opts) {
  if (static_cast<int64_t>(win.messages.size()) >= opts.max_records) {
    win.end = WindowEnd::kMaxRecords;
    return true;
  }
  if (win.bytes >= opts.max_bytes) {
    win.end = WindowEnd::kMaxBytes;
    return true;
  }
  return false;
}

Status WindowAssembler::TakeCarriedOver(Window::Impl& win, const WindowOptions& opts) {
  while (!carried_.empty() && !Full(win, opts)) {
    MessagePtr& next = carried_.front();
    if (!win.messages.empty() &&
        win.bytes + static_cast<int64_t>(next->len + next->key_len) > opts.max_bytes) {
      win.end = WindowEnd::kMaxBytes;
      break;
    }
    MessagePtr m = std::move(next);
    carried_.pop_front();
    KELT_RETURN_NOT_OK(Offer(win, std::move(m)));
  }
  return Status::OK();
}

Result<std::vector<MessagePtr>> WindowAssembler::ConsumeBatch(int timeout_ms,
                                                              size_t want) {
  just_revoked_.clear();
  raw_batch_.resize(static_cast<size_t>(kBatchSize));
  const ssize_t n =
      rd_kafka_consume_batch_queue(queue_, timeout_ms, raw_batch_.data(), want);
  if (n < 0) return KafkaError(rd_kafka_last_error(), "consuming");
  std::vector<MessagePtr> batch;
  batch.reserve(static_cast<size_t>(n));
  for (ssize_t i = 0; i < n; ++i) batch.emplace_back(raw_batch_[static_cast<size_t>(i)]);
  prefetch_.NoteDrained(batch);
  KELT_RETURN_NOT_OK(fatal_.status());
  return batch;
}

// A rebalance was served inside the batch call: records the window already holds for
// partitions revoked since are not ours to hand out (their next owner, maybe this
// member under a new generation, re-reads them from the last commit).
void WindowAssembler::DropRevoked(Window::Impl& win) {
  win.Retain([&](const TopicPartition& tp, uint64_t generation) {
    return assigned_.Holds(tp, generation);
  });
}

// Errors and end-of-partition events are handled in place, and once one message waits
// for the next window (max_bytes) the rest wait too.
Status WindowAssembler::Accept(Window::Impl& win, std::vector<MessagePtr>& batch,
                               bool revoked_in_call, const WindowOptions& opts) {
  // Partitions revoked in the call and assigned straight back whose messages of this
  // batch were dropped below: read them again from their new start.
  std::set<TopicPartition> restart;
  for (MessagePtr& m : batch) {
    // Before librdkafka 2.1, messages of a partition revoked in this call may have
    // been dequeued before the revocation (stale, even when the partition came
    // straight back) or after it was assigned again (the batch goes on after the
    // callback). They cannot be told apart, so all are dropped and a partition that
    // is ours again is sought back to where its new assignment starts.
    if (revoked_in_call && !purges_outdated_ && m->rkt != nullptr) {
      TopicPartition tp = PartitionOf(*m);
      if (just_revoked_.count(tp)) {
        if (assigned_.contains(tp)) restart.insert(tp);
        continue;
      }
    }
    if (m->err) {
      KELT_RETURN_NOT_OK(OnMessageError(*m));
      continue;
    }
    if (PartitionState* ps = assigned_.Find(m->rkt, m->partition)) {
      ps->fetched_next = m->offset + 1;
    }
    const auto size = static_cast<int64_t>(m->len + m->key_len);
    if (!carried_.empty() ||
        (!win.messages.empty() && win.bytes + size > opts.max_bytes)) {
      carried_.push_back(std::move(m));  // keep order: the rest waits too
      continue;
    }
    KELT_RETURN_NOT_OK(Offer(win, std::move(m)));
  }
  if (!restart.empty()) KELT_RETURN_NOT_OK(SeekToStart(restart));
  return Status::OK();
}

Status WindowAssembler::Offer(Window::Impl& win, MessagePtr m) {
  PartitionState* found = assigned_.Find(m->rkt, m->partition);
  if (found == nullptr) return Status::OK();  // revoked: the next owner re-reads it
  PartitionState& ps = *found;
  if (watermarks_.catching_up()) {
    KELT_ASSIGN_OR_RAISE(bool admitted,
                         watermarks_.Admit(PartitionOf(*m), ps, m->offset));
    if (!admitted) return Status::OK();
  }
  ps.next_offset = m->offset + 1;
  win.Add(std::move(m), ps.generation);
  return Status::OK();
}

Status WindowAssembler::OnMessageError(const rd_kafka_message_t& m) {
  if (m.err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
    if (m.rkt != nullptr) {
      if (PartitionState* ps = assigned_.Find(PartitionOf(m))) ps->eof_offset = m.offset;
    }
    return Status::OK();
  }
  return fatal_.OnMessageError(rk_, m);
}

void WindowAssembler::NoteRevoked(const std::vector<TopicPartition>& tps) {
  ++revocations_;
  just_revoked_.insert(tps.begin(), tps.end());
  std::erase_if(carried_, [&](const MessagePtr& m) {
    return !assigned_.contains(PartitionOf(*m));
  });
}

bool WindowAssembler::Carries(const TopicPartition& tp) const {
  return std::any_of(carried_.begin(), carried_.end(), [&](const MessagePtr& m) {
    return m->partition == tp.partition && tp.topic == rd_kafka_topic_name(m->rkt);
  });
}

// Dropping the records of those partitions carried over here (fetched ones are outdated
// by the seek; librdkafka drops them on dequeue). Errors name `what` and the partition.
Status WindowAssembler::Seek(rd_kafka_topic_partition_list_t* list, const char* what) {
  std::set<TopicPartition> sought;
  for (int i = 0; i < list->cnt; ++i) {
    sought.insert({list->elems[i].topic, list->elems[i].partition});
  }
  std::erase_if(carried_,
                [&](const MessagePtr& m) { return sought.count(PartitionOf(*m)) > 0; });
  assigned_.ForgetCache();
  return SeekFetcher(list, what);
}

// The seek alone: librdkafka's fetcher goes on at each element's offset.
Status WindowAssembler::SeekFetcher(rd_kafka_topic_partition_list_t* list,
                                    const char* what) {
  if (rd_kafka_error_t* error = rd_kafka_seek_partitions(rk_, list, 10000)) {
    Status st =
        Status::Kafka(std::string(what) + " partitions: " + rd_kafka_error_string(error));
    rd_kafka_error_destroy(error);
    return st;
  }
  for (int i = 0; i < list->cnt; ++i) {
    const auto& e = list->elems[i];
    if (e.err) {
      return KafkaError(e.err, std::string(what) + " " + e.topic + "[" +
                                   std::to_string(e.partition) + "]");
    }
  }
  return Status::OK();
}

// librdkafka pauses every assigned partition when a rebalance begins and resumes it
// when the callback applied the change (incremental rebalances, KIP-848's always, keep
// partitions through it); a partition resumes at its application position. Before
// librdkafka 2.13.2, once an end-of-partition event at offset E was returned by a batch
// call, that position is E + 1 until a record at E or later is returned: the record
// written at E after the event would be skipped (or, with nothing written yet, the fetch
// is out of range and the reset policy re-reads the partition). Everything below E was
// returned before the event, so those partitions are sought to E, while they are still
// paused: their fetch restarts there. The records they carry over lie below E and stay.
Status WindowAssembler::RestoreFetchPositions(const std::set<TopicPartition>& leaving) {
  if (!moves_position_past_eof_) return Status::OK();
  PartitionListPtr list(rd_kafka_topic_partition_list_new(1));
  for (const auto& [tp, ps] : assigned_) {
    if (leaving.count(tp) || ps.eof_offset < 0) continue;
    if (ps.fetched_next > ps.eof_offset) continue;  // a record at E or later came since
    rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition)
        ->offset = ps.eof_offset;
    Log(LogLevel::kDebug, "kafka",
        ToString(tp) + ": fetching on at " + std::to_string(ps.eof_offset) +
            " (its end when this rebalance began)");
  }
  if (list->cnt == 0) return Status::OK();
  // Not Seek: the records these partitions carry over lie below E and stay.
  return SeekFetcher(list.get(),
                     "restoring the fetch position (kept through a rebalance) of");
}

// Where an assignment starts: the resume hook's offset, else the group's committed
// offset, else the reset policy.
Status WindowAssembler::SeekToStart(const std::set<TopicPartition>& tps) {
  PartitionListPtr list(rd_kafka_topic_partition_list_new(static_cast<int>(tps.size())));
  for (const auto& tp : tps) {
    rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition)
        ->offset = RD_KAFKA_OFFSET_INVALID;
  }
  PartitionListPtr committed(rd_kafka_topic_partition_list_copy(list.get()));
  rd_kafka_resp_err_t err = rd_kafka_committed(rk_, committed.get(), 10000);
  if (err) return KafkaError(err, "fetching committed offsets to re-read from");
  for (int i = 0; i < list->cnt; ++i) {
    auto& e = list->elems[i];
    const PartitionState& ps = assigned_.at({e.topic, e.partition});
    if (ps.start >= 0) {
      e.offset = ps.start;
    } else if (committed->elems[i].offset >= 0) {
      e.offset = committed->elems[i].offset;
    } else {
      e.offset = auto_offset_reset_ == AutoOffsetReset::kLatest
                     ? RD_KAFKA_OFFSET_END
                     : RD_KAFKA_OFFSET_BEGINNING;
    }
  }
  return Seek(list.get(), "re-reading");
}

Status WindowAssembler::Rewind(const Window::Impl& win) {
  PartitionListPtr list(
      rd_kafka_topic_partition_list_new(static_cast<int>(win.spans.size())));
  for (size_t i = 0; i < win.spans.size(); ++i) {
    const PartitionSpan& s = win.spans[i];
    if (!assigned_.Holds(s.tp, win.span_generations[i])) {
      continue;  // lost since the poll (its next owner reads it), or rewound already
    }
    rd_kafka_topic_partition_list_add(list.get(), s.tp.topic.c_str(), s.tp.partition)
        ->offset = s.first_offset;
  }
  if (list->cnt == 0) return Status::OK();
  KELT_RETURN_NOT_OK(Seek(list.get(), "rewinding"));
  bool resume = false;
  for (int i = 0; i < list->cnt; ++i) {
    const auto& e = list->elems[i];
    PartitionState& ps = assigned_.at({e.topic, e.partition});
    assigned_.Renew(ps);  // windows polled before cannot commit it
    ps.next_offset = e.offset;
    ps.eof_offset = -1;
    if (Watermarks::Reopen(ps, e.offset)) resume = true;
  }
  if (resume) rd_kafka_resume_partitions(rk_, list.get());
  return Status::OK();
}

}  // namespace kelt::kafka
