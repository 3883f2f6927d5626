// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The SQL catalog on SQLite. Tables and columns are those of Iceberg's JdbcCatalog (V1
// schema, with iceberg_type) and pyiceberg's SqlCatalog, so either opens the file.
// Every statement is prepared with bound parameters; the identifiers are constants.

#include <sqlite3.h>

#include <memory>

#include "kelt/iceberg/catalog.h"

namespace kelt::iceberg {
namespace {

constexpr const char* kCreateTables =
    "CREATE TABLE IF NOT EXISTS \"iceberg_tables\" ("
    "\"catalog_name\" VARCHAR(255) NOT NULL, \"table_namespace\" VARCHAR(255) NOT NULL, "
    "\"table_name\" VARCHAR(255) NOT NULL, \"metadata_location\" VARCHAR(1000), "
    "\"previous_metadata_location\" VARCHAR(1000), \"iceberg_type\" VARCHAR(5), "
    "PRIMARY KEY (\"catalog_name\", \"table_namespace\", \"table_name\"));"
    "CREATE TABLE IF NOT EXISTS \"iceberg_namespace_properties\" ("
    "\"catalog_name\" VARCHAR(255) NOT NULL, \"namespace\" VARCHAR(255) NOT NULL, "
    "\"property_key\" VARCHAR(255) NOT NULL, \"property_value\" VARCHAR(1000), "
    "PRIMARY KEY (\"catalog_name\", \"namespace\", \"property_key\"));";

struct DbDeleter {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtDeleter {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtDeleter>;

class SqliteCatalog final : public Catalog {
 public:
  SqliteCatalog(std::unique_ptr<sqlite3, DbDeleter> db, std::string path,
                std::string catalog)
      : db_(std::move(db)), path_(std::move(path)), catalog_(std::move(catalog)) {}

  std::string name() const override {
    return "sqlite:" + path_ + " (catalog " + catalog_ + ")";
  }

  Result<std::optional<std::string>> LoadTable(const TableIdentifier& id) override {
    KELT_ASSIGN_OR_RAISE(
        StmtPtr s, Prepare("SELECT \"metadata_location\" FROM \"iceberg_tables\" WHERE "
                           "\"catalog_name\" = ?1 AND \"table_namespace\" = ?2 AND "
                           "\"table_name\" = ?3"));
    Bind(s.get(), {catalog_, id.ns, id.name});
    const int rc = sqlite3_step(s.get());
    if (rc == SQLITE_DONE) return std::optional<std::string>();
    if (rc != SQLITE_ROW) return Error("load table " + id.ns + "." + id.name);
    const auto* text = sqlite3_column_text(s.get(), 0);
    if (!text) {
      return Status::Invalid("catalog " + name() + ": table " + id.ns + "." + id.name +
                             " has no metadata location");
    }
    return std::optional<std::string>(reinterpret_cast<const char*>(text));
  }

  Result<bool> CreateTable(const TableIdentifier& id,
                           const std::string& metadata_location) override {
    KELT_ASSIGN_OR_RAISE(
        StmtPtr ns, Prepare("INSERT OR IGNORE INTO \"iceberg_namespace_properties\" "
                            "(\"catalog_name\", \"namespace\", \"property_key\", "
                            "\"property_value\") VALUES (?1, ?2, 'exists', 'true')"));
    Bind(ns.get(), {catalog_, id.ns});
    if (sqlite3_step(ns.get()) != SQLITE_DONE) return Error("create namespace " + id.ns);
    KELT_ASSIGN_OR_RAISE(
        StmtPtr s,
        Prepare("INSERT OR IGNORE INTO \"iceberg_tables\" (\"catalog_name\", "
                "\"table_namespace\", \"table_name\", \"metadata_location\", "
                "\"previous_metadata_location\", \"iceberg_type\") VALUES (?1, ?2, ?3, "
                "?4, NULL, 'TABLE')"));
    Bind(s.get(), {catalog_, id.ns, id.name, metadata_location});
    if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("create table " + id.name);
    return sqlite3_changes(db_.get()) == 1;
  }

  Result<bool> CommitTable(const TableIdentifier& id, const std::string& expected,
                           const std::string& next) override {
    KELT_ASSIGN_OR_RAISE(
        StmtPtr s, Prepare("UPDATE \"iceberg_tables\" SET \"metadata_location\" = ?4, "
                           "\"previous_metadata_location\" = ?5 WHERE \"catalog_name\" = "
                           "?1 AND \"table_namespace\" = ?2 AND \"table_name\" = ?3 AND "
                           "\"metadata_location\" = ?5"));
    Bind(s.get(), {catalog_, id.ns, id.name, next, expected});
    if (sqlite3_step(s.get()) != SQLITE_DONE) return Error("commit " + id.name);
    return sqlite3_changes(db_.get()) == 1;
  }

 private:
  Result<StmtPtr> Prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_.get(), sql, -1, &s, nullptr) != SQLITE_OK) {
      return Error("prepare");
    }
    return StmtPtr(s);
  }
  static void Bind(sqlite3_stmt* s, std::initializer_list<std::string_view> values) {
    int i = 1;
    for (std::string_view v : values) {
      sqlite3_bind_text(s, i++, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    }
  }
  Status Error(const std::string& what) const {
    return Status::IOError(
        "catalog " + name() + ": " + what + ": " + sqlite3_errmsg(db_.get()),
        /*retriable=*/sqlite3_errcode(db_.get()) == SQLITE_BUSY);
  }

  std::unique_ptr<sqlite3, DbDeleter> db_;
  std::string path_;
  std::string catalog_;
};

}  // namespace

Result<std::unique_ptr<Catalog>> OpenSqliteCatalog(const std::string& path,
                                                   const std::string& catalog_name) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &raw,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  std::unique_ptr<sqlite3, DbDeleter> db(raw);
  if (rc != SQLITE_OK) {
    return Status::IOError("catalog sqlite:" + path + ": " +
                           (raw ? sqlite3_errmsg(raw) : "out of memory"));
  }
  // Other writers (group members, pyiceberg) hold the file briefly: wait, don't fail.
  sqlite3_busy_timeout(db.get(), 30'000);
  char* err = nullptr;
  if (sqlite3_exec(db.get(), kCreateTables, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return Status::IOError("catalog sqlite:" + path + ": create tables: " + msg);
  }
  return std::unique_ptr<Catalog>(
      std::make_unique<SqliteCatalog>(std::move(db), path, catalog_name));
}

}  // namespace kelt::iceberg
