// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/sink.h"

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <arrow/util/byte_size.h>
#include <gtest/gtest.h>
#include <parquet/arrow/reader.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/schema.h>
#include <parquet/statistics.h>
#include <parquet/types.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "kelt/elt.h"
#include "kelt/load.h"
#include "kelt/schema.h"
#include "kelt/sink/all_types_testing.h"
#include "kelt/sink/sink_testing.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

Schema Landing() {
  auto s = ParseSchemaJson(
      R"({"fields":[{"name":"id","data_type":"Int64"},{"name":"name","data_type":"Utf8"},
                   {"name":"day","data_type":"Utf8"},
                   {"name":"_kafka_topic","data_type":"Utf8"},
                   {"name":"_kafka_partition","data_type":"Int64"},
                   {"name":"_kafka_offset","data_type":"Int64"}]})",
      SchemaDialect::kStrict);
  EXPECT_OK(s);
  return *s;
}

// Records of one partition with ids = offsets; `bad` offsets get a non-integer id.
std::vector<StreamRecord> Records(const std::string& topic, int32_t partition,
                                  int64_t first, int64_t count,
                                  const std::set<int64_t>& bad = {},
                                  const std::string& day = "2026-12-02") {
  std::vector<StreamRecord> out;
  for (int64_t o = first; o < first + count; ++o) {
    StreamRecord r;
    r.topic = topic;
    r.partition = partition;
    r.offset = o;
    r.value = bad.count(o) ? R"({"id":"x"})"
                           : R"({"id":)" + std::to_string(o) + R"(,"name":"n)" +
                                 std::to_string(o) + R"(","day":")" + day + R"("})";
    out.push_back(std::move(r));
  }
  return out;
}

SinkWindow Window(const std::vector<StreamRecord>& records, const Schema& landing) {
  return testing::MakeSinkWindow(records, landing, testing::DeadLetterOptions());
}

std::vector<std::string> Files(const std::string& root, bool hidden_too = false) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    std::string rel = fs::relative(e.path(), root).string();
    if (!hidden_too && e.path().filename().string()[0] == '.') continue;
    out.push_back(rel);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::shared_ptr<arrow::Table> ReadParquet(const std::string& path) {
  auto in = arrow::io::ReadableFile::Open(path);
  EXPECT_OK(in);
  auto reader = parquet::arrow::OpenFile(*in, arrow::default_memory_pool());
  EXPECT_OK(reader);
  auto table = (*reader)->ReadTable();
  EXPECT_OK(table);
  return table.ok() ? *table : nullptr;
}

// All landed (partition, offset) pairs under root (landing files only).
std::multiset<std::pair<int64_t, int64_t>> LandedOffsets(const std::string& root) {
  std::multiset<std::pair<int64_t, int64_t>> out;
  for (const auto& rel : Files(root)) {
    if (rel.rfind("_dead_letter", 0) == 0) continue;
    auto t = ReadParquet(root + "/" + rel);
    auto p = std::static_pointer_cast<arrow::Int64Array>(
        t->GetColumnByName("_kafka_partition")->chunk(0));
    for (const auto& chunk : t->GetColumnByName("_kafka_offset")->chunks()) {
      auto o = std::static_pointer_cast<arrow::Int64Array>(chunk);
      for (int64_t i = 0; i < o->length(); ++i) out.insert({p->Value(0), o->Value(i)});
    }
  }
  return out;
}

// Options of a sink landing under `root` (the defaults otherwise).
ParquetSinkOptions OptionsAt(const std::string& root) {
  ParquetSinkOptions o;
  o.root = root;
  return o;
}

// A Parquet sink with options `o`, opened for `landing` rows.
Result<std::unique_ptr<Sink>> OpenSink(const ParquetSinkOptions& o,
                                       const Schema& landing) {
  KELT_ASSIGN_OR_RAISE(auto sink, MakeParquetSink(o));
  KELT_ASSIGN_OR_RAISE(auto loader, Loader::Make(landing));
  KELT_RETURN_NOT_OK(sink->Open(loader->arrow_schema(), DeadLetterSchema()));
  return sink;
}

// OpenSink, then resumed on partition t/0.
Result<std::unique_ptr<Sink>> OpenResumedSink(const ParquetSinkOptions& o,
                                              const Schema& landing) {
  KELT_ASSIGN_OR_RAISE(auto sink, OpenSink(o, landing));
  KELT_RETURN_NOT_OK(sink->Resume({{"t", 0}}));
  return sink;
}

TEST(ParquetSink, RotatesByRecordsAndResumesFromFileNames) {
  TempDir dir;
  Schema landing = Landing();
  ParquetSinkOptions o = OptionsAt(dir.path());
  o.rotate_records = 25;
  ASSERT_OK_AND_ASSIGN(auto sink, OpenSink(o, landing));
  ASSERT_OK_AND_ASSIGN(auto resumed, sink->Resume({{"t", 0}}));
  EXPECT_TRUE(resumed.empty());
  // Windows of 10: the file rotates once it holds >= 25 offsets (after 30).
  OffsetMap durable;
  for (int64_t first = 0; first < 40; first += 10) {
    ASSERT_OK_AND_ASSIGN(auto adv,
                         sink->Write(Window(Records("t", 0, first, 10), landing)));
    for (auto& [tp, n] : adv) durable[tp] = n;
    if (first < 20) {
      EXPECT_TRUE(adv.empty()) << "rotated too early at " << first;
    }
  }
  EXPECT_EQ(durable[(TopicPartition{"t", 0})], 30);
  // The open rotation (30..39) is not visible yet; only a hidden in-progress file.
  const std::vector<std::string> expected = {
      "t/t+0+00000000000000000000+00000000000000000029.parquet"};
  EXPECT_EQ(Files(dir.path()), expected);
  ASSERT_OK_AND_ASSIGN(auto flushed, sink->Flush());
  EXPECT_EQ(flushed[(TopicPartition{"t", 0})], 40);
  ASSERT_OK(sink->Close());
  EXPECT_EQ(Files(dir.path(), true).size(), 2u);  // nothing hidden left behind

  auto table = ReadParquet(dir.path() +
                           "/t/t+0+00000000000000000030+00000000000000000039.parquet");
  ASSERT_EQ(table->num_rows(), 10);
  auto names = std::static_pointer_cast<arrow::StringArray>(
      table->GetColumnByName("name")->chunk(0));
  EXPECT_EQ(names->GetString(0), "n30");

  // A new sink over the same root resumes after the last file.
  ASSERT_OK_AND_ASSIGN(auto again, OpenSink(o, landing));
  ASSERT_OK_AND_ASSIGN(auto r2, again->Resume({{"t", 0}, {"t", 1}}));
  EXPECT_EQ(r2.size(), 1u);
  EXPECT_EQ(r2[(TopicPartition{"t", 0})], 40);
}

// Each window is its own row group, so a writer holds at most one window in memory
// (one row group for the whole rotation held 500 MB for 2 M records in the benchmark).
// Rotations finish in parallel (one task per partition): every one that was published
// is reported, however many finish at the same moment. (A std::vector<bool> of results
// once lost some: its bits share words, so parallel writes raced, and a published
// file's offsets were never committed.)
TEST(ParquetSink, EveryRotationFinishedInParallelIsReported) {
  TempDir dir;
  Schema landing = Landing();
  constexpr int kPartitions = 48;
  for (int round = 0; round < 5; ++round) {
    ASSERT_OK_AND_ASSIGN(auto sink, OpenSink(OptionsAt(dir.path()), landing));
    std::vector<TopicPartition> tps;
    std::vector<StreamRecord> records;
    for (int p = 0; p < kPartitions; ++p) {
      tps.push_back({"t", p});
      auto part = Records("t", p, round * 3, 3);
      records.insert(records.end(), part.begin(), part.end());
    }
    ASSERT_OK(sink->Resume(tps).status());
    ASSERT_OK(sink->Write(Window(records, landing)).status());
    ASSERT_OK_AND_ASSIGN(auto flushed, sink->Flush());
    ASSERT_EQ(flushed.size(), static_cast<size_t>(kPartitions)) << "round " << round;
    for (const auto& tp : tps) EXPECT_EQ(flushed[tp], round * 3 + 3) << ToString(tp);
    ASSERT_OK(sink->Close());
  }
  EXPECT_EQ(LandedOffsets(dir.path()).size(), static_cast<size_t>(kPartitions * 15));
}

// The row groups' sizes of the landing file `rel` under `root`.
std::vector<int64_t> RowGroups(const std::string& root, const std::string& rel) {
  std::vector<int64_t> out;
  auto in = arrow::io::ReadableFile::Open(root + "/" + rel);
  EXPECT_OK(in) << rel;
  if (!in.ok()) return out;
  auto meta = parquet::ParquetFileReader::Open(*in)->metadata();
  for (int g = 0; g < meta->num_row_groups(); ++g) {
    out.push_back(meta->RowGroup(g)->num_rows());
  }
  return out;
}

// The offsets of landing file `rel`, in file order.
std::vector<int64_t> OffsetsIn(const std::string& root, const std::string& rel) {
  std::vector<int64_t> out;
  auto t = ReadParquet(root + "/" + rel);
  if (t == nullptr) return out;
  for (const auto& chunk : t->GetColumnByName("_kafka_offset")->chunks()) {
    auto o = std::static_pointer_cast<arrow::Int64Array>(chunk);
    for (int64_t i = 0; i < o->length(); ++i) out.push_back(o->Value(i));
  }
  return out;
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = i;
  return out;
}

// Each window's rows of a file are one row group, written when the window is: between
// windows an open file holds no rows, whatever the rotation's size.
TEST(ParquetSink, EachWindowIsARowGroupOfItsOwn) {
  TempDir dir;
  Schema landing = Landing();
  ASSERT_OK_AND_ASSIGN(auto sink, OpenSink(OptionsAt(dir.path()), landing));
  for (int64_t first = 0; first < 30; first += 10) {
    std::vector<StreamRecord> records = Records("t", 0, first, 10);
    for (const StreamRecord& r : Records("t", 1, first / 2, 5)) records.push_back(r);
    SinkWindow w = Window(records, landing);
    const auto& values = w.batch->column_data(0)->buffers[1];
    const long before = values.use_count();
    ASSERT_OK(sink->Write(w));
    EXPECT_EQ(values.use_count(), before) << "the sink keeps rows of the window";
  }
  ASSERT_OK(sink->Flush());
  ASSERT_OK(sink->Close());
  const std::string p0 = "t/t+0+00000000000000000000+00000000000000000029.parquet";
  const std::string p1 = "t/t+1+00000000000000000000+00000000000000000014.parquet";
  EXPECT_EQ(RowGroups(dir.path(), p0), (std::vector<int64_t>{10, 10, 10}));
  EXPECT_EQ(RowGroups(dir.path(), p1), (std::vector<int64_t>{5, 5, 5}));
  EXPECT_EQ(OffsetsIn(dir.path(), p0), Iota(30));
  EXPECT_EQ(OffsetsIn(dir.path(), p1), Iota(15));
}

// A window loaded in chunks carries each partition in several runs (poll order): the
// runs of one partition still make one row group of that window, in offset order.
TEST(ParquetSink, APartitionInSeveralRunsOfAWindowIsOneRowGroup) {
  TempDir dir;
  Schema landing = Landing();
  ASSERT_OK_AND_ASSIGN(auto sink, OpenSink(OptionsAt(dir.path()), landing));
  for (int64_t first = 0; first < 40; first += 20) {
    std::vector<StreamRecord> records;
    for (int64_t run = first; run < first + 20; run += 5) {
      for (int32_t p = 0; p < 2; ++p) {
        for (const StreamRecord& r : Records("t", p, run, 5)) records.push_back(r);
      }
    }
    ASSERT_OK(sink->Write(Window(records, landing)));
  }
  ASSERT_OK(sink->Flush());
  ASSERT_OK(sink->Close());
  for (int p = 0; p < 2; ++p) {
    std::string rel =
        "t/t+" + std::to_string(p) + "+00000000000000000000+00000000000000000039.parquet";
    EXPECT_EQ(RowGroups(dir.path(), rel), (std::vector<int64_t>{20, 20})) << rel;
    EXPECT_EQ(OffsetsIn(dir.path(), rel), Iota(40)) << rel;
  }
}

// Writes records 0..n-1 of partition 0 with dictionary `mode` into `root` and returns
// the file's path.
std::string WriteOneFile(const std::string& root, const std::string& mode, int64_t n,
                         const std::string& integer_encoding = "delta") {
  Schema landing = Landing();
  ParquetSinkOptions o = OptionsAt(root);
  o.dictionary = ParseParquetDictionary(mode).value();
  o.integer_encoding = ParseParquetIntegerEncoding(integer_encoding).value();
  auto sink = OpenSink(o, landing);
  EXPECT_OK(sink);
  if (sink.ok()) {
    EXPECT_OK((*sink)->Write(Window(Records("t", 0, 0, n), landing)));
    EXPECT_OK((*sink)->Flush());
  }
  char last[24];
  std::snprintf(last, sizeof(last), "%020lld", static_cast<long long>(n - 1));
  return root + "/t/t+0+00000000000000000000+" + last + ".parquet";
}

// Per column: whether the file's first row group has a dictionary page.
std::map<std::string, bool> DictionaryPages(const std::string& path) {
  std::map<std::string, bool> dict;
  auto in = arrow::io::ReadableFile::Open(path);
  EXPECT_OK(in) << path;
  if (!in.ok()) return dict;
  auto meta = parquet::ParquetFileReader::Open(*in)->metadata();
  for (int c = 0; c < meta->num_columns(); ++c) {
    dict[meta->schema()->Column(c)->name()] =
        meta->RowGroup(0)->ColumnChunk(c)->has_dictionary_page();
  }
  return dict;
}

// "auto" dictionary-encodes text and the partition but not numbers (ids, offsets);
// "all" and "none" do what they say; no other name parses.
TEST(ParquetSink, DictionaryEncodingByColumnKind) {
  for (const std::string mode : {"auto", "all", "none"}) {
    TempDir dir;
    std::map<std::string, bool> dict =
        DictionaryPages(WriteOneFile(dir.path(), mode, 20));
    ASSERT_FALSE(dict.empty()) << mode;
    const bool numbers = mode == "all", text = mode != "none";
    EXPECT_EQ(dict.at("id"), numbers) << mode;
    EXPECT_EQ(dict.at("_kafka_offset"), numbers) << mode;
    EXPECT_EQ(dict.at("name"), text) << mode;
    EXPECT_EQ(dict.at("_kafka_partition"), text) << mode;
  }
  EXPECT_FALSE(ParseParquetDictionary("some").has_value());
}

TEST(ParquetSink, OptionNamesRoundTrip) {
  for (auto c :
       {ParquetCompression::kZstd, ParquetCompression::kSnappy, ParquetCompression::kGzip,
        ParquetCompression::kLz4, ParquetCompression::kNone}) {
    EXPECT_EQ(ParseParquetCompression(ParquetCompressionName(c)), c);
  }
  for (auto d :
       {ParquetDictionary::kAuto, ParquetDictionary::kAll, ParquetDictionary::kNone}) {
    EXPECT_EQ(ParseParquetDictionary(ParquetDictionaryName(d)), d);
  }
  for (auto e : {ParquetIntegerEncoding::kDelta, ParquetIntegerEncoding::kPlain}) {
    EXPECT_EQ(ParseParquetIntegerEncoding(ParquetIntegerEncodingName(e)), e);
  }
  EXPECT_FALSE(ParseParquetCompression("brotli").has_value());
  EXPECT_FALSE(ParseParquetCompression("ZSTD").has_value());
  EXPECT_FALSE(ParseParquetIntegerEncoding("zigzag").has_value());
  const ParquetSinkOptions defaults;
  EXPECT_EQ(defaults.compression, ParquetCompression::kZstd);
  EXPECT_EQ(defaults.dictionary, ParquetDictionary::kAuto);
  EXPECT_EQ(defaults.integer_encoding, ParquetIntegerEncoding::kDelta);
}

// "auto" also looks at the rows a file starts with: a text column whose values are
// mostly distinct is written plain, a repeating one keeps its dictionary; "all" keeps
// every dictionary.
TEST(ParquetSink, AutoDictionaryLeavesOutMostlyDistinctText) {
  for (const std::string mode : {"auto", "all"}) {
    TempDir dir;
    // 200 rows: every name differs, the day and the topic repeat.
    const std::string path = WriteOneFile(dir.path(), mode, 200);
    std::map<std::string, bool> dict = DictionaryPages(path);
    ASSERT_FALSE(dict.empty()) << mode;
    EXPECT_EQ(dict.at("name"), mode == "all") << mode;
    EXPECT_TRUE(dict.at("day")) << mode;
    EXPECT_TRUE(dict.at("_kafka_topic")) << mode;
    auto table = ReadParquet(path);
    ASSERT_EQ(table->num_rows(), 200) << mode;
    auto names = std::static_pointer_cast<arrow::StringArray>(
        table->GetColumnByName("name")->chunk(0));
    EXPECT_EQ(names->GetString(199), "n199") << mode;
  }
}

// Min/max statistics stay where a reader can prune by them: numbers, offsets and
// low-cardinality text keep them; mostly distinct text whose values are not in order
// ("n0", "n1", ..., "n10" < "n9") has none; mostly distinct text that grows keeps them.
TEST(ParquetSink, NoStatisticsForMostlyDistinctUnorderedText) {
  TempDir dir;
  const std::string path = WriteOneFile(dir.path(), "auto", 200);
  auto in = arrow::io::ReadableFile::Open(path);
  ASSERT_OK(in);
  auto meta = parquet::ParquetFileReader::Open(*in)->metadata();
  std::map<std::string, bool> stats;
  for (int c = 0; c < meta->num_columns(); ++c) {
    stats[meta->schema()->Column(c)->name()] =
        meta->RowGroup(0)->ColumnChunk(c)->is_stats_set();
  }
  EXPECT_TRUE(stats.at("id"));
  EXPECT_TRUE(stats.at("_kafka_offset"));
  EXPECT_TRUE(stats.at("_kafka_partition"));
  EXPECT_TRUE(stats.at("day"));
  EXPECT_TRUE(stats.at("_kafka_topic"));
  EXPECT_FALSE(stats.at("name"));

  // Names that grow (zero-padded): distinct but ordered, so they keep statistics.
  TempDir sorted;
  Schema landing = Landing();
  ASSERT_OK_AND_ASSIGN(auto sink, OpenSink(OptionsAt(sorted.path()), landing));
  std::vector<StreamRecord> records = Records("t", 0, 0, 200);
  for (auto& r : records) {
    char name[16];
    std::snprintf(name, sizeof(name), "n%05lld", static_cast<long long>(r.offset));
    r.value = R"({"id":)" + std::to_string(r.offset) + R"(,"name":")" + name +
              R"(","day":"2026-12-02"})";
  }
  ASSERT_OK(sink->Write(Window(records, landing)).status());
  ASSERT_OK(sink->Flush().status());
  auto in2 = arrow::io::ReadableFile::Open(
      sorted.path() + "/t/t+0+00000000000000000000+00000000000000000199.parquet");
  ASSERT_OK(in2);
  auto meta2 = parquet::ParquetFileReader::Open(*in2)->metadata();
  for (int c = 0; c < meta2->num_columns(); ++c) {
    if (meta2->schema()->Column(c)->name() != "name") continue;
    auto chunk = meta2->RowGroup(0)->ColumnChunk(c);
    ASSERT_TRUE(chunk->is_stats_set());
    EXPECT_EQ(chunk->statistics()->EncodeMin(), "n00000");
    EXPECT_EQ(chunk->statistics()->EncodeMax(), "n00199");
  }
}

// rotate_bytes counts each partition's own rows: a window of two partitions whose
// whole batch is over the limit (3/4 of it) rotates neither (each holds about half of
// it); a second such window takes both over it.
TEST(ParquetSink, RotatesByBytesOfEachPartitionsOwnRows) {
  TempDir dir;
  Schema landing = Landing();
  auto two_partitions = [](int64_t first) {
    std::vector<StreamRecord> records = Records("t", 0, first, 100);
    auto p1 = Records("t", 1, first, 100);
    records.insert(records.end(), p1.begin(), p1.end());
    return records;
  };
  SinkWindow first = Window(two_partitions(0), landing);
  const auto window_bytes =
      static_cast<int64_t>(arrow::util::TotalBufferSize(*first.batch));
  ParquetSinkOptions o = OptionsAt(dir.path());
  o.rotate_bytes = window_bytes * 3 / 4;
  ASSERT_OK_AND_ASSIGN(auto sink, OpenSink(o, landing));
  ASSERT_OK(sink->Resume({{"t", 0}, {"t", 1}}).status());
  ASSERT_OK_AND_ASSIGN(auto advanced, sink->Write(first));
  EXPECT_TRUE(advanced.empty()) << "each partition holds half the window's bytes";
  EXPECT_TRUE(Files(dir.path()).empty());
  ASSERT_OK_AND_ASSIGN(advanced, sink->Write(Window(two_partitions(100), landing)));
  EXPECT_EQ(advanced.size(), 2u);
  EXPECT_EQ(advanced[TopicPartition({"t", 0})], 200);
  EXPECT_EQ(advanced[TopicPartition({"t", 1})], 200);
  EXPECT_EQ(Files(dir.path()).size(), 2u);
}

// Integer columns without a dictionary are delta-encoded by default (and read back
// exactly); "plain" leaves them plain, a dictionary keeps its own encoding, anything
// else is refused.
TEST(ParquetSink, IntegerEncodingDeltaByDefault) {
  auto encodings = [](const std::string& path) {
    std::map<std::string, std::set<parquet::Encoding::type>> out;
    auto in = arrow::io::ReadableFile::Open(path);
    EXPECT_OK(in) << path;
    if (!in.ok()) return out;
    auto meta = parquet::ParquetFileReader::Open(*in)->metadata();
    for (int c = 0; c < meta->num_columns(); ++c) {
      auto chunk = meta->RowGroup(0)->ColumnChunk(c);
      for (auto e : chunk->encodings()) out[meta->schema()->Column(c)->name()].insert(e);
    }
    return out;
  };
  constexpr auto kDelta = parquet::Encoding::DELTA_BINARY_PACKED;
  for (const std::string encoding : {"delta", "plain"}) {
    TempDir dir;
    const std::string path = WriteOneFile(dir.path(), "auto", 300, encoding);
    auto enc = encodings(path);
    ASSERT_FALSE(enc.empty()) << encoding;
    const bool delta = encoding == "delta";
    EXPECT_EQ(enc["_kafka_offset"].count(kDelta), delta ? 1u : 0u) << encoding;
    EXPECT_EQ(enc["id"].count(kDelta), delta ? 1u : 0u) << encoding;
    EXPECT_EQ(enc["_kafka_partition"].count(kDelta), 0u) << "it has a dictionary";
    auto table = ReadParquet(path);
    ASSERT_EQ(table->num_rows(), 300) << encoding;
    auto off = std::static_pointer_cast<arrow::Int64Array>(
        table->GetColumnByName("_kafka_offset")->chunk(0));
    auto id = std::static_pointer_cast<arrow::Int64Array>(
        table->GetColumnByName("id")->chunk(0));
    for (int64_t i = 0; i < 300; ++i) {
      ASSERT_EQ(off->Value(i), i) << encoding;
      ASSERT_EQ(id->Value(i), i) << encoding;
    }
  }
}

// A flush that failed for one partition (its rename, here blocked by a directory of
// the file's name) is done again: the file is published once the way is clear, and the
// second flush reports the durable points of both partitions, the one published by the
// failed flush included.
TEST(ParquetSink, AFailedFlushIsDoneAgainAndReportsEveryPartition) {
  TempDir dir;
  Schema landing = Landing();
  ParquetSinkOptions o = OptionsAt(dir.path());
  ASSERT_OK_AND_ASSIGN(auto sink, OpenSink(o, landing));
  std::vector<StreamRecord> records = Records("t", 0, 0, 10);
  for (const StreamRecord& r : Records("t", 1, 0, 10)) records.push_back(r);
  ASSERT_OK_AND_ASSIGN(auto written, sink->Write(Window(records, landing)));
  ASSERT_TRUE(written.empty());
  const std::string p0 = "t/t+0+00000000000000000000+00000000000000000009.parquet";
  const std::string p1 = "t/t+1+00000000000000000000+00000000000000000009.parquet";
  const std::string blocker = dir.path() + "/" + p1;
  ASSERT_TRUE(fs::create_directories(blocker));
  auto failed = sink->Flush();
  ASSERT_FALSE(failed.ok()) << "the rename onto a directory succeeded";
  EXPECT_NE(failed.status().message().find("renaming"), std::string::npos)
      << failed.status().ToString();
  EXPECT_TRUE(fs::is_regular_file(dir.path() + "/" + p0)) << "partition 0 not published";
  // The file of partition 1 is not finished: it takes no more rows (its name would no
  // longer match them); partition 0 starts a new file.
  auto refused = sink->Write(Window(Records("t", 1, 10, 5), landing));
  ASSERT_FALSE(refused.ok()) << "rows went into a file that failed to finish";
  EXPECT_NE(refused.status().message().find("could not be finished"), std::string::npos)
      << refused.status().ToString();
  fs::remove(blocker);
  ASSERT_OK_AND_ASSIGN(auto flushed, sink->Flush());
  EXPECT_EQ(flushed, (OffsetMap{{{"t", 0}, 10}, {{"t", 1}, 10}}));
  ASSERT_OK(sink->Close());
  EXPECT_EQ(Files(dir.path(), true), (std::vector<std::string>{p0, p1}));
  EXPECT_EQ(LandedOffsets(dir.path()).size(), 20u);
}

// Landing and dead-letter files have their own writer properties: a landing integer
// column named like a dead-letter text column (`_error_code`) is delta-encoded, the
// dead letters' text column of that name is not (Parquet refuses delta for text).
TEST(ParquetSink, DeadLettersKeepTheirEncodingsWhateverTheLandingColumnsAreNamed) {
  auto landing = ParseSchemaJson(
      R"({"fields":[{"name":"id","data_type":"Int64"},
                   {"name":"_error_code","data_type":"Int64"},
                   {"name":"_kafka_topic","data_type":"Utf8"},
                   {"name":"_kafka_partition","data_type":"Int64"},
                   {"name":"_kafka_offset","data_type":"Int64"}]})",
      SchemaDialect::kStrict);
  ASSERT_OK(landing);
  TempDir dir;
  ParquetSinkOptions o = OptionsAt(dir.path());
  ASSERT_OK_AND_ASSIGN(auto sink, OpenSink(o, *landing));
  ASSERT_OK(sink->Write(Window(Records("t", 0, 0, 10, {3, 7}), *landing)));
  ASSERT_OK_AND_ASSIGN(auto flushed, sink->Flush());
  EXPECT_EQ(flushed[(TopicPartition{"t", 0})], 10);
  size_t dead = 0;
  for (const auto& rel : Files(dir.path())) {
    auto table = ReadParquet(dir.path() + "/" + rel);
    ASSERT_TRUE(table) << rel;
    if (rel.rfind("_dead_letter", 0) == 0) dead += static_cast<size_t>(table->num_rows());
  }
  EXPECT_EQ(dead, 2u);
}

TEST(ParquetSink, ReplayBelowTheDurablePointAddsNothing) {
  TempDir dir;
  Schema landing = Landing();
  ParquetSinkOptions o = OptionsAt(dir.path());
  o.rotate_records = 1;  // every window is a file
  ASSERT_OK_AND_ASSIGN(auto sink, OpenResumedSink(o, landing));
  ASSERT_OK(sink->Write(Window(Records("t", 0, 0, 20), landing)));
  // A replayed window overlapping what is durable lands only the new part.
  ASSERT_OK_AND_ASSIGN(auto adv, sink->Write(Window(Records("t", 0, 10, 20), landing)));
  EXPECT_EQ(adv[(TopicPartition{"t", 0})], 30);
  // Entirely old: nothing written, nothing advanced.
  ASSERT_OK_AND_ASSIGN(auto none, sink->Write(Window(Records("t", 0, 5, 10), landing)));
  EXPECT_TRUE(none.empty());
  ASSERT_OK(sink->Close());
  auto landed = LandedOffsets(dir.path());
  EXPECT_EQ(landed.size(), 30u);
  std::set<std::pair<int64_t, int64_t>> unique(landed.begin(), landed.end());
  EXPECT_EQ(unique.size(), 30u);
}

TEST(ParquetSink, CleansLeftoversOfAnInterruptedRotation) {
  TempDir dir;
  Schema landing = Landing();
  ParquetSinkOptions o = OptionsAt(dir.path());
  o.rotate_records = 10;
  o.partition_by = "day";
  {
    ASSERT_OK_AND_ASSIGN(auto sink, OpenResumedSink(o, landing));
    auto w1 = Records("t", 0, 0, 5, {}, "2026-12-01");
    auto w2 = Records("t", 0, 5, 5, {7}, "2026-12-02");
    w1.insert(w1.end(), w2.begin(), w2.end());
    ASSERT_OK_AND_ASSIGN(auto adv, sink->Write(Window(w1, landing)));
    EXPECT_EQ(adv[(TopicPartition{"t", 0})], 10);
    // Rotation 10..19 is left open: a crash now leaves only a hidden file.
    ASSERT_OK(sink->Write(Window(Records("t", 0, 10, 3), landing)));
    // Simulate the crash: no Close (the destructor aborts like a killed process would
    // leave it; recreate the hidden file by hand to be sure one is found).
  }
  // Three files of rotation 0..9: two days and the dead letter of offset 7.
  auto files = Files(dir.path());
  ASSERT_EQ(files.size(), 3u) << ::testing::PrintToString(files);
  EXPECT_EQ(files[0],
            "_dead_letter/t/t+0+00000000000000000000+00000000000000000009+3of3.parquet");
  EXPECT_EQ(
      files[1],
      "t/day=2026-12-01/t+0+00000000000000000000+00000000000000000009+1of3.parquet");
  EXPECT_EQ(
      files[2],
      "t/day=2026-12-02/t+0+00000000000000000000+00000000000000000009+2of3.parquet");
  // Interrupted between renames of a later rotation: one of its two files exists, plus
  // an in-progress file.
  fs::copy_file(
      dir.path() + "/" + files[1],
      dir.path() +
          "/t/day=2026-12-01/t+0+00000000000000000010+00000000000000000019+1of2.parquet");
  { std::ofstream(dir.path() + "/t/day=2026-12-01/.t+0+abc.inprogress") << "x"; }
  ASSERT_OK_AND_ASSIGN(auto sink, OpenSink(o, landing));
  ASSERT_OK_AND_ASSIGN(auto resumed, sink->Resume({{"t", 0}}));
  EXPECT_EQ(resumed[(TopicPartition{"t", 0})], 10);  // the incomplete one is ignored…
  EXPECT_EQ(Files(dir.path(), true).size(), 3u);  // …and removed, with the hidden one
  auto dl = ReadParquet(dir.path() + "/" + files[0]);
  ASSERT_EQ(dl->num_rows(), 1);
  EXPECT_EQ(std::static_pointer_cast<arrow::Int64Array>(
                dl->GetColumnByName("_kafka_offset")->chunk(0))
                ->Value(0),
            7);
}

TEST(ParquetSink, TimeLayoutAndValidation) {
  TempDir dir;
  auto landing = ParseSchemaJson(
      R"({"fields":[{"name":"at","data_type":"Timestamp"},
                   {"name":"_kafka_partition","data_type":"Int64"},
                   {"name":"_kafka_offset","data_type":"Int64"}]})",
      SchemaDialect::kStrict);
  ASSERT_OK(landing);
  auto loader = Loader::Make(*landing);
  ParquetSinkOptions o = OptionsAt(dir.path());
  o.partition_by = "at";
  o.time_layout = "year=%Y/month=%m/day=%d/hour=%H";
  ASSERT_OK_AND_ASSIGN(auto sink, OpenResumedSink(o, *landing));
  std::vector<StreamRecord> recs(2);
  recs[0].topic = recs[1].topic = "t";
  recs[0].offset = 0;
  recs[1].offset = 1;
  recs[0].value = R"({"at":"2026-12-02T23:59:59Z"})";
  recs[1].value = R"({"at":null})";
  ASSERT_OK(sink->Write(Window(recs, *landing)));
  ASSERT_OK(sink->Close());
  auto files = Files(dir.path());
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].substr(0, files[0].rfind('/')),
            "t/year=2026/month=12/day=02/hour=23");
  EXPECT_EQ(files[1].substr(0, files[1].rfind('/')),
            "t/year=__HIVE_DEFAULT_PARTITION__/month=__HIVE_DEFAULT_PARTITION__/"
            "day=__HIVE_DEFAULT_PARTITION__/hour=__HIVE_DEFAULT_PARTITION__");

  for (const char* layout : {"%Y", "year=%Y/../x=1", "y=%Q"}) {
    ParquetSinkOptions bad = o;
    bad.time_layout = layout;
    auto s = MakeParquetSink(bad);
    EXPECT_FALSE((*s)->Open((*loader)->arrow_schema(), DeadLetterSchema()).ok())
        << layout;
  }
  ParquetSinkOptions no_col = o;
  no_col.partition_by = "nope";
  auto s = MakeParquetSink(no_col);
  Status st = (*s)->Open((*loader)->arrow_schema(), DeadLetterSchema());
  EXPECT_NE(st.message().find("'nope'"), std::string::npos) << st.ToString();
}

TEST(ParquetSink, ExportToParquetWritesOneFileAtomically) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto landed, LoadRecords(Records("t", 0, 0, 3), Landing()));
  std::string path = dir.path() + "/out.parquet";
  ASSERT_OK(ExportToParquet(*landed.batch, path));
  EXPECT_EQ(ReadParquet(path)->num_rows(), 3);
  const std::vector<std::string> only = {"out.parquet"};
  EXPECT_EQ(Files(dir.path(), true), only);
  EXPECT_OK(ExportToParquet(
      *landed.batch, dir.path() + "/missing/dir/x.parquet"));  // parents are created
  EXPECT_FALSE(ExportToParquet(*landed.batch, dir.path() + "/").ok());
}

// Every type a decoded Avro payload carries lands natively, except the union, which
// becomes a struct with one nullable field per branch; the file reads back with the
// batch's types (the stored Arrow schema) and values.
TEST(ParquetSink, LandsEveryDecodedPayloadTypeAndReadsItBack) {
  TempDir dir;
  auto window = testing::AllTypesWindow();
  ASSERT_OK_AND_ASSIGN(auto sink, MakeParquetSink(OptionsAt(dir.path())));
  ASSERT_OK(sink->Open(window.batch->schema(), DeadLetterSchema()));
  ASSERT_OK(sink->Resume({{"t", 0}}).status());
  ASSERT_OK(sink->Write(window).status());
  ASSERT_OK_AND_ASSIGN(auto durable, sink->Flush());
  EXPECT_EQ(durable[(TopicPartition{"t", 0})], 4);
  ASSERT_OK(sink->Close());
  auto files = Files(dir.path());
  ASSERT_EQ(files.size(), 1u);
  auto table = ReadParquet(dir.path() + "/" + files[0]);
  ASSERT_TRUE(table);
  ASSERT_OK_AND_ASSIGN(auto read, table->CombineChunksToBatch());
  ASSERT_EQ(read->num_rows(), 4);
  const auto& batch = *window.batch;
  ASSERT_EQ(read->num_columns(), batch.num_columns());
  for (int c = 0; c < batch.num_columns(); ++c) {
    const std::string& name = batch.schema()->field(c)->name();
    SCOPED_TRACE(name);
    EXPECT_EQ(read->schema()->field(c)->name(), name);
    if (name == "u") continue;
    EXPECT_TRUE(read->column(c)->type()->Equals(*batch.column(c)->type()))
        << read->column(c)->type()->ToString();
    EXPECT_TRUE(read->column(c)->Equals(*batch.column(c)))
        << "read " << read->column(c)->ToString() << "\nwrote "
        << batch.column(c)->ToString();
  }
  auto union_struct = arrow::struct_(
      {arrow::field("i", arrow::int32()), arrow::field("s", arrow::utf8())});
  auto want_union = testing::ColumnFromJson(
      union_struct, R"([{"i": 5, "s": null}, {"i": null, "s": "five"},
                        {"i": null, "s": null}, {"i": null, "s": "x"}])");
  auto u = read->GetColumnByName("u");
  ASSERT_TRUE(u);
  EXPECT_TRUE(u->type()->Equals(*union_struct)) << u->type()->ToString();
  EXPECT_TRUE(u->Equals(*want_union)) << u->ToString();
  auto ns =
      std::static_pointer_cast<arrow::TimestampArray>(read->GetColumnByName("ts_ns"));
  EXPECT_EQ(ns->Value(1), 1700000000123456789);
  // In Parquet's own terms (what readers without the stored Arrow schema see):
  // timestamps keep their unit and say whether they are UTC instants.
  auto in = arrow::io::ReadableFile::Open(dir.path() + "/" + files[0]);
  ASSERT_OK(in);
  auto meta = parquet::ParquetFileReader::Open(*in)->metadata();
  const parquet::SchemaDescriptor& parquet_schema = *meta->schema();
  auto logical = [&](const std::string& path) {
    int i = parquet_schema.ColumnIndex(path);
    EXPECT_GE(i, 0) << path;
    return i < 0 ? nullptr : parquet_schema.Column(i)->logical_type();
  };
  struct TimestampCase {
    std::string column;
    parquet::LogicalType::TimeUnit::unit unit;
    bool utc;
  };
  for (const auto& c : std::vector<TimestampCase>{
           {"ts_ms_utc", parquet::LogicalType::TimeUnit::MILLIS, true},
           {"ts_us_utc", parquet::LogicalType::TimeUnit::MICROS, true},
           {"ts_ns_utc", parquet::LogicalType::TimeUnit::NANOS, true},
           {"ts_ms", parquet::LogicalType::TimeUnit::MILLIS, false},
           {"ts_ns", parquet::LogicalType::TimeUnit::NANOS, false}}) {
    auto t = logical(c.column);
    ASSERT_TRUE(t && t->is_timestamp()) << c.column;
    const auto& ts = static_cast<const parquet::TimestampLogicalType&>(*t);
    EXPECT_EQ(ts.time_unit(), c.unit) << c.column;
    EXPECT_EQ(ts.is_adjusted_to_utc(), c.utc) << c.column;
  }
  auto dec = logical("dec256");
  ASSERT_TRUE(dec && dec->is_decimal());
  EXPECT_EQ(static_cast<const parquet::DecimalLogicalType&>(*dec).precision(), 50);
  auto t32 = logical("t32");
  EXPECT_TRUE(t32 && t32->is_time());
  auto e = logical("e");
  EXPECT_TRUE(e && e->is_string());
  // The union is a group of one optional column per branch.
  EXPECT_GE(parquet_schema.ColumnIndex("u.i"), 0);
  EXPECT_GE(parquet_schema.ColumnIndex("u.s"), 0);
}

}  // namespace
}  // namespace kelt
