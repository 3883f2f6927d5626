// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The run's metrics in the Prometheus text exposition format (version 0.0.4), served on
// /metrics by an embedded civetweb server. The loop thread updates; the server's
// thread renders a consistent snapshot under a lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kelt/elt.h"
#include "kelt/kafka.h"
#include "kelt/status.h"

struct mg_context;  // civetweb

namespace kelt::cli {

class RunMetrics {
 public:
  /// Window latency buckets, in seconds.
  static const std::vector<double>& Buckets();

  /// After a non-empty window: the run's counters and how long the window took
  /// (poll → load → write → commit).
  void OnWindow(const EltStats& stats, double window_seconds);
  /// Counters without a window (the end of the run).
  void OnStats(const EltStats& stats);
  void SetLag(const std::vector<PartitionLag>& lag);
  void SetCaughtUp(bool caught_up);

  /// The exposition text.
  std::string Render() const;

  /// Lag summed over the partitions (-1 before the first measurement).
  int64_t total_lag() const;

 private:
  mutable std::mutex mu_;
  EltStats stats_;
  std::vector<int64_t> bucket_counts_ = std::vector<int64_t>(Buckets().size(), 0);
  double latency_sum_ = 0;
  int64_t latency_count_ = 0;
  OffsetMap lag_;
  bool lag_known_ = false;
  bool caught_up_ = false;
  double start_time_ =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  double last_window_time_ = 0;
};

/// GET /metrics on host:port (civetweb); other paths answer 404.
class MetricsServer {
 public:
  static Result<std::unique_ptr<MetricsServer>> Start(const std::string& host, int port,
                                                      const RunMetrics* metrics);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  int port() const { return port_; }

 private:
  MetricsServer() = default;
  ::mg_context* ctx_ = nullptr;
  int port_ = 0;
};

}  // namespace kelt::cli
