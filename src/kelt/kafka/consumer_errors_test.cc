// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// A poll that fails in the middle of a batch: every message librdkafka handed over is
// released (the dev build runs this under ASan, whose leak check fails the test
// otherwise) and the consumer still closes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>

#include "kelt/kafka.h"
#include "kelt/kafka/mock_cluster_testing.h"

namespace kelt {
namespace {

TEST(ConsumerErrors, AFailedPollReleasesTheBatchItHolds) {
  ASSERT_OK_AND_ASSIGN(auto mc, MockCluster::Make());
  ASSERT_OK(mc->CreateTopic("t", 2));
  ProduceIds(*mc, "t", 0, 200);  // keys k0..k199: both partitions get records

  // One member commits partition 0 only.
  {
    auto c = Consumer::Make(ConsumerFor(*mc, "t", "g"));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    WindowOptions wo;
    wo.max_records = 1;
    wo.max_wait = std::chrono::seconds(10);
    for (int i = 0; i < 20 && (*c)->Assignment().size() < 2; ++i) {
      ASSERT_TRUE((*c)->Poll(wo).ok());
    }
    ASSERT_EQ((*c)->Assignment().size(), 2u);
    ASSERT_TRUE((*c)->CommitOffsets({{{"t", 0}, 0}}).ok());
    ASSERT_TRUE((*c)->Close().ok());
  }

  // The next member may not reset offsets: partition 1 has none, so its fetch ends in
  // an error event while partition 0's records arrive in the same batches.
  ConsumerOptions o = ConsumerFor(*mc, "t", "g");
  o.auto_offset_reset = AutoOffsetReset::kError;
  auto c = Consumer::Make(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  WindowOptions wo;
  wo.max_records = 1000;
  wo.max_wait = std::chrono::seconds(2);
  wo.stop_at_end = false;
  Status failed = Status::OK();
  for (int i = 0; i < 10 && failed.ok(); ++i) {
    auto w = (*c)->Poll(wo);
    if (!w.ok()) failed = w.status();
  }
  ASSERT_FALSE(failed.ok()) << "partition 1 has no committed offset to start from";
  EXPECT_EQ(failed.code(), StatusCode::kKafka) << failed.ToString();
  EXPECT_NE(failed.message().find("t[1]"), std::string::npos) << failed.ToString();
  // Nothing of the failed batch is held: closing and destroying the consumer returns
  // (librdkafka's destroy waits for messages still out, so a leak hangs it).
  std::promise<Status> closed;
  std::future<Status> done = closed.get_future();
  std::thread([&closed, consumer = std::move(*c)]() mutable {
    Status st = consumer->Close();
    consumer.reset();
    closed.set_value(st);
  }).detach();
  if (done.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::fprintf(stderr,
                 "FAILED: the consumer did not close within 60 s: messages of the failed "
                 "batch are still held\n");
    std::_Exit(1);
  }
  EXPECT_TRUE(done.get().ok());
}

}  // namespace
}  // namespace kelt
