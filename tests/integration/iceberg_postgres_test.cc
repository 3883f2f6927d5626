// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Iceberg SQL catalog on PostgreSQL (the `postgres` ctest fixture runs
// scripts/postgres.sh): the compare-and-swap read back with libpq, two writers racing
// on it through the sink, and the password kept out of names and messages. Each test
// uses its own catalog_name, so reruns against a kept server do not collide.
#include <arrow/api.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "broker_env.h"
#include "kelt/iceberg/catalog.h"
#include "kelt/iceberg/table.h"
#include "kelt/load.h"
#include "kelt/schema.h"
#include "kelt/sink.h"
#include "kelt/sink/sink_testing.h"
#include "kelt/testing/assertions.h"
#include "kelt/transform.h"

namespace kelt {
namespace {

namespace fs = std::filesystem;

const std::map<std::string, std::string>& Env() {
  static const auto env = testing::ReadBrokerEnv("KELT_PG_ENV");
  return env;
}
std::string EnvValue(const std::string& key) {
  auto it = Env().find(key);
  return it == Env().end() ? std::string() : it->second;
}

std::string UniqueCatalog(const std::string& base) {
  return base + "_" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

// One column of the catalog row, read with libpq.
std::string RowValue(const std::string& catalog, const char* column) {
  PGconn* c = PQconnectdb(EnvValue("KELT_PG_CONNINFO").c_str());
  const std::string sql = std::string("SELECT \"") + column +
                          "\" FROM iceberg_tables WHERE catalog_name = $1";
  const char* values[] = {catalog.c_str()};
  PGresult* r = PQexecParams(c, sql.c_str(), 1, nullptr, values, nullptr, nullptr, 0);
  std::string out =
      PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)
          ? PQgetvalue(r, 0, 0)
          : "(none)";
  PQclear(r);
  PQfinish(c);
  return out;
}

class IcebergPostgresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(EnvValue("KELT_PG_CONNINFO").empty())
        << "KELT_PG_ENV must name scripts/postgres.sh's env file";
    auto parsed = ParseSchemaJson(R"({"fields":[
      {"name":"id","data_type":"Int64"},
      {"name":"_kafka_topic","data_type":"Utf8"},
      {"name":"_kafka_partition","data_type":"Int64"},
      {"name":"_kafka_offset","data_type":"Int64"}]})");
    ASSERT_OK(parsed);
    landing_ = *parsed;
  }

  SinkWindow Window(int64_t first, int64_t last) {
    std::vector<StreamRecord> records;
    for (int64_t o = first; o <= last; ++o) {
      StreamRecord r;
      r.topic = "events";
      r.offset = o;
      r.value = R"({"id":)" + std::to_string(o) + "}";
      records.push_back(std::move(r));
    }
    return testing::MakeSinkWindow(records, landing_, LoadOptions{});
  }

  testing::TempDir dir_{"kelt-iceberg-pg"};
  Schema landing_;
};

TEST_F(IcebergPostgresTest, CompareAndSwapChangesTheRowOnlyFromTheExpectedLocation) {
  const std::string name = UniqueCatalog("cas");
  ASSERT_OK_AND_ASSIGN(auto cat,
                       iceberg::OpenCatalog(EnvValue("KELT_PG_CONNINFO"), name));
  const iceberg::TableIdentifier id{"ns", "t"};
  ASSERT_OK_AND_ASSIGN(auto none, cat->LoadTable(id));
  EXPECT_FALSE(none.has_value());
  ASSERT_OK_AND_ASSIGN(bool created, cat->CreateTable(id, "file:///a/v1.json"));
  EXPECT_TRUE(created);
  ASSERT_OK_AND_ASSIGN(created, cat->CreateTable(id, "file:///b/v1.json"));
  EXPECT_FALSE(created);  // exists: nothing changed
  EXPECT_EQ(RowValue(name, "metadata_location"), "file:///a/v1.json");
  ASSERT_OK_AND_ASSIGN(bool swapped,
                       cat->CommitTable(id, "file:///b/v1.json", "file:///a/v2.json"));
  EXPECT_FALSE(swapped);
  ASSERT_OK_AND_ASSIGN(swapped,
                       cat->CommitTable(id, "file:///a/v1.json", "file:///a/v2.json"));
  EXPECT_TRUE(swapped);
  EXPECT_EQ(RowValue(name, "metadata_location"), "file:///a/v2.json");
  EXPECT_EQ(RowValue(name, "previous_metadata_location"), "file:///a/v1.json");
  EXPECT_EQ(RowValue(name, "iceberg_type"), "TABLE");
  ASSERT_OK_AND_ASSIGN(auto loc, cat->LoadTable(id));
  EXPECT_EQ(loc.value_or(""), "file:///a/v2.json");
  // A second connection sees the same row (another member, another process).
  ASSERT_OK_AND_ASSIGN(auto other,
                       iceberg::OpenPostgresCatalog(EnvValue("KELT_PG_CONNINFO"), name));
  ASSERT_OK_AND_ASSIGN(swapped,
                       other->CommitTable(id, "file:///a/v1.json", "file:///a/v3.json"));
  EXPECT_FALSE(swapped);  // stale expectation: lost
}

TEST_F(IcebergPostgresTest, RacingWritersLandEachOffsetOnceAndTransformReadsTheTable) {
  IcebergSinkOptions o;
  o.catalog = EnvValue("KELT_PG_CONNINFO");
  o.catalog_name = UniqueCatalog("race");
  o.warehouse = dir_.path() + "/wh";
  o.table_namespace = "ns";
  o.table = "events";
  o.group_id = "g";
  std::vector<std::unique_ptr<Sink>> sinks;
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(auto s, MakeIcebergSink(o));
    ASSERT_OK(s->Open(ToArrowSchema(landing_), DeadLetterSchema()));
    EXPECT_EQ(s->name().find("@127.0.0.1"), s->name().find('@'));  // user@host only
    sinks.push_back(std::move(s));
  }
  std::vector<SinkWindow> windows;
  for (int64_t w = 0; w < 6; ++w) windows.push_back(Window(w * 5, w * 5 + 4));
  Status st[2];
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      for (const auto& w : windows) {
        auto r = sinks[i]->Write(w);
        if (!r.ok()) {
          st[i] = r.status();
          return;
        }
        // At least the window's end; more when the other writer is ahead already.
        EXPECT_GE(r->at({"events", 0}), w.spans.front().last_offset + 1);
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_OK(st[0]);
  ASSERT_OK(st[1]);
  ASSERT_OK_AND_ASSIGN(OffsetMap resumed, sinks[0]->Resume({{"events", 0}}));
  EXPECT_EQ(resumed, (OffsetMap{{{"events", 0}, 30}}));
  // Every offset once, read through the Transform stage over the catalog.
  ASSERT_OK_AND_ASSIGN(auto session, SqlSession::Make());
  LandingSource source;
  source.format = LandingSource::Format::kIceberg;
  source.location = o.catalog;
  source.catalog_name = o.catalog_name;
  source.table = "ns.events";
  ASSERT_OK(session->RegisterLanding("landing", source));
  ASSERT_OK_AND_ASSIGN(
      auto result, session->Query("SELECT count(*) AS n, count(DISTINCT _kafka_offset) "
                                  "AS d, min(_kafka_offset) AS lo, max(_kafka_offset) "
                                  "AS hi FROM landing"));
  auto batch = result->CombineChunksToBatch().ValueOrDie();
  auto at = [&](int c) {
    return static_cast<const arrow::Int64Array&>(*batch->column(c)).Value(0);
  };
  EXPECT_EQ(at(0), 30);
  EXPECT_EQ(at(1), 30);
  EXPECT_EQ(at(2), 0);
  EXPECT_EQ(at(3), 29);
  // No orphan: every data file left is referenced by the table.
  ASSERT_OK_AND_ASSIGN(auto cat, iceberg::OpenCatalog(o.catalog, o.catalog_name));
  ASSERT_OK_AND_ASSIGN(auto t, iceberg::LoadTable(*cat, {"ns", "events"}));
  ASSERT_TRUE(t.has_value());
  ASSERT_OK_AND_ASSIGN(auto referenced, iceberg::ReferencedDataFiles(t->metadata));
  EXPECT_EQ(static_cast<size_t>(std::distance(
                fs::directory_iterator(dir_.path() + "/wh/ns/events/data"), {})),
            referenced.size());
  EXPECT_EQ(RowValue(o.catalog_name, "metadata_location"), t->metadata_location);
}

TEST_F(IcebergPostgresTest, PasswordIsNeverShown) {
  const std::string user = EnvValue("KELT_PG_PASSWORD_USER");
  const std::string password = EnvValue("KELT_PG_PASSWORD");
  ASSERT_FALSE(user.empty() || password.empty());
  const std::string base = "postgresql://" + user + ":";
  const std::string rest = "@127.0.0.1:" + EnvValue("KELT_PG_PORT") + "/kelt";
  // The right password: the catalog opens and its name has no password.
  ASSERT_OK_AND_ASSIGN(auto cat,
                       iceberg::OpenCatalog(base + password + rest, UniqueCatalog("pw")));
  EXPECT_EQ(cat->name().find(password), std::string::npos) << cat->name();
  EXPECT_NE(cat->name().find(user + "@127.0.0.1"), std::string::npos) << cat->name();
  EXPECT_EQ(iceberg::CatalogDisplayName(base + password + rest).find(password),
            std::string::npos);
  // A wrong one: the error names the server, not the password.
  const std::string wrong = "Wr0ngSecretXyz";
  auto bad = iceberg::OpenCatalog(base + wrong + rest, "pw");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().ToString().find(wrong), std::string::npos)
      << bad.status().ToString();
  EXPECT_NE(bad.status().ToString().find("127.0.0.1"), std::string::npos)
      << bad.status().ToString();
  // Through the sink, the same.
  IcebergSinkOptions o;
  o.catalog = base + wrong + rest;
  o.warehouse = dir_.path() + "/wh";
  o.group_id = "g";
  ASSERT_OK_AND_ASSIGN(auto sink, MakeIcebergSink(o));
  EXPECT_EQ(sink->name().find(wrong), std::string::npos) << sink->name();
  Status open = sink->Open(ToArrowSchema(landing_), DeadLetterSchema());
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.ToString().find(wrong), std::string::npos) << open.ToString();
}

TEST_F(IcebergPostgresTest, PasswordInAQueryParameterOrKeywordIsNeverShown) {
  const std::string secret = "QueryParamSecret77";
  const std::string uri =
      "postgresql://kelt@127.0.0.1:5432/kelt?sslmode=disable&password=" + secret +
      "&connect_timeout=5";
  EXPECT_EQ(IcebergCatalogShown(uri), "postgresql://kelt@127.0.0.1:5432/kelt");
  EXPECT_EQ(PostgresConnectionPassword(uri), secret);
  const std::string keywords =
      "host=127.0.0.1 port=5432 dbname=kelt password=" + secret + " user=kelt";
  EXPECT_EQ(IcebergCatalogShown(keywords), "postgresql://kelt@127.0.0.1:5432/kelt");
  EXPECT_EQ(PostgresConnectionPassword(keywords), secret);
  EXPECT_EQ(PostgresConnectionPassword("/var/lib/kelt/catalog.db"), "");
}

TEST_F(IcebergPostgresTest, KeywordStringsAndMistypedUrisAreNotSqliteFiles) {
  EXPECT_TRUE(iceberg::IsPostgresCatalog("postgresql://h/db"));
  EXPECT_TRUE(iceberg::IsPostgresCatalog("postgres://h/db"));
  EXPECT_TRUE(iceberg::IsPostgresCatalog("host=db dbname=lake user=kelt"));
  EXPECT_TRUE(iceberg::IsPostgresCatalog("dbname = lake"));
  EXPECT_TRUE(iceberg::IsPostgresCatalog("postgresql:/h"));
  EXPECT_FALSE(iceberg::IsPostgresCatalog("postgres.db"));
  EXPECT_FALSE(iceberg::IsPostgresCatalog("catalog/iceberg.db"));
  EXPECT_FALSE(iceberg::IsPostgresCatalog("/abs/path/catalog.db"));
  // A mistyped URI fails as one, not as a SQLite file of that name.
  auto typo = iceberg::OpenCatalog("postgresql:/nohost:x", "kelt");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().ToString().find("PostgreSQL"), std::string::npos)
      << typo.status().ToString();
  EXPECT_FALSE(fs::exists("postgresql:/nohost:x"));
  // A keyword string opens the catalog on the server.
  const std::string kw =
      "host=" + EnvValue("KELT_PG_HOST") + " port=" + EnvValue("KELT_PG_PORT") +
      " dbname=" + EnvValue("KELT_PG_DB") + " user=" + EnvValue("KELT_PG_USER");
  const std::string name = UniqueCatalog("kw");
  ASSERT_OK_AND_ASSIGN(auto cat, iceberg::OpenCatalog(kw, name));
  ASSERT_OK_AND_ASSIGN(bool created, cat->CreateTable({"ns", "t"}, "file:///k/v1.json"));
  EXPECT_TRUE(created);
  EXPECT_EQ(RowValue(name, "metadata_location"), "file:///k/v1.json");
}

// The commit's connection dies while its UPDATE waits on the row (another session holds
// the row lock), and the row still shows the expected location: the server might have
// run the UPDATE later, so the commit is an error of unknown outcome, never "lost"
// (a lost swap deletes the new files, which the table could then point at).
TEST_F(IcebergPostgresTest, ACommitCutOffWhileTheRowIsUnchangedIsUnknownNotLost) {
  const std::string name = UniqueCatalog("cut");
  ASSERT_OK_AND_ASSIGN(auto cat,
                       iceberg::OpenCatalog(EnvValue("KELT_PG_CONNINFO"), name));
  const iceberg::TableIdentifier id{"ns", "t"};
  ASSERT_OK_AND_ASSIGN(bool created, cat->CreateTable(id, "file:///c/v1.json"));
  ASSERT_TRUE(created);

  PGconn* locker = PQconnectdb(EnvValue("KELT_PG_CONNINFO").c_str());
  ASSERT_EQ(PQstatus(locker), CONNECTION_OK) << PQerrorMessage(locker);
  auto exec = [](PGconn* c, const std::string& sql) {
    PGresult* r = PQexec(c, sql.c_str());
    const auto st = PQresultStatus(r);
    std::string first = PQntuples(r) > 0 && PQnfields(r) > 0 ? PQgetvalue(r, 0, 0) : "";
    PQclear(r);
    return std::make_pair(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, first);
  };
  ASSERT_TRUE(exec(locker, "BEGIN").first);
  ASSERT_TRUE(exec(locker, "SELECT 1 FROM iceberg_tables WHERE catalog_name = '" + name +
                               "' FOR UPDATE")
                  .first);

  Result<bool> outcome = Status::Internal("not run");
  std::thread committer(
      [&] { outcome = cat->CommitTable(id, "file:///c/v1.json", "file:///c/v2.json"); });
  // Wait until the commit's backend is blocked on the lock, then end that backend. The
  // watcher asks outside any transaction: pg_stat_activity is a snapshot taken once per
  // transaction, so the locker's own transaction would keep seeing the first answer.
  PGconn* watcher = PQconnectdb(EnvValue("KELT_PG_CONNINFO").c_str());
  std::string pid;
  for (int i = 0; i < 600 && pid.empty() && PQstatus(watcher) == CONNECTION_OK; ++i) {
    pid = exec(watcher,
               "SELECT pid FROM pg_stat_activity WHERE application_name = 'kelt' AND "
               "wait_event_type = 'Lock' AND query LIKE 'UPDATE \"iceberg_tables\"%'")
              .second;
    if (pid.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const bool terminated =
      !pid.empty() && exec(watcher, "SELECT pg_terminate_backend(" + pid + ")").first;
  // The backend is gone before the row is released (else it might yet run the UPDATE).
  for (int i = 0; terminated && i < 200; ++i) {
    if (exec(watcher, "SELECT 1 FROM pg_stat_activity WHERE pid = " + pid)
            .second.empty()) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  PQfinish(watcher);
  // Whatever happened, release the row so that the commit returns before the checks.
  const bool rolled_back = exec(locker, "ROLLBACK").first;
  committer.join();
  PQfinish(locker);
  ASSERT_FALSE(pid.empty()) << "the commit never waited on the row lock";
  ASSERT_TRUE(terminated);
  ASSERT_TRUE(rolled_back);

  ASSERT_FALSE(outcome.ok()) << "a cut-off commit on an unchanged row was taken as "
                             << (outcome.ok() && *outcome ? "won" : "lost");
  EXPECT_NE(outcome.status().ToString().find("outcome is unknown"), std::string::npos)
      << outcome.status().ToString();
  EXPECT_EQ(RowValue(name, "metadata_location"), "file:///c/v1.json");
  // The catalog reconnected: the next commit works.
  ASSERT_OK_AND_ASSIGN(bool swapped,
                       cat->CommitTable(id, "file:///c/v1.json", "file:///c/v2.json"));
  EXPECT_TRUE(swapped);
}

}  // namespace
}  // namespace kelt
