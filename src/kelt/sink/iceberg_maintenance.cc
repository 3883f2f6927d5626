// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The public face of Iceberg table maintenance (include/kelt/sink.h): opens the catalog
// and the table's file I/O and hands iceberg/maintenance.cc the data files' reader and
// writer — Arrow's Parquet reader and the writer the sink lands with
// (internal::WriteLandingParquetFile: the Parquet sink's settings, the Arrow schema
// stored, each field's `PARQUET:field_id` kept), so a compacted file is encoded as a
// landed one and carries the same Iceberg field ids.

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <parquet/arrow/reader.h>

#include <filesystem>

#include "kelt/common/arrow_status.h"
#include "kelt/iceberg/catalog.h"
#include "kelt/iceberg/file_io.h"
#include "kelt/iceberg/maintenance.h"
#include "kelt/landing/filesystem.h"
#include "kelt/sink.h"
#include "kelt/sink/iceberg_maintenance.h"
#include "kelt/sink/parquet_writing.h"

namespace kelt {
namespace {

namespace ice = iceberg;

std::string Shown(const IcebergTableRef& t) {
  return "iceberg:" + t.table_namespace + "." + t.table + " (catalog " +
         ice::CatalogDisplayName(t.catalog) + ")";
}

struct Opened {
  std::unique_ptr<ice::Catalog> catalog;
  std::unique_ptr<ice::FileIO> io;
};

Result<Opened> Open(const IcebergTableRef& t) {
  if (t.catalog.empty()) return Status::Invalid("iceberg: a catalog is required");
  if (t.table_namespace.empty() || t.table.empty()) {
    return Status::Invalid("iceberg: a table is required (NAMESPACE.TABLE)");
  }
  if (!ice::IsPostgresCatalog(t.catalog)) {
    // Opening a SQLite catalog creates it: a mistyped path would read as "no table".
    std::error_code ec;
    if (!std::filesystem::exists(t.catalog, ec)) {
      return Status::NotFound(Shown(t) + ": no catalog file " + t.catalog);
    }
  }
  Opened o;
  auto catalog = ice::OpenCatalog(t.catalog, t.catalog_name);
  if (!catalog.ok()) return catalog.status().WithPrefix(Shown(t) + ": ");
  o.catalog = std::move(*catalog);
  o.io = std::make_unique<ice::FileIO>(internal::ObjectStoreOptions{
      t.s3_endpoint, t.s3_region, t.s3_access_key, t.s3_secret_key});
  return o;
}

Result<std::shared_ptr<arrow::RecordBatch>> ReadParquet(const std::string& path) {
  KELT_ARROW_ASSIGN_OR_RAISE(auto in, arrow::io::ReadableFile::Open(path));
  KELT_ARROW_ASSIGN_OR_RAISE(auto reader,
                             parquet::arrow::OpenFile(in, arrow::default_memory_pool()));
  KELT_ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Table> table, reader->ReadTable());
  KELT_ARROW_ASSIGN_OR_RAISE(auto batch, table->CombineChunksToBatch());
  return batch;
}

}  // namespace

Result<IcebergExpireResult> ExpireIcebergSnapshots(const IcebergTableRef& table,
                                                   const IcebergExpireOptions& options) {
  KELT_ASSIGN_OR_RAISE(Opened o, Open(table));
  ice::ExpireOptions eo;
  eo.older_than_ms = options.older_than_ms;
  eo.retain_last = options.retain_last;
  KELT_ASSIGN_OR_RAISE(
      ice::ExpireOutcome out,
      ice::ExpireSnapshots(*o.catalog, {table.table_namespace, table.table}, eo, *o.io));
  IcebergExpireResult r;
  r.expired = std::move(out.expired);
  r.snapshots_kept = out.snapshots_kept;
  r.data_files_deleted = out.data_files_deleted;
  r.manifests_deleted = out.manifests_deleted;
  r.manifest_lists_deleted = out.manifest_lists_deleted;
  r.files_outside_table = out.files_outside_table;
  return r;
}

ice::DataFileCodec IcebergDataFileCodec() {
  ice::DataFileCodec codec;
  codec.read = ReadParquet;
  codec.write = [](const arrow::RecordBatch& batch, const std::string& path) {
    KELT_RETURN_NOT_OK(internal::WriteLandingParquetFile(batch, path, /*durable=*/true));
    const size_t slash = path.rfind('/');
    return internal::SyncPath(slash == std::string::npos ? "." : path.substr(0, slash),
                              true);
  };
  return codec;
}

Result<IcebergCompactResult> CompactIcebergTable(const IcebergTableRef& table,
                                                 const IcebergCompactOptions& options) {
  KELT_ASSIGN_OR_RAISE(Opened o, Open(table));
  ice::CompactOptions co;
  co.target_file_size = options.target_file_size;
  co.min_files = options.min_files;
  KELT_ASSIGN_OR_RAISE(ice::CompactOutcome out,
                       ice::CompactTable(*o.catalog, {table.table_namespace, table.table},
                                         co, IcebergDataFileCodec(), *o.io));
  IcebergCompactResult r;
  r.committed = out.committed;
  r.snapshot_id = out.snapshot_id;
  r.files_rewritten = out.files_rewritten;
  r.files_written = out.files_written;
  r.partitions = out.partitions;
  r.records = out.records;
  r.attempts = out.attempts;
  return r;
}

}  // namespace kelt
