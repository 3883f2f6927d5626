// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The subcommands' bodies (main.cc parses the arguments). Each returns the exit code:
// 0 success, 1 the operation failed, 2 bad usage or bad config.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kelt/config.h"
#include "kelt/status.h"

namespace kelt::cli {

/// Print "kelt: <context>: <message>" (one line per message line) and return 1.
int Fail(const Status& st, const std::string& context);

/// `kelt run`: the ELT loop as a service or a catch-up run. Progress on stderr, the
/// summary JSON on stdout. `stop` is set by the signal watcher.
int RunService(const EltConfig& config, std::atomic<bool>* stop);

/// Secrets of a config (for the log hook's redaction).
std::vector<std::string> ConfigSecrets(const EltConfig& config);

struct ProduceArgs {
  std::string brokers;
  std::string topic;
  std::string file;
  std::string format = "auto";          ///< auto (by extension), ndjson, csv
  std::string key_field;                ///< a field/column whose value is the key
  int64_t limit = 0;                    ///< 0: every record
  std::vector<std::string> properties;  ///< name=value
  bool quiet = false;
  /// json (the lines/rows as JSON objects) | avro | protobuf | json-schema (the
  /// Confluent wire format of `subject`'s schema)
  std::string value_format = "json";
  std::string subject;
  std::string registry_url;  ///< --registry-url or KELT_REGISTRY_URL
  bool auto_register = false;
  std::string message;  ///< protobuf: the message written (empty: the schema's first)
};
/// `kelt produce`: NDJSON lines or CSV rows (header → JSON objects with typed numbers).
int RunProduce(const ProduceArgs& a);
/// The CSV → JSON conversion (exposed for `kelt demo`): one JSON object per data row.
Result<std::vector<std::string>> CsvToJsonLines(const std::string& text,
                                                const std::string& file);

struct TailArgs {
  std::string brokers;
  std::vector<std::string> topics;
  std::string from = "end";  ///< beginning | end | <offset>
  std::optional<int32_t> partition;
  int64_t count = 0;  ///< 0: until interrupted (or the end with exit_at_end)
  bool exit_at_end = false;
  std::string format = "text";  ///< text | json | value
  std::vector<std::string> properties;
};
/// `kelt tail`: print records of a topic (kcat-like). Never commits.
int RunTail(const TailArgs& a, std::atomic<bool>* stop);

struct DemoArgs {
  std::string brokers;
  std::string topic = "rides";
  std::string csv;
  std::string dir = "kelt-demo";
  std::string group = "demo";
  int64_t rows = 0;
  std::string progress = "auto";
};
/// `kelt demo`: produce the CSV, land it (Parquet + DuckDB, a config file written to
/// the demo dir), query it, and say where the files are.
int RunDemo(const DemoArgs& a, std::atomic<bool>* stop);

/// `kelt sql`'s body, shared with the demo.
struct SqlArgs {
  std::string parquet;
  std::string topic;
  std::string duckdb;
  std::string duckdb_table = "landing";
  std::string iceberg;  ///< SQL catalog file
  std::string iceberg_table;
  std::string iceberg_catalog_name = "kelt";
  std::string s3_endpoint;  ///< for an s3:// landing or warehouse
  std::string s3_region;
  std::string query;
};
int RunSql(const SqlArgs& a);

/// Parse "name=value" items into a map; false (with `bad` set) on an item without '='.
bool ParseProperties(const std::vector<std::string>& items,
                     std::map<std::string, std::string>* out, std::string* bad);

}  // namespace kelt::cli
