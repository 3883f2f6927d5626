// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Test helper shared by the sink tests: a loaded window as the ELT loop hands it over.
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kelt/load.h"
#include "kelt/sink.h"
#include "kelt/testing/assertions.h"

namespace kelt::testing {

/// A fresh directory under /tmp, removed with its contents at the end of the scope.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "kelt-test") {
    std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Load `records` with `options` and describe them as a window: one span per partition
/// covering its records (bad ones included, as the consumer's spans do).
inline SinkWindow MakeSinkWindow(const std::vector<StreamRecord>& records,
                                 const Schema& landing, const LoadOptions& options) {
  auto loaded = LoadRecords(records, landing, options);
  EXPECT_OK(loaded);
  SinkWindow w;
  if (!loaded.ok()) return w;
  w.batch = loaded->batch;
  w.dead_letters = loaded->dead_letters;
  std::map<TopicPartition, PartitionSpan> spans;
  for (const StreamRecord& r : records) {
    TopicPartition tp{r.topic, r.partition};
    auto [it, fresh] = spans.try_emplace(tp, PartitionSpan{tp, r.offset, r.offset, 0});
    it->second.first_offset = std::min(it->second.first_offset, r.offset);
    it->second.last_offset = std::max(it->second.last_offset, r.offset);
    ++it->second.count;
  }
  for (auto& [tp, s] : spans) w.spans.push_back(s);
  return w;
}

inline LoadOptions DeadLetterOptions() {
  LoadOptions o;
  o.on_bad_record = BadRecordPolicy::kDeadLetter;
  return o;
}

}  // namespace kelt::testing
