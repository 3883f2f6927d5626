// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// A minimal ELT service for the crash tests: runs the loop until caught up, from
// arguments, so the test can kill it with SIGKILL at any moment and start it again.
//   elt_child <bootstrap> <topic> <group> <sink> <target> [max_records [table]]
//             [--instance-id=ID] [--group-protocol=classic|consumer]
//             [--window-sleep-ms=N] [--status=FILE]
//             [--slow-below=K --slow-sleep-ms=M] [--verbose]
//             [--postgres=CONNINFO --postgres-table=TABLE]
// <sink> is parquet (target: directory or s3://…), duckdb (target: file) or postgres
// (target: conninfo). Options (anywhere; for the scale-out test):
//   --instance-id   group.instance.id (default <group>-child; empty: a dynamic member)
//   --group-protocol  classic (default) or consumer (KIP-848)
//   --window-sleep-ms  sleep after each window (paces the loop)
//   --slow-below=K --slow-sleep-ms=M  sleep M ms instead while owning < K partitions
//   --status        after each window, the assignment and committed offsets:
//                   `assigned P,P…`, `max_assigned N` (the most partitions it owned
//                   at once) and `committed P:NEXT,…` lines (written atomically)
//   --postgres      a PostgreSQL sink as well (table --postgres-table, default events)
//   --verbose       log lines (info and up) and each window's spans on stderr
// SIGTERM or SIGINT ends the run cleanly (sinks flushed, offsets committed, the group
// left): exit 0. Exit 0 once caught up; 1 with the error on stderr otherwise.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "kelt/elt.h"
#include "kelt/log.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;

void OnSignal(int) { g_stop = 1; }

}  // namespace

int main(int raw_argc, char** raw_argv) {
  // `--name=value` options anywhere; the rest are the positional arguments.
  std::map<std::string, std::string> opt;
  std::vector<char*> positional;
  for (int i = 0; i < raw_argc; ++i) {
    std::string a = raw_argv[i];
    if (i > 0 && a.rfind("--", 0) == 0) {
      auto eq = a.find('=');
      opt[a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2)] =
          eq == std::string::npos ? "" : a.substr(eq + 1);
    } else {
      positional.push_back(raw_argv[i]);
    }
  }
  const int argc = static_cast<int>(positional.size());
  char** argv = positional.data();
  if (argc < 6) {
    std::fprintf(
        stderr,
        "usage: elt_child bootstrap topic group sink target [max_records [table]] "
        "[--option=value…]\n");
    return 2;
  }
  using namespace kelt;
  if (opt.count("verbose")) {
    // Every log line and window on stderr, prefixed with the pid (two members at once).
    SetLogHook(
        [](LogLevel, std::string_view tag, std::string_view msg) {
          std::fprintf(stderr, "[%d %s] %.*s\n", static_cast<int>(getpid()),
                       std::string(tag).c_str(), static_cast<int>(msg.size()),
                       msg.data());
        },
        LogLevel::kInfo);
  } else {
    SetLogHook([](LogLevel, std::string_view, std::string_view) {}, LogLevel::kError);
  }
  EltOptions o;
  o.consumer.brokers = argv[1];
  o.consumer.topics = {argv[2]};
  o.consumer.group_id = argv[3];
  // --group-protocol=consumer: KIP-848 (the broker's session timeout, 10 s on the test
  // broker); classic otherwise, with a 6 s session.
  if (opt.count("group-protocol") && opt["group-protocol"] == "consumer") {
    o.consumer.group_protocol = GroupProtocol::kConsumer;
  } else {
    o.consumer.session_timeout_ms = 6000;
  }
  // Static membership: a restarted child takes its predecessor's place at once.
  const std::string instance =
      opt.count("instance-id") ? opt["instance-id"] : std::string(argv[3]) + "-child";
  if (!instance.empty()) o.consumer.properties["group.instance.id"] = instance;
  o.window.max_records = argc > 6 ? std::atoll(argv[6]) : 100;
  o.window.max_wait = std::chrono::milliseconds(500);
  o.until_caught_up = true;
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  o.should_stop = [] { return g_stop != 0; };
  auto landing = ParseSchemaJson(
      R"({"fields":[{"name":"id","data_type":"Int64"},{"name":"name","data_type":"Utf8"}]})",
      SchemaDialect::kStrict);
  if (!landing.ok()) return 1;
  o.landing = *landing;
  std::vector<std::unique_ptr<Sink>> sinks;
  std::string kind = argv[4], target = argv[5];
  std::string table = argc > 7 ? argv[7] : "events";
  Result<std::unique_ptr<Sink>> sink = Status::Invalid("unknown sink kind " + kind);
  if (kind == "parquet") {
    ParquetSinkOptions p;
    p.root = target;
    p.rotate_records = 250;  // rotations span several windows
    p.rotate_age = std::chrono::milliseconds(1500);
    if (const char* ep = std::getenv("KELT_S3_ENDPOINT")) {
      p.s3_endpoint = ep;
      p.s3_region = "us-east-1";
      p.s3_access_key = "testing";
      p.s3_secret_key = "testing";
    }
    sink = MakeParquetSink(p);
  } else if (kind == "duckdb") {
    DuckDbSinkOptions d;
    d.path = target;
    d.table = table;
    d.group_id = argv[3];
    sink = MakeDuckDbSink(d);
  } else if (kind == "postgres") {
    PostgresSinkOptions pg;
    pg.conninfo = target;
    pg.table = table;
    pg.group_id = argv[3];
    sink = MakePostgresSink(pg);
  }
  if (!sink.ok()) {
    std::fprintf(stderr, "%s\n", sink.status().ToString().c_str());
    return 1;
  }
  sinks.push_back(std::move(*sink));
  if (opt.count("postgres")) {
    PostgresSinkOptions pg;
    pg.conninfo = opt["postgres"];
    pg.table = opt.count("postgres-table") ? opt["postgres-table"] : "events";
    pg.group_id = argv[3];
    auto second = MakePostgresSink(pg);
    if (!second.ok()) {
      std::fprintf(stderr, "%s\n", second.status().ToString().c_str());
      return 1;
    }
    sinks.push_back(std::move(*second));
  }
  auto loop = EltLoop::Make(std::move(o), std::move(sinks));
  if (!loop.ok()) {
    std::fprintf(stderr, "%s\n", loop.status().ToString().c_str());
    return 1;
  }
  const int sleep_ms =
      opt.count("window-sleep-ms") ? std::atoi(opt["window-sleep-ms"].c_str()) : 0;
  const size_t slow_below =
      opt.count("slow-below") ? std::strtoull(opt["slow-below"].c_str(), nullptr, 10) : 0;
  const int slow_sleep_ms =
      opt.count("slow-sleep-ms") ? std::atoi(opt["slow-sleep-ms"].c_str()) : sleep_ms;
  const std::string status_path = opt.count("status") ? opt["status"] : "";
  EltLoop& l = **loop;
  size_t max_assigned = 0;
  auto report = [&](const EltStats& st, bool closed) {
    if (status_path.empty()) return;
    std::string text = "assigned ";
    for (const auto& tp :
         closed ? std::vector<TopicPartition>{} : l.consumer().Assignment()) {
      text += std::to_string(tp.partition) + ",";
    }
    if (!closed) max_assigned = std::max(max_assigned, l.consumer().Assignment().size());
    text += "\nmax_assigned " + std::to_string(max_assigned);
    text += "\ncommitted ";
    for (const auto& [tp, next] : st.committed) {
      text += std::to_string(tp.partition) + ":" + std::to_string(next) + ",";
    }
    text += "\n";
    {
      std::ofstream out(status_path + ".tmp", std::ios::trunc);
      out << text;
    }
    std::filesystem::rename(status_path + ".tmp", status_path);
  };
  const bool verbose = opt.count("verbose") > 0;
  auto stats = l.Run([&](const EltStats& st, const Window& w) {
    if (verbose) {
      std::string spans;
      for (const auto& s : w.spans()) {
        spans += " " + std::to_string(s.tp.partition) + ":" +
                 std::to_string(s.first_offset) + "-" + std::to_string(s.last_offset);
      }
      std::fprintf(stderr, "[%d window]%s\n", static_cast<int>(getpid()), spans.c_str());
    }
    report(st, false);
    const int ms =
        l.consumer().Assignment().size() < slow_below ? slow_sleep_ms : sleep_ms;
    if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  });
  if (!stats.ok()) {
    std::fprintf(stderr, "%s\n", stats.status().ToString().c_str());
    return 1;
  }
  std::printf("windows=%lld records=%lld rows=%lld bad=%lld caught_up=%d\n",
              static_cast<long long>(stats->windows),
              static_cast<long long>(stats->records), static_cast<long long>(stats->rows),
              static_cast<long long>(stats->bad_records), stats->caught_up ? 1 : 0);
  report(*stats, true);
  return stats->caught_up || g_stop ? 0 : 1;
}
