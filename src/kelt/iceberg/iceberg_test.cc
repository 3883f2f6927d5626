// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Iceberg module: metadata JSON round trip, manifests and manifest lists read back
// by Apache Avro C's own file reader, the SQLite catalog's compare-and-swap, the
// schema mapping and the statistics' binary form.
#include <arrow/api.h>
#include <avro.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>

#include "kelt/iceberg/catalog.h"
#include "kelt/iceberg/manifest.h"
#include "kelt/iceberg/metadata.h"
#include "kelt/iceberg/partition.h"
#include "kelt/iceberg/table.h"
#include "kelt/iceberg/table_schema.h"
#include "kelt/sink/sink_testing.h"
#include "kelt/testing/assertions.h"

namespace kelt::iceberg {
namespace {

using testing::TempDir;

Schema TwoColumns() {
  Schema s;
  s.fields = {{1, "id", "long", true}, {2, "name", "string", false}};
  return s;
}

TEST(IcebergMetadataTest, RoundTripsThroughJson) {
  TableMetadata m =
      NewTableMetadata("file:///w/ns/t", TwoColumns(),
                       PartitionSpec{0, {{1, 1000, "id_bucket", "identity"}}},
                       RandomUuid(), 1700000000000);
  m.properties["owner"] = "kelt \"quoted\"";
  Snapshot s;
  s.snapshot_id = 42;
  s.sequence_number = 1;
  s.timestamp_ms = 1700000000001;
  s.manifest_list = "file:///w/ns/t/metadata/snap-42.avro";
  s.summary = {{"operation", "append"}, {"kelt.offsets.g", R"({"t":{"0":10}})"}};
  m.snapshots.push_back(s);
  Snapshot child = s;
  child.snapshot_id = 43;
  child.parent_snapshot_id = 42;
  child.sequence_number = 2;
  m.snapshots.push_back(child);
  m.current_snapshot_id = 43;
  m.last_sequence_number = 2;
  m.snapshot_log = {{1, "42"}, {2, "43"}};
  m.metadata_log = {{1, "file:///w/ns/t/metadata/v00001-x.metadata.json"}};
  const std::string json = MetadataToJson(m);
  ASSERT_OK_AND_ASSIGN(TableMetadata back, MetadataFromJson(json));
  EXPECT_EQ(back, m);
  EXPECT_EQ(back.CurrentSnapshot()->parent_snapshot_id, 42);
  EXPECT_EQ(back.last_partition_id, 1000);
  EXPECT_EQ(back.last_column_id, 2);
  // What readers need is spelled the spec's way.
  EXPECT_NE(json.find(R"("format-version":2)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("refs":{"main":{"snapshot-id":43,"type":"branch"}})"),
            std::string::npos)
      << json;
}

TEST(IcebergMetadataTest, RefusesOtherFormatVersionsAndBrokenDocuments) {
  TableMetadata m = NewTableMetadata("file:///t", TwoColumns(), {}, RandomUuid(), 1);
  std::string json = MetadataToJson(m);
  json.replace(json.find(R"("format-version":2)"), 18, R"("format-version":1)");
  EXPECT_STATUS(MetadataFromJson(json), StatusCode::kNotImplemented, "format version 1");
  EXPECT_STATUS(MetadataFromJson("{"), StatusCode::kParseError, "table metadata");
  EXPECT_STATUS(MetadataFromJson(R"({"format-version":2})"), StatusCode::kParseError,
                "table-uuid");
}

TEST(IcebergSchemaTest, MapsLandingTypesWithFieldIds) {
  auto landing = arrow::schema({
      arrow::field("i", arrow::int32(), false),
      arrow::field("l", arrow::int64()),
      arrow::field("s", arrow::utf8()),
      arrow::field("ts", arrow::timestamp(arrow::TimeUnit::MILLI, "UTC")),
      arrow::field("local", arrow::timestamp(arrow::TimeUnit::MICRO)),
      arrow::field("d", arrow::date32()),
      arrow::field("dec", arrow::decimal128(10, 2)),
      arrow::field("f", arrow::fixed_size_binary(16)),
      arrow::field("e", arrow::dictionary(arrow::int32(), arrow::utf8())),
  });
  ASSERT_OK_AND_ASSIGN(LandingMapping m, MapLandingSchema(*landing));
  std::vector<std::string> types;
  for (const auto& f : m.schema.fields) types.push_back(f.type);
  EXPECT_EQ(types,
            (std::vector<std::string>{"int", "long", "string", "timestamptz", "timestamp",
                                      "date", "decimal(10, 2)", "fixed[16]", "string"}));
  EXPECT_TRUE(m.schema.fields[0].required);
  EXPECT_FALSE(m.schema.fields[1].required);
  for (int i = 0; i < m.arrow->num_fields(); ++i) {
    auto md = m.arrow->field(i)->metadata();
    ASSERT_TRUE(md);
    EXPECT_EQ(md->Get("PARQUET:field_id").ValueOr(""), std::to_string(i + 1));
  }
  EXPECT_TRUE(
      m.arrow->field(3)->type()->Equals(arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")));
  // ns has no v2 type; nested types come later: both say which column.
  auto ns = arrow::schema({arrow::field("t", arrow::timestamp(arrow::TimeUnit::NANO))});
  EXPECT_STATUS(MapLandingSchema(*ns), StatusCode::kNotImplemented, "column 't'");
  auto nested = arrow::schema({arrow::field("l", arrow::list(arrow::int64()))});
  EXPECT_STATUS(MapLandingSchema(*nested), StatusCode::kNotImplemented, "column 'l'");
}

TEST(IcebergSchemaTest, ConvertsMillisecondsAndComputesBinaryBounds) {
  auto landing = arrow::schema(
      {arrow::field("ts", arrow::timestamp(arrow::TimeUnit::MILLI, "UTC")),
       arrow::field("s", arrow::utf8()), arrow::field("x", arrow::float64())});
  ASSERT_OK_AND_ASSIGN(LandingMapping m, MapLandingSchema(*landing));
  arrow::TimestampBuilder tb(arrow::timestamp(arrow::TimeUnit::MILLI, "UTC"),
                             arrow::default_memory_pool());
  ASSERT_TRUE(tb.AppendValues({5, -2}).ok());
  ASSERT_TRUE(tb.AppendNull().ok());
  arrow::StringBuilder sb;
  ASSERT_TRUE(sb.AppendValues({"b", "é", "a"}).ok());
  arrow::DoubleBuilder db;
  ASSERT_TRUE(db.AppendValues(std::vector<double>{1.5, std::nan(""), -3.0}).ok());
  auto batch = arrow::RecordBatch::Make(
      landing, 3,
      {tb.Finish().ValueOrDie(), sb.Finish().ValueOrDie(), db.Finish().ValueOrDie()});
  ASSERT_OK_AND_ASSIGN(auto out, ToIcebergBatch(batch, m));
  const auto& ts = static_cast<const arrow::TimestampArray&>(*out->column(0));
  EXPECT_EQ(ts.Value(0), 5000);
  EXPECT_EQ(ts.Value(1), -2000);
  EXPECT_TRUE(ts.IsNull(2));
  ASSERT_OK_AND_ASSIGN(ColumnStats st, ComputeStats(*out, m.schema));
  EXPECT_EQ(st.value_counts.at(1), 3);
  EXPECT_EQ(st.null_counts.at(1), 1);
  EXPECT_EQ(st.lower_bounds.at(1), SerializeInt64(-2000));
  EXPECT_EQ(st.upper_bounds.at(1), SerializeInt64(5000));
  EXPECT_EQ(st.lower_bounds.at(2), "a");
  EXPECT_EQ(st.upper_bounds.at(2), "é");  // UTF-8 bytes compare unsigned
  double lo, hi;
  std::memcpy(&lo, st.lower_bounds.at(3).data(), 8);
  std::memcpy(&hi, st.upper_bounds.at(3).data(), 8);
  EXPECT_EQ(lo, -3.0);  // NaN left out of the bounds
  EXPECT_EQ(hi, 1.5);
  EXPECT_EQ(SerializeInt32(1), std::string("\1\0\0\0", 4));
}

// Read a container file with Avro C's reader: its header's schema JSON and records.
struct AvroFile {
  std::string schema_json;
  int records = 0;
};

AvroFile ReadWithAvroC(const std::string& path) {
  AvroFile out;
  avro_file_reader_t r;
  EXPECT_EQ(avro_file_reader(path.c_str(), &r), 0) << avro_strerror();
  avro_schema_t s = avro_file_reader_get_writer_schema(r);
  avro_value_iface_t* iface = avro_generic_class_from_schema(s);
  avro_value_t v;
  avro_generic_value_new(iface, &v);
  while (avro_file_reader_read_value(r, &v) == 0) ++out.records;
  avro_value_decref(&v);
  avro_value_iface_decref(iface);
  avro_file_reader_close(r);
  avro_schema_decref(s);
  return out;
}

TEST(IcebergPartitionTest, ParsesSpecsAndRefusesWhatItCannotWrite) {
  Schema s;
  s.fields = {{1, "at", "timestamptz", false},
              {2, "base", "string", false},
              {3, "d", "date", false},
              {4, "x", "double", false},
              {5, "a b", "string", false}};
  ASSERT_OK_AND_ASSIGN(PartitionSpec spec,
                       ParsePartitionSpec(" day(at), base ,month(d), hour(at)", s));
  ASSERT_EQ(spec.fields.size(), 4u);
  EXPECT_EQ(spec.fields[0], (PartitionField{1, 1000, "at_day", "day"}));
  EXPECT_EQ(spec.fields[1], (PartitionField{2, 1001, "base", "identity"}));
  EXPECT_EQ(spec.fields[2], (PartitionField{3, 1002, "d_month", "month"}));
  ASSERT_OK_AND_ASSIGN(auto columns, PartitionColumns(spec, s));
  EXPECT_EQ(columns[0].type, "date");
  EXPECT_EQ(columns[1].type, "string");
  EXPECT_EQ(columns[2].type, "int");
  EXPECT_EQ(columns[3].type, "int");
  ASSERT_OK_AND_ASSIGN(PartitionSpec none, ParsePartitionSpec("", s));
  EXPECT_TRUE(none.fields.empty());
  EXPECT_STATUS(ParsePartitionSpec("day(nope)", s), StatusCode::kInvalid,
                "no column 'nope'");
  EXPECT_STATUS(ParsePartitionSpec("hour(d)", s), StatusCode::kInvalid,
                "needs a timestamp");
  EXPECT_STATUS(ParsePartitionSpec("week(at)", s), StatusCode::kInvalid,
                "unknown transform");
  EXPECT_STATUS(ParsePartitionSpec("truncate[4](base)", s), StatusCode::kNotImplemented,
                "truncate[4]");
  EXPECT_STATUS(ParsePartitionSpec("bucket[0](base)", s), StatusCode::kInvalid, "N > 0");
  ASSERT_OK_AND_ASSIGN(PartitionSpec b, ParsePartitionSpec("bucket[16](base)", s));
  EXPECT_EQ(b.fields[0], (PartitionField{2, 1000, "base_bucket", "bucket[16]"}));
  ASSERT_OK_AND_ASSIGN(auto bc, PartitionColumns(b, s));
  EXPECT_EQ(bc[0].type, "int");
  EXPECT_STATUS(ParsePartitionSpec("x", s), StatusCode::kNotImplemented,
                "identity of double");
  EXPECT_STATUS(ParsePartitionSpec("base, base", s), StatusCode::kInvalid, "twice");
  EXPECT_STATUS(ParsePartitionSpec("a b", s), StatusCode::kNotImplemented,
                "not an Avro name");
}

// The hash values of the Iceberg spec's appendix B ("32-bit Hash Requirements").
TEST(IcebergPartitionTest, BucketHashMatchesTheSpecsValues) {
  EXPECT_EQ(BucketHashLong(34), 2017239379);     // int and long 34
  EXPECT_EQ(BucketHashLong(17486), -653330422);  // date 2017-11-16
  EXPECT_EQ(BucketHashLong(1510871468000000),
            -2047944441);  // timestamp 2017-11-16T22:31:08
  EXPECT_EQ(BucketHash("iceberg"), 1210000089);
  EXPECT_EQ(BucketHash(std::string("\x00\x01\x02\x03", 4)), -188683207);  // binary
}

TEST(IcebergPartitionTest, TimeTransformsFloorTowardsThePast) {
  Schema s;
  s.fields = {{1, "at", "timestamptz", false}};
  ASSERT_OK_AND_ASSIGN(
      PartitionSpec spec,
      ParsePartitionSpec("day(at), hour(at), month(at), year(at), at", s));
  arrow::TimestampBuilder b(arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
                            arrow::default_memory_pool());
  // 2026-03-15T10:30:00Z, 1969-12-31T23:59:59.999999Z, null
  ASSERT_TRUE(b.AppendValues(std::vector<int64_t>{1773570600000000, -1}).ok());
  ASSERT_TRUE(b.AppendNull().ok());
  auto batch = arrow::RecordBatch::Make(
      arrow::schema(
          {arrow::field("at", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"))}),
      3, {b.Finish().ValueOrDie()});
  ASSERT_OK_AND_ASSIGN(auto v, PartitionValues(*batch, spec, s));
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ(v[0][0], PartitionDatum{int32_t{20527}});  // days since 1970-01-01
  EXPECT_EQ(v[1][0], PartitionDatum{int32_t{20527 * 24 + 10}});
  EXPECT_EQ(v[2][0], PartitionDatum{int32_t{(2026 - 1970) * 12 + 2}});
  EXPECT_EQ(v[3][0], PartitionDatum{int32_t{56}});
  EXPECT_EQ(v[4][0], PartitionDatum{int64_t{1773570600000000}});
  EXPECT_EQ(v[0][1], PartitionDatum{int32_t{-1}});
  EXPECT_EQ(v[1][1], PartitionDatum{int32_t{-1}});
  EXPECT_EQ(v[2][1], PartitionDatum{int32_t{-1}});
  EXPECT_EQ(v[3][1], PartitionDatum{int32_t{-1}});
  for (const auto& field : v) EXPECT_FALSE(field[2].has_value());
}

TEST(IcebergManifestTest, ManifestAndListReadBackByAvroC) {
  TempDir dir("kelt-iceberg");
  ManifestContext ctx;
  ctx.schema = TwoColumns();
  ctx.spec = PartitionSpec{0, {{1, 1000, "id", "identity"}}};
  ctx.partition = {{1000, "id", "long"}};
  ctx.snapshot_id = 7;
  std::vector<DataFile> files(2);
  files[0].path = "file:///x/a.parquet";
  files[0].record_count = 3;
  files[0].file_size = 100;
  files[0].partition = {int64_t{5}};
  files[0].stats.value_counts = {{1, 3}, {2, 3}};
  files[0].stats.null_counts = {{1, 0}, {2, 1}};
  files[0].stats.lower_bounds = {{1, SerializeInt64(1)}, {2, "a"}};
  files[0].stats.upper_bounds = {{1, SerializeInt64(9)}, {2, "z"}};
  files[1].path = "file:///x/b.parquet";
  files[1].record_count = 4;
  files[1].file_size = 200;
  files[1].partition = {std::nullopt};
  const std::string manifest = dir.path() + "/m.avro";
  ASSERT_OK_AND_ASSIGN(ManifestFile mf, WriteManifest(manifest, ctx, files));
  EXPECT_EQ(mf.added_files_count, 2);
  EXPECT_EQ(mf.added_rows_count, 7);
  EXPECT_EQ(mf.length, static_cast<int64_t>(std::filesystem::file_size(manifest)));
  ASSERT_TRUE(mf.partitions);
  EXPECT_TRUE((*mf.partitions)[0].contains_null);
  EXPECT_EQ((*mf.partitions)[0].lower_bound, SerializeInt64(5));

  AvroFile read = ReadWithAvroC(manifest);
  EXPECT_EQ(read.records, 2);
  ASSERT_OK_AND_ASSIGN(auto paths, ReadManifestDataFiles(manifest));
  EXPECT_EQ(paths,
            (std::vector<std::string>{"file:///x/a.parquet", "file:///x/b.parquet"}));
  // The header keeps the field ids (Avro C's own writer would drop them) and the
  // metadata Iceberg readers need.
  std::string bytes(std::filesystem::file_size(manifest), '\0');
  FILE* f = std::fopen(manifest.c_str(), "rb");
  ASSERT_EQ(std::fread(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
  EXPECT_EQ(bytes.substr(0, 4), std::string("Obj\1", 4));
  for (const char* needle : {R"("field-id":102)", R"("field-id":1000)", "partition-spec",
                             "format-version", "k119_v120", "avro.schema"}) {
    EXPECT_NE(bytes.find(needle), std::string::npos) << needle;
  }

  mf.path = "file://" + manifest;
  mf.sequence_number = 3;
  mf.min_sequence_number = 2;
  const std::string list = dir.path() + "/snap.avro";
  ASSERT_OK(WriteManifestList(list, 7, 6, 3, {mf, mf}));
  EXPECT_EQ(ReadWithAvroC(list).records, 2);
  ASSERT_OK_AND_ASSIGN(auto entries, ReadManifestList(list));
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].path, mf.path);
  EXPECT_EQ(entries[0].sequence_number, 3);
  EXPECT_EQ(entries[0].min_sequence_number, 2);
  EXPECT_EQ(entries[0].added_rows_count, 7);
  ASSERT_TRUE(entries[0].partitions);
  EXPECT_EQ((*entries[0].partitions)[0].upper_bound, SerializeInt64(5));
  // Files are never overwritten: a second writer of the same name fails.
  EXPECT_STATUS(WriteManifestList(list, 7, 6, 3, {}), StatusCode::kIOError,
                "File exists");
}

TEST(IcebergCatalogTest, SqliteCompareAndSwapLosesOnAStaleLocation) {
  TempDir dir("kelt-iceberg");
  const std::string db = dir.path() + "/catalog.db";
  ASSERT_OK_AND_ASSIGN(auto a, OpenSqliteCatalog(db, "cat"));
  ASSERT_OK_AND_ASSIGN(auto b, OpenSqliteCatalog(db, "cat"));
  TableIdentifier id{"ns", "t"};
  ASSERT_OK_AND_ASSIGN(auto missing, a->LoadTable(id));
  EXPECT_FALSE(missing);
  ASSERT_OK_AND_ASSIGN(bool created, a->CreateTable(id, "m1"));
  EXPECT_TRUE(created);
  ASSERT_OK_AND_ASSIGN(created, b->CreateTable(id, "other"));
  EXPECT_FALSE(created);
  ASSERT_OK_AND_ASSIGN(bool won, a->CommitTable(id, "m1", "m2"));
  EXPECT_TRUE(won);
  ASSERT_OK_AND_ASSIGN(bool lost, b->CommitTable(id, "m1", "m2b"));  // stale
  EXPECT_FALSE(lost);
  ASSERT_OK_AND_ASSIGN(auto loc, b->LoadTable(id));
  EXPECT_EQ(loc, "m2");
  // Another catalog name in the same file is another table.
  ASSERT_OK_AND_ASSIGN(auto c, OpenSqliteCatalog(db, "other"));
  ASSERT_OK_AND_ASSIGN(auto none, c->LoadTable(id));
  EXPECT_FALSE(none);
  // The rows are JdbcCatalog's / pyiceberg's: previous_metadata_location kept.
  sqlite3* raw;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* s;
  ASSERT_EQ(
      sqlite3_prepare_v2(raw,
                         "SELECT metadata_location, previous_metadata_location, "
                         "iceberg_type FROM iceberg_tables WHERE catalog_name='cat'",
                         -1, &s, nullptr),
      SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "m2");
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 1)), "m1");
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 2)), "TABLE");
  sqlite3_finalize(s);
  sqlite3_close(raw);
}

TEST(IcebergTableTest, AppendOnAStaleBaseLosesAndLeavesNoFiles) {
  TempDir dir("kelt-iceberg");
  ASSERT_OK_AND_ASSIGN(auto cat, OpenSqliteCatalog(dir.path() + "/c.db", "cat"));
  TableIdentifier id{"ns", "t"};
  const std::string loc = "file://" + dir.path() + "/ns/t";
  ASSERT_OK_AND_ASSIGN(LoadedTable base,
                       CreateOrLoadTable(*cat, id, loc, TwoColumns(), {}));
  DataFile f;
  f.path = loc + "/data/a.parquet";
  f.record_count = 2;
  f.file_size = 10;
  ASSERT_OK_AND_ASSIGN(AppendOutcome first,
                       CommitAppend(*cat, id, base, {}, {f}, {{"k", "v1"}}));
  ASSERT_TRUE(first.committed);
  const auto files_before = std::distance(
      std::filesystem::directory_iterator(dir.path() + "/ns/t/metadata"), {});
  ASSERT_OK_AND_ASSIGN(AppendOutcome stale, CommitAppend(*cat, id, base, {}, {f}, {}));
  EXPECT_FALSE(stale.committed);
  EXPECT_EQ(std::distance(
                std::filesystem::directory_iterator(dir.path() + "/ns/t/metadata"), {}),
            files_before);
  ASSERT_OK_AND_ASSIGN(AppendOutcome second,
                       CommitAppend(*cat, id, first.table, {}, {f}, {{"k", "v2"}}));
  ASSERT_TRUE(second.committed);
  ASSERT_OK_AND_ASSIGN(auto loaded, LoadTable(*cat, id));
  ASSERT_TRUE(loaded);
  const Snapshot* cur = loaded->metadata.CurrentSnapshot();
  ASSERT_NE(cur, nullptr);
  EXPECT_EQ(cur->summary.at("k"), "v2");
  EXPECT_EQ(cur->summary.at("total-records"), "4");
  EXPECT_EQ(cur->sequence_number, 2);
  EXPECT_EQ(cur->parent_snapshot_id, first.table.metadata.current_snapshot_id);
  EXPECT_EQ(loaded->metadata.metadata_log.size(), 2u);
  // The new snapshot's list carries the parent's manifest forward (fast append).
  ASSERT_OK_AND_ASSIGN(auto list, ReadManifestList(*LocalPath(cur->manifest_list)));
  EXPECT_EQ(list.size(), 2u);
  EXPECT_NE(loaded->metadata_location.find("/metadata/v00003-"), std::string::npos)
      << loaded->metadata_location;
}

// ---- Leftovers: what FindMetadataLeftovers may judge dead
// ------------------------------

// A catalog in front of another whose swaps fail with an error of unknown outcome:
// CommitAppend then leaves its manifest, list and metadata file in place, as those of a
// writer whose swap is still in flight. `stale_location`, when set, is what LoadTable
// answers (a catalog read that never sees the pointer move).
class InFlightCatalog : public Catalog {
 public:
  explicit InFlightCatalog(Catalog& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  Result<std::optional<std::string>> LoadTable(const TableIdentifier& id) override {
    if (!stale_location.empty()) return std::optional<std::string>(stale_location);
    return inner_.LoadTable(id);
  }
  Result<bool> CreateTable(const TableIdentifier& id, const std::string& l) override {
    return inner_.CreateTable(id, l);
  }
  Result<bool> CommitTable(const TableIdentifier&, const std::string&,
                           const std::string&) override {
    return Status::IOError("the swap is in flight");
  }
  std::string stale_location;

 private:
  Catalog& inner_;
};

// A commit by Java Iceberg or pyiceberg: they read kelt's "v00004-…" as version -1 and
// write "00000-<uuid>.metadata.json"; this one also keeps one metadata log entry.
Result<LoadedTable> ForeignCommit(Catalog& cat, const TableIdentifier& id,
                                  const LoadedTable& base) {
  LoadedTable next{
      base.metadata.location + "/metadata/00000-" + RandomUuid() + ".metadata.json",
      base.metadata};
  next.metadata.properties["write.metadata.previous-versions-max"] = "1";
  next.metadata.metadata_log = {{base.metadata.last_updated_ms, base.metadata_location}};
  KELT_RETURN_NOT_OK(
      FileIO::Local().Write(next.metadata_location, MetadataToJson(next.metadata)));
  KELT_ASSIGN_OR_RAISE(
      bool won, cat.CommitTable(id, base.metadata_location, next.metadata_location));
  if (!won) return Status::Internal("the foreign commit lost its swap");
  return next;
}

std::set<std::string> ListDir(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.insert(e.path().filename().string());
  }
  return out;
}

class IcebergLeftoversTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(cat_, OpenSqliteCatalog(dir_.path() + "/c.db", "cat"));
    ASSERT_OK_AND_ASSIGN(LoadedTable t,
                         CreateOrLoadTable(*cat_, id_, loc_, TwoColumns(), {}));
    for (int i = 0; i < 3; ++i) {
      ASSERT_OK_AND_ASSIGN(AppendOutcome next,
                           CommitAppend(*cat_, id_, t, {}, {File()}, {}));
      ASSERT_TRUE(next.committed);
      t = next.table;
    }
    ASSERT_EQ(MetadataVersion(t.metadata_location), 4);
    kelt_ = t;
  }

  DataFile File() {
    DataFile f;
    f.path = loc_ + "/data/" + RandomUuid() + ".parquet";
    f.record_count = 1;
    f.file_size = 10;
    return f;
  }

  // A foreign commit on the kelt lineage, then a kelt writer's commit built on it whose
  // swap is in flight: the files that commit wrote (manifest, list, metadata file).
  void ForeignCommitThenOneInFlight() {
    ASSERT_OK_AND_ASSIGN(foreign_, ForeignCommit(*cat_, id_, kelt_));
    const auto before = ListDir(meta_);
    InFlightCatalog in_flight(*cat_);
    EXPECT_STATUS(CommitAppend(in_flight, id_, foreign_, {}, {File()}, {}).status(),
                  StatusCode::kIOError, "in flight");
    for (const auto& f : ListDir(meta_)) {
      if (before.count(f)) continue;
      in_flight_.push_back(loc_ + "/metadata/" + f);
      if (f.find(".metadata.json") != std::string::npos)
        in_flight_metadata_ = in_flight_.back();
    }
    ASSERT_EQ(in_flight_.size(), 3u);
    // Built on version 0: its tag is below the kelt lineage's version 4, and so is its
    // own version (the log holds one entry): what a cleaner planning on v4 calls dead.
    EXPECT_LE(MetadataVersion(in_flight_metadata_), 4);
  }

  // The in-flight swap wins: the table must be whole.
  void SwapAndExpectWhole() {
    ASSERT_OK_AND_ASSIGN(bool won, cat_->CommitTable(id_, foreign_.metadata_location,
                                                     in_flight_metadata_));
    ASSERT_TRUE(won);
    for (const auto& f : in_flight_)
      EXPECT_TRUE(std::filesystem::exists(*LocalPath(f))) << f;
    ASSERT_OK_AND_ASSIGN(auto t, LoadTable(*cat_, id_));
    ASSERT_TRUE(t);
    ASSERT_OK_AND_ASSIGN(auto files, CurrentDataFiles(t->metadata));
    EXPECT_EQ(files.size(), 4u);  // three appends on the kelt lineage + the in-flight one
  }

  TempDir dir_{"kelt-iceberg"};
  std::unique_ptr<Catalog> cat_;
  TableIdentifier id_{"ns", "t"};
  std::string loc_ = "file://" + dir_.path() + "/ns/t";
  std::string meta_ = dir_.path() + "/ns/t/metadata";
  LoadedTable kelt_, foreign_;
  std::vector<std::string> in_flight_;
  std::string in_flight_metadata_;
};

TEST_F(IcebergLeftoversTest, ACommitInFlightOnAForeignWritersBaseIsKept) {
  ForeignCommitThenOneInFlight();
  // The cleaner reads the table now: at the foreign metadata, version 0.
  ASSERT_OK_AND_ASSIGN(auto t, LoadTable(*cat_, id_));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->metadata_location, foreign_.metadata_location);
  ASSERT_OK_AND_ASSIGN(MetadataLeftovers found, FindMetadataLeftovers(*cat_, id_, *t));
  EXPECT_FALSE(found.moved);
  EXPECT_TRUE(found.dead.empty()) << found.dead.front();
  EXPECT_TRUE(found.undecided.empty());
  SwapAndExpectWhole();
}

TEST_F(IcebergLeftoversTest, APointerThatMovedSinceTheLoadMeansNothingIsJudged) {
  // The cleaner read the table at v4; then, while it read the manifest lists, a foreign
  // writer committed and a kelt writer built a commit on that.
  ForeignCommitThenOneInFlight();
  ASSERT_OK_AND_ASSIGN(MetadataLeftovers found, FindMetadataLeftovers(*cat_, id_, kelt_));
  EXPECT_TRUE(found.moved);
  EXPECT_TRUE(found.dead.empty());
  // Without the second read of the catalog, the in-flight files would be called dead.
  InFlightCatalog stale(*cat_);
  stale.stale_location = kelt_.metadata_location;
  ASSERT_OK_AND_ASSIGN(MetadataLeftovers blind, FindMetadataLeftovers(stale, id_, kelt_));
  EXPECT_FALSE(blind.moved);
  std::set<std::string> dead(blind.dead.begin(), blind.dead.end());
  for (const auto& f : in_flight_) EXPECT_TRUE(dead.count(f)) << f;
  SwapAndExpectWhole();
}

TEST_F(IcebergLeftoversTest, NamesAreComparedWithinTheDirectoryWhateverTheirSpelling) {
  // A lineage written with "file:/…" locations (as Java writes them) names the same
  // files as the "file:///…" listing: none of them is dead.
  LoadedTable respelled = kelt_;
  auto respell = [](std::string l) {
    return l.rfind("file://", 0) == 0 ? "file:" + l.substr(7) : l;
  };
  respelled.metadata_location = respell(kelt_.metadata_location);
  for (auto& e : respelled.metadata.metadata_log) e.value = respell(e.value);
  for (auto& snap : respelled.metadata.snapshots) {
    snap.manifest_list = respell(snap.manifest_list);
  }
  const std::string dead = loc_ + "/metadata/" +
                           ManifestFileName(kelt_.metadata.table_uuid,
                                            kelt_.metadata.metadata_log[1].value, "x");
  ASSERT_OK(FileIO::Local().Write(dead, "x"));  // built on v2: dead
  InFlightCatalog same(*cat_);
  same.stale_location = respelled.metadata_location;
  ASSERT_OK_AND_ASSIGN(MetadataLeftovers found,
                       FindMetadataLeftovers(same, id_, respelled));
  EXPECT_EQ(found.dead, std::vector<std::string>{dead});
}

}  // namespace
}  // namespace kelt::iceberg
