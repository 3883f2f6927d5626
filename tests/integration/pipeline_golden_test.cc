// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The golden cases of the pipeline JSON runner: one test per folder of tests/golden/
// (tests/golden/README.md says what a case holds). A case that names a service
// (${PG_CONNINFO}, ${S3_ENDPOINT}, ${KAFKA_BOOTSTRAP}) fails when the service's env file
// is missing: the ctest fixtures start them.
#include <arrow/api.h>
#include <arrow/filesystem/filesystem.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <parquet/arrow/reader.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "kelt/dataset.h"
#include "kelt/landing/filesystem.h"
#include "kelt/pipeline_json.h"
#include "kelt/rdp.h"
#include "kelt/testing/assertions.h"
#include "kelt/transform.h"

namespace kelt {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::map<std::string, std::string> ReadEnvFile(const std::string& path) {
  std::map<std::string, std::string> env;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

void ReplaceAll(std::string* s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s->find(from, pos)) != std::string::npos;
       pos += to.size()) {
    s->replace(pos, from.size(), to);
  }
}

std::string JsonEscaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::vector<std::string> Cases() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(KELT_GOLDEN_DIR)) {
    if (entry.is_directory() && fs::exists(entry.path() / "pipeline.json")) {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Structural comparison; under a key named "message" the expected string must be a
// substring of the actual one (messages carry engine texts and paths).
void ExpectJsonMatches(simdjson::dom::element want, simdjson::dom::element got,
                       const std::string& where, bool substring = false) {
  using simdjson::dom::element_type;
  if (want.type() != got.type()) {
    ADD_FAILURE() << where << ": want " << simdjson::to_string(want) << ", got "
                  << simdjson::to_string(got);
    return;
  }
  switch (want.type()) {
    case element_type::OBJECT: {
      simdjson::dom::object w = want.get_object().value(), g = got.get_object().value();
      if (w.size() != g.size()) {
        ADD_FAILURE() << where << ": want " << simdjson::to_string(want) << ", got "
                      << simdjson::to_string(got);
      }
      for (auto [key, value] : w) {
        simdjson::dom::element other;
        if (g.at_key(key).get(other) != simdjson::SUCCESS) {
          ADD_FAILURE() << where << "." << key << ": missing in "
                        << simdjson::to_string(got);
          continue;
        }
        ExpectJsonMatches(value, other, where + "." + std::string(key), key == "message");
      }
      return;
    }
    case element_type::ARRAY: {
      simdjson::dom::array w = want.get_array().value(), g = got.get_array().value();
      if (w.size() != g.size()) {
        ADD_FAILURE() << where << ": want " << simdjson::to_string(want) << ", got "
                      << simdjson::to_string(got);
        return;
      }
      for (size_t i = 0; i < w.size(); ++i) {
        ExpectJsonMatches(w.at(i).value(), g.at(i).value(),
                          where + "[" + std::to_string(i) + "]");
      }
      return;
    }
    case element_type::STRING:
      if (substring) {
        EXPECT_NE(std::string(got.get_string().value()).find(want.get_string().value()),
                  std::string::npos)
            << where << ": '" << got.get_string().value() << "' does not contain '"
            << want.get_string().value() << "'";
      } else {
        EXPECT_EQ(want.get_string().value(), got.get_string().value()) << where;
      }
      return;
    default:
      EXPECT_EQ(simdjson::to_string(want), simdjson::to_string(got)) << where;
  }
}

// A data set as its rows' JSON texts, sorted: outputs are compared as multisets.
std::vector<std::string> SortedRows(const DataSet& d) {
  std::vector<std::string> rows;
  for (const auto& row : d.rows) {
    std::string r;
    for (const Value& v : row) r += ValueToJson(v) + ",";
    rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

Result<DataSet> TableToDataSet(const std::shared_ptr<arrow::Table>& table) {
  auto batch = table->CombineChunksToBatch();
  if (!batch.ok()) return Status::Invalid(batch.status().ToString());
  return RecordBatchToDataSet(**batch);
}

struct Services {
  std::map<std::string, std::string> pg, s3, kafka;
};

Result<DataSet> ReadPostgres(const std::string& conninfo, const std::string& table,
                             const Schema& schema) {
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(conninfo.c_str()),
                                                    &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    return Status::IOError(PQerrorMessage(conn.get()));
  }
  std::string sql = "SELECT * FROM " + table;
  std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(conn.get(), sql.c_str()),
                                                  &PQclear);
  if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) {
    return Status::IOError(PQresultErrorMessage(r.get()));
  }
  DataSet d;
  d.schema = schema;
  if (PQnfields(r.get()) != static_cast<int>(schema.size())) {
    return Status::Invalid("postgres table has " + std::to_string(PQnfields(r.get())) +
                           " columns");
  }
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    std::vector<Value> row;
    for (int c = 0; c < PQnfields(r.get()); ++c) {
      if (PQgetisnull(r.get(), i, c)) {
        row.push_back(Value::Null());
        continue;
      }
      std::string v = PQgetvalue(r.get(), i, c);
      switch (schema.fields[c].type) {
        case TypeId::kInt64:
          row.push_back(Value::Int64(std::stoll(v)));
          break;
        case TypeId::kFloat64:
          row.push_back(Value::Float64(std::stod(v)));
          break;
        case TypeId::kBool:
          row.push_back(Value::Bool(v == "t"));
          break;
        default:
          row.push_back(Value::Utf8(v));
      }
    }
    d.rows.push_back(std::move(row));
  }
  return d;
}

Result<DataSet> ReadS3Parquet(const Services& services, const std::string& uri) {
  internal::ObjectStoreOptions o;
  o.endpoint = services.s3.at("KELT_S3_ENDPOINT");
  KELT_ASSIGN_OR_RAISE(auto root,
                       internal::OpenFileSystemRoot("s3://x", o, false, "test"));
  auto file = root.fs->OpenInputFile(uri.substr(5));
  if (!file.ok()) return Status::IOError(file.status().ToString());
  auto reader = parquet::arrow::OpenFile(*file, arrow::default_memory_pool());
  if (!reader.ok()) return Status::IOError(reader.status().ToString());
  auto table = (*reader)->ReadTable();
  if (!table.ok()) return Status::IOError(table.status().ToString());
  return TableToDataSet(*table);
}

// Read back what a sink wrote, as described by one entry of expected_outputs.json.
Result<DataSet> ReadOutput(simdjson::dom::object check, const Services& services,
                           const Schema& schema) {
  std::string_view read = check["read"].get_string().value();
  auto str = [&](const char* key) {
    return std::string(check[key].get_string().value());
  };
  if (read == "parquet") {
    KELT_ASSIGN_OR_RAISE(auto session, SqlSession::Make());
    std::string path = str("path");
    ReplaceAll(&path, "'", "''");
    KELT_ASSIGN_OR_RAISE(auto table,
                         session->Query("SELECT * FROM read_parquet('" + path + "')"));
    return TableToDataSet(table);
  }
  if (read == "duckdb") {
    KELT_ASSIGN_OR_RAISE(auto session, SqlSession::Make());
    LandingSource source;
    source.format = LandingSource::Format::kDuckDb;
    source.location = str("path");
    source.table = str("table");
    KELT_RETURN_NOT_OK(session->RegisterLanding("t", source));
    KELT_ASSIGN_OR_RAISE(auto table, session->Query("SELECT * FROM t"));
    return TableToDataSet(table);
  }
  if (read == "postgresql") {
    return ReadPostgres(services.pg.at("KELT_PG_CONNINFO"), str("table"), schema);
  }
  if (read == "s3") return ReadS3Parquet(services, str("uri"));
  if (read == "kafka") {
    std::string config = R"({"brokers":")" + services.kafka.at("KELT_KAFKA_BOOTSTRAP") +
                         R"(","group_id":"golden-)" + std::to_string(getpid()) +
                         R"(","topic":")" + str("topic") +
                         R"(","max_wait_ms":15000,"commit":false})";
    KELT_ASSIGN_OR_RAISE(auto call, rdp::ParseConsumerConfigJson(config));
    call.window.max_records = check["count"].get_int64().value();
    KELT_ASSIGN_OR_RAISE(auto records, rdp::PollKafkaWindow(call));
    DataSet d;
    d.schema = schema;
    for (const StreamRecord& r : records) {
      d.rows.push_back({r.key ? Value::Utf8(*r.key) : Value::Null(),
                        r.value ? Value::Utf8(*r.value) : Value::Null()});
    }
    return d;
  }
  return Status::Invalid("unknown read kind '" + std::string(read) + "'");
}

class PipelineGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(PipelineGolden, Case) {
  const fs::path dir = fs::path(KELT_GOLDEN_DIR) / GetParam();
  const std::string run_id =
      std::to_string(getpid()) + "_" +
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() %
                     1000000);
  const fs::path out_dir = fs::temp_directory_path() / ("kelt_golden_" + run_id);
  fs::create_directories(out_dir);

  std::string pipeline = ReadFile(dir / "pipeline.json");
  std::string expected = ReadFile(dir / "expected.json");
  std::string outputs = fs::exists(dir / "expected_outputs.json")
                            ? ReadFile(dir / "expected_outputs.json")
                            : "";
  std::string all = pipeline + expected + outputs;

  Services services;
  std::map<std::string, std::string> vars = {{"${CASE_DIR}", dir.string()},
                                             {"${OUT_DIR}", out_dir.string()},
                                             {"${RUN_ID}", run_id}};
  if (all.find("${PG_CONNINFO}") != std::string::npos) {
    services.pg = ReadEnvFile(KELT_PG_ENV_FILE);
    ASSERT_TRUE(services.pg.count("KELT_PG_CONNINFO"))
        << "no PostgreSQL: " << KELT_PG_ENV_FILE
        << " (run under ctest's postgres fixture)";
    vars["${PG_CONNINFO}"] = JsonEscaped(services.pg["KELT_PG_CONNINFO"]);
  }
  if (all.find("${S3_") != std::string::npos) {
    services.s3 = ReadEnvFile(KELT_S3_ENV_FILE);
    ASSERT_TRUE(services.s3.count("KELT_S3_ENDPOINT"))
        << "no object store: " << KELT_S3_ENV_FILE << " (run under ctest's s3 fixture)";
    vars["${S3_ENDPOINT}"] = services.s3["KELT_S3_ENDPOINT"];
    vars["${S3_BUCKET}"] = services.s3["KELT_S3_BUCKET"];
    // Credentials, region and (for sinks without an `endpoint` key) the endpoint come
    // from the standard AWS variables, as for a user.
    for (const char* key : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"}) {
      if (services.s3.count(key)) setenv(key, services.s3[key].c_str(), 1);
    }
    setenv("AWS_ENDPOINT_URL", services.s3["KELT_S3_ENDPOINT"].c_str(), 1);
  }
  if (all.find("${KAFKA_BOOTSTRAP}") != std::string::npos) {
    services.kafka = ReadEnvFile(KELT_KAFKA_ENV_FILE);
    ASSERT_TRUE(services.kafka.count("KELT_KAFKA_BOOTSTRAP"))
        << "no Kafka broker: " << KELT_KAFKA_ENV_FILE
        << " (run under ctest's kafka_broker fixture)";
    vars["${KAFKA_BOOTSTRAP}"] = services.kafka["KELT_KAFKA_BOOTSTRAP"];
  }
  for (const auto& [from, to] : vars) {
    ReplaceAll(&pipeline, from, to);
    ReplaceAll(&expected, from, to);
    ReplaceAll(&outputs, from, to);
  }

  // ValidatePipeline reports exactly the parse-stage failures and nothing else.
  PipelineRunResult validated = ValidatePipeline(pipeline);
  if (expected.find(R"("stage":"parse")") != std::string::npos &&
      expected.find(R"("ok":false)") != std::string::npos) {
    EXPECT_FALSE(validated.ok);
  } else {
    EXPECT_TRUE(validated.ok) << PipelineRunResultToJson(validated);
  }

  std::string got = RunPipelineJson(pipeline);
  if (!validated.ok) {
    EXPECT_EQ(got, PipelineRunResultToJson(validated));
  }
  SCOPED_TRACE("envelope: " + got);
  simdjson::dom::parser want_parser, got_parser;
  simdjson::dom::element want_root, got_root;
  ASSERT_EQ(want_parser.parse(expected).get(want_root), simdjson::SUCCESS)
      << "expected.json";
  ASSERT_EQ(got_parser.parse(got).get(got_root), simdjson::SUCCESS) << got;
  ExpectJsonMatches(want_root, got_root, "$");

  if (!outputs.empty()) {
    simdjson::dom::parser parser;
    simdjson::dom::array checks;
    ASSERT_EQ(parser.parse(outputs).get(checks), simdjson::SUCCESS)
        << "expected_outputs.json must be a list";
    size_t i = 0;
    for (simdjson::dom::element e : checks) {
      SCOPED_TRACE("expected_outputs.json[" + std::to_string(i++) + "]");
      simdjson::dom::object check = e.get_object().value();
      ASSERT_OK_AND_ASSIGN(auto want,
                           ParseDataSetJson(simdjson::to_string(check["rows"].value())));
      ASSERT_OK_AND_ASSIGN(auto read, ReadOutput(check, services, want.schema));
      EXPECT_EQ(SchemaToJson(read.schema), SchemaToJson(want.schema));
      EXPECT_EQ(SortedRows(read), SortedRows(want));
    }
  }
  std::error_code ec;
  fs::remove_all(out_dir, ec);
}

INSTANTIATE_TEST_SUITE_P(Golden, PipelineGolden, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace kelt
