// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Avro decoding on one core: 1,000,000 record bodies of the JSON benchmark's 8-field
// records (bench/json_corpus.h: the same values from the same random sequence, with the
// timestamp as a timestamp-micros long), encoded by Apache Avro C, against a floor
// measured in the same run:
//   - AvroCDecode: Avro C's own decode of the same bytes (avro_value_read into one
//     reused generic value, as a C consumer would), touching every field.
// kelt's side: AvroDecode (one batch of all records) and AvroDecodeWindows10k (a batch
// every 10,000 records, as the ELT loop cuts windows). After the runs it prints
// records/s and the kelt/Avro C speed-up.
//
// Encoding, the other way: AvroEncode (kelt's AvroEncoder over the decoded batch, one
// body per row) against AvroCEncode (the same rows set field by field into one reused
// Avro C generic value and written with avro_value_write, as a C producer would); the
// bodies are the same bytes.
//
// AvroLoadWindows10k is the whole Load step (wire-format header, metadata columns). With
// --python=PYTHON it is also compared with confluent-kafka's AvroDeserializer + pyarrow
// (bench/python/avro_deserializer_baseline.py) on the same payloads, in the same run.
//
// Run: build/release/bench/avro_benchmark [--records=N] [--python=.venv/bin/python
//      [--python_repetitions=N]] [google benchmark flags], e.g.
//      --benchmark_repetitions=5 (the figures then use each contender's fastest run)
#include <arrow/api.h>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kelt/avro.h"
#include "kelt/avro/avro_c_testing.h"
#include "kelt/load.h"
#include "ratio_reporter.h"
#include "wire_load_bench.h"

namespace {

int64_t g_records = 1000000;

constexpr const char* kSchema =
    R"({"type": "record", "name": "Event", "namespace": "bench",
  "fields": [
    {"name": "event_id", "type": "long"},
    {"name": "user_id", "type": "long"},
    {"name": "amount", "type": "double"},
    {"name": "is_member", "type": "boolean"},
    {"name": "event", "type": "string"},
    {"name": "country", "type": "string"},
    {"name": "session", "type": "string"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}}
  ]})";

struct Corpus {
  std::vector<std::string> bodies;
  int64_t bytes = 0;
};

// Days since 1970-01-01 of 2024-05-d.
int64_t MayDay(int d) { return 19844 + (d - 1); }

const Corpus& GetCorpus() {
  static Corpus corpus = [] {
    Corpus c;
    auto value = kelt::avro::testing::AvroCValue::Make(kSchema);
    if (!value.ok()) std::abort();
    avro_value_t* v = (*value)->value();
    // The values of bench/json_corpus.h's JsonCorpus, from the same sequence.
    static const char* const kEvents[] = {"click", "view", "purchase", "signup",
                                          "logout"};
    static const char* const kCountries[] = {"NO", "SE", "DE", "US", "JP", "BR"};
    std::mt19937_64 rng(42);
    std::vector<char> buffer(4096);
    kelt::avro::testing::WriterHandle writer(
        avro_writer_memory(buffer.data(), static_cast<int64_t>(buffer.size())));
    c.bodies.reserve(static_cast<size_t>(g_records));
    for (int64_t i = 0; i < g_records; ++i) {
      const uint64_t r = rng();
      const auto s1 = static_cast<unsigned long long>(rng());
      const auto s2 = static_cast<unsigned long long>(rng());
      char session[40];
      std::snprintf(session, sizeof(session), "%016llx%016llx", s1, s2);
      const int day = static_cast<int>(1 + (r >> 16) % 28);
      const int64_t micros =
          ((MayDay(day) * 24 + static_cast<int64_t>((r >> 24) % 24)) * 3600 +
           static_cast<int64_t>((r >> 32) % 60) * 60 +
           static_cast<int64_t>((r >> 40) % 60)) *
              1000000 +
          static_cast<int64_t>((r >> 48) % 1000) * 1000;
      avro_value_t f;
      avro_value_get_by_index(v, 0, &f, nullptr);
      avro_value_set_long(&f, 1000000000 + i);
      avro_value_get_by_index(v, 1, &f, nullptr);
      avro_value_set_long(&f, static_cast<int64_t>(r % 10000000));
      avro_value_get_by_index(v, 2, &f, nullptr);
      avro_value_set_double(&f, static_cast<double>(r % 100000) / 100.0);
      avro_value_get_by_index(v, 3, &f, nullptr);
      avro_value_set_boolean(&f, (r & 1) ? 1 : 0);
      avro_value_get_by_index(v, 4, &f, nullptr);
      avro_value_set_string(&f, kEvents[r % 5]);
      avro_value_get_by_index(v, 5, &f, nullptr);
      avro_value_set_string(&f, kCountries[(r >> 8) % 6]);
      avro_value_get_by_index(v, 6, &f, nullptr);
      avro_value_set_string(&f, session);
      avro_value_get_by_index(v, 7, &f, nullptr);
      avro_value_set_long(&f, micros);
      avro_writer_reset(writer.get());
      if (avro_value_write(writer.get(), v)) std::abort();
      c.bodies.emplace_back(buffer.data(),
                            static_cast<size_t>(avro_writer_tell(writer.get())));
      c.bytes += static_cast<int64_t>(c.bodies.back().size());
    }
    return c;
  }();
  return corpus;
}

std::shared_ptr<const kelt::AvroPlan> Plan() {
  static std::shared_ptr<const kelt::AvroPlan> plan = [] {
    auto schema = kelt::AvroSchema::Parse(kSchema);
    if (!schema.ok()) std::abort();
    auto p = kelt::AvroPlan::Compile(*schema, *schema);
    if (!p.ok()) std::abort();
    return *p;
  }();
  return plan;
}

void SetCounters(benchmark::State& state, const Corpus& c) {
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(c.bodies.size()));
  state.SetBytesProcessed(state.iterations() * c.bytes);
}

void BM_AvroDecode(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  auto decoder = kelt::AvroDecoder::Make(Plan()).MoveValueUnsafe();
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

void BM_AvroDecodeWindows10k(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  auto decoder = kelt::AvroDecoder::Make(Plan()).MoveValueUnsafe();
  constexpr size_t kWindow = 10000;
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

// The Load step on the same records in the registry's wire format (schema id 1), with
// the ELT loop's metadata columns, in windows of 10,000.
// The payloads in the registry's wire format (schema id 1).
const std::vector<std::string>& WirePayloads() {
  static const std::vector<std::string> payloads = [] {
    std::vector<std::string> out;
    for (const std::string& body : GetCorpus().bodies)
      out.push_back(std::string("\0\0\0\0\1", 5) + body);
    return out;
  }();
  return payloads;
}

void BM_AvroLoadWindows10k(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  auto avro = std::make_shared<kelt::AvroPayload>();
  avro->reader_schema = kSchema;
  avro->reader_schema_id = 1;
  avro->writer_schema = [](int32_t) -> kelt::Result<std::string> {
    return std::string(kSchema);
  };
  kelt::LoadOptions options;
  options.avro = avro;
  auto loader =
      kelt::Loader::Make(kelt::bench::LoopMetadata(), options).MoveValueUnsafe();
  kelt::bench::LoadWindows(state, *loader, WirePayloads());
  SetCounters(state, c);
}

// The floor: Avro C reading each body into one reused generic value and every field
// read back out of it.
void BM_AvroCDecode(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  auto value = kelt::avro::testing::AvroCValue::Make(kSchema);
  if (!value.ok()) std::abort();
  avro_value_t* v = (*value)->value();
  kelt::avro::testing::ReaderHandle reader(avro_reader_memory(nullptr, 0));
  for (auto _ : state) {
    uint64_t acc = 0;  // wraps: only the reads count
    for (const std::string& body : c.bodies) {
      avro_reader_memory_set_source(reader.get(), body.data(),
                                    static_cast<int64_t>(body.size()));
      if (avro_value_read(reader.get(), v)) std::abort();
      avro_value_t f;
      int64_t l = 0;
      double d = 0;
      int b = 0;
      const char* s = nullptr;
      size_t n = 0;
      avro_value_get_by_index(v, 0, &f, nullptr);
      avro_value_get_long(&f, &l);
      acc += static_cast<uint64_t>(l);
      avro_value_get_by_index(v, 1, &f, nullptr);
      avro_value_get_long(&f, &l);
      acc += static_cast<uint64_t>(l);
      avro_value_get_by_index(v, 2, &f, nullptr);
      avro_value_get_double(&f, &d);
      acc += static_cast<uint64_t>(static_cast<int64_t>(d));
      avro_value_get_by_index(v, 3, &f, nullptr);
      avro_value_get_boolean(&f, &b);
      acc += static_cast<uint64_t>(b);
      for (size_t k = 4; k < 7; ++k) {
        avro_value_get_by_index(v, k, &f, nullptr);
        avro_value_get_string(&f, &s, &n);
        acc += n;
      }
      avro_value_get_by_index(v, 7, &f, nullptr);
      avro_value_get_long(&f, &l);
      acc += static_cast<uint64_t>(l);
    }
    benchmark::DoNotOptimize(acc);
  }
  SetCounters(state, c);
}

// The corpus decoded once: the rows the encoders write.
const std::shared_ptr<arrow::RecordBatch>& Rows() {
  static std::shared_ptr<arrow::RecordBatch> rows = [] {
    auto decoder = kelt::AvroDecoder::Make(Plan()).MoveValueUnsafe();
    for (const std::string& body : GetCorpus().bodies) {
      if (!decoder->Append(body).ok()) std::abort();
    }
    return decoder->Finish().MoveValueUnsafe();
  }();
  return rows;
}

void BM_AvroEncode(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  const auto& rows = Rows();
  auto schema = kelt::AvroSchema::Parse(kSchema).MoveValueUnsafe();
  auto encoder = kelt::AvroEncoder::Make(rows->schema(), schema).MoveValueUnsafe();
  std::vector<std::string> bodies;
  for (auto _ : state) {
    bodies.clear();
    if (!encoder->Encode(*rows, &bodies).ok()) std::abort();
    benchmark::DoNotOptimize(bodies.data());
  }
  if (bodies != c.bodies) std::abort();  // Avro C's bytes
  SetCounters(state, c);
}

void BM_AvroCEncode(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  const auto& rows = Rows();
  auto value = kelt::avro::testing::AvroCValue::Make(kSchema);
  if (!value.ok()) std::abort();
  avro_value_t* v = (*value)->value();
  std::vector<char> buffer(4096);
  kelt::avro::testing::WriterHandle writer(
      avro_writer_memory(buffer.data(), static_cast<int64_t>(buffer.size())));
  const auto& i0 = static_cast<const arrow::Int64Array&>(*rows->column(0));
  const auto& i1 = static_cast<const arrow::Int64Array&>(*rows->column(1));
  const auto& d2 = static_cast<const arrow::DoubleArray&>(*rows->column(2));
  const auto& b3 = static_cast<const arrow::BooleanArray&>(*rows->column(3));
  const auto& s4 = static_cast<const arrow::StringArray&>(*rows->column(4));
  const auto& s5 = static_cast<const arrow::StringArray&>(*rows->column(5));
  const auto& s6 = static_cast<const arrow::StringArray&>(*rows->column(6));
  const auto& t7 = static_cast<const arrow::TimestampArray&>(*rows->column(7));
  std::vector<std::string> bodies;
  for (auto _ : state) {
    bodies.clear();
    bodies.reserve(static_cast<size_t>(rows->num_rows()));
    for (int64_t r = 0; r < rows->num_rows(); ++r) {
      avro_value_t f;
      avro_value_get_by_index(v, 0, &f, nullptr);
      avro_value_set_long(&f, i0.Value(r));
      avro_value_get_by_index(v, 1, &f, nullptr);
      avro_value_set_long(&f, i1.Value(r));
      avro_value_get_by_index(v, 2, &f, nullptr);
      avro_value_set_double(&f, d2.Value(r));
      avro_value_get_by_index(v, 3, &f, nullptr);
      avro_value_set_boolean(&f, b3.Value(r) ? 1 : 0);
      const arrow::StringArray* strings[] = {&s4, &s5, &s6};
      for (size_t k = 0; k < 3; ++k) {
        std::string_view sv = strings[k]->GetView(r);
        avro_value_get_by_index(v, 4 + k, &f, nullptr);
        // Avro C's size counts a NUL it does not write: the byte after the view is read
        // (Arrow pads its buffers), not written.
        avro_value_set_string_len(&f, sv.data(), sv.size() + 1);
      }
      avro_value_get_by_index(v, 7, &f, nullptr);
      avro_value_set_long(&f, t7.Value(r));
      avro_writer_reset(writer.get());
      if (avro_value_write(writer.get(), v)) std::abort();
      bodies.emplace_back(buffer.data(),
                          static_cast<size_t>(avro_writer_tell(writer.get())));
    }
    benchmark::DoNotOptimize(bodies.data());
  }
  SetCounters(state, c);
}

BENCHMARK(BM_AvroEncode)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AvroCEncode)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AvroDecode)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AvroDecodeWindows10k)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AvroCDecode)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AvroLoadWindows10k)->Unit(benchmark::kMillisecond);

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
  auto rate = [&](const char* name) {
    return s.count(name) ? static_cast<double>(c.bodies.size()) / s[name] : 0.0;
  };
  std::printf("\n== Avro decode (%lld records, %.1f MB, avg %.0f bytes/record) ==\n",
              static_cast<long long>(c.bodies.size()), static_cast<double>(c.bytes) / 1e6,
              static_cast<double>(c.bytes) / static_cast<double>(c.bodies.size()));
  for (const char* name : {"BM_AvroDecode", "BM_AvroDecodeWindows10k", "BM_AvroCDecode",
                           "BM_AvroLoadWindows10k"}) {
    if (!s.count(name)) continue;
    std::printf("%-26s %12.0f records/s  %8.1f MB/s\n", name, rate(name),
                static_cast<double>(c.bytes) / s[name] / 1e6);
  }
  if (s.count("BM_AvroDecode") && s.count("BM_AvroCDecode")) {
    std::printf("speed-up kelt AvroDecode vs Avro C decode:            %.2fx\n",
                s["BM_AvroCDecode"] / s["BM_AvroDecode"]);
  }
  for (const char* name : {"BM_AvroEncode", "BM_AvroCEncode"}) {
    if (!s.count(name)) continue;
    std::printf("%-26s %12.0f records/s  %8.1f MB/s\n", name, rate(name),
                static_cast<double>(c.bytes) / s[name] / 1e6);
  }
  if (s.count("BM_AvroEncode") && s.count("BM_AvroCEncode")) {
    std::printf("speed-up kelt AvroEncode vs Avro C encode:            %.2fx\n",
                s["BM_AvroCEncode"] / s["BM_AvroEncode"]);
  }
  if (s.count("BM_AvroDecodeWindows10k") && s.count("BM_AvroCDecode")) {
    std::printf("speed-up kelt AvroDecodeWindows10k vs Avro C decode:  %.2fx\n",
                s["BM_AvroCDecode"] / s["BM_AvroDecodeWindows10k"]);
  }
  if (!python.empty() && s.count("BM_AvroLoadWindows10k")) {
    const double py = kelt::bench::PythonBaseline(
        python, KELT_SOURCE_DIR "/bench/python/avro_deserializer_baseline.py",
        WirePayloads(), kSchema, "schema.avsc", python_repetitions);
    if (py <= 0) {
      std::fprintf(stderr, "the Python baseline failed (%s)\n", python.c_str());
      return 1;
    }
    std::printf("%-26s %12.0f records/s\n", "confluent+pyarrow",
                static_cast<double>(c.bodies.size()) / py);
    std::printf("speed-up kelt AvroLoadWindows10k vs AvroDeserializer + pyarrow: %.1fx\n",
                py / s["BM_AvroLoadWindows10k"]);
  }
  benchmark::Shutdown();
  return 0;
}
