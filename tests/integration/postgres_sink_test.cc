// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The PostgreSQL sink against a real server (the `postgres` ctest fixture runs
// scripts/postgres.sh). Every assertion reads the database back with libpq.
#include <arpa/inet.h>
#include <arrow/api.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "broker_env.h"
#include "kelt/elt.h"
#include "kelt/kafka/mock_cluster_testing.h"
#include "kelt/load.h"
#include "kelt/schema.h"
#include "kelt/sink.h"
#include "kelt/sink/all_types_testing.h"
#include "kelt/sink/evolve_testing.h"
#include "kelt/sink/postgres_copy.h"
#include "kelt/sink/sink_testing.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

using Row = std::vector<std::optional<std::string>>;

const std::map<std::string, std::string>& Env() {
  static const auto env = testing::ReadBrokerEnv("KELT_PG_ENV");
  return env;
}

std::string EnvValue(const std::string& key) {
  auto it = Env().find(key);
  return it == Env().end() ? std::string() : it->second;
}

// A table name unique to this run (lower case: tests also use it unquoted).
std::string Unique(const std::string& base) {
  static int counter = 0;
  auto now = std::chrono::system_clock::now().time_since_epoch().count();
  return base + "_" + std::to_string(now % 1'000'000'000'000) + "_" +
         std::to_string(++counter);
}

// A plain libpq connection for checking what the sink stored.
class Db {
 public:
  Db() : conn_(PQconnectdb(EnvValue("KELT_PG_CONNINFO").c_str())) {
    if (ok()) Exec("SET TimeZone = 'UTC'");
  }
  ~Db() { PQfinish(conn_); }
  bool ok() const { return PQstatus(conn_) == CONNECTION_OK; }

  std::vector<Row> Query(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    std::vector<Row> rows;
    EXPECT_TRUE(PQresultStatus(r) == PGRES_TUPLES_OK ||
                PQresultStatus(r) == PGRES_COMMAND_OK)
        << sql << ": " << PQresultErrorMessage(r);
    for (int i = 0; i < PQntuples(r); ++i) {
      Row row;
      for (int j = 0; j < PQnfields(r); ++j) {
        if (PQgetisnull(r, i, j)) {
          row.push_back(std::nullopt);
        } else {
          row.emplace_back(std::string(PQgetvalue(r, i, j),
                                       static_cast<size_t>(PQgetlength(r, i, j))));
        }
      }
      rows.push_back(std::move(row));
    }
    PQclear(r);
    return rows;
  }
  std::string One(const std::string& sql) {
    auto rows = Query(sql);
    if (rows.size() != 1 || rows[0].size() != 1 || !rows[0][0]) return "<none>";
    return *rows[0][0];
  }
  void Exec(const std::string& sql) { Query(sql); }

 private:
  PGconn* conn_;
};

class PostgresSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (EnvValue("KELT_PG_CONNINFO").empty()) {
      GTEST_SKIP()
          << "no PostgreSQL (run through ctest: the postgres fixture starts one)";
    }
    ASSERT_TRUE(db_.ok());
  }

  PostgresSinkOptions Options(const std::string& table, const std::string& group = "g") {
    PostgresSinkOptions o;
    o.conninfo = EnvValue("KELT_PG_CONNINFO");
    o.table = table;
    o.group_id = group;
    o.offsets_table = offsets_table_;
    return o;
  }

  std::unique_ptr<Sink> OpenSink(const PostgresSinkOptions& options,
                                 const Schema& landing) {
    auto sink = MakePostgresSink(options);
    EXPECT_OK(sink);
    if (!sink.ok()) return nullptr;
    EXPECT_OK((*sink)->Open(ToArrowSchema(landing), DeadLetterSchema()));
    return std::move(*sink);
  }

  // A loaded window of `records` with spans covering them, per partition.
  static SinkWindow Window(const std::vector<StreamRecord>& records,
                           const Schema& landing, LoadOptions options = {}) {
    return testing::MakeSinkWindow(records, landing, options);
  }

  static std::vector<StreamRecord> Records(const std::string& topic, int32_t partition,
                                           int64_t first, int64_t last) {
    std::vector<StreamRecord> out;
    for (int64_t o = first; o <= last; ++o) {
      StreamRecord r;
      r.topic = topic;
      r.partition = partition;
      r.offset = o;
      r.value =
          R"({"id":)" + std::to_string(o) + R"(,"name":"n)" + std::to_string(o) + "\"}";
      out.push_back(std::move(r));
    }
    return out;
  }

  static Schema SimpleSchema() {
    return *ParseSchemaJson(R"({"fields":[{"name":"id","data_type":"Int64"},
      {"name":"name","data_type":"Utf8"},{"name":"_kafka_topic","data_type":"Utf8"},
      {"name":"_kafka_partition","data_type":"Int64"},
      {"name":"_kafka_offset","data_type":"Int64"}]})");
  }

  std::string OffsetOf(const std::string& group, const std::string& topic,
                       int partition) {
    return db_.One("SELECT next_offset FROM " + offsets_table_ + " WHERE group_id = '" +
                   group + "' AND topic = '" + topic +
                   "' AND partition = " + std::to_string(partition));
  }

  Db db_;
  std::string offsets_table_ = Unique("offs");
};

TEST_F(PostgresSinkTest, LoadedValuesRoundTripExactly) {
  const std::string table = Unique("rt");
  Schema landing = *ParseSchemaJson(R"({"fields":[
    {"name":"i","data_type":"Int64"},{"name":"f","data_type":"Float64"},
    {"name":"b","data_type":"Bool"},{"name":"s","data_type":"Utf8"},
    {"name":"ts","data_type":"Timestamp"},{"name":"d","data_type":"Date"},
    {"name":"raw","data_type":"Binary"},
    {"name":"_kafka_topic","data_type":"Utf8"},{"name":"_kafka_partition","data_type":"Int64"},
    {"name":"_kafka_offset","data_type":"Int64"}]})");
  const std::string big(3 << 20, 'x');  // crosses the COPY chunk size
  struct Case {
    std::string json;
    std::optional<std::string> s;
  };
  std::vector<Case> cases = {
      {R"({"i":-9223372036854775808,"f":0.1,"b":true,"s":"tab\there\nline \\ back \"q\" 'a'",)"
       R"("ts":"2024-02-29T23:59:59.123456Z","d":"2024-02-29","raw":"AAH/"})",
       "tab\there\nline \\ back \"q\" 'a'"},
      {R"({"i":9223372036854775807,"f":-1.5e300,"b":false,"s":"\u0001\u001f\r\\N \u00e9 \u20ac \ud83d\ude00",)"
       R"("ts":0,"d":"1970-01-01","raw":""})",
       "\x01\x1f\r\\N \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"},
      {R"({"i":null,"f":null,"b":null,"s":null,"ts":null,"d":null,"raw":null})",
       std::nullopt},
      {R"({"s":"","f":5e-324,"ts":"1900-01-01T00:00:00Z","d":"0001-01-01"})", ""},
      {R"({"s":")" + big + R"("})", big},
      {R"({"s":"\\.","i":0})", "\\."},  // text COPY's end marker is just data here
  };
  std::vector<StreamRecord> records;
  for (size_t k = 0; k < cases.size(); ++k) {
    StreamRecord r;
    r.topic = "t";
    r.offset = static_cast<int64_t>(k);
    r.value = cases[k].json;
    records.push_back(r);
  }
  auto sink = OpenSink(Options(table), landing);
  ASSERT_NE(sink, nullptr);
  SinkWindow w = Window(records, landing);
  ASSERT_OK_AND_ASSIGN(auto written, sink->Write(w));
  EXPECT_EQ(written.at(TopicPartition{"t", 0}), 6);

  auto rows = db_.Query(
      "SELECT i::text, f::text, b::text, s, "
      "(extract(epoch FROM ts) * 1000000)::bigint::text, (d - date '1970-01-01')::text, "
      "encode(raw, 'hex') FROM " +
      table + " ORDER BY _kafka_offset");
  ASSERT_EQ(rows.size(), cases.size());
  auto i64 = std::static_pointer_cast<arrow::Int64Array>(w.batch->column(0));
  auto f64 = std::static_pointer_cast<arrow::DoubleArray>(w.batch->column(1));
  auto ts = std::static_pointer_cast<arrow::TimestampArray>(w.batch->column(4));
  auto d = std::static_pointer_cast<arrow::Date32Array>(w.batch->column(5));
  for (size_t k = 0; k < cases.size(); ++k) {
    SCOPED_TRACE("case " + std::to_string(k));
    const Row& row = rows[k];
    EXPECT_EQ(row[3], cases[k].s);
    auto r = static_cast<int64_t>(k);
    EXPECT_EQ(row[0], i64->IsNull(r) ? std::nullopt
                                     : std::optional(std::to_string(i64->Value(r))));
    if (f64->IsNull(r)) {
      EXPECT_EQ(row[1], std::nullopt);
    } else {
      ASSERT_TRUE(row[1]);
      EXPECT_EQ(std::strtod(row[1]->c_str(), nullptr), f64->Value(r)) << *row[1];
    }
    EXPECT_EQ(row[4],
              ts->IsNull(r) ? std::nullopt : std::optional(std::to_string(ts->Value(r))));
    EXPECT_EQ(row[5],
              d->IsNull(r) ? std::nullopt : std::optional(std::to_string(d->Value(r))));
  }
  EXPECT_EQ(rows[0][2], "true");
  EXPECT_EQ(rows[1][2], "false");
  EXPECT_EQ(rows[2][2], std::nullopt);
  auto raw = std::static_pointer_cast<arrow::BinaryArray>(w.batch->column(6));
  for (int64_t k = 0; k < raw->length(); ++k) {
    std::optional<std::string> hex;
    if (raw->IsValid(k)) {
      hex.emplace();
      for (unsigned char c : raw->GetView(k)) {
        static const char kHex[] = "0123456789abcdef";
        *hex += kHex[c >> 4];
        *hex += kHex[c & 15];
      }
    }
    EXPECT_EQ(rows[static_cast<size_t>(k)][6], hex) << k;
  }
  EXPECT_EQ(rows[1][6], "");  // empty bytes, not NULL
  EXPECT_EQ(rows[0][4], "1709251199123456");
  EXPECT_EQ(db_.One("SELECT ts::text FROM " + table + " WHERE _kafka_offset = 0"),
            "2024-02-29 23:59:59.123456+00");  // the cluster runs in UTC
  // The §6 mapping, as the server sees the created table.
  auto types = db_.Query(
      "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid "
      "= '" +
      table + "'::regclass AND attnum > 0 ORDER BY attnum");
  std::vector<std::string> got;
  for (const Row& r : types) got.push_back(*r[0] + " " + *r[1]);
  EXPECT_EQ(
      got, (std::vector<std::string>{"i bigint", "f double precision", "b boolean",
                                     "s text", "ts timestamp with time zone", "d date",
                                     "raw bytea", "_kafka_topic text",
                                     "_kafka_partition bigint", "_kafka_offset bigint"}));
}

TEST_F(PostgresSinkTest, SpecialDoublesAndEdgeTimesFromArrowBuilders) {
  const std::string table = Unique("dbl");
  const double kNan = std::numeric_limits<double>::quiet_NaN();
  const double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> values = {
      kNan, kInf, -kInf, -0.0, 5e-324, 1.7976931348623157e308, 0.1 + 0.2};
  arrow::DoubleBuilder db;
  arrow::TimestampBuilder tb(arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
                             arrow::default_memory_pool());
  arrow::StringBuilder sb;
  for (size_t k = 0; k < values.size(); ++k) {
    ASSERT_OK(db.Append(values[k]));
    ASSERT_OK(tb.Append(-62135596800000000 + static_cast<int64_t>(k)));  // 0001-01-01
    ASSERT_OK(sb.Append("v" + std::to_string(k)));
  }
  auto schema =
      arrow::schema({arrow::field("x", arrow::float64()),
                     arrow::field("at", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
                     arrow::field("s", arrow::utf8())});
  auto batch = arrow::RecordBatch::Make(
      schema, static_cast<int64_t>(values.size()),
      {db.Finish().ValueOrDie(), tb.Finish().ValueOrDie(), sb.Finish().ValueOrDie()});
  ASSERT_OK_AND_ASSIGN(auto sink, MakePostgresSink(Options(table)));
  ASSERT_OK(sink->Open(schema, nullptr));
  SinkWindow w;
  w.batch = batch;  // no spans: rows without offsets bookkeeping
  ASSERT_OK_AND_ASSIGN(auto written, sink->Write(w));
  EXPECT_TRUE(written.empty());
  // float8send gives the stored bits exactly.
  auto rows = db_.Query("SELECT encode(float8send(x), 'hex'), x::text, at::text FROM " +
                        table + " ORDER BY s");
  ASSERT_EQ(rows.size(), values.size());
  EXPECT_EQ(rows[0][1], "NaN");
  EXPECT_EQ(rows[1][1], "Infinity");
  EXPECT_EQ(rows[2][1], "-Infinity");
  EXPECT_EQ(rows[3][1], "-0");
  for (size_t k = 1; k < values.size(); ++k) {
    uint64_t bits;
    std::memcpy(&bits, &values[k], 8);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(bits));
    EXPECT_EQ(rows[k][0], std::string(hex)) << k;
  }
  EXPECT_EQ(rows[0][2], "0001-01-01 00:00:00+00");
  EXPECT_EQ(rows[6][2], "0001-01-01 00:00:00.000006+00");
}

TEST_F(PostgresSinkTest, QuotedIdentifiersAndNameWithoutPassword) {
  const std::string schema_name = "Raw \"Zone\"";
  const std::string table_name = Unique("Ev\"ents.X");
  Schema landing = *ParseSchemaJson(R"({"fields":[{"name":"User ID","data_type":"Int64"},
    {"name":"sel\"ect","data_type":"Utf8"},{"name":"_kafka_offset","data_type":"Int64"}]})");
  PostgresSinkOptions o = Options(schema_name + "." + table_name);
  o.conninfo += "?password=notused";  // trust ignores it; name() must not show it
  auto sink = OpenSink(o, landing);
  ASSERT_NE(sink, nullptr);
  EXPECT_EQ(sink->name().find("notused"), std::string::npos);
  EXPECT_EQ(sink->name(), "postgresql:127.0.0.1:" + EnvValue("KELT_PG_PORT") + "/kelt#" +
                              schema_name + "." + table_name);
  StreamRecord r;
  r.topic = "t";
  r.offset = 7;
  r.value = R"({"User ID":42,"sel\"ect":"drop table x; --"})";
  ASSERT_OK(sink->Write(Window({r}, landing)));
  auto quote = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  auto rows = db_.Query("SELECT \"User ID\", \"sel\"\"ect\" FROM " + quote(schema_name) +
                        "." + quote(table_name));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0], "42");
  EXPECT_EQ(rows[0][1], "drop table x; --");
  // The dead-letter table is "<table>_dead_letter" in the same schema.
  EXPECT_EQ(db_.One("SELECT count(*) FROM " + quote(schema_name) + "." +
                    quote(table_name + "_dead_letter")),
            "0");
}

TEST_F(PostgresSinkTest, NamesOver63BytesAreRejected) {
  auto sink = MakePostgresSink(Options(std::string(64, 't')));
  ASSERT_FALSE(sink.ok());
  EXPECT_NE(sink.status().message().find("63 bytes"), std::string::npos);
  // A column name too long for PostgreSQL fails Open, naming it.
  Schema landing;
  landing.fields.emplace_back(std::string(70, 'c'), TypeId::kInt64);
  ASSERT_OK_AND_ASSIGN(auto ok, MakePostgresSink(Options(Unique("longcol"))));
  Status st = ok->Open(ToArrowSchema(landing), DeadLetterSchema());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(std::string(70, 'c')), std::string::npos) << st.message();
}

TEST_F(PostgresSinkTest, OffsetsRowsAndResumeAfterReconnect) {
  const std::string table = Unique("res");
  Schema landing = SimpleSchema();
  {
    auto sink = OpenSink(Options(table, "g1"), landing);
    ASSERT_NE(sink, nullptr);
    auto records = Records("orders", 0, 0, 4);
    auto more = Records("orders", 3, 100, 101);
    records.insert(records.end(), more.begin(), more.end());
    ASSERT_OK_AND_ASSIGN(auto w, sink->Write(Window(records, landing)));
    EXPECT_EQ(w, (OffsetMap{{{"orders", 0}, 5}, {{"orders", 3}, 102}}));
    ASSERT_OK(sink->Write(Window(Records("orders", 0, 5, 9), landing)));
    ASSERT_OK(sink->Flush());
    ASSERT_OK(sink->Close());
  }
  EXPECT_EQ(OffsetOf("g1", "orders", 0), "10");
  EXPECT_EQ(OffsetOf("g1", "orders", 3), "102");
  EXPECT_EQ(db_.One("SELECT count(*) FROM " + table), "12");

  auto again = OpenSink(Options(table, "g1"), landing);
  ASSERT_NE(again, nullptr);
  ASSERT_OK_AND_ASSIGN(auto resume,
                       again->Resume({{"orders", 0}, {"orders", 1}, {"orders", 3}}));
  EXPECT_EQ(resume, (OffsetMap{{{"orders", 0}, 10}, {{"orders", 3}, 102}}));
  // Offsets belong to the group.
  auto other = OpenSink(Options(table, "g2"), landing);
  ASSERT_NE(other, nullptr);
  EXPECT_TRUE(other->Resume({{"orders", 0}})->empty());
}

TEST_F(PostgresSinkTest, GuardSkipsRecordsAnotherWriterStored) {
  const std::string table = Unique("guard");
  Schema landing = SimpleSchema();
  auto a = OpenSink(Options(table), landing);
  auto b = OpenSink(Options(table), landing);  // a consumer that lost the partition
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_OK(a->Write(Window(Records("t", 0, 0, 9), landing)));

  // The same range again adds nothing and leaves the offsets where they were.
  ASSERT_OK_AND_ASSIGN(auto replay, b->Write(Window(Records("t", 0, 0, 9), landing)));
  EXPECT_EQ(replay.at({"t", 0}), 10);
  EXPECT_EQ(db_.One("SELECT count(*) FROM " + table), "10");
  EXPECT_EQ(OffsetOf("g", "t", 0), "10");

  // An overlapping window lands only its new records.
  ASSERT_OK_AND_ASSIGN(auto overlap, b->Write(Window(Records("t", 0, 5, 14), landing)));
  EXPECT_EQ(overlap.at({"t", 0}), 15);
  EXPECT_EQ(db_.One("SELECT count(*) FROM " + table), "15");
  EXPECT_EQ(db_.One("SELECT count(DISTINCT _kafka_offset) FROM " + table), "15");
  EXPECT_EQ(db_.One("SELECT string_agg(name, ',' ORDER BY _kafka_offset) FROM " + table +
                    " WHERE _kafka_offset BETWEEN 8 AND 11"),
            "n8,n9,n10,n11");
  EXPECT_EQ(OffsetOf("g", "t", 0), "15");
  // Another group's offsets do not guard this one: its rows hit the unique index instead.
  auto c = OpenSink(Options(table, "other-group"), landing);
  ASSERT_NE(c, nullptr);
  auto dup = c->Write(Window(Records("t", 0, 0, 0), landing));
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("23505"), std::string::npos)
      << dup.status().message();
  EXPECT_EQ(db_.One("SELECT count(*) FROM " + table), "15");
}

TEST_F(PostgresSinkTest, FailingCopyRollsBackRowsAndOffsets) {
  const std::string table = Unique("rb");
  Schema landing = SimpleSchema();
  auto sink = OpenSink(Options(table), landing);
  ASSERT_NE(sink, nullptr);
  ASSERT_OK(sink->Write(Window(Records("t", 0, 0, 1), landing)));
  // A row the offsets do not know about (written behind the sink's back): the COPY of
  // a window holding offset 5 violates the unique (topic, partition, offset) index.
  db_.Exec("INSERT INTO " + table + " VALUES (0, 'intruder', 't', 0, 5)");
  auto records = Records("t", 0, 2, 6);
  auto more = Records("t", 1, 0, 3);
  records.insert(records.end(), more.begin(), more.end());
  auto r = sink->Write(Window(records, landing));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIOError);
  EXPECT_NE(r.status().message().find("\"" + table + "\""), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("COPY"), std::string::npos);
  EXPECT_EQ(db_.One("SELECT count(*) FROM " + table), "3");  // 2 + the intruder
  EXPECT_EQ(OffsetOf("g", "t", 0), "2");
  EXPECT_EQ(OffsetOf("g", "t", 1), "<none>");  // the inserted offsets row went too
  // The sink is usable after the failure.
  db_.Exec("DELETE FROM " + table + " WHERE name = 'intruder'");
  ASSERT_OK(sink->Write(Window(records, landing)));
  EXPECT_EQ(db_.One("SELECT count(*) FROM " + table), "11");
  EXPECT_EQ(OffsetOf("g", "t", 1), "4");
}

TEST_F(PostgresSinkTest, NulInTextFailsTheWindowUnlessReplaced) {
  Schema landing = SimpleSchema();
  std::vector<StreamRecord> records = Records("t", 0, 0, 2);
  records[1].value = R"({"id":1,"name":"a\u0000b"})";
  {
    const std::string table = Unique("nul");
    auto sink = OpenSink(Options(table), landing);
    ASSERT_NE(sink, nullptr);
    auto r = sink->Write(Window(records, landing));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kTypeError);
    const std::string& m = r.status().message();
    EXPECT_NE(m.find("'name'"), std::string::npos) << m;
    EXPECT_NE(m.find("t[0] offset 1"), std::string::npos) << m;
    EXPECT_NE(m.find(table), std::string::npos) << m;
    EXPECT_EQ(db_.One("SELECT count(*) FROM " + table), "0");  // record 0 rolled back
    EXPECT_EQ(OffsetOf("g", "t", 0), "<none>");
  }
  {
    const std::string table = Unique("nulr");
    PostgresSinkOptions o = Options(table);
    o.replace_nul_in_text = true;
    auto sink = OpenSink(o, landing);
    ASSERT_NE(sink, nullptr);
    ASSERT_OK(sink->Write(Window(records, landing)));
    EXPECT_EQ(db_.One("SELECT name FROM " + table + " WHERE _kafka_offset = 1"),
              "a\xEF\xBF\xBD"
              "b");
  }
}

TEST_F(PostgresSinkTest, DeadLettersLandInTheSameTransaction) {
  const std::string table = Unique("dl");
  Schema landing = SimpleSchema();
  auto sink = OpenSink(Options(table), landing);
  ASSERT_NE(sink, nullptr);
  auto records = Records("t", 0, 0, 3);
  records[2].value = R"({"id":"not a number"})";
  records[2].key = std::string("k\0ey", 4);
  LoadOptions lo;
  lo.on_bad_record = BadRecordPolicy::kDeadLetter;
  SinkWindow w = Window(records, landing, lo);
  ASSERT_EQ(w.dead_letters->num_rows(), 1);
  ASSERT_OK(sink->Write(w));
  EXPECT_EQ(db_.One("SELECT count(*) FROM " + table), "3");
  auto rows = db_.Query(
      "SELECT _kafka_topic, _kafka_offset, encode(_kafka_key, 'hex'), "
      "convert_from(_kafka_value, 'UTF8'), _error_code FROM " +
      table + "_dead_letter");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0], "t");
  EXPECT_EQ(rows[0][1], "2");
  EXPECT_EQ(rows[0][2], "6b006579");
  EXPECT_EQ(rows[0][3], records[2].value);
  EXPECT_EQ(rows[0][4], "TYPE_MISMATCH");
  EXPECT_EQ(OffsetOf("g", "t", 0), "4");
  // Replayed, the dead letter is skipped like the rows.
  ASSERT_OK(sink->Write(w));
  EXPECT_EQ(db_.One("SELECT count(*) FROM " + table + "_dead_letter"), "1");
}

TEST_F(PostgresSinkTest, IncompatibleOrMissingTablesAreClearErrors) {
  Schema landing = SimpleSchema();
  const std::string wrong_type = Unique("wt");
  db_.Exec("CREATE TABLE " + wrong_type +
           " (id TEXT, name TEXT, _kafka_topic TEXT, _kafka_partition BIGINT, "
           "_kafka_offset BIGINT)");
  ASSERT_OK_AND_ASSIGN(auto s1, MakePostgresSink(Options(wrong_type)));
  Status st = s1->Open(ToArrowSchema(landing), DeadLetterSchema());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(wrong_type), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("'id' is text"), std::string::npos) << st.message();

  // Columns the table lacks are added (the landing grew since it was made)...
  const std::string missing_col = Unique("mc");
  db_.Exec("CREATE TABLE " + missing_col + " (id BIGINT, extra TEXT DEFAULT 'x')");
  auto s2 = MakePostgresSink(Options(missing_col));
  ASSERT_OK((*s2)->Open(ToArrowSchema(landing), DeadLetterSchema()));
  EXPECT_EQ(db_.One("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE "
                    "attrelid = '" +
                    missing_col + "'::regclass AND attname = 'name'"),
            "text");
  // ... unless kelt may not change tables (create_table_if_missing off).
  const std::string missing_fixed = Unique("mf");
  db_.Exec("CREATE TABLE " + missing_fixed + " (id BIGINT, extra TEXT DEFAULT 'x')");
  PostgresSinkOptions fixed = Options(missing_fixed);
  fixed.create_table_if_missing = false;
  auto s2b = MakePostgresSink(fixed);
  st = (*s2b)->Open(ToArrowSchema(landing), DeadLetterSchema());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no column 'name'"), std::string::npos) << st.message();

  // A compatible existing table with an extra defaulted column is fine.
  const std::string compatible = Unique("ok");
  db_.Exec("CREATE TABLE " + compatible +
           " (extra TEXT DEFAULT 'd', _kafka_offset BIGINT, _kafka_partition BIGINT, "
           "_kafka_topic VARCHAR(100), name TEXT, id BIGINT)");
  auto s3 = OpenSink(Options(compatible), landing);
  ASSERT_NE(s3, nullptr);
  ASSERT_OK(s3->Write(Window(Records("t", 0, 0, 0), landing)));
  EXPECT_EQ(db_.One("SELECT extra || name FROM " + compatible), "dn0");

  PostgresSinkOptions o = Options(Unique("absent"));
  o.create_table_if_missing = false;
  auto s4 = MakePostgresSink(o);
  st = (*s4)->Open(ToArrowSchema(landing), DeadLetterSchema());
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.ToString();
  EXPECT_NE(st.message().find("does not exist"), std::string::npos);

  // Writing a batch of another schema is refused before anything is stored.
  auto s5 = OpenSink(Options(Unique("sch")), landing);
  ASSERT_NE(s5, nullptr);
  Schema other = *ParseSchemaJson(R"({"fields":[{"name":"id","data_type":"Utf8"},
      {"name":"_kafka_offset","data_type":"Int64"}]})");
  auto r = s5->Write(Window(Records("t", 0, 0, 0), other));
  EXPECT_FALSE(r.ok());
}

TEST_F(PostgresSinkTest, PasswordNeverAppearsInErrors) {
  const std::string user = EnvValue("KELT_PG_PASSWORD_USER");
  const std::string password = EnvValue("KELT_PG_PASSWORD");
  ASSERT_FALSE(password.empty());
  const std::string port = EnvValue("KELT_PG_PORT");
  Schema landing = SimpleSchema();
  auto open_error = [&](const std::string& conninfo) {
    PostgresSinkOptions o = Options(Unique("pw"));
    o.conninfo = conninfo;
    auto sink = MakePostgresSink(o);
    if (!sink.ok()) return sink.status();
    EXPECT_EQ((*sink)->name().find(password), std::string::npos);
    return (*sink)->Open(ToArrowSchema(landing), DeadLetterSchema());
  };
  // The right password works (SCRAM), so the wrong ones below fail on it alone.
  EXPECT_OK(open_error("postgresql://" + user + ":" + password + "@127.0.0.1:" + port +
                       "/kelt"));
  const std::string wrong = password + "Wrong";
  for (const std::string& conninfo :
       {"postgresql://" + user + ":" + wrong + "@127.0.0.1:" + port + "/kelt",
        "host=127.0.0.1 port=" + port + " dbname=kelt user=" + user +
            " password=" + wrong,
        "host=127.0.0.1 port=1 dbname=kelt user=" + user + " password=" + wrong,
        "host=127.0.0.1 password=" + wrong + " bogus",
        "postgresql://" + user + ":" + wrong + "@127.0.0.1:" + port + "/kelt?nosuch=1"}) {
    Status st = open_error(conninfo);
    ASSERT_FALSE(st.ok()) << conninfo;
    EXPECT_EQ(st.ToString().find(wrong), std::string::npos) << st.ToString();
    EXPECT_EQ(st.ToString().find(password), std::string::npos) << st.ToString();
  }
  Status auth =
      open_error("postgresql://" + user + ":" + wrong + "@127.0.0.1:" + port + "/kelt");
  EXPECT_NE(auth.message().find("password authentication failed"), std::string::npos)
      << auth.message();
}

// The sink's connections wait a bounded time on a network that stops answering
// (pg::Connect): a connect timeout, TCP keepalives and a TCP user timeout, set on the
// socket, each overridable by the conninfo. Without them a link cut while the sink waited
// for a reply kept `kelt run` waiting for as long as the cut lasted, and a reply lost for
// good over 2 h (the kernel's keepalive time; tests/faults/test_network_sinks.py cuts a
// real link).
TEST_F(PostgresSinkTest, ConnectionsHaveTimeoutsAndKeepalivesTheConninfoMayOverride) {
  auto setting = [](PGconn* c, const char* key) {
    std::string out;
    PQconninfoOption* opts = PQconninfo(c);
    for (PQconninfoOption* o = opts; o != nullptr && o->keyword != nullptr; ++o) {
      if (std::strcmp(o->keyword, key) == 0 && o->val != nullptr) out = o->val;
    }
    PQconninfoFree(opts);
    return out;
  };
  auto sockopt = [](PGconn* c, int level, int name) {
    int v = -1;
    socklen_t len = sizeof v;
    EXPECT_EQ(getsockopt(PQsocket(c), level, name, &v, &len), 0);
    return v;
  };
  using Conn = std::unique_ptr<PGconn, decltype(&PQfinish)>;
  const std::string conninfo = EnvValue("KELT_PG_CONNINFO");  // a URI over TCP
  Conn c(pg::Connect(conninfo), &PQfinish);
  ASSERT_EQ(PQstatus(c.get()), CONNECTION_OK) << PQerrorMessage(c.get());
  EXPECT_EQ(setting(c.get(), "connect_timeout"), "30");
  EXPECT_EQ(setting(c.get(), "client_encoding"), "UTF8");
  EXPECT_EQ(sockopt(c.get(), SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(sockopt(c.get(), IPPROTO_TCP, TCP_KEEPIDLE), 30);
  EXPECT_EQ(sockopt(c.get(), IPPROTO_TCP, TCP_KEEPINTVL), 10);
  EXPECT_EQ(sockopt(c.get(), IPPROTO_TCP, TCP_KEEPCNT), 3);
  EXPECT_EQ(sockopt(c.get(), IPPROTO_TCP, TCP_USER_TIMEOUT), 60000);

  Conn own(pg::Connect(conninfo +
                       "?connect_timeout=9&keepalives_idle=5&tcp_user_timeout=7000"),
           &PQfinish);
  ASSERT_EQ(PQstatus(own.get()), CONNECTION_OK) << PQerrorMessage(own.get());
  EXPECT_EQ(setting(own.get(), "connect_timeout"), "9");
  EXPECT_EQ(sockopt(own.get(), IPPROTO_TCP, TCP_KEEPIDLE), 5);
  EXPECT_EQ(sockopt(own.get(), IPPROTO_TCP, TCP_USER_TIMEOUT), 7000);
}

// A server that takes the connection and never answers (a socket that is listened on
// but never accepted: the kernel completes the handshake, libpq waits for the reply to
// its startup packet): Open fails after the connect timeout, naming the sink's address,
// not the password.
TEST_F(PostgresSinkTest, ASilentServerFailsTheOpenAfterTheConnectTimeout) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  PostgresSinkOptions o = Options(Unique("silent"));
  o.conninfo =
      "postgresql://kelt:SilentSecret@127.0.0.1:" + port + "/kelt?connect_timeout=2";
  auto sink = MakePostgresSink(o);
  ASSERT_OK(sink.status());
  const auto t0 = std::chrono::steady_clock::now();
  Status st = (*sink)->Open(ToArrowSchema(SimpleSchema()), DeadLetterSchema());
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  close(fd);
  ASSERT_FALSE(st.ok());
  EXPECT_LT(secs, 15) << st.ToString();
  EXPECT_NE(st.message().find("127.0.0.1:" + port), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("timeout expired"), std::string::npos) << st.message();
  EXPECT_EQ(st.ToString().find("SilentSecret"), std::string::npos) << st.ToString();
}

// PostgreSQL drops the sink's connection, first between windows (its backend is
// terminated from another session), then in the middle of a COPY: each time the window
// fails with an error and is not committed, and a new loop of the same group resumes
// from the offsets stored with the data, so the table ends with every record exactly
// once. Kafka is librdkafka's mock cluster.
TEST_F(PostgresSinkTest, ConnectionKilledMidRunLosesNothingAfterRestart) {
  constexpr int kRecords = 2000;
  const std::string table = Unique("kill");
  const std::string app = Unique("kelt_kill");
  const std::string topic = "killed";
  const std::string group = Unique("gk");
  ASSERT_OK_AND_ASSIGN(auto mc, MockCluster::Make());
  ASSERT_OK(mc->CreateTopic(topic, 2));
  ProduceIds(*mc, topic, 0, kRecords);

  auto make_loop = [&]() -> std::unique_ptr<EltLoop> {
    PostgresSinkOptions po = Options(table, group);
    po.conninfo += (po.conninfo.find('?') == std::string::npos ? "?" : "&");
    po.conninfo += "application_name=" + app;  // names exactly this sink's backend
    auto sink = MakePostgresSink(po);
    EXPECT_OK(sink);
    if (!sink.ok()) return nullptr;
    EltOptions o;
    o.consumer = ConsumerFor(*mc, topic, group);
    o.window.max_records = 100;
    o.window.max_wait = std::chrono::milliseconds(2000);
    o.landing = Schema({{"id", TypeId::kInt64}});
    o.until_caught_up = true;
    o.assignment_timeout = std::chrono::milliseconds(20'000);
    std::vector<std::unique_ptr<Sink>> sinks;
    sinks.push_back(std::move(*sink));
    auto loop = EltLoop::Make(std::move(o), std::move(sinks));
    EXPECT_OK(loop);
    return loop.ok() ? std::move(*loop) : nullptr;
  };
  auto backends = [&] {
    return db_.One("SELECT count(*) FROM pg_stat_activity WHERE application_name = '" +
                   app + "'");
  };

  auto first = make_loop();
  ASSERT_NE(first, nullptr);
  for (int i = 0; i < 50 && first->stats().rows < 300; ++i) {
    ASSERT_OK_AND_ASSIGN(auto step, first->Step());
    ASSERT_TRUE(step);
  }
  const int64_t landed = first->stats().rows;
  ASSERT_GE(landed, 300);
  ASSERT_LT(landed, kRecords);
  ASSERT_EQ(db_.One("SELECT count(*) FROM " + table), std::to_string(landed));
  ASSERT_EQ(backends(), "1");

  // Terminate the sink's backend (and only it), and wait until it is gone.
  ASSERT_EQ(db_.One("SELECT count(*) FROM (SELECT pg_terminate_backend(pid) AS t FROM "
                    "pg_stat_activity WHERE datname = current_database() AND pid <> "
                    "pg_backend_pid() AND application_name = '" +
                    app + "') k WHERE t"),
            "1");
  for (int i = 0; i < 200 && backends() != "0"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(backends(), "0");

  // The next window fails (a clear I/O error naming the table), and stays failed.
  auto failed = first->Step();
  ASSERT_FALSE(failed.ok()) << "the window after the kill was written";
  EXPECT_EQ(failed.status().code(), StatusCode::kIOError) << failed.status().ToString();
  EXPECT_NE(failed.status().message().find(table), std::string::npos)
      << failed.status().message();
  auto again = first->Step();
  EXPECT_FALSE(again.ok());
  // (stats().rows counts the failed window's loaded rows too: check the commits.)
  EXPECT_EQ(first->stats().sink_errors, 1);
  int64_t committed = 0;
  for (const auto& [tp, next] : first->stats().committed) committed += next;
  EXPECT_EQ(committed, landed);
  Status closed = first->Close();  // the failed sink's window is dropped, not committed
  first.reset();
  EXPECT_EQ(db_.One("SELECT count(*) FROM " + table), std::to_string(landed))
      << closed.ToString();

  // Now the backend dies in the middle of a COPY: a row trigger terminates it at a row
  // every 100 records holds (some rows of the window are already in). The partial COPY
  // is rolled back with its offsets.
  db_.Exec("CREATE FUNCTION " + table +
           "_die() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM "
           "pg_terminate_backend(pg_backend_pid()); RETURN NEW; END $$");
  db_.Exec("CREATE TRIGGER die BEFORE INSERT ON " + table +
           " FOR EACH ROW WHEN (NEW._kafka_offset % 50 = 25) EXECUTE FUNCTION " + table +
           "_die()");
  auto second = make_loop();
  ASSERT_NE(second, nullptr);
  Result<bool> mid_copy = true;  // steps before the assignment read nothing
  for (int i = 0; i < 50 && mid_copy.ok() && *mid_copy && second->stats().windows == 0;
       ++i) {
    mid_copy = second->Step();
  }
  ASSERT_FALSE(mid_copy.ok()) << "the window that killed its COPY was written";
  EXPECT_EQ(mid_copy.status().code(), StatusCode::kIOError)
      << mid_copy.status().ToString();
  EXPECT_NE(mid_copy.status().message().find(table), std::string::npos)
      << mid_copy.status().message();
  EXPECT_NE(mid_copy.status().message().find("COPY"), std::string::npos)
      << mid_copy.status().message();
  EXPECT_EQ(second->stats().sink_errors, 1);
  EXPECT_TRUE(second->stats().committed.empty()) << "committed past a failed window";
  closed = second->Close();
  second.reset();
  db_.Exec("DROP TRIGGER die ON " + table);
  EXPECT_EQ(db_.One("SELECT count(*) FROM " + table), std::to_string(landed))
      << closed.ToString();
  EXPECT_EQ(db_.One("SELECT sum(next_offset) FROM " + offsets_table_ +
                    " WHERE group_id = '" + group + "'"),
            std::to_string(landed));

  // A new loop of the same group resumes from the offsets stored with the rows.
  auto third = make_loop();
  ASSERT_NE(third, nullptr);
  ASSERT_OK_AND_ASSIGN(auto run, third->Run());
  EXPECT_TRUE(run.caught_up);
  EXPECT_EQ(run.records, kRecords - landed);  // nothing read twice
  EXPECT_EQ(run.rows, kRecords - landed);
  third.reset();

  EXPECT_EQ(db_.One("SELECT count(*) FROM " + table), std::to_string(kRecords));
  EXPECT_EQ(
      db_.One("SELECT count(DISTINCT (_kafka_partition, _kafka_offset)) FROM " + table),
      std::to_string(kRecords));
  EXPECT_EQ(
      db_.One("SELECT count(DISTINCT id) || ' ' || min(id) || ' ' || max(id) FROM " +
              table),
      "2000 0 1999");
  // No gaps: each partition holds offsets 0 .. count - 1.
  auto parts = db_.Query(
      "SELECT _kafka_partition, count(*), min(_kafka_offset), max(_kafka_offset) FROM " +
      table + " GROUP BY 1 ORDER BY 1");
  ASSERT_EQ(parts.size(), 2u);
  int64_t total = 0;
  for (const Row& p : parts) {
    SCOPED_TRACE("partition " + p[0].value_or("?"));
    const int64_t count = std::stoll(p[1].value_or("0"));
    EXPECT_GT(count, 0);
    EXPECT_EQ(p[2], "0");
    EXPECT_EQ(p[3], std::to_string(count - 1));
    EXPECT_EQ(OffsetOf(group, topic, std::stoi(p[0].value_or("-1"))),
              std::to_string(count));
    total += count;
  }
  EXPECT_EQ(total, kRecords);
  EXPECT_EQ(db_.One("SELECT sum(next_offset) FROM " + offsets_table_ +
                    " WHERE group_id = '" + group + "' AND topic = '" + topic + "'"),
            std::to_string(kRecords));
}

// Every type a decoded Avro payload carries: the column types the sink creates, the
// values as PostgreSQL prints them (TimeZone UTC), and jsonb that queries as JSON.
TEST_F(PostgresSinkTest, LandsEveryDecodedPayloadType) {
  const std::string table = Unique("all_types");
  auto window = testing::AllTypesWindow();
  {
    ASSERT_OK_AND_ASSIGN(auto sink, MakePostgresSink(Options(table)));
    ASSERT_OK(sink->Open(window.batch->schema(), DeadLetterSchema()));
    ASSERT_OK_AND_ASSIGN(auto written, sink->Write(window));
    EXPECT_EQ(written, (OffsetMap{{{"t", 0}, 4}}));
    ASSERT_OK(sink->Close());
  }
  {
    // A second sink takes the table it created (every type accepted as it is).
    ASSERT_OK_AND_ASSIGN(auto again, MakePostgresSink(Options(table)));
    ASSERT_OK(again->Open(window.batch->schema(), DeadLetterSchema()));
    ASSERT_OK(again->Close());
  }
  std::vector<Row> types = db_.Query(
      "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute WHERE "
      "attrelid = '" +
      table + "'::regclass AND attnum > 0 ORDER BY attnum");
  std::vector<Row> want_types = {
      {"i32", "integer"},
      {"f32", "real"},
      {"dec", "numeric(10,2)"},
      {"dec256", "numeric(50,10)"},
      {"dec256s", "numeric(20,3)"},
      {"d", "date"},
      {"t32", "time without time zone"},
      {"t64", "time without time zone"},
      {"ts_ms_utc", "timestamp with time zone"},
      {"ts_us_utc", "timestamp with time zone"},
      {"ts_ns_utc", "timestamp with time zone"},
      {"ts_ms", "timestamp without time zone"},
      {"ts_us", "timestamp without time zone"},
      {"ts_ns", "timestamp without time zone"},
      {"fsb", "bytea"},
      {"bin", "bytea"},
      {"s", "text"},
      {"b", "boolean"},
      {"nul", "text"},
      {"e", "text"},
      {"st", "jsonb"},
      {"lst", "jsonb"},
      {"lst_st", "jsonb"},
      {"m", "jsonb"},
      {"u", "jsonb"},
      {"_kafka_topic", "text"},
      {"_kafka_partition", "bigint"},
      {"_kafka_offset", "bigint"},
  };
  EXPECT_EQ(types, want_types);

  std::string columns;
  for (const auto& t : want_types) {
    columns += (columns.empty() ? "" : ", ") + ("\"" + *t[0] + "\"::text");
  }
  auto rows =
      db_.Query("SELECT " + columns + " FROM " + table + " ORDER BY _kafka_offset");
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
                          "1970-01-01 00:00:00+00",
                          "1970-01-01 00:00:00+00",
                          "1970-01-01 00:00:00+00",
                          "1970-01-01 00:00:00",
                          "1970-01-01 00:00:00",
                          "1970-01-01 00:00:00",
                          "\\x61626364",
                          "\\x",
                          "héllo",
                          "true",
                          null,
                          "RED",
                          R"({"a": 1, "inner": {"x": "p", "y": 1.5}})",
                          "[1, 2, 3]",
                          R"([{"k": "a", "v": 1}])",
                          R"({"a": 1, "b": null})",
                          "5",
                          "t",
                          "0",
                          "0"}));
  // ns are cut to PostgreSQL's µs.
  EXPECT_EQ(rows[1], (Row{"-2147483648",
                          "-0.25",
                          "-0.05",
                          "-1.5000000000",
                          "-0.001",
                          "2022-01-08",
                          "12:34:56.789",
                          "12:34:56.789012",
                          "2023-11-14 22:13:20.123+00",
                          "2023-11-14 22:13:20.123456+00",
                          "2023-11-14 22:13:20.123456+00",
                          "2023-11-14 22:13:20.123",
                          "2023-11-14 22:13:20.123456",
                          "2023-11-14 22:13:20.123456",
                          "\\x7778797a",
                          "\\x6869",
                          "",
                          "false",
                          null,
                          "GREEN",
                          R"({"a": null, "inner": null})",
                          "[]",
                          "[]",
                          "{}",
                          R"("five")",
                          "t",
                          "0",
                          "1"}));
  Row all_null(25, null);  // the union's null is SQL NULL too
  all_null.insert(all_null.end(), {"t", "0", "2"});
  EXPECT_EQ(rows[2], all_null);
  // -1 ns floors to -1 µs.
  EXPECT_EQ(rows[3], (Row{"2147483647",
                          "1e+30",
                          "0.00",
                          "0.0000000000",
                          "0.000",
                          "1969-12-31",
                          "23:59:59.999",
                          "23:59:59.999999",
                          "1969-12-31 23:59:59.999+00",
                          "1969-12-31 23:59:59.999999+00",
                          "1969-12-31 23:59:59.999999+00",
                          "1969-12-31 23:59:59.999",
                          "1969-12-31 23:59:59.999999",
                          "1969-12-31 23:59:59.999999",
                          "\\x30313233",
                          "\\x782279",
                          "q\" b\\ t\t",
                          "true",
                          null,
                          "RED",
                          R"({"a": 3, "inner": {"x": null, "y": -2}})",
                          "[null, 4]",
                          R"([null, {"k": null, "v": 2}])",
                          R"({"z": 26})",
                          R"("x")",
                          "t",
                          "0",
                          "3"}));
  // jsonb answers the operators analytics users query with.
  EXPECT_EQ(db_.Query("SELECT st->'inner'->>'x', lst->>1, m->>'z', "
                      "jsonb_typeof(u), (dec * 2)::text FROM " +
                      table + " WHERE _kafka_offset IN (0, 3) ORDER BY _kafka_offset"),
            (std::vector<Row>{{"p", "2", null, "number", "24691357.80"},
                              {null, "4", "26", "string", "0.00"}}));
}

// Of a map's duplicate keys (an Avro map can carry them) jsonb keeps the last.
TEST_F(PostgresSinkTest, MapDuplicateKeysKeepTheLast) {
  const std::string table = Unique("dup_keys");
  auto m = testing::ColumnFromJson(arrow::map(arrow::utf8(), arrow::int32()),
                                   R"([[["a", 1], ["b", 3], ["a", 2]]])");
  ASSERT_TRUE(m);
  auto schema = arrow::schema({arrow::field("m", m->type())});
  SinkWindow window;
  window.batch = arrow::RecordBatch::Make(schema, 1, {m});
  window.spans.push_back(PartitionSpan{TopicPartition{"t", 0}, 0, 0, 1});
  ASSERT_OK_AND_ASSIGN(auto sink, MakePostgresSink(Options(table)));
  ASSERT_OK(sink->Open(schema, DeadLetterSchema()));
  ASSERT_OK(sink->Write(window).status());
  ASSERT_OK(sink->Close());
  EXPECT_EQ(db_.One("SELECT m::text FROM " + table), R"({"a": 2, "b": 3})");
}

// ---- Evolve --------------------------------------------------------------------------

std::unique_ptr<Sink> OpenArrowSink(const PostgresSinkOptions& options,
                                    const std::shared_ptr<arrow::Schema>& landing) {
  auto sink = MakePostgresSink(options);
  EXPECT_OK(sink);
  if (!sink.ok()) return nullptr;
  EXPECT_OK((*sink)->Open(landing, DeadLetterSchema()));
  return std::move(*sink);
}

TEST_F(PostgresSinkTest, EvolveAddsNullableColumnsAndCopiesThem) {
  using testing::EvolveSchemaA;
  using testing::EvolveSchemaB;
  using testing::EvolveWindow;
  const std::string table = Unique("evolve");
  {
    auto sink = OpenArrowSink(Options(table), EvolveSchemaA());
    ASSERT_NE(sink, nullptr);
    ASSERT_OK_AND_ASSIGN(auto durable, sink->Write(EvolveWindow(EvolveSchemaA(), 0, 4)));
    EXPECT_EQ(durable, (OffsetMap{{{"t", 0}, 5}}));
    ASSERT_OK(sink->Evolve(EvolveSchemaB()));
    // B lists its columns in another order than the table's: COPY names them.
    ASSERT_OK_AND_ASSIGN(durable, sink->Write(EvolveWindow(EvolveSchemaB(), 5, 9)));
    EXPECT_EQ(durable, (OffsetMap{{{"t", 0}, 10}}));
    EXPECT_FALSE(sink->Write(EvolveWindow(EvolveSchemaA(), 10, 11)).ok());
    ASSERT_OK(sink->Close());
  }
  auto types = db_.Query(
      "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid "
      "= '" +
      table + "'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum");
  std::vector<std::string> got;
  for (const Row& r : types) got.push_back(*r[0] + " " + *r[1]);
  EXPECT_EQ(got,
            (std::vector<std::string>{"id bigint", "name text", "_kafka_topic text",
                                      "_kafka_partition bigint", "_kafka_offset bigint",
                                      "coupon text", "extra jsonb"}));
  auto rows =
      db_.Query("SELECT id::text, name, coupon, extra->>'a', extra IS NULL FROM " +
                table + " ORDER BY _kafka_offset");
  ASSERT_EQ(rows.size(), 10u);
  for (int64_t o = 0; o < 10; ++o) {
    const std::string n = std::to_string(o);
    Row want = o < 5 ? Row{n, "n" + n, std::nullopt, std::nullopt, "t"}
                     : Row{n, "n" + n, "c" + n, std::to_string(o * 10), "f"};
    EXPECT_EQ(rows[o], want) << "offset " << o;
  }
  EXPECT_EQ(OffsetOf("g", "t", 0), "10");
  // Reopened with B: resumes after the evolved window and skips what it holds.
  auto reopened = OpenArrowSink(Options(table), EvolveSchemaB());
  ASSERT_NE(reopened, nullptr);
  ASSERT_OK_AND_ASSIGN(auto resumed, reopened->Resume({{"t", 0}}));
  EXPECT_EQ(resumed, (OffsetMap{{{"t", 0}, 10}}));
  ASSERT_OK_AND_ASSIGN(auto durable,
                       reopened->Write(EvolveWindow(EvolveSchemaB(), 8, 11)));
  EXPECT_EQ(durable, (OffsetMap{{{"t", 0}, 12}}));
  ASSERT_OK(reopened->Close());
  EXPECT_EQ(db_.One("SELECT count(*) FROM " + table), "12");
}

TEST_F(PostgresSinkTest, EvolveOfATableAnotherSinkEvolvedTakesItsColumns) {
  using testing::EvolveSchemaA;
  using testing::EvolveSchemaB;
  using testing::EvolveWindow;
  const std::string table = Unique("evolve2");
  // Two workers on A (own partitions), the first evolves the table first.
  auto first = OpenArrowSink(Options(table), EvolveSchemaA());
  auto second = OpenArrowSink(Options(table), EvolveSchemaA());
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  ASSERT_OK(first->Write(EvolveWindow(EvolveSchemaA(), 0, 1, {0})));
  ASSERT_OK(second->Write(EvolveWindow(EvolveSchemaA(), 0, 1, {1})));
  ASSERT_OK(first->Evolve(EvolveSchemaB()));
  ASSERT_OK(first->Write(EvolveWindow(EvolveSchemaB(), 2, 3, {0})));
  // The second still writes A into the evolved table until its own Evolve.
  ASSERT_OK(second->Write(EvolveWindow(EvolveSchemaA(), 2, 2, {1})));
  ASSERT_OK(second->Evolve(EvolveSchemaB()));
  ASSERT_OK_AND_ASSIGN(auto durable,
                       second->Write(EvolveWindow(EvolveSchemaB(), 3, 3, {1})));
  EXPECT_EQ(durable, (OffsetMap{{{"t", 1}, 4}}));
  ASSERT_OK(first->Close());
  ASSERT_OK(second->Close());
  EXPECT_EQ(db_.Query("SELECT _kafka_partition::text, _kafka_offset::text, coupon FROM " +
                      table + " ORDER BY 1, 2"),
            (std::vector<Row>{{"0", "0", std::nullopt},
                              {"0", "1", std::nullopt},
                              {"0", "2", "c2"},
                              {"0", "3", "c3"},
                              {"1", "0", std::nullopt},
                              {"1", "1", std::nullopt},
                              {"1", "2", std::nullopt},
                              {"1", "3", "c3"}}));
}

TEST_F(PostgresSinkTest, EvolveRefusesATypeChangeAndAnExistingColumnOfAnotherType) {
  using testing::EvolveSchemaA;
  using testing::EvolveSchemaB;
  using testing::EvolveWindow;
  const std::string table = Unique("evolve3");
  auto sink = OpenArrowSink(Options(table), EvolveSchemaA());
  ASSERT_NE(sink, nullptr);
  ASSERT_OK(sink->Write(EvolveWindow(EvolveSchemaA(), 0, 1)));
  Status changed = sink->Evolve(testing::EvolveSchemaNameChanged());
  EXPECT_EQ(changed.code(), StatusCode::kInvalid) << changed.ToString();
  EXPECT_NE(changed.message().find("column 'name' is string"), std::string::npos)
      << changed.ToString();
  db_.Exec("ALTER TABLE " + table + " ADD COLUMN coupon bigint");
  Status st = sink->Evolve(EvolveSchemaB());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("column 'coupon' is bigint; the batch needs TEXT"),
            std::string::npos)
      << st.ToString();
  // Rolled back (no extra column) and still writing A.
  EXPECT_EQ(db_.One("SELECT count(*) FROM pg_attribute WHERE attrelid = '" + table +
                    "'::regclass AND attname = 'extra'"),
            "0");
  ASSERT_OK(sink->Write(EvolveWindow(EvolveSchemaA(), 2, 3)));
  ASSERT_OK(sink->Close());
  EXPECT_EQ(db_.One("SELECT count(*) FROM " + table), "4");
}

}  // namespace
}  // namespace kelt
