// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// End-to-end tests against a real Apache Kafka broker (KRaft, started by
// scripts/kafka.sh through the ctest fixture `kafka_broker`). The broker's address comes
// from its env file, KELT_KAFKA_ENV.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "broker_env.h"
#include "kelt/kafka.h"
#include "kelt/load.h"
#include "kelt/rdp.h"

namespace kelt {
namespace {

std::map<std::string, std::string> BrokerEnv() {
  return testing::ReadBrokerEnv("KELT_KAFKA_ENV");
}

std::string Bootstrap() { return BrokerEnv()["KELT_KAFKA_BOOTSTRAP"]; }

std::string Topic(const std::string& base) { return testing::UniqueTopic(base); }

void CreateTopic(const std::string& name, int partitions) {
  std::string cmd =
      std::string("bash ") + KELT_SOURCE_DIR + "/scripts/kafka.sh create-topic " + name +
      " " + std::to_string(partitions) + " --dir " + KELT_KAFKA_DIR + " >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

int64_t Produce(const std::string& topic, int from, int n) {
  ProducerOptions po;
  po.brokers = Bootstrap();
  po.topic = topic;
  auto producer = Producer::Make(po);
  EXPECT_TRUE(producer.ok()) << producer.status().ToString();
  std::vector<std::pair<std::optional<std::string>, std::string>> msgs;
  msgs.reserve(static_cast<size_t>(n));
  for (int i = from; i < from + n; ++i) {
    msgs.emplace_back("key-" + std::to_string(i), R"({"id":)" + std::to_string(i) +
                                                      R"(,"name":"row )" +
                                                      std::to_string(i) + R"("})");
  }
  auto sent = (*producer)->SendRaw(msgs);
  EXPECT_TRUE(sent.ok()) << sent.status().ToString();
  return sent.ok() ? *sent : -1;
}

ConsumerOptions Options(const std::string& topic, const std::string& group) {
  ConsumerOptions o;
  o.brokers = Bootstrap();
  o.group_id = group;
  o.topics = {topic};
  o.session_timeout_ms = 6000;
  return o;
}

using Offsets = std::multiset<std::pair<int32_t, int64_t>>;

void Collect(const Window& w, Offsets* seen) {
  for (size_t i = 0; i < w.size(); ++i) {
    RecordView r = w.record(i, false);
    seen->insert({r.partition, r.offset});
  }
}

class KafkaBrokerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(Bootstrap().empty())
        << "no broker: run through ctest (fixture kafka_broker) or set KELT_KAFKA_ENV";
  }
};

TEST_F(KafkaBrokerTest, CommittedWindowsResumeExactlyAfterRestart) {
  const std::string topic = Topic("e2e-resume");
  CreateTopic(topic, 4);
  constexpr int kRecords = 5000;
  ASSERT_EQ(Produce(topic, 0, kRecords), kRecords);

  WindowOptions opts;
  opts.max_records = 700;
  opts.max_wait = std::chrono::seconds(20);
  Offsets first;
  {
    auto c = Consumer::Make(Options(topic, "g-resume"));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    for (int i = 0; i < 3; ++i) {
      auto w = (*c)->Poll(opts);
      ASSERT_TRUE(w.ok()) << w.status().ToString();
      ASSERT_EQ(w->size(), 700u);
      Collect(*w, &first);
      ASSERT_TRUE((*c)->Commit(*w).ok());
    }
    auto uncommitted = (*c)->Poll(opts);  // read, never made durable
    ASSERT_TRUE(uncommitted.ok());
    ASSERT_TRUE((*c)->Close().ok());
  }
  auto c = Consumer::Make(Options(topic, "g-resume"));
  ASSERT_TRUE(c.ok());
  Offsets rest;
  for (int i = 0; i < 100; ++i) {
    auto w = (*c)->Poll(opts);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    Collect(*w, &rest);
    ASSERT_TRUE((*c)->Commit(*w).ok());
    if (w->empty() && w->end_reason() == WindowEnd::kEndOfPartitions) break;
  }
  EXPECT_EQ(rest.size(), static_cast<size_t>(kRecords - 2100));
  for (const auto& o : first)
    EXPECT_EQ(rest.count(o), 0u) << "re-read a committed record";
  std::set<std::pair<int32_t, int64_t>> all(first.begin(), first.end());
  all.insert(rest.begin(), rest.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(kRecords));
  auto lag = (*c)->Lag();
  ASSERT_TRUE(lag.ok());
  for (const auto& l : *lag) EXPECT_EQ(l.lag, 0) << ToString(l.tp);
}

TEST_F(KafkaBrokerTest, CatchUpStopsAtTheSnapshotWhileAProducerKeepsWriting) {
  const std::string topic = Topic("e2e-catchup");
  CreateTopic(topic, 3);
  ASSERT_EQ(Produce(topic, 0, 3000), 3000);
  auto c = Consumer::Make(Options(topic, "g-catchup"));
  ASSERT_TRUE(c.ok());
  WindowOptions opts;
  opts.max_records = 100;
  opts.max_wait = std::chrono::seconds(20);
  Offsets seen;
  auto first = (*c)->Poll(opts);  // joins the group
  ASSERT_TRUE(first.ok());
  Collect(*first, &seen);
  ASSERT_EQ((*c)->Assignment().size(), 3u);
  ASSERT_TRUE((*c)->StartCatchUp().ok());

  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int batch = 0; !stop && batch < 200; ++batch)
      Produce(topic, 100000 + batch * 50, 50);
  });
  opts.max_records = 500;
  for (int i = 0; i < 200 && !(*c)->caught_up(); ++i) {
    auto w = (*c)->Poll(opts);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    Collect(*w, &seen);
    ASSERT_TRUE((*c)->Commit(*w).ok());
  }
  stop = true;
  writer.join();
  EXPECT_TRUE((*c)->caught_up());
  EXPECT_EQ(seen.size(), 3000u);  // exactly the snapshot, nothing the writer added
}

TEST_F(KafkaBrokerTest, RdpStatelessCallsAdvanceAndDoNotWaitOnADrainedTopic) {
  const std::string topic = Topic("e2e-rdp");
  CreateTopic(topic, 2);
  ASSERT_EQ(Produce(topic, 0, 10), 10);
  std::string config = R"({"brokers":")" + Bootstrap() +
                       R"(","group_id":"g-rdp","topic":")" + topic +
                       R"(","max_records":500})";
  auto call = rdp::ParseConsumerConfigJson(config);
  ASSERT_TRUE(call.ok()) << call.status().ToString();
  Schema landing({{"id", TypeId::kInt64},
                  {"name", TypeId::kUtf8},
                  {"_kafka_offset", TypeId::kInt64},
                  {"_kafka_partition", TypeId::kInt64}});
  auto landed = rdp::PollKafkaWindowLoaded(*call, landing);
  ASSERT_TRUE(landed.ok()) << landed.status().ToString();
  EXPECT_EQ(landed->batch->num_rows(), 10);
  // The same group again: everything was committed, and a drained topic answers at once
  // (RDP waited 15 s here).
  auto start = std::chrono::steady_clock::now();
  auto again = rdp::PollKafkaWindow(*call);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->empty());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(12));
}

TEST_F(KafkaBrokerTest, ExtractLoadExampleLandsEveryRecord) {
  const std::string topic = Topic("e2e-example");
  CreateTopic(topic, 3);
  ASSERT_EQ(Produce(topic, 0, 2500), 2500);
  std::string cmd = std::string(KELT_EXAMPLE_EXTRACT_LOAD) + " " + Bootstrap() + " " +
                    topic + " g-example";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  ASSERT_EQ(pclose(pipe), 0) << out;
  EXPECT_NE(out.find("landed 2500 rows"), std::string::npos) << out;
}

TEST_F(KafkaBrokerTest, EltParquetExampleLandsOnceAndResumesFromTheFiles) {
  const std::string topic = Topic("e2e-elt-parquet");
  CreateTopic(topic, 2);
  ASSERT_EQ(Produce(topic, 0, 1200), 1200);
  char tmpl[] = "/tmp/kelt-elt-example-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  auto run = [&](const std::string& group) {
    std::string cmd = std::string(KELT_EXAMPLE_ELT_PARQUET) + " " + Bootstrap() + " " +
                      topic + " " + group + " " + dir + "/landing 2>&1";
    FILE* pipe = popen(cmd.c_str(), "r");
    EXPECT_NE(pipe, nullptr);
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
    EXPECT_EQ(pclose(pipe), 0) << out;
    return out;
  };
  std::string first = run("g-elt-example");
  EXPECT_NE(first.find("landed 1200 rows from 1200 records"), std::string::npos) << first;
  // A new group: the files, not the group offsets, say where to resume.
  std::string second = run("g-elt-example-2");
  EXPECT_NE(second.find("landed 0 rows from 0 records"), std::string::npos) << second;
  int files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir + "/landing")) {
    if (e.is_regular_file()) ++files;
  }
  EXPECT_EQ(files, 2);  // one rotation per partition
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kelt
