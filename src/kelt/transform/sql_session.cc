// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The public SQL entry points (kelt/transform.h) over DuckDbSession.
#include <arrow/api.h>

#include "kelt/common/arrow_status.h"
#include "kelt/iceberg/catalog.h"
#include "kelt/iceberg/table.h"
#include "kelt/transform.h"
#include "kelt/transform/duckdb_session.h"

namespace kelt {

struct SqlSession::Impl {
  std::unique_ptr<transform::DuckDbSession> session;
};

SqlSession::SqlSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SqlSession::~SqlSession() = default;

Result<std::unique_ptr<SqlSession>> SqlSession::Make() {
  auto impl = std::make_unique<Impl>();
  KELT_ASSIGN_OR_RAISE(impl->session, transform::DuckDbSession::Open(""));
  return std::unique_ptr<SqlSession>(new SqlSession(std::move(impl)));
}

Status SqlSession::RegisterArrow(const std::string& name,
                                 std::shared_ptr<arrow::Table> table) {
  return impl_->session->RegisterArrow(name, std::move(table));
}

Status SqlSession::RegisterLanding(const std::string& name, const LandingSource& source) {
  switch (source.format) {
    case LandingSource::Format::kParquet: {
      KELT_ASSIGN_OR_RAISE(auto files, transform::ListLandedFiles(source));
      return impl_->session->RegisterParquetFiles(name, files);
    }
    case LandingSource::Format::kIceberg: {
      const size_t dot = source.table.rfind('.');
      if (dot == std::string::npos || dot == 0 || dot + 1 == source.table.size()) {
        return Status::Invalid("transform: Iceberg table '" + source.table +
                               "' must be namespace.table");
      }
      KELT_ASSIGN_OR_RAISE(auto catalog,
                           iceberg::OpenCatalog(source.location, source.catalog_name));
      iceberg::TableIdentifier id{source.table.substr(0, dot),
                                  source.table.substr(dot + 1)};
      KELT_ASSIGN_OR_RAISE(auto table, iceberg::LoadTable(*catalog, id));
      if (!table) {
        return Status::NotFound("transform: no Iceberg table " + source.table + " in " +
                                catalog->name());
      }
      KELT_ASSIGN_OR_RAISE(auto locations, iceberg::CurrentDataFiles(table->metadata));
      transform::LandedFiles files;
      for (const auto& l : locations) {
        KELT_ASSIGN_OR_RAISE(std::string path, iceberg::LocalPath(l));
        files.files.push_back({path, {}, false});
      }
      return impl_->session->RegisterParquetFiles(name, files);
    }
    case LandingSource::Format::kDuckDb: {
      KELT_ASSIGN_OR_RAISE(std::string alias,
                           impl_->session->AttachReadOnly(source.location));
      return impl_->session->Exec(
          "CREATE OR REPLACE TEMP VIEW " + transform::QuoteIdentifier(name) +
          " AS SELECT * FROM " + transform::QuoteIdentifier(alias) + "." +
          transform::QuoteTableName(source.table));
    }
  }
  return Status::Invalid("transform: unknown landing format");
}

Result<std::shared_ptr<arrow::Table>> SqlSession::Query(std::string_view sql) {
  return impl_->session->Query(sql);
}

Result<std::shared_ptr<arrow::Table>> QuerySql(std::string_view sql,
                                               std::shared_ptr<arrow::Table> df) {
  KELT_ASSIGN_OR_RAISE(auto session, SqlSession::Make());
  KELT_RETURN_NOT_OK(session->RegisterArrow("df", std::move(df)));
  return session->Query(sql);
}

Result<std::shared_ptr<arrow::Table>> QuerySql(std::string_view sql,
                                               std::shared_ptr<arrow::RecordBatch> df) {
  if (!df) return Status::Invalid("transform: no batch to query");
  KELT_ARROW_ASSIGN_OR_RAISE(auto table, arrow::Table::FromRecordBatches({df}));
  return QuerySql(sql, std::move(table));
}

}  // namespace kelt
