// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Exactly-once under kill -9: produce N records (some malformed) to several partitions
// of the real broker, run the ELT loop (elt_child) and SIGKILL it at random moments many
// times, restart it each time, let the last run finish, then check that the sink holds
// every offset exactly once — landed rows and dead letters together — and no temporary
// file. N, the kills and the window size come from KELT_CRASH_N / KELT_CRASH_KILLS /
// KELT_CRASH_WINDOW (small by default; scripts/crash_test.sh runs the long version).
#include <arrow/api.h>
#include <arrow/filesystem/s3fs.h>
#include <arrow/io/file.h>
#include <duckdb.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <parquet/arrow/reader.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "broker_env.h"
#include "group_view.h"
#include "kelt/kafka.h"
#include "kelt/testing/assertions.h"

extern char** environ;

namespace kelt {
namespace {

namespace fs = std::filesystem;
using Offsets = std::multiset<std::pair<int64_t, int64_t>>;  // (partition, offset)

std::string Bootstrap() {
  return testing::ReadBrokerEnv("KELT_KAFKA_ENV",
                                KELT_KAFKA_ENV_FILE)["KELT_KAFKA_BOOTSTRAP"];
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

void CreateTopic(const std::string& name, int partitions) {
  std::string cmd;
  ASSERT_EQ(testing::CreateTopic(name, partitions, KELT_SOURCE_DIR, KELT_KAFKA_DIR, &cmd),
            0)
      << cmd;
}

// Produce n records; every 97th payload is not valid for the schema (dead letter).
void Produce(const std::string& topic, int n, std::set<int>* bad_ids) {
  ProducerOptions po;
  po.brokers = Bootstrap();
  po.topic = topic;
  ASSERT_OK_AND_ASSIGN(auto producer, Producer::Make(po));
  std::vector<std::pair<std::optional<std::string>, std::string>> msgs;
  for (int i = 0; i < n; ++i) {
    if (i % 97 == 13) {
      bad_ids->insert(i);
      msgs.emplace_back("k" + std::to_string(i),
                        R"({"id":"not a number )" + std::to_string(i) + R"("})");
    } else {
      msgs.emplace_back("k" + std::to_string(i), R"({"id":)" + std::to_string(i) +
                                                     R"(,"name":"row )" +
                                                     std::to_string(i) + R"("})");
    }
  }
  ASSERT_OK_AND_ASSIGN(auto sent, producer->SendRaw(msgs));
  ASSERT_EQ(sent, n);
}

// Start `args`, its stdout to /dev/null and its stderr to `stderr_path` when given.
pid_t Spawn(const std::vector<std::string>& args, const std::string& stderr_path = "") {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  if (!stderr_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(rc, 0);
  return pid;
}

// A progress measurement that succeeded (retried while progress() reports failure).
int64_t Measure(const std::function<int64_t()>& progress) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    const int64_t v = progress();
    if (v >= 0) return v;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "the sink's progress could not be measured";
  return -1;
}

// The last `lines` lines of the file at `path`.
std::string Tail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  for (std::string line; std::getline(in, line);) {
    last.push_back(line);
    if (last.size() > lines) last.pop_front();
  }
  std::string out;
  for (const auto& l : last) out += l + "\n";
  return out;
}

// Kill the loop `kills` times at random moments, then let a last run finish.
// `progress()` measures what the sink holds (< 0: could not measure now); kills must land
// at several progress points. With `final_log`, the last run logs (--verbose) to that
// file, and its tail is printed when the test has failed by the end of the scope.
void RunWithKills(const std::vector<std::string>& args, int kills, std::mt19937* rng,
                  const std::function<int64_t()>& progress,
                  const std::string& final_log = "") {
  std::uniform_int_distribution<int> delay_ms(50, 800);
  int killed_while_running = 0;
  std::set<int64_t> progress_at_kills;
  std::uniform_int_distribution<int> extra_ms(0, 400);
  std::uniform_int_distribution<int> coin(0, 3);
  for (int k = 0; k < kills; ++k) {
    const int64_t before = Measure(progress);
    pid_t pid = Spawn(args);
    int status = 0;
    if (coin(*rng) == 0) {
      // Anywhere, the start-up and group join included.
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(*rng)));
    } else {
      // Soon after the sink made progress: in the middle of the next rotation.
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      // A failed measurement (progress() < 0, e.g. a listing the object store refused
      // under load) is not progress.
      auto moved = [&] {
        const int64_t now = progress();
        return now >= 0 && now != before;
      };
      while (!moved() && std::chrono::steady_clock::now() < deadline &&
             waitpid(pid, &status, WNOHANG) == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(extra_ms(*rng)));
    }
    if (waitpid(pid, &status, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ++killed_while_running;
      const int64_t at = Measure(progress);
      progress_at_kills.insert(at);
      std::fprintf(stderr, "kill %d at progress %lld (before %lld)\n", k,
                   static_cast<long long>(at), static_cast<long long>(before));
    } else {
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << "the loop failed on its own (status " << status << ")";
    }
  }
  std::vector<std::string> final_args = args;
  if (!final_log.empty()) final_args.push_back("--verbose");
  pid_t pid = Spawn(final_args, final_log);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "final run, status " << status;
  EXPECT_GT(killed_while_running, 0) << "no kill landed while the loop was running";
  if (kills >= 4) {
    EXPECT_GE(progress_at_kills.size(), 2u)
        << "every kill found the sink at the same point: the test did not interrupt work";
  }
}

std::shared_ptr<arrow::Table> ReadParquet(
    std::shared_ptr<arrow::io::RandomAccessFile> in) {
  auto reader = parquet::arrow::OpenFile(in, arrow::default_memory_pool());
  EXPECT_OK(reader);
  auto table = (*reader)->ReadTable();
  EXPECT_OK(table);
  return table.ok() ? *table : nullptr;
}

std::shared_ptr<arrow::Table> ReadParquet(const std::string& path) {
  auto in = arrow::io::ReadableFile::Open(path);
  EXPECT_OK(in) << path;
  return ReadParquet(*in);
}

void AddOffsets(const arrow::Table& t, Offsets* out, std::set<int64_t>* ids) {
  auto parts = t.GetColumnByName("_kafka_partition");
  auto offs = t.GetColumnByName("_kafka_offset");
  auto id_col = t.GetColumnByName("id");
  for (int c = 0; c < offs->num_chunks(); ++c) {
    auto p = std::static_pointer_cast<arrow::Int64Array>(parts->chunk(c));
    auto o = std::static_pointer_cast<arrow::Int64Array>(offs->chunk(c));
    for (int64_t i = 0; i < o->length(); ++i) {
      out->insert({p->Value(i), o->Value(i)});
      if (ids && id_col) {
        ids->insert(
            std::static_pointer_cast<arrow::Int64Array>(id_col->chunk(c))->Value(i));
      }
    }
  }
}

// The sink holds every produced offset (n in all) exactly once: landed rows and dead
// letters together, the dead letters being exactly the malformed records.
void ExpectExactlyOnce(const Offsets& landed, const Offsets& dead, int n,
                       const std::set<int>& bad_ids) {
  EXPECT_EQ(landed.size() + dead.size(), static_cast<size_t>(n));
  EXPECT_EQ(dead.size(), bad_ids.size());
  Offsets all = landed;
  all.insert(dead.begin(), dead.end());
  std::set<std::pair<int64_t, int64_t>> unique(all.begin(), all.end());
  EXPECT_EQ(unique.size(), all.size()) << "duplicates";
  int reported = 0;
  for (auto it = all.begin(); it != all.end() && reported < 10;
       it = all.upper_bound(*it)) {
    if (all.count(*it) > 1) {
      ++reported;
      ADD_FAILURE() << "partition " << it->first << " offset " << it->second << " stored "
                    << all.count(*it) << " times";
    }
  }
  // Offsets per partition are 0..count-1 without a hole.
  std::map<int64_t, int64_t> per_partition;
  for (auto [p, o] : unique) per_partition[p] = std::max(per_partition[p], o + 1);
  int64_t total = 0;
  for (auto [p, count] : per_partition) total += count;
  EXPECT_EQ(total, n) << "holes";
}

// Every file of a local Parquet landing root: rows, dead letters and landed ids; returns
// how many hidden (temporary) files are left.
int ReadLocalLanding(const std::string& root, Offsets* landed, Offsets* dead,
                     std::set<int64_t>* ids) {
  int hidden = 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    std::string name = e.path().filename().string();
    if (name[0] == '.') {
      ++hidden;
      continue;
    }
    bool is_dead = fs::relative(e.path(), root).string().rfind("_dead_letter", 0) == 0;
    AddOffsets(*ReadParquet(e.path().string()), is_dead ? dead : landed,
               is_dead ? nullptr : ids);
  }
  return hidden;
}

class EltCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Bootstrap().empty()) GTEST_FAIL() << "KELT_KAFKA_ENV names no broker env file";
    n_ = EnvInt("KELT_CRASH_N", 5000);
    kills_ = EnvInt("KELT_CRASH_KILLS", 6);
    window_ = std::to_string(EnvInt("KELT_CRASH_WINDOW", 10));
    topic_ = testing::UniqueTopic("crash");
    CreateTopic(topic_, 3);
    Produce(topic_, n_, &bad_ids_);
    char tmpl[] = "/tmp/kelt-crash-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  void ExpectExactlyOnce(const Offsets& landed, const Offsets& dead) {
    kelt::ExpectExactlyOnce(landed, dead, n_, bad_ids_);
  }
  // The local Parquet landing under `root` holds every offset once, with no hidden file
  // left behind, and every good record's id.
  void ExpectLocalLandingExactlyOnce(const std::string& root) {
    Offsets landed, dead;
    std::set<int64_t> ids;
    EXPECT_EQ(ReadLocalLanding(root, &landed, &dead, &ids), 0)
        << "temporary files left behind";
    ExpectExactlyOnce(landed, dead);
    EXPECT_EQ(ids.size(), static_cast<size_t>(n_) - bad_ids_.size());
  }

  int n_ = 0, kills_ = 0;
  std::string window_;  // max_records per window of the loop under test
  std::string topic_, dir_;
  std::set<int> bad_ids_;
  std::mt19937 rng_{std::random_device{}()};
};

// Published files under `root` (the crash tests' progress measure).
int64_t CountFiles(const std::string& root) {
  int64_t n = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file() && it->path().filename().string()[0] != '.') ++n;
  }
  return n;
}

TEST_F(EltCrashTest, ParquetHoldsEveryOffsetExactlyOnceAfterKills) {
  const std::string root = dir_ + "/landing";
  RunWithKills(
      {KELT_ELT_CHILD, Bootstrap(), topic_, topic_ + "-g", "parquet", root, window_},
      kills_, &rng_, [&] { return CountFiles(root); });
  ExpectLocalLandingExactlyOnce(root);
}

// The same under KIP-848, with dynamic members: each restarted child waits for its killed
// predecessor's session (10 s on the test broker) before it gets the partitions back.
TEST_F(EltCrashTest, ParquetHoldsEveryOffsetExactlyOnceAfterKillsUnderKip848) {
  const std::string root = dir_ + "/landing";
  const std::string log = dir_ + "/final-run.log";
  RunWithKills(
      {KELT_ELT_CHILD, Bootstrap(), topic_, topic_ + "-g", "parquet", root, window_,
       "--group-protocol=consumer", "--instance-id="},
      std::min(kills_, 3), &rng_, [&] { return CountFiles(root); }, log);
  ExpectLocalLandingExactlyOnce(root);
  if (HasFailure()) {
    std::fprintf(stderr, "the last run's log (tail):\n%s", Tail(log, 60).c_str());
  }
}

TEST_F(EltCrashTest, ParquetOnS3HoldsEveryOffsetExactlyOnceAfterKills) {
  auto s3env = testing::ReadBrokerEnv("KELT_S3_ENV", KELT_S3_ENV_FILE);
  ASSERT_FALSE(s3env["KELT_S3_ENDPOINT"].empty()) << "KELT_S3_ENV names no S3 env file";
  ::setenv("KELT_S3_ENDPOINT", s3env["KELT_S3_ENDPOINT"].c_str(), 1);
  const std::string prefix = s3env["KELT_S3_BUCKET"] + "/" + topic_;
  ASSERT_OK(arrow::fs::EnsureS3Initialized());
  auto options = arrow::fs::S3Options::FromAccessKey("testing", "testing");
  options.region = "us-east-1";
  options.scheme = "http";
  options.endpoint_override = s3env["KELT_S3_ENDPOINT"].substr(7);
  ASSERT_OK_AND_ASSIGN(auto s3, arrow::fs::S3FileSystem::Make(options));
  auto list = [&]() {
    arrow::fs::FileSelector sel;
    sel.base_dir = prefix;
    sel.recursive = true;
    sel.allow_not_found = true;
    auto infos = s3->GetFileInfo(sel);
    std::optional<std::vector<arrow::fs::FileInfo>> files;
    if (!infos.ok()) {
      std::fprintf(stderr, "listing %s failed: %s\n", prefix.c_str(),
                   infos.status().ToString().c_str());
      return files;
    }
    files.emplace();
    for (auto& i : *infos) {
      if (i.IsFile()) files->push_back(i);
    }
    return files;
  };
  RunWithKills({KELT_ELT_CHILD, Bootstrap(), topic_, topic_ + "-g", "parquet",
                "s3://" + prefix, window_},
               kills_, &rng_, [&]() -> int64_t {
                 auto files = list();
                 return files ? static_cast<int64_t>(files->size()) : -1;
               });
  Offsets landed, dead;
  std::set<int64_t> ids;
  auto files = list();
  ASSERT_TRUE(files.has_value());
  for (const auto& f : *files) {
    ASSERT_EQ(f.base_name().find(".inprogress"), std::string::npos) << f.path();
    ASSERT_OK_AND_ASSIGN(auto in, s3->OpenInputFile(f.path()));
    bool is_dead = f.path().find("/_dead_letter/") != std::string::npos;
    AddOffsets(*ReadParquet(in), is_dead ? &dead : &landed, is_dead ? nullptr : &ids);
  }
  ExpectExactlyOnce(landed, dead);
  EXPECT_EQ(ids.size(), static_cast<size_t>(n_) - bad_ids_.size());
  s3.reset();
  (void)arrow::fs::EnsureS3Finalized();
}

// Every (partition, offset) in a PostgreSQL table, from a query returning two columns.
Offsets QueryOffsets(PGconn* conn, const std::string& sql) {
  Offsets out;
  PGresult* r = PQexec(conn, sql.c_str());
  EXPECT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(conn) << sql;
  for (int i = 0; i < PQntuples(r); ++i) {
    out.insert({std::atoll(PQgetvalue(r, i, 0)), std::atoll(PQgetvalue(r, i, 1))});
  }
  PQclear(r);
  return out;
}

TEST_F(EltCrashTest, PostgresHoldsEveryOffsetExactlyOnceAfterKills) {
  auto pgenv = testing::ReadBrokerEnv("KELT_PG_ENV", KELT_PG_ENV_FILE);
  const std::string conninfo = pgenv["KELT_PG_CONNINFO"];
  ASSERT_FALSE(conninfo.empty()) << "KELT_PG_ENV names no PostgreSQL env file";
  PGconn* conn = PQconnectdb(conninfo.c_str());
  ASSERT_EQ(PQstatus(conn), CONNECTION_OK) << PQerrorMessage(conn);
  const std::string table = "crash_" + std::to_string(std::random_device{}());
  auto rows = [&]() -> int64_t {
    PGresult* r = PQexec(conn, ("SELECT count(*) FROM \"" + table + "\"").c_str());
    int64_t n =
        PQresultStatus(r) == PGRES_TUPLES_OK ? std::atoll(PQgetvalue(r, 0, 0)) : 0;
    PQclear(r);
    return n;
  };
  RunWithKills({KELT_ELT_CHILD, Bootstrap(), topic_, topic_ + "-g", "postgres", conninfo,
                window_, table},
               kills_, &rng_, rows);
  Offsets landed =
      QueryOffsets(conn, "SELECT _kafka_partition, _kafka_offset FROM \"" + table + "\"");
  Offsets dead = QueryOffsets(
      conn, "SELECT _kafka_partition, _kafka_offset FROM \"" + table + "_dead_letter\"");
  ExpectExactlyOnce(landed, dead);
  // The offsets table agrees with the rows: next offset = rows + dead letters.
  Offsets next = QueryOffsets(conn,
                              "SELECT partition, next_offset FROM kelt_offsets "
                              "WHERE group_id = '" +
                                  topic_ + "-g'");
  int64_t total = 0;
  for (auto [p, n] : next) total += n;
  EXPECT_EQ(total, n_);
  PQfinish(conn);
}

// Every (partition, offset) of a DuckDB table (query returns two BIGINT columns).
Offsets DuckDbOffsets(duckdb_connection con, const std::string& sql) {
  Offsets out;
  duckdb_result r;
  if (duckdb_query(con, sql.c_str(), &r) != DuckDBSuccess) {
    ADD_FAILURE() << sql << ": " << duckdb_result_error(&r);
    duckdb_destroy_result(&r);
    return out;
  }
  while (duckdb_data_chunk chunk = duckdb_fetch_chunk(r)) {
    auto* p = static_cast<int64_t*>(
        duckdb_vector_get_data(duckdb_data_chunk_get_vector(chunk, 0)));
    auto* o = static_cast<int64_t*>(
        duckdb_vector_get_data(duckdb_data_chunk_get_vector(chunk, 1)));
    for (idx_t i = 0; i < duckdb_data_chunk_get_size(chunk); ++i)
      out.insert({p[i], o[i]});
    duckdb_destroy_data_chunk(&chunk);
  }
  duckdb_destroy_result(&r);
  return out;
}

TEST_F(EltCrashTest, DuckDbHoldsEveryOffsetExactlyOnceAfterKills) {
  const std::string path = dir_ + "/landing.duckdb";
  // The writer holds the file lock: measure progress by the bytes of file and log.
  auto bytes = [&]() -> int64_t {
    std::error_code ec;
    int64_t n = 0;
    for (const std::string& f : {path, path + ".wal"}) {
      auto size = fs::file_size(f, ec);
      if (!ec) n += static_cast<int64_t>(size);
    }
    return n;
  };
  RunWithKills(
      {KELT_ELT_CHILD, Bootstrap(), topic_, topic_ + "-g", "duckdb", path, window_},
      kills_, &rng_, bytes);
  duckdb_database db = nullptr;
  duckdb_connection con = nullptr;
  ASSERT_EQ(duckdb_open(path.c_str(), &db), DuckDBSuccess);
  ASSERT_EQ(duckdb_connect(db, &con), DuckDBSuccess);
  Offsets landed =
      DuckDbOffsets(con, "SELECT _kafka_partition, _kafka_offset FROM events");
  Offsets dead = DuckDbOffsets(
      con, "SELECT _kafka_partition, _kafka_offset FROM events_dead_letter");
  Offsets next = DuckDbOffsets(
      con, "SELECT partition::BIGINT, next_offset FROM _kelt_offsets WHERE group_id = '" +
               topic_ + "-g'");
  duckdb_disconnect(&con);
  duckdb_close(&db);
  ExpectExactlyOnce(landed, dead);
  int64_t total = 0;
  for (auto [p, n] : next) total += n;
  EXPECT_EQ(total, n_);
}

// Scale-out: two loops in one consumer group split the partitions, and a member that
// joins and one that leaves mid-stream still leave every offset in each sink once.
// The children are dynamic members (a leaving one sends LeaveGroup: the rebalance is
// immediate) paced by a sleep per window, and report their assignment and committed
// offsets in a status file, so each step waits for a fact, not for a delay.
struct ChildStatus {
  std::set<int> assigned;
  size_t max_assigned = 0;
  std::map<int, int64_t> committed;  // partition → next offset committed
  int64_t committed_total() const {
    int64_t n = 0;
    for (auto [p, next] : committed) n += next;
    return n;
  }
};

ChildStatus ReadStatus(const std::string& path) {
  ChildStatus s;
  std::ifstream in(path);
  std::string key, value;
  while (in >> key) {
    std::getline(in, value);
    std::istringstream items(value);
    std::string item;
    while (std::getline(items, item, ',')) {
      item.erase(0, item.find_first_not_of(' '));
      if (item.empty()) continue;
      if (key == "assigned") s.assigned.insert(std::atoi(item.c_str()));
      if (key == "max_assigned")
        s.max_assigned = std::strtoull(item.c_str(), nullptr, 10);
      if (key == "committed") {
        auto colon = item.find(':');
        s.committed[std::atoi(item.c_str())] = std::atoll(item.c_str() + colon + 1);
      }
    }
  }
  return s;
}

// SIGKILLs and reaps the children still running when the test ends early.
struct Children {
  std::vector<pid_t> pids;
  ~Children() {
    for (pid_t pid : pids) {
      if (pid > 0 && ::kill(pid, SIGKILL) == 0) waitpid(pid, nullptr, 0);
    }
  }
  // Wait for `pid` to exit (at most `timeout`); its wait status, or -1.
  int Reap(pid_t pid, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (pid_t& p : pids) {
      if (p == pid) p = -1;
    }
    return status;
  }
};

// Poll `ready` every 20 ms until it holds, `timeout` passes or one of `running` exits.
bool WaitUntil(const std::function<bool()>& ready, std::chrono::seconds timeout,
               const std::vector<pid_t>& running) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!ready()) {
    for (pid_t pid : running) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        ADD_FAILURE() << "child " << pid << " exited early (status " << status << ")";
        return false;
      }
    }
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Runs under both group protocols: GetParam() is "classic" or "consumer".
class EltScaleOutTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (Bootstrap().empty()) GTEST_FAIL() << "KELT_KAFKA_ENV names no broker env file";
    n_ = EnvInt("KELT_SCALE_N", 20000);
    topic_ = testing::UniqueTopic("scale");
    CreateTopic(topic_, kPartitions);
    Produce(topic_, n_, &bad_ids_);
    char tmpl[] = "/tmp/kelt-scale-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  static constexpr int kPartitions = 4;
  int n_ = 0;
  std::string topic_, dir_;
  std::set<int> bad_ids_;
};

INSTANTIATE_TEST_SUITE_P(Protocols, EltScaleOutTest,
                         ::testing::Values("classic", "consumer"),
                         [](const auto& info) { return info.param; });

TEST_P(EltScaleOutTest, TwoMembersJoinAndLeaveMidStreamLandEveryOffsetOnce) {
  auto pgenv = testing::ReadBrokerEnv("KELT_PG_ENV", KELT_PG_ENV_FILE);
  const std::string conninfo = pgenv["KELT_PG_CONNINFO"];
  ASSERT_FALSE(conninfo.empty()) << "KELT_PG_ENV names no PostgreSQL env file";
  const std::string group = topic_ + "-g";
  const std::string root = dir_ + "/landing";
  const std::string table = "scale_" + std::to_string(std::random_device{}());
  // Both members write the same Parquet root and the same PostgreSQL table.
  auto child = [&](const std::string& name) -> std::vector<std::string> {
    return {KELT_ELT_CHILD, Bootstrap(), topic_, group, "parquet", root, "50",
            "--instance-id=", "--group-protocol=" + GetParam(), "--window-sleep-ms=30",
            // While the two share the topic, each goes slowly: B cannot finish its share
            // before it learns that A left (the next heartbeat, <= 3 s).
            "--slow-below=" + std::to_string(kPartitions), "--slow-sleep-ms=250",
            "--status=" + dir_ + "/" + name + ".status", "--postgres=" + conninfo,
            "--postgres-table=" + table, "--verbose"};
  };
  const std::string a_status = dir_ + "/a.status", b_status = dir_ + "/b.status";
  Children children;

  // 1. A alone owns every partition and reads part of the topic.
  const pid_t a = Spawn(child("a"));
  children.pids.push_back(a);
  ASSERT_TRUE(
      WaitUntil([&] { return ReadStatus(a_status).assigned.size() == kPartitions; },
                std::chrono::seconds(60), {a}))
      << "A never owned all " << kPartitions << " partitions";
  const int64_t before_b = ReadStatus(a_status).committed_total();

  // 2. B joins: the group splits the partitions, and B lands some of its own.
  const pid_t b = Spawn(child("b"));
  children.pids.push_back(b);
  ChildStatus sa, sb;
  ASSERT_TRUE(WaitUntil(
      [&] {
        sa = ReadStatus(a_status);
        sb = ReadStatus(b_status);
        return !sa.assigned.empty() && sa.assigned.size() < kPartitions &&
               !sb.assigned.empty() && sb.committed_total() > 0;
      },
      std::chrono::seconds(60), {a, b}))
      << "the group did not split the partitions between A and B";
  std::set<int> both = sa.assigned;
  both.insert(sb.assigned.begin(), sb.assigned.end());
  EXPECT_EQ(both.size(), static_cast<size_t>(kPartitions))
      << "A and B do not own every partition once between them";
  EXPECT_EQ(sa.assigned.size() + sb.assigned.size(), static_cast<size_t>(kPartitions));
  std::fprintf(stderr, "split: A owns %zu partitions, B %zu; committed %lld before B\n",
               sa.assigned.size(), sb.assigned.size(), static_cast<long long>(before_b));

  // 3. A leaves mid-stream (SIGTERM: flush, commit, leave the group); B takes over.
  ASSERT_EQ(::kill(a, SIGTERM), 0);
  const int a_exit = children.Reap(a, std::chrono::seconds(60));
  ASSERT_TRUE(a_exit >= 0 && WIFEXITED(a_exit) && WEXITSTATUS(a_exit) == 0)
      << "A did not stop cleanly on SIGTERM (status " << a_exit << ")";
  int64_t at_leave = 0;
  for (auto [p, next] : ReadStatus(a_status).committed) at_leave += next;
  for (auto [p, next] : ReadStatus(b_status).committed) at_leave += next;
  std::fprintf(stderr, "A left with about %lld of %d offsets committed\n",
               static_cast<long long>(at_leave), n_);

  // 4. B runs until caught up over every partition and exits 0.
  const int b_exit = children.Reap(b, std::chrono::seconds(120));
  ASSERT_TRUE(b_exit >= 0 && WIFEXITED(b_exit) && WEXITSTATUS(b_exit) == 0)
      << "B did not finish caught up (status " << b_exit << ")";
  EXPECT_EQ(ReadStatus(b_status).max_assigned, static_cast<size_t>(kPartitions))
      << "B never took over A's partitions: A left after B had caught up, the test did "
         "not exercise a member leaving mid-stream";

  // 5. Each sink holds every offset once; the group committed every partition's end.
  Offsets landed, dead;
  std::set<int64_t> ids;
  EXPECT_EQ(ReadLocalLanding(root, &landed, &dead, &ids), 0)
      << "temporary files left behind";
  {
    SCOPED_TRACE("parquet");
    ExpectExactlyOnce(landed, dead, n_, bad_ids_);
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(n_) - bad_ids_.size());

  PGconn* conn = PQconnectdb(conninfo.c_str());
  ASSERT_EQ(PQstatus(conn), CONNECTION_OK) << PQerrorMessage(conn);
  {
    SCOPED_TRACE("postgres");
    ExpectExactlyOnce(
        QueryOffsets(conn,
                     "SELECT _kafka_partition, _kafka_offset FROM \"" + table + "\""),
        QueryOffsets(conn, "SELECT _kafka_partition, _kafka_offset FROM \"" + table +
                               "_dead_letter\""),
        n_, bad_ids_);
  }
  Offsets stored = QueryOffsets(
      conn,
      "SELECT partition, next_offset FROM kelt_offsets WHERE group_id = '" + group + "'");
  PQfinish(conn);

  // The group's committed offsets, read by a fresh member once it owns every partition.
  const testing::GroupView view =
      testing::ReadGroup(Bootstrap(), topic_, group, kPartitions);
  const std::map<int64_t, int64_t> ends(view.ends.begin(), view.ends.end());
  int64_t total_end = 0;
  for (const auto& [partition, end] : ends) total_end += end;
  EXPECT_EQ(total_end, n_);
  for (const auto& [partition, next] : view.committed) {
    EXPECT_EQ(next, ends.at(partition)) << "group offset of partition " << partition;
  }
  EXPECT_EQ(stored, Offsets(ends.begin(), ends.end())) << "kelt_offsets rows";
}

}  // namespace
}  // namespace kelt
