// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/transform.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "kelt/load.h"
#include "kelt/schema.h"
#include "kelt/sink.h"
#include "kelt/sink/sink_testing.h"
#include "kelt/testing/assertions.h"
#include "kelt/transform/duckdb_session.h"

namespace kelt {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

template <typename T>
std::shared_ptr<T> Column(const arrow::Table& t, const std::string& name) {
  auto column = t.GetColumnByName(name);
  EXPECT_TRUE(column) << name;
  auto combined = arrow::Concatenate(column->chunks());
  EXPECT_OK(combined);
  return std::static_pointer_cast<T>(*combined);
}

// ---- SQL over an Arrow batch ---------------------------------------------------------

std::shared_ptr<arrow::RecordBatch> TypedBatch() {
  arrow::Int64Builder i;
  arrow::DoubleBuilder d;
  arrow::BooleanBuilder b;
  arrow::StringBuilder s;
  arrow::TimestampBuilder ts(arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
                             arrow::default_memory_pool());
  arrow::Date32Builder dt;
  // Row 0: values; row 1: all nulls; row 2: more values (a long string).
  EXPECT_OK(i.AppendValues({1, 0, 3}, {true, false, true}));
  EXPECT_OK(d.AppendValues({1.5, 0, -2.25}, {true, false, true}));
  EXPECT_OK(b.AppendValues(std::vector<bool>{true, false, false}, {true, false, true}));
  EXPECT_OK(s.Append("a"));
  EXPECT_OK(s.AppendNull());
  EXPECT_OK(s.Append("a string longer than twelve bytes"));
  // 2026-12-02T10:00:00.000001Z
  EXPECT_OK(ts.AppendValues({1796205600000001, 0, 0}, {true, false, true}));
  EXPECT_OK(dt.AppendValues({20789, 0, -1}, {true, false, true}));
  std::vector<std::shared_ptr<arrow::Array>> arrays(6);
  EXPECT_OK(i.Finish(&arrays[0]));
  EXPECT_OK(d.Finish(&arrays[1]));
  EXPECT_OK(b.Finish(&arrays[2]));
  EXPECT_OK(s.Finish(&arrays[3]));
  EXPECT_OK(ts.Finish(&arrays[4]));
  EXPECT_OK(dt.Finish(&arrays[5]));
  auto schema = arrow::schema(
      {arrow::field("i", arrow::int64()), arrow::field("d", arrow::float64()),
       arrow::field("b", arrow::boolean()), arrow::field("s", arrow::utf8()),
       arrow::field("ts", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
       arrow::field("dt", arrow::date32())});
  return arrow::RecordBatch::Make(schema, 3, arrays);
}

TEST(TransformSql, ValuesNullsAndTypesRoundTrip) {
  auto result = QuerySql(
      "SELECT i * 2 AS i2, d, NOT b AS nb, s || '!' AS s2, ts + INTERVAL 1 SECOND AS "
      "ts1, "
      "dt + 1 AS dt1, row_number() OVER () AS n FROM df ORDER BY n",
      TypedBatch());
  ASSERT_OK(result);
  const arrow::Table& t = **result;
  ASSERT_EQ(t.num_rows(), 3);
  EXPECT_TRUE(t.schema()->GetFieldByName("i2")->type()->Equals(arrow::int64()));
  EXPECT_TRUE(t.schema()->GetFieldByName("d")->type()->Equals(arrow::float64()));
  EXPECT_TRUE(t.schema()->GetFieldByName("nb")->type()->Equals(arrow::boolean()));
  EXPECT_TRUE(t.schema()->GetFieldByName("ts1")->type()->Equals(
      arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")))
      << t.schema()->GetFieldByName("ts1")->type()->ToString();
  EXPECT_TRUE(t.schema()->GetFieldByName("dt1")->type()->Equals(arrow::date32()))
      << t.schema()->GetFieldByName("dt1")->type()->ToString();

  auto i2 = Column<arrow::Int64Array>(t, "i2");
  EXPECT_EQ(i2->Value(0), 2);
  EXPECT_TRUE(i2->IsNull(1));
  EXPECT_EQ(i2->Value(2), 6);
  auto d = Column<arrow::DoubleArray>(t, "d");
  EXPECT_EQ(d->Value(2), -2.25);
  EXPECT_TRUE(d->IsNull(1));
  auto nb = Column<arrow::BooleanArray>(t, "nb");
  EXPECT_FALSE(nb->Value(0));
  EXPECT_TRUE(nb->IsNull(1));
  EXPECT_TRUE(nb->Value(2));
  auto s2 = Column<arrow::StringArray>(t, "s2");
  EXPECT_EQ(s2->GetString(0), "a!");
  EXPECT_TRUE(s2->IsNull(1));
  EXPECT_EQ(s2->GetString(2), "a string longer than twelve bytes!");
  auto ts1 = Column<arrow::TimestampArray>(t, "ts1");
  EXPECT_EQ(ts1->Value(0), 1796205601000001);
  EXPECT_TRUE(ts1->IsNull(1));
  EXPECT_EQ(ts1->Value(2), 1000000);
  auto dt1 = Column<arrow::Date32Array>(t, "dt1");
  EXPECT_EQ(dt1->Value(0), 20790);
  EXPECT_TRUE(dt1->IsNull(1));
  EXPECT_EQ(dt1->Value(2), 0);
}

TEST(TransformSql, ErrorNamesTheQuery) {
  const std::string sql = "SELECT no_such_column FROM df";
  auto result = QuerySql(sql, TypedBatch());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalid);
  EXPECT_NE(result.status().message().find(sql), std::string::npos)
      << result.status().message();
  EXPECT_NE(result.status().message().find("no_such_column"), std::string::npos);
}

TEST(TransformSql, ScansTheArrowBuffersInPlace) {
  // 5000 rows in two chunks: DuckDB sees 2048-row slices at offsets 0, 2048, 4096.
  arrow::Int64Builder a;
  arrow::DoubleBuilder b;
  for (int64_t r = 0; r < 3000; ++r) {
    ASSERT_OK(a.Append(r));
    ASSERT_OK(b.Append(r * 0.5));
  }
  std::shared_ptr<arrow::Array> a1, b1, a2, b2;
  ASSERT_OK(a.Finish(&a1));
  ASSERT_OK(b.Finish(&b1));
  for (int64_t r = 3000; r < 5000; ++r) {
    ASSERT_OK(a.Append(r));
    ASSERT_OK(b.Append(r * 0.5));
  }
  ASSERT_OK(a.Finish(&a2));
  ASSERT_OK(b.Finish(&b2));
  auto schema = arrow::schema(
      {arrow::field("a", arrow::int64()), arrow::field("b", arrow::float64())});
  auto table = arrow::Table::Make(
      schema, {std::make_shared<arrow::ChunkedArray>(arrow::ArrayVector{a1, a2}),
               std::make_shared<arrow::ChunkedArray>(arrow::ArrayVector{b1, b2})});
  std::set<const void*> input_values = {
      a1->data()->buffers[1]->data(), b1->data()->buffers[1]->data(),
      a2->data()->buffers[1]->data(), b2->data()->buffers[1]->data()};
  int64_t chunks = 0;
  int64_t in_place = 0;
  transform::SetScanObserverForTesting(
      [&](int column, const void* duck, const void* values, int64_t offset) {
        ++chunks;
        // DuckDB's vector points at the Arrow buffer itself (at the slice's offset).
        if (input_values.count(values) &&
            duck == static_cast<const uint8_t*>(values) + offset * 8) {
          ++in_place;
        }
      });
  auto result = QuerySql("SELECT sum(a)::BIGINT AS sa, sum(b) AS sb FROM df", table);
  transform::SetScanObserverForTesting(nullptr);
  ASSERT_OK(result);
  EXPECT_EQ(Column<arrow::Int64Array>(**result, "sa")->Value(0), 4999 * 5000 / 2)
      << (*result)->ToString();
  EXPECT_GE(chunks, 6);  // ≥ 3 slices × 2 columns
  EXPECT_EQ(in_place, chunks);
}

TEST(TransformSql, SessionJoinsTwoArrowTables) {
  ASSERT_OK_AND_ASSIGN(auto session, SqlSession::Make());
  ASSERT_OK(
      session->RegisterArrow("x", *arrow::Table::FromRecordBatches({TypedBatch()})));
  ASSERT_OK(
      session->RegisterArrow("y", *arrow::Table::FromRecordBatches({TypedBatch()})));
  // Each scan of a registered table is a fresh stream: a self-join works.
  ASSERT_OK_AND_ASSIGN(auto r,
                       session->Query("SELECT count(*) AS n FROM x JOIN y USING (i)"));
  EXPECT_EQ(Column<arrow::Int64Array>(*r, "n")->Value(0), 2);
}

// ---- landed data ---------------------------------------------------------------------

Schema Landing() {
  auto s = ParseSchemaJson(
      R"({"fields":[{"name":"id","data_type":"Int64"},{"name":"amount","data_type":"Float64"},
                   {"name":"kind","data_type":"Utf8"},
                   {"name":"_kafka_topic","data_type":"Utf8"},
                   {"name":"_kafka_partition","data_type":"Int64"},
                   {"name":"_kafka_offset","data_type":"Int64"}]})",
      SchemaDialect::kStrict);
  EXPECT_OK(s);
  return *s;
}

// Records of one partition: id = offset, amount = offset / 4, kind by offset mod 3;
// every 7th record is bad (a dead letter).
std::vector<StreamRecord> Records(int32_t partition, int64_t first, int64_t count) {
  std::vector<StreamRecord> out;
  for (int64_t o = first; o < first + count; ++o) {
    StreamRecord r;
    r.topic = "orders";
    r.partition = partition;
    r.offset = o;
    static const char* kKinds[] = {"a", "b", "c"};
    r.value = o % 7 == 6 ? R"({"id":"bad"})"
                         : R"({"id":)" + std::to_string(o) + R"(,"amount":)" +
                               std::to_string(o / 4.0) + R"(,"kind":")" + kKinds[o % 3] +
                               R"("})";
    out.push_back(std::move(r));
  }
  return out;
}

/// The good records' expected (count, sum of amount) per kind.
struct Expected {
  std::map<std::string, std::pair<int64_t, double>> by_kind;
  void Add(const std::vector<StreamRecord>& records) {
    static const char* kKinds[] = {"a", "b", "c"};
    for (const auto& r : records) {
      if (r.offset % 7 == 6) continue;
      auto& e = by_kind[kKinds[r.offset % 3]];
      ++e.first;
      e.second += r.offset / 4.0;
    }
  }
};

class Lander {
 public:
  explicit Lander(std::unique_ptr<Sink> sink) : sink_(std::move(sink)) {
    auto loader = Loader::Make(landing_);
    EXPECT_OK(loader);
    EXPECT_OK(sink_->Open((*loader)->arrow_schema(), DeadLetterSchema()));
  }
  void Land(const std::vector<StreamRecord>& records) {
    expected.Add(records);
    auto w = testing::MakeSinkWindow(records, landing_, testing::DeadLetterOptions());
    ASSERT_OK(sink_->Write(w));
    ASSERT_OK(sink_->Flush());
  }
  void Close() { ASSERT_OK(sink_->Close()); }

  Expected expected;

 private:
  Schema landing_ = Landing();
  std::unique_ptr<Sink> sink_;
};

std::unique_ptr<Sink> ParquetSink(const std::string& root) {
  ParquetSinkOptions o;
  o.root = root;
  o.rotate_records = 1;  // every window is one file per partition
  auto sink = MakeParquetSink(o);
  EXPECT_OK(sink);
  return std::move(*sink);
}

std::unique_ptr<Sink> DuckSink(const std::string& path) {
  DuckDbSinkOptions o;
  o.path = path;
  o.group_id = "g";
  auto sink = MakeDuckDbSink(o);
  EXPECT_OK(sink);
  return std::move(*sink);
}

const char* kByKind =
    "SELECT kind, count(*) AS n, sum(amount) AS total, count(DISTINCT _kafka_partition) "
    "AS parts FROM df GROUP BY kind ORDER BY kind";

void ExpectByKind(const arrow::Table& t, const Expected& expected) {
  auto kind = Column<arrow::StringArray>(t, "kind");
  auto n = Column<arrow::Int64Array>(t, "n");
  auto total = Column<arrow::DoubleArray>(t, "total");
  ASSERT_EQ(t.num_rows(), static_cast<int64_t>(expected.by_kind.size()));
  int64_t row = 0;
  for (const auto& [k, e] : expected.by_kind) {
    EXPECT_EQ(kind->GetString(row), k);
    EXPECT_EQ(n->Value(row), e.first) << k;
    EXPECT_DOUBLE_EQ(total->Value(row), e.second) << k;
    ++row;
  }
}

TEST(TransformLanding, SqlOverAParquetLandingDirectory) {
  TempDir dir;
  Lander lander(ParquetSink(dir.path()));
  lander.Land(Records(0, 0, 40));
  lander.Land(Records(1, 0, 25));
  lander.Land(Records(0, 40, 30));
  lander.Close();
  // Neither an in-progress file nor an incomplete range nor a dead letter is read.
  std::string some_file;
  for (const auto& e : fs::directory_iterator(dir.path() + "/orders")) {
    some_file = e.path().string();
  }
  ASSERT_FALSE(some_file.empty());
  fs::copy_file(some_file, dir.path() + "/orders/.orders+0+00000000000000000070+" +
                               "00000000000000000079.parquet.inprogress");
  fs::copy_file(some_file, dir.path() + "/orders/orders+0+00000000000000000070+" +
                               "00000000000000000079+1of2.parquet");
  ASSERT_TRUE(fs::exists(dir.path() + "/_dead_letter/orders"));

  ASSERT_OK_AND_ASSIGN(auto session, SqlSession::Make());
  LandingSource source;
  source.location = dir.path();
  source.topic = "orders";
  ASSERT_OK(session->RegisterLanding("df", source));
  ASSERT_OK_AND_ASSIGN(auto r, session->Query(kByKind));
  ExpectByKind(*r, lander.expected);
  EXPECT_EQ(Column<arrow::Int64Array>(*r, "parts")->Value(0), 2);

  // Dead letters on request: one per 7 records (offsets 6, 13, …).
  source.dead_letters = true;
  ASSERT_OK(session->RegisterLanding("dl", source));
  ASSERT_OK_AND_ASSIGN(auto dl, session->Query("SELECT count(*) AS n FROM dl"));
  EXPECT_EQ(Column<arrow::Int64Array>(*dl, "n")->Value(0), 10 + 3);
}

TEST(TransformLanding, SqlOverADuckDbLandingDatabase) {
  TempDir dir;
  const std::string db = dir.path() + "/landing.duckdb";
  Lander lander(DuckSink(db));
  lander.Land(Records(0, 0, 40));
  lander.Land(Records(1, 0, 25));
  lander.Close();
  ASSERT_OK_AND_ASSIGN(auto session, SqlSession::Make());
  LandingSource source;
  source.format = LandingSource::Format::kDuckDb;
  source.location = db;
  ASSERT_OK(session->RegisterLanding("df", source));
  ASSERT_OK_AND_ASSIGN(auto r, session->Query(kByKind));
  ExpectByKind(*r, lander.expected);
}

TEST(TransformLanding, OtherUriSchemesAreNotSupported) {
  ASSERT_OK_AND_ASSIGN(auto session, SqlSession::Make());
  LandingSource source;
  source.location = "gs://kelt/landing";
  source.topic = "orders";
  Status st = session->RegisterLanding("df", source);
  EXPECT_EQ(st.code(), StatusCode::kNotImplemented) << st.ToString();
}

// ---- incremental ----------------------------------------------------------------------

const char* kModel =
    "SELECT id, kind, amount * 2 AS doubled, _kafka_partition AS p, _kafka_offset AS o "
    "FROM df WHERE kind <> 'c'";

std::shared_ptr<arrow::Table> Curated(const std::string& path) {
  auto session = SqlSession::Make();
  EXPECT_OK(session);
  LandingSource source;
  source.format = LandingSource::Format::kDuckDb;
  source.location = path;
  source.table = "curated";
  EXPECT_OK((*session)->RegisterLanding("c", source));
  auto r = (*session)->Query("SELECT * FROM c ORDER BY p, o");
  EXPECT_OK(r);
  return *r;
}

void IncrementalFollowsTheStream(LandingSource::Format format) {
  TempDir dir;
  LandingSource source;
  source.format = format;
  source.topic = "orders";
  source.location = format == LandingSource::Format::kParquet
                        ? dir.path() + "/landing"
                        : dir.path() + "/landing.duckdb";
  auto sink = [&] {
    return format == LandingSource::Format::kParquet ? ParquetSink(source.location)
                                                     : DuckSink(source.location);
  };
  IncrementalModel model;
  model.name = "orders_ab";
  model.sql = std::string(kModel) + ";\n";
  model.source = source;
  model.output_path = dir.path() + "/curated.duckdb";

  {
    Lander lander(sink());
    lander.Land(Records(0, 0, 30));
    lander.Land(Records(1, 0, 20));
    lander.Close();
  }
  ASSERT_OK_AND_ASSIGN(auto first, RunIncremental(model));
  EXPECT_EQ(first.rows_read, 30 - 4 + 20 - 2);  // dead letters at 6, 13, 20, 27 / 6, 13
  EXPECT_EQ((first.next_offsets[TopicPartition{"orders", 0}]), 30);
  EXPECT_EQ((first.next_offsets[TopicPartition{"orders", 1}]), 20);
  if (format == LandingSource::Format::kParquet) {
    EXPECT_EQ(first.files_read, 2);
  }

  // Nothing new: nothing read, nothing written.
  ASSERT_OK_AND_ASSIGN(auto idle, RunIncremental(model));
  EXPECT_EQ(idle.rows_read, 0);
  EXPECT_EQ(idle.rows_written, 0);

  {
    Lander lander(sink());
    lander.Land(Records(0, 30, 10));
    lander.Land(Records(0, 40, 10));
    lander.Close();
  }
  ASSERT_OK_AND_ASSIGN(auto second, RunIncremental(model));
  // Only the new windows: offsets 30..49 of partition 0 (dead letters 34, 41, 48).
  EXPECT_EQ(second.rows_read, 20 - 3);
  if (format == LandingSource::Format::kParquet) {
    EXPECT_EQ(second.files_read, 2);
  }
  EXPECT_EQ((second.next_offsets[TopicPartition{"orders", 0}]), 50);
  EXPECT_EQ((second.next_offsets[TopicPartition{"orders", 1}]), 20);

  // The curated table equals a from-scratch run over everything.
  IncrementalModel scratch = model;
  scratch.output_path = dir.path() + "/scratch.duckdb";
  ASSERT_OK_AND_ASSIGN(auto all, RunIncremental(scratch));
  EXPECT_EQ(all.rows_read, first.rows_read + second.rows_read);
  auto a = Curated(model.output_path);
  auto b = Curated(scratch.output_path);
  ASSERT_TRUE(a && b);
  EXPECT_GT(a->num_rows(), 0);
  EXPECT_TRUE(a->Equals(*b)) << a->ToString() << "\n" << b->ToString();
  EXPECT_EQ(a->num_rows(), first.rows_written + second.rows_written);
}

TEST(TransformIncremental, FollowsAParquetLandingReadingOnlyNewFiles) {
  IncrementalFollowsTheStream(LandingSource::Format::kParquet);
}

TEST(TransformIncremental, FollowsADuckDbLandingReadingOnlyNewRows) {
  IncrementalFollowsTheStream(LandingSource::Format::kDuckDb);
}

TEST(TransformIncremental, AFailedRunLeavesOutputAndStateUnchanged) {
  TempDir dir;
  LandingSource source;
  source.topic = "orders";
  source.location = dir.path() + "/landing";
  IncrementalModel model;
  model.name = "m";
  model.sql = kModel;
  model.source = source;
  model.output_path = dir.path() + "/curated.duckdb";
  {
    Lander lander(ParquetSink(source.location));
    lander.Land(Records(0, 0, 10));
    lander.Close();
  }
  ASSERT_OK(RunIncremental(model));
  auto before = Curated(model.output_path);
  {
    Lander lander(ParquetSink(source.location));
    lander.Land(Records(0, 10, 10));
    lander.Close();
  }
  // The model fails on a row after others were processed: the run is rolled back.
  IncrementalModel failing = model;
  failing.sql =
      "SELECT id, kind, amount * 2 AS doubled, _kafka_partition AS p, "
      "CASE WHEN _kafka_offset = 18 THEN error('boom at 18') ELSE _kafka_offset END AS o "
      "FROM df WHERE kind <> 'c'";
  auto failed = RunIncremental(failing);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("boom at 18"), std::string::npos)
      << failed.status().ToString();
  EXPECT_TRUE(Curated(model.output_path)->Equals(*before));
  // The next good run picks up exactly the windows the failed run did not commit.
  ASSERT_OK_AND_ASSIGN(auto next, RunIncremental(model));
  EXPECT_EQ(next.files_read, 1);
  EXPECT_EQ(next.rows_read, 9);  // offsets 10..19 minus the dead letter at 13
}

TEST(TransformIncremental, UpsertByKeyKeepsTheLatestRowPerKey) {
  TempDir dir;
  LandingSource source;
  source.topic = "orders";
  source.location = dir.path() + "/landing";
  IncrementalModel model;
  model.name = "latest";
  model.sql =
      "SELECT kind, arg_max(id, _kafka_offset) AS last_id, count(*) AS n FROM df "
      "GROUP BY kind";
  model.key = {"kind"};
  model.source = source;
  model.output_path = dir.path() + "/curated.duckdb";
  for (int64_t first : {0, 12}) {
    {
      Lander lander(ParquetSink(source.location));
      lander.Land(Records(0, first, 12));
      lander.Close();
    }
    ASSERT_OK(RunIncremental(model));
  }
  ASSERT_OK_AND_ASSIGN(auto session, SqlSession::Make());
  LandingSource out;
  out.format = LandingSource::Format::kDuckDb;
  out.location = model.output_path;
  out.table = "curated";
  ASSERT_OK(session->RegisterLanding("c", out));
  ASSERT_OK_AND_ASSIGN(auto r,
                       session->Query("SELECT kind, last_id, n FROM c ORDER BY kind"));
  // One row per kind, from the second run only (offsets 12..23, dead letters 13, 20).
  ASSERT_EQ(r->num_rows(), 3);
  auto last = Column<arrow::Int64Array>(*r, "last_id");
  EXPECT_EQ(last->Value(0), 21);  // a: offsets ≡ 0 mod 3: 12, 15, 18, 21
  EXPECT_EQ(last->Value(1), 22);  // b: 16, 19, 22 (13 is bad)
  EXPECT_EQ(last->Value(2), 23);  // c: 14, 17, 23 (20 is bad)
}

// An S3 landing prefix on moto's server (the ctest `s3` fixture, or `scripts/s3.sh start`
// and KELT_S3_ENV=<its env file>).
TEST(TransformS3, SqlAndIncrementalOverAnS3LandingPrefix) {
  // Without the variables, the env file of the ctest `s3` fixture (KELT_S3_ENV).
  if (!std::getenv("KELT_S3_ENDPOINT") && std::getenv("KELT_S3_ENV")) {
    std::ifstream in(std::getenv("KELT_S3_ENV"));
    std::string line;
    while (std::getline(in, line)) {
      auto eq = line.find('=');
      if (eq != std::string::npos) {
        ::setenv(line.substr(0, eq).c_str(), line.substr(eq + 1).c_str(), 0);
      }
    }
  }
  const char* endpoint = std::getenv("KELT_S3_ENDPOINT");
  const char* bucket = std::getenv("KELT_S3_BUCKET");
  // Not a skip: a missing object store is a failure of the test setup.
  ASSERT_TRUE(endpoint && bucket)
      << "no object store: set KELT_S3_ENV to the env file of `scripts/s3.sh start`";
  TempDir dir;
  const std::string prefix = "s3://" + std::string(bucket) + "/transform-" +
                             fs::path(dir.path()).filename().string();
  ParquetSinkOptions o;
  o.root = prefix;
  o.s3_endpoint = endpoint;
  o.s3_region = "us-east-1";
  o.rotate_records = 1;
  ASSERT_OK_AND_ASSIGN(auto sink, MakeParquetSink(o));
  Lander lander(std::move(sink));
  lander.Land(Records(0, 0, 3000));  // more than one 2048-row batch
  lander.Land(Records(1, 0, 25));

  LandingSource source;
  source.location = prefix;
  source.topic = "orders";
  source.s3_endpoint = endpoint;
  source.s3_region = "us-east-1";
  ASSERT_OK_AND_ASSIGN(auto session, SqlSession::Make());
  ASSERT_OK(session->RegisterLanding("df", source));
  ASSERT_OK_AND_ASSIGN(auto r, session->Query(kByKind));
  ExpectByKind(*r, lander.expected);

  IncrementalModel model;
  model.name = "s3";
  model.sql = kModel;
  model.source = source;
  model.output_path = dir.path() + "/curated.duckdb";
  ASSERT_OK_AND_ASSIGN(auto first, RunIncremental(model));
  EXPECT_EQ(first.files_read, 2);
  lander.Land(Records(1, 25, 10));
  lander.Close();
  ASSERT_OK_AND_ASSIGN(auto second, RunIncremental(model));
  EXPECT_EQ(second.files_read, 1);
  EXPECT_EQ(second.rows_read, 10 - 2);  // dead letters at 27 and 34
  EXPECT_EQ((second.next_offsets[TopicPartition{"orders", 1}]), 35);
}

}  // namespace
}  // namespace kelt
