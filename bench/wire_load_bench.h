// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// What the Avro and Protobuf benchmarks share: the whole Load step over wire-format
// payloads in windows of 10,000 with the ELT loop's metadata columns, and the run of a
// Python baseline (confluent-kafka's deserializer + pyarrow) on the same payloads.
#pragma once

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "kelt/load.h"

namespace kelt::bench {

/// The `_kafka_*` columns the ELT loop adds to a registry subject's landing.
inline kelt::Schema LoopMetadata() {
  return kelt::Schema({{"_kafka_topic", kelt::TypeId::kUtf8},
                       {"_kafka_partition", kelt::TypeId::kInt64},
                       {"_kafka_offset", kelt::TypeId::kInt64},
                       {"_kafka_timestamp", kelt::TypeId::kTimestamp}});
}

/// Each benchmark iteration loads every payload, a window of 10,000 at a time.
inline void LoadWindows(benchmark::State& state, kelt::Loader& loader,
                        const std::vector<std::string>& payloads) {
  constexpr size_t kWindow = 10000;
  kelt::RecordView r;
  r.topic = "bench";
  for (auto _ : state) {
    int64_t rows = 0;
    for (size_t start = 0; start < payloads.size(); start += kWindow) {
      const size_t end = std::min(payloads.size(), start + kWindow);
      if (!loader.Reserve(static_cast<int64_t>(end - start), 0).ok()) std::abort();
      for (size_t i = start; i < end; ++i) {
        r.offset = static_cast<int64_t>(i);
        r.timestamp_ms = 1700000000000 + static_cast<int64_t>(i);
        r.value = payloads[i];
        if (!loader.Append(r).ok()) std::abort();
      }
      auto window = loader.Finish();
      if (!window.ok()) std::abort();
      rows += window->batch->num_rows();
      benchmark::DoNotOptimize(window->batch);
    }
    if (rows != static_cast<int64_t>(payloads.size())) std::abort();
  }
}

/// Run `python script PAYLOADS SCHEMA repetitions`, PAYLOADS holding `payloads` each
/// preceded by its length (4 little-endian bytes) and SCHEMA the text `schema` (a file
/// named `schema_name`): the seconds it prints (its best repetition), or a negative
/// number when it fails.
inline double PythonBaseline(const std::string& python, const std::string& script,
                             const std::vector<std::string>& payloads,
                             const std::string& schema, const std::string& schema_name,
                             int repetitions) {
  char dir_template[] = "/tmp/kelt-wire-bench-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (dir == nullptr) return -1;
  const std::string payloads_path = std::string(dir) + "/payloads";
  const std::string schema_path = std::string(dir) + "/" + schema_name;
  {
    std::ofstream out(payloads_path, std::ios::binary);
    for (const std::string& p : payloads) {
      const auto n = static_cast<uint32_t>(p.size());
      out.write(reinterpret_cast<const char*>(&n), 4);
      out.write(p.data(), static_cast<std::streamsize>(p.size()));
    }
    std::ofstream(schema_path) << schema;
  }
  const std::string cmd = "'" + python + "' '" + script + "' '" + payloads_path + "' '" +
                          schema_path + "' " + std::to_string(repetitions);
  double seconds = -1;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    if (std::fscanf(p, "%lf", &seconds) != 1) seconds = -1;
    if (pclose(p) != 0) seconds = -1;
  }
  std::remove(payloads_path.c_str());
  std::remove(schema_path.c_str());
  rmdir(dir);
  return seconds;
}

}  // namespace kelt::bench
