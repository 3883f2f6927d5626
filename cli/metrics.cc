// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "metrics.h"

#include <civetweb.h>

#include <cstdio>
#include <cstring>
#include <sstream>

#include "kelt/log.h"

namespace kelt::cli {
namespace {

// Label values escape backslash, double quote and newline (exposition format 0.0.4).
std::string LabelValue(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

void Family(std::ostringstream& o, const char* name, const char* type, const char* help) {
  o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

void Scalar(std::ostringstream& o, const char* name, const char* type, const char* help,
            double v) {
  Family(o, name, type, help);
  o << name << ' ' << Num(v) << '\n';
}

std::string TpLabels(const TopicPartition& tp) {
  return "{topic=\"" + LabelValue(tp.topic) + "\",partition=\"" +
         std::to_string(tp.partition) + "\"}";
}

int HandleMetrics(struct mg_connection* conn, void* cbdata) {
  const auto* metrics = static_cast<const RunMetrics*>(cbdata);
  const struct mg_request_info* info = mg_get_request_info(conn);
  if (info == nullptr || (std::strcmp(info->request_method, "GET") != 0 &&
                          std::strcmp(info->request_method, "HEAD") != 0)) {
    mg_send_http_error(conn, 405, "%s", "only GET /metrics\n");
    return 405;
  }
  std::string body = metrics->Render();
  mg_send_http_ok(conn, "text/plain; version=0.0.4; charset=utf-8",
                  static_cast<long long>(body.size()));
  if (std::strcmp(info->request_method, "GET") == 0)
    mg_write(conn, body.data(), body.size());
  return 200;
}

int CivetLog(const struct mg_connection*, const char* message) {
  Log(LogLevel::kWarning, "metrics", message ? message : "");
  return 1;  // handled: civetweb prints nothing itself
}

}  // namespace

const std::vector<double>& RunMetrics::Buckets() {
  static const std::vector<double> b = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                        0.5,   1,    2.5,   5,    10,  30};
  return b;
}

void RunMetrics::OnWindow(const EltStats& stats, double window_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_ = stats;
  const auto& b = Buckets();
  for (size_t i = 0; i < b.size(); ++i) {
    if (window_seconds <= b[i]) ++bucket_counts_[i];
  }
  latency_sum_ += window_seconds;
  ++latency_count_;
  last_window_time_ =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
          .count();
}

void RunMetrics::OnStats(const EltStats& stats) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_ = stats;
}

void RunMetrics::SetLag(const std::vector<PartitionLag>& lag) {
  std::lock_guard<std::mutex> lock(mu_);
  lag_.clear();
  for (const auto& l : lag) lag_[l.tp] = l.lag;
  lag_known_ = true;
}

void RunMetrics::SetCaughtUp(bool caught_up) {
  std::lock_guard<std::mutex> lock(mu_);
  caught_up_ = caught_up;
}

int64_t RunMetrics::total_lag() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!lag_known_) return -1;
  int64_t total = 0;
  for (const auto& [tp, l] : lag_) total += l > 0 ? l : 0;
  return total;
}

std::string RunMetrics::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream o;
  Scalar(o, "kelt_records_total", "counter", "Records extracted from Kafka.",
         static_cast<double>(stats_.records));
  Scalar(o, "kelt_bytes_total", "counter", "Payload and key bytes extracted.",
         static_cast<double>(stats_.bytes));
  Scalar(o, "kelt_rows_landed_total", "counter", "Rows landed in every sink.",
         static_cast<double>(stats_.rows));
  Scalar(o, "kelt_bad_records_total", "counter", "Records skipped or dead-lettered.",
         static_cast<double>(stats_.bad_records));
  Scalar(o, "kelt_dead_lettered_total", "counter", "Records dead-lettered.",
         static_cast<double>(stats_.dead_lettered));
  Scalar(o, "kelt_windows_total", "counter", "Non-empty windows written.",
         static_cast<double>(stats_.windows));
  Scalar(o, "kelt_sink_errors_total", "counter", "Sink writes or flushes that failed.",
         static_cast<double>(stats_.sink_errors));
  Family(o, "kelt_window_duration_seconds", "histogram",
         "Time of one window: poll, load, write to every sink, commit.");
  const auto& b = Buckets();
  for (size_t i = 0; i < b.size(); ++i) {
    o << "kelt_window_duration_seconds_bucket{le=\"" << Num(b[i]) << "\"} "
      << bucket_counts_[i] << '\n';
  }
  o << "kelt_window_duration_seconds_bucket{le=\"+Inf\"} " << latency_count_ << '\n';
  o << "kelt_window_duration_seconds_sum " << Num(latency_sum_) << '\n';
  o << "kelt_window_duration_seconds_count " << latency_count_ << '\n';
  Family(o, "kelt_partition_lag", "gauge",
         "Records between the consumer's position and the high watermark.");
  for (const auto& [tp, l] : lag_)
    o << "kelt_partition_lag" << TpLabels(tp) << ' ' << l << '\n';
  Family(o, "kelt_committed_offset", "gauge",
         "Next offset committed to Kafka (durable in every sink).");
  for (const auto& [tp, next] : stats_.committed)
    o << "kelt_committed_offset" << TpLabels(tp) << ' ' << next << '\n';
  Scalar(o, "kelt_caught_up", "gauge", "1 once a catch-up run reached its mark.",
         caught_up_ ? 1 : 0);
  Scalar(o, "kelt_last_window_timestamp_seconds", "gauge",
         "Unix time the last non-empty window was written.", last_window_time_);
  Scalar(o, "kelt_start_time_seconds", "gauge", "Unix time the run started.",
         start_time_);
  return o.str();
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& host,
                                                            int port,
                                                            const RunMetrics* metrics) {
  static const unsigned kInit = mg_init_library(0);
  (void)kInit;
  std::string listen = host + ":" + std::to_string(port);
  const char* options[] = {"listening_ports",   listen.c_str(), "num_threads", "2",
                           "enable_keep_alive", "no",           nullptr};
  struct mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  callbacks.log_message = CivetLog;
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  server->ctx_ = mg_start(&callbacks, nullptr, options);
  if (server->ctx_ == nullptr) {
    return Status::IOError("metrics: cannot listen on " + listen +
                           " (address in use or not local?)");
  }
  mg_set_request_handler(server->ctx_, "/metrics$", HandleMetrics,
                         const_cast<RunMetrics*>(metrics));
  struct mg_server_port ports[4];
  std::memset(ports, 0, sizeof(ports));
  int n = mg_get_server_ports(server->ctx_, 4, ports);
  server->port_ = n > 0 ? ports[0].port : port;
  return server;
}

MetricsServer::~MetricsServer() {
  if (ctx_ != nullptr) mg_stop(ctx_);
}

}  // namespace kelt::cli
