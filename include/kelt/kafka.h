// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Extract and the Kafka sink: a consumer that lives across poll windows and commits
// only what the caller says is durable, and a producer that reports what was delivered.
// librdkafka stays behind these types (STYLE rule 4).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kelt/dataset.h"
#include "kelt/offsets.h"
#include "kelt/record.h"
#include "kelt/status.h"

namespace arrow {
class RecordBatch;
}  // namespace arrow

namespace kelt {

// --- consumer
// ---------------------------------------------------------------------------

/// Return the version of the librdkafka kelt runs on, e.g. "2.11.1".
std::string KafkaClientVersion();

/// The consumer group protocol (librdkafka's `group.protocol`).
enum class GroupProtocol : uint8_t {
  /// The classic protocol: a member leads, every rebalance stops the whole group (kelt
  /// uses the eager range assignor). Works with every broker.
  kClassic,
  /// KIP-848 (Kafka >= 4.0): the broker assigns, incrementally; a rebalance stops only
  /// the partitions that move. The session timeout is the broker's
  /// (group.consumer.session.timeout.ms).
  kConsumer,
};

/// Parse "classic" or "consumer"; an error names `what` and the accepted values.
Result<GroupProtocol> ParseGroupProtocol(std::string_view text,
                                         std::string_view what = "group_protocol");
std::string_view GroupProtocolName(GroupProtocol protocol);

/// Where a partition without a committed (or landed) offset starts.
enum class AutoOffsetReset : uint8_t {
  kEarliest,  ///< at the log start
  kLatest,    ///< at the end: only records produced from now on
  kError,     ///< nowhere: the poll fails, naming the partition
};

/// "earliest", "latest", "error".
std::string_view AutoOffsetResetName(AutoOffsetReset reset);
/// Those names, and librdkafka's synonyms (smallest and beginning; largest and end); an
/// error names `what` and the accepted values.
Result<AutoOffsetReset> ParseAutoOffsetReset(std::string_view text,
                                             std::string_view what = "auto_offset_reset");

struct ConsumerOptions {
  /// bootstrap.servers. Required.
  std::string brokers;
  /// group.id. Required.
  std::string group_id;
  /// Topics to subscribe to; a name starting with '^' is a regular expression.
  std::vector<std::string> topics;
  AutoOffsetReset auto_offset_reset = AutoOffsetReset::kEarliest;
  /// classic only: the broker drops a member that stopped heartbeating after this.
  std::optional<int> session_timeout_ms;
  /// classic (the default) or consumer (KIP-848). A `group.protocol` property sets it
  /// too (they must agree).
  GroupProtocol group_protocol = GroupProtocol::kClassic;
  /// group.instance.id: static membership. A member that restarts with the same id
  /// takes its partitions back at once (classic) instead of waiting for the session of
  /// its dead predecessor to time out; it does not leave the group on Close. Stable per
  /// worker (a StatefulSet pod name, a systemd instance name) and unique in the group.
  /// Empty: dynamic membership.
  std::string instance_id;
  /// Any librdkafka property (security.protocol, sasl.*, ssl.*, fetch.*, …). Values are
  /// never logged. kelt refuses to let these turn on auto commit or auto offset store.
  std::map<std::string, std::string> properties;
  /// Called on the polling thread when partitions are assigned, before any of their
  /// records is fetched. For each partition it returns, reading starts at that offset
  /// (a sink's durable point); the others start at the group's committed offset. An
  /// error stops the consumer: the next Poll fails with it.
  std::function<Result<OffsetMap>(const std::vector<TopicPartition>&)> resume;
  /// Called on the polling thread when partitions are revoked or lost, before they are
  /// given up (the group waits for it): the place to finish writes still in flight for
  /// them, so their next owner finds them. It returns the next offsets that are now
  /// durable for those partitions (or nothing); on a revocation they are committed,
  /// with the offsets already pending, before the partitions go.
  std::function<OffsetMap(const std::vector<TopicPartition>&)> before_revoke;
};

/// Why a window ended.
enum class WindowEnd : uint8_t {
  kMaxRecords,       ///< it holds max_records
  kMaxBytes,         ///< it holds max_bytes of payload and key bytes
  kEndOfPartitions,  ///< every assigned partition has reached its end (or its catch-up
                     ///< mark)
  kDeadline,         ///< max_wait passed
};

std::string_view WindowEndName(WindowEnd end);

struct WindowOptions {
  int64_t max_records = 500;
  int64_t max_bytes = 64ll << 20;
  /// The window ends at this deadline even if records keep arriving or no partition
  /// has been assigned yet.
  std::chrono::milliseconds max_wait{10000};
  /// End the window as soon as every assigned partition has reached its end.
  bool stop_at_end = true;
};

/// Lag of one assigned partition: the broker's high watermark minus the next offset
/// the consumer will read (its position, else its committed offset).
struct PartitionLag {
  TopicPartition tp;
  int64_t position = -1;
  int64_t high_watermark = -1;
  int64_t lag = -1;
};

/// One poll window: records that stay valid (zero-copy views into librdkafka's buffers)
/// until the Window is destroyed.
class Window {
 public:
  Window();
  ~Window();
  Window(Window&&) noexcept;
  Window& operator=(Window&&) noexcept;

  size_t size() const;
  bool empty() const { return size() == 0; }
  /// The i-th record; headers are included only when `with_headers`.
  RecordView record(size_t i, bool with_headers = true) const;
  /// Copy every record (for the JSON boundary).
  std::vector<StreamRecord> ToRecords() const;
  /// Per partition, the offsets this window covers, in first-seen order.
  const std::vector<PartitionSpan>& spans() const;
  WindowEnd end_reason() const;
  /// Payload plus key bytes.
  int64_t bytes() const;
  /// True when, in catch-up mode, every partition had reached its mark.
  bool caught_up() const;
  /// Free the records (librdkafka's messages, and the fetch buffers once no other
  /// window's records point into them) when they are no longer needed, e.g. once
  /// loaded: size() is 0 afterwards, while spans(), bytes(), end_reason() and
  /// caught_up() stay, so the window can still be committed or rewound.
  void ReleaseRecords();

  class Impl;

 private:
  friend class Consumer;
  std::unique_ptr<Impl> impl_;
};

/// A consumer-group member that polls bounded windows and commits on request.
/// Not thread-safe: use it from one thread.
class Consumer {
 public:
  /// Validate options (RDP's messages: "kafka brokers must not be empty", …), create
  /// the client with manual commits (the classic protocol with the eager range assignor,
  /// or KIP-848's incremental one), and subscribe.
  static Result<std::unique_ptr<Consumer>> Make(const ConsumerOptions& options);
  ~Consumer();
  Consumer(const Consumer&) = delete;
  Consumer& operator=(const Consumer&) = delete;

  /// Return the next window. Retriable broker trouble is retried by librdkafka while
  /// the window waits; fatal errors end the call with a kKafka Status.
  Result<Window> Poll(const WindowOptions& options);

  /// Commit, synchronously, the offset after the last record of every partition in
  /// `window` that this consumer still owns. Call it only when the window is durable.
  /// Partitions lost since the poll are skipped and reported by TakeLostPartitions().
  /// A commit the group refuses because a rebalance is in progress is kept and made at
  /// the revocation, the next poll or Close (the call then returns OK before it is).
  /// A commit made at a revocation that fails for another reason is returned by the
  /// next commit call or by Close.
  Status Commit(const Window& window);

  /// Commit, synchronously, these next offsets for the partitions this consumer still
  /// owns (others are skipped). For callers that track durability themselves.
  Status CommitOffsets(const OffsetMap& next_offsets);

  /// Like CommitOffsets, but returns once the commit is sent: its result is taken in by
  /// the next commit call, Poll, a revocation or Close, which wait for it first (a
  /// failure the group would not retry is returned there). One commit is in flight at
  /// a time. For loops that overlap the commit's round trip with the next window.
  Status CommitOffsetsAsync(const OffsetMap& next_offsets);

  /// Give `window` back: the next Poll starts again at its first record of every
  /// partition this consumer still owns, so a window that could not be made durable (a
  /// bad record under the `fail` policy, a sink error) is read again instead of being
  /// passed over by the next commit. Records polled after it are read again too.
  /// `window` (and any window polled before the call) can no longer be committed.
  Status Rewind(const Window& window);

  /// Enter catch-up mode: snapshot each assigned partition's high watermark (and each
  /// partition assigned later, at assignment) and never read past it. Windows then end
  /// with kEndOfPartitions once every partition reached its mark; caught_up() says so.
  Status StartCatchUp();
  bool caught_up() const;

  /// Partitions revoked or lost since the last call (their uncommitted records will be
  /// re-read by their next owner).
  std::vector<TopicPartition> TakeLostPartitions();
  /// The current assignment.
  std::vector<TopicPartition> Assignment() const;
  /// Who holds the subscription's partitions now, as the group coordinator says
  /// (DescribeConsumerGroups and metadata; bounded by `timeout`).
  struct GroupHolding {
    int other_members = 0;       ///< other members that hold partitions
    int64_t held_by_others = 0;  ///< partitions they hold
    int64_t unassigned = 0;      ///< partitions of the subscribed topics nobody holds
  };
  /// A member killed without leaving keeps its partitions until its session times out;
  /// under KIP-848 they then pass to the others one member at a time.
  Result<GroupHolding> DescribeGroupHolding(
      std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// The session timeout the group's members were asked to keep (session_timeout_ms,
  /// else librdkafka's 45 s; with the consumer protocol the broker decides: 45 s by
  /// default).
  std::chrono::milliseconds SessionTimeout() const;
  /// Lag per assigned partition (queries the broker; bounded by `timeout`).
  Result<std::vector<PartitionLag>> Lag(
      std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// The committed offsets of the assigned partitions (-1 when none).
  Result<std::vector<std::pair<TopicPartition, int64_t>>> Committed(
      std::chrono::milliseconds timeout = std::chrono::seconds(5));

  /// Leave the group. Uncommitted records are left for the next owner.
  Status Close();

  class Impl;

 private:
  explicit Consumer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// --- producer
// ---------------------------------------------------------------------------

/// Turns the rows of a batch into message payloads (the Kafka sink's value format: Avro
/// in the Confluent wire format, …). kafka/ knows only this interface; the formats live
/// in modules that may call the registry (include/kelt/serde.h).
class PayloadEncoder {
 public:
  virtual ~PayloadEncoder() = default;
  /// Append one payload per row of `batch`, in row order. A row that cannot be encoded
  /// fails the call, naming it; nothing of the batch is then sent.
  virtual Status Encode(const arrow::RecordBatch& batch,
                        std::vector<std::string>* payloads) const = 0;
};

struct ProducerOptions {
  std::string brokers;
  std::string topic;
  int message_timeout_ms = 5000;
  /// The key is this column's cell as text when present and non-null, else the 0-based
  /// row index as text (RDP's rule).
  std::optional<std::string> key_column;
  /// The payload is this column's cell as text; without it, a JSON object of the row.
  std::optional<std::string> value_column;
  /// When set, the payloads are what it encodes of each row (value_column must then be
  /// unset). Shared: producers with the same encoder may share one client.
  std::shared_ptr<const PayloadEncoder> value_encoder;
  /// Headers added to every message.
  std::vector<std::pair<std::string, std::string>> headers;
  /// Any librdkafka property; enable.idempotence is on unless set here.
  std::map<std::string, std::string> properties;
};

/// A long-lived producer. Each Send waits for every delivery report of its rows.
class Producer {
 public:
  static Result<std::unique_ptr<Producer>> Make(const ProducerOptions& options);
  ~Producer();
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;

  /// Produce one message per row and wait for delivery; return the rows delivered.
  /// Any failed delivery makes the call fail, naming the first failed row and error.
  Result<int64_t> Send(const arrow::RecordBatch& batch);
  Result<int64_t> Send(const DataSet& dataset);
  /// Produce raw key/value pairs (tests, `kelt produce`).
  Result<int64_t> SendRaw(
      const std::vector<std::pair<std::optional<std::string>, std::string>>& messages);
  Status Close();

  class Impl;

 private:
  explicit Producer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// RDP's export_dataset_to_kafka: send one dataset and wait for every delivery; return
/// the rows delivered. Calls with identical options reuse one process-wide producer
/// (RDP made one per call, ~13 ms each), discarded after a failed call. Thread-safe.
Result<int64_t> ExportDataSetToKafka(const ProducerOptions& options,
                                     const DataSet& dataset);

}  // namespace kelt
