// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The writer settings of landed rows (parquet_writing.h), shared by the Parquet sink and
// the Iceberg sink's data files.
#include "kelt/sink/parquet_writing.h"

#include <arrow/array.h>
#include <arrow/io/file.h>
#include <arrow/type_traits.h>
#include <fcntl.h>
#include <parquet/arrow/writer.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string_view>
#include <unordered_set>

#include "kelt/common/arrow_status.h"
#include "kelt/common/memory_pool.h"

namespace kelt::internal {
namespace {

// Whether dictionary encoding is likely to pay for a column (ParquetSinkOptions
// "auto"): numbers and timestamps are mostly unique (offsets, ids, amounts, event
// times), and their dictionaries cost a hash table per column chunk for nothing.
bool DictionaryPays(const arrow::Field& f) {
  if (f.name() == "_kafka_partition") return true;
  const arrow::Type::type id = f.type()->id();
  return !(arrow::is_integer(id) || arrow::is_floating(id) ||
           id == arrow::Type::TIMESTAMP);
}

// The "auto" check on data: whether a text column's values at the start of a file are
// mostly distinct (ids, hashes, free text). Its dictionary would hash every value and
// store each once more, so the file writes it plain. Looks at up to 1,024 rows spread
// over the first slice; "mostly" is more than 3/4 of the sampled values.
bool MostlyDistinct(const arrow::Array& a) {
  if (a.type_id() != arrow::Type::STRING && a.type_id() != arrow::Type::BINARY) {
    return false;
  }
  const auto& text = static_cast<const arrow::BinaryArray&>(a);
  const int64_t n = text.length();
  const int64_t samples = std::min<int64_t>(n, 1024);
  std::unordered_set<std::string_view> seen;
  int64_t present = 0;
  for (int64_t k = 0; k < samples; ++k) {
    const int64_t row = k * n / samples;
    if (text.IsNull(row)) continue;
    ++present;
    seen.insert(text.GetView(row));
  }
  return present >= 64 && static_cast<int64_t>(seen.size()) * 4 > present * 3;
}

// Whether a text column's sampled values (as MostlyDistinct samples them) never go
// down: keys that grow (ULIDs, text timestamps) keep min/max statistics that prune.
bool SampleSorted(const arrow::Array& a) {
  const auto& text = static_cast<const arrow::BinaryArray&>(a);
  const int64_t n = text.length();
  const int64_t samples = std::min<int64_t>(n, 1024);
  std::optional<std::string_view> last;
  for (int64_t k = 0; k < samples; ++k) {
    const int64_t row = k * n / samples;
    if (text.IsNull(row)) continue;
    const std::string_view v = text.GetView(row);
    if (last && v < *last) return false;
    last = v;
  }
  return true;
}

}  // namespace

Status SyncPath(const std::string& path, bool directory) {
  int fd =
      ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0)
    return Status::IOError("opening '" + path + "' to sync it: " + std::strerror(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return Status::IOError("fsync of '" + path + "': " + std::strerror(err));
  return Status::OK();
}

std::string RandomToken() {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ (counter++ << 17) ^
               static_cast<uint64_t>(::getpid());
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

parquet::Compression::type ParquetCodec(ParquetCompression compression) {
  switch (compression) {
    case ParquetCompression::kZstd:
      return parquet::Compression::ZSTD;
    case ParquetCompression::kSnappy:
      return parquet::Compression::SNAPPY;
    case ParquetCompression::kGzip:
      return parquet::Compression::GZIP;
    case ParquetCompression::kLz4:
      return parquet::Compression::LZ4;
    case ParquetCompression::kNone:
      return parquet::Compression::UNCOMPRESSED;
  }
  return parquet::Compression::ZSTD;
}

std::shared_ptr<parquet::WriterProperties> LandingWriterProperties(
    const arrow::Schema& schema, const ParquetSinkOptions& o) {
  parquet::WriterProperties::Builder wp;
  wp.memory_pool(WindowPool());
  wp.compression(ParquetCodec(o.compression));
  wp.max_row_group_length(1 << 20);
  if (o.dictionary == ParquetDictionary::kNone) {
    wp.disable_dictionary();
  } else if (o.dictionary == ParquetDictionary::kAuto) {
    for (const auto& f : schema.fields()) {
      if (!DictionaryPays(*f)) wp.disable_dictionary(f->name());
    }
  }
  if (o.integer_encoding == ParquetIntegerEncoding::kDelta) {
    const auto unencoded = wp.build();  // to ask which columns keep a dictionary
    for (const auto& f : schema.fields()) {
      const arrow::Type::type id = f->type()->id();
      if ((arrow::is_integer(id) || id == arrow::Type::TIMESTAMP) &&
          !unencoded->dictionary_enabled(
              parquet::schema::ColumnPath::FromDotString(f->name()))) {
        wp.encoding(f->name(), parquet::Encoding::DELTA_BINARY_PACKED);
      }
    }
  }
  return wp.build();
}

// Text columns that `first_rows` shows mostly distinct lose their dictionary (an
// "auto" one) and, when their sampled values are not in order (hashes, random ids, free
// text), their min/max statistics: a row group of a window of them spans nearly the
// whole range, so no reader prunes by it, and comparing every value cost ~8% of the ELT
// loop's CPU (bench/README.md). Numbers, timestamps, low-cardinality text and text
// that grows keep their statistics.
std::shared_ptr<parquet::WriterProperties> PropertiesForFirstRows(
    const std::shared_ptr<parquet::WriterProperties>& base, ParquetDictionary dictionary,
    const arrow::RecordBatch* first_rows) {
  if (first_rows == nullptr) return base;
  std::shared_ptr<parquet::WriterProperties::Builder> b;
  for (int c = 0; c < first_rows->num_columns(); ++c) {
    const std::string& name = first_rows->schema()->field(c)->name();
    const arrow::Array& column = *first_rows->column(c);
    if (!MostlyDistinct(column)) continue;
    const auto path = parquet::schema::ColumnPath::FromDotString(name);
    if (dictionary == ParquetDictionary::kAuto && base->dictionary_enabled(path)) {
      if (!b) b = std::make_shared<parquet::WriterProperties::Builder>(*base);
      b->disable_dictionary(name);
    }
    if (base->statistics_enabled(path) && !SampleSorted(column)) {
      if (!b) b = std::make_shared<parquet::WriterProperties::Builder>(*base);
      b->disable_statistics(name);
    }
  }
  return b ? b->build() : base;
}

std::shared_ptr<parquet::ArrowWriterProperties> LandingArrowWriterProperties() {
  parquet::ArrowWriterProperties::Builder ap;
  ap.store_schema();
  // Timestamps keep their unit (ms, µs and ns are Parquet units; seconds become ms):
  // coercing ns to µs would fail on any sub-µs digit.
  ap.set_use_threads(false);
  return ap.build();
}

Status WriteLandingParquetFile(const arrow::RecordBatch& batch, const std::string& path,
                               bool durable, const ParquetSinkOptions& o,
                               std::vector<int>* without_statistics) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string file = slash == std::string::npos ? path : path.substr(slash + 1);
  if (file.empty()) return Status::Invalid("parquet path '" + path + "' names no file");
  const std::string temp = (slash == std::string::npos ? "" : dir) + "." + file + "." +
                           RandomToken() + ".inprogress";
  const auto props = PropertiesForFirstRows(LandingWriterProperties(*batch.schema(), o),
                                            o.dictionary, &batch);
  if (without_statistics) {
    without_statistics->clear();
    for (int c = 0; c < batch.num_columns(); ++c) {
      if (!props->statistics_enabled(parquet::schema::ColumnPath::FromDotString(
              batch.schema()->field(c)->name()))) {
        without_statistics->push_back(c);
      }
    }
  }
  arrow::Status st;
  {
    auto out = arrow::io::FileOutputStream::Open(temp);
    if (!out.ok()) {
      return Status::IOError("writing parquet '" + path +
                             "': " + ArrowMessage(out.status()));
    }
    auto w = parquet::arrow::FileWriter::Open(*batch.schema(), WindowPool(), *out, props,
                                              LandingArrowWriterProperties());
    st = w.ok() ? (*w)->WriteRecordBatch(batch) : w.status();
    if (st.ok()) st = (*w)->Close();
    arrow::Status closed = (*out)->Close();
    if (st.ok()) st = closed;
  }
  if (!st.ok()) {
    std::remove(temp.c_str());
    return Status::IOError("writing parquet '" + path + "': " + ArrowMessage(st));
  }
  if (durable) {
    if (Status synced = SyncPath(temp, false); !synced.ok()) {
      std::remove(temp.c_str());
      return synced;
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::remove(temp.c_str());
    return Status::IOError("renaming to '" + path + "': " + ec.message());
  }
  return Status::OK();
}

}  // namespace kelt::internal
