// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Where an Iceberg table's current metadata file is recorded, and the compare-and-swap
// that commits a new one. The SQL catalog (SQLite here; the schema Iceberg's
// JdbcCatalog and pyiceberg's SqlCatalog share) implements it; a REST catalog client
// can implement the same interface.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "kelt/status.h"

namespace kelt::iceberg {

struct TableIdentifier {
  std::string ns;  ///< namespace, levels joined by '.'
  std::string name;
};

class Catalog {
 public:
  virtual ~Catalog() = default;
  /// "sqlite:<path> (catalog <name>)", "postgresql://user@host:port/db (catalog
  /// <name>)"; never a secret.
  virtual std::string name() const = 0;
  /// The table's current metadata location, nullopt if the table does not exist.
  virtual Result<std::optional<std::string>> LoadTable(const TableIdentifier& id) = 0;
  /// Register a new table (and its namespace if missing). false: the table exists
  /// already (another writer created it first), nothing changed.
  virtual Result<bool> CreateTable(const TableIdentifier& id,
                                   const std::string& metadata_location) = 0;
  /// Point the table at `next` if it still points at `expected`. false: it does not
  /// (a concurrent commit won), nothing changed.
  virtual Result<bool> CommitTable(const TableIdentifier& id, const std::string& expected,
                                   const std::string& next) = 0;
};

/// Open (creating if missing) the SQL catalog `catalog_name` in SQLite file `path`.
Result<std::unique_ptr<Catalog>> OpenSqliteCatalog(const std::string& path,
                                                   const std::string& catalog_name);

/// Open the SQL catalog `catalog_name` in a PostgreSQL database (`conninfo`: a libpq URI
/// or keyword string; creates the two tables if missing). The password never appears
/// in name() or in a message.
Result<std::unique_ptr<Catalog>> OpenPostgresCatalog(const std::string& conninfo,
                                                     const std::string& catalog_name);

/// True for a PostgreSQL catalog location: `postgresql:` or `postgres:` (a URI), or a
/// libpq keyword string (`host=… dbname=…`).
bool IsPostgresCatalog(const std::string& location);

/// Open the catalog a location names: PostgreSQL (IsPostgresCatalog), else a SQLite file.
Result<std::unique_ptr<Catalog>> OpenCatalog(const std::string& location,
                                             const std::string& catalog_name);

/// What may be shown of a catalog location: a PostgreSQL URI without its password.
std::string CatalogDisplayName(const std::string& location);

}  // namespace kelt::iceberg
