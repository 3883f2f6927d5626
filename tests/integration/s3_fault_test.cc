// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// An S3 server that answers 500 (issue #4): the ELT loop lands N records from the real
// broker into the Parquet sink on S3 (moto) through tests/fixtures/s3_fault_proxy.py,
// which answers chosen write requests with 500 InternalError.
//  - a few 500s: the S3 client retries them, the run succeeds, every offset lands once;
//  - 500s to every write: the run fails naming the upload, nothing is committed to the
//    group and no object exists; once the store is healthy a new loop in the same group
//    lands every offset once and commits the ends; the same when only the parts of
//    each multipart upload and its completion fail;
//  - a sink whose flush failed that way flushes again once the store is healthy.
// The broker, moto and their env files come from the ctest fixtures (`s3` brings the
// broker too); the proxy is this test's child process.
#include <arpa/inet.h>
#include <arrow/api.h>
#include <arrow/filesystem/s3fs.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <parquet/arrow/reader.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "broker_env.h"
#include "group_view.h"
#include "kelt/elt.h"
#include "kelt/kafka.h"
#include "kelt/load.h"
#include "kelt/sink.h"
#include "kelt/sink/sink_testing.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kRecords = 2000;
constexpr int kPartitions = 2;
constexpr const char* kLanding = R"({"fields":[{"name":"id","data_type":"Int64"},)"
                                 R"({"name":"name","data_type":"Utf8"}]})";

std::string Bootstrap() {
  return testing::ReadBrokerEnv("KELT_KAFKA_ENV",
                                KELT_KAFKA_ENV_FILE)["KELT_KAFKA_BOOTSTRAP"];
}

std::map<std::string, std::string> S3Env() {
  return testing::ReadBrokerEnv("KELT_S3_ENV", KELT_S3_ENV_FILE);
}

void CreateTopic(const std::string& name, int partitions) {
  std::string cmd;
  ASSERT_EQ(testing::CreateTopic(name, partitions, KELT_SOURCE_DIR, KELT_KAFKA_DIR, &cmd),
            0)
      << cmd;
}

void Produce(const std::string& topic, int n) {
  ProducerOptions po;
  po.brokers = Bootstrap();
  po.topic = topic;
  ASSERT_OK_AND_ASSIGN(auto producer, Producer::Make(po));
  std::vector<std::pair<std::optional<std::string>, std::string>> msgs;
  for (int i = 0; i < n; ++i) {
    msgs.emplace_back("k" + std::to_string(i), R"({"id":)" + std::to_string(i) +
                                                   R"(,"name":"row )" +
                                                   std::to_string(i) + R"("})");
  }
  ASSERT_OK_AND_ASSIGN(auto sent, producer->SendRaw(msgs));
  ASSERT_EQ(sent, n);
  ASSERT_OK(producer->Close());
}

// One HTTP/1.1 GET to 127.0.0.1:port; the status code and body (status 0: no answer).
std::pair<int, std::string> HttpGet(int port, const std::string& target) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {0, "socket failed"};
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = "GET " + target +
                                " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                                "\r\nConnection: close\r\n\r\n";
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t got;
      while ((got = ::recv(fd, buf, sizeof(buf), 0)) > 0) response.append(buf, got);
    }
  }
  ::close(fd);
  const auto header_end = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.", 0) != 0 || header_end == std::string::npos) {
    return {0, response};
  }
  return {std::atoi(response.c_str() + 9), response.substr(header_end + 4)};
}

// What the proxy's /__fault__/stats JSON says (the few fields the tests read).
struct ProxyStats {
  int64_t served_500 = -1;
  double seconds_500 = 0;  // from the first 500 to the last
  int64_t forwarded = -1;
  int64_t forwarded_put = 0;
  int64_t forwarded_post = 0;
  std::vector<std::string> failed_requests;  // "PUT /bucket/key"
};

int64_t JsonInt(const std::string& json, const std::string& key, int64_t missing) {
  const std::string needle = "\"" + key + "\": ";
  const auto at = json.find(needle);
  return at == std::string::npos ? missing
                                 : std::atoll(json.c_str() + at + needle.size());
}

ProxyStats ParseStats(const std::string& json) {
  ProxyStats s;
  s.served_500 = JsonInt(json, "served_500", -1);
  if (auto at = json.find("\"seconds_500\": "); at != std::string::npos) {
    s.seconds_500 = std::atof(json.c_str() + at + 15);
  }
  s.forwarded = JsonInt(json, "forwarded", -1);
  s.forwarded_put = JsonInt(json, "PUT", 0);  // in forwarded_by_method
  s.forwarded_post = JsonInt(json, "POST", 0);
  // The failed requests are plain strings (method and path, no quotes inside).
  const std::string list = "\"failed_requests\": [";
  if (auto at = json.find(list); at != std::string::npos) {
    const auto end = json.find(']', at + list.size());
    auto open = json.find('"', at + list.size());
    while (open != std::string::npos && open < end) {
      const auto close = json.find('"', open + 1);
      s.failed_requests.push_back(json.substr(open + 1, close - open - 1));
      open = json.find('"', close + 1);
    }
  }
  return s;
}

// tests/fixtures/s3_fault_proxy.py as a child process, between kelt and moto. Killed
// and reaped when it goes out of scope, and killed by the kernel if this process dies.
class FaultProxy {
 public:
  FaultProxy() = default;
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;
  ~FaultProxy() { Stop(); }

  // Start it in front of `upstream` (http://host:port); its log goes to `dir`.
  void Start(const std::string& upstream, const std::string& dir) {
    const std::string port_file = dir + "/proxy.port";
    log_ = dir + "/proxy.log";
    std::vector<std::string> args = {KELT_PYTHON, KELT_S3_FAULT_PROXY, "--upstream",
                                     upstream,    "--port-file",       port_file,
                                     "--verbose"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    ASSERT_GE(pid_, 0) << "fork failed";
    if (pid_ == 0) {  // the child: async-signal-safe calls only, then exec
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      int out = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (out >= 0) {
        ::dup2(out, 1);
        ::dup2(out, 2);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        FAIL() << "the proxy exited at start (status " << status << "):\n" << Log();
      }
      std::ifstream in(port_file);
      if (in >> port_ && port_ > 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << "the proxy wrote no port file within 20 s:\n" << Log();
  }

  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (::waitpid(pid_, nullptr, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
  }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Set the fault mode ("fail" or "pass"; count < 0: every write request).
  // `match`: only writes whose path and query hold it (URL-safe text).
  void SetMode(const std::string& mode, int count = -1, const std::string& match = "") {
    std::string target = "/__fault__?mode=" + mode;
    if (count >= 0) target += "&count=" + std::to_string(count);
    if (!match.empty()) target += "&match=" + match;
    auto [status, body] = HttpGet(port_, target);
    ASSERT_EQ(status, 200) << target << ": " << body;
  }

  ProxyStats Stats() const {
    auto [status, body] = HttpGet(port_, "/__fault__/stats");
    EXPECT_EQ(status, 200) << body;
    return ParseStats(body);
  }

  std::string Log() const {
    std::ifstream in(log_);
    std::string all((std::istreambuf_iterator<char>(in)), {});
    return all.size() > 4000 ? "…" + all.substr(all.size() - 4000) : all;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_;
};

// The committed offset (-1: none) and the end of each partition of `topic`, as the
// group sees them: read by a fresh member once it owns every partition.
testing::GroupView ReadGroup(const std::string& topic, const std::string& group) {
  return testing::ReadGroup(Bootstrap(), topic, group, kPartitions);
}

class S3FaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(Bootstrap().empty()) << "no broker env file (" KELT_KAFKA_ENV_FILE ")";
    auto env = S3Env();
    moto_ = env["KELT_S3_ENDPOINT"];
    bucket_ = env["KELT_S3_BUCKET"];
    ASSERT_FALSE(moto_.empty()) << "no S3 env file (" KELT_S3_ENV_FILE ")";
    topic_ = testing::UniqueTopic("s3fault");
    group_ = topic_ + "-g";
    prefix_ = bucket_ + "/" + topic_;
    ASSERT_NO_FATAL_FAILURE(CreateTopic(topic_, kPartitions));
    ASSERT_NO_FATAL_FAILURE(Produce(topic_, kRecords));
    char tmpl[] = "/tmp/kelt-s3fault-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_NO_FATAL_FAILURE(proxy_.Start(moto_, dir_));

    // The check reads moto directly, not through the proxy.
    ASSERT_OK(arrow::fs::EnsureS3Initialized());
    auto options = arrow::fs::S3Options::FromAccessKey("testing", "testing");
    options.region = "us-east-1";
    options.scheme = "http";
    options.endpoint_override = moto_.substr(std::string("http://").size());
    ASSERT_OK_AND_ASSIGN(s3_, arrow::fs::S3FileSystem::Make(options));
  }

  void TearDown() override {
    if (HasFailure()) {
      std::fprintf(stderr, "proxy log (%s/proxy.log), its end:\n%s\n", dir_.c_str(),
                   proxy_.Log().c_str());
    }
    proxy_.Stop();
    if (!HasFailure() && !dir_.empty()) fs::remove_all(dir_);
    // The AWS SDK stays initialized: kelt finalizes it at exit, after its clients.
    s3_.reset();
  }

  // The Parquet sink on S3 through the proxy; rotations of 250 records make several
  // uploads per partition.
  Result<std::unique_ptr<Sink>> MakeSink(int64_t rotate_records = 250) {
    ParquetSinkOptions p;
    p.root = "s3://" + prefix_;
    p.s3_endpoint = proxy_.endpoint();
    p.s3_region = "us-east-1";
    p.s3_access_key = "testing";
    p.s3_secret_key = "testing";
    p.rotate_records = rotate_records;
    return MakeParquetSink(p);
  }

  // A loop until caught up, writing to MakeSink().
  Result<std::unique_ptr<EltLoop>> MakeLoop() {
    KELT_ASSIGN_OR_RAISE(auto sink, MakeSink());
    std::vector<std::unique_ptr<Sink>> sinks;
    sinks.push_back(std::move(sink));
    EltOptions o;
    o.consumer.brokers = Bootstrap();
    o.consumer.topics = {topic_};
    o.consumer.group_id = group_;
    o.consumer.session_timeout_ms = 6000;
    o.window.max_records = 500;
    o.window.max_wait = std::chrono::milliseconds(500);
    o.until_caught_up = true;
    KELT_ASSIGN_OR_RAISE(o.landing, ParseSchemaJson(kLanding));
    return EltLoop::Make(std::move(o), std::move(sinks));
  }

  // Every object under the prefix (moto, not the proxy).
  std::vector<arrow::fs::FileInfo> Objects() {
    arrow::fs::FileSelector sel;
    sel.base_dir = prefix_;
    sel.recursive = true;
    sel.allow_not_found = true;
    auto infos = s3_->GetFileInfo(sel);
    EXPECT_OK(infos);
    std::vector<arrow::fs::FileInfo> files;
    if (infos.ok()) {
      for (auto& i : *infos) {
        if (i.IsFile()) files.push_back(i);
      }
    }
    return files;
  }

  // The prefix holds every produced record once: one row per (partition, offset), each
  // partition's offsets 0..end-1, every id, and no temporary or hidden object.
  void ExpectEveryOffsetOnce(const std::map<int32_t, int64_t>& ends) {
    std::multiset<std::pair<int64_t, int64_t>> rows;
    std::set<int64_t> ids;
    const auto files = Objects();
    EXPECT_FALSE(files.empty());
    for (const auto& f : files) {
      EXPECT_EQ(f.base_name().find(".inprogress"), std::string::npos) << f.path();
      EXPECT_NE(f.base_name()[0], '.') << f.path();
      ASSERT_EQ(f.extension(), "parquet") << f.path();
      ASSERT_OK_AND_ASSIGN(auto in, s3_->OpenInputFile(f.path()));
      auto reader = parquet::arrow::OpenFile(in, arrow::default_memory_pool());
      ASSERT_OK(reader) << f.path();
      ASSERT_OK_AND_ASSIGN(auto table, (*reader)->ReadTable());
      ASSERT_OK_AND_ASSIGN(auto combined, table->CombineChunksToBatch());
      const auto& batch = *combined;
      auto part = std::static_pointer_cast<arrow::Int64Array>(
          batch.GetColumnByName("_kafka_partition"));
      auto off = std::static_pointer_cast<arrow::Int64Array>(
          batch.GetColumnByName("_kafka_offset"));
      auto id = std::static_pointer_cast<arrow::Int64Array>(batch.GetColumnByName("id"));
      ASSERT_TRUE(part && off && id) << f.path() << " lacks a column";
      for (int64_t i = 0; i < batch.num_rows(); ++i) {
        rows.insert({part->Value(i), off->Value(i)});
        ids.insert(id->Value(i));
      }
    }
    EXPECT_EQ(rows.size(), static_cast<size_t>(kRecords)) << "rows in all";
    const std::set<std::pair<int64_t, int64_t>> unique(rows.begin(), rows.end());
    EXPECT_EQ(unique.size(), rows.size()) << "some (partition, offset) landed twice";
    std::set<std::pair<int64_t, int64_t>> expected;
    for (const auto& [partition, end] : ends) {
      for (int64_t o = 0; o < end; ++o) expected.insert({partition, o});
    }
    EXPECT_EQ(expected.size(), static_cast<size_t>(kRecords)) << "the partition ends";
    EXPECT_TRUE(unique == expected) << "the landed offsets are not 0..end-1 of each "
                                       "partition";
    EXPECT_EQ(ids.size(), static_cast<size_t>(kRecords));
    EXPECT_EQ(ids.empty() ? -1 : *ids.rbegin(), kRecords - 1);
  }

  void PersistentErrorsThenRecovery(const std::string& match);

  std::string moto_, bucket_, topic_, group_, prefix_, dir_;
  FaultProxy proxy_;
  std::shared_ptr<arrow::fs::FileSystem> s3_;
};

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The object key of a request line the proxy reports: "PUT /bucket/a%2Bb?partNumber=1"
// is "bucket/a+b".
std::string KeyOf(const std::string& request) {
  const auto slash = request.find(" /");
  if (slash == std::string::npos) return "";
  const std::string target = request.substr(slash + 2);
  const std::string path = target.substr(0, target.find('?'));
  std::string key;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 2 < path.size()) {
      key += static_cast<char>(std::stoi(path.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      key += path[i];
    }
  }
  return key;
}

// Every failed request the proxy reports is a write of a Parquet object under `prefix`.
void ExpectParquetWritesUnder(const std::vector<std::string>& failed,
                              const std::string& prefix) {
  for (const auto& r : failed) {
    const bool write = r.rfind("PUT ", 0) == 0 || r.rfind("POST ", 0) == 0;
    const std::string key = KeyOf(r);
    EXPECT_TRUE(write && key.rfind(prefix + "/", 0) == 0 && key.size() > 8 &&
                key.substr(key.size() - 8) == ".parquet")
        << r;
  }
}

TEST_F(S3FaultTest, TransientServerErrorsAreRetriedAndEveryOffsetLandsOnce) {
  ASSERT_OK_AND_ASSIGN(auto loop, MakeLoop());
  const ProxyStats before = proxy_.Stats();
  EXPECT_EQ(before.served_500, 0);
  // The next three write requests get 500 InternalError: the first upload's request
  // and, as the S3 client retries it, its first two retries.
  constexpr int kFailures = 3;
  ASSERT_NO_FATAL_FAILURE(proxy_.SetMode("fail", kFailures));
  const auto start = Clock::now();
  auto run = loop->Run();
  const double took = SecondsSince(start);
  ASSERT_OK(run) << "the run did not survive " << kFailures << " transient 500s";
  std::fprintf(stderr, "run with %d transient 500s (served in %.2f s): %.2f s\n",
               kFailures, proxy_.Stats().seconds_500, took);

  const ProxyStats after = proxy_.Stats();
  EXPECT_EQ(after.served_500, kFailures) << "the 500s were not all served";
  ASSERT_EQ(after.failed_requests.size(), static_cast<size_t>(kFailures));
  ExpectParquetWritesUnder(after.failed_requests, prefix_);
  // Each failed upload was sent again and went through.
  const auto objects = Objects();
  for (const auto& r : after.failed_requests) {
    const std::string key = KeyOf(r);
    const auto found = std::find_if(objects.begin(), objects.end(),
                                    [&](const auto& f) { return f.path() == key; });
    EXPECT_NE(found, objects.end()) << "the failed upload " << r << " never landed";
  }

  EXPECT_EQ(run->rows, kRecords);
  const testing::GroupView group = ReadGroup(topic_, group_);
  ASSERT_EQ(group.ends.size(), static_cast<size_t>(kPartitions));
  ExpectEveryOffsetOnce(group.ends);
  EXPECT_EQ(group.committed, group.ends) << "the group did not commit every end";
}

// Every write whose path and query hold `match` (every write when empty) gets a 500
// until the store recovers: the run fails without publishing or committing anything,
// then a new loop lands everything once.
void S3FaultTest::PersistentErrorsThenRecovery(const std::string& match) {
  ASSERT_OK_AND_ASSIGN(auto loop, MakeLoop());
  ASSERT_NO_FATAL_FAILURE(proxy_.SetMode("fail", -1, match));  // until "pass"
  auto start = Clock::now();
  auto run = loop->Run();
  const double failed_after = SecondsSince(start);
  ASSERT_FALSE(run.ok()) << "the run succeeded although every upload got a 500";
  const std::string message = run.status().message();
  std::fprintf(stderr, "run against persistent 500s failed after %.2f s: %s\n",
               failed_after, message.c_str());
  // It names the sink, the object whose upload failed and the server's answer.
  EXPECT_EQ(message.rfind("sink parquet:s3://" + prefix_ + ": ", 0), 0) << message;
  EXPECT_NE(message.find(topic_ + "/" + topic_ + "+"), std::string::npos) << message;
  EXPECT_NE(message.find(".parquet'"), std::string::npos) << message;
  EXPECT_NE(message.find("We encountered an internal error"), std::string::npos)
      << message;
  EXPECT_TRUE(loop->stats().committed.empty()) << "the failed loop committed";
  EXPECT_OK(loop->Close());
  loop.reset();

  const ProxyStats failing = proxy_.Stats();
  std::set<std::string> failed_keys;
  for (const auto& r : failing.failed_requests) failed_keys.insert(KeyOf(r));
  std::fprintf(stderr, "the proxy served %lld 500s for %zu object(s) in %.2f s\n",
               static_cast<long long>(failing.served_500), failed_keys.size(),
               failing.seconds_500);
  EXPECT_GT(failing.served_500, 0);
  if (match.empty()) {
    EXPECT_EQ(failing.forwarded_put + failing.forwarded_post, 0)
        << "a write reached the store while every write was failing";
  }
  for (const auto& r : failing.failed_requests) {
    EXPECT_NE(r.find(match), std::string::npos) << r;
  }
  ExpectParquetWritesUnder(failing.failed_requests, prefix_);
  EXPECT_TRUE(Objects().empty()) << "an object exists although no upload succeeded";
  const testing::GroupView unset = ReadGroup(topic_, group_);
  ASSERT_EQ(unset.committed.size(), static_cast<size_t>(kPartitions));
  for (const auto& [partition, next] : unset.committed) {
    EXPECT_EQ(next, -1) << "partition " << partition << " was committed";
  }

  // The store recovers: a new loop in the same group lands everything once.
  ASSERT_NO_FATAL_FAILURE(proxy_.SetMode("pass"));
  ASSERT_OK_AND_ASSIGN(auto again, MakeLoop());
  start = Clock::now();
  ASSERT_OK_AND_ASSIGN(auto rerun, again->Run());
  std::fprintf(stderr, "the run after recovery took %.2f s\n", SecondsSince(start));
  EXPECT_EQ(rerun.rows, kRecords);
  EXPECT_EQ(proxy_.Stats().served_500, failing.served_500);
  const testing::GroupView group = ReadGroup(topic_, group_);
  ASSERT_EQ(group.ends.size(), static_cast<size_t>(kPartitions));
  ExpectEveryOffsetOnce(group.ends);
  EXPECT_EQ(group.committed, group.ends) << "the group did not commit every end";
}

TEST_F(S3FaultTest, PersistentServerErrorsFailTheRunWithoutCommitAndARetryLandsAll) {
  PersistentErrorsThenRecovery("");
}

// The multipart upload starts, but its parts and its completion (the requests that
// carry its uploadId) fail: no object appears, nothing is committed.
TEST_F(S3FaultTest, FailedPartUploadsAndCompletionPublishNothingAndARetryLandsAll) {
  PersistentErrorsThenRecovery("uploadId=");
}

// The sink on its own: a flush that failed because every upload got a 500 is made
// again once the store is healthy. It resumes at the upload (the files were already
// encoded) and publishes every row once.
TEST_F(S3FaultTest, AFailedFlushIsDoneAgainOnceTheStoreRecovers) {
  ASSERT_OK_AND_ASSIGN(auto sink, MakeSink(/*rotate_records=*/1'000'000));
  ASSERT_OK_AND_ASSIGN(auto landing, ParseSchemaJson(kLanding));
  ASSERT_OK_AND_ASSIGN(auto loader, Loader::Make(WithIdentityColumns(landing)));
  ASSERT_OK(sink->Open(loader->arrow_schema(), DeadLetterSchema()));
  // One window of 1,000 records per partition: below the rotation size, so only a
  // flush publishes them. Ids are unique over both partitions.
  std::vector<StreamRecord> records;
  std::map<int32_t, int64_t> ends;
  for (int32_t p = 0; p < kPartitions; ++p) {
    const int64_t n = kRecords / kPartitions;
    for (int64_t o = 0; o < n; ++o) {
      StreamRecord r;
      r.topic = topic_;
      r.partition = p;
      r.offset = o;
      r.value = R"({"id":)" + std::to_string(p * n + o) + R"(,"name":"row"})";
      records.push_back(std::move(r));
    }
    ends[p] = n;
  }
  ASSERT_OK_AND_ASSIGN(auto written, sink->Write(testing::MakeSinkWindow(
                                         records, WithIdentityColumns(landing),
                                         testing::DeadLetterOptions())));
  EXPECT_TRUE(written.empty()) << "published before the flush";

  ASSERT_NO_FATAL_FAILURE(proxy_.SetMode("fail"));
  auto failed = sink->Flush();
  ASSERT_FALSE(failed.ok()) << "the flush succeeded although every upload got a 500";
  EXPECT_NE(failed.status().message().find("uploading '"), std::string::npos)
      << failed.status().ToString();
  EXPECT_TRUE(Objects().empty()) << "an object exists although no upload succeeded";

  ASSERT_NO_FATAL_FAILURE(proxy_.SetMode("pass"));
  ASSERT_OK_AND_ASSIGN(auto flushed, sink->Flush());
  for (const auto& [p, end] : ends) {
    EXPECT_EQ(flushed[(TopicPartition{topic_, p})], end) << "partition " << p;
  }
  ASSERT_OK(sink->Close());
  EXPECT_EQ(Objects().size(), static_cast<size_t>(kPartitions));
  ExpectEveryOffsetOnce(ends);
}

}  // namespace
}  // namespace kelt
