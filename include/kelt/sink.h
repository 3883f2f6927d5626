// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Durable landing: the sinks that the ELT loop writes each loaded window to. Every sink
// stores the Kafka offsets with the data, so the resume point after a crash comes from
// the sink itself and a replay neither loses nor duplicates rows (KAFKA-NOTES.md,
// "Exactly-once landing").
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/offsets.h"
#include "kelt/status.h"

namespace arrow {
class RecordBatch;
class Schema;
}  // namespace arrow

namespace kelt {

/// One loaded window as a sink sees it.
struct SinkWindow {
  /// Landed rows (the landing schema). Rows carry `_kafka_topic`, `_kafka_partition`
  /// and `_kafka_offset` when the landing schema has them; sinks that need them say so
  /// in Open().
  std::shared_ptr<arrow::RecordBatch> batch;
  /// Bad records under the dead_letter policy (DeadLetterSchema()), maybe zero rows.
  std::shared_ptr<arrow::RecordBatch> dead_letters;
  /// The offsets the window covers per partition, bad records included: after the
  /// window is durable, each partition resumes at last_offset + 1.
  std::vector<PartitionSpan> spans;
};

/// A durable destination. Calls are serialized: the ELT loop makes one call at a time,
/// from its own thread or from a task of its executor (the window being written while
/// the next is polled), never two at once. A sink needs no lock of its own for that.
///
/// Protocol: Open() once; Resume() for partitions as they are assigned; Write() each
/// window in offset order; Flush() to make everything written durable (rotation,
/// shutdown); Drop() when partitions are lost before they were flushed; Close().
/// Write/Flush/Tick return the partitions whose durable next offset advanced: only those
/// offsets may be committed to Kafka. After one of them failed, flush again (the
/// Parquet sink resumes where it failed and refuses more rows for a file it could not
/// finish) or Drop the partitions concerned and read them again from their durable
/// points; the ELT loop does the latter for a failed sink.
class Sink {
 public:
  virtual ~Sink() = default;

  /// Human-readable destination for messages ("parquet:/data/landing", …); never holds
  /// a secret.
  virtual std::string name() const = 0;

  /// Prepare the destination for batches of `landing` and `dead_letter` schema: create
  /// tables or directories, remove leftovers of an interrupted write.
  virtual Status Open(const std::shared_ptr<arrow::Schema>& landing,
                      const std::shared_ptr<arrow::Schema>& dead_letter) = 0;

  /// The next offset already durable in the sink for each of `partitions` that it holds
  /// data for (absent: nothing stored; the group's committed offset applies).
  virtual Result<OffsetMap> Resume(const std::vector<TopicPartition>& partitions) = 0;

  /// Write one window (records at or after each partition's resume point only).
  virtual Result<OffsetMap> Write(const SinkWindow& window) = 0;

  /// Make everything written so far durable.
  virtual Result<OffsetMap> Flush() = 0;

  /// Called between windows: a sink that rotates by age flushes here.
  virtual Result<OffsetMap> Tick(std::chrono::steady_clock::time_point now) {
    return OffsetMap{};
  }

  /// The landing schema grew (a newer version of a registry subject added fields):
  /// `landing` has every column of the current landing schema, by name, with the same
  /// Arrow type (nullability aside), plus new nullable columns, in any order. Later
  /// windows' batches have this schema. Rows already landed read the new columns as
  /// null. Called between windows. The default refuses (kNotImplemented naming the sink).
  virtual Status Evolve(const std::shared_ptr<arrow::Schema>& landing);

  /// Forget whatever is not yet durable for `partitions` (lost in a rebalance: their
  /// next owner re-reads those records from the durable point).
  virtual Status Drop(const std::vector<TopicPartition>& partitions) = 0;

  /// Flush and release resources.
  virtual Status Close() = 0;
};

// --- Parquet ----------------------------------------------------------------------

/// The codec of Parquet pages.
enum class ParquetCompression : uint8_t { kZstd, kSnappy, kGzip, kLz4, kNone };
/// "zstd", "snappy", "gzip", "lz4" or "none".
std::string_view ParquetCompressionName(ParquetCompression compression);
std::optional<ParquetCompression> ParseParquetCompression(std::string_view name);

/// Which columns get a dictionary.
enum class ParquetDictionary : uint8_t {
  /// Columns that repeat values (utf8, binary, bool, date, _kafka_topic,
  /// _kafka_partition, …; not text that the first rows show mostly distinct), not
  /// numbers and timestamps, whose dictionaries cost time and memory for mostly unique
  /// values.
  kAuto,
  kAll,
  kNone,
};
/// "auto", "all" or "none".
std::string_view ParquetDictionaryName(ParquetDictionary dictionary);
std::optional<ParquetDictionary> ParseParquetDictionary(std::string_view name);

/// The encoding of integer and timestamp columns written without a dictionary.
enum class ParquetIntegerEncoding : uint8_t {
  /// DELTA_BINARY_PACKED: offsets and event times shrink to a few bits a value before
  /// compression, which then has less to do.
  kDelta,
  kPlain,
};
/// "delta" or "plain".
std::string_view ParquetIntegerEncodingName(ParquetIntegerEncoding encoding);
std::optional<ParquetIntegerEncoding> ParseParquetIntegerEncoding(std::string_view name);

struct ParquetSinkOptions {
  /// A local directory or an object-store URI (`s3://bucket/prefix`). Files land as
  /// `<root>/<topic>/[<hive
  /// dirs>/]<topic>+<partition>+<first>+<last>[+<k>of<n>].parquet`.
  std::string root;
  /// For `s3://`: endpoint override (`http://127.0.0.1:9000`), region, credentials
  /// (never logged), path-style addressing. Empty: the AWS defaults and environment.
  std::string s3_endpoint;
  std::string s3_region;
  std::string s3_access_key;
  std::string s3_secret_key;
  /// Hive-style directories `<name>=<value>` from a landing column (escaped; no value
  /// can leave the root), empty for none.
  std::string partition_by;
  /// For a Timestamp/Date `partition_by` column: strftime-like layout with %Y %m %d %H
  /// producing nested `key=value` directories, e.g. "year=%Y/month=%m/day=%d".
  std::string time_layout;
  /// Rotation: a partition's open file is finalized when it holds this many records or
  /// bytes (in memory, before compression) or is this old. Whatever rotates first.
  int64_t rotate_records = 1'000'000;
  int64_t rotate_bytes = 128ll << 20;
  std::chrono::milliseconds rotate_age{60'000};
  ParquetCompression compression = ParquetCompression::kZstd;
  ParquetDictionary dictionary = ParquetDictionary::kAuto;
  ParquetIntegerEncoding integer_encoding = ParquetIntegerEncoding::kDelta;
  /// Where dead-letter batches go, relative to root; empty: "_dead_letter".
  std::string dead_letter_dir = "_dead_letter";
};

Result<std::unique_ptr<Sink>> MakeParquetSink(ParquetSinkOptions options);

/// RDP's export_dataset_to_parquet and its object-store sibling: write `batch` as one
/// Parquet file (zstd) at `path` (local, or `s3://bucket/key` with `storage`'s S3
/// settings). Local files appear atomically (temporary name, fsync, rename).
Status ExportToParquet(const arrow::RecordBatch& batch, const std::string& path,
                       const ParquetSinkOptions& storage = {});

// --- DuckDB -------------------------------------------------------------------------

struct DuckDbSinkOptions {
  /// Database file (created if missing).
  std::string path;
  /// Landing table (schema-qualified names allowed: "main.events").
  std::string table = "landing";
  /// Table for dead letters; empty: "<table>_dead_letter".
  std::string dead_letter_table;
  /// Offsets table keyed by (group, topic, partition).
  std::string offsets_table = "_kelt_offsets";
  /// The consumer group the offsets belong to.
  std::string group_id;
  /// Create a UNIQUE index on (_kafka_topic, _kafka_partition, _kafka_offset) of the
  /// landing and dead-letter tables when they have those columns: a record stored twice
  /// fails the window instead of duplicating a row. Costs append speed (sink/README.md).
  bool unique_offsets_index = true;
};

Result<std::unique_ptr<Sink>> MakeDuckDbSink(DuckDbSinkOptions options);

// --- PostgreSQL ----------------------------------------------------------------------

struct PostgresSinkOptions {
  /// libpq connection string or URI (its password is never logged).
  std::string conninfo;
  /// Landing table, "schema.table" or "table".
  std::string table = "landing";
  std::string dead_letter_table;  ///< empty: "<table>_dead_letter"
  std::string offsets_table = "kelt_offsets";
  std::string group_id;
  bool create_table_if_missing = true;
  /// PostgreSQL TEXT cannot hold a NUL byte. false (default): a text value with one fails
  /// the window with an error naming the table, column and record; true: each NUL lands
  /// as U+FFFD.
  bool replace_nul_in_text = false;
};

Result<std::unique_ptr<Sink>> MakePostgresSink(PostgresSinkOptions options);

/// The password a PostgreSQL connection string (a URI: in its user info or
/// `?password=`; or keywords: `password=`) holds, or "" (also when libpq cannot parse
/// it): what a front end cuts from its own output.
std::string PostgresConnectionPassword(std::string_view conninfo);

// --- Apache Iceberg ------------------------------------------------------------------

struct IcebergSinkOptions {
  /// The SQL catalog: a SQLite file (created if missing) or a PostgreSQL database
  /// (`postgresql://…` or `postgres://…`, a libpq URI; its password is never shown),
  /// holding the `iceberg_tables` and `iceberg_namespace_properties` tables of
  /// Iceberg's JdbcCatalog and pyiceberg's SqlCatalog (created if missing).
  std::string catalog;
  /// The catalog's name (the `catalog_name` column; pyiceberg's SqlCatalog(name)).
  std::string catalog_name = "kelt";
  /// Warehouse: a local directory or `s3://bucket/prefix`; a new table lives at
  /// `<warehouse>/<namespace>/<table>`.
  std::string warehouse;
  /// S3 settings for an `s3://` warehouse (as ParquetSinkOptions'): endpoint override,
  /// region, credentials; empty: the AWS defaults and environment.
  std::string s3_endpoint;
  std::string s3_region;
  std::string s3_access_key;
  std::string s3_secret_key;
  std::string table_namespace = "default";
  std::string table = "landing";
  /// Partition spec of a new table: comma-separated `column` (identity) or
  /// `year(column)`, `month(column)`, `day(column)`, `hour(column)`,
  /// `bucket[N](column)`, e.g. "day(event_time), bucket[16](user_id), country". Empty:
  /// unpartitioned. An existing table's spec must match.
  std::string partition;
  /// The consumer group the offsets in the snapshot summaries belong to.
  std::string group_id;
};

/// Land windows into an Iceberg (format version 2) table: one Parquet data file per
/// Kafka partition and window, committed as one `append` snapshot whose summary holds
/// the group's next offsets (`kelt.offsets.<group>`); the catalog's compare-and-swap
/// fences a writer that lost its partitions (sink/README.md, "Iceberg"). Dead letters
/// land, once each, in the sibling table `<table>_dead_letter`.
Result<std::unique_ptr<Sink>> MakeIcebergSink(IcebergSinkOptions options);

// --- Iceberg table maintenance (`kelt iceberg expire|compact`) -----------------------

/// The table a maintenance operation works on: its catalog (as IcebergSinkOptions'),
/// namespace and name; the S3 settings are used for an `s3://` table location.
struct IcebergTableRef {
  std::string catalog;
  std::string catalog_name = "kelt";
  std::string table_namespace;
  std::string table;
  std::string s3_endpoint;
  std::string s3_region;
  std::string s3_access_key;
  std::string s3_secret_key;
};

struct IcebergExpireOptions {
  /// Snapshots committed before this time (milliseconds since the epoch) may expire.
  int64_t older_than_ms = 0;
  /// The newest snapshots of the current lineage always kept (at least 1).
  int retain_last = 1;
};

struct IcebergExpireResult {
  std::vector<int64_t> expired;  ///< ids of the snapshots expired (empty: none)
  int64_t snapshots_kept = 0;
  int64_t data_files_deleted = 0;
  int64_t manifests_deleted = 0;
  int64_t manifest_lists_deleted = 0;
  /// Files only expired snapshots referenced that lie outside the table's location:
  /// never deleted (a path in a manifest is data), listed for the operator.
  std::vector<std::string> files_outside_table;
};

/// Expire the snapshots committed before `older_than_ms` — never the current one, nor
/// the newest `retain_last`, nor the lineage down to the newest snapshot holding each
/// group's offsets (so a sink resumes where it would have) — committing the new
/// metadata with the catalog's compare-and-swap (a lost swap re-reads the table), then
/// delete the manifest lists, manifests and data files no kept snapshot references.
/// Safe while a run lands into the table.
Result<IcebergExpireResult> ExpireIcebergSnapshots(const IcebergTableRef& table,
                                                   const IcebergExpireOptions& options);

struct IcebergCompactOptions {
  /// Data files smaller than this are rewritten, into files of about this size.
  int64_t target_file_size = int64_t{128} << 20;
  /// A partition is compacted when it has at least this many small files (at least 2).
  int min_files = 2;
};

struct IcebergCompactResult {
  bool committed = false;  ///< false: nothing to compact, the table is unchanged
  int64_t snapshot_id = 0;
  int64_t files_rewritten = 0;
  int64_t files_written = 0;
  int64_t partitions = 0;
  int64_t records = 0;
  int attempts = 0;
};

/// Rewrite each partition's small data files of the current snapshot into larger
/// Parquet files (the sink's writer and field ids) and commit them as one `replace`
/// snapshot whose summary carries every group's offsets (`kelt.offsets.*`), by the
/// catalog's compare-and-swap; a lost swap removes that attempt's files and plans again
/// on top (a few times, then an error). The replaced files stay for readers of older
/// snapshots until ExpireIcebergSnapshots. Safe while a run lands into the table.
Result<IcebergCompactResult> CompactIcebergTable(const IcebergTableRef& table,
                                                 const IcebergCompactOptions& options);

/// An Iceberg catalog location as it may be shown: a PostgreSQL catalog as
/// `postgresql://user@host:port/db`, never with its password; a SQLite file as given.
std::string IcebergCatalogShown(const std::string& catalog);

}  // namespace kelt
