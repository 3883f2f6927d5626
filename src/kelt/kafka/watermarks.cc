// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/kafka/watermarks.h"

#include <algorithm>

#include "kelt/kafka/client.h"

namespace kelt::kafka {

Status Watermarks::StartCatchUp() {
  catch_up_ = true;
  for (auto& [tp, ps] : assigned_) KELT_RETURN_NOT_OK(EnsureMark(tp, &ps));
  return Status::OK();
}

Status Watermarks::Refresh() {
  if (!catch_up_) return Status::OK();
  for (auto& [tp, ps] : assigned_) KELT_RETURN_NOT_OK(EnsureMark(tp, &ps));
  return Status::OK();
}

Result<bool> Watermarks::Admit(const TopicPartition& tp, PartitionState& ps,
                               int64_t offset) {
  if (!catch_up_) return true;
  KELT_RETURN_NOT_OK(EnsureMark(tp, &ps));
  if (offset >= ps.mark) {
    ps.mark_reached = true;
    Pause(tp);
    return false;
  }
  if (offset + 1 >= ps.mark) ps.mark_reached = true;
  return true;
}

bool Watermarks::Reopen(PartitionState& ps, int64_t offset) {
  if (ps.mark_reached && ps.mark >= 0 && offset < ps.mark) {
    ps.mark_reached = false;  // catch-up paused it at the mark: read up to it again
    return true;
  }
  return false;
}

bool Watermarks::CaughtUp() const {
  if (!catch_up_ || assigned_.empty()) return false;
  return std::all_of(assigned_.begin(), assigned_.end(), [](const auto& kv) {
    return kv.second.mark_reached || (kv.second.at_end() && kv.second.mark >= 0);
  });
}

bool Watermarks::AllAtEnd() const {
  if (assigned_.empty()) return false;
  return std::all_of(assigned_.begin(), assigned_.end(), [&](const auto& kv) {
    return kv.second.at_end() || (catch_up_ && kv.second.mark_reached);
  });
}

Status Watermarks::EnsureMark(const TopicPartition& tp, PartitionState* ps) {
  if (ps->mark >= 0) return Status::OK();
  int64_t low = 0, high = 0;
  rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
      rk_, tp.topic.c_str(), tp.partition, &low, &high, 10000);
  if (err) return KafkaError(err, "querying the high watermark of " + ToString(tp));
  ps->mark = high;
  if (high <= low) {
    ps->mark_reached = true;  // empty partition
    return Status::OK();
  }
  // Resuming at or past the mark (from the committed offset) means nothing to read.
  if (ps->start >= 0) {
    if (ps->start >= high) ps->mark_reached = true;
    return Status::OK();
  }
  PartitionListPtr list(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition);
  if (!rd_kafka_committed(rk_, list.get(), 10000) && list->elems[0].offset >= high) {
    ps->mark_reached = true;
  }
  return Status::OK();
}

void Watermarks::Pause(const TopicPartition& tp) {
  PartitionListPtr list(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition);
  rd_kafka_pause_partitions(rk_, list.get());
}

Result<std::vector<PartitionLag>> Watermarks::Lag(
    std::chrono::milliseconds timeout,
    const std::function<bool(const TopicPartition&)>& carries) {
  std::vector<PartitionLag> out;
  const int timeout_ms = static_cast<int>(timeout.count());
  // The position is what this consumer handed out, not rd_kafka_position(): librdkafka
  // 2.11 moves that one past an end-of-partition event (to the high watermark + 1).
  PartitionListPtr list = assigned_.ToPartitionList();
  PartitionListPtr committed = assigned_.ToPartitionList();
  rd_kafka_committed(rk_, committed.get(), timeout_ms);
  for (int i = 0; i < list->cnt; ++i) {
    PartitionLag lag;
    lag.tp = {list->elems[i].topic, list->elems[i].partition};
    const PartitionState& ps = assigned_.at(lag.tp);
    lag.position = ps.next_offset >= 0 ? ps.next_offset
                   : ps.start >= 0     ? ps.start
                                       : committed->elems[i].offset;
    // At the end with nothing carried over: the end-of-partition offset, which is past
    // trailing control records (transaction markers) that no record hands out.
    if (ps.eof_offset > lag.position && !carries(lag.tp)) lag.position = ps.eof_offset;
    int64_t low = 0, high = 0;
    rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
        rk_, lag.tp.topic.c_str(), lag.tp.partition, &low, &high, timeout_ms);
    if (err) return KafkaError(err, "querying watermarks of " + ToString(lag.tp));
    lag.high_watermark = high;
    lag.lag = high - std::max(lag.position >= 0 ? lag.position : low, low);
    out.push_back(std::move(lag));
  }
  return out;
}

}  // namespace kelt::kafka
