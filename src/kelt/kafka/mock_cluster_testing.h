// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Test helpers over kelt::MockCluster (include/kelt/mock_cluster.h, librdkafka's
// in-process mock cluster): consumer options for it and a producer of {"id":i} records.
// A test starts its cluster with
//   ASSERT_OK_AND_ASSIGN(auto mc, MockCluster::Make());
// (or StartMockCluster() where a value is needed, e.g. a fixture's member).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kelt/kafka.h"
#include "kelt/mock_cluster.h"
#include "kelt/testing/assertions.h"

namespace kelt {

// A started cluster of `brokers` brokers; aborts the test binary if it cannot start.
inline std::unique_ptr<MockCluster> StartMockCluster(int brokers = 1) {
  auto mc = MockCluster::Make(brokers);
  if (!mc.ok()) {
    ADD_FAILURE() << "mock cluster: " << mc.status().ToString();
    std::abort();
  }
  return std::move(*mc);
}

// Options of a member of `group` on the mock cluster, under `protocol`. The consumer
// protocol's session and heartbeat are the cluster's: 6 s and 500 ms, as classic's here
// (left at the mock's defaults with a librdkafka before 2.11).
inline ConsumerOptions ConsumerFor(MockCluster& mc, const std::string& topic,
                                   const std::string& group,
                                   GroupProtocol protocol = GroupProtocol::kClassic) {
  ConsumerOptions o;
  o.brokers = mc.bootstraps();
  o.group_id = group;
  o.topics = {topic};
  o.group_protocol = protocol;
  if (protocol == GroupProtocol::kClassic) {
    o.session_timeout_ms = 6000;
    o.properties["heartbeat.interval.ms"] = "500";
  } else {
    Status st = mc.SetGroupConsumerTimings(std::chrono::milliseconds(6000),
                                           std::chrono::milliseconds(500));
    if (!st.ok() && st.code() != StatusCode::kNotImplemented)
      ADD_FAILURE() << st.ToString();
  }
  return o;
}

// Produce these messages (key, value) and check every one was delivered.
inline void ProduceRaw(
    const MockCluster& mc, const std::string& topic,
    const std::vector<std::pair<std::optional<std::string>, std::string>>& msgs) {
  ProducerOptions po;
  po.brokers = mc.bootstraps();
  po.topic = topic;
  ASSERT_OK_AND_ASSIGN(auto producer, Producer::Make(po));
  ASSERT_OK_AND_ASSIGN(auto sent, producer->SendRaw(msgs));
  ASSERT_EQ(sent, static_cast<int64_t>(msgs.size()));
}

// Produce `n` JSON records {"id":i} with keys "k<i>", i = from .. from+n-1.
inline void ProduceIds(const MockCluster& mc, const std::string& topic, int from, int n) {
  std::vector<std::pair<std::optional<std::string>, std::string>> msgs;
  for (int i = from; i < from + n; ++i) {
    msgs.emplace_back("k" + std::to_string(i), "{\"id\":" + std::to_string(i) + "}");
  }
  ProduceRaw(mc, topic, msgs);
}

// Each test has its own mock cluster; most read a topic of {"id":i} records through a
// member of one group.
class MockClusterTest : public ::testing::Test {
 protected:
  // The cluster, started on first use (one broker unless UseBrokers came first).
  MockCluster& mc() {
    if (!mc_) mc_ = StartMockCluster();
    return *mc_;
  }
  // Start the cluster with `brokers` brokers (before anything uses it).
  void UseBrokers(int brokers) { mc_ = StartMockCluster(brokers); }

  // Create `topic` with `partitions` partitions and produce records {"id":0} to
  // {"id":records-1} to it.
  void CreateTopic(const std::string& topic, int partitions, int records = 0) {
    ASSERT_OK(mc().CreateTopic(topic, partitions));
    if (records > 0) ProduceIds(mc(), topic, 0, records);
  }
  // A member of `group` reading `topic`.
  Result<std::unique_ptr<Consumer>> Join(
      const std::string& topic, const std::string& group,
      GroupProtocol protocol = GroupProtocol::kClassic) {
    return Consumer::Make(ConsumerFor(mc(), topic, group, protocol));
  }
  // The cluster answers the next requests of `api` with `errors`, in turn.
  void PushRequestErrors(KafkaApi api, const std::vector<KafkaErrorCode>& errors) {
    mc().PushRequestErrors(api, errors);
  }

 private:
  std::unique_ptr<MockCluster> mc_;
};

}  // namespace kelt
