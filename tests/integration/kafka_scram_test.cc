// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// SASL/SCRAM end-to-end tests against a real Apache Kafka broker with a SCRAM user made
// by scripts/kafka.sh (`start --kafka-version 3.9.1 --scram`, ctest fixture
// `kafka_scram_broker`). The broker's address, user and password come from its env file,
// KELT_KAFKA_SCRAM_ENV.
//
// Why 3.9.1 and not the default 4.1.1 broker: librdkafka before 2.6.1 (Debian 12 ships
// 2.0.2) repeats the client nonce in its SCRAM client-final message (librdkafka#4895).
// Kafka 3.8.1-3.9.x accept that (the nonce only has to end with the server's), Kafka 4.x
// requires it to equal the server's and answers "invalid credentials" even for the right
// password; no broker setting relaxes that check.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "broker_env.h"
#include "kelt/kafka.h"
#include "kelt/log.h"

namespace kelt {
namespace {

std::map<std::string, std::string> ScramEnv() {
  return testing::ReadBrokerEnv("KELT_KAFKA_SCRAM_ENV");
}

std::string Topic(const std::string& base) { return testing::UniqueTopic(base); }

// Every message kelt logs (librdkafka's included) while a test runs.
class LogCapture {
 public:
  LogCapture() {
    SetLogHook(
        [this](LogLevel, std::string_view component, std::string_view message) {
          std::lock_guard<std::mutex> lock(mu_);
          lines_.push_back(std::string(component) + ": " + std::string(message));
        },
        LogLevel::kDebug);
  }
  ~LogCapture() { SetLogHook(nullptr); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::vector<std::string> Lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  // The first line that contains `secret`, or "" when none does.
  std::string LineWith(const std::string& secret) {
    for (const auto& l : Lines())
      if (l.find(secret) != std::string::npos) return l;
    return "";
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

class KafkaScramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = ScramEnv();
    ASSERT_FALSE(env_["KELT_KAFKA_SASL_BOOTSTRAP"].empty())
        << "no SCRAM broker: run through ctest (fixture kafka_scram_broker) or set "
           "KELT_KAFKA_SCRAM_ENV to the env file of `scripts/kafka.sh start "
           "--kafka-version 3.9.1 --scram`";
    ASSERT_FALSE(env_["KELT_KAFKA_SCRAM_USER"].empty());
    ASSERT_FALSE(env_["KELT_KAFKA_SCRAM_PASSWORD"].empty());
  }

  const std::string& Password() { return env_["KELT_KAFKA_SCRAM_PASSWORD"]; }

  std::map<std::string, std::string> Sasl(const std::string& mechanism,
                                          const std::string& password) {
    return {{"security.protocol", "SASL_PLAINTEXT"},
            {"sasl.mechanism", mechanism},
            {"sasl.username", env_["KELT_KAFKA_SCRAM_USER"]},
            {"sasl.password", password}};
  }

  // Said when a right-password login fails: the likely cause.
  std::string BrokerHint() {
    return " (broker: Kafka " + env_["KELT_KAFKA_BROKER_VERSION"] +
           "; librdkafka < 2.6.1 cannot log in with SCRAM to Kafka 4.x, see "
           "librdkafka#4895; start the broker with --kafka-version 3.9.1)";
  }

  std::map<std::string, std::string> env_;
  LogCapture logs_;
};

TEST_F(KafkaScramTest, RightPasswordConsumesWhatAScramProducerWrote) {
  const std::string topic = Topic("scram-roundtrip");
  constexpr int kRecords = 100;
  {
    ProducerOptions po;
    po.brokers = env_["KELT_KAFKA_SASL_BOOTSTRAP"];
    po.topic = topic;  // created on first use (auto.create.topics.enable)
    po.message_timeout_ms = 30000;
    po.properties = Sasl("SCRAM-SHA-512", Password());
    auto producer = Producer::Make(po);
    ASSERT_TRUE(producer.ok()) << producer.status().ToString();
    std::vector<std::pair<std::optional<std::string>, std::string>> msgs;
    for (int i = 0; i < kRecords; ++i) {
      msgs.emplace_back("key-" + std::to_string(i),
                        R"({"id":)" + std::to_string(i) + R"(,"via":"scram"})");
    }
    auto sent = (*producer)->SendRaw(msgs);
    ASSERT_TRUE(sent.ok()) << sent.status().ToString() << BrokerHint();
    ASSERT_EQ(*sent, kRecords);
    ASSERT_TRUE((*producer)->Close().ok());
  }

  ConsumerOptions o;
  o.brokers = env_["KELT_KAFKA_SASL_BOOTSTRAP"];
  o.group_id = Topic("g-scram");
  o.topics = {topic};
  o.session_timeout_ms = 6000;
  o.properties = Sasl("SCRAM-SHA-256", Password());
  auto c = Consumer::Make(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  WindowOptions opts;
  opts.max_records = 1000;
  opts.max_wait = std::chrono::seconds(30);
  auto w = (*c)->Poll(opts);
  ASSERT_TRUE(w.ok()) << w.status().ToString() << BrokerHint();
  ASSERT_EQ(w->size(), static_cast<size_t>(kRecords))
      << "window ended by " << WindowEndName(w->end_reason());
  EXPECT_EQ(w->end_reason(), WindowEnd::kEndOfPartitions);
  std::set<std::string> keys;
  for (size_t i = 0; i < w->size(); ++i) {
    RecordView r = w->record(i, false);
    EXPECT_EQ(r.topic, topic);
    ASSERT_TRUE(r.key.has_value());
    ASSERT_TRUE(r.value.has_value());
    EXPECT_NE(r.value->find(R"("via":"scram")"), std::string_view::npos) << *r.value;
    keys.insert(std::string(*r.key));
  }
  EXPECT_EQ(keys.size(), static_cast<size_t>(kRecords));
  EXPECT_TRUE(keys.count("key-0") && keys.count("key-99"));
  ASSERT_TRUE((*c)->Commit(*w).ok());
  auto lag = (*c)->Lag();
  ASSERT_TRUE(lag.ok()) << lag.status().ToString();
  for (const auto& l : *lag) EXPECT_EQ(l.lag, 0) << ToString(l.tp);
  ASSERT_TRUE((*c)->Close().ok());
  EXPECT_EQ(logs_.LineWith(Password()), "") << "a log line shows the password";
}

TEST_F(KafkaScramTest, WrongPasswordFailsConsumerPollClearlyWithoutShowingIt) {
  const std::string wrong = "not-the-password-7c1e";
  ConsumerOptions o;
  o.brokers = env_["KELT_KAFKA_SASL_BOOTSTRAP"];
  o.group_id = "g-scram-wrong";
  o.topics = {"any"};
  o.properties = Sasl("SCRAM-SHA-256", wrong);
  auto c = Consumer::Make(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  WindowOptions opts;
  opts.max_wait = std::chrono::seconds(30);
  auto start = std::chrono::steady_clock::now();
  auto w = (*c)->Poll(opts);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(w.ok()) << "a wrong password was accepted";
  EXPECT_EQ(w.status().code(), StatusCode::kKafka) << w.status().ToString();
  const std::string& msg = w.status().message();
  EXPECT_NE(msg.find("authentication"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(wrong), std::string::npos) << msg;
  EXPECT_EQ(msg.find(Password()), std::string::npos) << msg;
  // It fails on the broker's answer, not by running out the window's time.
  EXPECT_LT(took, std::chrono::seconds(20));
  EXPECT_EQ(logs_.LineWith(wrong), "") << "a log line shows the password";
}

TEST_F(KafkaScramTest, WrongPasswordFailsProducerSendWithoutShowingIt) {
  const std::string wrong = "not-the-password-52d8";
  ProducerOptions po;
  po.brokers = env_["KELT_KAFKA_SASL_BOOTSTRAP"];
  po.topic = Topic("scram-wrong");
  po.message_timeout_ms = 5000;
  po.properties = Sasl("SCRAM-SHA-512", wrong);
  auto producer = Producer::Make(po);
  ASSERT_TRUE(producer.ok()) << producer.status().ToString();
  auto sent = (*producer)->SendRaw({{"k", R"({"id":1})"}, {"k", R"({"id":2})"}});
  ASSERT_FALSE(sent.ok()) << "a wrong password was accepted";
  EXPECT_EQ(sent.status().code(), StatusCode::kKafka) << sent.status().ToString();
  const std::string& msg = sent.status().message();
  EXPECT_NE(msg.find("authentication"), std::string::npos) << msg;  // the cause, named
  EXPECT_EQ(msg.find(wrong), std::string::npos) << msg;
  EXPECT_EQ(msg.find(Password()), std::string::npos) << msg;
  (void)(*producer)->Close();  // undeliverable messages: Close reports them too
  EXPECT_EQ(logs_.LineWith(wrong), "") << "a log line shows the password";
}

}  // namespace
}  // namespace kelt
