// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Iceberg table maintenance on tables the sink landed: expiry keeps the current
// snapshot and the offsets the sink resumes from and deletes only what no kept snapshot
// references; compaction keeps every row once, carries the offsets, and redoes its plan
// on top of an append that won the compare-and-swap.
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <gtest/gtest.h>
#include <parquet/arrow/reader.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kelt/iceberg/catalog.h"
#include "kelt/iceberg/maintenance.h"
#include "kelt/iceberg/table.h"
#include "kelt/load.h"
#include "kelt/schema.h"
#include "kelt/sink.h"
#include "kelt/sink/iceberg_maintenance.h"
#include "kelt/sink/sink_testing.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLanding = R"({"fields":[
  {"name":"id","data_type":"Int64"},
  {"name":"_kafka_topic","data_type":"Utf8"},
  {"name":"_kafka_partition","data_type":"Int64"},
  {"name":"_kafka_offset","data_type":"Int64"}]})";

std::vector<StreamRecord> Range(int64_t first, int64_t last, int32_t partition = 0) {
  std::vector<StreamRecord> out;
  for (int64_t o = first; o <= last; ++o) {
    StreamRecord r;
    r.topic = "events";
    r.partition = partition;
    r.offset = o;
    r.value = R"({"id":)" + std::to_string(o * 10 + partition) + "}";
    out.push_back(std::move(r));
  }
  return out;
}

using Keys = std::multiset<std::pair<int64_t, int64_t>>;  // (partition, offset)

class IcebergMaintenanceTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK_AND_ASSIGN(landing_, ParseSchemaJson(kLanding)); }

  IcebergSinkOptions Options(std::string partition = "") const {
    IcebergSinkOptions o;
    o.catalog = dir_.path() + "/kelt.db";
    o.warehouse = dir_.path() + "/wh";
    o.table_namespace = "ns";
    o.table = "events";
    o.group_id = "g1";
    o.partition = std::move(partition);
    return o;
  }

  IcebergTableRef Ref() const {
    IcebergTableRef t;
    t.catalog = Options().catalog;
    t.table_namespace = "ns";
    t.table = "events";
    return t;
  }

  std::unique_ptr<Sink> OpenSink(const std::string& partition = "") {
    auto sink = MakeIcebergSink(Options(partition));
    EXPECT_OK(sink);
    if (!sink.ok()) return nullptr;
    EXPECT_OK((*sink)->Open(ToArrowSchema(landing_), DeadLetterSchema()));
    return std::move(*sink);
  }

  // Land `windows` windows of 10 records each, alternating Kafka partitions 0 and 1.
  void LandWindows(Sink& sink, int windows, int64_t first_window = 0) {
    for (int w = 0; w < windows; ++w) {
      const int64_t n = first_window + w;
      const int32_t p = static_cast<int32_t>(n % 2);
      const int64_t first = (n / 2) * 10;
      ASSERT_OK(sink.Write(Window(Range(first, first + 9, p))).status());
    }
  }

  SinkWindow Window(const std::vector<StreamRecord>& records) {
    return testing::MakeSinkWindow(records, landing_, LoadOptions{});
  }

  std::unique_ptr<iceberg::Catalog> CatalogHandle() {
    auto c = iceberg::OpenSqliteCatalog(Options().catalog, "kelt");
    EXPECT_OK(c);
    return c.ok() ? std::move(*c) : nullptr;
  }

  iceberg::TableMetadata Metadata() {
    auto cat = CatalogHandle();
    auto t = iceberg::LoadTable(*cat, {"ns", "events"});
    EXPECT_OK(t);
    EXPECT_TRUE(t.ok() && *t);
    return (t.ok() && *t) ? (*t)->metadata : iceberg::TableMetadata{};
  }

  std::vector<std::string> LiveFiles() {
    auto files = iceberg::CurrentDataFiles(Metadata());
    EXPECT_OK(files);
    return files.ok() ? *files : std::vector<std::string>{};
  }

  // Every (partition, offset) of the current snapshot, as often as it is there.
  Keys CurrentKeys() {
    Keys out;
    auto read = IcebergDataFileCodec().read;
    for (const auto& location : LiveFiles()) {
      auto path = iceberg::LocalPath(location);
      EXPECT_OK(path);
      if (!path.ok()) return out;
      auto batch = read(*path);
      EXPECT_OK(batch);
      if (!batch.ok()) return out;
      const auto& p = static_cast<const arrow::Int64Array&>(
          *(*batch)->GetColumnByName("_kafka_partition"));
      const auto& o = static_cast<const arrow::Int64Array&>(
          *(*batch)->GetColumnByName("_kafka_offset"));
      for (int64_t r = 0; r < (*batch)->num_rows(); ++r) {
        out.insert({p.Value(r), o.Value(r)});
      }
    }
    return out;
  }

  std::string CurrentOffsets() {
    auto m = Metadata();
    return iceberg::LineageOffsets(m)["kelt.offsets.g1"];
  }

  size_t FilesUnder(const std::string& sub) {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir_.path() + "/wh/ns/events/" + sub)) {
      if (e.path().extension() == ".parquet" || e.path().extension() == ".avro") ++n;
    }
    return n;
  }

  static bool Exists(const std::string& location) {
    auto path = iceberg::LocalPath(location);
    return path.ok() && fs::exists(*path);
  }

  static Keys Expected(int windows) {
    Keys out;
    for (int64_t n = 0; n < windows; ++n) {
      for (int64_t o = (n / 2) * 10; o < (n / 2) * 10 + 10; ++o) out.insert({n % 2, o});
    }
    return out;
  }

  testing::TempDir dir_{"kelt-iceberg-maint"};
  Schema landing_;
};

TEST_F(IcebergMaintenanceTest, ExpireKeepsTheCurrentSnapshotItsOffsetsAndLiveFiles) {
  auto sink = OpenSink();
  ASSERT_TRUE(sink);
  LandWindows(*sink, 4);
  const auto before = Metadata();
  ASSERT_EQ(before.snapshots.size(), 4u);
  const std::string offsets = CurrentOffsets();
  ASSERT_FALSE(offsets.empty());
  const auto files = LiveFiles();
  ASSERT_EQ(files.size(), 4u);

  IcebergExpireOptions o;
  o.older_than_ms = iceberg::NowMs() + 1000;  // every snapshot is older
  o.retain_last = 2;
  ASSERT_OK_AND_ASSIGN(IcebergExpireResult r, ExpireIcebergSnapshots(Ref(), o));
  EXPECT_EQ(r.expired.size(), 2u);
  EXPECT_EQ(r.snapshots_kept, 2);
  // Appends share their manifests: the current snapshot still reads every data file.
  EXPECT_EQ(r.data_files_deleted, 0);
  EXPECT_EQ(r.manifests_deleted, 0);
  EXPECT_EQ(r.manifest_lists_deleted, 2);
  const auto after = Metadata();
  EXPECT_EQ(after.current_snapshot_id, before.current_snapshot_id);
  ASSERT_EQ(after.snapshots.size(), 2u);
  for (const auto& s : before.snapshots) {
    const bool kept = after.FindSnapshot(s.snapshot_id) != nullptr;
    EXPECT_EQ(Exists(s.manifest_list), kept) << s.manifest_list;
  }
  for (const auto& f : files) EXPECT_TRUE(Exists(f)) << f;
  EXPECT_EQ(CurrentOffsets(), offsets);
  EXPECT_EQ(CurrentKeys(), Expected(4));

  // A cutoff before every snapshot expires nothing; the table is unchanged.
  o.older_than_ms = 0;
  o.retain_last = 1;
  ASSERT_OK_AND_ASSIGN(r, ExpireIcebergSnapshots(Ref(), o));
  EXPECT_TRUE(r.expired.empty());
  EXPECT_EQ(Metadata(), after);

  // A sink opened afterwards resumes where the table says.
  auto again = OpenSink();
  ASSERT_OK_AND_ASSIGN(OffsetMap resumed, again->Resume({{"events", 0}, {"events", 1}}));
  EXPECT_EQ(resumed, (OffsetMap{{{"events", 0}, 20}, {{"events", 1}, 20}}));
}

TEST_F(IcebergMaintenanceTest, ExpireKeepsTheLineageDownToTheOffsetsTheSinkResumesFrom) {
  auto sink = OpenSink();
  ASSERT_TRUE(sink);
  LandWindows(*sink, 3);
  const std::string offsets = CurrentOffsets();
  // Another writer appends a snapshot without kelt's offsets on top.
  auto cat = CatalogHandle();
  ASSERT_OK_AND_ASSIGN(auto base, iceberg::LoadTable(*cat, {"ns", "events"}));
  ASSERT_TRUE(base);
  ASSERT_OK_AND_ASSIGN(auto foreign,
                       iceberg::CommitAppend(*cat, {"ns", "events"}, *base, {}, {}, {}));
  ASSERT_TRUE(foreign.committed);

  IcebergExpireOptions o;
  o.older_than_ms = iceberg::NowMs() + 1000;
  o.retain_last = 1;
  ASSERT_OK_AND_ASSIGN(IcebergExpireResult r, ExpireIcebergSnapshots(Ref(), o));
  // The foreign snapshot and its parent (the newest with g1's offsets) stay.
  EXPECT_EQ(r.expired.size(), 2u);
  EXPECT_EQ(r.snapshots_kept, 2);
  EXPECT_EQ(CurrentOffsets(), offsets);
  auto again = OpenSink();
  ASSERT_OK_AND_ASSIGN(OffsetMap resumed, again->Resume({{"events", 0}, {"events", 1}}));
  EXPECT_EQ(resumed, (OffsetMap{{{"events", 0}, 20}, {{"events", 1}, 10}}));
  // Landing the same records again adds nothing.
  ASSERT_OK(again->Write(Window(Range(0, 19, 0))).status());
  EXPECT_EQ(CurrentKeys(), Expected(3));
}

TEST_F(IcebergMaintenanceTest,
       CompactRewritesSmallFilesOncePerPartitionAndCarriesOffsets) {
  auto sink = OpenSink("bucket[2](id)");
  ASSERT_TRUE(sink);
  LandWindows(*sink, 6);
  const auto before_files = LiveFiles();
  ASSERT_GE(before_files.size(), 6u);
  const std::string offsets = CurrentOffsets();
  const auto before = Metadata();

  IcebergCompactOptions o;
  o.target_file_size = 64 << 20;
  ASSERT_OK_AND_ASSIGN(IcebergCompactResult r, CompactIcebergTable(Ref(), o));
  EXPECT_TRUE(r.committed);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(r.partitions, 2);  // the two buckets
  EXPECT_EQ(r.files_written, 2);
  EXPECT_EQ(r.files_rewritten, static_cast<int64_t>(before_files.size()));
  EXPECT_EQ(r.records, 60);

  const auto after = Metadata();
  const iceberg::Snapshot* s = after.CurrentSnapshot();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->summary.at("operation"), "replace");
  EXPECT_EQ(s->parent_snapshot_id, before.current_snapshot_id);
  EXPECT_EQ(s->summary.at("kelt.offsets.g1"), offsets);  // on the snapshot itself
  EXPECT_EQ(s->summary.at("total-records"), "60");
  EXPECT_EQ(s->summary.at("total-data-files"), "2");
  const auto files = LiveFiles();
  EXPECT_EQ(files.size(), 2u);
  EXPECT_EQ(CurrentKeys(), Expected(6));
  // Old files stay for readers of older snapshots; the new ones carry the field ids.
  for (const auto& f : before_files) EXPECT_TRUE(Exists(f)) << f;
  for (const auto& f : files) {
    ASSERT_OK_AND_ASSIGN(auto path, iceberg::LocalPath(f));
    auto in = arrow::io::ReadableFile::Open(path).ValueOrDie();
    auto reader = parquet::arrow::OpenFile(in, arrow::default_memory_pool()).ValueOrDie();
    const auto* schema = reader->parquet_reader()->metadata()->schema();
    for (int c = 0; c < schema->num_columns(); ++c) {
      EXPECT_EQ(schema->Column(c)->schema_node()->field_id(), c + 1) << f;
    }
  }
  // Nothing more to do: one file per bucket.
  ASSERT_OK_AND_ASSIGN(r, CompactIcebergTable(Ref(), o));
  EXPECT_FALSE(r.committed);

  // Expiring the appends deletes the replaced files, keeps the compacted ones.
  IcebergExpireOptions e;
  e.older_than_ms = iceberg::NowMs() + 1000;
  ASSERT_OK_AND_ASSIGN(IcebergExpireResult x, ExpireIcebergSnapshots(Ref(), e));
  EXPECT_EQ(x.snapshots_kept, 1);
  EXPECT_EQ(x.data_files_deleted, static_cast<int64_t>(before_files.size()));
  for (const auto& f : before_files) EXPECT_FALSE(Exists(f)) << f;
  for (const auto& f : files) EXPECT_TRUE(Exists(f)) << f;
  EXPECT_EQ(FilesUnder("data"), 2u);
  EXPECT_EQ(CurrentKeys(), Expected(6));

  // A sink resumes at the same offsets: replaying old records adds nothing, new ones
  // land.
  auto again = OpenSink("bucket[2](id)");
  ASSERT_OK_AND_ASSIGN(OffsetMap resumed, again->Resume({{"events", 0}, {"events", 1}}));
  EXPECT_EQ(resumed, (OffsetMap{{{"events", 0}, 30}, {{"events", 1}, 30}}));
  ASSERT_OK(again->Write(Window(Range(20, 39, 0))).status());
  Keys want = Expected(6);
  for (int64_t off = 30; off <= 39; ++off) want.insert({0, off});
  EXPECT_EQ(CurrentKeys(), want);
}

// A manifest is data: a path in it outside the table's location (another table's file,
// anything on the machine) is never deleted by expire, only reported.
TEST_F(IcebergMaintenanceTest, ExpireNeverDeletesAFileOutsideTheTable) {
  auto sink = OpenSink();
  ASSERT_TRUE(sink);
  LandWindows(*sink, 2);
  // A data file of the table, copied outside the warehouse and appended by another
  // writer under that outside path (with the original's statistics).
  auto cat = CatalogHandle();
  ASSERT_OK_AND_ASSIGN(auto base, iceberg::LoadTable(*cat, {"ns", "events"}));
  ASSERT_TRUE(base);
  const iceberg::Snapshot* current = base->metadata.CurrentSnapshot();
  ASSERT_TRUE(current);
  ASSERT_OK_AND_ASSIGN(auto lists, iceberg::ReadManifestListAt(iceberg::FileIO::Local(),
                                                               current->manifest_list));
  ASSERT_FALSE(lists.empty());
  ASSERT_OK_AND_ASSIGN(auto entries, iceberg::ReadManifestEntriesAt(
                                         iceberg::FileIO::Local(), lists.front().path));
  ASSERT_FALSE(entries.empty());
  iceberg::DataFile outside = entries.front().file;
  const std::string outside_path = dir_.path() + "/elsewhere/precious.parquet";
  fs::create_directories(dir_.path() + "/elsewhere");
  ASSERT_OK_AND_ASSIGN(auto original, iceberg::LocalPath(outside.path));
  fs::copy_file(original, outside_path);
  outside.path = outside_path;
  ASSERT_OK_AND_ASSIGN(auto appended, iceberg::CommitAppend(*cat, {"ns", "events"}, *base,
                                                            {}, {outside}, {}));
  ASSERT_TRUE(appended.committed);
  // Compaction replaces every small file, the outside one included; expiring the older
  // snapshots then leaves the replaced files to be deleted.
  IcebergCompactOptions c;
  c.target_file_size = 64 << 20;
  ASSERT_OK_AND_ASSIGN(IcebergCompactResult r, CompactIcebergTable(Ref(), c));
  ASSERT_TRUE(r.committed);
  IcebergExpireOptions e;
  e.older_than_ms = iceberg::NowMs() + 1000;
  ASSERT_OK_AND_ASSIGN(IcebergExpireResult x, ExpireIcebergSnapshots(Ref(), e));
  EXPECT_EQ(x.snapshots_kept, 1);
  EXPECT_EQ(x.data_files_deleted, 2);  // the table's own two
  EXPECT_EQ(x.files_outside_table, std::vector<std::string>{outside_path});
  EXPECT_TRUE(fs::exists(outside_path));
}

TEST_F(IcebergMaintenanceTest, CompactThatLosesTheSwapToAnAppendRedoesOnTopOfIt) {
  auto sink = OpenSink();
  ASSERT_TRUE(sink);
  LandWindows(*sink, 4);
  auto cat = CatalogHandle();
  iceberg::CompactOptions o;
  int hooked = 0;
  o.before_commit = [&](int attempt) {
    ++hooked;
    if (attempt == 1) LandWindows(*sink, 2, 4);  // a run lands meanwhile
  };
  ASSERT_OK_AND_ASSIGN(
      iceberg::CompactOutcome r,
      iceberg::CompactTable(*cat, {"ns", "events"}, o, IcebergDataFileCodec()));
  EXPECT_TRUE(r.committed);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(hooked, 2);
  EXPECT_EQ(r.files_rewritten, 6);  // the append's files too
  EXPECT_EQ(LiveFiles().size(), 1u);
  EXPECT_EQ(CurrentKeys(), Expected(6));
  // The offsets are the append's, and the lost attempt left no file behind.
  const auto m = Metadata();
  EXPECT_EQ(m.CurrentSnapshot()->summary.at("kelt.offsets.g1"),
            R"({"events":{"0":30,"1":30}})");
  EXPECT_EQ(FilesUnder("data"), 6u + 1u);
  size_t manifests = 0;
  for (const auto& e : fs::directory_iterator(dir_.path() + "/wh/ns/events/metadata")) {
    manifests += e.path().extension() == ".avro";
  }
  EXPECT_EQ(manifests, 2u * 7u);  // a manifest and a list per snapshot, nothing more

  // Giving up after the attempts allowed: an error naming the table, no files left.
  LandWindows(*sink, 1, 6);  // two small files again: the compacted one and this
  o.max_attempts = 2;
  o.before_commit = [&](int attempt) { LandWindows(*sink, 1, 6 + attempt); };
  auto lost = iceberg::CompactTable(*cat, {"ns", "events"}, o, IcebergDataFileCodec());
  EXPECT_STATUS(lost, StatusCode::kUnavailable, "table ns.events in sqlite:");
  EXPECT_EQ(FilesUnder("data"), 7u + 3u);  // only the three appends' files were added
}

// After a compaction, and no expire, the replaced data files and their manifests are
// named by older snapshots only; a sink's start must see them as live (it judges files
// against the current snapshot first, then against every snapshot before removing any).
TEST_F(IcebergMaintenanceTest, AStartAfterACompactionKeepsWhatOlderSnapshotsName) {
  std::set<std::string> before;
  {
    auto sink = OpenSink();
    ASSERT_TRUE(sink);
    LandWindows(*sink, 4);
  }
  for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/wh/ns/events")) {
    if (e.is_regular_file()) before.insert(e.path().string());
  }
  auto cat = CatalogHandle();
  ASSERT_OK_AND_ASSIGN(
      iceberg::CompactOutcome r,
      iceberg::CompactTable(*cat, {"ns", "events"}, iceberg::CompactOptions{},
                            IcebergDataFileCodec()));
  ASSERT_TRUE(r.committed);
  ASSERT_EQ(LiveFiles().size(), 1u);  // the four are older snapshots' files now
  {
    auto sink = OpenSink();  // the start's leftover check
    ASSERT_TRUE(sink);
  }
  for (const auto& f : before) EXPECT_TRUE(fs::exists(f)) << f << " was removed";
  const auto m = Metadata();
  ASSERT_OK_AND_ASSIGN(auto referenced, iceberg::ReferencedDataFiles(m));
  EXPECT_EQ(referenced.size(), 5u);
  for (const auto& f : referenced) EXPECT_TRUE(fs::exists(*iceberg::LocalPath(f))) << f;
  EXPECT_EQ(CurrentKeys(), Expected(4));
}

}  // namespace
}  // namespace kelt
