// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Protobuf decoding on one core: 1,000,000 message bodies of the JSON benchmark's
// 8-field records (bench/json_corpus.h's values from the same random sequence, the
// timestamp as a google.protobuf.Timestamp), encoded by libprotobuf, against a baseline
// measured in the same run:
//   - DynamicMessageReflection: libprotobuf parsing each body into one reused
//     DynamicMessage and its reflection appending every field into the same Arrow
//     columns (protobuf/reflection_testing.h), in windows of 10,000.
// kelt's side: ProtobufDecode (one batch of all records) and ProtobufDecodeWindows10k (a
// batch every 10,000 records, as the ELT loop cuts windows). After the runs it prints
// records/s and the kelt/libprotobuf speed-up.
//
// ProtobufLoadWindows10k is the whole Load step (wire-format header, message indexes,
// metadata columns). With --python=PYTHON it is also compared with confluent-kafka's
// ProtobufDeserializer + pyarrow (bench/python/protobuf_deserializer_baseline.py; it
// needs protoc) on the same payloads, in the same run.
//
// ProtobufEncode is the produce side: ProtobufEncoder over the decoded batch, one body
// per row (the corpus's bytes, checked). With --python it is compared with
// confluent-kafka's ProtobufSerializer on the same rows as dicts
// (bench/python/protobuf_serializer_baseline.py), in the same run.
//
// Run: build/release/bench/protobuf_benchmark [--records=N] [--python=.venv/bin/python
//      [--python_repetitions=N]] [google benchmark flags], e.g.
//      --benchmark_repetitions=5 (the figures then use each contender's fastest run)
#include <arrow/api.h>
#include <benchmark/benchmark.h>
#include <google/protobuf/descriptor.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kelt/load.h"
#include "kelt/protobuf.h"
#include "kelt/protobuf/reflection_testing.h"
#include "ratio_reporter.h"
#include "wire_load_bench.h"

namespace {

int64_t g_records = 1000000;

constexpr const char* kSchema = R"(
syntax = "proto3";
package bench;
import "google/protobuf/timestamp.proto";
message Event {
  int64 event_id = 1;
  int64 user_id = 2;
  double amount = 3;
  bool is_member = 4;
  string event = 5;
  string country = 6;
  string session = 7;
  google.protobuf.Timestamp ts = 8;
}
)";

std::shared_ptr<const kelt::ProtobufPlan> Plan() {
  static std::shared_ptr<const kelt::ProtobufPlan> plan = [] {
    auto schema = kelt::ProtobufSchema::Parse(kSchema);
    if (!schema.ok()) std::abort();
    auto p = kelt::ProtobufPlan::Compile(*schema);
    if (!p.ok()) std::abort();
    return *p;
  }();
  return plan;
}

struct Corpus {
  std::vector<std::string> bodies;
  int64_t bytes = 0;
};

// Days since 1970-01-01 of 2024-05-d.
int64_t MayDay(int d) { return 19844 + (d - 1); }

const Corpus& GetCorpus() {
  static Corpus corpus = [] {
    Corpus c;
    kelt::protobuf::ReflectionReference reference(Plan());
    std::unique_ptr<google::protobuf::Message> m(reference.NewMessage());
    const google::protobuf::Descriptor* d = m->GetDescriptor();
    const google::protobuf::Reflection* r = m->GetReflection();
    static const char* const kEvents[] = {"click", "view", "purchase", "signup",
                                          "logout"};
    static const char* const kCountries[] = {"NO", "SE", "DE", "US", "JP", "BR"};
    std::mt19937_64 rng(42);
    c.bodies.reserve(static_cast<size_t>(g_records));
    for (int64_t i = 0; i < g_records; ++i) {
      const uint64_t x = rng();
      const auto s1 = static_cast<unsigned long long>(rng());
      const auto s2 = static_cast<unsigned long long>(rng());
      char session[40];
      std::snprintf(session, sizeof(session), "%016llx%016llx", s1, s2);
      const int day = static_cast<int>(1 + (x >> 16) % 28);
      const int64_t seconds =
          (MayDay(day) * 24 + static_cast<int64_t>((x >> 24) % 24)) * 3600 +
          static_cast<int64_t>((x >> 32) % 60) * 60 +
          static_cast<int64_t>((x >> 40) % 60);
      const auto nanos = static_cast<int32_t>((x >> 48) % 1000) * 1000000;
      r->SetInt64(m.get(), d->field(0), 1000000000 + i);
      r->SetInt64(m.get(), d->field(1), static_cast<int64_t>(x % 10000000));
      r->SetDouble(m.get(), d->field(2), static_cast<double>(x % 100000) / 100.0);
      r->SetBool(m.get(), d->field(3), (x & 1) != 0);
      r->SetString(m.get(), d->field(4), kEvents[x % 5]);
      r->SetString(m.get(), d->field(5), kCountries[(x >> 8) % 6]);
      r->SetString(m.get(), d->field(6), session);
      google::protobuf::Message* ts = r->MutableMessage(m.get(), d->field(7));
      ts->GetReflection()->SetInt64(ts, ts->GetDescriptor()->field(0), seconds);
      ts->GetReflection()->SetInt32(ts, ts->GetDescriptor()->field(1), nanos);
      c.bodies.push_back(m->SerializeAsString());
      c.bytes += static_cast<int64_t>(c.bodies.back().size());
    }
    return c;
  }();
  return corpus;
}

void SetCounters(benchmark::State& state, const Corpus& c) {
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(c.bodies.size()));
  state.SetBytesProcessed(state.iterations() * c.bytes);
}

void BM_ProtobufDecode(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  auto decoder = kelt::ProtobufDecoder::Make(Plan()).MoveValueUnsafe();
  for (auto _ : state) {
    if (!decoder->Reserve(static_cast<int64_t>(c.bodies.size())).ok()) std::abort();
    for (const std::string& body : c.bodies) {
      if (!decoder->Append(body).ok()) std::abort();
    }
    auto batch = decoder->Finish();
    if (!batch.ok() || (*batch)->num_rows() != static_cast<int64_t>(c.bodies.size())) {
      std::abort();
    }
    benchmark::DoNotOptimize(*batch);
  }
  SetCounters(state, c);
}

constexpr size_t kWindow = 10000;

void BM_ProtobufDecodeWindows10k(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  auto decoder = kelt::ProtobufDecoder::Make(Plan()).MoveValueUnsafe();
  for (auto _ : state) {
    int64_t rows = 0;
    for (size_t start = 0; start < c.bodies.size(); start += kWindow) {
      const size_t end = std::min(c.bodies.size(), start + kWindow);
      for (size_t i = start; i < end; ++i) {
        if (!decoder->Append(c.bodies[i]).ok()) std::abort();
      }
      auto batch = decoder->Finish();
      if (!batch.ok()) std::abort();
      rows += (*batch)->num_rows();
      benchmark::DoNotOptimize(*batch);
    }
    if (rows != static_cast<int64_t>(c.bodies.size())) std::abort();
  }
  SetCounters(state, c);
}

// The baseline: DynamicMessage parse + reflection into the same columns.
void BM_DynamicMessageReflection(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  kelt::protobuf::ReflectionReference reference(Plan());
  for (auto _ : state) {
    int64_t rows = 0;
    for (size_t start = 0; start < c.bodies.size(); start += kWindow) {
      const size_t end = std::min(c.bodies.size(), start + kWindow);
      for (size_t i = start; i < end; ++i) {
        if (!reference.Append(c.bodies[i])) std::abort();
      }
      auto batch = reference.Finish();
      rows += batch->num_rows();
      benchmark::DoNotOptimize(batch);
    }
    if (rows != static_cast<int64_t>(c.bodies.size())) std::abort();
  }
  SetCounters(state, c);
}

// The payloads in the registry's wire format (schema id 1, message indexes [0]).
const std::vector<std::string>& WirePayloads() {
  static const std::vector<std::string> payloads = [] {
    std::vector<std::string> out;
    for (const std::string& body : GetCorpus().bodies)
      out.push_back(std::string("\0\0\0\0\1\0", 6) + body);
    return out;
  }();
  return payloads;
}

void BM_ProtobufLoadWindows10k(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  auto payload = std::make_shared<kelt::ProtobufPayload>();
  payload->reader = {1, kSchema, {}};
  payload->writer_schema = [](int32_t) -> kelt::Result<kelt::ProtobufSchemaSource> {
    return kelt::ProtobufSchemaSource{1, kSchema, {}};
  };
  kelt::LoadOptions options;
  options.protobuf = payload;
  auto loader =
      kelt::Loader::Make(kelt::bench::LoopMetadata(), options).MoveValueUnsafe();
  kelt::bench::LoadWindows(state, *loader, WirePayloads());
  SetCounters(state, c);
}

// The produce side: ProtobufEncoder (a DynamicMessage set from the columns, then
// libprotobuf's serializer) over the decoded batch, one body per row: the corpus's bytes.
const std::shared_ptr<arrow::RecordBatch>& Rows() {
  static const std::shared_ptr<arrow::RecordBatch> rows = [] {
    auto decoder = kelt::ProtobufDecoder::Make(Plan()).MoveValueUnsafe();
    for (const std::string& body : GetCorpus().bodies) {
      if (!decoder->Append(body).ok()) std::abort();
    }
    return decoder->Finish().MoveValueUnsafe();
  }();
  return rows;
}

void BM_ProtobufEncode(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  const auto& rows = Rows();
  auto schema = kelt::ProtobufSchema::Parse(kSchema).MoveValueUnsafe();
  auto encoder =
      kelt::ProtobufEncoder::Make(schema, {0}, rows->schema()).MoveValueUnsafe();
  std::vector<std::string> bodies;
  for (auto _ : state) {
    bodies.clear();
    if (!encoder->Encode(*rows, &bodies).ok()) std::abort();
    benchmark::DoNotOptimize(bodies.data());
  }
  if (bodies != c.bodies) std::abort();  // libprotobuf's bytes
  SetCounters(state, c);
}

BENCHMARK(BM_ProtobufDecode)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ProtobufDecodeWindows10k)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DynamicMessageReflection)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ProtobufLoadWindows10k)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ProtobufEncode)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  std::string python;
  int python_repetitions = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--records=", 10) == 0)
      g_records = std::atoll(argv[i] + 10);
    if (std::strncmp(argv[i], "--python=", 9) == 0) python = argv[i] + 9;
    if (std::strncmp(argv[i], "--python_repetitions=", 21) == 0)
      python_repetitions = std::atoi(argv[i] + 21);
  }
  benchmark::Initialize(&argc, argv);
  GetCorpus();
  kelt::bench::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  auto& s = reporter.seconds_;
  const Corpus& c = GetCorpus();
  std::printf("\n== Protobuf decode (%lld records, %.1f MB, avg %.0f bytes/record) ==\n",
              static_cast<long long>(c.bodies.size()), static_cast<double>(c.bytes) / 1e6,
              static_cast<double>(c.bytes) / static_cast<double>(c.bodies.size()));
  for (const char* name :
       {"BM_ProtobufDecode", "BM_ProtobufDecodeWindows10k", "BM_DynamicMessageReflection",
        "BM_ProtobufLoadWindows10k", "BM_ProtobufEncode"}) {
    if (!s.count(name)) continue;
    std::printf("%-30s %12.0f records/s  %8.1f MB/s\n", name,
                static_cast<double>(c.bodies.size()) / s[name],
                static_cast<double>(c.bytes) / s[name] / 1e6);
  }
  if (s.count("BM_ProtobufDecodeWindows10k") && s.count("BM_DynamicMessageReflection")) {
    std::printf(
        "speed-up kelt ProtobufDecodeWindows10k vs DynamicMessage + reflection: %.2fx\n",
        s["BM_DynamicMessageReflection"] / s["BM_ProtobufDecodeWindows10k"]);
  }
  if (!python.empty() && s.count("BM_ProtobufLoadWindows10k")) {
    const double py = kelt::bench::PythonBaseline(
        python, KELT_SOURCE_DIR "/bench/python/protobuf_deserializer_baseline.py",
        WirePayloads(), kSchema, "event.proto", python_repetitions);
    if (py <= 0) {
      std::fprintf(stderr, "the Python baseline failed (%s)\n", python.c_str());
      return 1;
    }
    std::printf("%-30s %12.0f records/s\n", "confluent+pyarrow",
                static_cast<double>(c.bodies.size()) / py);
    std::printf(
        "speed-up kelt ProtobufLoadWindows10k vs ProtobufDeserializer + pyarrow: %.1fx\n",
        py / s["BM_ProtobufLoadWindows10k"]);
  }
  if (!python.empty() && s.count("BM_ProtobufEncode")) {
    const double py = kelt::bench::PythonBaseline(
        python, KELT_SOURCE_DIR "/bench/python/protobuf_serializer_baseline.py",
        WirePayloads(), kSchema, "event.proto", python_repetitions);
    if (py <= 0) {
      std::fprintf(stderr, "the Python serializer baseline failed (%s)\n",
                   python.c_str());
      return 1;
    }
    std::printf("%-30s %12.0f records/s\n", "confluent ProtobufSerializer",
                static_cast<double>(c.bodies.size()) / py);
    std::printf("speed-up kelt ProtobufEncode vs ProtobufSerializer: %.1fx\n",
                py / s["BM_ProtobufEncode"]);
  }
  benchmark::Shutdown();
  return 0;
}
