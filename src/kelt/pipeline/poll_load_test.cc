// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Poll-and-load (include/kelt/poll_load.h) on librdkafka's in-process mock cluster: a
// window that fails to load is given back, and parallel loaders keep record order.
#include "kelt/poll_load.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "kelt/kafka/mock_cluster_testing.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

class PollLoadTest : public MockClusterTest {};

// A window that fails to load is given back: polling again meets the same record, and a
// loader with another policy then lands the whole window (nothing passed over).
TEST_F(PollLoadTest, PollLoadedGivesBackAWindowThatFailsToLoad) {
  CreateTopic("t-poison", 1, 5);
  ProduceRaw(mc(), "t-poison", {{std::nullopt, "{\"id\":\"five\"}"}});
  ProduceIds(mc(), "t-poison", 6, 4);
  ASSERT_OK_AND_ASSIGN(auto c, Join("t-poison", "g-poison"));
  const Schema landing({{"id", TypeId::kInt64}, {"_kafka_offset", TypeId::kInt64}});
  LoadOptions fail_options;
  fail_options.on_bad_record = BadRecordPolicy::kFail;
  LoadOptions dead_letter_options;
  dead_letter_options.on_bad_record = BadRecordPolicy::kDeadLetter;
  ASSERT_OK_AND_ASSIGN(auto strict, Loader::Make(landing, fail_options));
  ASSERT_OK_AND_ASSIGN(auto lenient, Loader::Make(landing, dead_letter_options));
  WindowOptions opts{.max_records = 100};
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto polled = PollLoaded(*c, *strict, opts);
    ASSERT_FALSE(polled.ok()) << "attempt " << attempt << " passed the bad record";
    EXPECT_NE(polled.status().message().find("(at t-poison[0]@5, "), std::string::npos)
        << polled.status().ToString();
  }
  ASSERT_OK_AND_ASSIGN(auto polled, PollLoaded(*c, *lenient, opts));
  EXPECT_EQ(polled.window.size(), 10u);
  EXPECT_EQ(polled.loaded.batch->num_rows(), 9);
  EXPECT_EQ(polled.loaded.dead_letters->num_rows(), 1);
  ASSERT_OK(c->Commit(polled.window));
  ASSERT_OK(c->Close());
}

// Loaders share a window in order; the first bad record in record order is reported,
// and the failed window is given back whole.
TEST_F(PollLoadTest, ParallelLoadKeepsRecordOrderAndReportsTheFirstBadRecord) {
  CreateTopic("t-par", 1, 25);
  ProduceRaw(mc(), "t-par", {{std::nullopt, "{\"id\":\"x\"}"}});  // offset 25
  ProduceIds(mc(), "t-par", 26, 10);
  ProduceRaw(mc(), "t-par", {{std::nullopt, "{\"id\":\"y\"}"}});  // offset 36
  ProduceIds(mc(), "t-par", 37, 3);
  ASSERT_OK_AND_ASSIGN(auto c, Join("t-par", "g-par"));
  const Schema landing({{"id", TypeId::kInt64}, {"_kafka_offset", TypeId::kInt64}});
  std::vector<std::unique_ptr<Loader>> strict, lenient;
  for (int i = 0; i < 6; ++i) {
    LoadOptions options;
    options.on_bad_record = i < 3 ? BadRecordPolicy::kFail : BadRecordPolicy::kDeadLetter;
    ASSERT_OK_AND_ASSIGN(auto l, Loader::Make(landing, options));
    (i < 3 ? strict : lenient).push_back(std::move(l));
  }
  WindowOptions opts{.max_records = 100};
  // 40 records, 3 loaders of >= 5 each: shares 0-12, 13-25, 26-39; the first bad record
  // (offset 25) is in the second share, the other (36) in the third.
  ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
  ASSERT_EQ(w.size(), 40u);
  auto failed = LoadWindowParallel(w, strict, 5);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("(at t-par[0]@25, "), std::string::npos)
      << failed.status().ToString();
  ASSERT_OK_AND_ASSIGN(auto parts, LoadWindowParallel(w, lenient, 5));
  ASSERT_EQ(parts.size(), 3u);
  std::vector<int64_t> offsets, dead;
  for (const LoadedWindow& part : parts) {
    auto off = std::static_pointer_cast<arrow::Int64Array>(
        part.batch->GetColumnByName("_kafka_offset"));
    for (int64_t i = 0; i < off->length(); ++i) offsets.push_back(off->Value(i));
    auto d = std::static_pointer_cast<arrow::Int64Array>(
        part.dead_letters->GetColumnByName("_kafka_offset"));
    for (int64_t i = 0; i < d->length(); ++i) dead.push_back(d->Value(i));
  }
  std::vector<int64_t> want;
  for (int64_t o = 0; o < 40; ++o) {
    if (o != 25 && o != 36) want.push_back(o);
  }
  EXPECT_EQ(offsets, want);
  EXPECT_EQ(dead, (std::vector<int64_t>{25, 36}));
  // A small window uses one loader.
  ASSERT_OK_AND_ASSIGN(auto one, LoadWindowParallel(w, lenient, 1000));
  EXPECT_EQ(one.size(), 1u);
  ASSERT_OK(c->Close());
}

}  // namespace
}  // namespace kelt
