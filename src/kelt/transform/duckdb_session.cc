// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Arrow into DuckDB without a copy, through the stable (non-deprecated) C API of DuckDB
// 1.5.6. DuckDB's own `arrow_scan` table function cannot be reached from the C API: it
// takes pointers to C++ factory functions returning DuckDB C++ types, and its only C
// entry point, `duckdb_arrow_scan`, is deprecated. So kelt registers its own table
// function `kelt_arrow_scan(id)`: each scan exports the registered table as an
// ArrowArrayStream (arrow::ExportRecordBatchReader over ≤2048-row zero-copy slices),
// turns each ArrowArray into a DuckDB chunk with `duckdb_data_chunk_from_arrow` (which
// references the Arrow buffers) and hands its vectors to DuckDB's output chunk with
// `duckdb_vector_reference_vector` (no copy). Results come back with
// `duckdb_fetch_chunk` + `duckdb_data_chunk_to_arrow`.
#define DUCKDB_API_NO_DEPRECATED
#include "kelt/transform/duckdb_session.h"

#include <arrow/api.h>
#include <arrow/c/bridge.h>
#include <arrow/filesystem/localfs.h>
#include <arrow/filesystem/s3fs.h>
#include <duckdb.h>
#include <parquet/arrow/reader.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kelt/common/arrow_status.h"
#include "kelt/common/duckdb_handles.h"
#include "kelt/landing/filesystem.h"

namespace kelt::transform {
namespace {

using namespace internal::duckdb;  // NOLINT: the RAII handles (common/duckdb_handles.h)

std::mutex observer_mutex;
ScanObserver& Observer() {
  static ScanObserver observer;
  return observer;
}

/// Slices of at most `rows` rows of a table, without copying (the most one DuckDB
/// chunk takes is 2048 rows).
arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> SlicedReader(
    const std::shared_ptr<arrow::Table>& table, int64_t rows) {
  auto reader = std::make_shared<arrow::TableBatchReader>(table);
  reader->set_chunksize(rows);
  return std::static_pointer_cast<arrow::RecordBatchReader>(reader);
}

}  // namespace

/// A registered Arrow table: what a scan needs.
struct ArrowEntry {
  std::shared_ptr<arrow::Schema> schema;
  /// A fresh reader of batches of at most 2048 rows, once per scan.
  std::function<arrow::Result<std::shared_ptr<arrow::RecordBatchReader>>()> open;
  ConvertedSchemaPtr converted;
  std::vector<std::string> names;
  std::vector<LogicalTypePtr> types;
};

struct DuckDbSession::Impl {
  DatabasePtr db;
  ConnectionPtr con;
  std::map<int64_t, std::shared_ptr<ArrowEntry>> arrow_entries;
  std::map<std::string, int64_t> arrow_by_view;
  std::map<std::string, std::string> attached;  // path → alias
  int64_t next_id = 1;

  Status Error(std::string_view sql, std::string_view message) const {
    return Status::Invalid("sql: " + std::string(message) +
                           " (query: " + std::string(sql) + ")");
  }
};

namespace {

// ---- the kelt_arrow_scan table function
// ------------------------------------------------

struct ScanBind {
  std::shared_ptr<ArrowEntry> entry;
};

struct ScanState {
  ArrowArrayStream stream{};
  ChunkPtr current;  // keeps the last chunk's Arrow buffers alive while DuckDB reads
  ~ScanState() {
    if (stream.release) stream.release(&stream);
  }
};

void ScanBindFn(duckdb_bind_info info) {
  auto* impl = static_cast<DuckDbSession::Impl*>(duckdb_bind_get_extra_info(info));
  ValuePtr id(duckdb_bind_get_parameter(info, 0));
  auto it = impl->arrow_entries.find(duckdb_get_int64(id.get()));
  if (it == impl->arrow_entries.end()) {
    duckdb_bind_set_error(info, "kelt_arrow_scan: no such registered Arrow table");
    return;
  }
  const ArrowEntry& entry = *it->second;
  for (size_t i = 0; i < entry.names.size(); ++i) {
    duckdb_bind_add_result_column(info, entry.names[i].c_str(), entry.types[i].get());
  }
  duckdb_bind_set_bind_data(info, new ScanBind{it->second},
                            [](void* p) { delete static_cast<ScanBind*>(p); });
}

void ScanInitFn(duckdb_init_info info) {
  auto* bind = static_cast<ScanBind*>(duckdb_init_get_bind_data(info));
  duckdb_init_set_max_threads(info, 1);
  auto state = std::make_unique<ScanState>();
  auto reader = bind->entry->open();
  arrow::Status st = reader.ok() ? arrow::ExportRecordBatchReader(*reader, &state->stream)
                                 : reader.status();
  if (!st.ok()) {
    duckdb_init_set_error(info, st.ToString().c_str());
    return;
  }
  duckdb_init_set_init_data(info, state.release(),
                            [](void* p) { delete static_cast<ScanState*>(p); });
}

void ScanFn(duckdb_function_info info, duckdb_data_chunk output) {
  auto* impl = static_cast<DuckDbSession::Impl*>(duckdb_function_get_extra_info(info));
  auto* bind = static_cast<ScanBind*>(duckdb_function_get_bind_data(info));
  auto* state = static_cast<ScanState*>(duckdb_function_get_init_data(info));
  state->current.reset();
  ArrowArray array;
  for (;;) {
    if (state->stream.get_next(&state->stream, &array) != 0) {
      const char* error = state->stream.get_last_error(&state->stream);
      duckdb_function_set_error(info, error ? error : "arrow stream failed");
      return;
    }
    if (array.release == nullptr) {  // end of stream
      duckdb_data_chunk_set_size(output, 0);
      return;
    }
    if (array.length > 0) break;
    array.release(&array);
  }
  const idx_t rows = static_cast<idx_t>(array.length);
  // Remember where the Arrow values are, for the zero-copy check of the tests.
  std::vector<std::pair<const void*, int64_t>> arrow_values;
  {
    std::lock_guard lock(observer_mutex);
    if (Observer()) {
      for (int64_t c = 0; c < array.n_children; ++c) {
        const ArrowArray* child = array.children[c];
        arrow_values.emplace_back(child->n_buffers > 1 ? child->buffers[1] : nullptr,
                                  child->offset + array.offset);
      }
    }
  }
  duckdb_data_chunk raw = nullptr;
  ErrorPtr error(duckdb_data_chunk_from_arrow(impl->con.get(), &array,
                                              bind->entry->converted.get(), &raw));
  ChunkPtr chunk(raw);
  if (array.release) array.release(&array);
  if (error) {
    duckdb_function_set_error(info, duckdb_error_data_message(error.get()));
    return;
  }
  const idx_t columns = bind->entry->names.size();
  for (idx_t c = 0; c < columns; ++c) {
    duckdb_vector_reference_vector(duckdb_data_chunk_get_vector(output, c),
                                   duckdb_data_chunk_get_vector(chunk.get(), c));
  }
  duckdb_data_chunk_set_size(output, rows);
  {
    std::lock_guard lock(observer_mutex);
    if (Observer()) {
      for (idx_t c = 0; c < columns && c < arrow_values.size(); ++c) {
        Observer()(static_cast<int>(c),
                   duckdb_vector_get_data(duckdb_data_chunk_get_vector(output, c)),
                   arrow_values[c].first, arrow_values[c].second);
      }
    }
  }
  state->current = std::move(chunk);
}

Status RegisterScanFunction(DuckDbSession::Impl* impl) {
  TableFunctionPtr fn(duckdb_create_table_function());
  duckdb_table_function_set_name(fn.get(), "kelt_arrow_scan");
  LogicalTypePtr bigint(duckdb_create_logical_type(DUCKDB_TYPE_BIGINT));
  duckdb_table_function_add_parameter(fn.get(), bigint.get());
  duckdb_table_function_set_extra_info(fn.get(), impl, nullptr);
  duckdb_table_function_set_bind(fn.get(), ScanBindFn);
  duckdb_table_function_set_init(fn.get(), ScanInitFn);
  duckdb_table_function_set_function(fn.get(), ScanFn);
  if (duckdb_register_table_function(impl->con.get(), fn.get()) != DuckDBSuccess) {
    return Status::Internal("transform: cannot register kelt_arrow_scan");
  }
  return Status::OK();
}

}  // namespace

// ---- quoting
// ----------------------------------------------------------------------------

std::string QuoteLiteral(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out.push_back('\'');
    out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

std::string QuoteIdentifier(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

std::string QuoteTableName(std::string_view name) {
  size_t dot = name.find('.');
  if (dot == std::string_view::npos) return "main." + QuoteIdentifier(name);
  return QuoteIdentifier(name.substr(0, dot)) + "." +
         QuoteIdentifier(name.substr(dot + 1));
}

void SetScanObserverForTesting(ScanObserver observer) {
  std::lock_guard lock(observer_mutex);
  Observer() = std::move(observer);
}

// ---- landed files
// ----------------------------------------------------------------------

Result<LandedFiles> ListLandedFiles(const LandingSource& source) {
  if (source.topic.empty()) {
    return Status::Invalid("transform: a Parquet landing source needs a topic");
  }
  internal::ObjectStoreOptions s3{source.s3_endpoint, source.s3_region,
                                  source.s3_access_key, source.s3_secret_key};
  KELT_ASSIGN_OR_RAISE(
      internal::FileSystemRoot root,
      internal::OpenFileSystemRoot(source.location, s3, /*create=*/false, "transform"));
  auto listing = landing::ListTopic(
      root, source.topic,
      source.dead_letter_dir.empty() ? "_dead_letter" : source.dead_letter_dir);
  if (!listing.ok()) return listing.status().WithPrefix("transform: ");
  LandedFiles out;
  out.fs = root.fs;
  out.local = root.local;
  for (LandedFile& f : listing->complete) {
    if (f.dead_letter == source.dead_letters) out.files.push_back(std::move(f));
  }
  return out;
}

// ---- the session
// ------------------------------------------------------------------------

DuckDbSession::DuckDbSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DuckDbSession::~DuckDbSession() {
  if (impl_) {
    impl_->con.reset();
    impl_->db.reset();
  }
}

Result<std::unique_ptr<DuckDbSession>> DuckDbSession::Open(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  duckdb_config raw_config = nullptr;
  if (duckdb_create_config(&raw_config) != DuckDBSuccess) {
    return Status::IOError("transform: cannot create a DuckDB config");
  }
  ConfigPtr config(raw_config);
  // Silent and offline: never fetch an extension (parquet is linked in).
  (void)duckdb_set_config(raw_config, "autoinstall_known_extensions", "false");
  (void)duckdb_set_config(raw_config, "autoload_known_extensions", "false");
  duckdb_database db = nullptr;
  char* error = nullptr;
  if (duckdb_open_ext(path.empty() ? nullptr : path.c_str(), &db, raw_config, &error) !=
      DuckDBSuccess) {
    std::string message = error ? error : "unknown error";
    duckdb_free(error);
    return Status::IOError("transform: cannot open DuckDB database " +
                           (path.empty() ? std::string(":memory:") : path) + ": " +
                           message);
  }
  impl->db.reset(db);
  duckdb_connection con = nullptr;
  if (duckdb_connect(db, &con) != DuckDBSuccess) {
    return Status::IOError("transform: cannot connect to DuckDB database " + path);
  }
  impl->con.reset(con);
  KELT_RETURN_NOT_OK(RegisterScanFunction(impl.get()));
  auto session = std::unique_ptr<DuckDbSession>(new DuckDbSession(std::move(impl)));
  // Instants come back as timestamp[us, UTC], kelt's landing type.
  (void)session->Exec("SET TimeZone = 'UTC'");
  return session;
}

Status DuckDbSession::Exec(std::string_view sql) {
  QueryResult result;
  std::string text(sql);
  if (duckdb_query(impl_->con.get(), text.c_str(), result.out()) != DuckDBSuccess) {
    return impl_->Error(sql, duckdb_result_error(&result.get()));
  }
  return Status::OK();
}

Result<std::shared_ptr<arrow::Table>> DuckDbSession::Query(std::string_view sql) {
  QueryResult result;
  std::string text(sql);
  if (duckdb_query(impl_->con.get(), text.c_str(), result.out()) != DuckDBSuccess) {
    return impl_->Error(sql, duckdb_result_error(&result.get()));
  }
  duckdb_result& res = result.get();
  const idx_t columns = duckdb_column_count(&res);
  std::vector<LogicalTypePtr> owned_types;
  std::vector<duckdb_logical_type> types;
  std::vector<const char*> names;
  for (idx_t c = 0; c < columns; ++c) {
    owned_types.emplace_back(duckdb_column_logical_type(&res, c));
    types.push_back(owned_types.back().get());
    names.push_back(duckdb_column_name(&res, c));
  }
  ArrowOptionsPtr options(duckdb_result_get_arrow_options(&res));
  ArrowSchema c_schema;
  ErrorPtr error(duckdb_to_arrow_schema(options.get(), types.data(), names.data(),
                                        columns, &c_schema));
  if (error) return impl_->Error(sql, duckdb_error_data_message(error.get()));
  KELT_ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Schema> schema,
                             arrow::ImportSchema(&c_schema));
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  for (;;) {
    ChunkPtr chunk(duckdb_fetch_chunk(res));
    if (!chunk) break;
    if (duckdb_data_chunk_get_size(chunk.get()) == 0) continue;
    ArrowArray c_array;
    ErrorPtr chunk_error(
        duckdb_data_chunk_to_arrow(options.get(), chunk.get(), &c_array));
    if (chunk_error) {
      return impl_->Error(sql, duckdb_error_data_message(chunk_error.get()));
    }
    KELT_ARROW_ASSIGN_OR_RAISE(auto batch, arrow::ImportRecordBatch(&c_array, schema));
    batches.push_back(std::move(batch));
  }
  KELT_ARROW_ASSIGN_OR_RAISE(auto table,
                             arrow::Table::FromRecordBatches(schema, std::move(batches)));
  return table;
}

Result<int64_t> DuckDbSession::QueryInt(std::string_view sql) {
  KELT_ASSIGN_OR_RAISE(auto table, Query(sql));
  if (table->num_columns() != 1 || table->num_rows() != 1) {
    return Status::Internal("transform: expected one value from: " + std::string(sql));
  }
  KELT_ARROW_ASSIGN_OR_RAISE(auto scalar, table->column(0)->GetScalar(0));
  if (!scalar->is_valid) return int64_t{0};
  KELT_ARROW_ASSIGN_OR_RAISE(auto cast, scalar->CastTo(arrow::int64()));
  return static_cast<const arrow::Int64Scalar&>(*cast).value;
}

namespace {

/// The rows of several Parquet files of one schema on an Arrow filesystem, read with
/// Arrow's Parquet reader in batches of at most 2048 rows, one file open at a time.
class ParquetFilesReader final : public arrow::RecordBatchReader {
 public:
  ParquetFilesReader(std::shared_ptr<arrow::fs::FileSystem> fs,
                     std::vector<std::string> paths,
                     std::shared_ptr<arrow::Schema> schema)
      : fs_(std::move(fs)), paths_(std::move(paths)), schema_(std::move(schema)) {}

  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }

  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
    for (;;) {
      if (!current_.batches) {
        if (next_ == paths_.size()) {
          batch->reset();
          return arrow::Status::OK();
        }
        ARROW_ASSIGN_OR_RAISE(current_, Open(*fs_, paths_[next_++]));
      }
      ARROW_RETURN_NOT_OK(current_.batches->ReadNext(batch));
      if (!*batch) {
        current_ = {};
        continue;
      }
      if (!(*batch)->schema()->Equals(*schema_, /*check_metadata=*/false)) {
        return arrow::Status::Invalid("landed file ", paths_[next_ - 1], " has schema ",
                                      (*batch)->schema()->ToString(), ", not ",
                                      schema_->ToString());
      }
      if ((*batch)->num_rows() > 0) return arrow::Status::OK();
    }
  }

  /// An open file: its batches borrow the file reader, which must outlive them.
  struct OpenFile {
    std::unique_ptr<parquet::arrow::FileReader> file;
    std::shared_ptr<arrow::RecordBatchReader> batches;
  };

  static arrow::Result<OpenFile> Open(arrow::fs::FileSystem& fs,
                                      const std::string& path) {
    OpenFile out;
    ARROW_ASSIGN_OR_RAISE(auto input, fs.OpenInputFile(path));
    ARROW_ASSIGN_OR_RAISE(out.file,
                          parquet::arrow::OpenFile(input, arrow::default_memory_pool()));
    out.file->set_batch_size(2048);
    ARROW_ASSIGN_OR_RAISE(auto batches, out.file->GetRecordBatchReader());
    out.batches = std::move(batches);
    return out;
  }

 private:
  std::shared_ptr<arrow::fs::FileSystem> fs_;
  std::vector<std::string> paths_;
  std::shared_ptr<arrow::Schema> schema_;
  size_t next_ = 0;
  OpenFile current_;
};

}  // namespace

Status DuckDbSession::RegisterArrow(const std::string& name,
                                    std::shared_ptr<arrow::Table> table) {
  if (!table) return Status::Invalid("transform: no table to register as " + name);
  return RegisterStream(name, table->schema(),
                        [table] { return SlicedReader(table, 2048); });
}

Status DuckDbSession::RegisterStream(
    const std::string& name, std::shared_ptr<arrow::Schema> schema,
    std::function<arrow::Result<std::shared_ptr<arrow::RecordBatchReader>>()> open) {
  auto entry = std::make_shared<ArrowEntry>();
  entry->schema = schema;
  entry->open = std::move(open);
  ArrowSchema c_schema;
  KELT_ARROW_RETURN_NOT_OK(arrow::ExportSchema(*schema, &c_schema));
  duckdb_arrow_converted_schema converted = nullptr;
  ErrorPtr error(duckdb_schema_from_arrow(impl_->con.get(), &c_schema, &converted));
  if (c_schema.release) c_schema.release(&c_schema);
  entry->converted.reset(converted);
  if (error) {
    return Status::Invalid("transform: cannot scan " + name + " (" + schema->ToString() +
                           "): " + duckdb_error_data_message(error.get()));
  }
  // DuckDB's column types: convert an empty batch of the schema and read them back.
  KELT_ARROW_ASSIGN_OR_RAISE(auto empty, arrow::RecordBatch::MakeEmpty(schema));
  ArrowArray c_array;
  KELT_ARROW_RETURN_NOT_OK(arrow::ExportRecordBatch(*empty, &c_array));
  duckdb_data_chunk raw = nullptr;
  ErrorPtr chunk_error(duckdb_data_chunk_from_arrow(impl_->con.get(), &c_array,
                                                    entry->converted.get(), &raw));
  ChunkPtr chunk(raw);
  if (c_array.release) c_array.release(&c_array);
  if (chunk_error) {
    return Status::Invalid("transform: cannot scan " + name + ": " +
                           duckdb_error_data_message(chunk_error.get()));
  }
  for (int c = 0; c < schema->num_fields(); ++c) {
    entry->names.push_back(schema->field(c)->name());
    entry->types.emplace_back(
        duckdb_vector_get_column_type(duckdb_data_chunk_get_vector(chunk.get(), c)));
  }
  // The view binds the scan at creation, so the entry is there first.
  int64_t id = impl_->next_id++;
  impl_->arrow_entries[id] = std::move(entry);
  Status st = Exec("CREATE OR REPLACE TEMP VIEW " + QuoteIdentifier(name) +
                   " AS SELECT * FROM kelt_arrow_scan(" + std::to_string(id) + ")");
  if (!st.ok()) {
    impl_->arrow_entries.erase(id);
    return st;
  }
  auto previous = impl_->arrow_by_view.find(name);
  if (previous != impl_->arrow_by_view.end()) {
    impl_->arrow_entries.erase(previous->second);
  }
  impl_->arrow_by_view[name] = id;
  return Status::OK();
}

Status DuckDbSession::RegisterParquetFiles(const std::string& name,
                                           const LandedFiles& landed) {
  const auto& files = landed.files;
  if (files.empty()) {
    return Status::NotFound("transform: no landed Parquet files for " + name);
  }
  if (!landed.local) {
    // No httpfs in kelt's DuckDB: Arrow reads the objects and streams them in.
    std::vector<std::string> paths;
    for (const LandedFile& f : files) paths.push_back(f.path);
    KELT_ARROW_ASSIGN_OR_RAISE(auto first,
                               ParquetFilesReader::Open(*landed.fs, paths[0]));
    auto schema = first.batches->schema();
    auto fs = landed.fs;
    return RegisterStream(
        name, schema,
        [fs, paths,
         schema]() -> arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> {
          return std::make_shared<ParquetFilesReader>(fs, paths, schema);
        });
  }
  std::string list = "[";
  for (size_t i = 0; i < files.size(); ++i) {
    if (i > 0) list += ", ";
    list += QuoteLiteral(files[i].path);
  }
  list += "]";
  // Every landing column, partition_by's included, is in the files: the Hive
  // directories would only add duplicates (as strings), so they are not read.
  return Exec("CREATE OR REPLACE TEMP VIEW " + QuoteIdentifier(name) +
              " AS SELECT * FROM read_parquet(" + list +
              ", hive_partitioning = false, union_by_name = true)");
}

Result<std::string> DuckDbSession::AttachReadOnly(const std::string& path) {
  auto it = impl_->attached.find(path);
  if (it != impl_->attached.end()) return it->second;
  std::string alias = "kelt_landing_" + std::to_string(impl_->attached.size() + 1);
  KELT_RETURN_NOT_OK(Exec("ATTACH " + QuoteLiteral(path) + " AS " +
                          QuoteIdentifier(alias) + " (READ_ONLY)"));
  impl_->attached[path] = alias;
  return alias;
}

}  // namespace kelt::transform
