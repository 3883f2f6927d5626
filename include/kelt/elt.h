// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The ELT loop: Extract a window → Load it → write it to every sink → commit only what
// every sink holds durably. On assignment each partition resumes at the sinks' durable
// point (the group's committed offset is the fallback), so a crash anywhere replays
// nothing twice and loses nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kelt/kafka.h"
#include "kelt/load.h"
#include "kelt/schema.h"
#include "kelt/sink.h"
#include "kelt/status.h"

namespace kelt {

struct EltOptions {
  /// The consumer (its `resume` and `before_revoke` hooks are the loop's: leave them
  /// empty).
  ConsumerOptions consumer;
  /// Window bounds. Memory stays bounded by two windows (Run writes one while it polls
  /// and loads the next) plus each sink's open files.
  WindowOptions window = {.max_records = 10'000,
                          .max_bytes = 64ll << 20,
                          .max_wait = std::chrono::milliseconds(1000),
                          .stop_at_end = true};
  /// The landing schema. `_kafka_topic`, `_kafka_partition` and `_kafka_offset` are
  /// added when missing: they are each row's identity, which exactly-once needs.
  Schema landing;
  /// Bad records go to the sinks' dead-letter destinations by default.
  LoadOptions load = {.on_bad_record = BadRecordPolicy::kDeadLetter,
                      .strict_payload = false,
                      .avro = {},
                      .protobuf = {},
                      .registry_json = {},
                      .key = {}};
  /// Stop once every partition assigned reached the high watermark it had when the run
  /// started (or when it was assigned): the bounded backfill.
  bool until_caught_up = false;
  /// A window loads on every core (up to 4) when each core gets at least this many
  /// records; smaller windows load on one.
  int64_t min_records_per_loader = 16'384;
  /// A window is polled and loaded in chunks of about this many records, each chunk's
  /// Kafka messages freed as soon as it is loaded: the window's records are held one
  /// chunk at a time, not all at once beside its loaded rows. 0: the number of loaders
  /// × min_records_per_loader; window.max_records or more: the whole window at once.
  /// Windows reported to a Run/Step callback are polled whole (it gets their records).
  /// window.max_wait bounds the time spent polling a window's chunks, not loading them.
  /// A rebalance that takes a partition the window holds, or a landing schema that
  /// grows, in the middle of a window gives the whole window back (it is read again).
  int64_t load_chunk_records = 0;
  /// With until_caught_up: fail when no partition has been assigned this long after the
  /// start (a broker that cannot be reached, a topic that does not exist, more members
  /// than partitions) instead of waiting forever. 0: wait forever. When other members of
  /// the group hold the partitions (members killed without leaving keep them until their
  /// session times out), the loop waits for them and counts this from when a live member
  /// could have had them: the start plus the session timeout.
  std::chrono::milliseconds assignment_timeout{60'000};
  /// A window's write that has not returned after this long is logged as a warning
  /// naming the sink it waits on (a stalled object store, a database gone silent), and
  /// again each time this long passes; the loop goes on waiting. 0: never logged.
  std::chrono::milliseconds stalled_write_warning{60'000};
  /// Stop after this many windows (0: no limit). For tests and smoke runs.
  int64_t max_windows = 0;
  /// Polled between windows: true ends the run cleanly (sinks flushed, offsets
  /// committed). Signal handlers set a flag this reads.
  std::function<bool()> should_stop;
};

/// Counters of a run so far.
struct EltStats {
  int64_t windows = 0;
  int64_t records = 0;      ///< records extracted
  int64_t bytes = 0;        ///< payload + key bytes extracted
  int64_t rows = 0;         ///< rows landed (each sink got these)
  int64_t bad_records = 0;  ///< dead-lettered or skipped
  int64_t dead_lettered = 0;
  int64_t sink_errors = 0;
  /// Next offset committed to Kafka per partition (durable in every sink). Pipelined
  /// steps send commits asynchronously: the value is then sent, and a failure ends the
  /// next step.
  OffsetMap committed;
  /// Durable next offset per sink and partition.
  std::map<std::string, OffsetMap> durable;
  bool caught_up = false;
  /// Before the first assignment of a catch-up run: other members of the group that
  /// hold partitions and are being waited for (0: none known).
  int64_t waiting_for_members = 0;
};

/// Called after each window is written (on the loop's thread), with the stats then.
using EltWindowCallback =
    std::function<void(const EltStats& stats, const Window& window)>;

class EltLoop {
 public:
  /// Validate, open every sink, create the loader and the consumer (nothing is read
  /// yet). Needs at least one sink.
  static Result<std::unique_ptr<EltLoop>> Make(EltOptions options,
                                               std::vector<std::unique_ptr<Sink>> sinks);
  ~EltLoop();
  EltLoop(const EltLoop&) = delete;
  EltLoop& operator=(const EltLoop&) = delete;

  /// Run windows until the run ends (caught up, max_windows, should_stop), then flush
  /// the sinks, commit and leave the group. An error stops the run: what the sinks
  /// hold durably stays committed or is found again at the next start. Pipelined: the
  /// sinks write window N on a second thread while window N + 1 is polled and loaded;
  /// N is committed once written, before N + 1 goes to the sinks. A rebalance waits
  /// for the write in flight before partitions are resumed or given up.
  Result<EltStats> Run(const EltWindowCallback& on_window = {});

  /// One window, not pipelined: poll, load, write, commit what became durable (Run's
  /// window in flight, if any, is finished first). False when the run is
  /// over (caught up or max_windows reached). An error is final: the failed window was
  /// not committed and must not be passed over, so later calls return the error again.
  /// Close() the loop (healthy sinks are flushed and committed, a failed sink's
  /// non-durable data is dropped) and make a new one: it resumes from the sinks.
  Result<bool> Step(const EltWindowCallback& on_window = {});

  /// One window, pipelined as in Run: finish the previous step's write (commit it,
  /// report it to `on_window`), then hand this window to the sinks on a writer thread
  /// and return while it is written. The next step, or Close(), finishes that write,
  /// so a window is committed one step later than with Step(). Errors are final as
  /// with Step(); a write that failed is returned by the next step or by Close().
  Result<bool> StepPipelined(const EltWindowCallback& on_window = {});

  /// Flush the sinks (after an error: only those that did not fail), commit what every
  /// sink holds durably, close the consumer and the sinks.
  Status Close();

  const EltStats& stats() const;
  /// The landing schema in use (with the metadata columns the loop added).
  const Schema& landing() const;
  Consumer& consumer();

  class Impl;

 private:
  explicit EltLoop(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// The landing schema with `_kafka_topic`, `_kafka_partition`, `_kafka_offset` appended
/// when missing.
Schema WithIdentityColumns(const Schema& landing);

}  // namespace kelt
