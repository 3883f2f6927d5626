// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The public SQL entry points (kelt/transform.h) over DuckDbSession.
#include <arrow/api.h>

#include "kelt/common/arrow_status.h"
#include "kelt/iceberg/catalog.h"
#include "kelt/iceberg/file_io.h"
#include "kelt/iceberg/table.h"
#include "kelt/landing/filesystem.h"
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
      // Metadata, manifests and data files may be on S3 (an s3:// warehouse): read
      // through the source's S3 settings (empty: the AWS defaults and environment).
      const internal::ObjectStoreOptions s3{source.s3_endpoint, source.s3_region,
                                            source.s3_access_key, source.s3_secret_key};
      const iceberg::FileIO io(s3);
      KELT_ASSIGN_OR_RAISE(auto table, iceberg::LoadTable(*catalog, id, io));
      if (!table) {
        return Status::NotFound("transform: no Iceberg table " + source.table + " in " +
                                catalog->name());
      }
      KELT_ASSIGN_OR_RAISE(auto locations,
                           iceberg::CurrentDataFiles(table->metadata, io));
      transform::LandedFiles files;
      for (const auto& l : locations) {
        if (iceberg::FileIO::IsS3(l)) {
          // One S3 file system for the table; its paths are "bucket/key".
          if (!files.fs) {
            const std::string bucket = l.substr(5, l.find('/', 5) - 5);
            KELT_ASSIGN_OR_RAISE(
                internal::FileSystemRoot root,
                internal::OpenFileSystemRoot("s3://" + bucket, s3,
                                             /*create=*/false, "transform"));
            files.fs = root.fs;
            files.local = false;
          } else if (files.local) {
            return Status::NotImplemented("transform: Iceberg table " + source.table +
                                          " has data files both local and on S3");
          }
          files.files.push_back({l.substr(5), {}, false});
          continue;
        }
        if (!files.local) {
          return Status::NotImplemented("transform: Iceberg table " + source.table +
                                        " has data files both local and on S3");
        }
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
