// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// End-to-end tests against a real Apache Kafka broker (KRaft, started by
// scripts/kafka.sh through the ctest fixture `kafka_broker`). The broker's address comes
// from its env file, KELT_KAFKA_ENV.
#include <arrow/api.h>
#include <arrow/csv/api.h>
#include <arrow/io/file.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "broker_env.h"
#include "kelt/elt.h"
#include "kelt/kafka.h"
#include "kelt/load.h"
#include "kelt/poll_load.h"
#include "kelt/rdp.h"
#include "kelt/sink.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

std::map<std::string, std::string> BrokerEnv() {
  return testing::ReadBrokerEnv("KELT_KAFKA_ENV");
}

std::string Bootstrap() { return BrokerEnv()["KELT_KAFKA_BOOTSTRAP"]; }

std::string Topic(const std::string& base) { return testing::UniqueTopic(base); }

void CreateTopic(const std::string& name, int partitions) {
  std::string cmd;
  ASSERT_EQ(testing::CreateTopic(name, partitions, KELT_SOURCE_DIR, KELT_KAFKA_DIR, &cmd),
            0)
      << cmd;
}

int64_t Produce(const std::string& topic, int from, int n,
                const std::map<std::string, std::string>& properties = {}) {
  ProducerOptions po;
  po.brokers = Bootstrap();
  po.topic = topic;
  po.properties = properties;
  auto producer = Producer::Make(po);
  EXPECT_OK(producer);
  std::vector<std::pair<std::optional<std::string>, std::string>> msgs;
  msgs.reserve(static_cast<size_t>(n));
  for (int i = from; i < from + n; ++i) {
    msgs.emplace_back("key-" + std::to_string(i), R"({"id":)" + std::to_string(i) +
                                                      R"(,"name":"row )" +
                                                      std::to_string(i) + R"("})");
  }
  auto sent = (*producer)->SendRaw(msgs);
  EXPECT_OK(sent);
  return sent.ok() ? *sent : -1;
}

ConsumerOptions Options(const std::string& topic, const std::string& group,
                        GroupProtocol protocol = GroupProtocol::kClassic) {
  ConsumerOptions o;
  o.brokers = Bootstrap();
  o.group_id = group;
  o.topics = {topic};
  o.group_protocol = protocol;
  // KIP-848's session timeout is the broker's (10 s on the test broker).
  if (protocol == GroupProtocol::kClassic) o.session_timeout_ms = 6000;
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

// The rebalance tests run under both group protocols.
class KafkaBrokerProtocolTest : public KafkaBrokerTest,
                                public ::testing::WithParamInterface<GroupProtocol> {};
INSTANTIATE_TEST_SUITE_P(Protocols, KafkaBrokerProtocolTest,
                         ::testing::Values(GroupProtocol::kClassic,
                                           GroupProtocol::kConsumer),
                         [](const auto& info) {
                           return std::string(GroupProtocolName(info.param));
                         });

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
    ASSERT_OK_AND_ASSIGN(auto c, Consumer::Make(Options(topic, "g-resume")));
    for (int i = 0; i < 3; ++i) {
      ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
      ASSERT_EQ(w.size(), 700u);
      Collect(w, &first);
      ASSERT_OK(c->Commit(w));
    }
    ASSERT_OK(c->Poll(opts));  // read, never made durable
    ASSERT_OK(c->Close());
  }
  ASSERT_OK_AND_ASSIGN(auto c, Consumer::Make(Options(topic, "g-resume")));
  Offsets rest;
  for (int i = 0; i < 100; ++i) {
    ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
    Collect(w, &rest);
    ASSERT_OK(c->Commit(w));
    if (w.empty() && w.end_reason() == WindowEnd::kEndOfPartitions) break;
  }
  EXPECT_EQ(rest.size(), static_cast<size_t>(kRecords - 2100));
  for (const auto& o : first)
    EXPECT_EQ(rest.count(o), 0u) << "re-read a committed record";
  std::set<std::pair<int32_t, int64_t>> all(first.begin(), first.end());
  all.insert(rest.begin(), rest.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(kRecords));
  ASSERT_OK_AND_ASSIGN(auto lag, c->Lag());
  for (const auto& l : lag) EXPECT_EQ(l.lag, 0) << ToString(l.tp);
}

TEST_F(KafkaBrokerTest, CatchUpStopsAtTheSnapshotWhileAProducerKeepsWriting) {
  const std::string topic = Topic("e2e-catchup");
  CreateTopic(topic, 3);
  ASSERT_EQ(Produce(topic, 0, 3000), 3000);
  ASSERT_OK_AND_ASSIGN(auto c, Consumer::Make(Options(topic, "g-catchup")));
  WindowOptions opts;
  opts.max_records = 100;
  opts.max_wait = std::chrono::seconds(20);
  Offsets seen;
  ASSERT_OK_AND_ASSIGN(auto first, c->Poll(opts));  // joins the group
  Collect(first, &seen);
  ASSERT_EQ(c->Assignment().size(), 3u);
  ASSERT_OK(c->StartCatchUp());

  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int batch = 0; !stop && batch < 200; ++batch)
      Produce(topic, 100000 + batch * 50, 50);
  });
  opts.max_records = 500;
  for (int i = 0; i < 200 && !c->caught_up(); ++i) {
    ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
    Collect(w, &seen);
    ASSERT_OK(c->Commit(w));
  }
  stop = true;
  writer.join();
  EXPECT_TRUE(c->caught_up());
  EXPECT_EQ(seen.size(), 3000u);  // exactly the snapshot, nothing the writer added
}

TEST_F(KafkaBrokerTest, RdpStatelessCallsAdvanceAndDoNotWaitOnADrainedTopic) {
  const std::string topic = Topic("e2e-rdp");
  CreateTopic(topic, 2);
  ASSERT_EQ(Produce(topic, 0, 10), 10);
  std::string config = R"({"brokers":")" + Bootstrap() +
                       R"(","group_id":"g-rdp","topic":")" + topic +
                       R"(","max_records":500})";
  ASSERT_OK_AND_ASSIGN(auto call, rdp::ParseConsumerConfigJson(config));
  Schema landing({{"id", TypeId::kInt64},
                  {"name", TypeId::kUtf8},
                  {"_kafka_offset", TypeId::kInt64},
                  {"_kafka_partition", TypeId::kInt64}});
  ASSERT_OK_AND_ASSIGN(auto landed, rdp::PollKafkaWindowLoaded(call, landing));
  EXPECT_EQ(landed.batch->num_rows(), 10);
  // The same group again: everything was committed, and a drained topic answers at once
  // (RDP waited 15 s here).
  auto start = std::chrono::steady_clock::now();
  ASSERT_OK_AND_ASSIGN(auto again, rdp::PollKafkaWindow(call));
  EXPECT_TRUE(again.empty());
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

// A sink whose every write is durable at once and takes `delay`: a pipelined loop then
// has a window in flight most of the time. It holds no rows (Resume finds nothing).
class SlowSink final : public Sink {
 public:
  explicit SlowSink(std::chrono::milliseconds delay) : delay_(delay) {}
  std::string name() const override { return "slow"; }
  Status Open(const std::shared_ptr<arrow::Schema>&,
              const std::shared_ptr<arrow::Schema>&) override {
    return Status::OK();
  }
  Result<OffsetMap> Resume(const std::vector<TopicPartition>&) override {
    return OffsetMap{};
  }
  Result<OffsetMap> Write(const SinkWindow& w) override {
    std::this_thread::sleep_for(delay_);
    OffsetMap advanced;
    for (const PartitionSpan& s : w.spans) advanced[s.tp] = s.last_offset + 1;
    std::lock_guard lock(mu_);
    for (const auto& [tp, next] : advanced) written_[tp] = next;
    return advanced;
  }
  // Where the rows written for `tp` end (0: none).
  int64_t End(const TopicPartition& tp) {
    std::lock_guard lock(mu_);
    auto it = written_.find(tp);
    return it == written_.end() ? 0 : it->second;
  }
  Result<OffsetMap> Flush() override { return OffsetMap{}; }
  Status Drop(const std::vector<TopicPartition>&) override { return Status::OK(); }
  Status Close() override { return Status::OK(); }

 private:
  std::chrono::milliseconds delay_;
  std::mutex mu_;
  OffsetMap written_;
};

// A member commits every window while other members join and leave again and again: each
// join or leave is a rebalance (under KIP-848 it bumps every member's epoch, and
// Kafka 4.1 refuses commits of a stale epoch). No commit error ends the reading, every
// record is read, and the group's offsets end at the partition ends.
TEST_P(KafkaBrokerProtocolTest, CommitsSurviveMembersJoiningAndLeaving) {
  const std::string topic = Topic("e2e-churn");
  const std::string group = topic + "-g";
  CreateTopic(topic, 4);
  constexpr int kRecords = 20000;
  ASSERT_EQ(Produce(topic, 0, kRecords), kRecords);
  ASSERT_OK_AND_ASSIGN(auto a, Consumer::Make(Options(topic, group, GetParam())));
  std::atomic<bool> stop{false};
  std::string error;
  // Others come and go: each joins, reads a little without committing, and leaves.
  std::thread churn([&] {
    for (int i = 0; i < 4 && !stop; ++i) {
      auto b = Consumer::Make(Options(topic, group, GetParam()));
      if (!b.ok()) {
        error = b.status().ToString();
        return;
      }
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
      while (!stop && std::chrono::steady_clock::now() < until) {
        auto w =
            (*b)->Poll({.max_records = 50, .max_wait = std::chrono::milliseconds(200)});
        if (!w.ok()) {
          error = w.status().ToString();
          return;
        }
        if (!w->empty()) (void)(*b)->Rewind(*w);  // leave them to A
      }
      (void)(*b)->Close();
    }
  });
  Offsets seen;
  auto distinct = [&] {
    return std::set<std::pair<int32_t, int64_t>>(seen.begin(), seen.end()).size();
  };
  int windows = 0;
  auto step = [&](bool stop_at_end) -> Result<Window> {
    KELT_ASSIGN_OR_RAISE(Window w, a->Poll({.max_records = 100,
                                            .max_wait = std::chrono::milliseconds(300),
                                            .stop_at_end = stop_at_end}));
    Collect(w, &seen);
    KELT_RETURN_NOT_OK(
        a->Commit(w).WithPrefix("commit " + std::to_string(windows) + ": "));
    ++windows;
    return w;
  };
  // While the others come and go, until every record was read.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  Status failed;
  while (distinct() < static_cast<size_t>(kRecords) &&
         std::chrono::steady_clock::now() < deadline) {
    auto w = step(false);
    if (!w.ok()) {
      failed = w.status();
      break;
    }
  }
  stop = true;
  churn.join();
  ASSERT_OK(failed);
  ASSERT_TRUE(error.empty()) << error;
  // Alone again: read to the end of every partition.
  for (int i = 0; i < 200; ++i) {
    ASSERT_OK_AND_ASSIGN(auto w, step(true));
    if (w.empty() && w.end_reason() == WindowEnd::kEndOfPartitions &&
        a->Assignment().size() == 4u)
      break;
  }
  EXPECT_EQ(distinct(), static_cast<size_t>(kRecords)) << "records were not read";
  ASSERT_OK_AND_ASSIGN(auto committed, a->Committed(std::chrono::seconds(10)));
  int64_t total = 0;
  for (const auto& [tp, next] : committed) total += std::max<int64_t>(next, 0);
  EXPECT_EQ(total, kRecords);
  std::fprintf(stderr, "%d windows committed while members came and went\n", windows);
  EXPECT_OK(a->Close());
}

// A member joins while a pipelined loop writes a window: the revocation waits for that
// write and commits what it made durable, so the new owner of a partition starts where
// the sink's rows end (not a window earlier: those rows would be read twice).
TEST_P(KafkaBrokerProtocolTest, RevocationCommitsTheWindowItWaitedFor) {
  const std::string topic = Topic("e2e-revoke-commit");
  const std::string group = topic + "-g";
  CreateTopic(topic, 2);
  // Small record batches (a fetch returns at least one whole batch), fetched in small
  // pieces: each window holds records of both partitions.
  ASSERT_EQ(Produce(topic, 0, 40000, {{"batch.num.messages", "50"}}), 40000);
  EltOptions o;
  o.consumer = Options(topic, group, GetParam());
  o.consumer.properties["max.partition.fetch.bytes"] = "4096";
  o.window = {.max_records = 200,
              .max_wait = std::chrono::milliseconds(200),
              .stop_at_end = false};
  ASSERT_OK_AND_ASSIGN(
      auto landing, ParseSchemaJson(R"({"fields":[{"name":"id","data_type":"Int64"}]})"));
  o.landing = landing;
  std::vector<std::unique_ptr<Sink>> sinks;
  auto slow = std::make_unique<SlowSink>(std::chrono::milliseconds(150));
  SlowSink* sink = slow.get();
  sinks.push_back(std::move(slow));
  ASSERT_OK_AND_ASSIGN(auto loop, EltLoop::Make(std::move(o), std::move(sinks)));
  while (loop->stats().windows < 3) {
    ASSERT_OK(loop->StepPipelined());
  }

  // The second member, on its own thread; the loop keeps stepping (it must, for the
  // group to rebalance) until the member owns a partition.
  std::atomic<bool> done{false};
  std::vector<TopicPartition> owned;
  std::map<TopicPartition, int64_t> committed, first_read, sink_ends;
  std::string error;
  std::thread member([&] {
    auto b = Consumer::Make(Options(topic, group, GetParam()));
    if (!b.ok()) {
      error = b.status().ToString();
      done = true;
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (first_read.empty() && std::chrono::steady_clock::now() < deadline) {
      auto w = (*b)->Poll({.max_records = 1, .max_wait = std::chrono::milliseconds(200)});
      if (!w.ok()) {
        error = w.status().ToString();
        break;
      }
      if (owned.empty()) {
        owned = (*b)->Assignment();
        auto c = (*b)->Committed(std::chrono::seconds(10));
        if (!c.ok()) {
          error = c.status().ToString();
          break;
        }
        for (const auto& [tp, next] : *c) {
          committed[tp] = next;
          // Now, before the loop could get the partition back when this member leaves.
          sink_ends[tp] = sink->End(tp);
        }
      }
      for (size_t i = 0; i < w->size(); ++i) {
        RecordView r = w->record(i, false);
        first_read.emplace(TopicPartition{std::string(r.topic), r.partition}, r.offset);
      }
    }
    (void)(*b)->Close();
    done = true;
  });
  while (!done) {
    auto more = loop->StepPipelined();
    if (!more.ok()) {
      ADD_FAILURE() << more.status().ToString();
      break;
    }
  }
  member.join();
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_EQ(owned.size(), 1u) << "the second member got no partition";
  const TopicPartition tp = owned[0];
  const int64_t sink_end = sink_ends[tp];
  EXPECT_GT(sink_end, 0) << "the loop wrote nothing of " << ToString(tp) << " before "
                         << "the second member joined";
  EXPECT_EQ(committed[tp], sink_end)
      << "the group's offset of the revoked partition is not where its rows end";
  ASSERT_TRUE(first_read.count(tp)) << "the second member read nothing of its partition";
  EXPECT_EQ(first_read[tp], sink_end);
  EXPECT_OK(loop->Close());
}

// A subscription of several topics: the group's holding counts the partitions of all of
// them (read with one metadata request for the cluster, not one per topic, which waited
// behind the connection's fetch long-poll each: ~8 s at the end of a catch-up of 100).
TEST_F(KafkaBrokerTest, GroupHoldingOverSeveralTopicsCountsEveryPartition) {
  const std::string base = Topic("e2e-holding");
  const std::vector<std::string> topics = {base + "-a", base + "-b", base + "-c"};
  for (const std::string& t : topics) {
    CreateTopic(t, 2);
    ASSERT_EQ(Produce(t, 0, 10), 10);
  }
  ConsumerOptions o = Options(topics[0], base + "-g");
  o.topics = topics;
  const WindowOptions wo{.max_records = 100, .max_wait = std::chrono::milliseconds(200)};
  ASSERT_OK_AND_ASSIGN(auto a, Consumer::Make(o));
  for (int i = 0; i < 100 && a->Assignment().size() < 6; ++i) {
    ASSERT_OK(a->Poll(wo).status());
  }
  ASSERT_EQ(a->Assignment().size(), 6u);
  ASSERT_OK_AND_ASSIGN(auto alone, a->DescribeGroupHolding());
  EXPECT_EQ(alone.other_members, 0);
  EXPECT_EQ(alone.held_by_others, 0);
  EXPECT_EQ(alone.unassigned, 0);

  // A second member: the range assignor gives each one partition of every topic.
  ASSERT_OK_AND_ASSIGN(auto b, Consumer::Make(o));
  for (int i = 0; i < 200; ++i) {
    ASSERT_OK(a->Poll(wo).status());
    ASSERT_OK(b->Poll(wo).status());
    if (a->Assignment().size() == 3 && b->Assignment().size() == 3) break;
  }
  ASSERT_EQ(a->Assignment().size(), 3u);
  ASSERT_EQ(b->Assignment().size(), 3u);
  ASSERT_OK_AND_ASSIGN(auto shared, a->DescribeGroupHolding());
  EXPECT_EQ(shared.other_members, 1);
  EXPECT_EQ(shared.held_by_others, 3);
  EXPECT_EQ(shared.unassigned, 0);
  ASSERT_OK(b->Close());
  ASSERT_OK(a->Close());
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

// --- The tri-language scenario (CONTRACT §9), C++ leg
// ------------------------------------------------------------------------------

struct Pickup {
  std::string time, base;
  double lat = 0, lon = 0;
};

// The shipped Uber sample, read with Arrow's CSV reader (quoted header and cells).
std::vector<Pickup> ReadUberSample() {
  const std::string path =
      std::string(KELT_SOURCE_DIR) + "/tests/fixtures/uber/uber_apr14_sample.csv";
  auto file = arrow::io::ReadableFile::Open(path);
  EXPECT_OK(file) << path;
  if (!file.ok()) return {};
  auto convert = arrow::csv::ConvertOptions::Defaults();
  convert.column_types = {{"Date/Time", arrow::utf8()},
                          {"Lat", arrow::float64()},
                          {"Lon", arrow::float64()},
                          {"Base", arrow::utf8()}};
  auto reader = arrow::csv::TableReader::Make(
      arrow::io::default_io_context(), *file, arrow::csv::ReadOptions::Defaults(),
      arrow::csv::ParseOptions::Defaults(), convert);
  EXPECT_OK(reader);
  auto table = (*reader)->Read();
  EXPECT_OK(table);
  auto combined = (*table)->CombineChunksToBatch();
  EXPECT_OK(combined);
  const arrow::RecordBatch& b = **combined;
  auto time =
      std::static_pointer_cast<arrow::StringArray>(b.GetColumnByName("Date/Time"));
  auto lat = std::static_pointer_cast<arrow::DoubleArray>(b.GetColumnByName("Lat"));
  auto lon = std::static_pointer_cast<arrow::DoubleArray>(b.GetColumnByName("Lon"));
  auto base = std::static_pointer_cast<arrow::StringArray>(b.GetColumnByName("Base"));
  std::vector<Pickup> out;
  for (int64_t i = 0; i < b.num_rows(); ++i) {
    out.push_back({std::string(time->GetView(i)), std::string(base->GetView(i)),
                   lat->Value(i), lon->Value(i)});
  }
  return out;
}

TEST_F(KafkaBrokerTest, TriLanguageScenarioCppLegLandsEveryCsvRowWithItsContent) {
  const std::vector<Pickup> csv = ReadUberSample();
  ASSERT_GE(csv.size(), 3000u);
  const std::string topic = Topic("trilang-cpp");
  CreateTopic(topic, 3);

  // One one-row DataSet per CSV row, each exported by RDP's call.
  Schema row_schema({{"pickup_time", TypeId::kUtf8},
                     {"lat", TypeId::kFloat64},
                     {"lon", TypeId::kFloat64},
                     {"base_code", TypeId::kUtf8}});
  ProducerOptions po;
  po.brokers = Bootstrap();
  po.topic = topic;
  const auto export_start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < csv.size(); ++i) {
    DataSet one{row_schema,
                {{Value::Utf8(csv[i].time), Value::Float64(csv[i].lat),
                  Value::Float64(csv[i].lon), Value::Utf8(csv[i].base)}}};
    auto sent = ExportDataSetToKafka(po, one);
    ASSERT_OK(sent) << "row " << i;
    ASSERT_EQ(*sent, 1) << "row " << i;
  }
  std::fprintf(
      stderr, "exported %zu one-row datasets in %.2f s\n", csv.size(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - export_start)
          .count());

  // One poll with a fresh group and max_records = rows produced.
  const std::string config = R"({"brokers":")" + Bootstrap() + R"(","group_id":")" +
                             Topic("trilang-cpp-g") + R"(","topic":")" + topic +
                             R"(","max_records":)" + std::to_string(csv.size()) + "}";
  ASSERT_OK_AND_ASSIGN(auto call, rdp::ParseConsumerConfigJson(config));
  std::ifstream schema_in(std::string(KELT_SOURCE_DIR) +
                          "/tests/fixtures/uber/landing_schema.json");
  std::string schema_json((std::istreambuf_iterator<char>(schema_in)),
                          std::istreambuf_iterator<char>());
  ASSERT_OK_AND_ASSIGN(auto landing, ParseSchemaJson(schema_json));
  ASSERT_OK_AND_ASSIGN(auto landed, rdp::PollKafkaWindowLoaded(call, landing));
  const arrow::RecordBatch& b = *landed.batch;
  ASSERT_EQ(b.num_rows(), static_cast<int64_t>(csv.size()));

  // Content, not only the count: the key of each message is its row index ("0" for a
  // one-row dataset), so rows are matched by content — the producer's per-partition
  // order follows the CSV, and every CSV row must be landed exactly once.
  auto time =
      std::static_pointer_cast<arrow::StringArray>(b.GetColumnByName("pickup_time"));
  auto lat = std::static_pointer_cast<arrow::DoubleArray>(b.GetColumnByName("lat"));
  auto lon = std::static_pointer_cast<arrow::DoubleArray>(b.GetColumnByName("lon"));
  auto base =
      std::static_pointer_cast<arrow::StringArray>(b.GetColumnByName("base_code"));
  auto part =
      std::static_pointer_cast<arrow::Int64Array>(b.GetColumnByName("_kafka_partition"));
  auto off =
      std::static_pointer_cast<arrow::Int64Array>(b.GetColumnByName("_kafka_offset"));
  ASSERT_TRUE(time && lat && lon && base && part && off);
  std::multiset<std::tuple<std::string, double, double, std::string>> want, got;
  for (const Pickup& p : csv) want.insert({p.time, p.lat, p.lon, p.base});
  std::set<std::pair<int64_t, int64_t>> offsets;
  for (int64_t i = 0; i < b.num_rows(); ++i) {
    ASSERT_FALSE(time->IsNull(i) || lat->IsNull(i) || lon->IsNull(i) || base->IsNull(i))
        << "row " << i;
    got.insert({std::string(time->GetView(i)), lat->Value(i), lon->Value(i),
                std::string(base->GetView(i))});
    offsets.insert({part->Value(i), off->Value(i)});
  }
  EXPECT_EQ(offsets.size(), csv.size()) << "a (partition, offset) landed twice";
  EXPECT_TRUE(got == want) << "landed rows differ from the CSV";
  // Within a partition, offsets follow the CSV order (one producer call per row).
  std::map<int64_t, std::vector<std::pair<int64_t, std::string>>> per_partition;
  for (int64_t i = 0; i < b.num_rows(); ++i) {
    per_partition[part->Value(i)].push_back(
        {off->Value(i), std::string(time->GetView(i))});
  }
  std::map<std::string, size_t> first_row;  // pickup times are unique in the sample
  for (size_t i = 0; i < csv.size(); ++i) first_row.emplace(csv[i].time, i);
  for (auto& [p, rows] : per_partition) {
    std::sort(rows.begin(), rows.end());
    for (size_t i = 1; i < rows.size(); ++i) {
      EXPECT_LT(first_row[rows[i - 1].second], first_row[rows[i].second])
          << "partition " << p << " offset " << rows[i].first;
    }
  }
}

int64_t Sent(const ProducerOptions& po, const DataSet& data) {
  auto sent = ExportDataSetToKafka(po, data);
  EXPECT_OK(sent);
  return sent.ok() ? *sent : -1;
}

// RDP's stateless export reuses one producer per options; a failed call must not poison
// the next one, and other options get their own producer.
TEST_F(KafkaBrokerTest, StatelessExportRecoversAfterAFailedCallAndFollowsItsOptions) {
  const std::string topic = Topic("e2e-export");
  const std::string other = Topic("e2e-export-other");
  CreateTopic(topic, 1);
  CreateTopic(other, 1);
  Schema schema({{"id", TypeId::kInt64}, {"name", TypeId::kUtf8}});
  DataSet data{schema,
               {{Value::Int64(1), Value::Utf8("a")}, {Value::Int64(2), Value::Null()}}};
  ProducerOptions po;
  po.brokers = Bootstrap();
  po.topic = topic;
  ASSERT_EQ(Sent(po, data), 2);
  ProducerOptions bad = po;
  bad.value_column = "name";  // row 2's cell is null: an error, nothing half-counted
  auto failed = ExportDataSetToKafka(bad, data);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("null"), std::string::npos)
      << failed.status().ToString();
  ASSERT_EQ(Sent(po, data), 2);
  ProducerOptions elsewhere = po;
  elsewhere.topic = other;
  ASSERT_EQ(Sent(elsewhere, data), 2);
  ASSERT_EQ(Sent(po, data), 2);

  // What landed: 6 rows on `topic`, 2 on `other`.
  for (const auto& [t, want] : {std::pair{topic, 6}, std::pair{other, 2}}) {
    ASSERT_OK_AND_ASSIGN(auto consumer, Consumer::Make(Options(t, Topic("g-export"))));
    WindowOptions wo;
    wo.max_records = 100;
    Offsets seen;
    for (int i = 0; i < 20 && static_cast<int>(seen.size()) < want; ++i) {
      ASSERT_OK_AND_ASSIGN(auto w, consumer->Poll(wo));
      Collect(w, &seen);
    }
    EXPECT_EQ(static_cast<int>(seen.size()), want) << t;
    ASSERT_OK(consumer->Close());
  }
}

}  // namespace
}  // namespace kelt
