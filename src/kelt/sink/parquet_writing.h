// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// How sink/ writes Parquet files: the writer settings of landed rows, shared by the
// Parquet sink and the Iceberg sink's data files (and compaction), so both encode a
// window alike (sink/README.md, "Parquet" and "Iceberg"). Internal to sink/.
#pragma once

#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <parquet/properties.h>

#include <memory>
#include <string>
#include <vector>

#include "kelt/sink.h"

namespace kelt::internal {

/// The codec of a ParquetSinkOptions compression.
parquet::Compression::type ParquetCodec(ParquetCompression compression);

/// The writer properties of files of `schema` under `o`'s compression, dictionary and
/// integer encoding settings (set by column name): dictionary "auto" keeps one for text,
/// bool, date and `_kafka_partition`, not for numbers and timestamps; integers and
/// timestamps without a dictionary are delta-encoded (`kDelta`).
std::shared_ptr<parquet::WriterProperties> LandingWriterProperties(
    const arrow::Schema& schema, const ParquetSinkOptions& o);

/// The properties of one new file from `base`, given its first rows: minus the
/// dictionary (dictionary "auto") of text columns those rows show mostly distinct, and
/// minus min/max statistics for those of them whose sampled values are not in order.
/// `first_rows` null: `base`.
std::shared_ptr<parquet::WriterProperties> PropertiesForFirstRows(
    const std::shared_ptr<parquet::WriterProperties>& base, ParquetDictionary dictionary,
    const arrow::RecordBatch* first_rows);

/// The Arrow writer properties of landed files: the Arrow schema stored, no threads of
/// the writer's own (a window's files are written in parallel instead).
std::shared_ptr<parquet::ArrowWriterProperties> LandingArrowWriterProperties();

/// fsync a file or a directory.
Status SyncPath(const std::string& path, bool directory);

/// 16 random hex digits.
std::string RandomToken();

/// Write `batch` as one local Parquet file at `path` with the landing settings of `o`
/// (LandingWriterProperties, then PropertiesForFirstRows on the batch): written under
/// the hidden name `.<file>.<token>.inprogress` beside it, fsynced when `durable`,
/// renamed; the directory is not synced (the caller syncs it once for its files). On
/// failure nothing is left at either name. `without_statistics`, if given, receives the
/// indices of the columns written without min/max statistics.
Status WriteLandingParquetFile(const arrow::RecordBatch& batch, const std::string& path,
                               bool durable, const ParquetSinkOptions& o = {},
                               std::vector<int>* without_statistics = nullptr);

}  // namespace kelt::internal
