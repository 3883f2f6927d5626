// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The DuckDB sink, checked by reading the database file back with SQL.
#define DUCKDB_API_NO_DEPRECATED
#include <arrow/api.h>
#include <duckdb.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kelt/load.h"
#include "kelt/schema.h"
#include "kelt/sink.h"
#include "kelt/sink/all_types_testing.h"
#include "kelt/sink/evolve_testing.h"
#include "kelt/sink/sink_testing.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

namespace fs = std::filesystem;

using Row = std::vector<std::optional<std::string>>;

/// Runs SQL against a database file the sink has closed. Every selected column must be
/// VARCHAR (cast in the query), so rows compare as text.
class Db {
 public:
  explicit Db(const std::string& path) {
    EXPECT_EQ(duckdb_open(path.c_str(), &db_), DuckDBSuccess) << path;
    EXPECT_EQ(duckdb_connect(db_, &con_), DuckDBSuccess);
  }
  ~Db() {
    duckdb_disconnect(&con_);
    duckdb_close(&db_);
  }

  std::vector<Row> Query(const std::string& sql) {
    duckdb_result result;
    std::vector<Row> rows;
    if (duckdb_query(con_, sql.c_str(), &result) != DuckDBSuccess) {
      ADD_FAILURE() << sql << ": " << duckdb_result_error(&result);
      duckdb_destroy_result(&result);
      return rows;
    }
    idx_t columns = duckdb_column_count(&result);
    for (idx_t c = 0; c < columns; ++c) {
      EXPECT_EQ(duckdb_column_type(&result, c), DUCKDB_TYPE_VARCHAR)
          << sql << ": column " << c << " is not VARCHAR";
    }
    while (duckdb_data_chunk chunk = duckdb_fetch_chunk(result)) {
      idx_t n = duckdb_data_chunk_get_size(chunk);
      for (idx_t r = 0; r < n; ++r) {
        Row row;
        for (idx_t c = 0; c < columns; ++c) {
          duckdb_vector v = duckdb_data_chunk_get_vector(chunk, c);
          uint64_t* validity = duckdb_vector_get_validity(v);
          if (validity && !duckdb_validity_row_is_valid(validity, r)) {
            row.emplace_back(std::nullopt);
            continue;
          }
          auto* s = static_cast<duckdb_string_t*>(duckdb_vector_get_data(v));
          row.emplace_back(
              std::string(duckdb_string_t_data(&s[r]), duckdb_string_t_length(s[r])));
        }
        rows.push_back(std::move(row));
      }
      duckdb_destroy_data_chunk(&chunk);
    }
    duckdb_destroy_result(&result);
    return rows;
  }

  /// The single value of a one-row, one-column query.
  std::string Scalar(const std::string& sql) {
    auto rows = Query(sql);
    if (rows.size() != 1 || rows[0].size() != 1 || !rows[0][0]) {
      ADD_FAILURE() << sql << ": not one non-null value";
      return "";
    }
    return *rows[0][0];
  }

  bool Exec(const std::string& sql) {
    duckdb_result result;
    bool ok = duckdb_query(con_, sql.c_str(), &result) == DuckDBSuccess;
    if (!ok) ADD_FAILURE() << sql << ": " << duckdb_result_error(&result);
    duckdb_destroy_result(&result);
    return ok;
  }

 private:
  duckdb_database db_ = nullptr;
  duckdb_connection con_ = nullptr;
};

constexpr const char* kLandingJson = R"({"fields":[
  {"name":"id","data_type":"Int64"},
  {"name":"price","data_type":"Float64"},
  {"name":"ok","data_type":"Bool"},
  {"name":"name","data_type":"Utf8"},
  {"name":"at","data_type":"Timestamp"},
  {"name":"day","data_type":"Date"},
  {"name":"blob","data_type":"Binary"},
  {"name":"_kafka_topic","data_type":"Utf8"},
  {"name":"_kafka_partition","data_type":"Int64"},
  {"name":"_kafka_offset","data_type":"Int64"}]})";

Schema MustParse(const char* json) {
  auto schema = ParseSchemaJson(json);
  EXPECT_OK(schema);
  return schema.ok() ? *schema : Schema{};
}

StreamRecord Rec(int64_t offset, std::string value, int32_t partition = 0,
                 std::string topic = "events") {
  StreamRecord r;
  r.topic = std::move(topic);
  r.partition = partition;
  r.offset = offset;
  r.value = std::move(value);
  return r;
}

/// Records with a simple payload {"id": offset} for `offsets` of one partition.
std::vector<StreamRecord> Range(int64_t first, int64_t last, int32_t partition = 0) {
  std::vector<StreamRecord> out;
  for (int64_t o = first; o <= last; ++o) {
    out.push_back(Rec(o, R"({"id":)" + std::to_string(o) + "}", partition));
  }
  return out;
}

/// Load `records` (dead-letter policy) and describe them as a window.
SinkWindow MakeWindow(const std::vector<StreamRecord>& records, const Schema& landing) {
  return testing::MakeSinkWindow(records, landing, testing::DeadLetterOptions());
}

class DuckDbSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kelt-duckdb-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = (fs::path(dir_) / "land.duckdb").string();
    landing_ = MustParse(kLandingJson);
  }
  void TearDown() override { fs::remove_all(dir_); }

  DuckDbSinkOptions Options(std::string group = "g1") {
    DuckDbSinkOptions o;
    o.path = path_;
    o.group_id = std::move(group);
    return o;
  }

  std::unique_ptr<Sink> OpenSink(DuckDbSinkOptions options, const Schema& landing) {
    auto sink = MakeDuckDbSink(std::move(options));
    EXPECT_OK(sink);
    if (!sink.ok()) return nullptr;
    EXPECT_OK((*sink)->Open(ToArrowSchema(landing), DeadLetterSchema()));
    return std::move(*sink);
  }
  std::unique_ptr<Sink> OpenSink() { return OpenSink(Options(), landing_); }

  std::string dir_;
  std::string path_;
  Schema landing_;
};

TEST_F(DuckDbSinkTest, WritesValuesNullsUnicodeAndOffsets) {
  auto sink = OpenSink();
  ASSERT_TRUE(sink);
  EXPECT_EQ(sink->name(), "duckdb:" + path_ + "#landing");
  std::vector<StreamRecord> records = {
      Rec(10, R"({"id":1,"price":2.5,"ok":true,"name":"grüße 😀","at":1700000000123,)"
              R"("day":"2024-02-29","blob":"AAEC/w=="})"),
      Rec(11, R"({"id":null,"name":"a\u0000b"})"),
      Rec(12, R"({"id":-9223372036854775808,"ok":false,"name":"it's \"q\""})"),
      Rec(40, R"({"id":7})", 3, "other")};
  SinkWindow window = MakeWindow(records, landing_);
  // The bytes the loader put in the Binary column, as DuckDB's hex() prints them.
  auto blob =
      std::static_pointer_cast<arrow::BinaryArray>(window.batch->GetColumnByName("blob"));
  std::string blob_hex;
  for (unsigned char c : blob->GetView(0)) {
    blob_hex += "0123456789ABCDEF"[c >> 4];
    blob_hex += "0123456789ABCDEF"[c & 15];
  }
  ASSERT_FALSE(blob_hex.empty());
  ASSERT_OK_AND_ASSIGN(auto written, sink->Write(window));
  EXPECT_EQ(written, (OffsetMap{{{"events", 0}, 13}, {{"other", 3}, 41}}));
  ASSERT_OK(sink->Close());

  Db db(path_);
  auto rows = db.Query(
      "SELECT id::VARCHAR, price::VARCHAR, ok::VARCHAR, name, epoch_us(\"at\")::VARCHAR, "
      "day::VARCHAR, hex(blob), _kafka_topic, _kafka_partition::VARCHAR, "
      "_kafka_offset::VARCHAR FROM landing ORDER BY _kafka_offset");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0], (Row{"1", "2.5", "true", "grüße 😀", "1700000000123000", "2024-02-29",
                          blob_hex, "events", "0", "10"}));
  EXPECT_EQ(rows[1],
            (Row{std::nullopt, std::nullopt, std::nullopt, std::string("a\0b", 3),
                 std::nullopt, std::nullopt, std::nullopt, "events", "0", "11"}));
  EXPECT_EQ(rows[2][0], "-9223372036854775808");
  EXPECT_EQ(rows[2][3], "it's \"q\"");
  EXPECT_EQ(rows[3][7], "other");
  EXPECT_EQ(db.Scalar("SELECT octet_length(encode(name))::VARCHAR FROM landing WHERE "
                      "_kafka_offset = 11"),
            "3");
  // The declared column types (the documented mapping).
  EXPECT_EQ(db.Scalar("SELECT string_agg(data_type, ',' ORDER BY column_index) FROM "
                      "duckdb_columns() WHERE table_name = 'landing'"),
            "BIGINT,DOUBLE,BOOLEAN,VARCHAR,TIMESTAMP WITH TIME ZONE,DATE,BLOB,VARCHAR,"
            "BIGINT,BIGINT");
  EXPECT_EQ(db.Query("SELECT group_id, topic, partition::VARCHAR, next_offset::VARCHAR "
                     "FROM _kelt_offsets ORDER BY topic"),
            (std::vector<Row>{{"g1", "events", "0", "13"}, {"g1", "other", "3", "41"}}));
  EXPECT_EQ(db.Scalar("SELECT count(*)::VARCHAR FROM landing_dead_letter"), "0");
}

TEST_F(DuckDbSinkTest, QuotesEveryIdentifier) {
  Schema landing = MustParse(R"({"fields":[{"name":"col \"q\"","data_type":"Utf8"},
      {"name":"_kafka_offset","data_type":"Int64"},
      {"name":"_kafka_partition","data_type":"Int64"},
      {"name":"_kafka_topic","data_type":"Utf8"}]})");
  DuckDbSinkOptions options = Options();
  options.table = R"(sch"ema.we"ird)";
  options.offsets_table = R"(off"sets)";
  auto sink = OpenSink(options, landing);
  ASSERT_TRUE(sink);
  EXPECT_EQ(sink->name(), "duckdb:" + path_ + R"(#sch"ema.we"ird)");
  ASSERT_OK(sink->Write(MakeWindow({Rec(0, R"({"col \"q\"":"v"})")}, landing)));
  ASSERT_OK(sink->Close());

  Db db(path_);
  EXPECT_EQ(db.Query(R"(SELECT "col ""q""" FROM "sch""ema"."we""ird")"),
            (std::vector<Row>{{"v"}}));
  EXPECT_EQ(
      db.Scalar(R"(SELECT count(*)::VARCHAR FROM "sch""ema"."we""ird_dead_letter")"),
      "0");
  EXPECT_EQ(db.Scalar(R"(SELECT next_offset::VARCHAR FROM main."off""sets")"), "1");
}

TEST_F(DuckDbSinkTest, ResumesFromTheFileAfterReopen) {
  {
    auto sink = OpenSink();
    ASSERT_TRUE(sink);
    ASSERT_OK(sink->Write(MakeWindow(Range(0, 4), landing_)));
    ASSERT_OK(sink->Write(MakeWindow(Range(5, 9), landing_)));
    ASSERT_OK(sink->Write(MakeWindow(Range(100, 101, 1), landing_)));
    ASSERT_OK(sink->Close());
  }
  auto sink = OpenSink();
  ASSERT_TRUE(sink);
  ASSERT_OK_AND_ASSIGN(auto resumed,
                       sink->Resume({{"events", 0}, {"events", 1}, {"events", 2}}));
  EXPECT_EQ(resumed, (OffsetMap{{{"events", 0}, 10}, {{"events", 1}, 102}}));
  ASSERT_OK(sink->Close());

  // Offsets belong to a group: another group has none.
  auto other = OpenSink(Options("g2"), landing_);
  ASSERT_TRUE(other);
  ASSERT_OK_AND_ASSIGN(auto none, other->Resume({{"events", 0}}));
  EXPECT_TRUE(none.empty());
}

TEST_F(DuckDbSinkTest, GuardSkipsRowsAlreadyStored) {
  auto sink = OpenSink();
  ASSERT_TRUE(sink);
  ASSERT_OK(sink->Write(MakeWindow(Range(0, 4), landing_)));
  // A replay that overlaps the stored range: only offsets 5..7 are new.
  ASSERT_OK_AND_ASSIGN(auto overlap, sink->Write(MakeWindow(Range(3, 7), landing_)));
  EXPECT_EQ(overlap, (OffsetMap{{{"events", 0}, 8}}));
  // A replay entirely below the stored offset adds nothing and moves nothing back.
  ASSERT_OK_AND_ASSIGN(auto old, sink->Write(MakeWindow(Range(0, 2), landing_)));
  EXPECT_EQ(old, (OffsetMap{{{"events", 0}, 8}}));
  ASSERT_OK(sink->Close());

  Db db(path_);
  EXPECT_EQ(db.Query("SELECT count(*)::VARCHAR, count(DISTINCT _kafka_offset)::VARCHAR, "
                     "sum(id)::VARCHAR FROM landing"),
            (std::vector<Row>{{"8", "8", "28"}}));
  EXPECT_EQ(db.Scalar("SELECT next_offset::VARCHAR FROM _kelt_offsets"), "8");
}

TEST_F(DuckDbSinkTest, GuardFiltersLargeInterleavedBatchesAcrossChunks) {
  auto sink = OpenSink();
  ASSERT_TRUE(sink);
  ASSERT_OK(sink->Write(MakeWindow(Range(0, 1233), landing_)));
  ASSERT_OK(sink->Write(MakeWindow(Range(0, 99, 1), landing_)));
  // 5000 records of partition 0 and 1 interleaved; both partitions overlap the store.
  std::vector<StreamRecord> records;
  for (int64_t o = 0; o < 5000; ++o) {
    records.push_back(Rec(o, R"({"id":)" + std::to_string(o) + "}", 0));
    records.push_back(Rec(o, R"({"id":)" + std::to_string(o) + "}", 1));
  }
  ASSERT_OK_AND_ASSIGN(auto written, sink->Write(MakeWindow(records, landing_)));
  EXPECT_EQ(written, (OffsetMap{{{"events", 0}, 5000}, {{"events", 1}, 5000}}));
  ASSERT_OK(sink->Close());

  Db db(path_);
  EXPECT_EQ(db.Query("SELECT _kafka_partition::VARCHAR, count(*)::VARCHAR, "
                     "count(DISTINCT _kafka_offset)::VARCHAR, sum(id)::VARCHAR, "
                     "min(_kafka_offset)::VARCHAR, max(_kafka_offset)::VARCHAR "
                     "FROM landing GROUP BY 1 ORDER BY 1"),
            (std::vector<Row>{{"0", "5000", "5000", "12497500", "0", "4999"},
                              {"1", "5000", "5000", "12497500", "0", "4999"}}));
  // Both partitions' rows are updated by one statement.
  EXPECT_EQ(db.Query("SELECT partition::VARCHAR, next_offset::VARCHAR FROM "
                     "_kelt_offsets ORDER BY partition"),
            (std::vector<Row>{{"0", "5000"}, {"1", "5000"}}));
  // Every row's payload matches its offset, so no slice was misaligned.
  EXPECT_EQ(db.Scalar("SELECT count(*)::VARCHAR FROM landing WHERE id <> _kafka_offset"),
            "0");
}

TEST_F(DuckDbSinkTest, GuardRejectsAnOverlapItCannotFilter) {
  Schema landing = MustParse(R"({"fields":[{"name":"id","data_type":"Int64"}]})");
  auto sink = OpenSink(Options(), landing);
  ASSERT_TRUE(sink);
  ASSERT_OK(sink->Write(MakeWindow(Range(0, 4), landing)));
  auto overlap = sink->Write(MakeWindow(Range(3, 7), landing));
  ASSERT_FALSE(overlap.ok());
  EXPECT_EQ(overlap.status().code(), StatusCode::kInvalid);
  EXPECT_NE(overlap.status().message().find("table landing"), std::string::npos)
      << overlap.status().ToString();
  EXPECT_NE(overlap.status().message().find("already stored"), std::string::npos);
  // A replay of a range that is entirely stored is recognised without the columns.
  ASSERT_OK_AND_ASSIGN(auto replay, sink->Write(MakeWindow(Range(1, 3), landing)));
  EXPECT_EQ(replay, (OffsetMap{{{"events", 0}, 5}}));
  ASSERT_OK(sink->Close());

  Db db(path_);
  EXPECT_EQ(db.Scalar("SELECT count(*)::VARCHAR FROM landing"), "5");
  EXPECT_EQ(db.Scalar("SELECT next_offset::VARCHAR FROM _kelt_offsets"), "5");
}

TEST_F(DuckDbSinkTest, DeadLettersLandInTheirTableInTheSameTransaction) {
  auto sink = OpenSink();
  ASSERT_TRUE(sink);
  auto window = MakeWindow({Rec(0, R"({"id":1})"), Rec(1, R"({"id":"x"})")}, landing_);
  ASSERT_EQ(window.dead_letters->num_rows(), 1);
  ASSERT_OK_AND_ASSIGN(auto written, sink->Write(window));
  EXPECT_EQ(written, (OffsetMap{{{"events", 0}, 2}}));
  ASSERT_OK(sink->Close());

  Db db(path_);
  EXPECT_EQ(db.Query("SELECT _kafka_topic, _kafka_offset::VARCHAR, "
                     "decode(_kafka_value), _error_code, _error_field "
                     "FROM landing_dead_letter"),
            (std::vector<Row>{{"events", "1", R"({"id":"x"})", "TYPE_MISMATCH", "id"}}));
  EXPECT_EQ(db.Scalar("SELECT count(*)::VARCHAR FROM landing"), "1");
}

TEST_F(DuckDbSinkTest, UniqueIndexStopsASecondGroupFromDuplicatingRows) {
  auto sink = OpenSink();
  ASSERT_TRUE(sink);
  ASSERT_OK(sink->Write(MakeWindow(Range(0, 4), landing_)));
  ASSERT_OK(sink->Close());
  // Group g2 has no offsets row, so the guard lets the rows through; the index does not.
  auto other = OpenSink(Options("g2"), landing_);
  ASSERT_TRUE(other);
  auto dup = other->Write(MakeWindow(Range(4, 6), landing_));
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("table landing"), std::string::npos)
      << dup.status().ToString();
  EXPECT_NE(dup.status().message().find("onstraint"), std::string::npos)
      << dup.status().ToString();
  ASSERT_OK(other->Close());

  Db db(path_);
  EXPECT_EQ(db.Scalar("SELECT count(*)::VARCHAR FROM landing"), "5");
  EXPECT_EQ(db.Scalar("SELECT count(*)::VARCHAR FROM _kelt_offsets WHERE group_id='g2'"),
            "0");
  EXPECT_EQ(db.Scalar("SELECT count(*)::VARCHAR FROM duckdb_indexes() WHERE "
                      "table_name = 'landing' AND is_unique"),
            "1");
}

TEST_F(DuckDbSinkTest, UniqueIndexIsOptional) {
  DuckDbSinkOptions options = Options();
  options.unique_offsets_index = false;
  auto sink = OpenSink(options, landing_);
  ASSERT_TRUE(sink);
  ASSERT_OK(sink->Close());
  Db db(path_);
  EXPECT_EQ(db.Scalar("SELECT count(*)::VARCHAR FROM duckdb_indexes() WHERE "
                      "table_name IN ('landing', 'landing_dead_letter')"),
            "0");
}

TEST_F(DuckDbSinkTest, FailedWriteRollsEverythingBack) {
  auto sink = OpenSink();
  ASSERT_TRUE(sink);
  ASSERT_OK(sink->Write(MakeWindow(Range(0, 1), landing_)));
  // The landed rows append fine, then the dead letters fail (wrong schema): the landed
  // rows and the offsets must not survive.
  SinkWindow window = MakeWindow(Range(2, 5), landing_);
  arrow::Int64Builder builder;
  ASSERT_OK(builder.Append(1));
  window.dead_letters =
      arrow::RecordBatch::Make(arrow::schema({arrow::field("wrong", arrow::int64())}), 1,
                               {builder.Finish().ValueOrDie()});
  auto failed = sink->Write(window);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("table landing_dead_letter"),
            std::string::npos)
      << failed.status().ToString();
  // The sink stays usable: the same offsets can be written again.
  ASSERT_OK(sink->Write(MakeWindow(Range(2, 3), landing_)));
  ASSERT_OK(sink->Close());

  Db db(path_);
  EXPECT_EQ(db.Scalar("SELECT string_agg(_kafka_offset::VARCHAR, ',' ORDER BY "
                      "_kafka_offset) FROM landing"),
            "0,1,2,3");
  EXPECT_EQ(db.Scalar("SELECT next_offset::VARCHAR FROM _kelt_offsets"), "4");
}

TEST_F(DuckDbSinkTest, CommittedWindowSurvivesKill9) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // No gtest assertions here: report through the exit status, die by SIGKILL.
    auto sink = MakeDuckDbSink(Options());
    if (!sink.ok() || !(*sink)->Open(ToArrowSchema(landing_), DeadLetterSchema()).ok()) {
      _exit(2);
    }
    if (!(*sink)->Write(MakeWindow(Range(0, 99), landing_)).ok()) _exit(3);
    if (!(*sink)->Write(MakeWindow(Range(100, 149), landing_)).ok()) _exit(4);
    kill(getpid(), SIGKILL);  // no Close, no checkpoint, no destructors
    _exit(5);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  ASSERT_EQ(WTERMSIG(status), SIGKILL);

  auto sink = OpenSink();
  ASSERT_TRUE(sink);
  ASSERT_OK_AND_ASSIGN(auto resumed, sink->Resume({{"events", 0}}));
  EXPECT_EQ(resumed, (OffsetMap{{{"events", 0}, 150}}));
  ASSERT_OK(sink->Close());
  Db db(path_);
  EXPECT_EQ(db.Query("SELECT count(*)::VARCHAR, sum(id)::VARCHAR FROM landing"),
            (std::vector<Row>{{"150", "11175"}}));
}

TEST_F(DuckDbSinkTest,
       IncompatibleExistingTableNamesTableAndColumnAndAMissingOneIsAdded) {
  {
    Db db(path_);
    ASSERT_TRUE(db.Exec("CREATE TABLE landing (id VARCHAR, price DOUBLE)"));
  }
  ASSERT_OK_AND_ASSIGN(auto sink, MakeDuckDbSink(Options()));
  Status st = sink->Open(ToArrowSchema(landing_), DeadLetterSchema());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("table landing column id is VARCHAR"), std::string::npos)
      << st.ToString();

  {
    Db db(path_);
    ASSERT_TRUE(db.Exec("DROP TABLE landing"));
    ASSERT_TRUE(db.Exec("CREATE TABLE landing (id BIGINT)"));
  }
  // A column the table lacks is added: the landing grew since the table was made.
  ASSERT_OK_AND_ASSIGN(auto again, MakeDuckDbSink(Options()));
  ASSERT_OK(again->Open(ToArrowSchema(landing_), DeadLetterSchema()));
  ASSERT_OK(again->Close());
  Db db(path_);
  EXPECT_EQ(db.Query("SELECT data_type FROM duckdb_columns() WHERE table_name = "
                     "'landing' AND column_name = 'price'"),
            (std::vector<Row>{{"DOUBLE"}}));
}

TEST_F(DuckDbSinkTest, ExistingTableWithOtherColumnOrderAndExtraColumnsIsUsed) {
  {
    Db db(path_);
    ASSERT_TRUE(
        db.Exec("CREATE TABLE landing (_kafka_offset BIGINT, note VARCHAR DEFAULT 'n', "
                "blob BLOB, day DATE, \"at\" TIMESTAMPTZ, name VARCHAR, ok BOOLEAN, "
                "price DOUBLE, "
                "id BIGINT, _kafka_partition BIGINT, _kafka_topic VARCHAR)"));
  }
  auto sink = OpenSink();
  ASSERT_TRUE(sink);
  ASSERT_OK(sink->Write(MakeWindow({Rec(5, R"({"id":3,"name":"x"})")}, landing_)));
  ASSERT_OK(sink->Close());
  Db db(path_);
  EXPECT_EQ(
      db.Query("SELECT _kafka_offset::VARCHAR, note, id::VARCHAR, name FROM landing"),
      (std::vector<Row>{{"5", "n", "3", "x"}}));
}

TEST_F(DuckDbSinkTest, LifecycleAndOptions) {
  EXPECT_FALSE(MakeDuckDbSink(DuckDbSinkOptions{}).ok());
  DuckDbSinkOptions no_group;
  no_group.path = path_;
  EXPECT_EQ(MakeDuckDbSink(no_group).status().code(), StatusCode::kInvalid);
  DuckDbSinkOptions bad_name = Options();
  bad_name.table = "schema.";
  EXPECT_EQ(MakeDuckDbSink(bad_name).status().code(), StatusCode::kInvalid);

  ASSERT_OK_AND_ASSIGN(auto sink, MakeDuckDbSink(Options()));
  EXPECT_FALSE(sink->Write(MakeWindow(Range(0, 0), landing_)).ok());  // not open
  ASSERT_OK(sink->Open(ToArrowSchema(landing_), DeadLetterSchema()));
  EXPECT_FALSE(sink->Open(ToArrowSchema(landing_), DeadLetterSchema()).ok());
  ASSERT_OK(sink->Write(MakeWindow(Range(0, 2), landing_)));
  ASSERT_OK_AND_ASSIGN(auto flushed, sink->Flush());
  EXPECT_TRUE(flushed.empty());
  EXPECT_OK(sink->Drop({{"events", 0}}));
  // Drop forgets nothing that was committed.
  ASSERT_OK_AND_ASSIGN(auto resumed, sink->Resume({{"events", 0}}));
  EXPECT_EQ(resumed, (OffsetMap{{{"events", 0}, 3}}));
  ASSERT_OK(sink->Close());
  EXPECT_FALSE(sink->Resume({{"events", 0}}).ok());  // closed
}

// Every type a decoded Avro payload carries: the column types DuckDB reports, and the
// values read back as DuckDB prints them.
TEST_F(DuckDbSinkTest, LandsEveryDecodedPayloadType) {
  auto window = testing::AllTypesWindow();
  ASSERT_OK_AND_ASSIGN(auto sink, MakeDuckDbSink(Options()));
  ASSERT_OK(sink->Open(window.batch->schema(), DeadLetterSchema()));
  ASSERT_OK_AND_ASSIGN(auto written, sink->Write(window));
  EXPECT_EQ(written, (OffsetMap{{{"t", 0}, 4}}));
  ASSERT_OK(sink->Close());
  // A second sink recognises the table it created (types compared as DuckDB spells
  // them) and adds nothing for the same window.
  ASSERT_OK_AND_ASSIGN(auto again, MakeDuckDbSink(Options()));
  ASSERT_OK(again->Open(window.batch->schema(), DeadLetterSchema()));
  ASSERT_OK(again->Write(window).status());
  ASSERT_OK(again->Close());

  Db db(path_);
  std::vector<Row> types = db.Query(
      "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'landing' "
      "ORDER BY column_index");
  std::vector<Row> want_types = {
      {"i32", "INTEGER"},
      {"f32", "FLOAT"},
      {"dec", "DECIMAL(10,2)"},
      {"dec256", "VARCHAR"},
      {"dec256s", "DECIMAL(20,3)"},
      {"d", "DATE"},
      {"t32", "TIME"},
      {"t64", "TIME"},
      {"ts_ms_utc", "TIMESTAMP WITH TIME ZONE"},
      {"ts_us_utc", "TIMESTAMP WITH TIME ZONE"},
      {"ts_ns_utc", "TIMESTAMP WITH TIME ZONE"},
      {"ts_ms", "TIMESTAMP_MS"},
      {"ts_us", "TIMESTAMP"},
      {"ts_ns", "TIMESTAMP_NS"},
      {"fsb", "BLOB"},
      {"bin", "BLOB"},
      {"s", "VARCHAR"},
      {"b", "BOOLEAN"},
      {"nul", "VARCHAR"},
      {"e", "VARCHAR"},
      {"st", "STRUCT(a INTEGER, \"inner\" STRUCT(x VARCHAR, y DOUBLE))"},
      {"lst", "BIGINT[]"},
      {"lst_st", "STRUCT(k VARCHAR, v INTEGER)[]"},
      {"m", "MAP(VARCHAR, INTEGER)"},
      {"u", "STRUCT(i INTEGER, s VARCHAR)"},
      {"_kafka_topic", "VARCHAR"},
      {"_kafka_partition", "BIGINT"},
      {"_kafka_offset", "BIGINT"},
  };
  EXPECT_EQ(types, want_types);

  // Timestamps as epoch numbers in their unit, so the session's time zone plays no part.
  auto rows = db.Query(
      "SELECT i32::VARCHAR, f32::VARCHAR, dec::VARCHAR, dec256, dec256s::VARCHAR, "
      "d::VARCHAR, t32::VARCHAR, t64::VARCHAR, epoch_ms(ts_ms_utc)::VARCHAR, "
      "epoch_us(ts_us_utc)::VARCHAR, epoch_us(ts_ns_utc)::VARCHAR, ts_ms::VARCHAR, "
      "ts_us::VARCHAR, ts_ns::VARCHAR, hex(fsb), hex(bin), s, b::VARCHAR, nul, e, "
      "st::VARCHAR, lst::VARCHAR, lst_st::VARCHAR, m::VARCHAR, u::VARCHAR, "
      "_kafka_offset::VARCHAR FROM landing ORDER BY _kafka_offset");
  ASSERT_EQ(rows.size(), 4u);
  const std::optional<std::string> null;
  EXPECT_EQ(rows[0], (Row{"1",
                          "1.5",
                          "12345678.90",
                          "1234567890123456789012345678901234567890.0123456789",
                          "12345678901234567.891",
                          "1970-01-01",
                          "00:00:00",
                          "00:00:00",
                          "0",
                          "0",
                          "0",
                          "1970-01-01 00:00:00",
                          "1970-01-01 00:00:00",
                          "1970-01-01 00:00:00",
                          "61626364",
                          "",
                          "héllo",
                          "true",
                          null,
                          "RED",
                          "{'a': 1, 'inner': {'x': p, 'y': 1.5}}",
                          "[1, 2, 3]",
                          "[{'k': a, 'v': 1}]",
                          "{a=1, b=NULL}",
                          "{'i': 5, 's': NULL}",
                          "0"}));
  EXPECT_EQ(rows[1], (Row{"-2147483648",
                          "-0.25",
                          "-0.05",
                          "-1.5000000000",
                          "-0.001",
                          "2022-01-08",
                          "12:34:56.789",
                          "12:34:56.789012",
                          "1700000000123",
                          "1700000000123456",
                          "1700000000123456",
                          "2023-11-14 22:13:20.123",
                          "2023-11-14 22:13:20.123456",
                          "2023-11-14 22:13:20.123456789",
                          "7778797A",
                          "6869",
                          "",
                          "false",
                          null,
                          "GREEN",
                          "{'a': NULL, 'inner': NULL}",
                          "[]",
                          "[]",
                          "{}",
                          "{'i': NULL, 's': five}",
                          "1"}));
  Row all_null(24, null);
  all_null.push_back("{'i': NULL, 's': NULL}");  // a null union: every branch null
  all_null.push_back("2");
  EXPECT_EQ(rows[2], all_null);
  // TIMESTAMP WITH TIME ZONE is µs: -1 ns lands as 0 (DuckDB's import truncates).
  EXPECT_EQ(rows[3], (Row{"2147483647",
                          "1e+30",
                          "0.00",
                          "0.0000000000",
                          "0.000",
                          "1969-12-31",
                          "23:59:59.999",
                          "23:59:59.999999",
                          "-1",
                          "-1",
                          "0",
                          "1969-12-31 23:59:59.999",
                          "1969-12-31 23:59:59.999999",
                          "1969-12-31 23:59:59.999999999",
                          "30313233",
                          "782279",
                          "q\" b\\ t\t",
                          "true",
                          null,
                          "RED",
                          "{'a': 3, 'inner': {'x': NULL, 'y': -2.0}}",
                          "[NULL, 4]",
                          "[NULL, {'k': NULL, 'v': 2}]",
                          "{z=26}",
                          "{'i': NULL, 's': x}",
                          "3"}));
  // Nested values query as values, not text.
  EXPECT_EQ(db.Query("SELECT st.inner.x, lst[2]::VARCHAR, m['z']::VARCHAR, u.s FROM "
                     "landing WHERE _kafka_offset = 3"),
            (std::vector<Row>{{null, "4", "26", "x"}}));
  EXPECT_EQ(db.Scalar("SELECT count(*)::VARCHAR FROM landing"), "4");
}

// DuckDB's MAP refuses duplicate keys (an Avro map can carry them): the window fails
// naming the table and stores nothing, offsets included.
TEST_F(DuckDbSinkTest, MapWithDuplicateKeysFailsTheWindow) {
  auto m = testing::ColumnFromJson(arrow::map(arrow::utf8(), arrow::int32()),
                                   R"([[["a", 1], ["a", 2]]])");
  ASSERT_TRUE(m);
  auto schema = arrow::schema({arrow::field("m", m->type()),
                               arrow::field("_kafka_topic", arrow::utf8()),
                               arrow::field("_kafka_partition", arrow::int64()),
                               arrow::field("_kafka_offset", arrow::int64())});
  SinkWindow window;
  window.batch =
      arrow::RecordBatch::Make(schema, 1,
                               {m, testing::ColumnFromJson(arrow::utf8(), R"(["t"])"),
                                testing::ColumnFromJson(arrow::int64(), "[0]"),
                                testing::ColumnFromJson(arrow::int64(), "[0]")});
  window.spans.push_back(PartitionSpan{TopicPartition{"t", 0}, 0, 0, 1});
  ASSERT_OK_AND_ASSIGN(auto sink, MakeDuckDbSink(Options()));
  ASSERT_OK(sink->Open(schema, DeadLetterSchema()));
  auto written = sink->Write(window);
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.status().message().find("table landing"), std::string::npos)
      << written.status().ToString();
  ASSERT_OK(sink->Close());
  Db db(path_);
  EXPECT_EQ(db.Scalar("SELECT count(*)::VARCHAR FROM landing"), "0");
  EXPECT_EQ(db.Scalar("SELECT count(*)::VARCHAR FROM _kelt_offsets"), "0");
}

// ---- Evolve --------------------------------------------------------------------------

std::unique_ptr<Sink> OpenArrowSink(const DuckDbSinkOptions& options,
                                    const std::shared_ptr<arrow::Schema>& landing) {
  auto sink = MakeDuckDbSink(options);
  EXPECT_OK(sink);
  if (!sink.ok()) return nullptr;
  EXPECT_OK((*sink)->Open(landing, DeadLetterSchema()));
  return std::move(*sink);
}

TEST_F(DuckDbSinkTest, EvolveAddsNullableColumnsAndAppendsByName) {
  using testing::EvolveSchemaA;
  using testing::EvolveSchemaB;
  using testing::EvolveWindow;
  {
    auto sink = OpenArrowSink(Options(), EvolveSchemaA());
    ASSERT_TRUE(sink);
    ASSERT_OK_AND_ASSIGN(auto durable, sink->Write(EvolveWindow(EvolveSchemaA(), 0, 4)));
    EXPECT_EQ(durable, (OffsetMap{{{"t", 0}, 5}}));
    ASSERT_OK(sink->Evolve(EvolveSchemaB()));
    // Later batches have B (its columns in another order than the table's).
    ASSERT_OK_AND_ASSIGN(durable, sink->Write(EvolveWindow(EvolveSchemaB(), 5, 9)));
    EXPECT_EQ(durable, (OffsetMap{{{"t", 0}, 10}}));
    auto stale = sink->Write(EvolveWindow(EvolveSchemaA(), 10, 11));
    EXPECT_FALSE(stale.ok());
    ASSERT_OK_AND_ASSIGN(auto flushed, sink->Flush());
    EXPECT_TRUE(flushed.empty());
    ASSERT_OK(sink->Close());
  }
  {
    Db db(path_);
    EXPECT_EQ(db.Query("SELECT column_name, data_type FROM duckdb_columns() WHERE "
                       "table_name = 'landing' ORDER BY column_index"),
              (std::vector<Row>{{"id", "BIGINT"},
                                {"name", "VARCHAR"},
                                {"_kafka_topic", "VARCHAR"},
                                {"_kafka_partition", "BIGINT"},
                                {"_kafka_offset", "BIGINT"},
                                {"coupon", "VARCHAR"},
                                {"extra", "STRUCT(a BIGINT)"}}));
    auto rows = db.Query(
        "SELECT id::VARCHAR, name, coupon, extra.a::VARCHAR, _kafka_offset::VARCHAR "
        "FROM landing ORDER BY _kafka_offset");
    ASSERT_EQ(rows.size(), 10u);
    for (int64_t o = 0; o < 10; ++o) {
      const std::string n = std::to_string(o);
      Row want = o < 5 ? Row{n, "n" + n, std::nullopt, std::nullopt, n}
                       : Row{n, "n" + n, "c" + n, std::to_string(o * 10), n};
      EXPECT_EQ(rows[o], want) << "offset " << o;
    }
    // An old row's struct is NULL as a whole, not a struct of nulls.
    EXPECT_EQ(db.Scalar("SELECT count(*)::VARCHAR FROM landing WHERE extra IS NULL"),
              "5");
  }
  // Reopened with B: resumes after the evolved window and skips what it holds.
  auto reopened = OpenArrowSink(Options(), EvolveSchemaB());
  ASSERT_TRUE(reopened);
  ASSERT_OK_AND_ASSIGN(auto resumed, reopened->Resume({{"t", 0}}));
  EXPECT_EQ(resumed, (OffsetMap{{{"t", 0}, 10}}));
  ASSERT_OK_AND_ASSIGN(auto durable,
                       reopened->Write(EvolveWindow(EvolveSchemaB(), 8, 11)));
  EXPECT_EQ(durable, (OffsetMap{{{"t", 0}, 12}}));
  ASSERT_OK(reopened->Close());
  Db db(path_);
  EXPECT_EQ(db.Scalar("SELECT count(*)::VARCHAR FROM landing"), "12");
}

TEST_F(DuckDbSinkTest, EvolveOfATableAnotherSinkEvolvedTakesItsColumns) {
  using testing::EvolveSchemaA;
  using testing::EvolveSchemaB;
  using testing::EvolveWindow;
  {
    auto first = OpenArrowSink(Options(), EvolveSchemaA());
    ASSERT_TRUE(first);
    ASSERT_OK(first->Write(EvolveWindow(EvolveSchemaA(), 0, 1)));
    ASSERT_OK(first->Evolve(EvolveSchemaB()));
    ASSERT_OK(first->Close());
  }
  // A second worker still on A: the table's extra columns are fine, and its own Evolve
  // finds them there with the right types.
  auto second = OpenArrowSink(Options(), EvolveSchemaA());
  ASSERT_TRUE(second);
  ASSERT_OK(second->Write(EvolveWindow(EvolveSchemaA(), 2, 3)));
  ASSERT_OK(second->Evolve(EvolveSchemaB()));
  ASSERT_OK_AND_ASSIGN(auto durable, second->Write(EvolveWindow(EvolveSchemaB(), 4, 5)));
  EXPECT_EQ(durable, (OffsetMap{{{"t", 0}, 6}}));
  ASSERT_OK(second->Close());
  Db db(path_);
  EXPECT_EQ(db.Query("SELECT _kafka_offset::VARCHAR, coupon FROM landing "
                     "ORDER BY _kafka_offset"),
            (std::vector<Row>{{"0", std::nullopt},
                              {"1", std::nullopt},
                              {"2", std::nullopt},
                              {"3", std::nullopt},
                              {"4", "c4"},
                              {"5", "c5"}}));
}

TEST_F(DuckDbSinkTest, EvolveRefusesATypeChangeAndAnExistingColumnOfAnotherType) {
  using testing::EvolveSchemaA;
  using testing::EvolveSchemaB;
  using testing::EvolveWindow;
  {
    auto sink = OpenArrowSink(Options(), EvolveSchemaA());
    ASSERT_TRUE(sink);
    ASSERT_OK(sink->Write(EvolveWindow(EvolveSchemaA(), 0, 1)));
    Status changed = sink->Evolve(testing::EvolveSchemaNameChanged());
    EXPECT_EQ(changed.code(), StatusCode::kInvalid) << changed.ToString();
    EXPECT_NE(changed.message().find("column 'name' is string"), std::string::npos)
        << changed.ToString();
    ASSERT_OK(sink->Close());
  }
  {
    Db db(path_);
    ASSERT_TRUE(db.Exec("ALTER TABLE landing ADD COLUMN coupon BIGINT"));
  }
  auto sink = OpenArrowSink(Options(), EvolveSchemaA());
  ASSERT_TRUE(sink);
  Status st = sink->Evolve(EvolveSchemaB());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(
      st.message().find("column coupon is BIGINT, the landing schema needs VARCHAR"),
      std::string::npos)
      << st.ToString();
  // Rolled back (no extra column) and still writing A.
  ASSERT_OK(sink->Write(EvolveWindow(EvolveSchemaA(), 2, 3)));
  ASSERT_OK(sink->Close());
  Db db(path_);
  EXPECT_EQ(db.Scalar("SELECT count(*)::VARCHAR FROM duckdb_columns() WHERE "
                      "table_name = 'landing' AND column_name = 'extra'"),
            "0");
  EXPECT_EQ(db.Scalar("SELECT count(*)::VARCHAR FROM landing"), "4");
}

}  // namespace
}  // namespace kelt
