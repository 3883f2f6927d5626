// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// A consumer group's state as the end-to-end tests check it: the committed offset and
// the end (high watermark) of each partition, read by a fresh member of the group.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "kelt/kafka.h"
#include "kelt/testing/assertions.h"

namespace kelt::testing {

struct GroupView {
  std::map<int32_t, int64_t> committed;  ///< -1: nothing committed
  std::map<int32_t, int64_t> ends;
};

/// Join `group` on `topic`, wait (up to 30 s) until this member owns all `partitions`,
/// and read the group's committed offsets and the partitions' ends. The member reads at
/// most a record per partition and commits nothing (kelt never auto-commits).
inline GroupView ReadGroup(const std::string& bootstrap, const std::string& topic,
                           const std::string& group, size_t partitions) {
  GroupView view;
  ConsumerOptions co;
  co.brokers = bootstrap;
  co.group_id = group;
  co.topics = {topic};
  co.session_timeout_ms = 6000;
  auto checker = Consumer::Make(co);
  EXPECT_OK(checker);
  if (!checker.ok()) return view;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((*checker)->Assignment().size() < partitions &&
         std::chrono::steady_clock::now() < deadline) {
    EXPECT_OK((*checker)->Poll({.max_records = 1,
                                .max_wait = std::chrono::milliseconds(200),
                                .stop_at_end = true}));
  }
  EXPECT_EQ((*checker)->Assignment().size(), partitions);
  auto committed = (*checker)->Committed(std::chrono::seconds(10));
  EXPECT_OK(committed);
  if (committed.ok()) {
    for (const auto& [tp, next] : *committed) view.committed[tp.partition] = next;
  }
  auto lag = (*checker)->Lag(std::chrono::seconds(10));
  EXPECT_OK(lag);
  if (lag.ok()) {
    for (const auto& l : *lag) view.ends[l.tp.partition] = l.high_watermark;
  }
  EXPECT_OK((*checker)->Close());
  return view;
}

}  // namespace kelt::testing
