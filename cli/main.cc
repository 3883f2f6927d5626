// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The kelt command. Exit codes: 0 success, 1 the operation failed, 2 bad usage.
#include <arrow/api.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "kelt/dataset.h"
#include "kelt/elt.h"
#include "kelt/kafka.h"
#include "kelt/load.h"
#include "kelt/schema.h"
#include "kelt/sink.h"
#include "kelt/transform.h"
#include "table_printer.h"

namespace {

kelt::Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return kelt::Status::IOError("cannot open '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Fail(const kelt::Status& st, const std::string& context) {
  std::cerr << "kelt: " << context << ": " << st.message() << "\n";
  return 1;
}

struct LoadArgs {
  std::string records;
  std::string schema;
  std::string on_bad_record = "fail";
  bool strict_payload = false;
  std::string output = "both";
};

int RunLoad(const LoadArgs& a) {
  auto records = ReadFile(a.records);
  if (!records.ok()) return Fail(records.status(), "--records");
  auto schema_text = ReadFile(a.schema);
  if (!schema_text.ok()) return Fail(schema_text.status(), "--schema");
  auto schema = kelt::ParseSchemaJson(*schema_text, kelt::SchemaDialect::kLenient);
  if (!schema.ok()) return Fail(schema.status(), a.schema);
  kelt::LoadOptions options;
  options.on_bad_record = *kelt::ParseBadRecordPolicy(a.on_bad_record);
  options.strict_payload = a.strict_payload;
  auto landed = kelt::LoadRecordsJson(*records, *schema, options);
  if (!landed.ok()) return Fail(landed.status(), a.records);

  if (a.output == "table" || a.output == "both") {
    kelt::cli::PrintTable(*landed->batch, std::cout);
    const auto& s = landed->stats;
    std::cout << "records " << s.records << ", landed " << s.rows << ", bad "
              << s.bad_records << " (skipped " << s.skipped << ", dead-lettered "
              << s.dead_lettered << "), tombstones " << s.tombstones << "\n";
    if (landed->dead_letters->num_rows() > 0) {
      std::cout << "dead letters:\n";
      kelt::cli::PrintTable(*landed->dead_letters, std::cout);
    }
  }
  if (a.output == "json" || a.output == "both") {
    auto ds = kelt::RecordBatchToDataSet(*landed->batch);
    if (!ds.ok()) return Fail(ds.status(), "DataSet JSON");
    if (a.output == "both") std::cout << "DataSet JSON:\n";
    std::cout << kelt::DataSetToJson(*ds) << "\n";
  }
  return 0;
}

struct ProduceArgs {
  std::string brokers;
  std::string topic;
  std::string file;
};

// One message per non-empty line of an NDJSON file; the key is the line number.
int RunProduce(const ProduceArgs& a) {
  std::ifstream in(a.file, std::ios::binary);
  if (!in) return Fail(kelt::Status::IOError("cannot open '" + a.file + "'"), "--file");
  std::vector<std::pair<std::optional<std::string>, std::string>> messages;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    messages.emplace_back(std::to_string(n), line);
  }
  kelt::ProducerOptions o;
  o.brokers = a.brokers;
  o.topic = a.topic;
  o.message_timeout_ms = 30000;
  auto producer = kelt::Producer::Make(o);
  if (!producer.ok()) return Fail(producer.status(), "producer");
  auto sent = (*producer)->SendRaw(messages);
  if (!sent.ok()) return Fail(sent.status(), a.file);
  std::cout << "produced " << *sent << " messages to " << a.topic << "\n";
  return 0;
}

struct RunArgs {
  std::string brokers;
  std::vector<std::string> topics;
  std::string group;
  std::string schema;
  std::string parquet;
  std::string duckdb;
  std::string duckdb_table = "landing";
  std::string on_bad_record = "dead_letter";
  int64_t window_records = 10000;
  bool until_caught_up = false;
};

// The ELT loop into the given sinks; a JSON summary at the end.
int RunElt(const RunArgs& a) {
  auto schema_text = ReadFile(a.schema);
  if (!schema_text.ok()) return Fail(schema_text.status(), "--schema");
  auto schema = kelt::ParseSchemaJson(*schema_text, kelt::SchemaDialect::kLenient);
  if (!schema.ok()) return Fail(schema.status(), a.schema);
  kelt::EltOptions o;
  o.consumer.brokers = a.brokers;
  o.consumer.topics = a.topics;
  o.consumer.group_id = a.group;
  o.landing = *schema;
  o.load.on_bad_record = *kelt::ParseBadRecordPolicy(a.on_bad_record);
  o.window.max_records = a.window_records;
  o.until_caught_up = a.until_caught_up;
  std::vector<std::unique_ptr<kelt::Sink>> sinks;
  if (!a.parquet.empty()) {
    kelt::ParquetSinkOptions p;
    p.root = a.parquet;
    auto sink = kelt::MakeParquetSink(p);
    if (!sink.ok()) return Fail(sink.status(), "--parquet");
    sinks.push_back(std::move(*sink));
  }
  if (!a.duckdb.empty()) {
    kelt::DuckDbSinkOptions d;
    d.path = a.duckdb;
    d.table = a.duckdb_table;
    d.group_id = a.group;
    auto sink = kelt::MakeDuckDbSink(d);
    if (!sink.ok()) return Fail(sink.status(), "--duckdb");
    sinks.push_back(std::move(*sink));
  }
  if (sinks.empty()) {
    std::cerr << "kelt: run: give at least one sink (--parquet DIR, --duckdb FILE)\n";
    return 2;
  }
  auto loop = kelt::EltLoop::Make(std::move(o), std::move(sinks));
  if (!loop.ok()) return Fail(loop.status(), "run");
  auto stats = (*loop)->Run();
  if (!stats.ok()) return Fail(stats.status(), "run");
  std::cout << "{\"windows\":" << stats->windows << ",\"records\":" << stats->records
            << ",\"rows\":" << stats->rows << ",\"bad_records\":" << stats->bad_records
            << ",\"caught_up\":" << (stats->caught_up ? "true" : "false")
            << ",\"committed\":{";
  bool first = true;
  for (const auto& [tp, next] : stats->committed) {
    std::cout << (first ? "" : ",") << "\"" << kelt::ToString(tp) << "\":" << next;
    first = false;
  }
  std::cout << "}}\n";
  return 0;
}

struct SqlArgs {
  std::string parquet;
  std::string topic;
  std::string duckdb;
  std::string duckdb_table = "landing";
  std::string query;
};

// SQL over landed data: the landing is the table `landing`.
int RunSql(const SqlArgs& a) {
  auto session = kelt::SqlSession::Make();
  if (!session.ok()) return Fail(session.status(), "sql");
  kelt::LandingSource source;
  if (!a.parquet.empty()) {
    source.format = kelt::LandingSource::Format::kParquet;
    source.location = a.parquet;
    source.topic = a.topic;
  } else {
    source.format = kelt::LandingSource::Format::kDuckDb;
    source.location = a.duckdb;
    source.table = a.duckdb_table;
  }
  if (auto st = (*session)->RegisterLanding("landing", source); !st.ok())
    return Fail(st, "landing");
  auto result = (*session)->Query(a.query);
  if (!result.ok()) return Fail(result.status(), "sql");
  auto batch = (*result)->CombineChunksToBatch();
  if (!batch.ok()) return Fail(kelt::Status::Internal(batch.status().ToString()), "sql");
  kelt::cli::PrintTable(**batch, std::cout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kelt — Kafka streaming ELT: Extract, Load, Transform"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kelt 0.1.0");

  LoadArgs load;
  auto* load_cmd = app.add_subcommand(
      "load", "Load records JSON into the landing schema and print the landed window");
  load_cmd
      ->add_option("--records", load.records,
                   "records JSON file ({\"records\":[…]} or [...])")
      ->required()
      ->check(CLI::ExistingFile);
  load_cmd->add_option("--schema", load.schema, "landing schema JSON file")
      ->required()
      ->check(CLI::ExistingFile);
  load_cmd->add_option("--on-bad-record", load.on_bad_record, "fail | skip | dead_letter")
      ->check(CLI::IsMember({"fail", "skip", "dead_letter"}));
  load_cmd->add_flag("--strict-payload", load.strict_payload,
                     "treat non-object or non-UTF-8 payloads as bad records");
  load_cmd->add_option("--output", load.output, "table | json | both")
      ->check(CLI::IsMember({"table", "json", "both"}));

  ProduceArgs produce;
  auto* produce_cmd =
      app.add_subcommand("produce", "Produce each line of an NDJSON file to a topic");
  produce_cmd->add_option("--brokers", produce.brokers, "bootstrap servers")->required();
  produce_cmd->add_option("--topic", produce.topic, "topic")->required();
  produce_cmd->add_option("--file", produce.file, "NDJSON file")
      ->required()
      ->check(CLI::ExistingFile);

  RunArgs run;
  auto* run_cmd = app.add_subcommand(
      "run", "Run the ELT loop: Extract → Load → land (Parquet, DuckDB) → commit");
  run_cmd->add_option("--brokers", run.brokers, "bootstrap servers")->required();
  run_cmd->add_option("--topic", run.topics, "topic (repeatable)")->required();
  run_cmd->add_option("--group", run.group, "consumer group")->required();
  run_cmd->add_option("--schema", run.schema, "landing schema JSON file")
      ->required()
      ->check(CLI::ExistingFile);
  run_cmd->add_option("--parquet", run.parquet, "Parquet landing root (dir or s3://)");
  run_cmd->add_option("--duckdb", run.duckdb, "DuckDB landing database file");
  run_cmd->add_option("--duckdb-table", run.duckdb_table, "DuckDB landing table");
  run_cmd->add_option("--on-bad-record", run.on_bad_record, "fail | skip | dead_letter")
      ->check(CLI::IsMember({"fail", "skip", "dead_letter"}));
  run_cmd->add_option("--window-records", run.window_records, "max records per window")
      ->check(CLI::PositiveNumber);
  run_cmd->add_flag("--until-caught-up", run.until_caught_up,
                    "stop at the end of the topic as it was at the start");

  SqlArgs sql;
  auto* sql_cmd = app.add_subcommand(
      "sql", "Run SQL over landed data (the table `landing`) and print the result");
  sql_cmd->add_option("--parquet", sql.parquet, "Parquet landing root");
  sql_cmd->add_option("--topic", sql.topic, "topic of the Parquet landing");
  sql_cmd->add_option("--duckdb", sql.duckdb, "DuckDB landing database file");
  sql_cmd->add_option("--duckdb-table", sql.duckdb_table, "DuckDB landing table");
  sql_cmd->add_option("query", sql.query, "the SQL")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (load_cmd->parsed()) return RunLoad(load);
  if (produce_cmd->parsed()) return RunProduce(produce);
  if (run_cmd->parsed()) return RunElt(run);
  if (sql_cmd->parsed()) {
    if (sql.parquet.empty() == sql.duckdb.empty() ||
        (!sql.parquet.empty() && sql.topic.empty())) {
      std::cerr << "kelt: sql: give --parquet DIR --topic T, or --duckdb FILE\n";
      return 2;
    }
    return RunSql(sql);
  }
  return 2;
}
