// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The kelt command. Exit codes: 0 success, 1 the operation failed, 2 bad usage.
#include <arrow/api.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "kelt/dataset.h"
#include "kelt/load.h"
#include "kelt/schema.h"
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

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (load_cmd->parsed()) return RunLoad(load);
  return 2;
}
