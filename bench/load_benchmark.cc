// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Load step throughput on one core: 1,000,000 synthetic ~200-byte JSON records with 8
// payload fields of mixed types (+2 metadata columns), against two baselines measured
// in the same run:
//   - ParseFloor*: simdjson parsing the same documents and touching every field (the
//     DOM API the loader uses, and the lazier On-Demand API);
//   - NaiveRowAtATime: RDP's shape — an allocating DOM (nlohmann::json, like serde_json's
//     Value) and one Value object per cell, rows of Values, then a columnar conversion.
// After the runs it prints the ratios, which are what the targets are about:
// Load ≥ 2,000,000 records/s and Load time ≤ 2× the parse floor.
//
// Run: build/release/bench/load_benchmark [--records=N] [google benchmark flags], e.g.
//      --benchmark_repetitions=5 (the ratios then use each contender's fastest
//      repetition)
#include <arrow/api.h>
#include <benchmark/benchmark.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "json_corpus.h"
#include "kelt/dataset.h"
#include "kelt/load.h"
#include "ratio_reporter.h"

namespace {

int64_t g_records = 1000000;

struct Corpus {
  std::vector<std::string> payloads;
  std::vector<kelt::RecordView> views;
  int64_t bytes = 0;
};

const Corpus& GetCorpus() {
  static Corpus corpus = [] {
    Corpus c;
    kelt::bench::JsonCorpus gen;
    c.payloads.reserve(static_cast<size_t>(g_records));
    for (int64_t i = 0; i < g_records; ++i) {
      c.payloads.push_back(gen.Next());
      c.bytes += static_cast<int64_t>(c.payloads.back().size());
    }
    c.views.reserve(c.payloads.size());
    for (size_t i = 0; i < c.payloads.size(); ++i) {
      kelt::RecordView v;
      v.topic = "events";
      v.partition = static_cast<int32_t>(i % 8);
      v.offset = static_cast<int64_t>(i);
      v.value = c.payloads[i];
      c.views.push_back(v);
    }
    return c;
  }();
  return corpus;
}

kelt::Schema LandingSchema() { return kelt::bench::CorpusLandingSchema(); }

void SetCounters(benchmark::State& state, const Corpus& c) {
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(c.views.size()));
  state.SetBytesProcessed(state.iterations() * c.bytes);
}

void BM_Load(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  auto loader = kelt::Loader::Make(LandingSchema()).MoveValueUnsafe();
  for (auto _ : state) {
    if (!loader->Reserve(static_cast<int64_t>(c.views.size()), c.bytes).ok())
      std::abort();
    for (const kelt::RecordView& v : c.views) {
      if (!loader->Append(v).ok()) std::abort();
    }
    auto w = loader->Finish();
    if (!w.ok() || w->batch->num_rows() != static_cast<int64_t>(c.views.size()))
      std::abort();
    benchmark::DoNotOptimize(w->batch);
  }
  SetCounters(state, c);
}

// The same records in windows of 10,000 (the consumer's window size in the Kafka
// benchmark): each Finish() hands out a batch, as a streaming loop does.
void BM_LoadWindows10k(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  auto loader = kelt::Loader::Make(LandingSchema()).MoveValueUnsafe();
  constexpr size_t kWindow = 10000;
  for (auto _ : state) {
    int64_t rows = 0;
    for (size_t start = 0; start < c.views.size(); start += kWindow) {
      const size_t end = std::min(c.views.size(), start + kWindow);
      for (size_t i = start; i < end; ++i) {
        if (!loader->Append(c.views[i]).ok()) std::abort();
      }
      auto w = loader->Finish();
      if (!w.ok()) std::abort();
      rows += w->batch->num_rows();
      benchmark::DoNotOptimize(w->batch);
    }
    if (rows != static_cast<int64_t>(c.views.size())) std::abort();
  }
  SetCounters(state, c);
}

// The floor with the DOM API: copy into a padded buffer (as the loader must: broker
// buffers carry no padding), parse, read every field's value.
void BM_ParseFloorDom(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  simdjson::dom::parser parser;
  std::vector<char> padded(4096);
  for (auto _ : state) {
    int64_t acc = 0;
    for (const kelt::RecordView& v : c.views) {
      std::memcpy(padded.data(), v.value->data(), v.value->size());
      auto doc = parser.parse(padded.data(), v.value->size(), false);
      if (doc.error()) std::abort();
      simdjson::dom::object obj = doc.value_unsafe().get_object().value_unsafe();
      for (auto kv : obj) {
        switch (kv.value.type()) {
          case simdjson::dom::element_type::INT64:
            acc += kv.value.get_int64().value_unsafe();
            break;
          case simdjson::dom::element_type::DOUBLE:
            acc += static_cast<int64_t>(kv.value.get_double().value_unsafe());
            break;
          case simdjson::dom::element_type::BOOL:
            acc += kv.value.get_bool().value_unsafe();
            break;
          case simdjson::dom::element_type::STRING:
            acc += static_cast<int64_t>(kv.value.get_string().value_unsafe().size());
            break;
          default:
            break;
        }
      }
    }
    benchmark::DoNotOptimize(acc);
  }
  SetCounters(state, c);
}

// The floor with On-Demand, which materializes nothing it is not asked for.
void BM_ParseFloorOnDemand(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  simdjson::ondemand::parser parser;
  std::vector<char> padded(4096);
  for (auto _ : state) {
    int64_t acc = 0;
    for (const kelt::RecordView& v : c.views) {
      std::memcpy(padded.data(), v.value->data(), v.value->size());
      auto doc = parser.iterate(padded.data(), v.value->size(), padded.size());
      auto obj = doc.get_object();
      for (auto field : obj) {
        auto value = field.value();
        switch (value.type().value_unsafe()) {
          case simdjson::ondemand::json_type::number:
            acc += static_cast<int64_t>(value.get_double().value_unsafe());
            break;
          case simdjson::ondemand::json_type::boolean:
            acc += value.get_bool().value_unsafe();
            break;
          case simdjson::ondemand::json_type::string:
            acc += static_cast<int64_t>(value.get_string().value_unsafe().size());
            break;
          default:
            break;
        }
      }
    }
    benchmark::DoNotOptimize(acc);
  }
  SetCounters(state, c);
}

// RDP's row-at-a-time shape: allocating DOM, one Value per cell, then columnar.
void BM_NaiveRowAtATime(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  kelt::Schema schema = LandingSchema();
  for (auto _ : state) {
    kelt::DataSet ds;
    ds.schema = schema;
    ds.rows.reserve(c.views.size());
    for (const kelt::RecordView& v : c.views) {
      nlohmann::json doc = nlohmann::json::parse(*v.value, nullptr, false);
      std::vector<kelt::Value> row;
      row.reserve(schema.size());
      for (const kelt::Field& f : schema.fields) {
        if (f.name == "_kafka_partition") {
          row.push_back(kelt::Value::Int64(v.partition));
          continue;
        }
        if (f.name == "_kafka_offset") {
          row.push_back(kelt::Value::Int64(v.offset));
          continue;
        }
        auto it = doc.find(f.name);
        if (it == doc.end() || it->is_null()) {
          row.push_back(kelt::Value::Null());
        } else if (f.type == kelt::TypeId::kInt64) {
          row.push_back(kelt::Value::Int64(it->get<int64_t>()));
        } else if (f.type == kelt::TypeId::kFloat64) {
          row.push_back(kelt::Value::Float64(it->get<double>()));
        } else if (f.type == kelt::TypeId::kBool) {
          row.push_back(kelt::Value::Bool(it->get<bool>()));
        } else {
          // Timestamps travel as text in RDP's model; keep the text.
          row.push_back(kelt::Value::Utf8(it->get<std::string>()));
        }
      }
      ds.rows.push_back(std::move(row));
    }
    // RDP's landed DataSet is rows; a columnar sink then converts. Count that too.
    for (auto& f : ds.schema.fields) {
      if (f.type == kelt::TypeId::kTimestamp) f.type = kelt::TypeId::kUtf8;
    }
    auto batch = kelt::DataSetToRecordBatch(ds);
    if (!batch.ok()) std::abort();
    benchmark::DoNotOptimize(batch);
  }
  SetCounters(state, c);
}

BENCHMARK(BM_Load)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LoadWindows10k)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ParseFloorDom)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ParseFloorOnDemand)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NaiveRowAtATime)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--records=", 10) == 0)
      g_records = std::atoll(argv[i] + 10);
  }
  benchmark::Initialize(&argc, argv);
  GetCorpus();
  kelt::bench::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  auto& s = reporter.seconds_;
  const Corpus& c = GetCorpus();
  auto rate = [&](const char* name) {
    return s.count(name) ? static_cast<double>(c.views.size()) / s[name] : 0.0;
  };
  std::printf(
      "\n== Load vs baselines (%lld records, %.1f MB, avg %.0f bytes/record) ==\n",
      static_cast<long long>(c.views.size()), static_cast<double>(c.bytes) / 1e6,
      static_cast<double>(c.bytes) / static_cast<double>(c.views.size()));
  for (const char* name :
       {"BM_Load", "BM_ParseFloorDom", "BM_ParseFloorOnDemand", "BM_NaiveRowAtATime"}) {
    if (!s.count(name)) continue;
    std::printf("%-24s %10.0f records/s  %8.1f MB/s\n", name, rate(name),
                static_cast<double>(c.bytes) / s[name] / 1e6);
  }
  if (s.count("BM_Load")) {
    double load = s["BM_Load"];
    if (s.count("BM_ParseFloorDom"))
      std::printf("ratio Load/ParseFloorDom time:       %.2fx (target <= 2.0)\n",
                  load / s["BM_ParseFloorDom"]);
    if (s.count("BM_ParseFloorOnDemand"))
      std::printf("ratio Load/ParseFloorOnDemand time:  %.2fx (target <= 2.0)\n",
                  load / s["BM_ParseFloorOnDemand"]);
    if (s.count("BM_NaiveRowAtATime"))
      std::printf("speed-up Load vs naive row-at-a-time: %.2fx\n",
                  s["BM_NaiveRowAtATime"] / load);
    std::printf("Load records/s: %.0f (target >= 2000000)\n", rate("BM_Load"));
    if (s.count("BM_LoadWindows10k") && s.count("BM_ParseFloorDom")) {
      std::printf("ratio LoadWindows10k/ParseFloorDom time: %.2fx (target <= 2.0)\n",
                  s["BM_LoadWindows10k"] / s["BM_ParseFloorDom"]);
      std::printf("LoadWindows10k records/s: %.0f (target >= 2000000)\n",
                  rate("BM_LoadWindows10k"));
    }
  }
  benchmark::Shutdown();
  return 0;
}
