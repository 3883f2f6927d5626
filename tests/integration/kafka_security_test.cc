// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Security end-to-end tests against a real Apache Kafka 4.x broker started by
// scripts/kafka.sh (`start --secure`, ctest fixture `kafka_scram_broker`): SASL/SCRAM
// over plaintext and over TLS, mutual TLS with a client certificate, an authorizer with
// ACLs. The broker's addresses, users, passwords and PEM files come from its env file,
// KELT_KAFKA_SCRAM_ENV. Each login failure must end quickly, name its cause, land and
// commit nothing, and never show a secret.
//
// (kelt used to run these against Kafka 3.9.1: librdkafka before 2.6.1 repeated the
// client nonce in its SCRAM client-final message, which Kafka 4.x rejects,
// librdkafka#4895. kelt's librdkafka is 2.11.1 now.)
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "broker_env.h"
#include "kelt/elt.h"
#include "kelt/kafka.h"
#include "kelt/log.h"
#include "kelt/schema.h"
#include "kelt/sink.h"
#include "kelt/testing/assertions.h"

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

class KafkaSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = ScramEnv();
    ASSERT_FALSE(env_["KELT_KAFKA_SASL_BOOTSTRAP"].empty())
        << "no secure broker: run through ctest (fixture kafka_scram_broker) or set "
           "KELT_KAFKA_SCRAM_ENV to the env file of `scripts/kafka.sh start --secure`";
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
    return " (broker: Kafka " + env_["KELT_KAFKA_BROKER_VERSION"] + ", librdkafka " +
           KafkaClientVersion() + ")";
  }

  // SASL_SSL with SCRAM, trusting `ca` (the test CA unless given).
  std::map<std::string, std::string> SaslSsl(const std::string& mechanism,
                                             const std::string& user,
                                             const std::string& password,
                                             std::string ca = "") {
    return {{"security.protocol", "SASL_SSL"},
            {"sasl.mechanism", mechanism},
            {"sasl.username", user},
            {"sasl.password", password},
            {"ssl.ca.location", ca.empty() ? env_["KELT_KAFKA_CA_PEM"] : ca}};
  }
  // Mutual TLS: the client certificate of principal "kelt".
  std::map<std::string, std::string> MutualTls(std::string ca = "") {
    return {{"security.protocol", "SSL"},
            {"ssl.ca.location", ca.empty() ? env_["KELT_KAFKA_CA_PEM"] : ca},
            {"ssl.certificate.location", env_["KELT_KAFKA_CLIENT_CERT_PEM"]},
            {"ssl.key.location", env_["KELT_KAFKA_CLIENT_KEY_PEM"]}};
  }

  // `n` JSON records {"id": i} into a new topic over the PLAINTEXT listener.
  std::string ProduceTopic(const std::string& base, int n) {
    const std::string topic = Topic(base);
    ProducerOptions po;
    po.brokers = env_["KELT_KAFKA_BOOTSTRAP"];
    po.topic = topic;
    po.message_timeout_ms = 30000;
    auto producer = Producer::Make(po);
    EXPECT_OK(producer);
    if (!producer.ok()) return topic;
    std::vector<std::pair<std::optional<std::string>, std::string>> msgs;
    for (int i = 0; i < n; ++i)
      msgs.emplace_back(std::nullopt, R"({"id":)" + std::to_string(i) + "}");
    auto sent = (*producer)->SendRaw(msgs);
    EXPECT_OK(sent);
    if (sent.ok()) {
      EXPECT_EQ(*sent, n);
    }
    EXPECT_OK((*producer)->Close());
    return topic;
  }

  // The ELT loop into Parquet under `root`, catching up with `properties`.
  Result<EltStats> Land(const std::string& topic, const std::string& group,
                        const std::map<std::string, std::string>& properties,
                        const std::string& root) {
    EltOptions o;
    o.consumer.brokers = properties.at("security.protocol") == "SSL"
                             ? env_["KELT_KAFKA_SSL_BOOTSTRAP"]
                             : env_["KELT_KAFKA_SASL_SSL_BOOTSTRAP"];
    o.consumer.group_id = group;
    o.consumer.topics = {topic};
    o.consumer.properties = properties;
    o.until_caught_up = true;
    o.assignment_timeout = std::chrono::seconds(20);
    KELT_ASSIGN_OR_RAISE(
        o.landing, ParseSchemaJson(R"({"fields":[{"name":"id","data_type":"Int64"}]})"));
    ParquetSinkOptions po;
    po.root = root;
    std::vector<std::unique_ptr<Sink>> sinks;
    KELT_ASSIGN_OR_RAISE(auto sink, MakeParquetSink(po));
    sinks.push_back(std::move(sink));
    KELT_ASSIGN_OR_RAISE(auto loop, EltLoop::Make(std::move(o), std::move(sinks)));
    auto stats = loop->Run();
    Status closed = loop->Close();
    if (!stats.ok()) return stats.status();
    KELT_RETURN_NOT_OK(closed);
    return loop->stats();
  }

  // The group's committed offsets, read over PLAINTEXT (super user): -1 when none.
  int64_t CommittedTotal(const std::string& topic, const std::string& group) {
    ConsumerOptions o;
    o.brokers = env_["KELT_KAFKA_BOOTSTRAP"];
    o.group_id = group;
    o.topics = {topic};
    auto c = Consumer::Make(o);
    EXPECT_OK(c);
    if (!c.ok()) return -2;
    WindowOptions wo;
    wo.max_records = 1;
    wo.max_wait = std::chrono::seconds(10);
    // Poll until assigned (the committed offsets are asked for the assignment).
    for (int i = 0; i < 20 && (*c)->Assignment().empty(); ++i) {
      auto w = (*c)->Poll(wo);
      EXPECT_OK(w);
      (void)(*c)->Rewind(*w);
    }
    auto committed = (*c)->Committed();
    EXPECT_OK(committed);
    int64_t total = -1;
    if (committed.ok()) {
      for (const auto& [tp, off] : *committed) {
        if (off >= 0) total = std::max<int64_t>(total, 0) + off;
      }
    }
    (void)(*c)->Close();
    return total;
  }

  // Every secret of the env file, for the "never shown" checks.
  std::vector<std::string> Secrets() {
    return {env_["KELT_KAFKA_SCRAM_PASSWORD"], env_["KELT_KAFKA_DENIED_PASSWORD"]};
  }
  void ExpectNoSecretIn(const std::string& text) {
    for (const auto& secret : Secrets()) {
      if (secret.empty()) continue;
      EXPECT_EQ(text.find(secret), std::string::npos) << "a secret shows in: " << text;
      EXPECT_EQ(logs_.LineWith(secret), "") << "a log line shows a secret";
    }
  }

  std::map<std::string, std::string> env_;
  LogCapture logs_;
};

TEST_F(KafkaSecurityTest, RightPasswordConsumesWhatAScramProducerWrote) {
  const std::string topic = Topic("scram-roundtrip");
  constexpr int kRecords = 100;
  {
    ProducerOptions po;
    po.brokers = env_["KELT_KAFKA_SASL_BOOTSTRAP"];
    po.topic = topic;  // created on first use (auto.create.topics.enable)
    po.message_timeout_ms = 30000;
    po.properties = Sasl("SCRAM-SHA-512", Password());
    ASSERT_OK_AND_ASSIGN(auto producer, Producer::Make(po));
    std::vector<std::pair<std::optional<std::string>, std::string>> msgs;
    for (int i = 0; i < kRecords; ++i) {
      msgs.emplace_back("key-" + std::to_string(i),
                        R"({"id":)" + std::to_string(i) + R"(,"via":"scram"})");
    }
    auto sent = producer->SendRaw(msgs);
    ASSERT_OK(sent) << BrokerHint();
    ASSERT_EQ(*sent, kRecords);
    ASSERT_OK(producer->Close());
  }

  ConsumerOptions o;
  o.brokers = env_["KELT_KAFKA_SASL_BOOTSTRAP"];
  o.group_id = Topic("g-scram");
  o.topics = {topic};
  o.session_timeout_ms = 6000;
  o.properties = Sasl("SCRAM-SHA-256", Password());
  ASSERT_OK_AND_ASSIGN(auto c, Consumer::Make(o));
  WindowOptions opts;
  opts.max_records = 1000;
  opts.max_wait = std::chrono::seconds(30);
  auto w = c->Poll(opts);
  ASSERT_OK(w) << BrokerHint();
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
  ASSERT_OK(c->Commit(*w));
  ASSERT_OK_AND_ASSIGN(auto lag, c->Lag());
  for (const auto& l : lag) EXPECT_EQ(l.lag, 0) << ToString(l.tp);
  ASSERT_OK(c->Close());
  EXPECT_EQ(logs_.LineWith(Password()), "") << "a log line shows the password";
}

TEST_F(KafkaSecurityTest, WrongPasswordFailsConsumerPollClearlyWithoutShowingIt) {
  const std::string wrong = "not-the-password-7c1e";
  ConsumerOptions o;
  o.brokers = env_["KELT_KAFKA_SASL_BOOTSTRAP"];
  o.group_id = "g-scram-wrong";
  o.topics = {"any"};
  o.properties = Sasl("SCRAM-SHA-256", wrong);
  ASSERT_OK_AND_ASSIGN(auto c, Consumer::Make(o));
  WindowOptions opts;
  opts.max_wait = std::chrono::seconds(30);
  auto start = std::chrono::steady_clock::now();
  auto w = c->Poll(opts);
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

TEST_F(KafkaSecurityTest, WrongPasswordFailsProducerSendWithoutShowingIt) {
  const std::string wrong = "not-the-password-52d8";
  ProducerOptions po;
  po.brokers = env_["KELT_KAFKA_SASL_BOOTSTRAP"];
  po.topic = Topic("scram-wrong");
  po.message_timeout_ms = 5000;
  po.properties = Sasl("SCRAM-SHA-512", wrong);
  ASSERT_OK_AND_ASSIGN(auto producer, Producer::Make(po));
  auto sent = producer->SendRaw({{"k", R"({"id":1})"}, {"k", R"({"id":2})"}});
  ASSERT_FALSE(sent.ok()) << "a wrong password was accepted";
  EXPECT_EQ(sent.status().code(), StatusCode::kKafka) << sent.status().ToString();
  const std::string& msg = sent.status().message();
  EXPECT_NE(msg.find("authentication"), std::string::npos) << msg;  // the cause, named
  EXPECT_EQ(msg.find(wrong), std::string::npos) << msg;
  EXPECT_EQ(msg.find(Password()), std::string::npos) << msg;
  (void)producer->Close();  // undeliverable messages: Close reports them too
  EXPECT_EQ(logs_.LineWith(wrong), "") << "a log line shows the password";
}

// --- over TLS
// ----------------------------------------------------------------------------

// Published Parquet files under `root` (0 when there is none).
int64_t LandedFiles(const std::string& root) {
  int64_t files = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (it->is_regular_file() && name.ends_with(".parquet") && name[0] != '.') ++files;
  }
  return files;
}

std::string TempRoot(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("kelt-sec-" + Topic(name));
  std::filesystem::remove_all(dir);
  return dir.string();
}

TEST_F(KafkaSecurityTest, SaslSslLandsAndCommitsWithBothScramMechanisms) {
  for (const std::string mechanism : {"SCRAM-SHA-256", "SCRAM-SHA-512"}) {
    SCOPED_TRACE(mechanism);
    const std::string topic = ProduceTopic("sasl-ssl", 300);
    const std::string group = Topic("g-sasl-ssl");
    const std::string root = TempRoot("sasl-ssl");
    auto stats =
        Land(topic, group, SaslSsl(mechanism, env_["KELT_KAFKA_SCRAM_USER"], Password()),
             root);
    ASSERT_OK(stats) << BrokerHint();
    EXPECT_TRUE(stats->caught_up);
    EXPECT_EQ(stats->rows, 300);
    EXPECT_GT(LandedFiles(root), 0);
    EXPECT_EQ(CommittedTotal(topic, group), 300);
    std::filesystem::remove_all(root);
  }
  ExpectNoSecretIn("");
}

TEST_F(KafkaSecurityTest, MutualTlsLandsAndCommitsAsTheCertificatesPrincipal) {
  const std::string topic = ProduceTopic("mtls", 250);
  const std::string group = Topic("g-mtls");
  const std::string root = TempRoot("mtls");
  auto stats = Land(topic, group, MutualTls(), root);
  ASSERT_OK(stats) << BrokerHint();
  EXPECT_EQ(stats->rows, 250);
  EXPECT_EQ(CommittedTotal(topic, group), 250);
  std::filesystem::remove_all(root);
}

// Each refused login ends the run quickly with its cause, landing and committing nothing.
TEST_F(KafkaSecurityTest, RefusedLoginsEndQuicklyNamingTheCauseWithNothingLanded) {
  const std::string topic = ProduceTopic("refused", 50);
  const std::string wrong = "not-the-password-9f3a";
  const std::vector<std::pair<std::string, std::map<std::string, std::string>>> cases = {
      {"wrong password", SaslSsl("SCRAM-SHA-512", env_["KELT_KAFKA_SCRAM_USER"], wrong)},
      {"untrusted broker certificate",
       SaslSsl("SCRAM-SHA-512", env_["KELT_KAFKA_SCRAM_USER"], Password(),
               env_["KELT_KAFKA_OTHER_CA_PEM"])},
      {"untrusted broker certificate (mutual TLS)",
       MutualTls(env_["KELT_KAFKA_OTHER_CA_PEM"])},
      {"principal without ACLs", SaslSsl("SCRAM-SHA-256", env_["KELT_KAFKA_DENIED_USER"],
                                         env_["KELT_KAFKA_DENIED_PASSWORD"])},
  };
  const std::map<std::string, std::vector<std::string>> causes = {
      {"wrong password", {"authentication"}},
      {"untrusted broker certificate", {"certificate", "ssl"}},
      {"untrusted broker certificate (mutual TLS)", {"certificate", "ssl"}},
      {"principal without ACLs", {"authoriz"}},
  };
  for (const auto& [name, props] : cases) {
    SCOPED_TRACE(name);
    const std::string group = Topic("g-refused");
    const std::string root = TempRoot("refused");
    const auto start = std::chrono::steady_clock::now();
    auto stats = Land(topic, group, props, root);
    const auto took = std::chrono::steady_clock::now() - start;
    ASSERT_FALSE(stats.ok()) << "the run succeeded";
    std::string msg = stats.status().message();
    std::string lower = msg;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    bool named = false;
    for (const auto& cause : causes.at(name))
      named |= lower.find(cause) != std::string::npos;
    EXPECT_TRUE(named) << msg;
    EXPECT_LT(took, std::chrono::seconds(15)) << msg;
    EXPECT_EQ(LandedFiles(root), 0);
    EXPECT_EQ(CommittedTotal(topic, group), -1);
    EXPECT_EQ(msg.find(wrong), std::string::npos) << msg;
    ExpectNoSecretIn(msg);
    EXPECT_EQ(logs_.LineWith(wrong), "");
    std::filesystem::remove_all(root);
  }
}

}  // namespace
}  // namespace kelt
