// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// A Google Benchmark reporter that keeps each benchmark's time, so a benchmark binary
// can print ratios between contenders measured in the same run.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace kelt::bench {

/// The console output, plus the seconds of each benchmark function (`seconds_`).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type == Run::RT_Iteration && r.iterations > 0) {
        // With --benchmark_repetitions keep the fastest repetition: on a shared machine
        // the minimum is the least disturbed measurement of each contender.
        double s = r.GetAdjustedRealTime() / 1e3;  // ms → s
        auto [it, inserted] = seconds_.emplace(r.run_name.function_name, s);
        if (!inserted) it->second = std::min(it->second, s);
      }
    }
  }
  std::map<std::string, double> seconds_;
};

}  // namespace kelt::bench
