// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// A minimal ELT service for the crash tests: runs the loop until caught up, from
// arguments, so the test can kill it with SIGKILL at any moment and start it again.
//   elt_child <bootstrap> <topic> <group> <sink> <target> [max_records [table]]
// <sink> is parquet (target: directory or s3://…), duckdb (target: file) or postgres
// (target: conninfo). Exit 0 once caught up; 1 with the error on stderr otherwise.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kelt/elt.h"
#include "kelt/log.h"

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr,
                 "usage: elt_child bootstrap topic group sink target [max_records]\n");
    return 2;
  }
  using namespace kelt;
  SetLogHook([](LogLevel, std::string_view, std::string_view) {}, LogLevel::kError);
  EltOptions o;
  o.consumer.brokers = argv[1];
  o.consumer.topics = {argv[2]};
  o.consumer.group_id = argv[3];
  o.consumer.session_timeout_ms = 6000;
  // Static membership: a restarted child takes its predecessor's place at once.
  o.consumer.properties["group.instance.id"] = std::string(argv[3]) + "-child";
  o.window.max_records = argc > 6 ? std::atoll(argv[6]) : 100;
  o.window.max_wait = std::chrono::milliseconds(500);
  o.until_caught_up = true;
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
  auto loop = EltLoop::Make(std::move(o), std::move(sinks));
  if (!loop.ok()) {
    std::fprintf(stderr, "%s\n", loop.status().ToString().c_str());
    return 1;
  }
  auto stats = (*loop)->Run();
  if (!stats.ok()) {
    std::fprintf(stderr, "%s\n", stats.status().ToString().c_str());
    return 1;
  }
  std::printf("windows=%lld records=%lld rows=%lld bad=%lld caught_up=%d\n",
              static_cast<long long>(stats->windows),
              static_cast<long long>(stats->records), static_cast<long long>(stats->rows),
              static_cast<long long>(stats->bad_records), stats->caught_up ? 1 : 0);
  return stats->caught_up ? 0 : 1;
}
