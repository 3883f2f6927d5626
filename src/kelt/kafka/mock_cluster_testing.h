// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Test helpers over librdkafka's in-process mock cluster: a cluster, consumer options
// for it, and a producer of {"id":i} records.
#pragma once

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kelt/kafka.h"
#include "kelt/testing/assertions.h"

namespace kelt {

class MockCluster {
 public:
  explicit MockCluster(int brokers = 1) {
    char errstr[256];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    mc_ = rd_kafka_mock_cluster_new(rk_, brokers);
  }
  ~MockCluster() {
    rd_kafka_mock_cluster_destroy(mc_);
    rd_kafka_destroy(rk_);
  }
  std::string bootstraps() const { return rd_kafka_mock_cluster_bootstraps(mc_); }
  void CreateTopic(const std::string& name, int partitions) {
    ASSERT_EQ(rd_kafka_mock_topic_create(mc_, name.c_str(), partitions, 1),
              RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  rd_kafka_mock_cluster_t* get() const { return mc_; }

 private:
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_mock_cluster_t* mc_ = nullptr;
};

// The mock cluster's KIP-848 settings (in librdkafka 2.11's archive, not in the
// rdkafka_mock.h that confluent-kafka-go ships with it; a system librdkafka before 2.11,
// the fallback build, may not have them).
#if RD_KAFKA_VERSION >= 0x020b0000
extern "C" void rd_kafka_mock_set_group_consumer_session_timeout_ms(
    rd_kafka_mock_cluster_t* mcluster, int group_consumer_session_timeout_ms);
extern "C" void rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(
    rd_kafka_mock_cluster_t* mcluster, int group_consumer_heartbeat_interval_ms);
#define KELT_MOCK_HAS_KIP848 1
#endif

// Options of a member of `group` on the mock cluster, under `protocol`. The consumer
// protocol's session and heartbeat are the cluster's: 6 s and 500 ms, as classic's here.
inline ConsumerOptions ConsumerFor(const MockCluster& mc, const std::string& topic,
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
#ifdef KELT_MOCK_HAS_KIP848
    rd_kafka_mock_set_group_consumer_session_timeout_ms(mc.get(), 6000);
    rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(mc.get(), 500);
#endif
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

// Produce `n` JSON records {"id":i} with keys "k<i>"; return them by id.
inline void ProduceIds(const MockCluster& mc, const std::string& topic, int from, int n) {
  std::vector<std::pair<std::optional<std::string>, std::string>> msgs;
  for (int i = from; i < from + n; ++i) {
    msgs.emplace_back("k" + std::to_string(i), "{\"id\":" + std::to_string(i) + "}");
  }
  ProduceRaw(mc, topic, msgs);
}

}  // namespace kelt
