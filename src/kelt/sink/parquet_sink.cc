// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Parquet sink: files in a local directory or an S3-compatible object store, with
// the offsets in the file names (the Kafka Connect / Secor pattern).
//
// Layout under the root:
//   <topic>/[<k>=<v>/…]<topic>+<partition>+<first>+<last>[+<i>of<n>].parquet
//   _dead_letter/<topic>/<same name>.parquet
// <first>/<last> are the offsets (20 digits, zero-padded) the rotation covers, bad
// records included; one rotation of one partition writes n files (Hive directories,
// dead letters), all named with the same range. A rotation counts only when all n
// files exist, so the resume point is max(last) + 1 over complete rotations, and a
// crash between two renames is undone (the stragglers are deleted, then re-read).
//
// Local files are written to a hidden in-progress name, fsynced, renamed, and the
// directory fsynced. Object-store files are built in memory (compressed) and uploaded
// in one upload per file (a PUT or a multipart upload) when the rotation closes: an
// object exists completely or not at all.
#include "kelt/landing/layout.h"
#include "kelt/sink.h"

#include <arrow/array.h>
#include <arrow/buffer.h>
#include <arrow/filesystem/localfs.h>
#include <arrow/filesystem/s3fs.h>
#include <arrow/io/buffered.h>
#include <arrow/io/file.h>
#include <arrow/io/memory.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>
#include <arrow/table.h>
#include <arrow/type.h>
#include <arrow/type_traits.h>
#include <arrow/util/byte_size.h>
#include <fcntl.h>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <unordered_set>

#include "kelt/common/arrow_status.h"
#include "kelt/common/memory_pool.h"
#include "kelt/common/parallel.h"
#include "kelt/landing/filesystem.h"
#include "kelt/log.h"
#include "kelt/sink/boundary_types.h"
#include "kelt/sink/parquet_writing.h"
#include "kelt/sink/schema_evolution.h"

namespace kelt {

namespace {

using internal::RandomToken;
using internal::SyncPath;

using Clock = std::chrono::steady_clock;

// The write buffer of each open local file: page headers, small pages and the footer's
// pieces go out together (one a partition and open rotation: 4 MB at 512 partitions;
// 32 KB cost 16 MB there for no CPU gain measured at 4 partitions).
constexpr int64_t kFileBufferBytes = 8 * 1024;

// --- file systems
// -----------------------------------------------------------------------

using Root = internal::FileSystemRoot;

Result<Root> OpenRoot(const ParquetSinkOptions& o) {
  internal::ObjectStoreOptions s3{o.s3_endpoint, o.s3_region, o.s3_access_key,
                                  o.s3_secret_key};
  return internal::OpenFileSystemRoot(o.root, s3, /*create=*/true, "parquet sink");
}

// --- the sink
// ---------------------------------------------------------------------------

// One file being written for one rotation (one Hive directory, or dead letters).
struct OpenFile {
  std::string rel_dir;  // relative to the root
  bool dead_letter = false;
  std::string temp_path;  // local: hidden in-progress path inside fs
  std::shared_ptr<arrow::io::OutputStream> out;
  std::shared_ptr<arrow::io::BufferOutputStream> memory;  // object store
  std::unique_ptr<parquet::arrow::FileWriter> writer;
  // This window's rows for the file, written as one row group at the end of the
  // window's Write (WriteWindowRows) and then released.
  std::vector<std::shared_ptr<arrow::RecordBatch>> window_rows;
  // Finishing it again after a failure picks up where the failure was:
  std::shared_ptr<arrow::Buffer> encoded;  // object store: the file, not yet uploaded
  bool published = false;                  // under its final name
};

// The open rotation of one partition.
struct Rotation {
  int64_t first = -1;
  int64_t last = -1;
  int64_t records = 0;  // offsets covered (bad records included)
  int64_t bytes = 0;    // Arrow bytes written
  Clock::time_point opened;
  std::map<std::pair<bool, std::string>, OpenFile> files;  // (dead letter?, dir)
  // Finishing it was tried and failed: it takes no more rows (the names of files
  // already published carry its range), only another attempt to finish it.
  bool finishing = false;
  // It cannot be published (a write into it failed; one of its files could not be
  // encoded, closed or fsynced; its directory could not be synced): every attempt fails
  // with this until the partition is dropped.
  Status broken;
};

// Same column names and types in the same order (nullability and metadata aside).
bool SameColumns(const arrow::Schema& a, const arrow::Schema& b) {
  if (a.num_fields() != b.num_fields()) return false;
  for (int i = 0; i < a.num_fields(); ++i) {
    if (a.field(i)->name() != b.field(i)->name() ||
        !a.field(i)->type()->Equals(*b.field(i)->type())) {
      return false;
    }
  }
  return true;
}

class ParquetSink final : public Sink {
 public:
  explicit ParquetSink(ParquetSinkOptions options) : o_(std::move(options)) {}
  ~ParquetSink() override {
    for (auto& [tp, rot] : rotations_) Abort(rot);
  }

  std::string name() const override { return "parquet:" + o_.root; }

  Status Open(const std::shared_ptr<arrow::Schema>& landing,
              const std::shared_ptr<arrow::Schema>& dead_letter) override {
    KELT_ASSIGN_OR_RAISE(root_, OpenRoot(o_));
    KELT_RETURN_NOT_OK(UseLanding(landing));
    dead_letter_ = dead_letter;
    if (o_.dead_letter_dir.empty()) o_.dead_letter_dir = "_dead_letter";
    if (o_.dead_letter_dir.find("..") != std::string::npos ||
        o_.dead_letter_dir[0] == '/') {
      return Status::Invalid("parquet sink dead_letter_dir must stay inside the root");
    }
    KELT_ASSIGN_OR_RAISE(dead_letter_props_, PropertiesOf(*dead_letter));
    arrow_props_ = internal::LandingArrowWriterProperties();
    // The I/O workers that finish rotations start now, with the sink, rather than at the
    // first rotation in the middle of a run (a service's thread count stays flat).
    internal::IoExecutor().Start();
    return Status::OK();
  }

  // A file has one schema: the open rotations of every partition end here, published
  // exactly as rotations that reached their size limit are (their durable points are
  // reported by the next Write/Flush/Tick), and the next rows start files of `landing`.
  // Dead-letter files end with their rotation; their schema does not change.
  Status Evolve(const std::shared_ptr<arrow::Schema>& landing) override {
    if (!landing_) return Status::Invalid(name() + ": Evolve before Open");
    KELT_RETURN_NOT_OK(internal::AddedColumns(*landing_, *landing, name()).status());
    OffsetMap advanced;
    // On failure the old schema stays: the rotations that did not finish take no more
    // rows, and Evolve (or Flush) can be called again.
    KELT_RETURN_NOT_OK(FinishWhere([](const Rotation&) { return true; }, &advanced));
    KELT_RETURN_NOT_OK(UseLanding(landing));  // no file is open: nothing else to switch
    for (const auto& [tp, next] : advanced) {
      unreported_[tp] = std::max(unreported_[tp], next);
    }
    return Status::OK();
  }

  Result<OffsetMap> Resume(const std::vector<TopicPartition>& partitions) override {
    std::set<std::string> topics;
    for (const auto& tp : partitions) topics.insert(tp.topic);
    std::set<TopicPartition> wanted(partitions.begin(), partitions.end());
    OffsetMap out;
    for (const std::string& topic : topics) {
      KELT_RETURN_NOT_OK(ScanTopic(topic, wanted, &out));
    }
    for (const auto& [tp, next] : out) durable_[tp] = next;
    for (const auto& tp : partitions) {
      if (!out.count(tp)) durable_.erase(tp);
    }
    return out;
  }

  Result<OffsetMap> Write(const SinkWindow& w) override {
    OffsetMap advanced;
    const arrow::RecordBatch& batch = *w.batch;
    // Columns are found by position: the batch must have the schema of Open (or of the
    // last Evolve).
    if (!SameColumns(*batch.schema(), *landing_)) {
      return Status::Invalid("parquet sink: batch schema " + batch.schema()->ToString() +
                             " is not the landing schema " + landing_->ToString());
    }
    // Rows come in runs of one partition: each run is written minus what is durable.
    auto& part = static_cast<const arrow::Int64Array&>(*batch.column(partition_col_));
    auto& off = static_cast<const arrow::Int64Array&>(*batch.column(offset_col_));
    if (topic_col_ < 0) {
      std::set<std::string> topics;
      for (const auto& s : w.spans) topics.insert(s.tp.topic);
      if (topics.size() > 1) {
        return Status::Invalid(
            "parquet sink: a window of several topics needs the _kafka_topic column");
      }
    }
    // Open rotations for every span first: a span may carry only bad records.
    for (const PartitionSpan& s : w.spans) KELT_RETURN_NOT_OK(Writable(s.tp));
    for (const PartitionSpan& s : w.spans) KELT_RETURN_NOT_OK(Extend(s));
    auto topic_col =
        topic_col_ < 0
            ? nullptr
            : std::static_pointer_cast<arrow::StringArray>(batch.column(topic_col_));
    const std::string single = w.spans.empty() ? "" : w.spans[0].tp.topic;
    Status st = WriteRuns(w.batch, topic_col.get(), single, part, off, false);
    if (st.ok() && w.dead_letters && w.dead_letters->num_rows() > 0) {
      st = WriteDeadLetters(w.dead_letters);
    }
    if (!st.ok()) {
      // The window's rotations now claim offsets whose rows may be missing.
      for (const PartitionSpan& s : w.spans) {
        Rotation& rot = rotations_[s.tp];
        if (rot.broken.ok()) rot.broken = st.WithPrefix("an earlier write failed: ");
      }
      return st;
    }
    // Rotate what is big enough.
    KELT_RETURN_NOT_OK(FinishWhere(
        [&](const Rotation& rot) {
          return rot.records >= o_.rotate_records || rot.bytes >= o_.rotate_bytes;
        },
        &advanced));
    return advanced;
  }

  Result<OffsetMap> Flush() override {
    OffsetMap advanced;
    KELT_RETURN_NOT_OK(FinishWhere([](const Rotation&) { return true; }, &advanced));
    return advanced;
  }

  Result<OffsetMap> Tick(Clock::time_point now) override {
    OffsetMap advanced;
    KELT_RETURN_NOT_OK(FinishWhere(
        [&](const Rotation& rot) { return now - rot.opened >= o_.rotate_age; },
        &advanced));
    return advanced;
  }

  Status Drop(const std::vector<TopicPartition>& partitions) override {
    for (const auto& tp : partitions) {
      auto it = rotations_.find(tp);
      if (it != rotations_.end()) {
        Abort(it->second);
        rotations_.erase(it);
      }
      durable_.erase(tp);
      unreported_.erase(tp);
    }
    return Status::OK();
  }

  Status Close() override {
    auto flushed = Flush();
    return flushed.status();
  }

 private:
  // Take `landing` as the schema of the landing files to come: the metadata columns'
  // positions, the partition_by column, the writer properties (set by column name).
  Status UseLanding(const std::shared_ptr<arrow::Schema>& landing) {
    int topic_col = landing->GetFieldIndex("_kafka_topic");
    int partition_col = landing->GetFieldIndex("_kafka_partition");
    int offset_col = landing->GetFieldIndex("_kafka_offset");
    if (partition_col < 0 || offset_col < 0) {
      return Status::Invalid(
          "parquet sink needs the _kafka_partition and _kafka_offset columns in the "
          "landing schema (file names carry the offsets)");
    }
    for (int col : {partition_col, offset_col, topic_col}) {
      if (col < 0) continue;
      const auto& f = landing->field(col);
      const arrow::Type::type want =
          col == topic_col ? arrow::Type::STRING : arrow::Type::INT64;
      if (f->type()->id() != want) {
        return Status::Invalid("parquet sink: column '" + f->name() + "' must be " +
                               (want == arrow::Type::STRING ? "utf8" : "int64") +
                               ", not " + f->type()->ToString());
      }
    }
    int by_col = -1;
    if (!o_.partition_by.empty()) {
      by_col = landing->GetFieldIndex(o_.partition_by);
      if (by_col < 0) {
        return Status::Invalid("parquet sink partition_by: no landing column named '" +
                               o_.partition_by + "'");
      }
      auto type = landing->field(by_col)->type()->id();
      if (!o_.time_layout.empty() && type != arrow::Type::TIMESTAMP &&
          type != arrow::Type::DATE32) {
        return Status::Invalid(
            "parquet sink time_layout needs a Timestamp or Date column, '" +
            o_.partition_by + "' is " + landing->field(by_col)->type()->ToString());
      }
      if (!o_.time_layout.empty()) KELT_RETURN_NOT_OK(CheckTimeLayout());
    } else if (!o_.time_layout.empty()) {
      return Status::Invalid("parquet sink time_layout needs partition_by");
    }
    KELT_ASSIGN_OR_RAISE(auto writer_props, PropertiesOf(*landing));
    landing_ = landing;
    landing_file_ = internal::BoundarySchema(landing, FileRules());
    topic_col_ = topic_col;
    partition_col_ = partition_col;
    offset_col_ = offset_col;
    by_col_ = by_col;
    writer_props_ = std::move(writer_props);
    return Status::OK();
  }

  Status CheckTimeLayout() const {
    const std::string& l = o_.time_layout;
    for (size_t i = 0; i < l.size(); ++i) {
      if (l[i] == '%') {
        if (i + 1 >= l.size() ||
            std::string_view("YmdH%").find(l[i + 1]) == std::string_view::npos) {
          return Status::Invalid("parquet sink time_layout '" + l +
                                 "': only %Y %m %d %H are supported");
        }
        ++i;
      }
    }
    // Every component must be key=value so no directory name can be "." or "..".
    size_t start = 0;
    while (start <= l.size()) {
      size_t slash = l.find('/', start);
      std::string comp =
          l.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
      size_t eq = comp.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == comp.size()) {
        return Status::Invalid("parquet sink time_layout '" + l +
                               "': every directory must read key=value");
      }
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    return Status::OK();
  }

  // Directory (relative to the topic directory) of one row, or "" without partition_by.
  std::string DirOf(const arrow::RecordBatch& batch, int64_t row) const {
    if (by_col_ < 0) return "";
    const arrow::Array& a = *batch.column(by_col_);
    const std::string key = EscapeHivePathValue(o_.partition_by);
    if (a.IsNull(row)) {
      if (o_.time_layout.empty()) return key + "=__HIVE_DEFAULT_PARTITION__";
      // Every key of the layout gets the default value.
      std::string out;
      size_t start = 0;
      const std::string& l = o_.time_layout;
      while (start <= l.size()) {
        size_t slash = l.find('/', start);
        std::string comp = l.substr(
            start, slash == std::string::npos ? std::string::npos : slash - start);
        if (!out.empty()) out += "/";
        out += EscapeHivePathValue(comp.substr(0, comp.find('='))) +
               "=__HIVE_DEFAULT_PARTITION__";
        if (slash == std::string::npos) break;
        start = slash + 1;
      }
      return out;
    }
    if (!o_.time_layout.empty()) {
      int64_t days, hour = 0;
      if (a.type_id() == arrow::Type::DATE32) {
        days = static_cast<const arrow::Date32Array&>(a).Value(row);
      } else {
        int64_t us = static_cast<const arrow::TimestampArray&>(a).Value(row);
        int64_t secs = us >= 0 ? us / 1'000'000 : -((-us + 999'999) / 1'000'000);
        days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
        hour = (secs - days * 86400) / 3600;
      }
      std::chrono::year_month_day ymd{std::chrono::sys_days{std::chrono::days{days}}};
      std::string out;
      const std::string& l = o_.time_layout;
      char buf[16];
      for (size_t i = 0; i < l.size(); ++i) {
        if (l[i] != '%') {
          out += l[i];
          continue;
        }
        switch (l[++i]) {
          case 'Y':
            std::snprintf(buf, sizeof(buf), "%04d", static_cast<int>(ymd.year()));
            break;
          case 'm':
            std::snprintf(buf, sizeof(buf), "%02u", static_cast<unsigned>(ymd.month()));
            break;
          case 'd':
            std::snprintf(buf, sizeof(buf), "%02u", static_cast<unsigned>(ymd.day()));
            break;
          case 'H':
            std::snprintf(buf, sizeof(buf), "%02d", static_cast<int>(hour));
            break;
          default:
            std::snprintf(buf, sizeof(buf), "%%");
        }
        out += EscapeHivePathValue(buf);
      }
      return out;
    }
    std::string value;
    switch (a.type_id()) {
      case arrow::Type::STRING:
        value = std::string(static_cast<const arrow::StringArray&>(a).GetView(row));
        break;
      case arrow::Type::INT64:
        value = std::to_string(static_cast<const arrow::Int64Array&>(a).Value(row));
        break;
      case arrow::Type::BOOL:
        value = static_cast<const arrow::BooleanArray&>(a).Value(row) ? "true" : "false";
        break;
      default: {
        auto scalar = a.GetScalar(row);
        value = scalar.ok() ? (*scalar)->ToString() : "";
      }
    }
    return key + "=" + EscapeHivePathValue(value);
  }

  std::string TopicDir(const std::string& topic, bool dead_letter) const {
    return landing::TopicDir(topic, dead_letter, o_.dead_letter_dir);
  }

  // Whether `tp`'s open rotation takes rows: not after a failed attempt to finish it.
  Status Writable(const TopicPartition& tp) const {
    auto it = rotations_.find(tp);
    if (it == rotations_.end() || (it->second.broken.ok() && !it->second.finishing)) {
      return Status::OK();
    }
    const Status& broken = it->second.broken;
    return Status::IOError("parquet sink: the open file of " + ToString(tp) +
                           " could not be finished (" +
                           (broken.ok() ? "flush again" : broken.message()) +
                           "); drop the partition to read it again");
  }

  Status Extend(const PartitionSpan& s) {
    auto [it, fresh] = rotations_.try_emplace(s.tp);
    Rotation& rot = it->second;
    if (fresh) {
      rot.first = s.first_offset;
      rot.opened = Clock::now();
      auto d = durable_.find(s.tp);
      if (d != durable_.end() && rot.first < d->second) rot.first = d->second;
    }
    if (s.last_offset > rot.last) {
      rot.records += s.last_offset - std::max(rot.last + 1, rot.first) + 1;
      rot.last = s.last_offset;
    }
    return Status::OK();
  }

  // The open file of `rot` for `dir`, opened when missing; `first_rows` are the rows
  // it will start with (for the "auto" dictionary choice), if any.
  Result<OpenFile*> FileFor(const TopicPartition& tp, Rotation& rot, bool dead_letter,
                            const std::string& dir,
                            const arrow::RecordBatch* first_rows = nullptr) {
    auto key = std::make_pair(dead_letter, dir);
    auto it = rot.files.find(key);
    if (it != rot.files.end()) return &it->second;
    OpenFile f;
    f.dead_letter = dead_letter;
    f.rel_dir = TopicDir(tp.topic, dead_letter) + (dir.empty() ? "" : "/" + dir);
    const auto& schema = dead_letter ? dead_letter_ : landing_file_;
    if (root_.local) {
      KELT_ARROW_RETURN_NOT_OK(root_.fs->CreateDir(root_.Join(f.rel_dir), true));
      f.temp_path =
          root_.Join(f.rel_dir) + "/" + landing::InProgressName(tp, RandomToken());
      KELT_ARROW_ASSIGN_OR_RAISE(auto raw, root_.fs->OpenOutputStream(f.temp_path));
      // Parquet writes a page's header apart from its body and the footer in pieces of
      // ~30 bytes (one a column chunk): unbuffered, a file of 20 row groups took ~1,400
      // write calls, 700 of them for its footer at the end of the run.
      auto buffered = arrow::io::BufferedOutputStream::Create(
          kFileBufferBytes, internal::WindowPool(), raw);
      if (!buffered.ok()) {
        (void)raw->Close();
        (void)root_.fs->DeleteFile(f.temp_path);
        return internal::FromArrow(buffered.status());
      }
      f.out = *std::move(buffered);
    } else {
      KELT_ARROW_ASSIGN_OR_RAISE(f.memory, arrow::io::BufferOutputStream::Create());
      f.out = f.memory;
    }
    auto writer = parquet::arrow::FileWriter::Open(*schema, internal::WindowPool(), f.out,
                                                   PropertiesFor(dead_letter, first_rows),
                                                   arrow_props_);
    if (!writer.ok()) {
      (void)f.out->Abort();
      if (!f.temp_path.empty()) (void)root_.fs->DeleteFile(f.temp_path);
      return internal::FromArrow(writer.status());
    }
    f.writer = *std::move(writer);
    auto [ins, ok] = rot.files.emplace(key, std::move(f));
    return &ins->second;
  }

  // Parquet has no union type: a union column is stored as a struct with one nullable
  // field per branch (internal/boundary_types.h). Every other type is native.
  static internal::BoundaryRules FileRules() {
    internal::BoundaryRules rules;
    rules.union_as_struct = true;
    return rules;
  }

  // `rows` in the landing files' schema.
  Result<std::shared_ptr<arrow::RecordBatch>> ToFileRows(
      const arrow::RecordBatch& rows) const {
    arrow::ArrayVector columns;
    for (int c = 0; c < rows.num_columns(); ++c) {
      auto column = internal::ToBoundary(rows.column(c), FileRules(),
                                         rows.schema()->field(c)->name());
      if (!column.ok()) return column.status().WithPrefix("parquet sink: ");
      columns.push_back(std::move(*column));
    }
    return arrow::RecordBatch::Make(landing_file_, rows.num_rows(), std::move(columns));
  }

  // An I/O error writing file `f` (a full disk: the row group flushed when the next
  // begins), naming its path; other errors as they are.
  Status WriteError(const OpenFile& f, const arrow::Status& st) {
    if (st.ok() || !st.IsIOError()) return internal::FromArrow(st);
    std::string path = f.temp_path.empty() ? root_.Join(f.rel_dir) : f.temp_path;
    return Status::IOError("writing '" + path + "': " + internal::ArrowMessage(st));
  }

  // Write one partition's rows (in offset order) into its rotation's files. Touches
  // nothing but `rot`, so partitions are written in parallel.
  Status WriteRows(const TopicPartition& tp, Rotation& rot,
                   const std::shared_ptr<arrow::RecordBatch>& rows, bool dead_letter) {
    // Group the rows by directory, keeping runs (rows of one directory stay in order).
    int64_t start = 0;
    const int64_t n = rows->num_rows();
    while (start < n) {
      std::string dir = dead_letter ? "" : DirOf(*rows, start);
      int64_t end = start + 1;
      while (end < n && (dead_letter || DirOf(*rows, end) == dir)) ++end;
      auto slice = rows->Slice(start, end - start);
      KELT_ASSIGN_OR_RAISE(OpenFile * f, FileFor(tp, rot, dead_letter, dir,
                                                 dead_letter ? nullptr : slice.get()));
      if (dead_letter || landing_file_ == landing_) {
        f->window_rows.push_back(slice);
      } else {
        KELT_ASSIGN_OR_RAISE(auto stored, ToFileRows(*slice));
        f->window_rows.push_back(std::move(stored));
      }
      // The bytes of this slice's rows: TotalBufferSize would count the whole window's
      // buffers for every partition's slice of it (with 4 partitions a rotation ended
      // at ~32 MB of its own rows instead of rotate_bytes, with 512 every window).
      auto referenced = arrow::util::ReferencedBufferSize(*slice);
      rot.bytes += referenced.ok()
                       ? *referenced
                       : static_cast<int64_t>(arrow::util::TotalBufferSize(*slice));
      start = end;
    }
    return Status::OK();
  }

  // Write each file's rows of this window as one row group, encoded, compressed and
  // handed to the file (or the object's buffer) at once: between windows an open file
  // keeps its footer's metadata only, not a row group's column writers, dictionaries
  // and pages (with hundreds of partitions those were most of the sink's memory).
  // The rows are taken as the file's schema (the batch may differ from it in
  // nullability only: Write compares names and types). `write` false (the window's
  // rows could not all be collected): the rows are only released. A failure breaks the
  // rotation here: Arrow closes a writer whose WriteTable failed, and closing it again
  // would then succeed without a footer.
  Status WriteWindowRows(Rotation& rot, bool write) {
    Status st;
    for (auto& [key, f] : rot.files) {
      std::vector<std::shared_ptr<arrow::RecordBatch>> rows;
      rows.swap(f.window_rows);
      if (rows.empty() || !write || !st.ok()) continue;
      // The same schema object everywhere: comparing two schema objects makes Arrow
      // compute and cache their fingerprints, a race between the partitions' jobs.
      const std::shared_ptr<arrow::Schema> schema = f.writer->schema();
      for (auto& b : rows) {
        if (b->schema() != schema) {
          b = arrow::RecordBatch::Make(schema, b->num_rows(), b->columns());
        }
      }
      auto table = arrow::Table::FromRecordBatches(schema, rows);
      rows.clear();  // the table holds them
      if (!table.ok()) {
        st = internal::FromArrow(table.status());
        continue;
      }
      st = WriteError(f,
                      f.writer->WriteTable(**table, std::numeric_limits<int64_t>::max()));
    }
    if (!st.ok() && rot.broken.ok())
      rot.broken = st.WithPrefix("an earlier write failed: ");
    return st;
  }

  Status WriteDeadLetters(const std::shared_ptr<arrow::RecordBatch>& dl) {
    auto& part =
        static_cast<const arrow::Int64Array&>(*dl->GetColumnByName("_kafka_partition"));
    auto& off =
        static_cast<const arrow::Int64Array&>(*dl->GetColumnByName("_kafka_offset"));
    auto topic =
        std::static_pointer_cast<arrow::StringArray>(dl->GetColumnByName("_kafka_topic"));
    return WriteRuns(dl, topic.get(), "", part, off, true);
  }

  // Write `rows` run by run (a run: consecutive rows of one partition), leaving out each
  // partition's rows below its durable point. `topic` null: every row is of `single`.
  Status WriteRuns(const std::shared_ptr<arrow::RecordBatch>& rows,
                   const arrow::StringArray* topic, const std::string& single,
                   const arrow::Int64Array& part, const arrow::Int64Array& off,
                   bool dead_letter) {
    auto topic_at = [&](int64_t row) -> std::string_view {
      return topic ? topic->GetView(row) : std::string_view(single);
    };
    // Each partition's runs in order; the partitions' files are written in parallel
    // (encoding and compression are most of a window's cost).
    std::map<TopicPartition, std::vector<std::shared_ptr<arrow::RecordBatch>>> runs;
    const int64_t n = rows->num_rows();
    int64_t row = 0;
    while (row < n) {
      TopicPartition tp{std::string(topic_at(row)),
                        static_cast<int32_t>(part.Value(row))};
      int64_t end = row + 1;
      while (end < n && part.Value(end) == tp.partition && topic_at(end) == tp.topic)
        ++end;
      int64_t start = row;
      auto d = durable_.find(tp);
      if (d != durable_.end()) {
        while (start < end && off.Value(start) < d->second) ++start;
      }
      if (start < end) runs[tp].push_back(rows->Slice(start, end - start));
      row = end;
    }
    struct Job {
      const TopicPartition* tp;
      Rotation* rot;
      const std::vector<std::shared_ptr<arrow::RecordBatch>>* slices;
    };
    std::vector<Job> jobs;
    for (const auto& [tp, slices] : runs) jobs.push_back({&tp, &rotations_[tp], &slices});
    std::vector<Status> results(jobs.size());
    internal::ParallelFor(jobs.size(), internal::UsableCores(), [&](size_t i) {
      for (const auto& slice : *jobs[i].slices) {
        results[i] = WriteRows(*jobs[i].tp, *jobs[i].rot, slice, dead_letter);
        if (!results[i].ok()) break;
      }
      Status written = WriteWindowRows(*jobs[i].rot, results[i].ok());
      if (results[i].ok()) results[i] = std::move(written);
    });
    for (const Status& st : results) KELT_RETURN_NOT_OK(st);
    return Status::OK();
  }

  // The writer properties of files of `schema` (landing and dead-letter files each
  // have their own: options are set by column name).
  Result<std::shared_ptr<parquet::WriterProperties>> PropertiesOf(
      const arrow::Schema& schema) const {
    return internal::LandingWriterProperties(schema, o_);
  }

  // Finish the rotations `pick` selects, in parallel (closing a file encodes its last
  // row group; local files are fsynced, S3 objects uploaded). The finished ones are
  // durable and leave the open set even when another failed; the first failure (in
  // partition order) is returned, and what did advance is reported by the next call
  // that succeeds.
  template <typename Pick>
  Status FinishWhere(Pick&& pick, OffsetMap* advanced) {
    std::vector<std::map<TopicPartition, Rotation>::iterator> chosen;
    for (auto it = rotations_.begin(); it != rotations_.end(); ++it) {
      if (pick(it->second)) chosen.push_back(it);
    }
    std::vector<Status> results(chosen.size());
    // One byte per rotation, not std::vector<bool>: its packed bits would make the
    // parallel writes below a data race (a lost `true` left a published file's
    // offsets unreported, so never committed).
    std::vector<char> published(chosen.size(), 0);
    std::vector<std::vector<std::string>> dirs(chosen.size());
    // Closing a file is cheap (its row groups are written): finishing is fsyncs,
    // renames and uploads, run on the I/O workers.
    internal::IoParallelFor(chosen.size(), [&](size_t i) {
      auto r = Finish(chosen[i]->first, chosen[i]->second, &dirs[i]);
      if (r.ok()) {
        published[i] = *r ? 1 : 0;
      } else {
        results[i] = r.status();
      }
    });
    // The directories the renames went into, each synced once (hundreds of partitions
    // publish into one topic directory); a rotation is durable only once all of its
    // are. A failed sync breaks the rotations that renamed into that directory: the
    // renames may not survive a crash.
    std::map<std::string, Status> synced;
    for (size_t i = 0; i < chosen.size(); ++i) {
      if (!results[i].ok() || !published[i]) continue;
      for (const auto& d : dirs[i]) synced.emplace(d, Status::OK());
    }
    std::vector<std::map<std::string, Status>::iterator> to_sync;
    for (auto it = synced.begin(); it != synced.end(); ++it) to_sync.push_back(it);
    internal::IoParallelFor(to_sync.size(), [&](size_t k) {
      to_sync[k]->second = SyncPath(to_sync[k]->first, true);
    });
    for (size_t i = 0; i < chosen.size(); ++i) {
      if (!results[i].ok() || !published[i]) continue;
      for (const auto& d : dirs[i]) {
        const Status& st = synced.at(d);
        if (st.ok()) continue;
        chosen[i]->second.broken = st;
        results[i] = st;
        break;
      }
    }
    Status first;
    for (size_t i = 0; i < chosen.size(); ++i) {
      if (!results[i].ok()) {
        if (first.ok()) first = results[i];
        continue;
      }
      auto it = chosen[i];
      if (published[i]) {
        durable_[it->first] = it->second.last + 1;
        (*advanced)[it->first] = it->second.last + 1;
      }
      rotations_.erase(it);
    }
    if (!first.ok()) {
      for (const auto& [tp, next] : *advanced) {
        unreported_[tp] = std::max(unreported_[tp], next);
      }
      return first;
    }
    for (const auto& [tp, next] : unreported_) {
      (*advanced)[tp] = std::max((*advanced)[tp], next);
    }
    unreported_.clear();
    return first;
  }

  // The writer properties of a new file: the sink's, minus dictionaries for the text
  // columns that `first_rows` shows mostly distinct (dictionary "auto"), and minus
  // min/max statistics for those of them whose sampled values are not in order
  // (hashes, random ids, free text): a row group of a window of them spans nearly the
  // whole range, so no reader prunes by it, and comparing every value cost ~8% of the
  // ELT loop's CPU (bench/README.md). Numbers, timestamps, low-cardinality text and
  // text that grows keep their statistics.
  std::shared_ptr<parquet::WriterProperties> PropertiesFor(
      bool dead_letter, const arrow::RecordBatch* first_rows) const {
    return internal::PropertiesForFirstRows(
        dead_letter ? dead_letter_props_ : writer_props_, o_.dictionary, first_rows);
  }

  // Close every file of the rotation and publish them under their final names; false
  // when there was nothing new to publish. Touches nothing but `rot` (runs in parallel).
  // Local files: the directories they were renamed into go to `dirs`, for the caller
  // to sync (the rotation is not durable before).
  Result<bool> Finish(const TopicPartition& tp, Rotation& rot,
                      std::vector<std::string>* dirs) {
    KELT_RETURN_NOT_OK(rot.broken);
    rot.finishing = true;
    if (rot.last < rot.first) {  // nothing new (everything was already durable)
      Abort(rot);
      return false;
    }
    if (rot.files.empty()) {
      // Only bad records that were skipped: an empty file still records the progress.
      KELT_ASSIGN_OR_RAISE(OpenFile * f, FileFor(tp, rot, false, EmptyDir()));
      (void)f;
    }
    const int parts = static_cast<int>(rot.files.size());
    int i = 0;
    std::vector<std::string> published_dirs;
    // Each step is done once: after a failure (an upload refused, a rename that
    // failed) finishing the rotation again resumes at the step that failed. A failure
    // that may have lost data breaks the rotation instead.
    auto broken = [&rot](Status st) {
      rot.broken = std::move(st);
      return rot.broken;
    };
    for (auto& [key, f] : rot.files) {
      ++i;
      if (root_.local) published_dirs.push_back(root_.Join(f.rel_dir));
      if (f.published) continue;
      const std::string final_path = root_.Join(f.rel_dir) + "/" +
                                     ParquetFileName(tp, rot.first, rot.last, i, parts);
      if (f.writer) {
        // Closing twice would report success for a file that lacks its footer.
        arrow::Status closed = f.writer->Close();
        f.writer.reset();
        if (!closed.ok()) {
          return broken(Status::IOError("finishing '" + final_path +
                                        "': " + internal::ArrowMessage(closed)));
        }
      }
      if (root_.local) {
        // A failed close or fsync may have lost written pages for good (a second
        // fsync can succeed without them).
        if (arrow::Status closed = f.out->Close(); !closed.ok()) {
          return broken(Status::IOError("closing '" + f.temp_path +
                                        "': " + internal::ArrowMessage(closed)));
        }
        if (Status synced = SyncPath(f.temp_path, false); !synced.ok()) {
          return broken(std::move(synced));
        }
        std::error_code ec;
        std::filesystem::rename(f.temp_path, final_path, ec);
        if (ec) {
          return Status::IOError("renaming '" + f.temp_path + "' to '" + final_path +
                                 "': " + ec.message());
        }
        f.temp_path.clear();
      } else {
        if (!f.encoded) {
          KELT_ARROW_RETURN_NOT_OK(f.out->Close());
          KELT_ARROW_ASSIGN_OR_RAISE(f.encoded, f.memory->Finish());
        }
        // One upload per object: it appears complete or not at all.
        auto up = root_.fs->OpenOutputStream(final_path);
        arrow::Status st = up.status();
        if (st.ok()) st = (*up)->Write(f.encoded);
        if (st.ok()) st = (*up)->Close();
        if (!st.ok()) {
          return Status::IOError(
              "uploading '" + final_path + "': " + internal::ArrowMessage(st), true);
        }
        f.encoded.reset();
      }
      f.published = true;
    }
    std::sort(published_dirs.begin(), published_dirs.end());
    published_dirs.erase(std::unique(published_dirs.begin(), published_dirs.end()),
                         published_dirs.end());
    *dirs = std::move(published_dirs);
    rot.files.clear();
    return true;
  }

  std::string EmptyDir() const {
    if (by_col_ < 0) return "";
    return EscapeHivePathValue(o_.partition_by) + "=__HIVE_DEFAULT_PARTITION__";
  }

  void Abort(Rotation& rot) {
    for (auto& [key, f] : rot.files) {
      if (f.writer) (void)f.writer->Close();
      // The file is deleted: what is still buffered need not reach it.
      if (f.out && !f.out->closed()) (void)f.out->Abort();
      if (!f.temp_path.empty()) (void)root_.fs->DeleteFile(f.temp_path);
    }
    rot.files.clear();
  }

  // Find the complete rotations of `topic`'s wanted partitions; delete in-progress
  // files and stragglers of incomplete rotations of those partitions.
  Status ScanTopic(const std::string& topic, const std::set<TopicPartition>& wanted,
                   OffsetMap* out) {
    KELT_ASSIGN_OR_RAISE(landing::TopicListing listing,
                         landing::ListTopic(root_, topic, o_.dead_letter_dir,
                                            [&](const TopicPartition& tp) {
                                              return wanted.count(tp) > 0;
                                            }));
    for (const landing::LandedFile& f : listing.complete) {
      auto [it, fresh] = out->emplace(f.info.tp, f.info.last + 1);
      if (!fresh) it->second = std::max(it->second, f.info.last + 1);
    }
    for (const auto& path : listing.leftovers) {
      Log(LogLevel::kInfo, "parquet",
          "removing the leftover of an interrupted write: " + path);
      auto st = root_.fs->DeleteFile(path);
      if (!st.ok()) {
        // Gone since the listing is what we want: another member that was assigned the
        // partition in a rebalance (or a restart of its owner) removed it first. The
        // chaos group (tests/faults/chaos.py) saw this end a worker with
        // "[errno 2] No such file or directory".
        auto info = root_.fs->GetFileInfo(path);
        if (info.ok() && info->type() == arrow::fs::FileType::NotFound) continue;
        return Status::IOError("removing leftover '" + path +
                               "': " + internal::ArrowMessage(st));
      }
    }
    return Status::OK();
  }

  ParquetSinkOptions o_;
  Root root_;
  std::shared_ptr<arrow::Schema> landing_, dead_letter_;
  // The landing schema as its files store it: unions become structs (Parquet has none).
  std::shared_ptr<arrow::Schema> landing_file_;
  int topic_col_ = -1, partition_col_ = -1, offset_col_ = -1, by_col_ = -1;
  std::shared_ptr<parquet::WriterProperties> writer_props_;       // landing files
  std::shared_ptr<parquet::WriterProperties> dead_letter_props_;  // dead-letter files
  std::shared_ptr<parquet::ArrowWriterProperties> arrow_props_;
  std::map<TopicPartition, Rotation> rotations_;
  OffsetMap durable_;  // next offset durable in the sink, per partition
  // Durable points that advanced in a call that failed (another rotation did not
  // publish): reported by the next call that succeeds.
  OffsetMap unreported_;
};

}  // namespace

std::string_view ParquetCompressionName(ParquetCompression compression) {
  switch (compression) {
    case ParquetCompression::kZstd:
      return "zstd";
    case ParquetCompression::kSnappy:
      return "snappy";
    case ParquetCompression::kGzip:
      return "gzip";
    case ParquetCompression::kLz4:
      return "lz4";
    case ParquetCompression::kNone:
      return "none";
  }
  return "zstd";
}

std::optional<ParquetCompression> ParseParquetCompression(std::string_view name) {
  for (auto c :
       {ParquetCompression::kZstd, ParquetCompression::kSnappy, ParquetCompression::kGzip,
        ParquetCompression::kLz4, ParquetCompression::kNone}) {
    if (name == ParquetCompressionName(c)) return c;
  }
  return std::nullopt;
}

std::string_view ParquetDictionaryName(ParquetDictionary dictionary) {
  switch (dictionary) {
    case ParquetDictionary::kAuto:
      return "auto";
    case ParquetDictionary::kAll:
      return "all";
    case ParquetDictionary::kNone:
      return "none";
  }
  return "auto";
}

std::optional<ParquetDictionary> ParseParquetDictionary(std::string_view name) {
  for (auto d :
       {ParquetDictionary::kAuto, ParquetDictionary::kAll, ParquetDictionary::kNone}) {
    if (name == ParquetDictionaryName(d)) return d;
  }
  return std::nullopt;
}

std::string_view ParquetIntegerEncodingName(ParquetIntegerEncoding encoding) {
  switch (encoding) {
    case ParquetIntegerEncoding::kDelta:
      return "delta";
    case ParquetIntegerEncoding::kPlain:
      return "plain";
  }
  return "delta";
}

std::optional<ParquetIntegerEncoding> ParseParquetIntegerEncoding(std::string_view name) {
  for (auto e : {ParquetIntegerEncoding::kDelta, ParquetIntegerEncoding::kPlain}) {
    if (name == ParquetIntegerEncodingName(e)) return e;
  }
  return std::nullopt;
}

Result<std::unique_ptr<Sink>> MakeParquetSink(ParquetSinkOptions options) {
  if (options.rotate_records <= 0 || options.rotate_bytes <= 0) {
    return Status::Invalid("parquet sink rotation limits must be positive");
  }
  return std::unique_ptr<Sink>(new ParquetSink(std::move(options)));
}

// --- RDP: export_dataset_to_parquet
// -------------------------------------------------------

Status ExportToParquet(const arrow::RecordBatch& batch, const std::string& path,
                       const ParquetSinkOptions& storage) {
  ParquetSinkOptions o = storage;
  const bool s3 = path.rfind("s3://", 0) == 0;
  std::string dir, file;
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) {
    dir = ".";
    file = path;
  } else {
    dir = path.substr(0, slash);
    file = path.substr(slash + 1);
  }
  if (file.empty()) return Status::Invalid("parquet path '" + path + "' names no file");
  o.root = dir.empty() ? "/" : dir;
  KELT_ASSIGN_OR_RAISE(Root root, OpenRoot(o));
  parquet::WriterProperties::Builder wp;
  wp.compression(parquet::Compression::ZSTD);
  parquet::ArrowWriterProperties::Builder ap;
  ap.store_schema();
  const std::string final_path = root.Join(file);
  if (s3) {
    KELT_ARROW_ASSIGN_OR_RAISE(auto mem, arrow::io::BufferOutputStream::Create());
    KELT_ARROW_ASSIGN_OR_RAISE(auto w, parquet::arrow::FileWriter::Open(
                                           *batch.schema(), arrow::default_memory_pool(),
                                           mem, wp.build(), ap.build()));
    KELT_ARROW_RETURN_NOT_OK(w->WriteRecordBatch(batch));
    KELT_ARROW_RETURN_NOT_OK(w->Close());
    KELT_ARROW_ASSIGN_OR_RAISE(auto buffer, mem->Finish());
    KELT_ARROW_ASSIGN_OR_RAISE(auto up, root.fs->OpenOutputStream(final_path));
    KELT_ARROW_RETURN_NOT_OK(up->Write(buffer));
    KELT_ARROW_RETURN_NOT_OK(up->Close());
    return Status::OK();
  }
  const std::string temp = root.Join("." + file + "." + RandomToken() + ".inprogress");
  {
    KELT_ARROW_ASSIGN_OR_RAISE(auto out, root.fs->OpenOutputStream(temp));
    auto w = parquet::arrow::FileWriter::Open(
        *batch.schema(), arrow::default_memory_pool(), out, wp.build(), ap.build());
    arrow::Status st = w.ok() ? (*w)->WriteRecordBatch(batch) : w.status();
    if (st.ok()) st = (*w)->Close();
    if (st.ok()) st = out->Close();
    if (!st.ok()) {
      (void)root.fs->DeleteFile(temp);
      return Status::IOError("writing parquet '" + path +
                             "': " + internal::ArrowMessage(st));
    }
  }
  KELT_RETURN_NOT_OK(SyncPath(temp, false));
  std::error_code ec;
  std::filesystem::rename(temp, final_path, ec);
  if (ec) {
    (void)root.fs->DeleteFile(temp);
    return Status::IOError("renaming to '" + path + "': " + ec.message());
  }
  return SyncPath(root.base, true);
}

}  // namespace kelt
