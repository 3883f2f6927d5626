// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The windowed consumer: one high-level librdkafka consumer per Consumer object, alive
// across windows (RDP made one per call), manual commits only. Consumer::Impl owns the
// client (its handle, shared with the Windows, and its queues) and the consumer's
// state, and wires the parts that do the work, each in its own file:
//   consumer_config.h      options checked, the client's properties
//   assigned_partitions.h  the assignment as the consumer knows it (generations)
//   window_assembly.h      the steps of Poll, carried-over records, seeks and Rewind
//   rebalance.h            the rebalance callback (eager or incremental), the hooks
//   commits.h              synchronous, asynchronous and deferred commits
//   watermarks.h           catch-up marks, end of partitions, lag
//   prefetch.h             prefetch flow control (FetchWaker before librdkafka 2.2)
//   fatal_error.h          the error callback, the error that stops the consumer
//   group_holding.h        who holds the subscription's partitions
//   window.h               what a Window holds
// Everything runs on the polling thread: librdkafka serves the rebalance and error
// callbacks there, inside a batch call or Close. Only the FetchWaker has a thread.
#include <librdkafka/rdkafka.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kelt/kafka.h"
#include "kelt/kafka/assigned_partitions.h"
#include "kelt/kafka/client.h"
#include "kelt/kafka/commits.h"
#include "kelt/kafka/consumer_config.h"
#include "kelt/kafka/fatal_error.h"
#include "kelt/kafka/group_holding.h"
#include "kelt/kafka/prefetch.h"
#include "kelt/kafka/rebalance.h"
#include "kelt/kafka/watermarks.h"
#include "kelt/kafka/window.h"
#include "kelt/kafka/window_assembly.h"

namespace kelt {

std::string KafkaClientVersion() { return rd_kafka_version_str(); }

class Consumer::Impl {
 public:
  explicit Impl(ConsumerOptions options)
      : options_(std::move(options)), fatal_(options_.instance_id) {}

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
    rd_kafka_poll_set_consumer(rk);
    queue_.reset(rd_kafka_queue_get_consumer(rk));
    commit_queue_.reset(rd_kafka_queue_new(rk));
    committer_.emplace(rk, commit_queue_.get(), assigned_);
    prefetch_->Start(rk);
    watermarks_.emplace(rk, assigned_);
    windows_.emplace(kafka::WindowAssembler::Parts{rk, queue_.get(),
                                                   options_.auto_offset_reset, assigned_,
                                                   *watermarks_, *prefetch_, fatal_});
    rebalance_.emplace(kafka::RebalanceHandler::Parts{options_, assigned_, *committer_,
                                                      *windows_, fatal_});
    return Subscribe();
  }

  Result<Window> Poll(const WindowOptions& opts) {
    KELT_RETURN_NOT_OK(BeforePoll(opts));
    Window w;
    w.impl_->keepalive = rk_;
    KELT_RETURN_NOT_OK(windows_->Fill(*w.impl_, opts));
    return w;
  }

  // The offset after the last record of every partition of `w` still owned under the
  // generation it was polled in (others were lost since the poll: another member owns
  // them now).
  Status Commit(const Window& w) {
    if (closed_) return Status::Invalid("kafka consumer is closed");
    KELT_RETURN_NOT_OK(committer_->TakeError());
    const Window::Impl& win = *w.impl_;
    OffsetMap next;
    for (size_t i = 0; i < win.spans.size(); ++i) {
      const PartitionSpan& s = win.spans[i];
      if (assigned_.Holds(s.tp, win.span_generations[i])) next[s.tp] = s.last_offset + 1;
    }
    committer_->Add(next);
    return committer_->Flush();
  }

  Status CommitOffsets(const OffsetMap& next_offsets) {
    if (closed_) return Status::Invalid("kafka consumer is closed");
    KELT_RETURN_NOT_OK(committer_->TakeError());
    committer_->Add(next_offsets);
    return committer_->Flush();
  }

  Status CommitOffsetsAsync(const OffsetMap& next_offsets) {
    if (closed_) return Status::Invalid("kafka consumer is closed");
    KELT_RETURN_NOT_OK(committer_->TakeError());
    return committer_->SendAsync(next_offsets);
  }

  Status Rewind(const Window& w) {
    if (closed_) return Status::Invalid("kafka consumer is closed");
    return windows_->Rewind(*w.impl_);
  }

  Status StartCatchUp() { return watermarks_->StartCatchUp(); }
  bool CaughtUp() const { return watermarks_->CaughtUp(); }
  std::vector<TopicPartition> TakeLost() { return rebalance_->TakeLost(); }
  std::vector<TopicPartition> Assignment() const { return assigned_.List(); }
  std::chrono::milliseconds SessionTimeout() const {
    return kafka::SessionTimeout(options_);
  }

  Result<Consumer::GroupHolding> DescribeGroupHolding(std::chrono::milliseconds timeout) {
    if (closed_) return Status::Invalid("kafka consumer is closed");
    const std::vector<TopicPartition> held = assigned_.List();
    return kafka::DescribeGroupHolding(rk_.get(), options_.group_id, options_.topics,
                                       {held.begin(), held.end()}, timeout);
  }

  Result<std::vector<PartitionLag>> Lag(std::chrono::milliseconds timeout) {
    if (closed_ || !rk_) return Status::Invalid("kafka consumer is closed");
    return watermarks_->Lag(
        timeout, [this](const TopicPartition& tp) { return windows_->Carries(tp); });
  }

  Result<std::vector<std::pair<TopicPartition, int64_t>>> Committed(
      std::chrono::milliseconds timeout) {
    if (closed_ || !rk_) return Status::Invalid("kafka consumer is closed");
    return committer_->Committed(static_cast<int>(timeout.count()));
  }

  Status Close() {
    if (closed_ || !rk_) return Status::OK();
    Status flushed = committer_->TakeError();
    if (Status st = committer_->Flush(); flushed.ok()) flushed = std::move(st);
    closed_ = true;
    windows_->DropCarriedOver();
    prefetch_->Stop();  // joins the waker's thread, which uses the handle
    rd_kafka_resp_err_t err = rd_kafka_consumer_close(rk_.get());
    queue_.reset();
    commit_queue_.reset();
    rk_.reset();  // destroyed now, or when the last Window still holding messages goes
    // The first of: the commits' errors, closing's, offsets left uncommitted, and a
    // commit refused at the revocation that closing made.
    if (err && flushed.ok()) flushed = kafka::KafkaError(err, "closing kafka consumer");
    if (committer_->pending() > 0 && flushed.ok()) {
      flushed = Status::Kafka(
          "closing kafka consumer: " + std::to_string(committer_->pending()) +
          " partition(s) kept durable offsets that could not be committed");
    }
    if (Status st = committer_->TakeError(); flushed.ok()) flushed = std::move(st);
    return flushed;
  }

 private:
  Status Subscribe() {
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

  // What must hold, and be settled, before a window is polled: an asynchronous
  // commit's result, if it came; then offsets deferred by a rebalance.
  Status BeforePoll(const WindowOptions& opts) {
    if (closed_) return Status::Invalid("kafka consumer is closed");
    if (opts.max_records <= 0) return Status::Invalid("max_records must be positive");
    KELT_RETURN_NOT_OK(fatal_.status());
    KELT_RETURN_NOT_OK(committer_->Await(/*wait=*/false));
    if (!committer_->in_flight()) KELT_RETURN_NOT_OK(committer_->Flush());
    return Status::OK();
  }

  static void RebalanceCallback(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                                rd_kafka_topic_partition_list_t* parts, void* opaque) {
    static_cast<Impl*>(opaque)->rebalance_->Serve(rk, err, parts);
  }

  static void ErrorCallback(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
    static_cast<Impl*>(opaque)->fatal_.OnClientError(rk, err, reason);
  }

  ConsumerOptions options_;
  kafka::FatalError fatal_;  // refers to options_.instance_id
  kafka::AssignedPartitions assigned_;
  // The client, then the parts that borrow it (made by Open, after the handle).
  std::shared_ptr<rd_kafka_t> rk_;  // shared with the Windows (see window.h)
  kafka::QueuePtr queue_;           // the consumer queue
  kafka::QueuePtr commit_queue_;    // the answers to asynchronous commits
  std::optional<kafka::PrefetchControl> prefetch_;
  std::optional<kafka::Committer> committer_;
  std::optional<kafka::Watermarks> watermarks_;
  std::optional<kafka::WindowAssembler> windows_;
  std::optional<kafka::RebalanceHandler> rebalance_;
  bool closed_ = false;
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
