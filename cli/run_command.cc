// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// `kelt run`: windows until the run ends (caught up, max_windows, a signal), with the
// progress output, /metrics, and the summary JSON at the end. The loop is driven with
// StepPipelined() (each step finishes the previous window's write, then hands its own
// to the writer thread) so each step's latency can be measured; a signal is seen
// between steps, so the current window is finished (bounded by window.max_wait_ms) and
// then Close() writes the window in flight, flushes the sinks and commits what is
// durable.
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "commands.h"
#include "kelt/elt.h"
#include "kelt/log.h"
#include "metrics.h"
#include "terminal.h"

namespace kelt::cli {
namespace {

using Clock = std::chrono::steady_clock;

// {"topic":{"0":next,...},...}
std::string OffsetsJson(const OffsetMap& m) {
  std::map<std::string, std::vector<std::pair<int32_t, int64_t>>> by_topic;
  for (const auto& [tp, next] : m) by_topic[tp.topic].emplace_back(tp.partition, next);
  std::string out = "{";
  bool first_t = true;
  for (const auto& [topic, parts] : by_topic) {
    out += (first_t ? "" : ",") + JsonString(topic) + ":{";
    first_t = false;
    bool first_p = true;
    for (const auto& [p, next] : parts) {
      out += (first_p ? "\"" : ",\"") + std::to_string(p) + "\":" + std::to_string(next);
      first_p = false;
    }
    out += "}";
  }
  return out + "}";
}

// The summary: the first keys keep the shape of earlier releases (scripts grep them).
std::string SummaryJson(const EltStats& s, const EltConfig& c,
                        const std::vector<std::string>& sink_names, double seconds,
                        bool stopped_by_signal) {
  std::ostringstream o;
  o << "{\"windows\":" << s.windows << ",\"records\":" << s.records
    << ",\"rows\":" << s.rows << ",\"bad_records\":" << s.bad_records
    << ",\"caught_up\":" << (s.caught_up ? "true" : "false") << ",\"committed\":{";
  bool first = true;
  for (const auto& [tp, next] : s.committed) {
    o << (first ? "" : ",") << JsonString(ToString(tp)) << ":" << next;
    first = false;
  }
  o << "},\"offsets\":" << OffsetsJson(s.committed) << ",\"bytes\":" << s.bytes
    << ",\"dead_lettered\":" << s.dead_lettered << ",\"sink_errors\":" << s.sink_errors
    << ",\"sinks\":[";
  for (size_t i = 0; i < c.sinks.size(); ++i) {
    const std::string name = i < sink_names.size() ? sink_names[i] : "";
    o << (i ? "," : "") << "{\"kind\":" << JsonString(SinkKindName(c.sinks[i].kind))
      << ",\"name\":" << JsonString(name) << ",\"rows\":" << s.rows
      << ",\"dead_letters\":" << s.dead_lettered << ",\"durable\":";
    auto it = s.durable.find(name);
    o << OffsetsJson(it == s.durable.end() ? OffsetMap{} : it->second) << "}";
  }
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.3f", seconds);
  o << "],\"elapsed_s\":" << secs
    << ",\"stopped_by_signal\":" << (stopped_by_signal ? "true" : "false") << "}";
  return o.str();
}

// What the progress output shows, updated by the loop thread.
struct ProgressCounts {
  int64_t records = 0;
  int64_t bytes = 0;
  int64_t rows = 0;
  int64_t bad = 0;
  int64_t windows = 0;
  int64_t lag = -1;                 // -1: not measured yet
  int64_t lag_records = 0;          // `records` when `lag` was measured
  int64_t waiting_for_members = 0;  // before the first assignment (EltStats)
  Clock::time_point start = Clock::now();
};

std::string ProgressText(ProgressCounts p, bool bar, bool catch_up) {
  // Lag is measured every 500 ms; between measurements, what was read since counts off.
  if (p.lag > 0) p.lag = std::max<int64_t>(0, p.lag - (p.records - p.lag_records));
  double elapsed = std::chrono::duration<double>(Clock::now() - p.start).count();
  double rate = elapsed > 0 ? static_cast<double>(p.records) / elapsed : 0;
  std::ostringstream o;
  if (bar) {
    const int width = 24;
    if (catch_up && p.lag >= 0) {
      double total = static_cast<double>(p.records + p.lag);
      double frac = total > 0 ? static_cast<double>(p.records) / total : 1.0;
      int filled = static_cast<int>(frac * width);
      o << "[" << std::string(filled, '#') << std::string(width - filled, '.') << "] ";
      char pct[16];
      std::snprintf(pct, sizeof(pct), "%3.0f%% ", frac * 100);
      o << pct;
    }
    o << HumanCount(static_cast<double>(p.records)) << " rec  "
      << HumanBytes(static_cast<double>(p.bytes)) << "  lag "
      << (p.lag >= 0 ? HumanCount(static_cast<double>(p.lag)) : std::string("?")) << "  "
      << HumanCount(rate) << " rec/s";
    if (catch_up && p.lag >= 0) {
      o << "  ETA " << (rate > 0 ? HumanSeconds(static_cast<double>(p.lag) / rate) : "?");
    }
    if (p.bad > 0) o << "  bad " << p.bad;
    if (p.waiting_for_members > 0) {
      o << "  waiting for " << p.waiting_for_members
        << " member(s) of the group to give up their partitions";
    }
  } else {
    char r[32];
    std::snprintf(r, sizeof(r), "%.0f", rate);
    o << "progress records=" << p.records << " bytes=" << p.bytes << " rows=" << p.rows
      << " bad_records=" << p.bad << " windows=" << p.windows << " lag=" << p.lag
      << " rate=" << r << "/s";
    if (p.waiting_for_members > 0) o << " waiting_for_members=" << p.waiting_for_members;
    if (catch_up) {
      o << " eta_s=";
      if (p.lag >= 0 && rate > 0) {
        char eta[32];
        std::snprintf(eta, sizeof(eta), "%.1f", static_cast<double>(p.lag) / rate);
        o << eta;
      } else {
        o << "?";
      }
    }
    o << "\n";
  }
  return o.str();
}

// The progress output: a bar (redrawn every 200 ms) or plain lines (every
// progress_interval_ms) on its own thread, so it moves while a window is in flight.
class Progress {
 public:
  Progress(const EltConfig& config, bool tty) : catch_up_(config.elt.until_caught_up) {
    ProgressMode mode = config.progress;
    if (mode == ProgressMode::kAuto)
      mode = tty ? ProgressMode::kBar : ProgressMode::kLines;
    on_ = mode != ProgressMode::kNone;
    bar_ = mode == ProgressMode::kBar;
    if (!on_) return;
    const auto interval = bar_ ? std::chrono::milliseconds(200)
                               : std::chrono::milliseconds(config.progress_interval_ms);
    thread_ = std::thread([this, interval] {
      std::unique_lock<std::mutex> lock(mu_);
      while (!done_) {
        cv_.wait_for(lock, interval, [&] { return done_; });
        if (done_) break;
        std::string text = ProgressText(c_, bar_, catch_up_);
        lock.unlock();
        Show(text);
        lock.lock();
      }
    });
  }
  ~Progress() { Finish(false); }

  // The loop's counts after a step.
  void Update(const EltStats& s) {
    std::lock_guard<std::mutex> g(mu_);
    c_.records = s.records;
    c_.bytes = s.bytes;
    c_.rows = s.rows;
    c_.bad = s.bad_records;
    c_.windows = s.windows;
    c_.waiting_for_members = s.waiting_for_members;
  }
  // A lag measurement: the sum of the partitions' positive lags (-1: none assigned).
  void SetLag(int64_t lag) {
    std::lock_guard<std::mutex> g(mu_);
    c_.lag = lag;
    c_.lag_records = c_.records;
  }
  // Stop the thread and show the final counts once.
  void Finish(bool caught_up) {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (done_) return;
      if (caught_up) c_.lag = 0;
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    if (!on_) return;
    Show(ProgressText(c_, bar_, catch_up_));
    if (bar_) EndBar();
  }

 private:
  void Show(const std::string& text) const {
    if (bar_) {
      DrawBar(text);
    } else {
      WriteStderr(text);
    }
  }

  const bool catch_up_;
  bool on_ = false;
  bool bar_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  ProgressCounts c_;
  std::thread thread_;
};

// How the steps ended: an error, a signal, or the run's own end.
struct Ending {
  Status failure;
  bool stopped_by_signal = false;
};

// Step the loop until it ends, keeping /metrics and the progress output current.
Ending StepUntilDone(EltLoop& loop, RunMetrics& metrics, Progress& progress,
                     const std::atomic<bool>& stop) {
  auto last_lag = Clock::now() - std::chrono::hours(1);
  auto measure_lag = [&](bool force) {
    if (!force && Clock::now() - last_lag < std::chrono::milliseconds(500)) return;
    last_lag = Clock::now();
    auto lag = loop.consumer().Lag(std::chrono::milliseconds(2000));
    if (!lag.ok()) return;  // a monitoring read: the next window tries again
    metrics.SetLag(*lag);
    int64_t total = 0;
    for (const auto& l : *lag) total += l.lag > 0 ? l.lag : 0;
    progress.SetLag(lag->empty() ? -1 : total);
  };
  while (true) {
    if (stop.load()) return {Status::OK(), true};
    const auto w0 = Clock::now();
    // No window callback: with one, the loop keeps each window's records (librdkafka's
    // messages and fetch buffers, ~50 MB at 100,000 records) until the window has
    // landed, for the callback to read; the count of landed windows says the same.
    const int64_t landed_before = loop.stats().windows;
    auto more = loop.StepPipelined();
    if (!more.ok()) return {more.status(), false};
    const EltStats& s = loop.stats();
    if (s.windows != landed_before) {
      metrics.OnWindow(s, std::chrono::duration<double>(Clock::now() - w0).count());
      Log(LogLevel::kDebug, "cli",
          "window " + std::to_string(s.windows) + ": records " +
              std::to_string(s.records) + ", rows " + std::to_string(s.rows));
    } else {
      metrics.OnStats(s);
    }
    metrics.SetCaughtUp(s.caught_up);
    progress.Update(s);
    measure_lag(!*more);
    if (!*more) return {};
  }
}

}  // namespace

std::vector<std::string> ConfigSecrets(const EltConfig& c) {
  std::vector<std::string> out;
  for (const auto& [name, value] : c.elt.consumer.properties) {
    if (IsSecretConfigKey("properties." + name)) out.push_back(value);
  }
  for (const auto& s : c.sinks) {
    if (!s.parquet.s3_access_key.empty()) out.push_back(s.parquet.s3_access_key);
    if (!s.parquet.s3_secret_key.empty()) out.push_back(s.parquet.s3_secret_key);
    if (!s.iceberg.s3_access_key.empty()) out.push_back(s.iceberg.s3_access_key);
    if (!s.iceberg.s3_secret_key.empty()) out.push_back(s.iceberg.s3_secret_key);
    // The password of a PostgreSQL connection string, wherever it says it (libpq
    // parses it); the PostgreSQL sink's whole conninfo is never shown either.
    if (s.kind == SinkConfig::Kind::kPostgres) out.push_back(s.postgres.conninfo);
    const std::string& conninfo =
        s.kind == SinkConfig::Kind::kPostgres  ? s.postgres.conninfo
        : s.kind == SinkConfig::Kind::kIceberg ? s.iceberg.catalog
                                               : std::string();
    std::string password = PostgresConnectionPassword(conninfo);
    if (!password.empty()) out.push_back(std::move(password));
  }
  return out;
}

int RunService(const EltConfig& config, std::atomic<bool>* stop) {
  const auto t0 = Clock::now();
  RunMetrics metrics;
  std::unique_ptr<MetricsServer> server;
  if (config.metrics_port > 0) {
    auto s = MetricsServer::Start(config.metrics_host, config.metrics_port, &metrics);
    if (!s.ok()) return Fail(s.status(), "run");
    server = std::move(*s);
    CliLog(LogLevel::kInfo, "serving Prometheus metrics on http://" +
                                config.metrics_host + ":" +
                                std::to_string(server->port()) + "/metrics");
  }

  auto sinks = MakeSinks(config);
  if (!sinks.ok()) return Fail(sinks.status(), "run");
  std::vector<std::string> sink_names;
  for (const auto& s : *sinks) sink_names.push_back(s->name());
  EltOptions options = config.elt;
  auto loop = EltLoop::Make(std::move(options), std::move(*sinks));
  if (!loop.ok()) return Fail(loop.status(), "run");
  {
    std::string topics;
    for (const auto& t : config.elt.consumer.topics)
      topics += (topics.empty() ? "" : ",") + t;
    std::string names;
    for (const auto& n : sink_names) names += (names.empty() ? "" : ", ") + n;
    CliLog(LogLevel::kInfo,
           std::string(config.elt.until_caught_up ? "catching up" : "running") +
               ": topics " + topics + ", group " + config.elt.consumer.group_id + " → " +
               names);
  }

  Progress progress(config, ::isatty(2) == 1);
  Ending end = StepUntilDone(**loop, metrics, progress, *stop);
  Status failure = end.failure;
  if (failure.ok()) {
    failure = (*loop)->Close();
  } else {
    // The window failed: flush and commit whatever earlier windows made durable.
    Status closed = (*loop)->Close();
    if (!closed.ok())
      CliLog(LogLevel::kError, "closing after the failure: " + closed.message());
  }
  const EltStats& s = (*loop)->stats();
  metrics.OnStats(s);
  progress.Update(s);
  progress.Finish(s.caught_up);
  double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::cout << SummaryJson(s, config, sink_names, seconds, end.stopped_by_signal)
            << std::endl;
  if (!failure.ok()) return Fail(failure, "run");
  CliLog(LogLevel::kInfo,
         end.stopped_by_signal ? "stopped: every durable window is committed" : "done");
  return 0;
}

}  // namespace kelt::cli
