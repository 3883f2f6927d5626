// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The windowed consumer. Design notes:
//  - One high-level consumer per Consumer object, alive across windows (RDP made one
//    per call). Manual commits only. The classic group protocol uses the eager range
//    assignor; KIP-848's (group_protocol consumer) is incremental, so the rebalance
//    callback assigns and revokes incrementally whenever librdkafka says the protocol
//    is COOPERATIVE.
//  - Messages come in batches from the consumer queue (rd_kafka_consume_batch_queue),
//    which also serves the rebalance callback on this thread.
//  - A Window owns its rd_kafka_message_t objects (window.h), so its RecordViews point
//    straight into librdkafka's fetch buffers: no payload copy between the broker and
//    the Load step.
//  - Messages that would overflow a window (bytes) are carried over to the next one;
//    messages of partitions revoked mid-window are dropped (their next owner re-reads
//    them, since nothing past the last commit was committed).
//  - A batch call can serve a rebalance in its middle. From librdkafka 2.1 a version
//    barrier purges the batch's messages of a partition whose assignment changed, so
//    what the batch returns is current. Before 2.1 (the system-library fallback) a batch
//    may hold messages of a partition revoked during the call and, when it came straight
//    back, messages of its new assignment that cannot be told apart: Poll then drops both
//    and seeks the partition back to its new start. (An rd_kafka_yield() in the
//    rebalance callback does not end the batch: the queue serving it goes on after a
//    callback that handled its op, in 2.0.2 as in 2.11, so kelt no longer calls it.)
//    Records of revoked partitions held from earlier batch calls are dropped either way.
//  - Prefetch is bounded, and woken up with librdkafka before 2.2 (prefetch.h).
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "kelt/kafka.h"
#include "kelt/kafka/client.h"
#include "kelt/kafka/consumer_config.h"
#include "kelt/kafka/group_holding.h"
#include "kelt/kafka/prefetch.h"
#include "kelt/kafka/window.h"
#include "kelt/log.h"

namespace kelt {

std::string KafkaClientVersion() { return rd_kafka_version_str(); }

// --- Consumer
// ---------------------------------------------------------------------------

namespace {

constexpr int kBatchSize = 2048;

// From 2.1 librdkafka purges a batch's messages of a partition whose assignment changed
// during the batch call (a version barrier), so what a batch holds is current.
bool PurgesOutdatedMessages() { return rd_kafka_version() >= 0x02010000; }
struct PartitionState {
  uint64_t generation = 0;
  // End of partition, by offsets: EOF events come once per arrival at the end and may
  // be served before carried-over records of the same partition are handed out.
  int64_t eof_offset = -1;   // offset of the last end-of-partition event
  int64_t next_offset = -1;  // offset after the last record handed out
  bool at_end() const {
    return eof_offset >= 0 && (next_offset < 0 || next_offset == eof_offset);
  }
  int64_t start = -1;         // where reading started when the resume hook chose it
  int64_t mark = -1;          // catch-up: stop before this offset (-1: not yet known)
  bool mark_reached = false;  // catch-up: nothing left below the mark
};

}  // namespace

class Consumer::Impl {
 public:
  explicit Impl(ConsumerOptions options) : options_(std::move(options)) {}

  ~Impl() {
    if (rk_ && !closed_) (void)Close();
  }

  Status Open() {
    KELT_RETURN_NOT_OK(kafka::ValidateConsumerOptions(options_));
    KELT_RETURN_NOT_OK(kafka::ResolveGroupOptions(&options_));
    const std::map<std::string, std::string> props = kafka::ConsumerProperties(options_);
    prefetch_.emplace(props);
    kafka::ConfPtr conf(rd_kafka_conf_new());
    KELT_RETURN_NOT_OK(kafka::SetProperties(conf.get(), props));
    kafka::InstallLogger(conf.get());
    rd_kafka_conf_set_opaque(conf.get(), this);
    rd_kafka_conf_set_rebalance_cb(conf.get(), &Impl::RebalanceCallback);
    rd_kafka_conf_set_error_cb(conf.get(), &Impl::ErrorCallback);

    char errstr[512] = {0};
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf.get(), errstr, sizeof(errstr));
    if (rk == nullptr)
      return Status::Kafka(std::string("creating kafka consumer: ") + errstr);
    conf.release();  // owned by rk now
    rk_ = std::shared_ptr<rd_kafka_t>(rk, kafka::HandleDeleter());
    rd_kafka_poll_set_consumer(rk_.get());
    queue_.reset(rd_kafka_queue_get_consumer(rk_.get()));
    commit_queue_.reset(rd_kafka_queue_new(rk_.get()));
    prefetch_->Start(rk_.get());

    kafka::PartitionListPtr topics(
        rd_kafka_topic_partition_list_new(static_cast<int>(options_.topics.size())));
    for (const std::string& t : options_.topics) {
      rd_kafka_topic_partition_list_add(topics.get(), t.c_str(), RD_KAFKA_PARTITION_UA);
    }
    rd_kafka_resp_err_t err = rd_kafka_subscribe(rk_.get(), topics.get());
    if (err) {
      return kafka::KafkaError(err,
                               "subscribing to " + kafka::JoinTopics(options_.topics));
    }
    return Status::OK();
  }

  std::chrono::milliseconds SessionTimeout() const {
    return kafka::SessionTimeout(options_);
  }

  Result<Consumer::GroupHolding> DescribeGroupHolding(std::chrono::milliseconds timeout) {
    if (closed_) return Status::Invalid("kafka consumer is closed");
    std::set<TopicPartition> held;
    for (const auto& [tp, ps] : partitions_) held.insert(tp);
    return kafka::DescribeGroupHolding(rk_.get(), options_.group_id, options_.topics,
                                       std::move(held), timeout);
  }

  Result<Window> Poll(const WindowOptions& opts) {
    KELT_RETURN_NOT_OK(BeforePoll(opts));
    const auto deadline = std::chrono::steady_clock::now() + opts.max_wait;
    Window w;
    Window::Impl& win = *w.impl_;
    win.keepalive = rk_;
    KELT_RETURN_NOT_OK(TakePending(win, opts));
    // When every partition was already at its end, look once more before saying so:
    // records may have arrived since the last window.
    bool probed = !AllAtEnd();
    while (!Full(win, opts) && pending_.empty()) {
      if (catch_up_) KELT_RETURN_NOT_OK(RefreshMarks());
      if (opts.stop_at_end && probed && AllAtEnd()) {
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
      const uint64_t revoked_before = revoked_;
      KELT_ASSIGN_OR_RAISE(std::vector<kafka::MessagePtr> batch,
                           ConsumeBatch(timeout_ms, want));
      probed = true;
      const bool revoked_in_call = revoked_ != revoked_before;
      if (revoked_in_call) DropRevoked(win);
      KELT_RETURN_NOT_OK(Accept(win, batch, revoked_in_call, opts));
      if (!pending_.empty()) win.end = WindowEnd::kMaxBytes;
    }
    if (catch_up_) win.caught_up = CaughtUp();
    return w;
  }

  // --- the steps of Poll

  // What must hold, and be settled, before a window is polled.
  Status BeforePoll(const WindowOptions& opts) {
    if (closed_) return Status::Invalid("kafka consumer is closed");
    if (opts.max_records <= 0) return Status::Invalid("max_records must be positive");
    KELT_RETURN_NOT_OK(TakeFatal());
    // An asynchronous commit's result, if it came; then offsets deferred by a rebalance.
    KELT_RETURN_NOT_OK(AwaitCommit(/*wait=*/false));
    if (commit_in_flight_.empty()) KELT_RETURN_NOT_OK(FlushCommits());
    return Status::OK();
  }

  // Whether `win` holds max_records or max_bytes (and then why it ends).
  static bool Full(Window::Impl& win, const WindowOptions& opts) {
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

  // Messages carried over from the previous window come first.
  Status TakePending(Window::Impl& win, const WindowOptions& opts) {
    while (!pending_.empty() && !Full(win, opts)) {
      kafka::MessagePtr& next = pending_.front();
      if (!win.messages.empty() &&
          win.bytes + static_cast<int64_t>(next->len + next->key_len) > opts.max_bytes) {
        win.end = WindowEnd::kMaxBytes;
        break;
      }
      kafka::MessagePtr m = std::move(next);
      pending_.pop_front();
      KELT_RETURN_NOT_OK(Offer(win, std::move(m)));
    }
    return Status::OK();
  }

  // One batch call. Its messages are owned from the moment they are returned, so every
  // error path from here on releases them.
  Result<std::vector<kafka::MessagePtr>> ConsumeBatch(int timeout_ms, size_t want) {
    just_revoked_.clear();
    raw_batch_.resize(static_cast<size_t>(kBatchSize));
    const ssize_t n =
        rd_kafka_consume_batch_queue(queue_.get(), timeout_ms, raw_batch_.data(), want);
    if (n < 0) return kafka::KafkaError(rd_kafka_last_error(), "consuming");
    std::vector<kafka::MessagePtr> batch;
    batch.reserve(static_cast<size_t>(n));
    for (ssize_t i = 0; i < n; ++i)
      batch.emplace_back(raw_batch_[static_cast<size_t>(i)]);
    prefetch_->NoteDrained(batch);
    KELT_RETURN_NOT_OK(TakeFatal());
    return batch;
  }

  // A rebalance was served inside the batch call: records the window already holds for
  // partitions revoked since are not ours to hand out (their next owner, maybe this
  // member under a new generation, re-reads them from the last commit).
  void DropRevoked(Window::Impl& win) {
    win.Retain([&](const TopicPartition& tp, uint64_t generation) {
      auto it = partitions_.find(tp);
      return it != partitions_.end() && it->second.generation == generation;
    });
  }

  // Hand a batch's messages to the window in order: errors and end-of-partition events
  // are handled, and once one message waits for the next window (max_bytes) the rest
  // wait too.
  Status Accept(Window::Impl& win, std::vector<kafka::MessagePtr>& batch,
                bool revoked_in_call, const WindowOptions& opts) {
    // Partitions revoked in the call and assigned straight back whose messages of this
    // batch were dropped below: read them again from their new start.
    std::set<TopicPartition> restart;
    for (kafka::MessagePtr& m : batch) {
      // Before librdkafka 2.1, messages of a partition revoked in this call may have
      // been dequeued before the revocation (stale, even when the partition came
      // straight back) or after it was assigned again (the batch goes on after the
      // callback). They cannot be told apart, so all are dropped and a partition that
      // is ours again is sought back to where its new assignment starts.
      if (revoked_in_call && !purges_outdated_ && m->rkt != nullptr) {
        TopicPartition tp{rd_kafka_topic_name(m->rkt), m->partition};
        if (just_revoked_.count(tp)) {
          if (partitions_.count(tp)) restart.insert(tp);
          continue;
        }
      }
      if (m->err) {
        KELT_RETURN_NOT_OK(HandleMessageError(*m));
        continue;
      }
      const auto size = static_cast<int64_t>(m->len + m->key_len);
      if (!pending_.empty() ||
          (!win.messages.empty() && win.bytes + size > opts.max_bytes)) {
        pending_.push_back(std::move(m));  // keep order: the rest waits too
        continue;
      }
      KELT_RETURN_NOT_OK(Offer(win, std::move(m)));
    }
    if (!restart.empty()) KELT_RETURN_NOT_OK(SeekToStart(restart));
    return Status::OK();
  }

  // Add one message to the window, unless its partition is no longer ours or (catch-up)
  // it is at or past its partition's mark.
  Status Offer(Window::Impl& win, kafka::MessagePtr m) {
    PartitionState* found = FindState(m->rkt, m->partition);
    if (found == nullptr) return Status::OK();  // revoked: the next owner re-reads it
    PartitionState& ps = *found;
    if (catch_up_) {
      TopicPartition tp{rd_kafka_topic_name(m->rkt), m->partition};
      KELT_RETURN_NOT_OK(EnsureMark(tp, &ps));
      if (m->offset >= ps.mark) {
        ps.mark_reached = true;
        PausePartition(tp);
        return Status::OK();
      }
      if (m->offset + 1 >= ps.mark) ps.mark_reached = true;
    }
    ps.next_offset = m->offset + 1;
    win.Add(std::move(m), ps.generation);
    return Status::OK();
  }

  // Record the window's offsets as durable and commit them. When the group is in the
  // middle of a rebalance the broker refuses commits of this generation; the offsets
  // then stay pending and are committed in the revoke callback (before the partitions
  // are given up, as eager rebalancing allows), at the next Poll, or at Close.
  Status Commit(const Window& w) {
    if (closed_) return Status::Invalid("kafka consumer is closed");
    KELT_RETURN_NOT_OK(TakeCommitError());
    const Window::Impl& win = *w.impl_;
    OffsetMap next;
    for (size_t i = 0; i < win.spans.size(); ++i) {
      const PartitionSpan& s = win.spans[i];
      auto it = partitions_.find(s.tp);
      if (it == partitions_.end() || it->second.generation != win.span_generations[i]) {
        continue;  // lost since the poll: another member owns it now
      }
      next[s.tp] = s.last_offset + 1;
    }
    AddPending(next);
    return FlushCommits();
  }

  // Seek every partition of `list` to its offset, dropping the records of those
  // partitions carried over here (fetched ones are outdated by the seek; librdkafka
  // drops them on dequeue). Errors name `what` and the partition.
  Status Seek(rd_kafka_topic_partition_list_t* list, const char* what) {
    std::set<TopicPartition> sought;
    for (int i = 0; i < list->cnt; ++i) {
      sought.insert({list->elems[i].topic, list->elems[i].partition});
    }
    std::erase_if(pending_, [&](const kafka::MessagePtr& m) {
      return sought.count({rd_kafka_topic_name(m->rkt), m->partition}) > 0;
    });
    cached_rkt_ = nullptr;
    if (rd_kafka_error_t* error = rd_kafka_seek_partitions(rk_.get(), list, 10000)) {
      Status st = Status::Kafka(std::string(what) +
                                " partitions: " + rd_kafka_error_string(error));
      rd_kafka_error_destroy(error);
      return st;
    }
    for (int i = 0; i < list->cnt; ++i) {
      const auto& e = list->elems[i];
      if (e.err) {
        return kafka::KafkaError(e.err, std::string(what) + " " + e.topic + "[" +
                                            std::to_string(e.partition) + "]");
      }
    }
    return Status::OK();
  }

  // Seek `tps` (assigned, nothing handed out since) to where their assignment starts:
  // the resume hook's offset, else the group's committed offset, else the reset policy.
  Status SeekToStart(const std::set<TopicPartition>& tps) {
    kafka::PartitionListPtr list(
        rd_kafka_topic_partition_list_new(static_cast<int>(tps.size())));
    for (const auto& tp : tps) {
      rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition)
          ->offset = RD_KAFKA_OFFSET_INVALID;
    }
    kafka::PartitionListPtr committed(rd_kafka_topic_partition_list_copy(list.get()));
    rd_kafka_resp_err_t err = rd_kafka_committed(rk_.get(), committed.get(), 10000);
    if (err) return kafka::KafkaError(err, "fetching committed offsets to re-read from");
    for (int i = 0; i < list->cnt; ++i) {
      auto& e = list->elems[i];
      const PartitionState& ps = partitions_[{e.topic, e.partition}];
      if (ps.start >= 0) {
        e.offset = ps.start;
      } else if (committed->elems[i].offset >= 0) {
        e.offset = committed->elems[i].offset;
      } else {
        e.offset = options_.auto_offset_reset == "latest" ? RD_KAFKA_OFFSET_END
                                                          : RD_KAFKA_OFFSET_BEGINNING;
      }
    }
    return Seek(list.get(), "re-reading");
  }

  Status Rewind(const Window& w) {
    if (closed_) return Status::Invalid("kafka consumer is closed");
    const Window::Impl& win = *w.impl_;
    kafka::PartitionListPtr list(
        rd_kafka_topic_partition_list_new(static_cast<int>(win.spans.size())));
    for (size_t i = 0; i < win.spans.size(); ++i) {
      const PartitionSpan& s = win.spans[i];
      auto it = partitions_.find(s.tp);
      if (it == partitions_.end() || it->second.generation != win.span_generations[i]) {
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
      PartitionState& ps = partitions_[{e.topic, e.partition}];
      ps.generation = ++generation_;  // windows polled before cannot commit it
      ps.next_offset = e.offset;
      ps.eof_offset = -1;
      if (ps.mark_reached && ps.mark >= 0 && e.offset < ps.mark) {
        ps.mark_reached = false;  // catch-up paused it at the mark: read up to it again
        resume = true;
      }
    }
    if (resume) rd_kafka_resume_partitions(rk_.get(), list.get());
    return Status::OK();
  }

  Status CommitOffsets(const OffsetMap& next_offsets) {
    if (closed_) return Status::Invalid("kafka consumer is closed");
    KELT_RETURN_NOT_OK(TakeCommitError());
    AddPending(next_offsets);
    return FlushCommits();
  }

  Status CommitOffsetsAsync(const OffsetMap& next_offsets) {
    if (closed_) return Status::Invalid("kafka consumer is closed");
    KELT_RETURN_NOT_OK(TakeCommitError());
    KELT_RETURN_NOT_OK(AwaitCommit(/*wait=*/true));
    AddPending(next_offsets);
    if (pending_commits_.empty()) return Status::OK();
    kafka::PartitionListPtr list = PendingList(pending_commits_);
    rd_kafka_resp_err_t err = rd_kafka_commit_queue(
        rk_.get(), list.get(), commit_queue_.get(), nullptr, nullptr);
    if (err) return FlushCommits();  // not sent: commit synchronously instead
    commit_in_flight_ = pending_commits_;
    return Status::OK();
  }

  // Offsets the caller made durable, kept until committed (the larger offset wins);
  // partitions no longer assigned are skipped: their next owner resumes.
  void AddPending(const OffsetMap& next_offsets) {
    for (const auto& [tp, offset] : next_offsets) {
      if (partitions_.count(tp) == 0) continue;
      int64_t& pending = pending_commits_[tp];
      pending = std::max(pending, offset);
    }
  }

  static kafka::PartitionListPtr PendingList(const OffsetMap& offsets) {
    kafka::PartitionListPtr list(
        rd_kafka_topic_partition_list_new(static_cast<int>(offsets.size())));
    for (const auto& [tp, offset] : offsets) {
      rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition)
          ->offset = offset;
    }
    return list;
  }

  // Take in the result of a commit that carried `sent`. Committed offsets leave the
  // pending set (unless a larger one came since); a commit refused because the group
  // is rebalancing stays pending: it is retried at the revocation, the next poll or
  // Close.
  Status Settled(rd_kafka_resp_err_t err, const OffsetMap& sent) {
    if (!err || err == RD_KAFKA_RESP_ERR__NO_OFFSET) {
      for (const auto& [tp, offset] : sent) {
        auto it = pending_commits_.find(tp);
        if (it != pending_commits_.end() && it->second <= offset)
          pending_commits_.erase(it);
      }
      return Status::OK();
    }
    if (IsRebalanceError(err)) {
      Log(LogLevel::kInfo, "kafka",
          std::string("offset commit deferred until the rebalance: ") +
              rd_kafka_err2str(err));
      return Status::OK();
    }
    return kafka::KafkaError(err, "committing offsets");
  }

  // A commit refused for good in a revoke callback, reported by the next commit call
  // or Close (once).
  Status TakeCommitError() { return std::exchange(commit_error_, Status::OK()); }

  // Take in the result of the asynchronous commit in flight, if any: waiting for it, or
  // only when it already came (wait false). Retriable failures are retried
  // synchronously; a commit refused during a rebalance stays pending (FlushCommits).
  Status AwaitCommit(bool wait) {
    constexpr int kWaitSeconds = 120;
    if (commit_in_flight_.empty()) return Status::OK();
    rd_kafka_event_t* ev = nullptr;
    for (int waited = 0; ev == nullptr;) {
      ev = rd_kafka_queue_poll(commit_queue_.get(), wait ? 1000 : 0);
      if (ev != nullptr && rd_kafka_event_type(ev) != RD_KAFKA_EVENT_OFFSET_COMMIT) {
        rd_kafka_event_destroy(ev);  // nothing else is sent to this queue
        ev = nullptr;
      }
      if (ev == nullptr && (!wait || ++waited >= kWaitSeconds)) break;
    }
    if (ev == nullptr) {
      if (!wait) return Status::OK();
      return Status::Kafka(
          "committing offsets: no answer from the group coordinator in " +
          std::to_string(kWaitSeconds) + " s");
    }
    rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
    if (!err) {
      if (const rd_kafka_topic_partition_list_t* list =
              rd_kafka_event_topic_partition_list(ev)) {
        for (int i = 0; i < list->cnt && !err; ++i) err = list->elems[i].err;
      }
    }
    rd_kafka_event_destroy(ev);
    OffsetMap sent = std::exchange(commit_in_flight_, {});
    if (err && kafka::IsRetriable(err) && !IsRebalanceError(err)) return FlushCommits();
    return Settled(err, sent);
  }

  // Commit every pending offset of a partition this member still owns.
  Status FlushCommits() {
    KELT_RETURN_NOT_OK(AwaitCommit(/*wait=*/true));
    if (pending_commits_.empty()) return Status::OK();
    const OffsetMap sent = pending_commits_;
    return Settled(CommitList(PendingList(sent).get()), sent);
  }

  // The group moved on while the commit was sent: classic's generation errors, and
  // KIP-848's member epoch errors (Kafka up to 4.2 refuses a commit of any epoch but the
  // member's current one, which every join or leave in the group bumps).
  static bool IsRebalanceError(rd_kafka_resp_err_t err) {
    return err == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS ||
           err == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION ||
           err == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID ||
           err == RD_KAFKA_RESP_ERR_STALE_MEMBER_EPOCH ||
           err == RD_KAFKA_RESP_ERR_FENCED_MEMBER_EPOCH;
  }

  // Synchronous commit with retries of transient errors; the first error, if any.
  rd_kafka_resp_err_t CommitList(rd_kafka_topic_partition_list_t* list) {
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    for (int attempt = 0; attempt < 5; ++attempt) {
      err = rd_kafka_commit(rk_.get(), list, 0);
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
                           IsRebalanceError(err) || !kafka::IsRetriable(err))) {
        return err;
      }
      Log(LogLevel::kWarning, "kafka",
          std::string("offset commit failed, retrying: ") + rd_kafka_err2str(err));
      std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));
    }
    return err;
  }

  Status StartCatchUp() {
    catch_up_ = true;
    for (auto& [tp, ps] : partitions_) KELT_RETURN_NOT_OK(EnsureMark(tp, &ps));
    return Status::OK();
  }

  bool CaughtUp() const {
    if (!catch_up_ || partitions_.empty()) return false;
    return std::all_of(partitions_.begin(), partitions_.end(), [](const auto& kv) {
      return kv.second.mark_reached || (kv.second.at_end() && kv.second.mark >= 0);
    });
  }

  std::vector<TopicPartition> TakeLost() { return std::exchange(lost_, {}); }

  std::vector<TopicPartition> Assignment() const {
    std::vector<TopicPartition> out;
    for (const auto& [tp, ps] : partitions_) out.push_back(tp);
    return out;
  }

  Result<std::vector<PartitionLag>> Lag(std::chrono::milliseconds timeout) {
    std::vector<PartitionLag> out;
    // The position is what this consumer handed out, not rd_kafka_position(): librdkafka
    // 2.11 moves that one past an end-of-partition event (to the high watermark + 1).
    kafka::PartitionListPtr list(AssignmentList());
    kafka::PartitionListPtr committed(AssignmentList());
    rd_kafka_committed(rk_.get(), committed.get(), static_cast<int>(timeout.count()));
    for (int i = 0; i < list->cnt; ++i) {
      PartitionLag lag;
      lag.tp = {list->elems[i].topic, list->elems[i].partition};
      const PartitionState& ps = partitions_[lag.tp];
      lag.position = ps.next_offset >= 0 ? ps.next_offset
                     : ps.start >= 0     ? ps.start
                                         : committed->elems[i].offset;
      // At the end with nothing carried over: the end-of-partition offset, which is past
      // trailing control records (transaction markers) that no record hands out.
      if (ps.eof_offset > lag.position &&
          std::none_of(pending_.begin(), pending_.end(), [&](const kafka::MessagePtr& m) {
            return m->partition == lag.tp.partition &&
                   lag.tp.topic == rd_kafka_topic_name(m->rkt);
          })) {
        lag.position = ps.eof_offset;
      }
      int64_t low = 0, high = 0;
      rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
          rk_.get(), lag.tp.topic.c_str(), lag.tp.partition, &low, &high,
          static_cast<int>(timeout.count()));
      if (err)
        return kafka::KafkaError(err, "querying watermarks of " + ToString(lag.tp));
      lag.high_watermark = high;
      lag.lag = high - std::max(lag.position >= 0 ? lag.position : low, low);
      out.push_back(std::move(lag));
    }
    return out;
  }

  Result<std::vector<std::pair<TopicPartition, int64_t>>> Committed(
      std::chrono::milliseconds timeout) {
    kafka::PartitionListPtr list(AssignmentList());
    rd_kafka_resp_err_t err =
        rd_kafka_committed(rk_.get(), list.get(), static_cast<int>(timeout.count()));
    if (err) return kafka::KafkaError(err, "fetching committed offsets");
    std::vector<std::pair<TopicPartition, int64_t>> out;
    for (int i = 0; i < list->cnt; ++i) {
      out.emplace_back(TopicPartition{list->elems[i].topic, list->elems[i].partition},
                       list->elems[i].offset >= 0 ? list->elems[i].offset : -1);
    }
    return out;
  }

  Status Close() {
    if (closed_ || !rk_) return Status::OK();
    Status flushed = TakeCommitError();
    if (Status st = FlushCommits(); flushed.ok()) flushed = std::move(st);
    closed_ = true;
    pending_.clear();
    prefetch_->Stop();  // joins the waker's thread, which uses the handle
    rd_kafka_resp_err_t err = rd_kafka_consumer_close(rk_.get());
    queue_.reset();
    commit_queue_.reset();
    rk_.reset();  // destroyed now, or when the last Window still holding messages goes
    // The first of: the commits' errors, closing's, offsets left uncommitted, and a
    // commit refused at the revocation that closing made.
    if (err && flushed.ok()) flushed = kafka::KafkaError(err, "closing kafka consumer");
    if (!pending_commits_.empty() && flushed.ok()) {
      flushed = Status::Kafka(
          "closing kafka consumer: " + std::to_string(pending_commits_.size()) +
          " partition(s) kept durable offsets that could not be committed");
    }
    if (Status st = TakeCommitError(); flushed.ok()) flushed = std::move(st);
    return flushed;
  }

 private:
  static void RebalanceCallback(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                                rd_kafka_topic_partition_list_t* parts, void* opaque) {
    static_cast<Impl*>(opaque)->OnRebalance(rk, err, parts);
  }

  // Assign or revoke `parts`: incrementally under a cooperative protocol (KIP-848's is
  // always), else the whole assignment at once. A failure stops the consumer.
  void ApplyAssignment(rd_kafka_t* rk, rd_kafka_topic_partition_list_t* parts,
                       bool assign) {
    // KIP-848 is always incremental (librdkafka may still say NONE before its first
    // subscription completed); classic follows its assignor.
    const char* protocol = rd_kafka_rebalance_protocol(rk);
    const bool incremental =
        options_.group_protocol == GroupProtocol::kConsumer ||
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
    if (!what.empty() && fatal_.ok()) {
      fatal_ = Status::Kafka(std::string(assign ? "assigning" : "revoking") + " " +
                             std::to_string(parts->cnt) + " partition(s): " + what);
    }
  }

  void OnRebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                   rd_kafka_topic_partition_list_t* parts) {
    cached_rkt_ = nullptr;  // the assignment changes: FindState's cache is stale
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
      OffsetMap starts;
      if (options_.resume) {
        std::vector<TopicPartition> tps;
        for (int i = 0; i < parts->cnt; ++i)
          tps.push_back({parts->elems[i].topic, parts->elems[i].partition});
        auto resumed = options_.resume(tps);
        if (resumed.ok()) {
          starts = std::move(*resumed);
        } else if (fatal_.ok()) {
          // Reading from the committed offset instead could land rows twice: stop.
          fatal_ = resumed.status().WithPrefix(
              "reading the resume point of assigned partitions: ");
        }
        for (int i = 0; i < parts->cnt; ++i) {
          auto it = starts.find({parts->elems[i].topic, parts->elems[i].partition});
          if (it != starts.end() && it->second >= 0) parts->elems[i].offset = it->second;
        }
      }
      ApplyAssignment(rk, parts, /*assign=*/true);
      // A partition paused at its catch-up mark, revoked and assigned back, would stay
      // paused (librdkafka keeps an application's pause across assignments) while its new
      // mark lies further on: kelt pauses only for catch-up, so resume what is assigned.
      rd_kafka_resume_partitions(rk, parts);
      for (int i = 0; i < parts->cnt; ++i) {
        PartitionState ps;
        ps.generation = ++generation_;
        TopicPartition tp{parts->elems[i].topic, parts->elems[i].partition};
        auto it = starts.find(tp);
        if (it != starts.end()) ps.start = it->second;
        partitions_[tp] = ps;
      }
      Log(LogLevel::kInfo, "kafka",
          "assigned " + std::to_string(parts->cnt) + " partition(s)");
      return;
    }
    // Revoked (or lost): forget those partitions and any carried-over messages of theirs.
    // Nothing is committed here: the caller commits each window once it is durable, and
    // a window's records of a revoked partition are dropped before they are handed out.
    const bool lost = rd_kafka_assignment_lost(rk);
    if (options_.before_revoke) {
      std::vector<TopicPartition> tps;
      for (int i = 0; i < parts->cnt; ++i)
        tps.push_back({parts->elems[i].topic, parts->elems[i].partition});
      // What the write it finished made durable is committed with the rest below.
      OffsetMap durable = options_.before_revoke(tps);
      if (!lost) AddPending(durable);
    }
    ++revoked_;
    if (!lost) CommitPendingOf(parts);
    for (int i = 0; i < parts->cnt; ++i) {
      TopicPartition tp{parts->elems[i].topic, parts->elems[i].partition};
      partitions_.erase(tp);
      just_revoked_.insert(tp);
      pending_commits_.erase(tp);  // committed just above, or no longer ours to commit
      lost_.push_back(tp);
    }
    std::erase_if(pending_, [&](const kafka::MessagePtr& m) {
      return partitions_.find({rd_kafka_topic_name(m->rkt), m->partition}) ==
             partitions_.end();
    });
    ApplyAssignment(rk, parts, /*assign=*/false);
    Log(LogLevel::kInfo, "kafka",
        std::string(lost ? "lost " : "revoked ") + std::to_string(parts->cnt) +
            " partition(s)");
  }

  // Before revoked partitions are given up, commit what the caller made durable for
  // them (the group accepts commits of this generation while it prepares a rebalance).
  void CommitPendingOf(const rd_kafka_topic_partition_list_t* parts) {
    if (Status st = AwaitCommit(/*wait=*/true); !st.ok() && commit_error_.ok()) {
      commit_error_ = std::move(st);
    }
    OffsetMap revoked;
    for (int i = 0; i < parts->cnt; ++i) {
      auto it = pending_commits_.find({parts->elems[i].topic, parts->elems[i].partition});
      if (it != pending_commits_.end()) revoked.insert(*it);
    }
    if (revoked.empty()) return;
    rd_kafka_resp_err_t err = CommitList(PendingList(revoked).get());
    if (!err || err == RD_KAFKA_RESP_ERR__NO_OFFSET) return;
    const std::string what =
        "could not commit the durable offsets of " + std::to_string(revoked.size()) +
        " revoked partition(s) (their next owner reads those records again)";
    if (IsRebalanceError(err)) {
      // The group moved on without this member's offsets: nothing more can be done.
      Log(LogLevel::kWarning, "kafka", what + ": " + rd_kafka_err2str(err));
    } else if (commit_error_.ok()) {
      commit_error_ = kafka::KafkaError(err, what);
    }
  }

  static void ErrorCallback(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
    auto* self = static_cast<Impl*>(opaque);
    auto code = static_cast<rd_kafka_resp_err_t>(err);
    if (code == RD_KAFKA_RESP_ERR__FATAL) {
      self->fatal_ = self->FatalStatus(rk);
    } else if ((code == RD_KAFKA_RESP_ERR__SSL || code == RD_KAFKA_RESP_ERR__TRANSPORT) &&
               reason != nullptr &&
               std::string_view(reason).find("certificate") != std::string_view::npos) {
      // The broker's certificate is not trusted (_SSL), or the broker refused ours (a
      // TLS alert, _TRANSPORT): a retry with the same CA and keys cannot succeed.
      self->fatal_ = Status::Kafka(std::string("kafka TLS handshake failed: ") + reason);
    } else if (code == RD_KAFKA_RESP_ERR__AUTHENTICATION ||
               code == RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED ||
               code == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
               code == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED) {
      // Retrying with the same credentials cannot succeed: surface it now.
      self->fatal_ =
          Status::Kafka(std::string("kafka authentication/authorization failed: ") +
                        (reason ? reason : rd_kafka_err2str(code)));
    }
    Log(kafka::IsRetriable(code) ? LogLevel::kWarning : LogLevel::kError, "kafka",
        reason ? reason : rd_kafka_err2str(code));
  }

  // librdkafka's fatal error, with what to do about the ones a user can cause.
  Status FatalStatus(rd_kafka_t* rk) const {
    char buf[512] = {0};
    rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, buf, sizeof(buf));
    std::string hint;
    if (orig == RD_KAFKA_RESP_ERR_UNRELEASED_INSTANCE_ID) {
      hint = ": instance_id '" + options_.instance_id +
             "' is still held by a member that did not leave the group; under "
             "group_protocol consumer a new member cannot take it until that member's "
             "session times out (the broker's group.consumer.session.timeout.ms): start "
             "again after it, or use group_protocol classic";
    } else if (orig == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID) {
      hint = ": another member joined with the same instance_id '" +
             options_.instance_id + "' (each worker needs its own)";
    }
    return Status::Kafka(std::string("fatal kafka error: ") + buf + " (" +
                         rd_kafka_err2name(orig) + ")" + hint);
  }

  Status TakeFatal() {
    if (fatal_.ok()) return Status::OK();
    return fatal_;
  }

  Status HandleMessageError(const rd_kafka_message_t& m) {
    if (m.err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      if (m.rkt != nullptr) {
        auto it = partitions_.find({rd_kafka_topic_name(m.rkt), m.partition});
        if (it != partitions_.end()) it->second.eof_offset = m.offset;
      }
      return Status::OK();
    }
    std::string where = m.rkt ? ToString({rd_kafka_topic_name(m.rkt), m.partition})
                              : std::string("consumer");
    switch (m.err) {
      case RD_KAFKA_RESP_ERR__FATAL:
        // The message can come before the error callback that sets fatal_.
        if (fatal_.ok()) fatal_ = FatalStatus(rk_.get());
        return fatal_;
      case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
      case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
      case RD_KAFKA_RESP_ERR__AUTHENTICATION:
      case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
      case RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE:
      case RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET:
        return kafka::KafkaError(m.err, where);
      default:
        // Transient (leader moves, timeouts, unknown topic while it is being created):
        // librdkafka retries on its own.
        Log(LogLevel::kWarning, "kafka",
            where + ": " + rd_kafka_err2str(m.err) + " (retrying)");
        return Status::OK();
    }
  }

  // The state of a message's partition, or nullptr when it is not assigned. One-entry
  // cache by topic handle and partition: batches come in runs of one partition.
  PartitionState* FindState(const rd_kafka_topic_t* rkt, int32_t partition) {
    if (rkt == cached_rkt_ && partition == cached_partition_) return cached_state_;
    auto it = partitions_.find({rd_kafka_topic_name(rkt), partition});
    cached_rkt_ = rkt;
    cached_partition_ = partition;
    cached_state_ = it == partitions_.end() ? nullptr : &it->second;
    return cached_state_;
  }

  bool AllAtEnd() const {
    if (partitions_.empty()) return false;
    return std::all_of(partitions_.begin(), partitions_.end(), [&](const auto& kv) {
      return kv.second.at_end() || (catch_up_ && kv.second.mark_reached);
    });
  }

  Status EnsureMark(const TopicPartition& tp, PartitionState* ps) {
    if (ps->mark >= 0) return Status::OK();
    int64_t low = 0, high = 0;
    rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
        rk_.get(), tp.topic.c_str(), tp.partition, &low, &high, 10000);
    if (err)
      return kafka::KafkaError(err, "querying the high watermark of " + ToString(tp));
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
    kafka::PartitionListPtr list(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition);
    if (!rd_kafka_committed(rk_.get(), list.get(), 10000) &&
        list->elems[0].offset >= high) {
      ps->mark_reached = true;
    }
    return Status::OK();
  }

  Status RefreshMarks() {
    for (auto& [tp, ps] : partitions_) KELT_RETURN_NOT_OK(EnsureMark(tp, &ps));
    return Status::OK();
  }

  void PausePartition(const TopicPartition& tp) {
    kafka::PartitionListPtr list(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition);
    rd_kafka_pause_partitions(rk_.get(), list.get());
  }

  rd_kafka_topic_partition_list_t* AssignmentList() const {
    auto* list = rd_kafka_topic_partition_list_new(static_cast<int>(partitions_.size()));
    for (const auto& [tp, ps] : partitions_) {
      rd_kafka_topic_partition_list_add(list, tp.topic.c_str(), tp.partition);
    }
    return list;
  }

  ConsumerOptions options_;
  std::shared_ptr<rd_kafka_t> rk_;  // shared with the Windows (see window.h)
  kafka::QueuePtr queue_;
  std::optional<kafka::PrefetchControl> prefetch_;         // made by Open
  const bool purges_outdated_ = PurgesOutdatedMessages();  // (see the file's notes)
  std::map<TopicPartition, PartitionState> partitions_;    // the current assignment
  const rd_kafka_topic_t* cached_rkt_ = nullptr;           // FindState's cache
  int32_t cached_partition_ = -1;
  PartitionState* cached_state_ = nullptr;
  std::deque<kafka::MessagePtr> pending_;       // carried over to the next window
  std::vector<rd_kafka_message_t*> raw_batch_;  // ConsumeBatch's buffer, owned there
  OffsetMap pending_commits_;                   // durable, not yet committed
  OffsetMap commit_in_flight_;                  // sent asynchronously
  kafka::QueuePtr commit_queue_;                // its result arrives here
  std::vector<TopicPartition> lost_;
  uint64_t generation_ = 0;
  uint64_t revoked_ = 0;                   // number of revocations served so far
  std::set<TopicPartition> just_revoked_;  // revoked during the current batch call
  bool catch_up_ = false;
  bool closed_ = false;
  Status fatal_;
  Status commit_error_;  // see TakeCommitError
};

Consumer::Consumer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Consumer::~Consumer() = default;

Result<std::unique_ptr<Consumer>> Consumer::Make(const ConsumerOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  KELT_RETURN_NOT_OK(impl->Open());
  return std::unique_ptr<Consumer>(new Consumer(std::move(impl)));
}

Result<Window> Consumer::Poll(const WindowOptions& options) {
  return impl_->Poll(options);
}
Status Consumer::Commit(const Window& window) { return impl_->Commit(window); }
Status Consumer::Rewind(const Window& window) { return impl_->Rewind(window); }
Status Consumer::CommitOffsets(const OffsetMap& next_offsets) {
  return impl_->CommitOffsets(next_offsets);
}
Status Consumer::CommitOffsetsAsync(const OffsetMap& next_offsets) {
  return impl_->CommitOffsetsAsync(next_offsets);
}
Status Consumer::StartCatchUp() { return impl_->StartCatchUp(); }
bool Consumer::caught_up() const { return impl_->CaughtUp(); }
std::vector<TopicPartition> Consumer::TakeLostPartitions() { return impl_->TakeLost(); }
std::vector<TopicPartition> Consumer::Assignment() const { return impl_->Assignment(); }
Result<Consumer::GroupHolding> Consumer::DescribeGroupHolding(
    std::chrono::milliseconds timeout) {
  return impl_->DescribeGroupHolding(timeout);
}
std::chrono::milliseconds Consumer::SessionTimeout() const {
  return impl_->SessionTimeout();
}
Result<std::vector<PartitionLag>> Consumer::Lag(std::chrono::milliseconds timeout) {
  return impl_->Lag(timeout);
}
Result<std::vector<std::pair<TopicPartition, int64_t>>> Consumer::Committed(
    std::chrono::milliseconds timeout) {
  return impl_->Committed(timeout);
}
Status Consumer::Close() { return impl_->Close(); }

}  // namespace kelt
