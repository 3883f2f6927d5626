// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// kelt::Admin on librdkafka's mock cluster: listing and describing topics from the
// metadata, argument checks, and an unreachable cluster failing early with its error.
// The mock cluster has no CreateTopics, DeleteTopics, DescribeCluster or ACL requests:
// those run against the real broker (tests/cli/test_topics.py).
#include "kelt/admin.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "kelt/kafka/mock_cluster_testing.h"

namespace kelt {
namespace {

using std::chrono::seconds;

std::unique_ptr<Admin> Open(const MockCluster& mc) {
  auto admin = Admin::Make(mc.bootstraps());
  EXPECT_TRUE(admin.ok()) << admin.status().ToString();
  return admin.ok() ? std::move(admin).ValueOrDie() : nullptr;
}

TEST(AdminTest, ListsTopicsSortedWithTheirPartitions) {
  ASSERT_OK_AND_ASSIGN(auto mc, MockCluster::Make(3));
  ASSERT_OK(mc->CreateTopic("b-topic", 2));
  ASSERT_OK(mc->CreateTopic("a-topic", 5));
  auto admin = Open(*mc);
  ASSERT_TRUE(admin);
  auto topics = admin->ListTopics(seconds(10));
  ASSERT_TRUE(topics.ok()) << topics.status().ToString();
  ASSERT_EQ(topics->size(), 2u);
  EXPECT_EQ((*topics)[0].name, "a-topic");
  EXPECT_EQ((*topics)[0].partitions.size(), 5u);
  EXPECT_EQ((*topics)[1].name, "b-topic");
  EXPECT_EQ((*topics)[1].partitions.size(), 2u);
}

TEST(AdminTest, DescribesPartitionsLeadersReplicasAndIsr) {
  ASSERT_OK_AND_ASSIGN(auto mc, MockCluster::Make(3));
  ASSERT_OK(mc->CreateTopic("t", 4, 3));
  auto admin = Open(*mc);
  ASSERT_TRUE(admin);
  auto topics = admin->DescribeTopics({"t"}, seconds(10));
  ASSERT_TRUE(topics.ok()) << topics.status().ToString();
  ASSERT_EQ(topics->size(), 1u);
  const TopicInfo& t = (*topics)[0];
  EXPECT_EQ(t.name, "t");
  ASSERT_EQ(t.partitions.size(), 4u);
  for (size_t i = 0; i < t.partitions.size(); ++i) {
    const PartitionInfo& p = t.partitions[i];
    EXPECT_EQ(p.id, static_cast<int32_t>(i));
    EXPECT_GE(p.leader, 1);
    EXPECT_EQ(p.replicas.size(), 3u);
    EXPECT_EQ(p.isr.size(), 3u);
    EXPECT_NE(std::find(p.replicas.begin(), p.replicas.end(), p.leader),
              p.replicas.end());
  }
}

TEST(AdminTest, DescribingAMissingTopicIsNotFoundAndDoesNotCreateIt) {
  ASSERT_OK_AND_ASSIGN(auto mc, MockCluster::Make());
  ASSERT_OK(mc->CreateTopic("there", 1));
  auto admin = Open(*mc);
  ASSERT_TRUE(admin);
  auto topics = admin->DescribeTopics({"there", "not-there"}, seconds(10));
  ASSERT_FALSE(topics.ok());
  EXPECT_EQ(topics.status().code(), StatusCode::kNotFound);
  EXPECT_NE(topics.status().message().find("'not-there'"), std::string::npos)
      << topics.status().message();
  auto all = admin->ListTopics(seconds(10));
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].name, "there");
}

TEST(AdminTest, ChecksArgumentsBeforeAskingTheCluster) {
  EXPECT_EQ(Admin::Make("  ").status().code(), StatusCode::kInvalid);
  // Nothing listens on port 1: an answer within the test's time is a local check.
  auto admin = Admin::Make("127.0.0.1:1");
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  const std::vector<std::string> bad_names = {
      "", ".", "..", "a space", "slash/y", std::string(250, 'x')};
  for (const std::string& name : bad_names) {
    auto st = (*admin)->CreateTopics({{name, 1, 1, {}}}, seconds(30)).status();
    EXPECT_EQ(st.code(), StatusCode::kInvalid) << "'" << name << "': " << st.ToString();
    EXPECT_EQ((*admin)->DescribeTopics({name}, seconds(30)).status().code(),
              StatusCode::kInvalid);
    EXPECT_EQ((*admin)->DeleteTopics({name}, seconds(30)).status().code(),
              StatusCode::kInvalid);
  }
  EXPECT_TRUE(ValidateTopicName(std::string(249, 'x')).ok());
  EXPECT_TRUE(ValidateTopicName("a.b_c-D9").ok());
  EXPECT_EQ((*admin)->CreateTopics({{"t", 0, 1, {}}}, seconds(30)).status().code(),
            StatusCode::kInvalid);
  EXPECT_EQ((*admin)->CreateTopics({{"t", 1, 0, {}}}, seconds(30)).status().code(),
            StatusCode::kInvalid);
  EXPECT_EQ((*admin)->CreateTopics({}, seconds(30)).status().code(),
            StatusCode::kInvalid);
  AclBinding acl{"topic", "*", "literal", "User:x", "*", "no-such-operation", "allow"};
  auto st = (*admin)->CreateAcls({acl}, seconds(30));
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_NE(st.message().find("idempotent_write"), std::string::npos) << st.message();
  acl.operation = "Idempotent-Write";
  acl.principal = "nobody";
  st = (*admin)->CreateAcls({acl}, seconds(30));
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_NE(st.message().find("TYPE:NAME"), std::string::npos) << st.message();
}

TEST(AdminTest, BadPropertyNamesThePropertyButNeverASecret) {
  auto st = Admin::Make("localhost:1", {{"no.such.property", "x"}}).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_NE(st.message().find("'no.such.property'"), std::string::npos) << st.message();
  st = Admin::Make("localhost:1", {{"ssl.key.password", "hunter2-secret"},
                                   {"security.protocol", "not-a-protocol-hunter2"}})
           .status();
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.message().find("hunter2-secret"), std::string::npos) << st.message();
}

TEST(AdminTest, AnUnreachableClusterFailsEarlyNamingTheBrokersError) {
  auto admin = Admin::Make("127.0.0.1:1");
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  auto t0 = std::chrono::steady_clock::now();
  auto topics = (*admin)->ListTopics(seconds(60));
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(topics.ok());
  EXPECT_EQ(topics.status().code(), StatusCode::kKafka);
  EXPECT_NE(topics.status().message().find("127.0.0.1:1"), std::string::npos)
      << topics.status().message();
  EXPECT_NE(topics.status().message().find("refused"), std::string::npos)
      << topics.status().message();
  EXPECT_LT(took, seconds(20));
}

TEST(AdminTest, AMockBrokerThatNeverAnswersTimesOutWithinTheCallsTime) {
  ASSERT_OK_AND_ASSIGN(auto mc, MockCluster::Make());
  ASSERT_OK(mc->CreateTopic("t", 1));
  // The mock cluster does not implement CreateTopics: the request is never answered.
  auto admin = Open(*mc);
  ASSERT_TRUE(admin);
  auto t0 = std::chrono::steady_clock::now();
  auto outcomes = admin->CreateTopics({{"new-topic", 1, 1, {}}}, seconds(2));
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(outcomes.ok());
  EXPECT_NE(outcomes.status().message().find("within 2 s"), std::string::npos)
      << outcomes.status().message();
  EXPECT_LT(took, seconds(10));
}

}  // namespace
}  // namespace kelt
