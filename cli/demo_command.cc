// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// `kelt demo`: the README's job through the same code paths as the subcommands —
// produce a CSV to a topic, write a config file, `run --until-caught-up` it into
// Parquet and DuckDB, query the Parquet landing, list the files.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "kelt/kafka.h"
#include "terminal.h"

namespace kelt::cli {
namespace {

namespace fs = std::filesystem;

// The landing schema of the Uber April 2014 CSV (`"Date/Time","Lat","Lon","Base"`).
constexpr const char* kDemoConfig =
    R"(# Written by `kelt demo`. Run it again with: kelt run --config <this file>
brokers: {brokers}
group: {group}
topics: [{topic}]
schema:
  fields:
    - {name: pickup_at, data_type: Utf8, source: "Date/Time"}
    - {name: lat, data_type: Float64, source: Lat}
    - {name: lon, data_type: Float64, source: Lon}
    - {name: base, data_type: Utf8, source: Base}
on_bad_record: dead_letter
window: {max_records: 1000}
until_caught_up: true
progress: {progress}
sinks:
  - parquet: {root: landing}
  - duckdb: {path: landing.duckdb, table: rides}
)";

std::string Fill(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [k, v] : values) {
    std::string needle = "{" + k + "}";
    for (size_t at = text.find(needle); at != std::string::npos;
         at = text.find(needle, at + v.size())) {
      text.replace(at, needle.size(), v);
    }
  }
  return text;
}

}  // namespace

int RunDemo(const DemoArgs& a, std::atomic<bool>* stop) {
  fs::path dir = fs::absolute(a.dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Fail(Status::IOError("cannot create '" + dir.string() + "'"), "demo");
  // The demo owns these names in its directory: a rerun starts from nothing.
  for (const char* name : {"landing", "landing.duckdb", "landing.duckdb.wal"}) {
    fs::remove_all(dir / name, ec);
  }

  // 1. Produce the CSV.
  std::ifstream in(a.csv, std::ios::binary);
  if (!in) return Fail(Status::IOError("cannot open '" + a.csv + "'"), "demo");
  std::stringstream ss;
  ss << in.rdbuf();
  auto lines = CsvToJsonLines(ss.str(), a.csv);
  if (!lines.ok()) return Fail(lines.status(), "demo");
  if (a.rows > 0 && static_cast<size_t>(a.rows) < lines->size()) lines->resize(a.rows);
  {
    ProducerOptions o;
    o.brokers = a.brokers;
    o.topic = a.topic;
    o.message_timeout_ms = 30000;
    auto producer = Producer::Make(o);
    if (!producer.ok()) return Fail(producer.status(), "demo");
    std::vector<std::pair<std::optional<std::string>, std::string>> messages;
    messages.reserve(lines->size());
    for (size_t i = 0; i < lines->size(); ++i) {
      messages.emplace_back(std::to_string(i + 1), std::move((*lines)[i]));
    }
    auto sent = (*producer)->SendRaw(messages);
    if (!sent.ok()) return Fail(sent.status(), "demo");
    if (auto st = (*producer)->Close(); !st.ok()) return Fail(st, "demo");
    std::cout << "== kelt produce: " << *sent << " rows of " << a.csv << " → topic "
              << a.topic << std::endl;
  }

  // 2. The config file.
  fs::path config_path = dir / "kelt.yaml";
  {
    std::ofstream out(config_path, std::ios::binary | std::ios::trunc);
    out << Fill(kDemoConfig, {{"brokers", a.brokers},
                              {"group", a.group},
                              {"topic", a.topic},
                              {"progress", a.progress}});
    if (!out)
      return Fail(Status::IOError("cannot write " + config_path.string()), "demo");
  }
  auto config = LoadEltConfig(config_path);
  if (!config.ok()) return Fail(config.status(), "demo");

  // 3. Land it.
  std::cout << "== kelt run --config " << config_path.string()
            << " (until caught up → Parquet + DuckDB)" << std::endl;
  if (int code = RunService(*config, stop); code != 0) return code;
  if (stop->load()) return 0;

  // 4. A SQL transform over the landed Parquet.
  std::cout << "== kelt sql over the landed Parquet: pickups per base" << std::endl;
  SqlArgs sql;
  sql.parquet = (dir / "landing").string();
  sql.topic = a.topic;
  sql.query =
      "SELECT base, count(*) AS pickups, round(avg(lat), 4) AS avg_lat, "
      "round(avg(lon), 4) AS avg_lon, "
      "min(strptime(pickup_at, '%m/%d/%Y %H:%M:%S')) AS first_pickup, "
      "max(strptime(pickup_at, '%m/%d/%Y %H:%M:%S')) AS last_pickup "
      "FROM landing GROUP BY base ORDER BY pickups DESC";
  std::cout << sql.query << std::endl;
  if (int code = RunSql(sql); code != 0) return code;

  // 5. Where the files are.
  std::cout << "== landed in " << dir.string() << std::endl;
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(dir / "landing", ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file() && it->path().extension() == ".parquet") {
      files.push_back(fs::relative(it->path(), dir).string());
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) std::cout << f << "\n";
  std::cout << "landing.duckdb (table rides; offsets in _kelt_offsets)\n"
            << "kelt.yaml (the config; try: kelt sql --duckdb "
            << (dir / "landing.duckdb").string()
            << " --duckdb-table rides \"SELECT count(*) FROM landing\")" << std::endl;
  return 0;
}

}  // namespace kelt::cli
