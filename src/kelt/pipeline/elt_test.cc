// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The ELT loop's decisions on librdkafka's mock cluster, with in-memory sinks: what is
// committed when, where a restart resumes, several sinks at different points, a sink
// that fails. The real-broker crash tests (tests/integration/elt_crash_test.cc) check
// the same guarantees with real sinks under kill -9.
#include "kelt/elt.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "kelt/kafka/mock_cluster_testing.h"
#include "kelt/log.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

// What a sink holds, shared with the test (the sink object is owned by the loop).
struct Store {
  std::multiset<std::pair<int64_t, int64_t>> rows;  // (partition, offset)
  OffsetMap durable;
  int writes = 0;
  int64_t max_rows_a_write = 0;
  int fail_on_write = -1;  // the n-th Write (1-based) fails
  bool buffer_until_flush = false;
  std::chrono::milliseconds write_delay{0};  // each Write takes this long (a slow sink)
};

// An in-memory sink that keeps rows (partition, offset) and is durable at once, or
// only at Flush (like a Parquet rotation).
class MemorySink final : public Sink {
 public:
  MemorySink(std::string name, std::shared_ptr<Store> store)
      : name_(std::move(name)), store_(std::move(store)) {}
  std::string name() const override { return name_; }
  Status Open(const std::shared_ptr<arrow::Schema>&,
              const std::shared_ptr<arrow::Schema>&) override {
    return Status::OK();
  }
  Result<OffsetMap> Resume(const std::vector<TopicPartition>& tps) override {
    OffsetMap out;
    for (const auto& tp : tps) {
      auto it = store_->durable.find(tp);
      if (it != store_->durable.end()) out[tp] = it->second;
    }
    return out;
  }
  Result<OffsetMap> Write(const SinkWindow& w) override {
    if (store_->write_delay.count() > 0) std::this_thread::sleep_for(store_->write_delay);
    if (++store_->writes == store_->fail_on_write) {
      return Status::IOError("injected write failure");
    }
    store_->max_rows_a_write = std::max(store_->max_rows_a_write, w.batch->num_rows());
    auto part = std::static_pointer_cast<arrow::Int64Array>(
        w.batch->GetColumnByName("_kafka_partition"));
    auto off = std::static_pointer_cast<arrow::Int64Array>(
        w.batch->GetColumnByName("_kafka_offset"));
    auto topic = std::static_pointer_cast<arrow::StringArray>(
        w.batch->GetColumnByName("_kafka_topic"));
    for (int64_t i = 0; i < w.batch->num_rows(); ++i) {
      TopicPartition tp{topic->GetString(i), static_cast<int32_t>(part->Value(i))};
      auto d = store_->durable.find(tp);
      if (d != store_->durable.end() && off->Value(i) < d->second) continue;  // stored
      pending_rows_.insert({part->Value(i), off->Value(i)});
    }
    for (const auto& s : w.spans) {
      int64_t& p = pending_[s.tp];
      p = std::max(p, s.last_offset + 1);
    }
    if (store_->buffer_until_flush) return OffsetMap{};
    return Flush();
  }
  Result<OffsetMap> Flush() override {
    store_->rows.insert(pending_rows_.begin(), pending_rows_.end());
    pending_rows_.clear();
    OffsetMap advanced;
    for (const auto& [tp, next] : pending_) {
      int64_t& d = store_->durable[tp];
      if (next > d) d = advanced[tp] = next;
    }
    pending_.clear();
    return advanced;
  }
  // Forget the rows not yet durable of these partitions.
  Status Drop(const std::vector<TopicPartition>& tps) override {
    for (const auto& tp : tps) {
      pending_.erase(tp);
      std::erase_if(pending_rows_,
                    [&](const auto& r) { return r.first == tp.partition; });
    }
    return Status::OK();
  }
  Status Close() override { return Flush().status(); }

 private:
  std::string name_;
  std::shared_ptr<Store> store_;
  std::multiset<std::pair<int64_t, int64_t>> pending_rows_;
  OffsetMap pending_;
};

Result<std::unique_ptr<EltLoop>> MakeLoop(EltOptions o,
                                          std::vector<std::shared_ptr<Store>> stores) {
  std::vector<std::unique_ptr<Sink>> sinks;
  int i = 0;
  for (auto& s : stores) {
    sinks.push_back(std::make_unique<MemorySink>("mem" + std::to_string(i++), s));
  }
  return EltLoop::Make(std::move(o), std::move(sinks));
}

// A loop on a thread of its own, stepping (pipelined, as Run does) until told to stop or
// done, then closed: its result in `result`.
void Drive(EltLoop* loop, const std::atomic<bool>* stop, Status* result) {
  while (!stop->load()) {
    auto more = loop->StepPipelined();
    if (!more.ok()) {
      *result = more.status();
      return;
    }
    if (!*more) break;
  }
  *result = loop->Close();
}

// Each test has its own mock cluster; the loops read it into in-memory sinks.
class EltLoopTest : public ::testing::Test {
 protected:
  // Create `topic` with `partitions` partitions and produce records {"id":0} to
  // {"id":records-1} to it.
  void CreateTopic(const std::string& topic, int partitions, int records) {
    ASSERT_OK(mc_->CreateTopic(topic, partitions));
    ProduceIds(*mc_, topic, 0, records);
  }

  // A loop reading `topic` as a member of `group` until caught up, in windows of 7.
  EltOptions Options(const std::string& topic, const std::string& group) {
    EltOptions o;
    o.consumer = ConsumerFor(*mc_, topic, group);
    o.window.max_records = 7;
    o.window.max_wait = std::chrono::milliseconds(2000);
    o.landing = Schema({{"id", TypeId::kInt64}});
    o.until_caught_up = true;
    return o;
  }

  // The group's committed offset of one partition (-1: none), asked of the cluster.
  int64_t Committed(const std::string& topic, const std::string& group,
                    int32_t partition) {
    auto offset = mc_->CommittedOffset(group, topic, partition);
    EXPECT_OK(offset);
    return offset.ok() ? *offset : -2;
  }

  std::unique_ptr<MockCluster> mc_ = StartMockCluster();
};

TEST_F(EltLoopTest, LandsEverythingOnceAndCommitsWhatIsDurable) {
  CreateTopic("e1", 2, 40);
  auto store = std::make_shared<Store>();
  ASSERT_OK_AND_ASSIGN(auto loop, MakeLoop(Options("e1", "g1"), {store}));
  ASSERT_OK_AND_ASSIGN(auto stats, loop->Run());
  EXPECT_TRUE(stats.caught_up);
  EXPECT_EQ(stats.rows, 40);
  EXPECT_EQ(store->rows.size(), 40u);
  int64_t total = 0;
  for (const auto& [tp, next] : stats.committed) total += next;
  EXPECT_EQ(total, 40);  // committed = durable = everything
  EXPECT_EQ(stats.committed, store->durable);
}

// Windows loaded on several cores reach the sinks as one batch: every row once, dead
// letters counted, in offset order within each partition.
TEST_F(EltLoopTest, ParallelLoadLandsEveryRowOnce) {
  CreateTopic("e10", 2, 30);
  ProduceRaw(*mc_, "e10", {{"k", "{\"id\":\"bad\"}"}, {"k", "not json"}});
  ProduceIds(*mc_, "e10", 30, 10);
  auto store = std::make_shared<Store>();
  EltOptions o = Options("e10", "g10");
  o.window.max_records = 20;
  o.min_records_per_loader = 3;
  ASSERT_OK_AND_ASSIGN(auto loop, MakeLoop(o, {store}));
  ASSERT_OK_AND_ASSIGN(auto stats, loop->Run());
  EXPECT_EQ(stats.records, 42);
  EXPECT_EQ(stats.rows, 40);
  EXPECT_EQ(stats.dead_lettered, 2);
  std::set<std::pair<int64_t, int64_t>> unique(store->rows.begin(), store->rows.end());
  EXPECT_EQ(unique.size(), store->rows.size());
  EXPECT_EQ(store->rows.size(), 40u);
  int64_t total = 0;
  for (const auto& [tp, next] : stats.committed) total += next;
  EXPECT_EQ(total, 42);
}

TEST_F(EltLoopTest, AWindowLoadedInChunksReachesTheSinksAsOneWrite) {
  CreateTopic("e11", 2, 100);
  auto store = std::make_shared<Store>();
  EltOptions o = Options("e11", "g11");
  o.window.max_records = 60;
  o.load_chunk_records = 7;  // each chunk's messages are freed once it is loaded
  ASSERT_OK_AND_ASSIGN(auto loop, MakeLoop(o, {store}));
  ASSERT_OK_AND_ASSIGN(auto stats, loop->Run());
  EXPECT_EQ(stats.records, 100);
  EXPECT_EQ(stats.rows, 100);
  EXPECT_GT(store->max_rows_a_write, 7) << "the chunks did not make one window";
  EXPECT_LE(store->max_rows_a_write, 60);
  std::set<std::pair<int64_t, int64_t>> unique(store->rows.begin(), store->rows.end());
  EXPECT_EQ(unique.size(), 100u);
  EXPECT_EQ(store->rows.size(), 100u);
  EXPECT_EQ(Committed("e11", "g11", 0) + Committed("e11", "g11", 1), 100);
  for (int32_t p = 0; p < 2; ++p) {  // the spans of the chunks, merged
    EXPECT_EQ((store->durable[TopicPartition{"e11", p}]), Committed("e11", "g11", p));
  }
}

// A write that takes longer than stalled_write_warning is logged, naming the sink, and
// the loop waits it out: every row lands once. 0 logs nothing.
TEST_F(EltLoopTest, AStalledWriteIsLoggedWithItsSinkAndWaitedFor) {
  CreateTopic("e13", 1, 10);
  for (const int warn_ms : {50, 0}) {
    auto store = std::make_shared<Store>();
    store->write_delay = std::chrono::milliseconds(400);
    EltOptions o = Options("e13", "g13-" + std::to_string(warn_ms));
    o.stalled_write_warning = std::chrono::milliseconds(warn_ms);
    std::vector<std::string> warnings;
    std::mutex mu;
    SetLogHook(
        [&](LogLevel level, std::string_view component, std::string_view message) {
          std::lock_guard<std::mutex> lock(mu);
          if (level == LogLevel::kWarning && component == "elt") {
            warnings.emplace_back(message);
          }
        },
        LogLevel::kInfo);
    ASSERT_OK_AND_ASSIGN(auto loop, MakeLoop(o, {store}));
    ASSERT_OK_AND_ASSIGN(auto stats, loop->Run());
    SetLogHook(nullptr);
    EXPECT_EQ(stats.rows, 10);
    EXPECT_EQ(store->rows.size(), 10u);
    if (warn_ms == 0) {
      EXPECT_TRUE(warnings.empty()) << warnings.front();
      continue;
    }
    ASSERT_FALSE(warnings.empty());
    EXPECT_NE(
        warnings.front().find(" records is still being written to sink mem0 after "),
        std::string::npos)
        << warnings.front();
    EXPECT_NE(warnings.front().find("stalled_write_warning_ms"), std::string::npos);
  }
}

// A member joins while the first is in the middle of a window loaded in chunks: the
// first gives the window back (its chunks may hold rows of partitions it loses), and
// between the two every record lands once.
TEST_F(EltLoopTest, ARebalanceInTheMiddleOfAChunkedWindowGivesItBackAndLosesNothing) {
  CreateTopic("e12", 2, 40);
  auto first = std::make_shared<Store>();
  auto second = std::make_shared<Store>();
  EltOptions o = Options("e12", "g12");
  o.until_caught_up = false;
  o.window.max_records = 41;  // more than the topic holds: the window waits
  o.window.max_wait = std::chrono::milliseconds(10000);
  o.window.stop_at_end = false;
  o.load_chunk_records = 5;
  std::atomic<int> given_back{0}, assigned{0};
  SetLogHook(
      [&](LogLevel, std::string_view component, std::string_view message) {
        if (component == "elt" && message.find("given back") != std::string_view::npos) {
          ++given_back;
        }
        if (component == "kafka" && message.starts_with("assigned")) ++assigned;
      },
      LogLevel::kInfo);
  std::atomic<bool> stop{false};
  ASSERT_OK_AND_ASSIGN(auto a, MakeLoop(o, {first}));
  Status a_result, b_result;
  std::thread a_thread(Drive, a.get(), &stop, &a_result);
  // The first member has both partitions and is inside a window, whose chunks hold the
  // records it has read, when the second joins.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (assigned.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  o.window.max_wait = std::chrono::milliseconds(500);
  o.window.stop_at_end = true;
  ASSERT_OK_AND_ASSIGN(auto b, MakeLoop(o, {second}));
  std::thread b_thread(Drive, b.get(), &stop, &b_result);
  auto committed_total = [&] {
    return std::max<int64_t>(Committed("e12", "g12", 0), 0) +
           std::max<int64_t>(Committed("e12", "g12", 1), 0);
  };
  while (committed_total() < 40 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stop = true;
  a_thread.join();
  b_thread.join();
  SetLogHook(nullptr);
  EXPECT_OK(a_result);
  EXPECT_OK(b_result);
  EXPECT_GE(given_back.load(), 1) << "the rebalance did not come mid-window";
  EXPECT_EQ(committed_total(), 40);
  std::multiset<std::pair<int64_t, int64_t>> all(first->rows.begin(), first->rows.end());
  all.insert(second->rows.begin(), second->rows.end());
  std::set<std::pair<int64_t, int64_t>> unique(all.begin(), all.end());
  EXPECT_EQ(unique.size(), 40u) << "an offset was lost";
  EXPECT_EQ(all.size(), 40u) << "an offset landed twice";
  EXPECT_FALSE(second->rows.empty()) << "the second member never got a partition";
}

TEST_F(EltLoopTest, CommitsNothingBeforeTheSinkSaysDurable) {
  CreateTopic("e2", 1, 20);
  auto store = std::make_shared<Store>();
  store->buffer_until_flush = true;  // like a Parquet rotation that has not closed
  EltOptions o = Options("e2", "g2");
  o.until_caught_up = false;
  o.max_windows = 2;
  ASSERT_OK_AND_ASSIGN(auto loop, MakeLoop(o, {store}));
  // Two windows with records (the first polls may only join the group).
  for (int i = 0; i < 20 && loop->stats().windows < 2; ++i) ASSERT_OK(loop->Step());
  ASSERT_EQ(loop->stats().windows, 2);
  EXPECT_TRUE(loop->stats().committed.empty()) << "committed before the sink was durable";
  EXPECT_TRUE(store->rows.empty());
  ASSERT_OK(loop->Close());  // flushes, then commits
  EXPECT_EQ(store->rows.size(), 14u);
  EXPECT_EQ(Committed("e2", "g2", 0), 14);
}

TEST_F(EltLoopTest, ResumesFromTheSinksNotTheGroup) {
  CreateTopic("e3", 1, 30);
  auto store = std::make_shared<Store>();
  // The sink already holds 0..11 (a crash after writing, before committing): a new
  // group with no committed offset must start at 12, not at "earliest".
  for (int64_t o = 0; o < 12; ++o) store->rows.insert({0, o});
  store->durable[{"e3", 0}] = 12;
  ASSERT_OK_AND_ASSIGN(auto loop, MakeLoop(Options("e3", "g3"), {store}));
  ASSERT_OK_AND_ASSIGN(auto stats, loop->Run());
  EXPECT_EQ(stats.records, 18);
  EXPECT_EQ(store->rows.size(), 30u);
  std::set<std::pair<int64_t, int64_t>> unique(store->rows.begin(), store->rows.end());
  EXPECT_EQ(unique.size(), 30u);
}

TEST_F(EltLoopTest, SeveralSinksStartAtTheLowestAndEachSkipsWhatItHas) {
  CreateTopic("e4", 1, 25);
  auto ahead = std::make_shared<Store>();
  auto behind = std::make_shared<Store>();
  for (int64_t o = 0; o < 20; ++o) ahead->rows.insert({0, o});
  ahead->durable[{"e4", 0}] = 20;
  for (int64_t o = 0; o < 5; ++o) behind->rows.insert({0, o});
  behind->durable[{"e4", 0}] = 5;
  ASSERT_OK_AND_ASSIGN(auto loop, MakeLoop(Options("e4", "g4"), {ahead, behind}));
  ASSERT_OK_AND_ASSIGN(auto stats, loop->Run());
  EXPECT_EQ(stats.records, 20);  // read from 5, the lowest durable point
  for (const auto& store : {ahead, behind}) {
    std::set<std::pair<int64_t, int64_t>> unique(store->rows.begin(), store->rows.end());
    EXPECT_EQ(store->rows.size(), 25u);
    EXPECT_EQ(unique.size(), 25u);
  }
  EXPECT_EQ(stats.committed.at({"e4", 0}), 25);
}

TEST_F(EltLoopTest, AFailingSinkStopsTheRunAndARestartLosesNothing) {
  CreateTopic("e5", 1, 30);
  auto good = std::make_shared<Store>();
  auto bad = std::make_shared<Store>();
  bad->fail_on_write = 3;
  {
    ASSERT_OK_AND_ASSIGN(auto loop, MakeLoop(Options("e5", "g5"), {good, bad}));
    auto stats = loop->Run();
    ASSERT_FALSE(stats.ok());
    EXPECT_NE(stats.status().message().find("sink mem1"), std::string::npos)
        << stats.status().ToString();
    EXPECT_NE(stats.status().message().find("injected write failure"), std::string::npos);
    EXPECT_EQ(loop->stats().rows, 14);  // the failed window is not counted as landed
  }
  // Committed: only what both held (2 windows of 7), whatever the good sink got further.
  EXPECT_EQ(Committed("e5", "g5", 0), 14);
  ASSERT_OK_AND_ASSIGN(auto loop, MakeLoop(Options("e5", "g5"), {good, bad}));
  ASSERT_OK(loop->Run());
  for (const auto& store : {good, bad}) {
    std::set<std::pair<int64_t, int64_t>> unique(store->rows.begin(), store->rows.end());
    EXPECT_EQ(store->rows.size(), 30u);
    EXPECT_EQ(unique.size(), 30u);
  }
}

// StepPipelined hands each window to the writer and returns: the window is counted,
// committed and reported by the next step (Close() finishes the last one), and what is
// committed is always exactly what every sink holds.
TEST_F(EltLoopTest, StepPipelinedCommitsEachWindowOneStepLaterAndCloseFinishesTheLast) {
  CreateTopic("p1", 1, 30);
  auto store = std::make_shared<Store>();
  ASSERT_OK_AND_ASSIGN(auto loop, MakeLoop(Options("p1", "gp1"), {store}));
  std::vector<int64_t> reported;  // rows landed when each window was reported
  std::vector<size_t> sizes;
  auto on_window = [&](const EltStats& st, const Window& w) {
    reported.push_back(st.rows);
    sizes.push_back(w.size());
  };
  bool saw_in_flight = false;
  for (bool more = true; more;) {
    ASSERT_OK_AND_ASSIGN(more, loop->StepPipelined(on_window));
    const EltStats& st = loop->stats();
    const int64_t in_flight = st.records - st.rows;
    EXPECT_GE(in_flight, 0);
    EXPECT_LE(in_flight, 7);
    saw_in_flight = saw_in_flight || in_flight > 0;
    auto c = st.committed.find({"p1", 0});
    EXPECT_EQ(c == st.committed.end() ? 0 : c->second, st.rows)
        << "committed must be exactly what landed";
  }
  EXPECT_TRUE(saw_in_flight) << "a step returned with its window still being written";
  EXPECT_EQ(loop->stats().records, 30);
  ASSERT_OK(loop->Close());
  EXPECT_EQ(loop->stats().rows, 30);
  EXPECT_EQ(Committed("p1", "gp1", 0), 30);
  std::set<std::pair<int64_t, int64_t>> unique(store->rows.begin(), store->rows.end());
  EXPECT_EQ(store->rows.size(), 30u);
  EXPECT_EQ(unique.size(), 30u);
  ASSERT_GE(reported.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(reported[i], 7 * static_cast<int64_t>(i + 1));
    EXPECT_EQ(sizes[i], 7u);
  }
}

// Offsets of the rows a store holds, each counted once, and whether any came twice.
std::set<int64_t> Offsets(const Store& store, bool* duplicated) {
  std::set<int64_t> out;
  for (const auto& [partition, offset] : store.rows) {
    if (!out.insert(offset).second) *duplicated = true;
  }
  return out;
}

// A bad record under `fail` stops the loop; stepping on must not pass over its window
// (a later commit would lose it). A new loop with another policy lands it all once.
TEST_F(EltLoopTest, ABadRecordUnderFailStopsTheLoopAndNothingAfterItIsCommitted) {
  CreateTopic("e7", 1, 10);
  ProduceRaw(*mc_, "e7", {{std::nullopt, "{\"id\":\"ten\"}"}});
  ProduceIds(*mc_, "e7", 11, 19);
  auto store = std::make_shared<Store>();
  EltOptions o = Options("e7", "g7");
  o.load.on_bad_record = BadRecordPolicy::kFail;
  {
    ASSERT_OK_AND_ASSIGN(auto loop, MakeLoop(o, {store}));
    Result<bool> step = true;
    for (int i = 0; i < 50 && step.ok() && *step; ++i) step = loop->Step();
    ASSERT_FALSE(step.ok()) << "the bad record did not fail the window";
    EXPECT_NE(step.status().message().find("(at e7[0]@10, "), std::string::npos)
        << step.status().ToString();
    for (int i = 0; i < 3; ++i) {
      auto again = loop->Step();
      ASSERT_FALSE(again.ok()) << "a step after the failure went on past its window";
      EXPECT_NE(again.status().message().find("stopped at an earlier error"),
                std::string::npos)
          << again.status().ToString();
    }
    EXPECT_EQ(loop->stats().records, 7);
    ASSERT_OK(loop->Close());
  }
  EXPECT_EQ(Committed("e7", "g7", 0), 7);
  EXPECT_EQ(store->rows.size(), 7u);

  o.load.on_bad_record = BadRecordPolicy::kDeadLetter;
  ASSERT_OK_AND_ASSIGN(auto loop, MakeLoop(o, {store}));
  ASSERT_OK_AND_ASSIGN(auto stats, loop->Run());
  EXPECT_EQ(stats.dead_lettered, 1);
  bool duplicated = false;
  std::set<int64_t> offsets = Offsets(*store, &duplicated);
  EXPECT_FALSE(duplicated);
  EXPECT_EQ(offsets.size(), 29u);
  EXPECT_FALSE(offsets.count(10)) << "the bad record landed as a row";
  EXPECT_EQ(Committed("e7", "g7", 0), 30);
}

// Sinks that buffer (like a Parquet rotation): after one fails, Close flushes the
// healthy one and drops the failed one's buffer; nothing is committed past what both
// hold, and the next loop lands every offset exactly once in both.
TEST_F(EltLoopTest, CloseAfterAFailureFlushesHealthySinksAndDropsTheFailedOne) {
  CreateTopic("e8", 1, 30);
  auto good = std::make_shared<Store>();
  auto bad = std::make_shared<Store>();
  good->buffer_until_flush = bad->buffer_until_flush = true;
  bad->fail_on_write = 2;
  {
    ASSERT_OK_AND_ASSIGN(auto loop, MakeLoop(Options("e8", "g8"), {good, bad}));
    Result<bool> step = true;
    for (int i = 0; i < 50 && step.ok() && *step; ++i) step = loop->Step();
    ASSERT_FALSE(step.ok());
    ASSERT_FALSE(loop->Step().ok());
    ASSERT_OK(loop->Close());
  }
  EXPECT_EQ(good->rows.size(), 14u);  // both windows it was given
  EXPECT_TRUE(bad->rows.empty()) << "the failed sink flushed a window with a hole";
  // Nothing is durable in both: the group has no committed offset.
  EXPECT_LT(Committed("e8", "g8", 0), 0);

  bad->fail_on_write = -1;
  ASSERT_OK_AND_ASSIGN(auto loop, MakeLoop(Options("e8", "g8"), {good, bad}));
  ASSERT_OK(loop->Run());
  for (const auto& store : {good, bad}) {
    bool duplicated = false;
    EXPECT_EQ(Offsets(*store, &duplicated).size(), 30u);
    EXPECT_FALSE(duplicated);
  }
  EXPECT_EQ(Committed("e8", "g8", 0), 30);
}

// The identity columns are read by the sinks as utf8/int64: another type is refused
// up front, naming the column, instead of being misread.
TEST_F(EltLoopTest, RefusesIdentityColumnsOfAnotherType) {
  for (const auto& [name, type] : {std::pair{"_kafka_offset", TypeId::kUtf8},
                                   std::pair{"_kafka_partition", TypeId::kFloat64},
                                   std::pair{"_kafka_topic", TypeId::kInt64}}) {
    EltOptions o = Options("e9", "g9");
    Field f;
    f.name = name;
    f.type = type;
    o.landing.fields.push_back(f);
    std::vector<std::unique_ptr<Sink>> sinks;
    sinks.push_back(std::make_unique<MemorySink>("m", std::make_shared<Store>()));
    auto loop = EltLoop::Make(o, std::move(sinks));
    ASSERT_FALSE(loop.ok()) << name;
    EXPECT_NE(loop.status().message().find(std::string("'") + name + "'"),
              std::string::npos)
        << loop.status().ToString();
  }
}

// A catch-up run against a broker nobody answers at fails after assignment_timeout,
// naming the brokers and the topic, instead of waiting forever.
TEST_F(EltLoopTest, CatchUpWithNoAssignmentFailsAfterTheTimeout) {
  EltOptions o = Options("e11", "g11");
  o.consumer.brokers = "127.0.0.1:1";
  o.window.max_wait = std::chrono::milliseconds(200);
  o.assignment_timeout = std::chrono::milliseconds(1500);
  ASSERT_OK_AND_ASSIGN(auto loop, MakeLoop(o, {std::make_shared<Store>()}));
  const auto start = std::chrono::steady_clock::now();
  auto stats = loop->Run();
  ASSERT_FALSE(stats.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  for (const char* part :
       {"no partition of e11", "127.0.0.1:1", "assignment_timeout_ms"}) {
    EXPECT_NE(stats.status().message().find(part), std::string::npos)
        << stats.status().ToString();
  }
}

// A second loop joins the group while the first one keeps a write in flight on its
// writer thread (a slow sink): the first loop's revocation settles the write and commits
// it, the second loop takes over from the group's offsets, and every offset lands. Under
// the tsan preset this is the check of the writer thread against the revocation hook
// (librdkafka's callback, on the loop's thread) with two loops in one process.
TEST_F(EltLoopTest, ALoopJoiningWhileAWriteIsInFlightTakesOverAndNothingIsLost) {
  constexpr int kRecords = 1500;
  CreateTopic("r1", 2, kRecords);
  auto first = std::make_shared<Store>();
  auto second = std::make_shared<Store>();
  first->write_delay = second->write_delay = std::chrono::milliseconds(20);
  EltOptions o = Options("r1", "gr1");
  o.until_caught_up = false;  // a service: runs until told to stop
  o.window.max_wait = std::chrono::milliseconds(200);
  std::atomic<bool> stop{false};
  auto committed_total = [&] {
    int64_t total = 0;
    for (int32_t p = 0; p < 2; ++p)
      total += std::max<int64_t>(Committed("r1", "gr1", p), 0);
    return total;
  };
  ASSERT_OK_AND_ASSIGN(auto a, MakeLoop(o, {first}));
  Status a_result, b_result;
  std::thread a_thread(Drive, a.get(), &stop, &a_result);
  std::unique_ptr<EltLoop> b;
  std::thread b_thread;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  // The second member joins once the first has landed part of the topic.
  while (committed_total() < kRecords / 10 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto made = MakeLoop(o, {second});
  if (made.ok()) {
    b = std::move(*made);
    b_thread = std::thread(Drive, b.get(), &stop, &b_result);
    while (committed_total() < kRecords && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  stop = true;
  a_thread.join();
  if (b_thread.joinable()) b_thread.join();
  ASSERT_OK(made.status());
  EXPECT_OK(a_result);
  EXPECT_OK(b_result);
  EXPECT_EQ(committed_total(), kRecords);
  // The threads are joined: the stores are this thread's now.
  std::set<std::pair<int64_t, int64_t>> all(first->rows.begin(), first->rows.end());
  all.insert(second->rows.begin(), second->rows.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(kRecords)) << "an offset was lost";
  EXPECT_FALSE(second->rows.empty()) << "the second loop never got a partition";
  EXPECT_LT(first->rows.size(), static_cast<size_t>(kRecords))
      << "the first loop kept every partition";
}

TEST_F(EltLoopTest, RefusesAConsumerResumeHookAndNoSinks) {
  EltOptions o = Options("e6", "g6");
  auto none = EltLoop::Make(o, {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("at least one sink"), std::string::npos);
  o.consumer.resume = [](const std::vector<TopicPartition>&) -> Result<OffsetMap> {
    return OffsetMap{};
  };
  std::vector<std::unique_ptr<Sink>> sinks;
  sinks.push_back(std::make_unique<MemorySink>("m", std::make_shared<Store>()));
  auto hooked = EltLoop::Make(o, std::move(sinks));
  ASSERT_FALSE(hooked.ok());
  EXPECT_NE(hooked.status().message().find("resume hook"), std::string::npos);
}

}  // namespace
}  // namespace kelt
