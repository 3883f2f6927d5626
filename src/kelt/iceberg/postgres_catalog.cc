// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The SQL catalog on PostgreSQL: the same two tables as the SQLite catalog (Iceberg's
// JdbcCatalog, pyiceberg's SqlCatalog), reached by libpq. Every statement is sent with
// PQexecParams and bound text values; the identifiers are quoted constants.
//
// The compare-and-swap is one UPDATE … WHERE metadata_location = <expected> in
// autocommit. Under READ COMMITTED a concurrent UPDATE of the same row waits for the
// first one and then re-checks the WHERE against the committed row, so exactly one of
// two racing writers changes a row; the other sees 0 rows.
//
// A commit whose reply is lost (the connection broke after the UPDATE was sent) has an
// unknown outcome: the row may point at `next` already, or the old server process may
// still run the UPDATE later. The catalog reconnects and reads the row: `next` is a win,
// another location a loss (metadata file names are never reused, so the UPDATE can no
// longer match), and `expected` or no answer an error of unknown outcome; the caller
// must not delete the new files on such an error (table.cc does not).
//
// The connection string may hold a password: name() and every message show the URI or
// keywords without it (PQconninfoParse), and the password is also cut from libpq's text.

#include <libpq-fe.h>

#include <cctype>
#include <memory>
#include <vector>

#include "kelt/iceberg/catalog.h"

namespace kelt::iceberg {
namespace {

constexpr const char* kCreateTables[] = {
    "CREATE TABLE IF NOT EXISTS \"iceberg_tables\" ("
    "\"catalog_name\" VARCHAR(255) NOT NULL, \"table_namespace\" VARCHAR(255) NOT NULL, "
    "\"table_name\" VARCHAR(255) NOT NULL, \"metadata_location\" VARCHAR(1000), "
    "\"previous_metadata_location\" VARCHAR(1000), \"iceberg_type\" VARCHAR(5), "
    "PRIMARY KEY (\"catalog_name\", \"table_namespace\", \"table_name\"))",
    "CREATE TABLE IF NOT EXISTS \"iceberg_namespace_properties\" ("
    "\"catalog_name\" VARCHAR(255) NOT NULL, \"namespace\" VARCHAR(255) NOT NULL, "
    "\"property_key\" VARCHAR(255) NOT NULL, \"property_value\" VARCHAR(1000), "
    "PRIMARY KEY (\"catalog_name\", \"namespace\", \"property_key\"))",
};

struct ConnDeleter {
  void operator()(PGconn* c) const { PQfinish(c); }
};
struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using ConnPtr = std::unique_ptr<PGconn, ConnDeleter>;
using ResultPtr = std::unique_ptr<PGresult, ResultDeleter>;

struct Shown {
  std::string text;      // what may be shown: no password
  std::string password;  // only to cut it from libpq's messages
};

// The connection string without its password, e.g. "postgresql://kelt@host:5432/db".
Result<Shown> Describe(const std::string& conninfo) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (!opts) {
    if (err) PQfreemem(err);
    // libpq's message quotes the string; it is not shown.
    return Status::Invalid(
        "iceberg catalog: the PostgreSQL connection string is not valid");
  }
  Shown out;
  std::string user, host, port, dbname;
  for (PQconninfoOption* o = opts; o->keyword; ++o) {
    if (!o->val) continue;
    const std::string k = o->keyword;
    if (k == "password") out.password = o->val;
    if (k == "user") user = o->val;
    if (k == "host" || (k == "hostaddr" && host.empty())) host = o->val;
    if (k == "port") port = o->val;
    if (k == "dbname") dbname = o->val;
  }
  PQconninfoFree(opts);
  out.text = "postgresql://" + (user.empty() ? "" : user + "@") + host +
             (port.empty() ? "" : ":" + port) + "/" + dbname;
  return out;
}

std::string Redact(std::string message, const std::string& secret) {
  if (secret.empty()) return message;
  for (size_t at = message.find(secret); at != std::string::npos;
       at = message.find(secret, at + 3)) {
    message.replace(at, secret.size(), "***");
  }
  return message;
}

class PostgresCatalog final : public Catalog {
 public:
  PostgresCatalog(ConnPtr conn, Shown shown, std::string catalog)
      : conn_(std::move(conn)), shown_(std::move(shown)), catalog_(std::move(catalog)) {}

  std::string name() const override {
    return shown_.text + " (catalog " + catalog_ + ")";
  }

  Status CreateTables() {
    // A role that may use the tables but not create any (no CREATE on the schema) fails
    // even CREATE … IF NOT EXISTS: look first.
    KELT_ASSIGN_OR_RAISE(
        ResultPtr have,
        Exec("SELECT to_regclass('\"iceberg_tables\"') IS NOT NULL AND "
             "to_regclass('\"iceberg_namespace_properties\"') IS NOT NULL",
             {}, "look for the catalog tables"));
    if (PQntuples(have.get()) == 1 && std::string(PQgetvalue(have.get(), 0, 0)) == "t") {
      return Status::OK();
    }
    for (const char* sql : kCreateTables) {
      auto r = Exec(sql, {}, "create the catalog tables");
      if (r.ok()) continue;
      // Two members creating at once: the loser's CREATE … IF NOT EXISTS can still fail
      // on the catalog's unique index; the table exists then, which is what we wanted.
      auto again = Exec(sql, {}, "create the catalog tables");
      if (!again.ok()) return again.status();
    }
    return Status::OK();
  }

  Result<std::optional<std::string>> LoadTable(const TableIdentifier& id) override {
    KELT_ASSIGN_OR_RAISE(ResultPtr r, Select(id, "load table " + id.ns + "." + id.name));
    if (PQntuples(r.get()) == 0) return std::optional<std::string>();
    if (PQgetisnull(r.get(), 0, 0)) {
      return Status::Invalid("catalog " + name() + ": table " + id.ns + "." + id.name +
                             " has no metadata location");
    }
    return std::optional<std::string>(PQgetvalue(r.get(), 0, 0));
  }

  Result<bool> CreateTable(const TableIdentifier& id,
                           const std::string& metadata_location) override {
    KELT_RETURN_NOT_OK(
        Exec("INSERT INTO \"iceberg_namespace_properties\" (\"catalog_name\", "
             "\"namespace\", \"property_key\", \"property_value\") VALUES ($1, $2, "
             "'exists', 'true') ON CONFLICT DO NOTHING",
             {catalog_, id.ns}, "create namespace " + id.ns)
            .status());
    KELT_ASSIGN_OR_RAISE(
        ResultPtr r,
        Exec("INSERT INTO \"iceberg_tables\" (\"catalog_name\", \"table_namespace\", "
             "\"table_name\", \"metadata_location\", \"previous_metadata_location\", "
             "\"iceberg_type\") VALUES ($1, $2, $3, $4, NULL, 'TABLE') ON CONFLICT DO "
             "NOTHING",
             {catalog_, id.ns, id.name, metadata_location}, "create table " + id.name));
    return std::string(PQcmdTuples(r.get())) == "1";
  }

  Result<bool> CommitTable(const TableIdentifier& id, const std::string& expected,
                           const std::string& next) override {
    auto r = Exec(
        "UPDATE \"iceberg_tables\" SET \"metadata_location\" = $4, "
        "\"previous_metadata_location\" = $5 WHERE \"catalog_name\" = $1 AND "
        "\"table_namespace\" = $2 AND \"table_name\" = $3 AND \"metadata_location\" = $5",
        {catalog_, id.ns, id.name, next, expected}, "commit " + id.ns + "." + id.name);
    if (r.ok()) return std::string(PQcmdTuples(r->get())) == "1";
    // The outcome is unknown only if the connection broke; a refused statement changed
    // nothing. Read the row again (Exec reconnects) to tell which.
    if (PQstatus(conn_.get()) == CONNECTION_OK) return r.status();
    auto now = LoadTable(id);
    if (!now.ok()) {
      return Status::IOError(r.status().message() +
                             "; the commit's outcome is unknown (cannot re-read the "
                             "table: " +
                             now.status().message() + ")");
    }
    if (*now && **now == next) return true;
    // Still `expected`: the old server process may yet run the UPDATE (waiting on the
    // row's lock, or not scheduled yet) and commit without its client, so the new
    // metadata file must stay. Any other location is final: metadata file names are
    // never reused, so the row cannot return to `expected` and the UPDATE can no longer
    // match.
    if (*now && **now == expected) {
      return Status::IOError(r.status().message() +
                             "; the commit's outcome is unknown (the table still points "
                             "at the snapshot it was based on; its files are kept)");
    }
    return false;
  }

 private:
  Result<ResultPtr> Select(const TableIdentifier& id, const std::string& what) {
    return Exec(
        "SELECT \"metadata_location\" FROM \"iceberg_tables\" WHERE \"catalog_name\" = "
        "$1 "
        "AND \"table_namespace\" = $2 AND \"table_name\" = $3",
        {catalog_, id.ns, id.name}, what);
  }

  Result<ResultPtr> Exec(const char* sql, const std::vector<std::string>& params,
                         const std::string& what) {
    if (PQstatus(conn_.get()) != CONNECTION_OK) {
      PQreset(conn_.get());
      if (PQstatus(conn_.get()) != CONNECTION_OK) return Error(what, nullptr);
    }
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p.c_str());
    ResultPtr r(PQexecParams(conn_.get(), sql, static_cast<int>(values.size()), nullptr,
                             values.data(), nullptr, nullptr, 0));
    const auto st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return Error(what, r.get());
    return r;
  }

  Status Error(const std::string& what, const PGresult* r) const {
    std::string msg = r ? PQresultErrorMessage(r) : "";
    if (msg.empty()) msg = PQerrorMessage(conn_.get());
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    // A broken connection or a serialization/deadlock failure may succeed if retried.
    const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    const bool retriable =
        PQstatus(conn_.get()) != CONNECTION_OK ||
        (state && (std::string(state) == "40001" || std::string(state) == "40P01"));
    return Status::IOError("catalog " + name() + ": " + what + ": " +
                               Redact(std::move(msg), shown_.password),
                           retriable);
  }

  ConnPtr conn_;
  Shown shown_;
  std::string catalog_;
};

}  // namespace

bool IsPostgresCatalog(const std::string& location) {
  // "postgres:" / "postgresql:" however the rest is spelled (a malformed URI then fails
  // as one, instead of naming a SQLite file), or a libpq keyword string ("host=…
  // dbname=…").
  if (location.rfind("postgres:", 0) == 0 || location.rfind("postgresql:", 0) == 0) {
    return true;
  }
  size_t i = 0;
  while (i < location.size() &&
         (std::islower(static_cast<unsigned char>(location[i])) || location[i] == '_')) {
    ++i;
  }
  if (i == 0) return false;
  while (i < location.size() && location[i] == ' ') ++i;
  return i < location.size() && location[i] == '=';
}

std::string CatalogDisplayName(const std::string& location) {
  if (!IsPostgresCatalog(location)) return location;
  auto shown = Describe(location);
  return shown.ok() ? shown->text : "postgresql://(not valid)";
}

Result<std::unique_ptr<Catalog>> OpenPostgresCatalog(const std::string& conninfo,
                                                     const std::string& catalog_name) {
  KELT_ASSIGN_OR_RAISE(Shown shown, Describe(conninfo));
  // The conninfo is expanded as dbname; later keywords override what it says.
  // Defaults that the conninfo's own settings override: a connect timeout and TCP
  // keepalives (a half-open connection fails in about a minute instead of blocking the
  // sink), and READ COMMITTED, under which the commit's UPDATE is a compare-and-swap
  // (above) whatever the database's default isolation is.
  const char* keys[] = {"connect_timeout",  "keepalives_idle", "keepalives_interval",
                        "keepalives_count", "options",         "dbname",
                        "application_name", "client_encoding", nullptr};
  const char* values[] = {"30",
                          "30",
                          "10",
                          "3",
                          "-c default_transaction_isolation=read\\ committed",
                          conninfo.c_str(),
                          "kelt",
                          "UTF8",
                          nullptr};
  ConnPtr conn(PQconnectdbParams(keys, values, /*expand_dbname=*/1));
  if (!conn || PQstatus(conn.get()) != CONNECTION_OK) {
    std::string msg = conn ? PQerrorMessage(conn.get()) : "out of memory";
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    return Status::IOError(
        "catalog " + shown.text + ": connect: " + Redact(std::move(msg), shown.password),
        /*retriable=*/true);
  }
  // The library is silent: no NOTICE ("relation … already exists") on stderr.
  PQsetNoticeProcessor(
      conn.get(), [](void*, const char*) {}, nullptr);
  auto catalog =
      std::make_unique<PostgresCatalog>(std::move(conn), std::move(shown), catalog_name);
  KELT_RETURN_NOT_OK(catalog->CreateTables());
  return std::unique_ptr<Catalog>(std::move(catalog));
}

Result<std::unique_ptr<Catalog>> OpenCatalog(const std::string& location,
                                             const std::string& catalog_name) {
  if (IsPostgresCatalog(location)) return OpenPostgresCatalog(location, catalog_name);
  return OpenSqliteCatalog(location, catalog_name);
}

}  // namespace kelt::iceberg
