// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The kelt command. Exit codes: 0 success, 1 the operation failed, 2 bad usage or an
// invalid config, 128+N a second signal N ended a run at once.
#include <arrow/api.h>

#include <CLI/CLI.hpp>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "admin_commands.h"
#include "commands.h"
#include "kelt/common/memory_pool.h"
#include "kelt/config.h"
#include "kelt/dataset.h"
#include "kelt/kafka.h"
#include "kelt/load.h"
#include "kelt/schema.h"
#include "kelt/transform.h"
#include "kelt/version.h"
#include "table_printer.h"
#include "terminal.h"

extern char** environ;

namespace kelt::cli {

int Fail(const Status& st, const std::string& context) {
  std::stringstream lines(st.message());
  std::string line;
  bool any = false;
  while (std::getline(lines, line)) {
    std::cerr << "kelt: " << context << ": " << line << "\n";
    any = true;
  }
  if (!any) std::cerr << "kelt: " << context << ": " << st.ToString() << "\n";
  return 1;
}

int RunSql(const SqlArgs& a) {
  auto session = SqlSession::Make();
  if (!session.ok()) return Fail(session.status(), "sql");
  LandingSource source;
  if (!a.parquet.empty()) {
    source.format = LandingSource::Format::kParquet;
    source.location = a.parquet;
    source.topic = a.topic;
  } else if (!a.iceberg.empty()) {
    source.format = LandingSource::Format::kIceberg;
    source.location = a.iceberg;
    source.table = a.iceberg_table;
    source.catalog_name = a.iceberg_catalog_name;
  } else {
    source.format = LandingSource::Format::kDuckDb;
    source.location = a.duckdb;
    source.table = a.duckdb_table;
  }
  // S3 (a Parquet root or an Iceberg warehouse on s3://): endpoint and region from the
  // flags, credentials from the AWS environment (never a flag: they would be in `ps`).
  source.s3_endpoint = a.s3_endpoint;
  source.s3_region = a.s3_region;
  if (auto st = (*session)->RegisterLanding("landing", source); !st.ok())
    return Fail(st, "landing");
  auto result = (*session)->Query(a.query);
  if (!result.ok()) return Fail(result.status(), "sql");
  auto batch = (*result)->CombineChunksToBatch();
  if (!batch.ok()) return Fail(Status::Internal(batch.status().ToString()), "sql");
  PrintTable(**batch, std::cout);
  return 0;
}

}  // namespace kelt::cli

namespace {

using kelt::cli::Fail;

kelt::Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return kelt::Status::IOError("cannot open '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
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

// The config inputs shared by `run` and `validate`: --config, --set, and one flag per
// key that has one (kelt/config.h's key table), applied in the order
// environment < --set < the specific flags.
struct ConfigArgs {
  bool list_keys = false;
  std::string config;
  std::vector<std::string> sets;
  std::map<std::string, std::vector<std::string>> flags;  // key → values
  std::map<std::string, bool> switches;                   // boolean keys given as flags

  void AddTo(CLI::App* cmd) {
    cmd->add_option("-c,--config", config, "config file (YAML or JSON); env KELT_CONFIG")
        ->envname("KELT_CONFIG");
    cmd->add_option("--set", sets, "KEY=VALUE for any config key (repeatable)");
    for (const auto& k : kelt::EltConfigKeys()) {
      if (k.flag.empty()) continue;
      std::string help = k.help + " [" + k.key + "]";
      if (k.type == "boolean") {
        switches[k.key] = false;
        cmd->add_flag(k.flag, switches[k.key], help);
      } else if (k.key == "properties") {
        cmd->add_option(k.flag, flags[k.key], "NAME=VALUE: " + help + " (repeatable)");
      } else {
        cmd->add_option(k.flag, flags[k.key],
                        help + (k.type == "list" ? " (repeatable)" : ""))
            ->type_name(k.type == "integer" ? "INT" : "TEXT");
      }
    }
  }

  // Returns false (printing why) on a malformed --set/--property.
  bool Overrides(std::vector<kelt::ConfigOverride>* out) const {
    std::vector<std::string> names;
    for (char** e = environ; e && *e; ++e) {
      std::string kv = *e;
      names.push_back(kv.substr(0, kv.find('=')));
    }
    *out = kelt::ConfigOverridesFromEnv(names);
    for (const auto& s : sets) {
      size_t eq = s.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::cerr << "kelt: --set '" << s.substr(0, eq) << "': expected KEY=VALUE\n";
        return false;
      }
      out->push_back({s.substr(0, eq), s.substr(eq + 1), "--set"});
    }
    for (const auto& k : kelt::EltConfigKeys()) {
      if (k.flag.empty()) continue;
      if (k.type == "boolean") {
        auto it = switches.find(k.key);
        if (it != switches.end() && it->second) out->push_back({k.key, "true", k.flag});
        continue;
      }
      auto it = flags.find(k.key);
      if (it == flags.end() || it->second.empty()) continue;
      if (k.key == "properties") {
        for (const auto& p : it->second) {
          size_t eq = p.find('=');
          if (eq == std::string::npos || eq == 0) {
            std::cerr << "kelt: " << k.flag << " '" << p.substr(0, eq)
                      << "': expected NAME=VALUE\n";
            return false;
          }
          out->push_back({"properties." + p.substr(0, eq), p.substr(eq + 1), k.flag});
        }
      } else if (k.type == "list") {
        std::string joined;
        for (const auto& v : it->second) joined += (joined.empty() ? "" : ",") + v;
        out->push_back({k.key, joined, k.flag});
      } else {
        out->push_back({k.key, it->second.back(), k.flag});
      }
    }
    return true;
  }

  kelt::Result<kelt::EltConfig> Load() const {
    std::vector<kelt::ConfigOverride> o;
    if (!Overrides(&o)) return kelt::Status::Invalid("bad arguments");
    return kelt::LoadEltConfig(config, o);
  }
};

// The key table as Markdown (docs/USER_GUIDE.md's table is this output; a test checks).
int PrintKeys() {
  std::cout << "| key | type | default | environment | flag | Python | meaning "
               "|\n|---|---|---|---|---|---|---|\n";
  for (const auto& k : kelt::EltConfigKeys()) {
    std::string type = k.type;
    for (size_t at = type.find('|'); at != std::string::npos; at = type.find('|', at + 2))
      type.replace(at, 1, "\\|");
    std::cout << "| `" << k.key << "` | " << type << " | " << k.default_value << " | `"
              << k.env << "` | " << (k.flag.empty() ? "`--set`" : "`" + k.flag + "`")
              << " | " << (k.python.empty() ? "" : "`" + k.python + "`") << " | "
              << k.help << (k.secret ? " (secret: never shown)" : "") << " |\n";
  }
  return 0;
}

int RunValidate(const ConfigArgs& args) {
  if (args.list_keys) return PrintKeys();
  auto c = args.Load();
  if (!c.ok()) {
    Fail(c.status(), "validate");
    return 1;
  }
  std::cout << "config OK" << (args.config.empty() ? "" : ": " + args.config) << "\n";
  std::cout << "  brokers " << c->elt.consumer.brokers << ", group "
            << c->elt.consumer.group_id << ", topics";
  for (const auto& t : c->elt.consumer.topics) std::cout << " " << t;
  std::cout << "\n  schema (" << c->schema_origin << "): ";
  if (c->elt.load.avro || c->elt.load.protobuf || c->elt.load.key) {
    // The columns derived from the registry's schemas, as Arrow types.
    auto loader =
        kelt::Loader::Make(kelt::WithIdentityColumns(c->elt.landing), c->elt.load);
    if (!loader.ok()) {
      Fail(loader.status(), "validate");
      return 1;
    }
    const auto& schema = (*loader)->arrow_schema();
    std::cout << schema->num_fields() << " columns:";
    for (const auto& f : schema->fields()) {
      std::cout << "\n    " << f->name() << ": " << f->type()->ToString();
    }
  } else {
    std::cout << kelt::WithIdentityColumns(c->elt.landing).fields.size() << " columns:";
    for (const auto& f : kelt::WithIdentityColumns(c->elt.landing).fields) {
      std::cout << " " << f.name << ":" << kelt::TypeName(f.type);
    }
  }
  std::cout << "\n  window: " << c->elt.window.max_records << " records, "
            << c->elt.window.max_bytes << " bytes, " << c->elt.window.max_wait.count()
            << " ms; bad records: "
            << kelt::BadRecordPolicyName(c->elt.load.on_bad_record)
            << (c->elt.until_caught_up ? "; until caught up" : "") << "\n";
  for (size_t i = 0; i < c->sinks.size(); ++i) {
    const auto& s = c->sinks[i];
    std::cout << "  sinks[" << i << "] " << kelt::SinkKindName(s.kind) << ": ";
    switch (s.kind) {
      case kelt::SinkConfig::Kind::kParquet:
        std::cout << s.parquet.root;
        break;
      case kelt::SinkConfig::Kind::kDuckDb:
        std::cout << s.duckdb.path << " table " << s.duckdb.table;
        break;
      case kelt::SinkConfig::Kind::kPostgres:
        std::cout << "(conninfo not shown) table " << s.postgres.table;
        break;
      case kelt::SinkConfig::Kind::kIceberg:
        std::cout << kelt::IcebergCatalogShown(s.iceberg.catalog) << " table "
                  << s.iceberg.table_namespace << "." << s.iceberg.table << " warehouse "
                  << s.iceberg.warehouse;
        break;
    }
    std::cout << "\n";
  }
  if (c->metrics_port > 0) {
    std::cout << "  metrics: http://" << c->metrics_host << ":" << c->metrics_port
              << "/metrics\n";
  }
  return 0;
}

// kelt's version and those of the libraries it runs with: librdkafka and Arrow as
// loaded (a system librdkafka or Arrow may differ from the build's), DuckDB as linked.
std::string VersionText() {
  std::string duckdb = "unknown";
  if (auto session = kelt::SqlSession::Make(); session.ok()) {
    if (auto result = (*session)->Query("SELECT library_version FROM pragma_version()");
        result.ok() && (*result)->num_rows() == 1 && (*result)->num_columns() == 1) {
      if (auto cell = (*result)->column(0)->GetScalar(0);
          cell.ok() && (*cell)->is_valid) {
        duckdb = (*cell)->ToString();
      }
    }
  }
  return "kelt " KELT_VERSION_STRING "\nlibrdkafka " + kelt::KafkaClientVersion() +
         "\nArrow " + arrow::GetBuildInfo().version_string + "\nDuckDB " + duckdb;
}

}  // namespace

int main(int argc, char** argv) {
  // Only the commands that land windows: the others would pay the second start for
  // nothing.
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "run") == 0 || std::strcmp(argv[i], "demo") == 0) {
      kelt::internal::RestartWithWindowAllocatorConf(argv);
      break;
    }
  }
  CLI::App app{"kelt — Kafka streaming ELT: Extract, Load, Transform"};
  app.require_subcommand(1);
  app.set_version_flag("--version", VersionText);

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

  kelt::cli::ProduceArgs produce;
  auto* produce_cmd = app.add_subcommand(
      "produce",
      "Produce NDJSON lines or CSV rows (as JSON objects, or Avro records) to a topic");
  produce_cmd->add_option("--brokers", produce.brokers, "bootstrap servers")
      ->envname("KELT_BROKERS")
      ->required();
  produce_cmd->add_option("--topic", produce.topic, "topic")->required();
  produce_cmd->add_option("--file", produce.file, "NDJSON or CSV file")
      ->required()
      ->check(CLI::ExistingFile);
  produce_cmd
      ->add_option("--format", produce.format, "auto (by extension) | ndjson | csv")
      ->check(CLI::IsMember({"auto", "ndjson", "csv"}));
  produce_cmd->add_option(
      "--key-field", produce.key_field,
      "CSV column whose value is the message key (default: row number)");
  produce_cmd->add_option("--limit", produce.limit, "produce at most N records")
      ->check(CLI::NonNegativeNumber);
  produce_cmd->add_option("--property", produce.properties,
                          "NAME=VALUE librdkafka property (repeatable)");
  produce_cmd
      ->add_option("--value-format", produce.value_format,
                   "json (the records as JSON objects) | avro | protobuf | json-schema "
                   "(records of --subject's schema in the Confluent wire format)")
      ->check(CLI::IsMember({"json", "avro", "protobuf", "json-schema"}));
  produce_cmd->add_option(
      "--subject", produce.subject,
      "Schema Registry subject whose latest schema the records follow");
  produce_cmd
      ->add_option("--registry-url", produce.registry_url,
                   "Schema Registry base URL (credentials: KELT_REGISTRY_USERNAME and "
                   "_PASSWORD, or _BEARER_TOKEN)")
      ->envname("KELT_REGISTRY_URL");
  produce_cmd->add_flag("--auto-register", produce.auto_register,
                        "register a schema derived from the records (their inferred "
                        "types) under --subject instead of using its latest");
  produce_cmd->add_option("--message", produce.message,
                          "protobuf: the full name of the message written (default: the "
                          "first message of --subject's latest schema)");

  ConfigArgs run_args;
  auto* run_cmd = app.add_subcommand(
      "run",
      "Run the ELT loop: Extract → Load → land (Parquet, DuckDB, PostgreSQL) → commit. "
      "Precedence: flag > environment > config file > default");
  run_args.AddTo(run_cmd);

  ConfigArgs validate_args;
  auto* validate_cmd = app.add_subcommand(
      "validate",
      "Check a config and its schema (connecting only to a schema registry it names)");
  validate_args.AddTo(validate_cmd);
  validate_cmd->add_flag("--list-keys", validate_args.list_keys,
                         "print every config key (Markdown table) and exit");

  kelt::cli::TailArgs tail;
  auto* tail_cmd = app.add_subcommand("tail", "Print a topic's records (never commits)");
  tail_cmd->add_option("--brokers", tail.brokers, "bootstrap servers")
      ->envname("KELT_BROKERS")
      ->required();
  tail_cmd->add_option("--topic", tail.topics, "topic (repeatable; ^regex allowed)")
      ->required();
  tail_cmd->add_option("--from", tail.from, "beginning | end | OFFSET (every partition)");
  tail_cmd->add_option("--partition", tail.partition, "only this partition");
  tail_cmd->add_option("-n,--count", tail.count, "stop after N records")
      ->check(CLI::NonNegativeNumber);
  tail_cmd->add_flag("-e,--exit-at-end", tail.exit_at_end,
                     "stop at the end of the topic as it was at the start");
  tail_cmd->add_option("--format", tail.format, "text | json | value")
      ->check(CLI::IsMember({"text", "json", "value"}));
  tail_cmd->add_option("--property", tail.properties,
                       "NAME=VALUE librdkafka property (repeatable)");

  kelt::cli::SqlArgs sql;
  auto* sql_cmd = app.add_subcommand(
      "sql", "Run SQL over landed data (the table `landing`) and print the result");
  sql_cmd->add_option("--parquet", sql.parquet, "Parquet landing root");
  sql_cmd->add_option("--topic", sql.topic, "topic of the Parquet landing");
  sql_cmd->add_option("--duckdb", sql.duckdb, "DuckDB landing database file");
  sql_cmd->add_option("--duckdb-table", sql.duckdb_table, "DuckDB landing table");
  sql_cmd->add_option("--iceberg", sql.iceberg,
                      "Iceberg SQL catalog (SQLite file); reads the current snapshot");
  sql_cmd->add_option("--iceberg-table", sql.iceberg_table,
                      "Iceberg table namespace.table");
  sql_cmd->add_option("--iceberg-catalog-name", sql.iceberg_catalog_name,
                      "the catalog's name (default kelt)");
  sql_cmd->add_option(
      "--s3-endpoint", sql.s3_endpoint,
      "S3 endpoint override (an s3:// Parquet root or Iceberg warehouse)");
  sql_cmd->add_option("--s3-region", sql.s3_region, "S3 region");
  sql_cmd->add_option("query", sql.query, "the SQL")->required();

  kelt::cli::DemoArgs demo;
  auto* demo_cmd = app.add_subcommand(
      "demo",
      "Produce a CSV (the Uber April 2014 sample) to a topic, land it until caught up "
      "into Parquet + DuckDB, query it, show the files");
  demo_cmd->add_option("--brokers", demo.brokers, "bootstrap servers")
      ->envname("KELT_BROKERS")
      ->required();
  demo_cmd->add_option("--csv", demo.csv, "CSV with header Date/Time,Lat,Lon,Base")
      ->required()
      ->check(CLI::ExistingFile);
  demo_cmd->add_option("--topic", demo.topic, "topic");
  demo_cmd->add_option("--group", demo.group, "consumer group");
  demo_cmd->add_option("--dir", demo.dir, "where the config and the landing go");
  demo_cmd->add_option("--rows", demo.rows, "produce only the first N rows")
      ->check(CLI::NonNegativeNumber);
  demo_cmd->add_option("--progress", demo.progress, "auto | bar | lines | none")
      ->check(CLI::IsMember({"auto", "bar", "lines", "none"}));

  auto admin_cmds = kelt::cli::AddAdminCommands(&app);      // topics, cluster, acls
  auto iceberg_cmds = kelt::cli::AddIcebergCommands(&app);  // expire, compact

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (load_cmd->parsed()) return RunLoad(load);
  if (produce_cmd->parsed()) return kelt::cli::RunProduce(produce);
  if (validate_cmd->parsed()) return RunValidate(validate_args);
  if (run_cmd->parsed()) {
    // Signals first: every thread created from here on inherits the blocked mask.
    static std::atomic<bool> stop{false};
    kelt::cli::WatchSignals(&stop);
    auto config = run_args.Load();
    if (!config.ok()) {
      Fail(config.status(), "run");
      return 2;
    }
    kelt::cli::InstallLogHook(config->log_format, config->log_level,
                              kelt::cli::ConfigSecrets(*config));
    return kelt::cli::RunService(*config, &stop);
  }
  if (tail_cmd->parsed()) {
    static std::atomic<bool> stop{false};
    kelt::cli::WatchSignals(&stop);
    kelt::cli::InstallLogHook(kelt::LogFormat::kText, kelt::LogLevel::kWarning, {});
    return kelt::cli::RunTail(tail, &stop);
  }
  if (demo_cmd->parsed()) {
    static std::atomic<bool> stop{false};
    kelt::cli::WatchSignals(&stop);
    // The demo's audience wants the result, not librdkafka's retries on a fresh broker.
    kelt::cli::InstallLogHook(kelt::LogFormat::kText, kelt::LogLevel::kError, {});
    return kelt::cli::RunDemo(demo, &stop);
  }
  if (sql_cmd->parsed()) {
    const int sources = !sql.parquet.empty() + !sql.duckdb.empty() + !sql.iceberg.empty();
    if (sources != 1 || (!sql.parquet.empty() && sql.topic.empty()) ||
        (!sql.iceberg.empty() && sql.iceberg_table.empty())) {
      std::cerr << "kelt: sql: give --parquet DIR --topic T, --duckdb FILE, or --iceberg "
                   "CATALOG --iceberg-table NS.TABLE\n";
      return 2;
    }
    return kelt::cli::RunSql(sql);
  }
  if (admin_cmds->parsed()) return admin_cmds->Run();
  if (iceberg_cmds->parsed()) return iceberg_cmds->Run();
  return 2;
}
