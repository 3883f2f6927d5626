// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Extract and the Kafka sink on a real broker, each against a bare librdkafka loop
// measured in the same run (targets: kelt ≥ 0.90× the bare rate):
//   - producer: N ~200-byte JSON records (8 mixed fields, the corpus of
//     load_benchmark.cc) sent by a bare rd_kafka_producev loop, by
//     kelt::Producer::SendRaw and by kelt::Producer::Send(RecordBatch) (value_column);
//     the same librdkafka settings for all (enable.idempotence, linger.ms=5, one
//     message.timeout.ms), each into a fresh topic, every delivery report counted;
//   - consumer: the topic the bare producer wrote, read to its end by a bare
//     high-level consumer (rd_kafka_consume_batch_queue, a sync commit of the current
//     positions every `window` messages), by kelt::Consumer (Poll windows of `window`
//     records, Commit each) and, for information, by kelt::Consumer + kelt::Loader.
// Contenders alternate within each repetition, and the order flips every repetition
// (bare first, then kelt first, ...) so neither always runs on a freshly idle broker.
// Two ratios are printed, since the machine is shared and noisy: best (fastest)
// repetition against best, and the median of the per-repetition ratios (each kelt run
// against the bare run next to it); the target applies to the median, which one lucky
// or unlucky run cannot move. Consumers spend most of their time in synchronous commits
// whose latency is the broker's, so the consumer ratio of time outside commits is
// printed too (informative).
// Consumer rates run from the first record received (the group join is excluded);
// the wall time including the join is printed too.
//   - ELT (--consumers ...,elt): the whole loop of the landing issue, kelt::EltLoop with
//     windows of `window` records into a local Parquet sink (zstd), until caught up, in a
//     child process of its own so that its peak RSS is its own (VmHWM). Compared with the
//     bare consumer loop on wall time, both including their group join (the loop's time
//     also holds process start, sink open, the final flush and commit): target >= 0.60,
//     and peak RSS under 300 MB with windows of 100,000 (--window 100000).
//   - ELT into Iceberg (--consumers ...,elt,elt-iceberg; issue 15): the same loop into
//   the
//     Iceberg sink (a SQLite catalog and a local warehouse in a temporary directory),
//     paired with the Parquet child: wall ratio Parquet/Iceberg (target >= 0.90) and the
//     commit latency of each window (from its data files written to the catalog's swap
//     done, taken from the sink's debug log line; bench/README.md).
//
// It does not start a broker:
//   bash scripts/kafka.sh start --dir build/kafka-bench
//   set -a; source build/kafka-bench/env; set +a      # KELT_KAFKA_DIR for create-topic
//   build/release/bench/kafka_benchmark --bootstrap "$KELT_KAFKA_BOOTSTRAP"
//   bash scripts/kafka.sh stop --dir build/kafka-bench
// Topics are created with scripts/kafka.sh create-topic (--dir $KELT_KAFKA_DIR, or
// --dir given here) and checked on --bootstrap before anything is measured.
//
// Diagnosis aids: --consume-topic EXISTING (skip producing; read a topic of --records
// records), --consumers bare,kelt,load (a subset, or "none"), --consumer-property K=V
// (for the bare and the kelt consumers alike), --debug fetch,consumer (librdkafka debug
// of the consumers and the ELT child, with kelt's log, on stderr). Per consumer run it
// prints the time spent in synchronous commits. Note librdkafka 2.0.2 stops fetching once
// queued.min.messages (100000) are queued and looks again only about 1 s later, so a
// reader slower than the fetcher stalls: compare with
// --consumer-property queued.min.messages=10000000.
#include <arrow/api.h>
#include <librdkafka/rdkafka.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "json_corpus.h"
#include "kelt/common/memory_pool.h"
#include "kelt/elt.h"
#include "kelt/kafka.h"
#include "kelt/load.h"
#include "kelt/log.h"
#include "kelt/schema.h"
#include "kelt/sink.h"

#ifndef KELT_SOURCE_DIR
#error "KELT_SOURCE_DIR must be defined (bench/CMakeLists.txt does)"
#endif

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "kafka_benchmark: %s\n", what.c_str());
  std::exit(1);
}

struct Args {
  std::string bootstrap;
  int64_t records = 2000000;
  int partitions = 4;
  int64_t window = 10000;
  int repetitions = 3;
  int message_timeout_ms = 30000;
  std::string kafka_dir;  // for scripts/kafka.sh --dir; default $KELT_KAFKA_DIR
  bool send_batch = true;
  // Profiling aids: read this existing topic (of --records records) instead of producing
  // (skips the producer comparison), and run only some consumer contenders.
  std::string consume_topic;
  std::string consumers = "bare,kelt,load,drain,elt";
  // Extra librdkafka properties for every consumer, bare and kelt alike.
  std::vector<std::pair<std::string, std::string>> consumer_properties;
  // librdkafka debug contexts for every consumer (e.g. "fetch,consumer"), printed with
  // kelt's log lines on stderr.
  std::string debug;
  // Internal: run one ELT loop over this topic/group into this directory and report
  // (the child process of the `elt` contender).
  std::string elt_child_topic, elt_child_group, elt_child_dir;
  // ... into this sink: "parquet" (the `elt` contender) or "iceberg" (`elt-iceberg`: a
  // SQLite catalog and a local warehouse under elt_child_dir).
  std::string elt_child_sink = "parquet";
  // Internal: run the bare consumer loop over this topic/group and report (the child
  // process of the `drain` contender).
  std::string bare_child_topic, bare_child_group;
  // Produce only the topic the consumers read (one bare producer run), no producer
  // comparison: the ELT-vs-drain measurement of issue 18 needs nothing else.
  bool produce_once = false;
  // The scale mode (issue 18): the same records over topics of each of these partition
  // counts, then over `scale_topics` topics (of `scale_topic_partitions` each) matched by
  // one regex; drain and ELT paired on each. A CSV of the medians goes to scale_csv.
  bool scale = false;
  std::vector<int> scale_partitions = {4, 64, 512};
  int scale_topics = 100;
  int scale_topic_partitions = 4;
  std::string scale_csv;
};

void Usage() {
  std::fprintf(
      stderr,
      "usage: kafka_benchmark --bootstrap HOST:PORT [--records N] [--partitions P]\n"
      "                       [--window W] [--repetitions R] [--message-timeout-ms MS]\n"
      "                       [--dir KAFKA_DIR] [--no-send-batch] [--produce-once]\n"
      "                       [--consume-topic EXISTING] [--consumers "
      "bare,kelt,load,drain,elt,elt-iceberg]\n"
      "                       [--consumer-property KEY=VALUE ...] [--debug CONTEXTS]\n"
      "       kafka_benchmark --bootstrap HOST:PORT --scale [--scale-partitions "
      "4,64,512]\n"
      "                       [--scale-topics 100] [--scale-topic-partitions 4]\n"
      "                       [--scale-csv FILE] [--records N] [--window W] "
      "[--repetitions R]\n"
      "defaults: --records 2000000 --partitions 4 --window 10000 --repetitions 3\n"
      "          --message-timeout-ms 30000 --dir $KELT_KAFKA_DIR\n");
}

Args ParseArgs(int argc, char** argv) {
  Args a;
  if (const char* d = std::getenv("KELT_KAFKA_DIR"); d != nullptr) a.kafka_dir = d;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (auto eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto next = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) Die(arg + " needs a value");
      return argv[++i];
    };
    auto number = [&]() -> int64_t {
      std::string v = next();
      char* end = nullptr;
      long long n = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n <= 0) Die(arg + ": expected a positive integer");
      return n;
    };
    if (arg == "--bootstrap") {
      a.bootstrap = next();
    } else if (arg == "--records") {
      a.records = number();
    } else if (arg == "--partitions") {
      a.partitions = static_cast<int>(number());
    } else if (arg == "--window") {
      a.window = number();
    } else if (arg == "--repetitions") {
      a.repetitions = static_cast<int>(number());
    } else if (arg == "--message-timeout-ms") {
      a.message_timeout_ms = static_cast<int>(number());
    } else if (arg == "--dir") {
      a.kafka_dir = next();
    } else if (arg == "--consume-topic") {
      a.consume_topic = next();
    } else if (arg == "--consumers") {
      a.consumers = next();
    } else if (arg == "--consumer-property") {
      std::string kv = next();
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) Die("--consumer-property needs KEY=VALUE");
      a.consumer_properties.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else if (arg == "--debug") {
      a.debug = next();
    } else if (arg == "--elt-child-topic") {
      a.elt_child_topic = next();
    } else if (arg == "--elt-child-group") {
      a.elt_child_group = next();
    } else if (arg == "--elt-child-dir") {
      a.elt_child_dir = next();
    } else if (arg == "--elt-child-sink") {
      a.elt_child_sink = next();
      if (a.elt_child_sink != "parquet" && a.elt_child_sink != "iceberg")
        Die("--elt-child-sink: expected parquet or iceberg, got '" + a.elt_child_sink +
            "'");
    } else if (arg == "--bare-child-topic") {
      a.bare_child_topic = next();
    } else if (arg == "--bare-child-group") {
      a.bare_child_group = next();
    } else if (arg == "--scale") {
      a.scale = true;
    } else if (arg == "--scale-partitions") {
      a.scale_partitions.clear();
      std::string v = next();
      for (size_t at = 0; at <= v.size();) {
        size_t comma = v.find(',', at);
        if (comma == std::string::npos) comma = v.size();
        const std::string item = v.substr(at, comma - at);
        char* end = nullptr;
        long n = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || n <= 0)
          Die("--scale-partitions: expected positive integers separated by commas");
        a.scale_partitions.push_back(static_cast<int>(n));
        at = comma + 1;
      }
    } else if (arg == "--scale-topics") {
      a.scale_topics = static_cast<int>(number());
    } else if (arg == "--scale-topic-partitions") {
      a.scale_topic_partitions = static_cast<int>(number());
    } else if (arg == "--scale-csv") {
      a.scale_csv = next();
    } else if (arg == "--produce-once") {
      a.produce_once = true;
    } else if (arg == "--no-send-batch") {
      a.send_batch = false;
    } else if (arg == "-h" || arg == "--help") {
      Usage();
      std::exit(0);
    } else {
      Usage();
      Die("unknown argument '" + arg + "'");
    }
  }
  if (a.bootstrap.empty()) {
    Usage();
    Die("--bootstrap is required (start a broker: bash scripts/kafka.sh start)");
  }
  return a;
}

// --- corpus
// -------------------------------------------------------------------------------

struct Corpus {
  std::vector<std::string> keys;
  std::vector<std::string> payloads;
  int64_t payload_bytes = 0;
  int64_t key_bytes = 0;
};

// The same ~200-byte documents as load_benchmark.cc; the key is the event id.
Corpus MakeCorpus(int64_t n) {
  Corpus c;
  kelt::bench::JsonCorpus gen;
  c.keys.reserve(static_cast<size_t>(n));
  c.payloads.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    c.payloads.push_back(gen.Next());
    const auto len = static_cast<int64_t>(c.payloads.back().size());
    c.keys.push_back(std::to_string(1000000000 + i));
    c.payload_bytes += len;
    c.key_bytes += static_cast<int64_t>(c.keys.back().size());
  }
  return c;
}

kelt::Schema LandingSchema() { return kelt::bench::CorpusLandingSchema(); }

// --- measurement
// --------------------------------------------------------------------------

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);  // every thread of the process, librdkafka's included
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Run {
  int64_t records = 0;
  int64_t payload_bytes = 0;
  double seconds = 0;  // the measured span (consumers: first record → end)
  double wall = 0;     // consumers: client creation → end (includes the group join)
  double cpu = 0;      // process CPU seconds during `seconds` (all threads)
  double commit = 0;   // consumers: seconds spent in synchronous commits
  int64_t commits = 0;
  int64_t max_rss_kb = 0;  // children (ELT, drain): their peak resident set
  int64_t files = 0;       // ELT child: Parquet files landed, and their bytes
  int64_t file_bytes = 0;
  int64_t rotations = 0;  // ... and the rotations they came from
  // ELT children: each window's sink Write call (ms); the Iceberg child also its split
  // from the sink's debug log: data files written, then the commit (manifest, manifest
  // list, metadata file, the catalog's compare-and-swap).
  std::vector<double> write_ms, files_ms, commit_ms;
  double rate() const { return seconds > 0 ? static_cast<double>(records) / seconds : 0; }
  double mbps() const {
    return seconds > 0 ? static_cast<double>(payload_bytes) / seconds / 1e6 : 0;
  }
};

struct Contender {
  explicit Contender(std::string n) : name(std::move(n)) {}
  std::string name;
  std::vector<Run> runs;
  const Run* best() const {
    const Run* b = nullptr;
    for (const Run& r : runs)
      if (b == nullptr || r.rate() > b->rate()) b = &r;
    return b;
  }
};

void PrintRun(const char* name, int rep, const Run& r, bool with_wall) {
  std::printf("  rep %d  %-28s %9.0f records/s  %7.1f MB/s  %6.2f s", rep + 1, name,
              r.rate(), r.mbps(), r.seconds);
  if (with_wall) std::printf("  (wall %6.2f s incl. join)", r.wall);
  std::printf("  cpu %5.2f s = %.2f us/record", r.cpu,
              r.records > 0 ? r.cpu * 1e6 / static_cast<double>(r.records) : 0.0);
  if (r.commits > 0) {
    std::printf("  %lld commits %.2f s", static_cast<long long>(r.commits), r.commit);
  }
  std::printf("\n");
  std::fflush(stdout);
}

// --- topics
// -------------------------------------------------------------------------------

void CreateTopic(const Args& args, const std::string& name) {
  std::string cmd = std::string("bash '") + KELT_SOURCE_DIR + "/scripts/kafka.sh' " +
                    "create-topic '" + name + "' " + std::to_string(args.partitions);
  if (!args.kafka_dir.empty()) cmd += " --dir '" + args.kafka_dir + "'";
  cmd += " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) Die("cannot run: " + cmd);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  int rc = pclose(p);
  if (rc != 0) Die("create-topic failed (" + cmd + "):\n" + out);
}

// Check, on --bootstrap, that every topic exists with the expected partition count
// (create-topic talks to the broker of its --dir, which might not be this one).
void CheckTopics(const Args& args, const std::vector<std::string>& topics) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", args.bootstrap.c_str(), errstr,
                        sizeof(errstr)) != RD_KAFKA_CONF_OK)
    Die(errstr);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (rk == nullptr) Die(std::string("rd_kafka_new: ") + errstr);
  const rd_kafka_metadata_t* md = nullptr;
  // All topics: asking for one by name could auto-create it on the wrong broker.
  rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, nullptr, &md, 15000);
  if (err)
    Die(std::string("metadata from ") + args.bootstrap + ": " + rd_kafka_err2str(err));
  for (const std::string& t : topics) {
    int found = -1;
    for (int i = 0; i < md->topic_cnt; ++i) {
      if (t == md->topics[i].topic) found = md->topics[i].partition_cnt;
    }
    if (found != args.partitions) {
      Die("topic '" + t + "' has " + std::to_string(found) + " partition(s) on " +
          args.bootstrap + ", expected " + std::to_string(args.partitions) +
          " (is KELT_KAFKA_DIR / --dir the directory of this broker?)");
    }
  }
  rd_kafka_metadata_destroy(md);
  rd_kafka_destroy(rk);
}

// --- producers
// ----------------------------------------------------------------------------

struct DeliveryCount {
  int64_t delivered = 0;
  int64_t failed = 0;
  rd_kafka_resp_err_t first_error = RD_KAFKA_RESP_ERR_NO_ERROR;
};

void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* d = static_cast<DeliveryCount*>(opaque);
  if (m->err) {
    if (d->failed++ == 0) d->first_error = m->err;
  } else {
    ++d->delivered;
  }
}

void Set(rd_kafka_conf_t* conf, const char* k, const std::string& v) {
  char errstr[512];
  if (rd_kafka_conf_set(conf, k, v.c_str(), errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
    Die(std::string(k) + ": " + errstr);
}

// (a) The bare loop: producev by topic name with F_COPY, QUEUE_FULL served by polling,
// delivery reports served every 1024 messages, then flush.
// Record i goes to topics[i % topics.size()] (the scale mode spreads over many).
Run BareProduce(const Args& args, const Corpus& c,
                const std::vector<std::string>& topics) {
  DeliveryCount d;
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  Set(conf, "bootstrap.servers", args.bootstrap);
  Set(conf, "message.timeout.ms", std::to_string(args.message_timeout_ms));
  Set(conf, "enable.idempotence", "true");  // kelt's producer settings
  Set(conf, "linger.ms", "5");
  rd_kafka_conf_set_opaque(conf, &d);
  rd_kafka_conf_set_dr_msg_cb(conf, &OnDelivery);
  char errstr[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (rk == nullptr) Die(std::string("rd_kafka_new: ") + errstr);

  Run r;
  const double cpu0 = CpuSeconds();
  const auto t0 = Clock::now();
  const size_t n = c.payloads.size();
  for (size_t i = 0; i < n; ++i) {
    const std::string& key = c.keys[i];
    const std::string& value = c.payloads[i];
    while (true) {
      rd_kafka_resp_err_t err = rd_kafka_producev(
          rk, RD_KAFKA_V_TOPIC(topics[i % topics.size()].c_str()),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_KEY(key.data(), key.size()),
          RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
          RD_KAFKA_V_END);
      if (!err) break;
      if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
        Die(std::string("producev: ") + rd_kafka_err2str(err));
      rd_kafka_poll(rk, 50);
    }
    if ((i & 1023) == 0) rd_kafka_poll(rk, 0);
  }
  rd_kafka_resp_err_t err = rd_kafka_flush(rk, args.message_timeout_ms + 5000);
  const auto t1 = Clock::now();
  r.cpu = CpuSeconds() - cpu0;
  if (err) Die(std::string("flush: ") + rd_kafka_err2str(err));
  if (d.failed > 0 || d.delivered != static_cast<int64_t>(n)) {
    Die("bare producer: " + std::to_string(d.delivered) + " delivered, " +
        std::to_string(d.failed) + " failed (" + rd_kafka_err2str(d.first_error) + ")");
  }
  rd_kafka_destroy(rk);
  r.records = static_cast<int64_t>(n);
  r.payload_bytes = c.payload_bytes;
  r.seconds = r.wall = Seconds(t1 - t0);
  return r;
}

Run BareProduce(const Args& args, const Corpus& c, const std::string& topic) {
  return BareProduce(args, c, std::vector<std::string>{topic});
}

using RawMessages = std::vector<std::pair<std::optional<std::string>, std::string>>;

std::unique_ptr<kelt::Producer> MakeKeltProducer(const Args& args,
                                                 const std::string& topic,
                                                 bool batch_columns) {
  kelt::ProducerOptions o;
  o.brokers = args.bootstrap;
  o.topic = topic;
  o.message_timeout_ms = args.message_timeout_ms;
  if (batch_columns) {
    o.key_column = "key";
    o.value_column = "value";
  }
  auto p = kelt::Producer::Make(o);
  if (!p.ok()) Die("kelt::Producer::Make: " + p.status().ToString());
  return p.MoveValueUnsafe();
}

// (b) kelt::Producer::SendRaw of the same keys and payloads.
Run KeltSendRaw(const Args& args, const Corpus& c, const RawMessages& messages,
                const std::string& topic) {
  auto producer = MakeKeltProducer(args, topic, false);
  Run r;
  const double cpu0 = CpuSeconds();
  const auto t0 = Clock::now();
  auto sent = producer->SendRaw(messages);
  const auto t1 = Clock::now();
  r.cpu = CpuSeconds() - cpu0;
  if (!sent.ok()) Die("kelt SendRaw: " + sent.status().ToString());
  if (*sent != static_cast<int64_t>(messages.size()))
    Die("kelt SendRaw delivered " + std::to_string(*sent));
  if (auto st = producer->Close(); !st.ok()) Die("kelt Close: " + st.ToString());
  r.records = *sent;
  r.payload_bytes = c.payload_bytes;
  r.seconds = r.wall = Seconds(t1 - t0);
  return r;
}

// (b') kelt::Producer::Send of a RecordBatch {key utf8, value utf8} with key_column and
// value_column: the Arrow path (cell text per row) on the same bytes.
Run KeltSendBatch(const Args& args, const Corpus& c, const arrow::RecordBatch& batch,
                  const std::string& topic) {
  auto producer = MakeKeltProducer(args, topic, true);
  Run r;
  const double cpu0 = CpuSeconds();
  const auto t0 = Clock::now();
  auto sent = producer->Send(batch);
  const auto t1 = Clock::now();
  r.cpu = CpuSeconds() - cpu0;
  if (!sent.ok()) Die("kelt Send(RecordBatch): " + sent.status().ToString());
  if (*sent != batch.num_rows()) Die("kelt Send delivered " + std::to_string(*sent));
  if (auto st = producer->Close(); !st.ok()) Die("kelt Close: " + st.ToString());
  r.records = *sent;
  r.payload_bytes = c.payload_bytes;
  r.seconds = r.wall = Seconds(t1 - t0);
  return r;
}

std::shared_ptr<arrow::RecordBatch> MakeBatch(const Corpus& c) {
  arrow::StringBuilder keys, values;
  if (!keys.Reserve(static_cast<int64_t>(c.keys.size())).ok() ||
      !keys.ReserveData(c.key_bytes).ok() ||
      !values.Reserve(static_cast<int64_t>(c.payloads.size())).ok() ||
      !values.ReserveData(c.payload_bytes).ok())
    Die("arrow reserve");
  for (size_t i = 0; i < c.payloads.size(); ++i) {
    keys.UnsafeAppend(c.keys[i]);
    values.UnsafeAppend(c.payloads[i]);
  }
  std::shared_ptr<arrow::Array> k, v;
  if (!keys.Finish(&k).ok() || !values.Finish(&v).ok()) Die("arrow finish");
  auto schema = arrow::schema(
      {arrow::field("key", arrow::utf8()), arrow::field("value", arrow::utf8())});
  return arrow::RecordBatch::Make(schema, static_cast<int64_t>(c.payloads.size()),
                                  {k, v});
}

// --- consumers
// ----------------------------------------------------------------------------

// (a) A bare high-level consumer with kelt's properties: batches from the consumer
// queue, each payload touched, a sync commit of the current positions every `window`
// messages (and after the last), until every partition reported EOF.
Run BareConsume(const Args& args, const std::string& topic, const std::string& group) {
  const auto start = Clock::now();
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  Set(conf, "bootstrap.servers", args.bootstrap);
  Set(conf, "group.id", group);
  Set(conf, "auto.offset.reset", "earliest");
  Set(conf, "partition.assignment.strategy", "range");
  Set(conf, "enable.partition.eof", "true");
  Set(conf, "fetch.wait.max.ms", "100");
  Set(conf, "enable.auto.commit", "false");
  Set(conf, "enable.auto.offset.store", "false");
  for (const auto& [k, v] : args.consumer_properties) Set(conf, k.c_str(), v);
  if (!args.debug.empty()) Set(conf, "debug", args.debug);
  char errstr[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
  if (rk == nullptr) Die(std::string("rd_kafka_new: ") + errstr);
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_queue_t* q = rd_kafka_queue_get_consumer(rk);
  rd_kafka_topic_partition_list_t* sub = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(sub, topic.c_str(), RD_KAFKA_PARTITION_UA);
  if (rd_kafka_resp_err_t err = rd_kafka_subscribe(rk, sub); err)
    Die(std::string("subscribe: ") + rd_kafka_err2str(err));
  rd_kafka_topic_partition_list_destroy(sub);

  rd_kafka_topic_partition_list_t* positions = nullptr;  // the assignment, once known
  double commit_seconds = 0;
  int64_t commits = 0;
  auto commit = [&] {
    const auto c0 = Clock::now();
    if (positions == nullptr) {
      if (rd_kafka_assignment(rk, &positions)) Die("rd_kafka_assignment failed");
    }
    if (rd_kafka_resp_err_t err = rd_kafka_position(rk, positions); err)
      Die(std::string("position: ") + rd_kafka_err2str(err));
    rd_kafka_resp_err_t err = rd_kafka_commit(rk, positions, 0);
    if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET)
      Die(std::string("commit: ") + rd_kafka_err2str(err));
    commit_seconds += Seconds(Clock::now() - c0);
    ++commits;
  };

  constexpr size_t kBatch = 2048;  // kelt's batch size
  std::vector<rd_kafka_message_t*> batch(kBatch);
  // (topic, partition) at their end; the subscription may be a regex over many topics
  // (the scale mode), whose partitions `args.partitions` counts in all.
  std::set<std::pair<std::string, int32_t>> at_eof;
  int64_t count = 0, bytes = 0, since_commit = 0;
  uint64_t touch = 0;
  Clock::time_point first{};
  double cpu0 = 0;
  while (true) {
    size_t want = static_cast<size_t>(
        std::min<int64_t>(static_cast<int64_t>(kBatch), args.window - since_commit));
    ssize_t n = rd_kafka_consume_batch_queue(q, 100, batch.data(), want);
    if (n < 0) Die(std::string("consume: ") + rd_kafka_err2str(rd_kafka_last_error()));
    for (ssize_t i = 0; i < n; ++i) {
      rd_kafka_message_t* m = batch[static_cast<size_t>(i)];
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        at_eof.emplace(rd_kafka_topic_name(m->rkt), m->partition);
      } else if (m->err) {
        std::fprintf(stderr, "  bare consumer: %s\n", rd_kafka_message_errstr(m));
      } else {
        if (count == 0) {
          first = Clock::now();
          cpu0 = CpuSeconds();
        }
        ++count;
        ++since_commit;
        bytes += static_cast<int64_t>(m->len);
        if (m->len > 0)
          touch += static_cast<const unsigned char*>(m->payload)[m->len - 1];
        if (!at_eof.empty()) at_eof.erase({rd_kafka_topic_name(m->rkt), m->partition});
      }
      rd_kafka_message_destroy(m);
    }
    if (since_commit >= args.window) {
      commit();
      since_commit = 0;
    }
    if (count > 0 && static_cast<int>(at_eof.size()) == args.partitions) break;
  }
  if (since_commit > 0) commit();
  const auto end = Clock::now();
  Run r;
  r.cpu = CpuSeconds() - cpu0;
  if (positions) rd_kafka_topic_partition_list_destroy(positions);
  rd_kafka_consumer_close(rk);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  if (touch == 1) std::printf("(unlikely)\n");
  r.records = count;
  r.payload_bytes = bytes;
  r.seconds = Seconds(end - first);
  r.wall = Seconds(end - start);
  r.commit = commit_seconds;
  r.commits = commits;
  return r;
}

// (b) kelt::Consumer: windows of `window` records, each payload touched through
// record(i, false), Commit after each window, until an empty end-of-partitions window.
// (c) with `loader`: every window also goes through a kelt::Loader.
Run KeltConsume(const Args& args, const std::string& topic, const std::string& group,
                kelt::Loader* loader) {
  const auto start = Clock::now();
  kelt::ConsumerOptions o;
  o.brokers = args.bootstrap;
  o.group_id = group;
  o.topics = {topic};
  for (const auto& [k, v] : args.consumer_properties) o.properties[k] = v;
  if (!args.debug.empty()) o.properties["debug"] = args.debug;
  auto made = kelt::Consumer::Make(o);
  if (!made.ok()) Die("kelt::Consumer::Make: " + made.status().ToString());
  std::unique_ptr<kelt::Consumer> consumer = made.MoveValueUnsafe();
  kelt::WindowOptions wo;
  wo.max_records = args.window;
  int64_t count = 0, bytes = 0, rows = 0, commits = 0;
  double commit_seconds = 0;
  uint64_t touch = 0;
  Clock::time_point first{};
  double cpu0 = 0;
  while (true) {
    auto w = consumer->Poll(wo);
    if (!w.ok()) Die("kelt Poll: " + w.status().ToString());
    if (w->empty()) {
      if (w->end_reason() == kelt::WindowEnd::kEndOfPartitions) break;
      continue;  // still joining
    }
    if (count == 0) {
      first = Clock::now();
      cpu0 = CpuSeconds();
    }
    if (loader != nullptr) {
      if (auto st = loader->Reserve(static_cast<int64_t>(w->size()), w->bytes());
          !st.ok())
        Die("Reserve: " + st.ToString());
      const bool headers = loader->needs_headers();
      for (size_t i = 0; i < w->size(); ++i) {
        if (auto st = loader->Append(w->record(i, headers)); !st.ok())
          Die("Append: " + st.ToString());
      }
      auto landed = loader->Finish();
      if (!landed.ok()) Die("Finish: " + landed.status().ToString());
      rows += landed->batch->num_rows();
      bytes += landed->stats.payload_bytes;
    } else {
      for (size_t i = 0; i < w->size(); ++i) {
        kelt::RecordView v = w->record(i, false);
        if (v.value && !v.value->empty()) {
          bytes += static_cast<int64_t>(v.value->size());
          touch += static_cast<unsigned char>(v.value->back());
        }
      }
    }
    count += static_cast<int64_t>(w->size());
    const auto c0 = Clock::now();
    if (auto st = consumer->Commit(*w); !st.ok()) Die("kelt Commit: " + st.ToString());
    commit_seconds += Seconds(Clock::now() - c0);
    ++commits;
  }
  const auto end = Clock::now();
  Run r;
  r.cpu = CpuSeconds() - cpu0;
  if (auto st = consumer->Close(); !st.ok()) Die("kelt Close: " + st.ToString());
  if (touch == 1) std::printf("(unlikely)\n");
  if (loader != nullptr && rows != count)
    Die("loader landed " + std::to_string(rows) + " of " + std::to_string(count));
  r.records = count;
  r.payload_bytes = bytes;
  r.seconds = Seconds(end - first);
  r.wall = Seconds(end - start);
  r.commit = commit_seconds;
  r.commits = commits;
  return r;
}

// Peak RSS of this process image (VmHWM): wait4's ru_maxrss would also count the
// parent's memory, which the spawned child shared until exec.
long long PeakRssKb() {
  long long hwm_kb = -1;
  if (FILE* f = std::fopen("/proc/self/status", "r"); f != nullptr) {
    char line[256];
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      if (std::sscanf(line, "VmHWM: %lld kB", &hwm_kb) == 1) break;
    }
    std::fclose(f);
  }
  return hwm_kb;
}

// The bare loop in a process of its own (the `drain` contender's child): the same
// BareConsume, so that its peak RSS and its wall from process start compare with the
// ELT child's. Prints "bare records bytes cpu_s hwm_kb".
int BareChild(const Args& args) {
  Run r = BareConsume(args, args.bare_child_topic, args.bare_child_group);
  std::printf("bare %lld %lld %.3f %lld\n", static_cast<long long>(r.records),
              static_cast<long long>(r.payload_bytes), CpuSeconds(), PeakRssKb());
  return 0;
}

// The ELT child's sink, timed: each Write call's wall time and, for the Iceberg sink,
// the split its debug log line gives ("... data files X ms, commit Y ms"), summed over
// the call (a window with dead letters commits to two tables).
class TimedSink : public kelt::Sink {
 public:
  struct Window {
    int64_t rows = 0;
    double write_ms = 0, files_ms = -1, commit_ms = -1;
  };
  explicit TimedSink(std::unique_ptr<kelt::Sink> inner) : inner_(std::move(inner)) {}

  // The log hook's side (any thread): one "committed" line of the Iceberg sink.
  void OnLog(std::string_view component, std::string_view message) {
    if (component != "iceberg") return;
    const auto at = message.find(": committed ");
    if (at == std::string_view::npos) return;
    double read = 0, files = 0, commit = 0;
    const std::string tail(message.substr(message.find("table read ")));
    if (std::sscanf(tail.c_str(), "table read %lf ms, data files %lf ms, commit %lf ms",
                    &read, &files, &commit) != 3)
      return;
    std::lock_guard<std::mutex> lock(mutex_);
    files_ms_ += read + files;  // the table read before the files counts as writing
    commit_ms_ += commit;
    ++commits_;
  }

  std::string name() const override { return inner_->name(); }
  kelt::Status Open(const std::shared_ptr<arrow::Schema>& landing,
                    const std::shared_ptr<arrow::Schema>& dead_letter) override {
    return inner_->Open(landing, dead_letter);
  }
  kelt::Result<kelt::OffsetMap> Resume(
      const std::vector<kelt::TopicPartition>& partitions) override {
    return inner_->Resume(partitions);
  }
  kelt::Result<kelt::OffsetMap> Write(const kelt::SinkWindow& window) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      files_ms_ = commit_ms_ = 0;
      commits_ = 0;
    }
    const auto start = Clock::now();
    auto out = inner_->Write(window);
    Window w;
    w.write_ms = Seconds(Clock::now() - start) * 1e3;
    w.rows = window.batch ? window.batch->num_rows() : 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (commits_ > 0) {
        w.files_ms = files_ms_;
        w.commit_ms = commit_ms_;
      }
    }
    windows_.push_back(w);  // Write calls are serialized (kelt::Sink)
    return out;
  }
  kelt::Result<kelt::OffsetMap> Flush() override { return inner_->Flush(); }
  kelt::Result<kelt::OffsetMap> Tick(std::chrono::steady_clock::time_point now) override {
    return inner_->Tick(now);
  }
  kelt::Status Evolve(const std::shared_ptr<arrow::Schema>& landing) override {
    return inner_->Evolve(landing);
  }
  kelt::Status Drop(const std::vector<kelt::TopicPartition>& partitions) override {
    return inner_->Drop(partitions);
  }
  kelt::Status Close() override { return inner_->Close(); }

  const std::vector<Window>& windows() const { return windows_; }

 private:
  std::unique_ptr<kelt::Sink> inner_;
  std::mutex mutex_;
  double files_ms_ = 0, commit_ms_ = 0;
  int commits_ = 0;
  std::vector<Window> windows_;
};

// (d) The ELT loop in this process (the child): Extract → Load → Parquet (zstd) or
// Iceberg → commit, until caught up. Prints one line for the parent: records, payload
// bytes, rows and committed offsets summed, CPU seconds; then one line a window: rows,
// the Write call's ms, and for Iceberg its data files' and commit's ms (else -1).
int EltChild(const Args& args) {
  kelt::EltOptions o;
  o.consumer.brokers = args.bootstrap;
  o.consumer.group_id = args.elt_child_group;
  o.consumer.topics = {args.elt_child_topic};
  for (const auto& [k, v] : args.consumer_properties) o.consumer.properties[k] = v;
  if (!args.debug.empty()) o.consumer.properties["debug"] = args.debug;
  o.window.max_records = args.window;
  o.landing = LandingSchema();
  o.until_caught_up = true;
  auto sink = [&]() -> kelt::Result<std::unique_ptr<kelt::Sink>> {
    if (args.elt_child_sink == "iceberg") {
      kelt::IcebergSinkOptions io;
      io.catalog = args.elt_child_dir + "/catalog.db";
      io.warehouse = args.elt_child_dir + "/warehouse";
      io.group_id = args.elt_child_group;
      return kelt::MakeIcebergSink(io);
    }
    kelt::ParquetSinkOptions po;
    po.root = args.elt_child_dir;
    return kelt::MakeParquetSink(po);
  }();
  if (!sink.ok()) Die("making the sink: " + sink.status().ToString());
  auto timed_owner = std::make_unique<TimedSink>(sink.MoveValueUnsafe());
  TimedSink* timed = timed_owner.get();
  // The Iceberg sink's split of each window comes from its debug log line (the Parquet
  // child keeps the hook main() set: none unless --debug).
  const bool debug = !args.debug.empty();
  if (args.elt_child_sink == "iceberg") {
    kelt::SetLogHook(
        [timed, debug](kelt::LogLevel, std::string_view component,
                       std::string_view message) {
          timed->OnLog(component, message);
          if (debug) {
            std::fprintf(stderr, "%.3f %.*s: %.*s\n",
                         Seconds(Clock::now().time_since_epoch()),
                         static_cast<int>(component.size()), component.data(),
                         static_cast<int>(message.size()), message.data());
          }
        },
        kelt::LogLevel::kDebug);
  }
  std::vector<std::unique_ptr<kelt::Sink>> sinks;
  sinks.push_back(std::move(timed_owner));
  auto loop = kelt::EltLoop::Make(std::move(o), std::move(sinks));
  if (!loop.ok()) Die("EltLoop::Make: " + loop.status().ToString());
  auto stats = (*loop)->Run();
  if (!stats.ok()) Die("EltLoop::Run: " + stats.status().ToString());
  int64_t committed = 0;
  for (const auto& [tp, next] : stats->committed) committed += next;
  const long long hwm_kb = PeakRssKb();
  std::printf("elt %lld %lld %lld %lld %.3f %lld\n",
              static_cast<long long>(stats->records),
              static_cast<long long>(stats->bytes), static_cast<long long>(stats->rows),
              static_cast<long long>(committed), CpuSeconds(), hwm_kb);
  for (const TimedSink::Window& w : timed->windows()) {
    std::printf("window %lld %.3f %.3f %.3f\n", static_cast<long long>(w.rows),
                w.write_ms, w.files_ms, w.commit_ms);
  }
  return 0;
}

// Run this program again as a child with `argv_s` (argv[0] first); returns what it
// printed on stdout and the wall time from spawn to exit. Dies if the child failed.
std::pair<std::string, double> SpawnChild(const char* self,
                                          std::vector<std::string> argv_s,
                                          const char* what) {
  std::vector<char*> argv_c;
  for (auto& a : argv_s) argv_c.push_back(a.data());
  argv_c.push_back(nullptr);
  int out[2];
  if (pipe(out) != 0) Die("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  const auto start = Clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, self, &actions, nullptr, argv_c.data(), environ) != 0)
    Die(std::string("posix_spawn of the ") + what + " child failed");
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  std::string line;
  char buf[512];
  for (ssize_t n; (n = read(out[0], buf, sizeof(buf))) > 0;) line.append(buf, n);
  close(out[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) Die("waitpid failed");
  const auto end = Clock::now();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    Die(std::string("the ") + what + " child failed");
  return {line, Seconds(end - start)};
}

// The options every child gets from the parent.
std::vector<std::string> ChildArgs(const Args& args, const char* self) {
  std::vector<std::string> argv_s = {self,
                                     "--bootstrap",
                                     args.bootstrap,
                                     "--window",
                                     std::to_string(args.window),
                                     "--partitions",
                                     std::to_string(args.partitions)};
  for (const auto& [k, v] : args.consumer_properties) {
    argv_s.push_back("--consumer-property");
    argv_s.push_back(k + "=" + v);
  }
  if (!args.debug.empty()) {
    argv_s.push_back("--debug");
    argv_s.push_back(args.debug);
  }
  return argv_s;
}

// The parent's side: spawn this program as the ELT child, time it from spawn to exit,
// take its peak RSS (its own VmHWM), check that every record landed and was committed.
Run KeltElt(const Args& args, const char* self, const std::string& topic,
            const std::string& group, const std::string& sink = "parquet") {
  std::string dir_template =
      (std::filesystem::temp_directory_path() / "kelt-elt-bench-XXXXXX").string();
  if (mkdtemp(dir_template.data()) == nullptr) Die("mkdtemp failed");
  const std::string dir = dir_template;
  std::vector<std::string> argv_s = ChildArgs(args, self);
  for (const char* a :
       {"--elt-child-topic", topic.c_str(), "--elt-child-group", group.c_str(),
        "--elt-child-dir", dir.c_str(), "--elt-child-sink", sink.c_str()})
    argv_s.emplace_back(a);
  auto [line, wall] = SpawnChild(self, std::move(argv_s), "ELT");
  std::error_code ec;
  int64_t files = 0, file_bytes = 0;
  // A rotation's files share <topic>+<partition>+<first>+<last> (then +<k>of<n>).
  std::set<std::string> rotations;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".parquet") {
      ++files;
      file_bytes += static_cast<int64_t>(e.file_size());
      const std::string stem = e.path().stem().string();
      size_t cut = 0;
      for (int plus = 0; plus < 4 && cut != std::string::npos; ++plus)
        cut = stem.find('+', cut == 0 ? 0 : cut + 1);
      rotations.insert(stem.substr(0, cut));
    }
  }
  std::filesystem::remove_all(dir);
  long long records = 0, bytes = 0, rows = 0, committed = 0, hwm_kb = 0;
  double cpu = 0;
  if (std::sscanf(line.c_str(), "elt %lld %lld %lld %lld %lf %lld", &records, &bytes,
                  &rows, &committed, &cpu, &hwm_kb) != 6 ||
      hwm_kb <= 0) {
    Die("unexpected ELT child output: " + line);
  }
  if (rows != records || committed != records) {
    Die("ELT child landed " + std::to_string(rows) + " rows and committed " +
        std::to_string(committed) + " of " + std::to_string(records) + " records");
  }
  Run r;
  r.records = records;
  r.payload_bytes = bytes;
  r.seconds = r.wall = wall;
  r.cpu = cpu;
  r.max_rss_kb = hwm_kb;
  r.files = files;
  r.file_bytes = file_bytes;
  r.rotations = static_cast<int64_t>(rotations.size());
  int64_t window_rows = 0, nonempty = 0;
  for (size_t at = line.find("\nwindow "); at != std::string::npos;
       at = line.find("\nwindow ", at + 1)) {
    long long rows = 0;
    double write_ms = 0, files_ms = 0, commit_ms = 0;
    if (std::sscanf(line.c_str() + at + 1, "window %lld %lf %lf %lf", &rows, &write_ms,
                    &files_ms, &commit_ms) != 4)
      Die("unexpected ELT child window line in: " + line);
    window_rows += rows;
    if (rows > 0) ++nonempty;
    r.write_ms.push_back(write_ms);
    if (commit_ms >= 0) {
      r.files_ms.push_back(files_ms);
      r.commit_ms.push_back(commit_ms);
    }
  }
  if (window_rows != records)
    Die("the ELT child's windows hold " + std::to_string(window_rows) + " rows of " +
        std::to_string(records));
  if (sink == "iceberg" && static_cast<int64_t>(r.commit_ms.size()) != nonempty)
    Die("the Iceberg child reported a commit for " + std::to_string(r.commit_ms.size()) +
        " of " + std::to_string(nonempty) + " windows");
  return r;
}

// The bare loop in a child of its own, timed and measured like the ELT child.
Run BareDrain(const Args& args, const char* self, const std::string& topic,
              const std::string& group) {
  std::vector<std::string> argv_s = ChildArgs(args, self);
  for (const char* a :
       {"--bare-child-topic", topic.c_str(), "--bare-child-group", group.c_str()})
    argv_s.emplace_back(a);
  auto [line, wall] = SpawnChild(self, std::move(argv_s), "bare drain");
  long long records = 0, bytes = 0, hwm_kb = 0;
  double cpu = 0;
  if (std::sscanf(line.c_str(), "bare %lld %lld %lf %lld", &records, &bytes, &cpu,
                  &hwm_kb) != 4 ||
      hwm_kb <= 0) {
    Die("unexpected bare drain child output: " + line);
  }
  Run r;
  r.records = records;
  r.payload_bytes = bytes;
  r.seconds = r.wall = wall;
  r.cpu = cpu;
  r.max_rss_kb = hwm_kb;
  return r;
}

void Pause() { std::this_thread::sleep_for(std::chrono::seconds(1)); }

void PrintBest(const Contender& c, bool with_wall) {
  const Run* b = c.best();
  if (b == nullptr) return;
  std::printf("%-30s %10.0f records/s  %7.1f MB/s  %6.2f s", c.name.c_str(), b->rate(),
              b->mbps(), b->seconds);
  if (with_wall) std::printf("  (wall %6.2f s incl. join)", b->wall);
  std::printf("  %.2f us cpu/record\n",
              b->records > 0 ? b->cpu * 1e6 / static_cast<double>(b->records) : 0.0);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Best against best, and the median of paired per-repetition ratios (the target's).
void PrintRatio(const char* label, const Contender& kelt, const Contender& bare,
                bool has_target) {
  const Run* k = kelt.best();
  const Run* b = bare.best();
  if (k == nullptr || b == nullptr || b->rate() <= 0) return;
  const double best = k->rate() / b->rate();
  std::vector<double> paired;
  for (size_t i = 0; i < std::min(kelt.runs.size(), bare.runs.size()); ++i) {
    if (bare.runs[i].rate() > 0)
      paired.push_back(kelt.runs[i].rate() / bare.runs[i].rate());
  }
  const double median = Median(paired);
  std::printf("ratio %-44s %.2fx median of %zu paired, %.2fx best/best", label, median,
              paired.size(), best);
  if (has_target) {
    std::printf(" (target >= 0.90 on the median) %s\n",
                median >= 0.90 ? "ok" : "BELOW TARGET");
  } else {
    std::printf(" (informative)\n");
  }
}

// Consumers: records per second of time outside synchronous commits, paired median.
void PrintOutsideCommitRatio(const char* label, const Contender& kelt,
                             const Contender& bare) {
  std::vector<double> paired;
  for (size_t i = 0; i < std::min(kelt.runs.size(), bare.runs.size()); ++i) {
    const double k = kelt.runs[i].seconds - kelt.runs[i].commit;
    const double b = bare.runs[i].seconds - bare.runs[i].commit;
    if (k > 0 && b > 0) paired.push_back(b / k);
  }
  if (paired.empty()) return;
  std::printf("ratio %-44s %.2fx median of %zu paired (informative)\n", label,
              Median(paired), paired.size());
}

std::string Pairs(const std::vector<double>& v, const char* fmt) {
  std::string out;
  char buf[64];
  for (double x : v) {
    std::snprintf(buf, sizeof(buf), fmt, x);
    out += (out.empty() ? "" : ", ") + std::string(buf);
  }
  return out;
}

double UsPerRecord(const Run& r) {
  return r.records > 0 ? r.cpu * 1e6 / static_cast<double>(r.records) : 0.0;
}

// The ELT loop (wall, incl. everything) against a bare loop's wall (incl. join): the
// drain child when it ran (issue 18's targets: both processes of their own), else the
// in-process bare consumer (the older, looser comparison).
void PrintEltRatio(const Contender& elt, const Contender& drain, const Contender& bare,
                   int64_t window) {
  const bool child = !drain.runs.empty();
  const Contender& base = child ? drain : bare;
  std::vector<double> paired, elt_rss, base_rss, elt_us, base_us;
  for (size_t i = 0; i < std::min(elt.runs.size(), base.runs.size()); ++i) {
    if (elt.runs[i].wall > 0 && base.runs[i].wall > 0)
      paired.push_back(base.runs[i].wall / elt.runs[i].wall);
  }
  for (const Run& r : elt.runs) {
    elt_rss.push_back(static_cast<double>(r.max_rss_kb) / 1024.0);
    elt_us.push_back(UsPerRecord(r));
  }
  for (const Run& r : base.runs) {
    base_rss.push_back(static_cast<double>(r.max_rss_kb) / 1024.0);
    base_us.push_back(UsPerRecord(r));
  }
  if (paired.empty()) return;
  const double median = Median(paired);
  const double target = child ? 0.80 : 0.60;
  std::printf("ratio %-44s %.2fx median of %zu paired [%s] (target >= %.2f) %s\n",
              child ? "ELT -> Parquet / bare drain (wall, processes)"
                    : "ELT -> Parquet / bare loop (wall, incl. join)",
              median, paired.size(), Pairs(paired, "%.2f").c_str(), target,
              median >= target ? "ok" : "BELOW TARGET");
  const double rss = Median(elt_rss);
  std::printf(
      "peak RSS of the ELT loop: %.1f MB median [%s] (windows of %lld; target <= 150 MB "
      "at 100000) %s\n",
      rss, Pairs(elt_rss, "%.1f").c_str(), static_cast<long long>(window),
      window != 100000 ? "(other window)"
      : rss <= 150     ? "ok"
                       : "ABOVE TARGET");
  if (child) {
    std::printf("peak RSS of the bare drain: %.1f MB median [%s]; ELT / drain %.1fx\n",
                Median(base_rss), Pairs(base_rss, "%.1f").c_str(),
                Median(base_rss) > 0 ? rss / Median(base_rss) : 0.0);
  }
  const double us = Median(elt_us);
  std::printf("cpu of the ELT loop: %.2f us/record median [%s] (target <= 0.60) %s\n", us,
              Pairs(elt_us, "%.2f").c_str(), us <= 0.60 ? "ok" : "ABOVE TARGET");
  std::printf("cpu of the bare %s: %.2f us/record median [%s]\n",
              child ? "drain" : "loop", Median(base_us), Pairs(base_us, "%.2f").c_str());
  const Run& last = elt.runs.back();
  if (last.files > 0) {
    std::printf("landing: %lld Parquet files, %.1f MB (%.1f bytes/record)\n",
                static_cast<long long>(last.files),
                static_cast<double>(last.file_bytes) / 1e6,
                static_cast<double>(last.file_bytes) / static_cast<double>(last.records));
  }
}

// The Iceberg sink against the Parquet sink (issue 15): both the same ELT loop in a
// child process, paired; throughput ratio = Parquet wall / Iceberg wall (target >= 0.90),
// and the per-window commit latency over every Iceberg run.
void PrintIcebergRatio(const Contender& ice, const Contender& parquet) {
  std::vector<double> paired, write_ice, write_parquet, files, commit, ice_us, parquet_us;
  for (size_t i = 0; i < std::min(ice.runs.size(), parquet.runs.size()); ++i) {
    if (ice.runs[i].wall > 0 && parquet.runs[i].wall > 0)
      paired.push_back(parquet.runs[i].wall / ice.runs[i].wall);
  }
  if (paired.empty()) return;
  for (const Run& r : ice.runs) {
    write_ice.insert(write_ice.end(), r.write_ms.begin(), r.write_ms.end());
    files.insert(files.end(), r.files_ms.begin(), r.files_ms.end());
    commit.insert(commit.end(), r.commit_ms.begin(), r.commit_ms.end());
    ice_us.push_back(UsPerRecord(r));
  }
  for (const Run& r : parquet.runs) {
    write_parquet.insert(write_parquet.end(), r.write_ms.begin(), r.write_ms.end());
    parquet_us.push_back(UsPerRecord(r));
  }
  const double median = Median(paired);
  std::printf("ratio %-44s %.2fx median of %zu paired [%s] (target >= 0.90) %s\n",
              "ELT -> Iceberg / ELT -> Parquet (wall, processes)", median, paired.size(),
              Pairs(paired, "%.2f").c_str(), median >= 0.90 ? "ok" : "BELOW TARGET");
  auto quantile = [](std::vector<double> v, double q) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
  };
  std::printf(
      "Iceberg commit per window (data files written -> catalog swap done): %.1f ms "
      "median, p90 %.1f, max %.1f over %zu windows; data files %.1f ms median\n",
      Median(commit), quantile(commit, 0.9), quantile(commit, 1.0), commit.size(),
      Median(files));
  std::printf(
      "sink Write per window: Iceberg %.1f ms median (max %.1f), Parquet %.1f ms median "
      "(max %.1f)\n",
      Median(write_ice), quantile(write_ice, 1.0), Median(write_parquet),
      quantile(write_parquet, 1.0));
  std::printf("cpu: Iceberg %.2f us/record median [%s], Parquet %.2f [%s]\n",
              Median(ice_us), Pairs(ice_us, "%.2f").c_str(), Median(parquet_us),
              Pairs(parquet_us, "%.2f").c_str());
  const Run& last = ice.runs.back();
  if (last.files > 0) {
    std::printf("Iceberg landing: %lld data files, %.1f MB (%.1f bytes/record)\n",
                static_cast<long long>(last.files),
                static_cast<double>(last.file_bytes) / 1e6,
                static_cast<double>(last.file_bytes) / static_cast<double>(last.records));
  }
}

// --- the scale mode (issue 18)
// ----------------------------------------------------------------------------

struct ScalePoint {
  std::string label;
  int topics = 0;
  int partitions = 0;  // in all
  double drain_s = 0, elt_s = 0, ratio = 0, elt_rate = 0;
  double elt_rss_mb = 0, drain_rss_mb = 0, elt_us = 0;
  int64_t files = 0, rotations = 0, file_bytes = 0;
};

// One configuration: create the topics, produce the records over them, then the
// drain and the ELT loop paired (order flipped every repetition) on the subscription.
ScalePoint ScaleRun(const Args& base, const Corpus& corpus, const std::string& prefix,
                    const std::string& label, int topics, int partitions_each) {
  Args args = base;
  args.partitions = partitions_each;
  std::vector<std::string> names;
  for (int t = 0; t < topics; ++t)
    names.push_back(prefix + "-" + label + (topics > 1 ? "-t" + std::to_string(t) : ""));
  std::printf("-- %s: %d topic(s) of %d partition(s): creating, producing %lld records\n",
              label.c_str(), topics, partitions_each,
              static_cast<long long>(corpus.payloads.size()));
  std::fflush(stdout);
  for (const std::string& n : names) CreateTopic(args, n);
  CheckTopics(args, names);
  Run p = BareProduce(args, corpus, names);
  std::printf("   produced at %.0f records/s\n", p.rate());
  Pause();
  // The children see every partition of the subscription in `partitions`.
  args.partitions = topics * partitions_each;
  const std::string subscription =
      topics > 1 ? "^" + prefix + "-" + label + "-t[0-9]+$" : names[0];
  Contender drain{"bare drain"}, elt{"ELT -> Parquet"};
  for (int rep = 0; rep < args.repetitions; ++rep) {
    const std::string g = prefix + "-" + label + "-" + std::to_string(rep);
    auto run_drain = [&] {
      drain.runs.push_back(BareDrain(args, "/proc/self/exe", subscription, g + "-drain"));
      PrintRun(drain.name.c_str(), rep, drain.runs.back(), true);
      Pause();
    };
    auto run_elt = [&] {
      elt.runs.push_back(KeltElt(args, "/proc/self/exe", subscription, g + "-elt"));
      PrintRun(elt.name.c_str(), rep, elt.runs.back(), true);
      const Run& r = elt.runs.back();
      std::printf("         peak RSS %.1f MB, %lld files from %lld rotations\n",
                  static_cast<double>(r.max_rss_kb) / 1024.0,
                  static_cast<long long>(r.files), static_cast<long long>(r.rotations));
      Pause();
    };
    if (rep % 2 == 0) {
      run_drain();
      run_elt();
    } else {
      run_elt();
      run_drain();
    }
  }
  ScalePoint pt;
  pt.label = label;
  pt.topics = topics;
  pt.partitions = topics * partitions_each;
  std::vector<double> ratio, dw, ew, er, dr, eu;
  for (size_t i = 0; i < elt.runs.size(); ++i) {
    const Run& e = elt.runs[i];
    const Run& d = drain.runs[i];
    if (e.records != static_cast<int64_t>(corpus.payloads.size()) ||
        d.records != e.records) {
      Die(label + ": the drain read " + std::to_string(d.records) + " and the ELT loop " +
          std::to_string(e.records) + " records");
    }
    ratio.push_back(d.wall / e.wall);
    dw.push_back(d.wall);
    ew.push_back(e.wall);
    er.push_back(static_cast<double>(e.max_rss_kb) / 1024.0);
    dr.push_back(static_cast<double>(d.max_rss_kb) / 1024.0);
    eu.push_back(UsPerRecord(e));
  }
  pt.ratio = Median(ratio);
  pt.drain_s = Median(dw);
  pt.elt_s = Median(ew);
  pt.elt_rate = static_cast<double>(corpus.payloads.size()) / pt.elt_s;
  pt.elt_rss_mb = Median(er);
  pt.drain_rss_mb = Median(dr);
  pt.elt_us = Median(eu);
  pt.files = elt.runs.back().files;
  pt.rotations = elt.runs.back().rotations;
  pt.file_bytes = elt.runs.back().file_bytes;
  std::printf(
      "   %s: ELT/drain %.2fx [%s], ELT %.0f records/s, RSS ELT %.1f MB drain %.1f "
      "MB\n",
      label.c_str(), pt.ratio, Pairs(ratio, "%.2f").c_str(), pt.elt_rate, pt.elt_rss_mb,
      pt.drain_rss_mb);
  std::fflush(stdout);
  return pt;
}

int Scale(const Args& args) {
  const std::string prefix = "kelt-scale-" + std::to_string(std::time(nullptr));
  std::printf("generating %lld records...\n", static_cast<long long>(args.records));
  const Corpus corpus = MakeCorpus(args.records);
  {  // warm-up, not measured (the broker's JIT, the group coordinator)
    Args w = args;
    w.partitions = 4;
    const std::string t = prefix + "-warmup";
    CreateTopic(w, t);
    Corpus warm = MakeCorpus(std::min<int64_t>(args.records, 200000));
    w.records = static_cast<int64_t>(warm.payloads.size());
    BareProduce(w, warm, t);
    BareConsume(w, t, prefix + "-g-warmup");
  }
  std::printf(
      "\n== kafka_benchmark --scale: %lld records, window %lld, %d repetition(s) "
      "==\n",
      static_cast<long long>(args.records), static_cast<long long>(args.window),
      args.repetitions);
  std::vector<ScalePoint> points;
  for (int p : args.scale_partitions) {
    points.push_back(ScaleRun(args, corpus, prefix, "p" + std::to_string(p), 1, p));
  }
  if (args.scale_topics > 1) {
    points.push_back(ScaleRun(args, corpus, prefix,
                              "topics" + std::to_string(args.scale_topics),
                              args.scale_topics, args.scale_topic_partitions));
  }
  std::printf("\n== scale: medians of %d paired repetition(s) ==\n", args.repetitions);
  std::printf("%-10s %6s %10s %8s %8s %7s %12s %9s %9s %7s %6s %9s %10s\n", "config",
              "topics", "partitions", "drain s", "ELT s", "ratio", "ELT rec/s", "ELT MB",
              "drain MB", "us/rec", "files", "rotations", "rows/file");
  for (const ScalePoint& pt : points) {
    std::printf(
        "%-10s %6d %10d %8.2f %8.2f %6.2fx %12.0f %9.1f %9.1f %7.2f %6lld %9lld "
        "%10.0f\n",
        pt.label.c_str(), pt.topics, pt.partitions, pt.drain_s, pt.elt_s, pt.ratio,
        pt.elt_rate, pt.elt_rss_mb, pt.drain_rss_mb, pt.elt_us,
        static_cast<long long>(pt.files), static_cast<long long>(pt.rotations),
        pt.files > 0 ? static_cast<double>(args.records) / static_cast<double>(pt.files)
                     : 0.0);
  }
  // The ratios: the largest single-topic partition count against the smallest.
  const ScalePoint* lo = nullptr;
  const ScalePoint* hi = nullptr;
  for (const ScalePoint& pt : points) {
    if (pt.topics != 1) continue;
    if (lo == nullptr || pt.partitions < lo->partitions) lo = &pt;
    if (hi == nullptr || pt.partitions > hi->partitions) hi = &pt;
  }
  if (lo != nullptr && hi != nullptr && hi != lo) {
    const double tput = hi->elt_rate / lo->elt_rate;
    const double per_partition = (hi->elt_rss_mb - lo->elt_rss_mb) /
                                 static_cast<double>(hi->partitions - lo->partitions);
    std::printf("ratio ELT throughput %d / %d partitions: %.2fx (target >= 0.70) %s\n",
                hi->partitions, lo->partitions, tput,
                tput >= 0.70 ? "ok" : "BELOW TARGET");
    std::printf("RSS growth per partition (%d -> %d): %.3f MB (target < 0.25) %s\n",
                lo->partitions, hi->partitions, per_partition,
                per_partition < 0.25 ? "ok" : "ABOVE TARGET");
  }
  for (const ScalePoint& pt : points) {
    std::printf(
        "files per rotation (%s): %.2f (%lld files, %lld rotations, %.0f KB a "
        "file)\n",
        pt.label.c_str(),
        pt.rotations > 0
            ? static_cast<double>(pt.files) / static_cast<double>(pt.rotations)
            : 0.0,
        static_cast<long long>(pt.files), static_cast<long long>(pt.rotations),
        pt.files > 0
            ? static_cast<double>(pt.file_bytes) / 1024.0 / static_cast<double>(pt.files)
            : 0.0);
  }
  if (!args.scale_csv.empty()) {
    FILE* f = std::fopen(args.scale_csv.c_str(), "w");
    if (f == nullptr) Die("cannot write " + args.scale_csv);
    std::fprintf(
        f,
        "config,topics,partitions,drain_s,elt_s,ratio,elt_records_per_s,"
        "elt_rss_mb,drain_rss_mb,elt_us_per_record,files,rotations,file_bytes\n");
    for (const ScalePoint& pt : points) {
      std::fprintf(f, "%s,%d,%d,%.3f,%.3f,%.3f,%.0f,%.1f,%.1f,%.3f,%lld,%lld,%lld\n",
                   pt.label.c_str(), pt.topics, pt.partitions, pt.drain_s, pt.elt_s,
                   pt.ratio, pt.elt_rate, pt.elt_rss_mb, pt.drain_rss_mb, pt.elt_us,
                   static_cast<long long>(pt.files), static_cast<long long>(pt.rotations),
                   static_cast<long long>(pt.file_bytes));
    }
    std::fclose(f);
    std::printf("wrote %s\n", args.scale_csv.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  if (!args.debug.empty()) {
    kelt::SetLogHook(
        [](kelt::LogLevel, std::string_view component, std::string_view message) {
          std::fprintf(stderr, "%.3f %.*s: %.*s\n",
                       Seconds(Clock::now().time_since_epoch()),
                       static_cast<int>(component.size()), component.data(),
                       static_cast<int>(message.size()), message.data());
        },
        kelt::LogLevel::kDebug);
  }
  if (!args.elt_child_topic.empty()) {
    // As `kelt run` does (JE_ARROW_MALLOC_CONF= keeps Arrow's own settings).
    kelt::internal::RestartWithWindowAllocatorConf(argv);
    return EltChild(args);
  }
  if (!args.bare_child_topic.empty()) return BareChild(args);
  if (args.scale) return Scale(args);
  const std::string prefix = "kelt-bench-" + std::to_string(std::time(nullptr));
  const bool produce = args.consume_topic.empty();
  auto wanted = [&](const char* name) {
    return ("," + args.consumers + ",").find(std::string(",") + name + ",") !=
           std::string::npos;
  };

  std::printf("generating %lld records...\n", static_cast<long long>(args.records));
  std::fflush(stdout);
  // Reading an existing topic needs the corpus only for its size (and the warm-up).
  const Corpus corpus = MakeCorpus(produce ? args.records : 1);
  RawMessages raw;
  std::shared_ptr<arrow::RecordBatch> batch;
  if (produce) {
    raw.reserve(corpus.payloads.size());
    for (size_t i = 0; i < corpus.payloads.size(); ++i)
      raw.emplace_back(corpus.keys[i], corpus.payloads[i]);
    if (args.send_batch && !args.produce_once) batch = MakeBatch(corpus);
  }

  // Every topic up front, so no JVM admin tool runs during a measurement.
  std::vector<std::string> topics;
  auto topic = [&](const char* what, int rep) {
    return prefix + "-" + what + "-" + std::to_string(rep);
  };
  topics.push_back(prefix + "-warmup");
  for (int rep = 0; produce && rep < (args.produce_once ? 1 : args.repetitions); ++rep) {
    topics.push_back(topic("bare", rep));
    if (args.produce_once) break;
    topics.push_back(topic("raw", rep));
    if (args.send_batch) topics.push_back(topic("batch", rep));
  }
  std::printf("creating %zu topics (%s-*, %d partitions)...\n", topics.size(),
              prefix.c_str(), args.partitions);
  std::fflush(stdout);
  for (const std::string& t : topics) CreateTopic(args, t);
  if (!produce) topics.push_back(args.consume_topic);
  CheckTopics(args, topics);

  std::printf("\n== kafka_benchmark: %lld records", static_cast<long long>(args.records));
  if (produce) {
    std::printf(
        ", %.1f MB payload (avg %.0f bytes)",
        static_cast<double>(corpus.payload_bytes) / 1e6,
        static_cast<double>(corpus.payload_bytes) / static_cast<double>(args.records));
  }
  std::printf(", %d partitions, window %lld, %d repetition(s), broker %s ==\n",
              args.partitions, static_cast<long long>(args.window), args.repetitions,
              args.bootstrap.c_str());
  for (const auto& [k, v] : args.consumer_properties)
    std::printf("consumer property (bare and kelt): %s=%s\n", k.c_str(), v.c_str());

  // Warm-up, not measured: the broker's JIT, the idempotent producer's first PID, the
  // group coordinator (__consumer_offsets is created by the first group) would
  // otherwise all be charged to whichever contender runs first.
  {
    const int64_t n = std::min<int64_t>(args.records, 200000);
    Corpus warm = MakeCorpus(n);
    Args warm_args = args;
    warm_args.records = n;
    Run p = BareProduce(warm_args, warm, prefix + "-warmup");
    Run c = BareConsume(warm_args, prefix + "-warmup", prefix + "-g-warmup");
    std::printf(
        "-- warm-up (not measured): produced %lld at %.0f records/s, consumed "
        "%lld at %.0f records/s (wall %.2f s incl. join)\n",
        static_cast<long long>(p.records), p.rate(), static_cast<long long>(c.records),
        c.rate(), c.wall);
    Pause();
  }

  // --- producer
  Contender bare_p{"bare rd_kafka_producev"}, raw_p{"kelt Producer::SendRaw"},
      batch_p{"kelt Producer::Send(batch)"};
  if (produce) {
    std::printf(
        "-- producer (enable.idempotence=true, linger.ms=5, message.timeout.ms=%d)\n",
        args.message_timeout_ms);
  }
  if (produce && args.produce_once) {
    bare_p.runs.push_back(BareProduce(args, corpus, topic("bare", 0)));
    PrintRun(bare_p.name.c_str(), 0, bare_p.runs.back(), false);
    Pause();
  }
  for (int rep = 0; produce && !args.produce_once && rep < args.repetitions; ++rep) {
    auto run_bare = [&] {
      bare_p.runs.push_back(BareProduce(args, corpus, topic("bare", rep)));
      PrintRun(bare_p.name.c_str(), rep, bare_p.runs.back(), false);
      Pause();
    };
    auto run_raw = [&] {
      raw_p.runs.push_back(KeltSendRaw(args, corpus, raw, topic("raw", rep)));
      PrintRun(raw_p.name.c_str(), rep, raw_p.runs.back(), false);
      Pause();
    };
    if (rep % 2 == 0) {
      run_bare();
      run_raw();
    } else {
      run_raw();
      run_bare();
    }
    if (args.send_batch) {
      batch_p.runs.push_back(KeltSendBatch(args, corpus, *batch, topic("batch", rep)));
      PrintRun(batch_p.name.c_str(), rep, batch_p.runs.back(), false);
      Pause();
    }
  }
  raw.clear();
  raw.shrink_to_fit();
  batch.reset();

  // --- consumer, on the topic the first bare run wrote
  const std::string source = produce ? topic("bare", 0) : args.consume_topic;
  Contender bare_c{"bare consume_batch_queue+commit"}, kelt_c{"kelt Consumer (Extract)"},
      load_c{"kelt Extract + Load"}, drain_c{"bare drain (child process)"},
      elt_c{"kelt ELT loop -> Parquet zstd"}, ice_c{"kelt ELT loop -> Iceberg"};
  auto loader_made = kelt::Loader::Make(LandingSchema());
  if (!loader_made.ok()) Die("Loader::Make: " + loader_made.status().ToString());
  std::unique_ptr<kelt::Loader> loader = loader_made.MoveValueUnsafe();
  std::printf(
      "-- consumer (topic %s, commit every %lld records; rates from the first "
      "record)\n",
      source.c_str(), static_cast<long long>(args.window));
  for (int rep = 0; rep < args.repetitions; ++rep) {
    auto group = [&](const char* what) {
      return prefix + "-" + what + "-" + std::to_string(rep);
    };
    auto run_bare = [&] {
      if (!wanted("bare")) return;
      bare_c.runs.push_back(BareConsume(args, source, group("g-bare")));
      PrintRun(bare_c.name.c_str(), rep, bare_c.runs.back(), true);
      Pause();
    };
    auto run_kelt = [&] {
      if (!wanted("kelt")) return;
      kelt_c.runs.push_back(KeltConsume(args, source, group("g-kelt"), nullptr));
      PrintRun(kelt_c.name.c_str(), rep, kelt_c.runs.back(), true);
      Pause();
    };
    if (rep % 2 == 0) {
      run_bare();
      run_kelt();
    } else {
      run_kelt();
      run_bare();
    }
    if (wanted("load")) {
      load_c.runs.push_back(KeltConsume(args, source, group("g-load"), loader.get()));
      PrintRun(load_c.name.c_str(), rep, load_c.runs.back(), true);
      Pause();
    }
    // The ELT loop and the bare drain, each a process of its own, paired.
    auto run_drain = [&] {
      if (!wanted("drain")) return;
      drain_c.runs.push_back(BareDrain(args, "/proc/self/exe", source, group("g-drain")));
      PrintRun(drain_c.name.c_str(), rep, drain_c.runs.back(), true);
      std::printf("         peak RSS %.1f MB\n",
                  static_cast<double>(drain_c.runs.back().max_rss_kb) / 1024.0);
      Pause();
    };
    auto run_elt = [&] {
      if (!wanted("elt")) return;
      elt_c.runs.push_back(KeltElt(args, "/proc/self/exe", source, group("g-elt")));
      PrintRun(elt_c.name.c_str(), rep, elt_c.runs.back(), true);
      std::printf("         peak RSS %.1f MB\n",
                  static_cast<double>(elt_c.runs.back().max_rss_kb) / 1024.0);
      Pause();
    };
    // The Iceberg sink (SQLite catalog, local warehouse) paired with the Parquet one.
    auto run_ice = [&] {
      if (!wanted("elt-iceberg")) return;
      ice_c.runs.push_back(
          KeltElt(args, "/proc/self/exe", source, group("g-ice"), "iceberg"));
      const Run& r = ice_c.runs.back();
      PrintRun(ice_c.name.c_str(), rep, r, true);
      std::printf(
          "         peak RSS %.1f MB; per window: Write %.1f ms median (max %.1f), data "
          "files %.1f ms, commit %.1f ms median [%s]\n",
          static_cast<double>(r.max_rss_kb) / 1024.0, Median(r.write_ms),
          r.write_ms.empty() ? 0.0
                             : *std::max_element(r.write_ms.begin(), r.write_ms.end()),
          Median(r.files_ms), Median(r.commit_ms), Pairs(r.commit_ms, "%.1f").c_str());
      Pause();
    };
    // The order flips every repetition, so the Parquet and Iceberg children swap too.
    if (rep % 2 == 0) {
      run_drain();
      run_elt();
      run_ice();
    } else {
      run_ice();
      run_elt();
      run_drain();
    }
  }
  for (const Contender* c : {&bare_c, &kelt_c, &load_c, &drain_c, &elt_c, &ice_c}) {
    for (const Run& r : c->runs) {
      if (r.records != args.records) {
        Die(c->name + " read " + std::to_string(r.records) + " records, expected " +
            std::to_string(args.records));
      }
    }
  }

  std::printf("\n== best of %d (max records/s) ==\n", args.repetitions);
  for (const Contender* c : {&bare_p, &raw_p, &batch_p}) PrintBest(*c, false);
  for (const Contender* c : {&bare_c, &kelt_c, &load_c, &drain_c, &elt_c, &ice_c})
    PrintBest(*c, true);
  PrintRatio("producer: kelt SendRaw / bare producev", raw_p, bare_p, true);
  PrintRatio("producer: kelt Send(batch) / bare producev", batch_p, bare_p, false);
  PrintRatio("consumer: kelt Extract / bare batch loop", kelt_c, bare_c, true);
  PrintRatio("consumer: kelt Extract+Load / bare loop", load_c, bare_c, false);
  PrintOutsideCommitRatio("consumer outside commits: kelt / bare", kelt_c, bare_c);
  PrintEltRatio(elt_c, drain_c, bare_c, args.window);
  PrintIcebergRatio(ice_c, elt_c);
  return 0;  // a ratio below target is a finding, not a crash
}
