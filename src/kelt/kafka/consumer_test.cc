// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Consumer and producer behaviour on librdkafka's in-process mock cluster: window
// endings, commit-after-durable, rebalances, injected broker errors, a consumer killed
// mid-window. Throughput is measured on the real broker (bench/), not here.
#include <arrow/api.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "kelt/kafka.h"
#include "kelt/kafka/mock_cluster_testing.h"
#include "kelt/log.h"
#include "kelt/testing/assertions.h"

extern char** environ;

namespace kelt {
namespace {

struct Seen {
  std::multiset<std::pair<int32_t, int64_t>> offsets;  // (partition, offset)
  std::vector<std::string> payloads;
};

void Collect(const Window& w, Seen* seen) {
  for (size_t i = 0; i < w.size(); ++i) {
    RecordView r = w.record(i);
    seen->offsets.insert({r.partition, r.offset});
    seen->payloads.emplace_back(r.value.value_or(""));
  }
}

// Poll windows until one ends at the end of every partition with nothing in it.
Seen DrainAndCommit(Consumer& c, WindowOptions opts, bool commit = true) {
  Seen seen;
  for (int i = 0; i < 200; ++i) {
    auto w = c.Poll(opts);
    EXPECT_OK(w);
    if (!w.ok()) break;
    Collect(*w, &seen);
    if (commit) {
      EXPECT_OK(c.Commit(*w));
    }
    if (w->empty() && w->end_reason() == WindowEnd::kEndOfPartitions) break;
  }
  return seen;
}

class ConsumerTest : public MockClusterTest {};
class ProducerTest : public MockClusterTest {};

TEST_F(ConsumerTest, ValidatesOptionsWithRdpMessages) {
  ConsumerOptions o;
  o.group_id = "g";
  o.topics = {"t"};
  EXPECT_EQ(Consumer::Make(o).status().message(), "kafka brokers must not be empty");
  o.brokers = "localhost:1";
  o.group_id = "  ";
  EXPECT_EQ(Consumer::Make(o).status().message(), "kafka group_id must not be empty");
  o.group_id = "g";
  o.topics = {""};
  EXPECT_EQ(Consumer::Make(o).status().message(), "kafka topic must not be empty");
  o.topics = {"t"};
  o.properties["enable.auto.commit"] = "true";
  auto st = Consumer::Make(o).status();
  EXPECT_NE(st.message().find("'enable.auto.commit' must stay false"), std::string::npos);
}

TEST(AutoOffsetResetTest, NamesAndLibrdkafkaSynonymsParse) {
  for (AutoOffsetReset r :
       {AutoOffsetReset::kEarliest, AutoOffsetReset::kLatest, AutoOffsetReset::kError}) {
    ASSERT_OK_AND_ASSIGN(AutoOffsetReset back,
                         ParseAutoOffsetReset(AutoOffsetResetName(r)));
    EXPECT_EQ(back, r);
  }
  EXPECT_EQ(*ParseAutoOffsetReset("smallest"), AutoOffsetReset::kEarliest);
  EXPECT_EQ(*ParseAutoOffsetReset("beginning"), AutoOffsetReset::kEarliest);
  EXPECT_EQ(*ParseAutoOffsetReset("largest"), AutoOffsetReset::kLatest);
  EXPECT_EQ(*ParseAutoOffsetReset("end"), AutoOffsetReset::kLatest);
  ASSERT_STATUS(ParseAutoOffsetReset("oldest"), StatusCode::kInvalid,
                "auto_offset_reset: expected earliest, latest or error, got 'oldest'");
}

// After Close the handle is gone: the monitoring reads say so instead of touching it.
TEST_F(ConsumerTest, LagAndCommittedAfterCloseAreErrors) {
  ConsumerOptions o;
  o.brokers = "localhost:1";
  o.group_id = "g";
  o.topics = {"t"};
  ASSERT_OK_AND_ASSIGN(auto c, Consumer::Make(o));
  ASSERT_OK(c->Close());
  ASSERT_STATUS(c->Lag(std::chrono::milliseconds(100)), StatusCode::kInvalid,
                "kafka consumer is closed");
  ASSERT_STATUS(c->Committed(std::chrono::milliseconds(100)), StatusCode::kInvalid,
                "kafka consumer is closed");
}

TEST_F(ConsumerTest, BadPropertyNamesThePropertyButNeverASecret) {
  ConsumerOptions o;
  o.brokers = "localhost:1";
  o.group_id = "g";
  o.topics = {"t"};
  o.properties["no.such.property"] = "x";
  auto st = Consumer::Make(o).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_NE(st.message().find("kafka property 'no.such.property'"), std::string::npos);

  o.properties.clear();
  o.properties["ssl.key.password"] = "hunter2-secret";
  o.properties["security.protocol"] = "not-a-protocol-hunter2";
  st = Consumer::Make(o).status();
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.message().find("hunter2-secret"), std::string::npos) << st.message();
}

TEST_F(ConsumerTest, WindowEndsAtMaxRecordsThenAtEndOfPartitions) {
  CreateTopic("t1", 3, 30);
  ASSERT_OK_AND_ASSIGN(auto c, Join("t1", "g1"));
  WindowOptions opts{.max_records = 7};
  ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
  EXPECT_EQ(w.size(), 7u);
  EXPECT_EQ(w.end_reason(), WindowEnd::kMaxRecords);

  opts.max_records = 1000;
  ASSERT_OK_AND_ASSIGN(auto rest, c->Poll(opts));
  EXPECT_EQ(rest.size(), 23u);
  EXPECT_EQ(rest.end_reason(), WindowEnd::kEndOfPartitions);
  // Spans cover exactly what the windows hold.
  int64_t count = 0;
  for (const auto& s : rest.spans()) {
    EXPECT_EQ(s.tp.topic, "t1");
    count += s.count;
    EXPECT_LE(s.first_offset, s.last_offset);
  }
  EXPECT_EQ(count, 23);
  ASSERT_OK(c->Close());
}

// The ELT loop's chunked window: several windows, their records released, given back
// in the order they were polled, so each partition starts again at its first record
// in the earliest of them; each record comes again exactly once.
TEST_F(ConsumerTest, WindowsRewoundInPollOrderRestartAtTheEarliest) {
  CreateTopic("t-chunks", 2, 40);
  ASSERT_OK_AND_ASSIGN(auto c, Join("t-chunks", "g-chunks"));
  WindowOptions opts{.max_records = 7};
  std::vector<Window> chunks;
  Seen polled;
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
    ASSERT_EQ(w.size(), 7u);
    Collect(w, &polled);
    w.ReleaseRecords();
    EXPECT_EQ(w.size(), 0u);
    EXPECT_FALSE(w.spans().empty()) << "the spans stay for the rewind";
    chunks.push_back(std::move(w));
  }
  for (const Window& w : chunks) ASSERT_OK(c->Rewind(w));
  Seen again = DrainAndCommit(*c, WindowOptions{.max_records = 1000});
  std::set<std::pair<int32_t, int64_t>> unique(again.offsets.begin(),
                                               again.offsets.end());
  EXPECT_EQ(unique.size(), again.offsets.size()) << "a record came twice";
  EXPECT_EQ(again.offsets.size(), 40u) << "records of the chunks were skipped";
  for (const auto& o : polled.offsets) EXPECT_TRUE(unique.count(o)) << o.second;
  ASSERT_OK(c->Close());
}

// A window given back is read again, with what followed it, and cannot be committed.
TEST_F(ConsumerTest, RewoundWindowIsReadAgainAndCannotBeCommitted) {
  CreateTopic("t-rewind", 2, 60);
  ASSERT_OK_AND_ASSIGN(auto c, Join("t-rewind", "g-rewind"));
  // Windows end on bytes too: some records wait in the carry-over.
  WindowOptions opts{.max_records = 10, .max_bytes = 80};
  Seen first;
  ASSERT_OK_AND_ASSIGN(auto w1, c->Poll(opts));
  ASSERT_FALSE(w1.empty());
  Collect(w1, &first);
  ASSERT_OK(c->Commit(w1));
  ASSERT_OK_AND_ASSIGN(auto w2, c->Poll(opts));
  ASSERT_FALSE(w2.empty());
  Seen second;
  Collect(w2, &second);
  ASSERT_OK(c->Rewind(w2));
  ASSERT_OK(c->Commit(w2));  // skipped: nothing of it is committed

  // Everything from w2 on comes again, each record once; nothing of w1 comes back.
  Seen rest;
  for (int i = 0; i < 100; ++i) {
    ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
    Collect(w, &rest);
    if (w.empty() && w.end_reason() == WindowEnd::kEndOfPartitions) break;
  }
  std::set<std::pair<int32_t, int64_t>> again(rest.offsets.begin(), rest.offsets.end());
  EXPECT_EQ(again.size(), rest.offsets.size()) << "a record came twice after the rewind";
  for (const auto& o : second.offsets) EXPECT_TRUE(again.count(o)) << o.second;
  for (const auto& o : first.offsets) EXPECT_FALSE(again.count(o)) << o.second;
  EXPECT_EQ(first.offsets.size() + rest.offsets.size(), 60u);

  // The group's committed offsets are w1's: w2's commit after the rewind did nothing.
  ASSERT_OK_AND_ASSIGN(auto committed, c->Committed());
  std::map<int32_t, int64_t> want;
  for (const auto& s : w1.spans()) want[s.tp.partition] = s.last_offset + 1;
  for (const auto& [tp, offset] : committed) {
    auto it = want.find(tp.partition);
    EXPECT_EQ(offset, it == want.end() ? -1 : it->second) << ToString(tp);
  }
  ASSERT_OK(c->Close());
}

TEST_F(ConsumerTest, WindowEndsAtMaxBytesAndCarriesTheRestOver) {
  CreateTopic("t2", 2, 40);
  ASSERT_OK_AND_ASSIGN(auto c, Join("t2", "g2"));
  // A record is ~10 bytes of payload + ~3 of key.
  WindowOptions opts{.max_records = 1000, .max_bytes = 60};
  Seen seen;
  int windows = 0;
  for (int i = 0; i < 100; ++i) {
    ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
    if (!w.empty()) {
      ++windows;
      EXPECT_LE(w.bytes(), 60);
      if (seen.offsets.size() + w.size() < 40) {
        EXPECT_EQ(w.end_reason(), WindowEnd::kMaxBytes);
      }
    }
    Collect(w, &seen);
    if (w.empty() && w.end_reason() == WindowEnd::kEndOfPartitions) break;
  }
  EXPECT_GE(windows, 8);
  ASSERT_EQ(seen.offsets.size(), 40u);
  // No duplicates and none lost across the carry-over.
  std::set<std::pair<int32_t, int64_t>> unique(seen.offsets.begin(), seen.offsets.end());
  EXPECT_EQ(unique.size(), 40u);
}

TEST_F(ConsumerTest, WindowEndsAtTheDeadlineWhenAskedToWaitForMore) {
  CreateTopic("t3", 1, 3);
  ASSERT_OK_AND_ASSIGN(auto c, Join("t3", "g3"));
  WindowOptions opts{.max_records = 100,
                     .max_wait = std::chrono::milliseconds(8000),
                     .stop_at_end = false};
  auto start = std::chrono::steady_clock::now();
  auto w = c->Poll(opts);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_OK(w);
  EXPECT_EQ(w->size(), 3u);
  EXPECT_EQ(w->end_reason(), WindowEnd::kDeadline);
  EXPECT_GE(took, std::chrono::milliseconds(7900));
}

TEST_F(ConsumerTest, DrainedTopicDoesNotWaitForTheDeadline) {
  // RDP always waited 15 s when a topic had fewer than max_records records.
  CreateTopic("t4", 2, 5);
  ASSERT_OK_AND_ASSIGN(auto c, Join("t4", "g4"));
  WindowOptions opts{.max_records = 500, .max_wait = std::chrono::milliseconds(30000)};
  ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
  EXPECT_EQ(w.size(), 5u);
  EXPECT_EQ(w.end_reason(), WindowEnd::kEndOfPartitions);
  auto start = std::chrono::steady_clock::now();
  ASSERT_OK_AND_ASSIGN(auto empty, c->Poll(opts));
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.end_reason(), WindowEnd::kEndOfPartitions);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2000));
  // Records produced later are found by a later window (a poll at the end looks once,
  // for up to 100 ms: on a loaded machine the fetch that brings them may come after).
  ProduceIds(mc(), "t4", 5, 2);
  Seen later;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (later.offsets.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    Seen more = DrainAndCommit(*c, opts);
    later.offsets.insert(more.offsets.begin(), more.offsets.end());
  }
  EXPECT_EQ(later.offsets.size(), 2u);
}

TEST_F(ConsumerTest, CommitsOnlyWhatTheCallerSaysIsDurable) {
  CreateTopic("t5", 2, 20);
  WindowOptions opts{.max_records = 8};
  {
    // Polled but never committed (the sink failed): nothing may be committed.
    ASSERT_OK_AND_ASSIGN(auto c, Join("t5", "g5"));
    ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
    EXPECT_EQ(w.size(), 8u);
    ASSERT_OK(c->Close());
  }
  Seen first_commit;
  {
    ASSERT_OK_AND_ASSIGN(auto c, Join("t5", "g5"));
    ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
    ASSERT_EQ(w.size(), 8u);
    Collect(w, &first_commit);
    ASSERT_OK(c->Commit(w));
    ASSERT_OK_AND_ASSIGN(auto committed, c->Committed());
    for (const auto& s : w.spans()) {
      auto it = std::find_if(committed.begin(), committed.end(),
                             [&](const auto& kv) { return kv.first == s.tp; });
      ASSERT_NE(it, committed.end());
      EXPECT_EQ(it->second, s.last_offset + 1);  // last + 1, not last
    }
    ASSERT_OK(c->Poll(opts));  // polled, not committed
    ASSERT_OK(c->Close());
  }
  ASSERT_OK_AND_ASSIGN(auto c, Join("t5", "g5"));
  opts.max_records = 100;
  Seen rest = DrainAndCommit(*c, opts);
  EXPECT_EQ(rest.offsets.size(), 12u);
  for (const auto& o : first_commit.offsets) EXPECT_EQ(rest.offsets.count(o), 0u);
}

// The rebalance tests run under both group protocols (the mock cluster speaks KIP-848).
class ConsumerGroupProtocolTest : public MockClusterTest,
                                  public ::testing::WithParamInterface<GroupProtocol> {};
INSTANTIATE_TEST_SUITE_P(Protocols, ConsumerGroupProtocolTest,
                         ::testing::Values(GroupProtocol::kClassic,
                                           GroupProtocol::kConsumer),
                         [](const auto& info) {
                           return std::string(GroupProtocolName(info.param));
                         });

TEST_P(ConsumerGroupProtocolTest, TwoMembersSplitPartitionsAndLoseNothingOnRebalance) {
  CreateTopic("t6", 4, 200);
  WindowOptions opts{.max_records = 10, .max_wait = std::chrono::milliseconds(3000)};
  // The mock cluster refuses every commit while the group rebalances (a real broker
  // accepts this generation's commits until the group completes the rebalance): the
  // consumer then logs that the next owner re-reads those records.
  std::atomic<int> refused{0};
  SetLogHook(
      [&](LogLevel, std::string_view, std::string_view msg) {
        if (msg.find("could not commit the durable offsets") != std::string_view::npos)
          ++refused;
      },
      LogLevel::kWarning);
  struct Unhook {
    ~Unhook() { SetLogHook(nullptr); }
  } unhook;
  // First sighting of each (partition, offset): by A (0) or B (1), in which window.
  std::map<std::pair<int32_t, int64_t>, std::pair<int, int>> first_seen;
  std::vector<std::pair<int, int>> duplicates;  // first sightings of re-read records
  int windows[2] = {0, 0};
  auto collect = [&](int who, const Window& w) {
    ++windows[who];
    for (size_t i = 0; i < w.size(); ++i) {
      RecordView r = w.record(i);
      auto [it, fresh] = first_seen.emplace(std::make_pair(r.partition, r.offset),
                                            std::make_pair(who, windows[who]));
      if (!fresh) duplicates.push_back(it->second);
    }
  };
  ASSERT_OK_AND_ASSIGN(auto a, Join("t6", "g6", GetParam()));
  // A reads and commits a few windows alone.
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK_AND_ASSIGN(auto w, a->Poll(opts));
    collect(0, w);
    ASSERT_OK(a->Commit(w));
  }
  // B joins: the group rebalances; both keep polling and committing in turns.
  ASSERT_OK_AND_ASSIGN(auto b, Join("t6", "g6", GetParam()));
  int a_windows_at_loss = -1;
  for (int round = 0; round < 200 && first_seen.size() < 200; ++round) {
    int who = 0;
    for (Consumer* c : {a.get(), b.get()}) {
      ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
      collect(who++, w);
      ASSERT_OK(c->Commit(w));
    }
    if (!a->TakeLostPartitions().empty() && a_windows_at_loss < 0)
      a_windows_at_loss = windows[0];
  }
  EXPECT_GE(a_windows_at_loss, 0) << "A never lost a partition";
  EXPECT_FALSE(b->Assignment().empty());
  EXPECT_EQ(first_seen.size(), 200u);  // nothing lost
  // Whatever was read twice was read first by A just before it lost the partition,
  // in a window whose commit the group refused during the rebalance.
  for (auto [who, window] : duplicates) {
    EXPECT_GT(refused.load(), 0) << "a record was read twice without a refused commit";
    EXPECT_EQ(who, 0);
    EXPECT_GE(window, a_windows_at_loss - 2);
  }
}

TEST_F(ConsumerTest, RetriesInjectedFetchAndCommitErrors) {
  CreateTopic("t7", 1, 10);
  ASSERT_OK_AND_ASSIGN(auto c, Join("t7", "g7"));
  PushRequestErrors(KafkaApi::kFetch, {KafkaErrorCode::kNotLeaderForPartition,
                                       KafkaErrorCode::kRequestTimedOut});
  WindowOptions opts{.max_records = 100};
  ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
  EXPECT_EQ(w.size(), 10u);
  PushRequestErrors(KafkaApi::kOffsetCommit, {KafkaErrorCode::kCoordinatorLoadInProgress,
                                              KafkaErrorCode::kRequestTimedOut});
  EXPECT_OK(c->Commit(w));
  ASSERT_OK_AND_ASSIGN(auto committed, c->Committed());
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_EQ(committed[0].second, 10);
}

TEST_F(ConsumerTest, DefersACommitRefusedDuringARebalance) {
  CreateTopic("t11", 1, 6);
  ASSERT_OK_AND_ASSIGN(auto c, Join("t11", "g11"));
  WindowOptions opts{.max_records = 4};
  ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
  ASSERT_EQ(w.size(), 4u);
  // The group refuses commits of this generation while it rebalances: the offsets are
  // kept and committed at the next opportunity, not dropped and not reported as lost.
  PushRequestErrors(KafkaApi::kOffsetCommit, {KafkaErrorCode::kRebalanceInProgress});
  ASSERT_OK(c->Commit(w));
  ASSERT_OK_AND_ASSIGN(auto before, c->Committed());
  EXPECT_EQ(before[0].second, -1);  // not committed yet
  ASSERT_OK(c->Poll(opts));         // flushes the deferred commit first
  ASSERT_OK_AND_ASSIGN(auto after, c->Committed());
  EXPECT_EQ(after[0].second, 4);
  ASSERT_OK(c->Close());
}

TEST_F(ConsumerTest, ReportsANonRetriableCommitError) {
  CreateTopic("t8", 1, 3);
  ASSERT_OK_AND_ASSIGN(auto c, Join("t8", "g8"));
  WindowOptions opts;
  ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
  ASSERT_EQ(w.size(), 3u);
  PushRequestErrors(KafkaApi::kOffsetCommit, {KafkaErrorCode::kGroupAuthorizationFailed});
  Status st = c->Commit(w);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kKafka);
  EXPECT_FALSE(st.retriable());
  EXPECT_NE(st.message().find("committing offsets"), std::string::npos) << st.message();
}

// The commit made at a revocation (here, the one Close makes) that the group refuses
// for good is not only logged: Close returns it.
TEST_F(ConsumerTest, ACommitRefusedAtTheRevocationFailsClose) {
  CreateTopic("tr", 1, 5);
  ASSERT_OK_AND_ASSIGN(auto c, Join("tr", "gr"));
  ASSERT_OK_AND_ASSIGN(auto w, c->Poll(WindowOptions{}));
  ASSERT_EQ(w.size(), 5u);
  // Commit and Close's own flush are told the group rebalances (the offsets stay
  // pending); the commit in the revoke callback gets an error no retry can fix.
  PushRequestErrors(KafkaApi::kOffsetCommit, {KafkaErrorCode::kRebalanceInProgress,
                                              KafkaErrorCode::kRebalanceInProgress,
                                              KafkaErrorCode::kOffsetMetadataTooLarge});
  ASSERT_OK(c->Commit(w));
  Status closed = c->Close();
  ASSERT_FALSE(closed.ok()) << "the refused commit was only logged";
  EXPECT_NE(closed.message().find("revoked partition"), std::string::npos)
      << closed.ToString();
  EXPECT_FALSE(closed.retriable());
}

// An asynchronous commit returns at once; its result is taken in by the next call: a
// success is what the group holds afterwards, a failure the group would not retry is
// returned by the next Poll.
TEST_F(ConsumerTest, AsyncCommitIsCheckedByTheNextCall) {
  CreateTopic("ta", 1, 6);
  ASSERT_OK_AND_ASSIGN(auto c, Join("ta", "ga"));
  WindowOptions opts{.max_records = 3};
  ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
  ASSERT_EQ(w.size(), 3u);
  ASSERT_OK(c->CommitOffsetsAsync({{{"ta", 0}, 3}}));
  ASSERT_OK_AND_ASSIGN(auto w2, c->Poll(opts));  // takes the first result in, if it came
  ASSERT_EQ(w2.size(), 3u);
  // A synchronous call waits for it: the error below must hit the second commit only.
  ASSERT_OK(c->CommitOffsets({}));
  PushRequestErrors(KafkaApi::kOffsetCommit, {KafkaErrorCode::kGroupAuthorizationFailed});
  ASSERT_OK(c->CommitOffsetsAsync({{{"ta", 0}, 6}})) << "sent, not answered";
  Status st;
  for (int i = 0; i < 20 && st.ok(); ++i) st = c->Poll(opts).status();
  ASSERT_FALSE(st.ok()) << "the refused commit must surface";
  EXPECT_EQ(st.code(), StatusCode::kKafka);
  EXPECT_NE(st.message().find("committing offsets"), std::string::npos) << st.message();
  ASSERT_OK_AND_ASSIGN(auto committed, c->Committed(std::chrono::seconds(10)));
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_EQ(committed[0].second, 3) << "the first commit landed, the second not";
}

TEST_F(ConsumerTest, CatchUpStopsAtTheSnapshotWhileProducersContinue) {
  CreateTopic("t9", 2, 20);
  ASSERT_OK_AND_ASSIGN(auto c, Join("t9", "g9"));
  // Join the group first (catch-up marks are taken per assigned partition).
  WindowOptions opts{.max_records = 5};
  ASSERT_OK_AND_ASSIGN(auto first, c->Poll(opts));
  ASSERT_OK(c->StartCatchUp());
  ProduceIds(mc(), "t9", 20, 10);  // past the snapshot for every partition
  Seen seen;
  Collect(first, &seen);
  for (int i = 0; i < 50; ++i) {
    ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
    Collect(w, &seen);
    ASSERT_OK(c->Commit(w));
    if (w.caught_up()) break;
  }
  EXPECT_TRUE(c->caught_up());
  EXPECT_EQ(seen.offsets.size(), 20u);  // the 10 produced after the snapshot are not read
}

TEST_F(ProducerTest, SendsRowsAsJsonWithKeysAndHeaders) {
  CreateTopic("out", 1);
  DataSet ds;
  ds.schema = Schema({{"user_id", TypeId::kInt64},
                      {"score", TypeId::kFloat64},
                      {"name", TypeId::kUtf8}});
  ds.rows = {{Value::Int64(7), Value::Float64(1.0), Value::Utf8("Ada")},
             {Value::Null(), Value::Float64(2.5), Value::Null()}};
  ProducerOptions po;
  po.brokers = mc().bootstraps();
  po.topic = "out";
  po.key_column = "user_id";
  po.headers = {{"source", "kelt"}};
  ASSERT_OK_AND_ASSIGN(auto sent, ExportDataSetToKafka(po, ds));
  EXPECT_EQ(sent, 2);

  ASSERT_OK_AND_ASSIGN(auto c, Join("out", "g-out"));
  ASSERT_OK_AND_ASSIGN(auto w, c->Poll(WindowOptions{}));
  ASSERT_EQ(w.size(), 2u);
  RecordView r0 = w.record(0), r1 = w.record(1);
  EXPECT_EQ(*r0.key, "7");
  EXPECT_EQ(*r0.value, R"({"user_id":7,"score":1.0,"name":"Ada"})");
  EXPECT_EQ(*r1.key, "1");  // null key cell → row index
  EXPECT_EQ(*r1.value, R"({"user_id":null,"score":2.5,"name":null})");
  ASSERT_EQ(r0.headers.size(), 1u);
  EXPECT_EQ(r0.headers[0].name, "source");
  EXPECT_EQ(*r0.headers[0].value, "kelt");
  EXPECT_TRUE(r0.timestamp_ms.has_value());
  EXPECT_EQ(r0.timestamp_type, TimestampType::kCreateTime);
}

TEST_F(ProducerTest, ValueColumnRules) {
  CreateTopic("out2", 1);
  DataSet ds;
  ds.schema = Schema({{"v", TypeId::kFloat64}, {"s", TypeId::kUtf8}});
  ds.rows = {{Value::Float64(1.0), Value::Utf8("x")},
             {Value::Float64(0.5), Value::Null()}};
  ProducerOptions po;
  po.brokers = mc().bootstraps();
  po.topic = "out2";
  po.value_column = "missing";
  EXPECT_EQ(ExportDataSetToKafka(po, ds).status().message(),
            "schema mismatch: kafka value_column 'missing' not in schema");
  po.value_column = "s";
  EXPECT_EQ(ExportDataSetToKafka(po, ds).status().message(),
            "schema mismatch: kafka value_column 's' is null");
  po.value_column = "v";
  ASSERT_OK(ExportDataSetToKafka(po, ds));
  ASSERT_OK_AND_ASSIGN(auto c, Join("out2", "g-out2"));
  ASSERT_OK_AND_ASSIGN(auto w, c->Poll(WindowOptions{}));
  ASSERT_EQ(w.size(), 2u);             // nothing of the failed calls was sent
  EXPECT_EQ(*w.record(0).value, "1");  // Rust's Display of 1.0
  EXPECT_EQ(*w.record(1).value, "0.5");
}

// A value encoder replaces the JSON row; keys keep their rule; an encoder's error sends
// nothing of the call.
class RowNumberEncoder : public PayloadEncoder {
 public:
  Status Encode(const arrow::RecordBatch& batch,
                std::vector<std::string>* payloads) const override {
    for (int64_t row = 0; row < batch.num_rows(); ++row) {
      if (batch.num_rows() == 3) return Status::Invalid("row " + std::to_string(row));
      payloads->push_back(std::string("\0bin", 4) + std::to_string(row));
    }
    return Status::OK();
  }
};

TEST_F(ProducerTest, AValueEncoderWritesThePayloads) {
  CreateTopic("out3", 1);
  DataSet ds;
  ds.schema = Schema({{"k", TypeId::kUtf8}});
  ds.rows = {{Value::Utf8("a")}, {Value::Null()}};
  ProducerOptions po;
  po.brokers = mc().bootstraps();
  po.topic = "out3";
  po.key_column = "k";
  po.value_encoder = std::make_shared<RowNumberEncoder>();
  po.value_column = "k";
  EXPECT_EQ(ExportDataSetToKafka(po, ds).status().message(),
            "kafka value_column and a value encoder are exclusive");
  po.value_column.reset();
  ASSERT_OK(ExportDataSetToKafka(po, ds));
  DataSet three = ds;
  three.rows.push_back({Value::Utf8("c")});
  EXPECT_EQ(ExportDataSetToKafka(po, three).status().message(), "row 0");
  ASSERT_OK_AND_ASSIGN(auto c, Join("out3", "g-out3"));
  ASSERT_OK_AND_ASSIGN(auto w, c->Poll(WindowOptions{}));
  ASSERT_EQ(w.size(), 2u);  // nothing of the failed call
  EXPECT_EQ(*w.record(0).key, "a");
  EXPECT_EQ(*w.record(0).value, std::string("\0bin0", 5));
  EXPECT_EQ(*w.record(1).key, "1");  // null key cell → row index
  EXPECT_EQ(*w.record(1).value, std::string("\0bin1", 5));
}

TEST_F(ProducerTest, UndeliverableMessagesFailTheSend) {
  ProducerOptions po;
  po.brokers = "127.0.0.1:1";  // nothing listens there
  po.topic = "nowhere";
  po.message_timeout_ms = 1500;
  ASSERT_OK_AND_ASSIGN(auto producer, Producer::Make(po));
  auto sent = producer->SendRaw({{std::nullopt, "a"}, {std::nullopt, "b"}});
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.status().code(), StatusCode::kKafka);
  EXPECT_NE(sent.status().message().find("not delivered"), std::string::npos)
      << sent.status().message();
}

// The group coordinator moves to another broker between two commits: the second commit
// finds the new coordinator, and the group holds both windows' offsets.
TEST_F(ConsumerTest, CommitsFollowTheCoordinatorToAnotherBroker) {
  UseBrokers(3);
  CreateTopic("tc", 1, 40);
  ASSERT_OK(mc().SetGroupCoordinator("gc", 1));
  ASSERT_OK_AND_ASSIGN(auto c, Join("tc", "gc"));
  WindowOptions opts{.max_records = 20};
  ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
  ASSERT_EQ(w.size(), 20u);
  ASSERT_OK(c->Commit(w));
  ASSERT_OK(mc().SetGroupCoordinator("gc", 3));
  ASSERT_OK_AND_ASSIGN(auto w2, c->Poll(opts));
  ASSERT_EQ(w2.size(), 20u);
  ASSERT_OK(c->Commit(w2));
  ASSERT_OK_AND_ASSIGN(auto committed, c->Committed(std::chrono::seconds(10)));
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_EQ(committed[0].second, 40);
  ASSERT_OK(c->Close());
}

// The partition's leader moves mid-stream: the consumer follows it and reads every record
// once.
TEST_F(ConsumerTest, FollowsALeaderChangeWithoutLosingOrRepeatingRecords) {
  UseBrokers(3);
  CreateTopic("tl", 1);
  ASSERT_OK(mc().SetPartitionLeader("tl", 0, 1));
  ProduceIds(mc(), "tl", 0, 100);
  ASSERT_OK_AND_ASSIGN(auto c, Join("tl", "gl"));
  WindowOptions opts{.max_records = 30};
  Seen seen;
  ASSERT_OK_AND_ASSIGN(auto w, c->Poll(opts));
  Collect(w, &seen);
  ASSERT_OK(c->Commit(w));
  ASSERT_OK(mc().SetPartitionLeader("tl", 0, 2));
  ProduceIds(mc(), "tl", 100, 50);  // written to the new leader
  opts.max_wait = std::chrono::seconds(10);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (seen.offsets.size() < 150u && std::chrono::steady_clock::now() < deadline) {
    ASSERT_OK_AND_ASSIGN(auto next, c->Poll(opts));
    Collect(next, &seen);
    ASSERT_OK(c->Commit(next));
  }
  EXPECT_EQ(seen.offsets.size(), 150u);
  std::set<std::pair<int32_t, int64_t>> unique(seen.offsets.begin(), seen.offsets.end());
  EXPECT_EQ(unique.size(), 150u) << "a record was read twice";
}

// The only broker goes down while a window is in hand: the commit waits for it (retried)
// and succeeds once it is back, instead of failing the window.
TEST_F(ConsumerTest, ACommitWhileTheBrokerIsDownSucceedsWhenItIsBack) {
  CreateTopic("td", 1, 10);
  // The broker is down for 2 s, well within a session: the member must not be dropped
  // because librdkafka's reconnect backoff (growing to seconds while the broker is
  // down) or a busy machine stretched the outage past the 6 s session of the other
  // mock tests (the commit would then wait for the rebalance).
  ConsumerOptions o = ConsumerFor(mc(), "td", "gd");
  o.session_timeout_ms = 30000;
  o.properties["reconnect.backoff.max.ms"] = "500";
  ASSERT_OK_AND_ASSIGN(auto c, Consumer::Make(o));
  ASSERT_OK_AND_ASSIGN(auto w, c->Poll(WindowOptions{}));
  ASSERT_EQ(w.size(), 10u);
  ASSERT_OK(mc().SetBrokerDown(1));
  std::thread back([&] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    EXPECT_OK(mc().SetBrokerUp(1));
  });
  Status st = c->Commit(w);
  back.join();
  ASSERT_OK(st);
  ASSERT_OK_AND_ASSIGN(auto committed, c->Committed(std::chrono::seconds(10)));
  EXPECT_EQ(committed[0].second, 10);
}

// A rebalance that keeps a partition at its end, with records written after it got
// there: the member goes on at that end. (librdkafka 2.11, after an end-of-partition
// event, resumed such a partition one past its end: a record lost, or an out-of-range
// fetch that the reset policy turned into re-reading it from the start.)
TEST_P(ConsumerGroupProtocolTest, PartitionKeptThroughARebalanceGoesOnAtItsEnd) {
  CreateTopic("t40", 2, 20);
  WindowOptions opts{.max_records = 100, .max_wait = std::chrono::milliseconds(300)};
  ASSERT_OK_AND_ASSIGN(auto a, Join("t40", "g40", GetParam()));
  Seen seen = DrainAndCommit(*a, opts);  // both partitions at their end
  ASSERT_EQ(seen.offsets.size(), 20u);
  ASSERT_OK_AND_ASSIGN(auto b, Join("t40", "g40", GetParam()));
  auto add = [&](const Seen& more) {
    seen.offsets.insert(more.offsets.begin(), more.offsets.end());
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  WindowOptions wait = opts;
  wait.stop_at_end = false;  // each poll serves the group for max_wait
  while ((a->Assignment().size() != 1 || b->Assignment().size() != 1) &&
         std::chrono::steady_clock::now() < deadline) {
    for (Consumer* c : {a.get(), b.get()}) {
      ASSERT_OK_AND_ASSIGN(auto w, c->Poll(wait));
      Seen more;
      Collect(w, &more);
      add(more);
      ASSERT_OK(c->Commit(w));
    }
  }
  ASSERT_EQ(a->Assignment().size(), 1u) << "the group did not split the partitions";
  ProduceIds(mc(), "t40", 20, 20);
  while (seen.offsets.size() < 40u && std::chrono::steady_clock::now() < deadline) {
    add(DrainAndCommit(*a, opts));
    add(DrainAndCommit(*b, opts));
  }
  // Every record once: none skipped, none read again from the start.
  std::set<std::pair<int32_t, int64_t>> unique(seen.offsets.begin(), seen.offsets.end());
  EXPECT_EQ(unique.size(), 40u);
  EXPECT_EQ(seen.offsets.size(), 40u);
  ASSERT_OK(a->Close());
  ASSERT_OK(b->Close());
}

// A consumer process killed (SIGKILL) in the middle of its second window: the next
// member of the group re-reads exactly what was not committed.
TEST_P(ConsumerGroupProtocolTest, ConsumerKilledMidWindowRereadsOnlyUncommitted) {
  CreateTopic("t10", 3, 60);
  std::string bootstraps = mc().bootstraps();
  ConsumerOptions o = ConsumerFor(mc(), "t10", "g10", GetParam());
  std::vector<std::string> args = {KELT_KAFKA_CHILD,
                                   bootstraps,
                                   "t10",
                                   "g10",
                                   "15",
                                   std::string(GroupProtocolName(GetParam()))};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child should have been killed";
  EXPECT_EQ(WTERMSIG(status), SIGKILL);

  ASSERT_OK_AND_ASSIGN(auto c, Consumer::Make(o));
  WindowOptions opts{.max_records = 100};
  // Under KIP-848 the dead child's partitions come to this member once the cluster ended
  // its session (6 s), each in turn: drain until all of them came.
  Seen rest;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (rest.offsets.size() < 45u && std::chrono::steady_clock::now() < deadline) {
    Seen more = DrainAndCommit(*c, opts);
    rest.offsets.insert(more.offsets.begin(), more.offsets.end());
  }
  EXPECT_EQ(rest.offsets.size(), 45u);  // 60 minus the child's committed window of 15
  std::set<std::pair<int32_t, int64_t>> unique(rest.offsets.begin(), rest.offsets.end());
  EXPECT_EQ(unique.size(), 45u);
}

}  // namespace
}  // namespace kelt
