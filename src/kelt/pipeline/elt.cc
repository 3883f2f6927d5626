// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The ELT loop. Order of operations per window:
//   Poll → (lost partitions: sinks drop what is not durable) → Load → every sink
//   Write → every sink Tick (age rotation) → commit, per partition, the smallest next
//   offset that every sink holds durably.
// A window is polled and loaded in chunks, each chunk's messages freed once loaded
// (librdkafka keeps ~450 bytes a record); a rebalance that takes partitions the window
// holds, or a landing schema that grows, in the middle of a window gives its chunks
// back (they are read again) rather than sort out rows of partitions this member no
// longer owns or rows read with an older reader schema.
// Run pipelines the write: window N goes to the sinks on a writer thread while N + 1
// is polled and loaded (the two use different cores; measured in bench/README.md).
// Only the writer touches the sinks while a write is in flight; the loop thread
// settles it (waits, merges its durable points into the stats) before it touches them
// itself: before Tick and commit, before the next write, in the resume hook, before
// partitions are revoked or dropped, and in Close.
// The consumer's resume hook asks the sinks where each assigned partition stands, so
// a restart reads exactly from the durable point; a sink that holds more than another
// (it got further before a crash) skips the rows it already has.
#include "kelt/elt.h"

#include <arrow/array/concatenate.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <future>
#include <optional>
#include <set>
#include <system_error>

#include "kelt/common/memory_pool.h"
#include "kelt/common/parallel.h"
#include "kelt/log.h"
#include "kelt/poll_load.h"

namespace kelt {

Schema WithIdentityColumns(const Schema& landing) {
  Schema out = landing;
  auto add = [&](const char* name, TypeId type) {
    if (out.FieldIndex(name) >= 0) return;
    Field f;
    f.name = name;
    f.type = type;
    out.fields.push_back(std::move(f));
  };
  add("_kafka_topic", TypeId::kUtf8);
  add("_kafka_partition", TypeId::kInt64);
  add("_kafka_offset", TypeId::kInt64);
  return out;
}

class EltLoop::Impl {
 public:
  Impl(EltOptions options, std::vector<std::unique_ptr<Sink>> sinks)
      : o_(std::move(options)), sinks_(std::move(sinks)) {}

  ~Impl() {
    if (inflight_) inflight_->done.wait();  // the writer uses the sinks
    // Closing the consumer may call the hooks (a revoke), which use the members below
    // it: close it while they are all alive.
    consumer_.reset();
  }

  Status Open() {
    if (sinks_.empty()) return Status::Invalid("the ELT loop needs at least one sink");
    if (o_.consumer.resume || o_.consumer.before_revoke) {
      return Status::Invalid(
          "the ELT loop sets the consumer's resume hook and before_revoke hook itself");
    }
    landing_ = WithIdentityColumns(o_.landing);
    // Each row's identity: sinks read these columns as these types.
    for (const auto& [name, type] : {std::pair{"_kafka_topic", TypeId::kUtf8},
                                     std::pair{"_kafka_partition", TypeId::kInt64},
                                     std::pair{"_kafka_offset", TypeId::kInt64}}) {
      const Field& f = landing_.fields[static_cast<size_t>(landing_.FieldIndex(name))];
      if (f.type != type) {
        return Status::Invalid(
            std::string("landing schema: the ELT loop needs column '") + name + "' as " +
            std::string(TypeName(type)) + ", not " + std::string(TypeName(f.type)));
      }
    }
    // Large windows load on every core.
    KELT_ASSIGN_OR_RAISE(loaders_, MakeLoaderPerCore(landing_, o_.load));
    for (auto& sink : sinks_) {
      Status st = sink->Open(loaders_[0]->arrow_schema(), DeadLetterSchema());
      if (!st.ok()) return st.WithPrefix("opening sink " + sink->name() + ": ");
      stats_.durable[sink->name()];
    }
    ConsumerOptions co = o_.consumer;
    co.resume = [this](const std::vector<TopicPartition>& tps) -> Result<OffsetMap> {
      try {  // inside librdkafka's C callbacks: nothing may be thrown out of it
        KELT_RETURN_NOT_OK(Settle());
        return Resume(tps);
      } catch (const std::exception& e) {
        return Status::Internal(std::string("resuming partitions: ") + e.what());
      }
    };
    // A write in flight finishes before its partitions go to another member (which
    // resumes from what the sinks hold), and what became durable is committed with
    // them; a failure is returned by the next Settle().
    // It runs inside librdkafka's C callbacks: nothing may be thrown out of it.
    co.before_revoke = [this](const std::vector<TopicPartition>& tps) noexcept {
      OffsetMap durable;
      try {
        if (!Settle().ok()) return durable;
        OffsetMap all = DurableEverywhere();
        for (const TopicPartition& tp : tps) {
          auto it = all.find(tp);
          if (it != all.end()) durable.insert(*it);
        }
      } catch (...) {
        durable.clear();  // nothing committed at the revocation: the sinks still know
      }
      return durable;
    };
    KELT_ASSIGN_OR_RAISE(consumer_, Consumer::Make(co));
    if (o_.until_caught_up) KELT_RETURN_NOT_OK(consumer_->StartCatchUp());
    return Status::OK();
  }

  // Where each assigned partition starts: the smallest durable point over the sinks,
  // when every sink has one; otherwise the group's committed offset.
  Result<OffsetMap> Resume(const std::vector<TopicPartition>& tps) {
    OffsetMap start;
    std::vector<OffsetMap> per_sink;
    for (auto& sink : sinks_) {
      auto r = sink->Resume(tps);
      if (!r.ok()) return r.status().WithPrefix("sink " + sink->name() + ": ");
      for (const auto& [tp, next] : *r) stats_.durable[sink->name()][tp] = next;
      per_sink.push_back(std::move(*r));
    }
    for (const auto& tp : tps) {
      int64_t lowest = -1;
      bool all = true;
      for (const auto& m : per_sink) {
        auto it = m.find(tp);
        if (it == m.end()) {
          all = false;
          break;
        }
        lowest = lowest < 0 ? it->second : std::min(lowest, it->second);
      }
      if (all && lowest >= 0) {
        start[tp] = lowest;
        Log(LogLevel::kInfo, "elt",
            ToString(tp) + " resumes at offset " + std::to_string(lowest) +
                " (durable in the sinks)");
      }
    }
    return start;
  }

  // A failed step is final: the window it read was neither fully written nor
  // committed, and a later step would commit past it. Close() then keeps what the
  // healthy sinks hold; a new loop resumes from the sinks and reads it again.
  Result<bool> Step(const EltWindowCallback& on_window, bool pipelined) {
    if (closed_) return Status::Invalid("the ELT loop is closed");
    if (!failed_.ok()) {
      return failed_.WithPrefix(
          "the ELT loop stopped at an earlier error (close it and make a new loop, "
          "which resumes from what the sinks hold): ");
    }
    auto r = StepOnce(on_window, pipelined);
    if (!r.ok()) failed_ = r.status();
    return r;
  }

  // Settle the write in flight and tick the sinks (age rotation): until the next
  // hand-off the sinks are this thread's.
  Status SettleAndTick() {
    KELT_RETURN_NOT_OK(Settle());
    for (auto& sink : sinks_) {
      auto adv = sink->Tick(std::chrono::steady_clock::now());
      if (!adv.ok()) {
        ++stats_.sink_errors;
        failed_sinks_.insert(sink.get());
        return adv.status().WithPrefix("sink " + sink->name() + ": ");
      }
      Merge(sink->name(), *adv);
    }
    return Status::OK();
  }

  // Commit what every sink holds durably, then report the windows that landed.
  Status CommitAndReport(const EltWindowCallback& on_window, bool async) {
    KELT_RETURN_NOT_OK(CommitDurable(async));
    for (; !landed_.empty(); landed_.pop_front()) {
      if (on_window) on_window(stats_, landed_.front());
    }
    return Status::OK();
  }

  // A catch-up run that has no partition yet: find out, every few seconds, whether other
  // members hold them (then wait for their sessions to end, saying so), and fail once
  // assignment_timeout has passed since a live member could have had them.
  Status AwaitFirstAssignment() {
    if (o_.assignment_timeout.count() <= 0) return Status::OK();
    const auto now = std::chrono::steady_clock::now();
    constexpr auto kLookEvery = std::chrono::seconds(3);
    if (now - started_ >=
            std::min<std::chrono::milliseconds>(o_.assignment_timeout, kLookEvery) &&
        now >= next_group_look_) {
      next_group_look_ = now + kLookEvery;
      auto holding = consumer_->DescribeGroupHolding(std::chrono::seconds(2));
      const int others = holding.ok() ? holding->other_members : 0;
      if (others > 0) {
        const auto session = consumer_->SessionTimeout();
        assignment_deadline_ =
            std::max(assignment_deadline_, started_ + session + o_.assignment_timeout);
        if (stats_.waiting_for_members != others) {
          Log(LogLevel::kWarning, "elt",
              "group " + o_.consumer.group_id + ": " + std::to_string(others) +
                  " other member(s) hold the partitions; waiting for them (a member "
                  "that ended without leaving keeps its partitions until its session "
                  "times out, " +
                  std::to_string(session.count() / 1000) +
                  " s; an instance_id lets a restarted worker take them back at once)");
        }
      }
      stats_.waiting_for_members = others;
    }
    if (now < std::max(assignment_deadline_, started_ + o_.assignment_timeout)) {
      return Status::OK();
    }
    std::string topics;
    for (const auto& t : o_.consumer.topics) topics += (topics.empty() ? "" : ", ") + t;
    std::string held;
    if (stats_.waiting_for_members > 0) {
      held = " (" + std::to_string(stats_.waiting_for_members) +
             " other member(s) still hold partitions)";
    }
    return Status::Unavailable(
        "no partition of " + topics + " was assigned to group " + o_.consumer.group_id +
        " within " +
        std::to_string(
            std::chrono::duration_cast<std::chrono::seconds>(now - started_).count()) +
        " s" + held + ": is the broker at " + o_.consumer.brokers +
        " reachable, does the topic exist, and has the group fewer members than "
        "partitions? (assignment_timeout_ms)");
  }

  // This member is caught up on its partitions; other members may still hold some of the
  // topic's, or some may be between owners. A live member lands its own. One that died
  // keeps them until its session times out, and then they come here: under KIP-848 one
  // dead member's at a time, through the next heartbeat, so a restart after several kills
  // would otherwise stop with partitions never read (classic hands them all out in one
  // rebalance). So until a session has passed since this member got its first
  // partitions, it waits while other members hold partitions or some are unassigned;
  // after that, whoever still holds some is alive.
  bool OthersMayStillHoldPartitions() {
    const auto now = std::chrono::steady_clock::now();
    const auto session = consumer_->SessionTimeout();
    if (now - first_assigned_ >= session) {
      stats_.waiting_for_members = 0;
      return false;
    }
    // Between looks the last answer stands. Its own timer: AwaitFirstAssignment's may
    // lie seconds ahead, and before the first look the answer is unknown (wait).
    if (now < next_holding_look_) return waiting_for_group_;
    next_holding_look_ = now + std::chrono::milliseconds(500);
    auto holding = consumer_->DescribeGroupHolding(std::chrono::seconds(2));
    if (!holding.ok()) {
      // A coordinator that cannot describe groups (an old broker, the mock cluster):
      // do not wait. One that did not answer in time, or is moving, may answer at the
      // next look: until then the partitions may still be held, so keep waiting (at
      // most a session after the first assignment).
      const bool transient = holding.status().retriable() ||
                             holding.status().code() == StatusCode::kUnavailable;
      if (transient && !describe_failed_logged_) {
        describe_failed_logged_ = true;
        Log(LogLevel::kInfo, "elt",
            "caught up on this member's partitions; who holds the others is not known "
            "yet (" +
                holding.status().message() + "): waiting");
      }
      if (!transient) stats_.waiting_for_members = 0;
      return waiting_for_group_ = transient;
    }
    const int64_t n = holding->other_members;
    if (n > 0 && n != stats_.waiting_for_members) {
      Log(LogLevel::kWarning, "elt",
          "caught up on this member's partitions; " + std::to_string(n) +
              " other member(s) of group " + o_.consumer.group_id + " hold " +
              std::to_string(holding->held_by_others) +
              " partition(s): waiting for them (at most " +
              std::to_string(session.count() / 1000) +
              " s after this member joined, the session timeout: a member that ended "
              "without leaving gives its partitions up then)");
    }
    stats_.waiting_for_members = n;
    return waiting_for_group_ = n > 0 || holding->unassigned > 0;
  }

  Result<bool> StepOnce(const EltWindowCallback& on_window, bool pipelined) {
    if (o_.max_windows > 0 && handed_off_ >= o_.max_windows) return false;
    // A window comes in chunks, each loaded (while the previous window is written) and
    // its messages freed before the next is polled; a callback gets the whole window.
    // max_wait bounds the time spent polling the chunks, not loading them.
    const int64_t chunk = on_window ? o_.window.max_records : ChunkRecords();
    std::chrono::steady_clock::duration polling{0};
    std::vector<Window> polled;  // the chunks loaded so far, records released
    std::vector<LoadedWindow> parts;
    WindowFacts facts;
    std::optional<Window> kept;
    // Give back every chunk of this window and `w` (each partition is read again from
    // the window's first record of it) and load none of it.
    auto give_back = [&](Window& w, const std::string& why) -> Status {
      Log(LogLevel::kInfo, "elt",
          why + ": the window's " + std::to_string(facts.records + w.size()) +
              " record(s) polled so far are given back and read again");
      polled.push_back(std::move(w));
      for (const Window& c : polled) KELT_RETURN_NOT_OK(consumer_->Rewind(c));
      polled.clear();
      parts.clear();
      facts = WindowFacts{};
      w = Window();
      return Status::OK();
    };
    for (bool more = true; more;) {
      WindowOptions wo = o_.window;
      wo.max_records =
          std::min(chunk, o_.window.max_records - static_cast<int64_t>(facts.records));
      wo.max_bytes = o_.window.max_bytes - facts.bytes;
      wo.max_wait =
          std::max(std::chrono::milliseconds(0),
                   o_.window.max_wait -
                       std::chrono::duration_cast<std::chrono::milliseconds>(polling));
      const auto poll_start = std::chrono::steady_clock::now();
      KELT_ASSIGN_OR_RAISE(Window w, consumer_->Poll(wo));
      polling += std::chrono::steady_clock::now() - poll_start;
      if (o_.until_caught_up && !assigned_once_) {
        assigned_once_ = !consumer_->Assignment().empty();
        if (assigned_once_) {
          stats_.waiting_for_members = 0;
          first_assigned_ = std::chrono::steady_clock::now();
        } else {
          KELT_RETURN_NOT_OK(AwaitFirstAssignment());
        }
      }
      std::vector<TopicPartition> lost = consumer_->TakeLostPartitions();
      if (!lost.empty()) {
        // Chunks loaded before the rebalance may hold rows of the lost partitions (the
        // last poll dropped its own): give the window back rather than sort them out.
        const bool held = std::any_of(lost.begin(), lost.end(), [&](const auto& tp) {
          return std::any_of(facts.spans.begin(), facts.spans.end(),
                             [&](const PartitionSpan& s) { return s.tp == tp; });
        });
        if (held) {
          KELT_RETURN_NOT_OK(give_back(w, "a rebalance in the middle of a window"));
        }
        KELT_RETURN_NOT_OK(DropLost(lost));
        more = false;
      }
      if (w.empty()) break;
      more = more && w.end_reason() == WindowEnd::kMaxRecords &&
             static_cast<int64_t>(facts.records + w.size()) < o_.window.max_records;
      // Loads while the previous window is written (pipelined).
      bool grown = false;
      KELT_ASSIGN_OR_RAISE(std::vector<LoadedWindow> loaded, Load(w, &grown));
      if (grown && !polled.empty()) {
        // The chunks before were read with the older reader schema (an added field's
        // default would be missing from them): read the whole window again.
        KELT_RETURN_NOT_OK(
            give_back(w, "the landing schema grew in the middle of a window"));
        break;
      }
      for (LoadedWindow& part : loaded) parts.push_back(std::move(part));
      facts.records += w.size();
      facts.bytes += w.bytes();
      MergeSpans(w.spans(), &facts.spans);
      // The loaded parts hold copies of the payloads: unless a callback reports the
      // records, librdkafka's messages (~450 bytes a record) go back now, not after the
      // previous window is written (the wait below) and this one handed off.
      if (on_window) {
        kept.emplace(std::move(w));
      } else {
        w.ReleaseRecords();
        polled.push_back(std::move(w));
      }
    }
    if (facts.records > 0) {
      KELT_RETURN_NOT_OK(SettleAndTick());
      HandOff(facts, std::move(kept), std::move(parts));
      if (!pipelined) KELT_RETURN_NOT_OK(SettleAndTick());
    } else {
      KELT_RETURN_NOT_OK(SettleAndTick());
    }
    // While the writer works: the commit's round trip is off the critical path.
    KELT_RETURN_NOT_OK(CommitAndReport(on_window, /*async=*/pipelined));
    stats_.caught_up =
        o_.until_caught_up && consumer_->caught_up() && !OthersMayStillHoldPartitions();
    if (stats_.caught_up) return false;
    if (o_.max_windows > 0 && handed_off_ >= o_.max_windows) return false;
    return true;
  }

  int64_t ChunkRecords() const {
    const int64_t chunk = o_.load_chunk_records > 0
                              ? o_.load_chunk_records
                              : static_cast<int64_t>(loaders_.size()) *
                                    std::max<int64_t>(1, o_.min_records_per_loader);
    return std::max<int64_t>(1, std::min(chunk, o_.window.max_records));
  }

  // Per partition, the union of the chunks' offset ranges.
  static void MergeSpans(const std::vector<PartitionSpan>& add,
                         std::vector<PartitionSpan>* into) {
    for (const PartitionSpan& s : add) {
      auto it = std::find_if(into->begin(), into->end(),
                             [&](const PartitionSpan& t) { return t.tp == s.tp; });
      if (it == into->end()) {
        into->push_back(s);
        continue;
      }
      it->first_offset = std::min(it->first_offset, s.first_offset);
      it->last_offset = std::max(it->last_offset, s.last_offset);
      it->count += s.count;
    }
  }

  // Partitions revoked or lost: the sinks drop what they hold of them that is not
  // durable (after the write in flight), and forget their durable points.
  Status DropLost(const std::vector<TopicPartition>& lost) {
    KELT_RETURN_NOT_OK(Settle());
    for (auto& sink : sinks_) {
      if (Status st = sink->Drop(lost); !st.ok()) {
        failed_sinks_.insert(sink.get());
        return st.WithPrefix("sink " + sink->name() + ": ");
      }
      for (const auto& tp : lost) stats_.durable[sink->name()].erase(tp);
    }
    for (const auto& tp : lost) stats_.committed.erase(tp);
    // A partition revoked and assigned back within this poll was resumed (the hook
    // ran) before the drop above erased the sinks' durable points: ask them again, so
    // a sink ahead of another keeps skipping the rows it holds.
    std::vector<TopicPartition> assigned = consumer_->Assignment();
    std::vector<TopicPartition> back;
    for (const auto& tp : lost) {
      if (std::find(assigned.begin(), assigned.end(), tp) != assigned.end()) {
        back.push_back(tp);
      }
    }
    if (!back.empty()) KELT_RETURN_NOT_OK(Resume(back).status());
    return Status::OK();
  }

  // What the writer thread reports back for one window.
  struct Written {
    Status status;
    const Sink* failed = nullptr;                             // the sink that failed
    std::vector<std::pair<std::string, OffsetMap>> advanced;  // per sink that wrote
  };
  struct InFlight {
    std::optional<Window> window;  // for the callback
    LoadStats stats;
    std::future<Written> done;
    size_t records = 0;
    std::chrono::steady_clock::time_point handed_off;
    // The sink the writer is in (index into sinks_), -1 before the first: what a stall
    // warning names.
    std::shared_ptr<std::atomic<int>> writing;
  };

  // What HandOff needs of a polled window once its messages are gone.
  struct WindowFacts {
    size_t records = 0;
    int64_t bytes = 0;
    std::vector<PartitionSpan> spans;
  };

  // Give a loaded window to the sinks on the writer thread, which first joins its
  // parts into one batch (a copy that would otherwise delay the next poll). Its records
  // (`kept`) are there for the callback only: the sinks get the loaded batch.
  void HandOff(const WindowFacts& w, std::optional<Window> kept,
               std::vector<LoadedWindow> parts) {
    ++handed_off_;
    stats_.records += static_cast<int64_t>(w.records);
    stats_.bytes += w.bytes;
    LoadStats loaded;
    for (const LoadedWindow& part : parts) loaded += part.stats;
    auto sw = std::make_shared<SinkWindow>(SinkWindow{nullptr, nullptr, w.spans});
    auto pending = std::make_shared<std::vector<LoadedWindow>>(std::move(parts));
    auto writing = std::make_shared<std::atomic<int>>(-1);
    // The result reaches the hooks, which run inside librdkafka's C callbacks: no
    // exception may leave the writer (out of memory, no thread).
    auto write = [this, sw, pending, writing]() noexcept {
      Written out;
      try {
        auto joined = Join(std::move(*pending));
        if (!joined.ok()) {
          out.status = joined.status();
          return out;
        }
        sw->batch = std::move(joined->batch);
        sw->dead_letters = std::move(joined->dead_letters);
      } catch (const std::exception& e) {
        out.status =
            Status::Internal(std::string("joining a window's parts: ") + e.what());
        return out;
      }
      for (auto& sink : sinks_) {
        writing->store(static_cast<int>(&sink - sinks_.data()),
                       std::memory_order_relaxed);
        try {
          auto adv = sink->Write(*sw);
          if (!adv.ok()) {
            out.status = adv.status().WithPrefix("sink " + sink->name() + ": ");
            out.failed = sink.get();
            break;
          }
          out.advanced.emplace_back(sink->name(), std::move(*adv));
        } catch (const std::exception& e) {
          out.status = Status::Internal("sink " + sink->name() + ": " + e.what());
          out.failed = sink.get();
          break;
        }
      }
      // Written: free the batch now, not when the task is destroyed or its future read
      // (a deferred write keeps its closure until then).
      sw->batch.reset();
      sw->dead_letters.reset();
      return out;
    };
    std::future<Written> done;
    try {
      done = internal::SharedExecutor().Submit(write);
    } catch (const std::system_error&) {
      // No thread to be had: the write runs on this thread when it is settled.
      done = std::async(std::launch::deferred, write);
    }
    inflight_.emplace(InFlight{std::move(kept), loaded, std::move(done), w.records,
                               std::chrono::steady_clock::now(), std::move(writing)});
  }

  // Wait for `f`'s write; each stalled_write_warning that passes first is logged,
  // naming the sink being written (a deferred write, run by get(), is not waited for).
  void WaitLoggingStalls(const InFlight& f) {
    const auto every = o_.stalled_write_warning;
    if (every.count() <= 0) return;
    while (f.done.wait_for(every) == std::future_status::timeout) {
      const int i = f.writing->load(std::memory_order_relaxed);
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - f.handed_off)
              .count();
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%.1f", waited);
      Log(LogLevel::kWarning, "elt",
          "a window of " + std::to_string(f.records) +
              " records is still being written " +
              (i >= 0 ? "to sink " + sinks_[static_cast<size_t>(i)]->name()
                      : std::string("(its parts being joined)")) +
              " after " + seconds + " s; waiting on (stalled_write_warning_ms)");
    }
  }

  // Wait for the write in flight and take in its result. A failed write is final: it
  // is returned here and by every later Settle().
  Status Settle() {
    if (!inflight_) return write_failed_;
    InFlight f = std::move(*inflight_);
    inflight_.reset();
    WaitLoggingStalls(f);
    Written w = f.done.get();
    for (const auto& [name, adv] : w.advanced) Merge(name, adv);
    if (!w.status.ok()) {
      if (w.failed != nullptr) {  // else the join failed: no sink got the window
        ++stats_.sink_errors;
        failed_sinks_.insert(w.failed);
      }
      write_failed_ = w.status;
      return w.status;
    }
    // Landed: every sink got the window.
    ++stats_.windows;
    stats_.rows += f.stats.rows;
    stats_.bad_records += f.stats.bad_records;
    stats_.dead_lettered += f.stats.dead_lettered;
    if (f.window) landed_.push_back(std::move(*f.window));
    return Status::OK();
  }

  // Large windows load on every core (contiguous shares, in order); Join makes them one
  // batch for the sinks. A bad record under kFail abandons the window: nothing of it
  // was written or committed (the loader's error names the record).
  // Avro and Protobuf payloads: a writer schema that adds columns (the subject moved on)
  // stops the load; the landing grows (`*grown`) and the chunk loads again (at most a
  // few times: each growth adds columns).
  Result<std::vector<LoadedWindow>> Load(const Window& w, bool* grown) {
    for (int growth = 0;; ++growth) {
      auto parts = LoadWindowParallel(w, loaders_, o_.min_records_per_loader);
      if (parts.ok() || (!o_.load.avro && !o_.load.protobuf) || growth >= 16 ||
          parts.status().code() != StatusCode::kCancelled) {
        return parts;
      }
      int32_t newer = -1;
      for (const auto& loader : loaders_) {
        newer = std::max(newer, loader->newer_writer_schema());
      }
      if (newer < 0) return parts;
      KELT_RETURN_NOT_OK(GrowLanding(newer));
      *grown = true;
    }
  }

  // Read Avro or Protobuf payloads with the reader schema that takes writer schema
  // `writer_id`'s added columns, and have every sink add them (after the window in
  // flight is written).
  Status GrowLanding(int32_t writer_id) {
    const int32_t before = ReaderSchemaId(o_.load);
    auto grown = GrownLoadOptions(o_.load, writer_id);
    if (!grown.ok()) return grown.status().WithPrefix("growing the landing schema: ");
    LoadOptions load = std::move(*grown);
    KELT_ASSIGN_OR_RAISE(auto loaders, MakeLoaderPerCore(landing_, load));
    const std::shared_ptr<arrow::Schema>& schema = loaders[0]->arrow_schema();
    KELT_RETURN_NOT_OK(Settle());
    std::string added;
    for (const auto& f : schema->fields()) {
      if (loaders_[0]->arrow_schema()->GetFieldIndex(f->name()) < 0) {
        added += (added.empty() ? "" : ", ") + f->name();
      }
    }
    for (auto& sink : sinks_) {
      if (Status st = sink->Evolve(schema); !st.ok()) {
        ++stats_.sink_errors;
        failed_sinks_.insert(sink.get());
        return st.WithPrefix("sink " + sink->name() + ": growing the landing schema: ");
      }
    }
    Log(LogLevel::kInfo, "elt",
        "the landing schema grows: reader schema id " + std::to_string(before) + " -> " +
            std::to_string(ReaderSchemaId(load)) + " (met writer schema id " +
            std::to_string(writer_id) + "), columns added: " + added);
    o_.load = std::move(load);
    loaders_ = std::move(loaders);
    return Status::OK();
  }

  static int32_t ReaderSchemaId(const LoadOptions& load) {
    return load.avro ? load.avro->reader_schema_id : load.protobuf->reader.id;
  }

  // The parts' rows and dead letters as one batch each (HandOff sums their stats).
  static Result<LoadedWindow> Join(std::vector<LoadedWindow> parts) {
    LoadedWindow landed;
    if (parts.size() == 1) {
      landed = std::move(parts[0]);
    } else {
      // Column by column, each column's parts freed once joined: the window is held
      // about once (plus one column) while it is copied, not twice.
      std::shared_ptr<arrow::Schema> schema = parts[0].batch->schema();
      std::vector<std::vector<std::shared_ptr<arrow::Array>>> columns(
          static_cast<size_t>(schema->num_fields()));
      std::vector<std::shared_ptr<arrow::RecordBatch>> dead;
      int64_t rows = 0;
      for (LoadedWindow& part : parts) {
        if (!part.batch->schema()->Equals(*schema)) {
          return Status::Internal(
              "joining a window's loaded parts: their schemas differ");
        }
        rows += part.batch->num_rows();
        for (int c = 0; c < schema->num_fields(); ++c) {
          columns[static_cast<size_t>(c)].push_back(part.batch->column(c));
        }
        part.batch.reset();
        if (part.dead_letters != nullptr) dead.push_back(std::move(part.dead_letters));
      }
      std::vector<std::shared_ptr<arrow::Array>> joined;
      joined.reserve(columns.size());
      for (auto& column : columns) {
        auto one = arrow::Concatenate(column, internal::WindowPool());
        if (!one.ok()) {
          return Status::Internal("joining a window's loaded parts: " +
                                  one.status().ToString());
        }
        joined.push_back(one.MoveValueUnsafe());
        column = {};
      }
      landed.batch = arrow::RecordBatch::Make(std::move(schema), rows, std::move(joined));
      auto dead_batch = arrow::ConcatenateRecordBatches(dead, internal::WindowPool());
      if (!dead_batch.ok()) {
        return Status::Internal("joining a window's dead letters: " +
                                dead_batch.status().ToString());
      }
      landed.dead_letters = dead_batch.MoveValueUnsafe();
    }
    return landed;
  }

  void Merge(const std::string& sink, const OffsetMap& advanced) {
    auto& d = stats_.durable[sink];
    for (const auto& [tp, next] : advanced) d[tp] = std::max(d[tp], next);
  }

  // Commit, per partition, what every sink holds durably and was not committed yet.
  // Pipelined steps send the commit and take its result in at the next commit (or
  // poll, revocation, Close): the round trip overlaps the next window.
  Status CommitDurable(bool async = false) {
    OffsetMap commit;
    for (const auto& [tp, lowest] : DurableEverywhere()) {
      auto c = stats_.committed.find(tp);
      if (c == stats_.committed.end() || c->second < lowest) commit[tp] = lowest;
    }
    if (commit.empty()) return Status::OK();
    KELT_RETURN_NOT_OK(async ? consumer_->CommitOffsetsAsync(commit)
                             : consumer_->CommitOffsets(commit));
    for (const auto& [tp, next] : commit) stats_.committed[tp] = next;
    return Status::OK();
  }

  // Per partition, the smallest durable point over the sinks, where every sink has one.
  OffsetMap DurableEverywhere() const {
    OffsetMap out;
    const auto& first = stats_.durable.begin()->second;
    for (const auto& [tp, next0] : first) {
      int64_t lowest = next0;
      bool all = true;
      for (const auto& [name, m] : stats_.durable) {
        auto it = m.find(tp);
        if (it == m.end()) {
          all = false;
          break;
        }
        lowest = std::min(lowest, it->second);
      }
      if (all) out[tp] = lowest;
    }
    return out;
  }

  Result<EltStats> Run(const EltWindowCallback& on_window) {
    Status st;
    while (st.ok()) {
      if (o_.should_stop && o_.should_stop()) break;
      auto more = Step(on_window, /*pipelined=*/true);
      if (!more.ok()) {
        st = more.status();
      } else if (!*more) {
        break;
      }
    }
    // The last window in flight, then its report.
    if (st.ok()) st = SettleAndTick();
    if (st.ok()) st = CommitAndReport(on_window, /*async=*/false);
    if (!st.ok()) {
      if (failed_.ok()) failed_ = st;
      return st;
    }
    KELT_RETURN_NOT_OK(Close());
    return stats_;
  }

  Status Close() {
    if (closed_) return Status::OK();
    closed_ = true;
    // A write still in flight (Run stopped by an error) finishes first; if it failed,
    // its sink is dropped below like any failed sink.
    Status first = Settle();
    if (!first.ok() && !failed_.ok()) first = Status::OK();  // already reported
    for (auto& sink : sinks_) {
      if (failed_sinks_.count(sink.get())) {
        // Its state is suspect: forget what is not durable rather than flush it (the
        // records are read again from its durable point by the next loop).
        std::vector<TopicPartition> tps = consumer_->Assignment();
        for (const auto& [tp, next] : stats_.durable[sink->name()]) tps.push_back(tp);
        std::sort(tps.begin(), tps.end());
        tps.erase(std::unique(tps.begin(), tps.end()), tps.end());
        Status st = sink->Drop(tps);
        if (!st.ok()) {
          Log(LogLevel::kWarning, "elt",
              "sink " + sink->name() + ": dropping after its failure: " + st.message());
        }
        continue;
      }
      auto adv = sink->Flush();
      if (adv.ok()) {
        Merge(sink->name(), *adv);
      } else if (first.ok()) {
        first = adv.status().WithPrefix("sink " + sink->name() + ": ");
      }
    }
    if (first.ok()) first = CommitDurable();
    Status closed = consumer_->Close();
    if (first.ok()) first = closed;
    for (auto& sink : sinks_) {
      Status st = sink->Close();
      if (first.ok() && !st.ok()) first = st.WithPrefix("sink " + sink->name() + ": ");
    }
    return first;
  }

  EltOptions o_;
  std::vector<std::unique_ptr<Sink>> sinks_;
  Schema landing_;
  std::vector<std::unique_ptr<Loader>> loaders_;
  std::unique_ptr<Consumer> consumer_;
  EltStats stats_;
  bool closed_ = false;
  Status failed_;  ///< the error that ended the run, if any
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  bool assigned_once_ = false;
  std::chrono::steady_clock::time_point assignment_deadline_{};  // extended while waiting
  std::chrono::steady_clock::time_point next_group_look_{};
  std::chrono::steady_clock::time_point first_assigned_{};  // catch-up: first assignment
  // Catch-up, once assigned: when the group is next asked who holds partitions, and the
  // last answer (true until asked: other members may hold some).
  std::chrono::steady_clock::time_point next_holding_look_{};
  bool waiting_for_group_ = true;
  bool describe_failed_logged_ = false;
  std::set<const Sink*> failed_sinks_;
  int64_t handed_off_ = 0;     ///< windows given to the sinks (max_windows counts these)
  Status write_failed_;        ///< the write that failed, if any
  std::deque<Window> landed_;  ///< landed windows not reported to the callback yet
  std::optional<InFlight> inflight_;  ///< last member: destroyed before the sinks
};

EltLoop::EltLoop(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EltLoop::~EltLoop() = default;

Result<std::unique_ptr<EltLoop>> EltLoop::Make(EltOptions options,
                                               std::vector<std::unique_ptr<Sink>> sinks) {
  auto impl = std::make_unique<Impl>(std::move(options), std::move(sinks));
  KELT_RETURN_NOT_OK(impl->Open());
  return std::unique_ptr<EltLoop>(new EltLoop(std::move(impl)));
}

Result<EltStats> EltLoop::Run(const EltWindowCallback& on_window) {
  return impl_->Run(on_window);
}
Result<bool> EltLoop::Step(const EltWindowCallback& on_window) {
  return impl_->Step(on_window, /*pipelined=*/false);
}
Result<bool> EltLoop::StepPipelined(const EltWindowCallback& on_window) {
  return impl_->Step(on_window, /*pipelined=*/true);
}
Status EltLoop::Close() { return impl_->Close(); }
const EltStats& EltLoop::stats() const { return impl_->stats_; }
const Schema& EltLoop::landing() const { return impl_->landing_; }
Consumer& EltLoop::consumer() { return *impl_->consumer_; }

}  // namespace kelt
