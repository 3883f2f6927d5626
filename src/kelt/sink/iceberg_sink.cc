// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Iceberg sink (sink/README.md, "Iceberg"). Exactly once: a window's data files
// become visible only through the snapshot that also records the group's next offsets,
// and that snapshot is committed by the catalog's compare-and-swap on the metadata
// location. A writer whose swap loses re-reads the table, leaves out rows the table
// already holds (another member landed them), and retries; if nothing of its window
// is left, it was fenced and drops its files.

#include <arrow/api.h>
#include <simdjson.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "kelt/common/parallel.h"
#include "kelt/common/text.h"
#include "kelt/iceberg/catalog.h"
#include "kelt/iceberg/file_io.h"
#include "kelt/iceberg/partition.h"
#include "kelt/iceberg/table.h"
#include "kelt/iceberg/table_schema.h"
#include "kelt/landing/filesystem.h"
#include "kelt/log.h"
#include "kelt/sink.h"
#include "kelt/sink/parquet_writing.h"
#include "kelt/sink/schema_evolution.h"

namespace kelt {
namespace {

namespace ice = iceberg;
constexpr int kCommitAttempts = 20;

// A namespace or table name that is safe as one directory name.
bool IsSafeName(const std::string& s) {
  if (s.empty() || s[0] == '.') return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
          c == '.'))
      return false;
  }
  return true;
}

std::string OffsetsKey(const std::string& group) { return "kelt.offsets." + group; }

// Eight hex digits of the group id (32-bit FNV-1a) in the sink's data file names: a
// group's leftover cleanup judges files by its own stored offsets, so it must know
// another group's files (which may be in flight below them) from its own.
std::string GroupTag(const std::string& group) {
  uint32_t h = 2166136261u;
  for (unsigned char c : group) {
    h ^= c;
    h *= 16777619u;
  }
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", h);
  return buf;
}

// {"topic":{"partition":next,…},…}
std::string OffsetsJson(const OffsetMap& offsets) {
  std::string out = "{";
  std::string_view topic;
  bool first_topic = true;
  for (const auto& [tp, next] : offsets) {
    if (first_topic || tp.topic != topic) {
      if (!first_topic) out += "},";
      text::AppendJsonString(&out, tp.topic);
      out += ":{";
      topic = tp.topic;
      first_topic = false;
    } else {
      out += ',';
    }
    text::AppendJsonString(&out, std::to_string(tp.partition));
    out += ':';
    text::AppendInt64(&out, next);
  }
  if (!first_topic) out += '}';
  return out + "}";
}

Result<OffsetMap> ParseOffsetsJson(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::object topics;
  if (parser.parse(json.data(), json.size()).get_object().get(topics)) {
    return Status::ParseError("snapshot offsets are not a JSON object");
  }
  OffsetMap out;
  for (auto [topic, parts] : topics) {
    simdjson::dom::object po;
    if (parts.get_object().get(po))
      return Status::ParseError("snapshot offsets: bad topic");
    for (auto [p, next] : po) {
      int64_t partition, n;
      std::string_view err;
      if (!text::ParseInt64(p, &partition, &err) || next.get_int64().get(n)) {
        return Status::ParseError("snapshot offsets: bad partition entry");
      }
      out[TopicPartition{std::string(topic), static_cast<int32_t>(partition)}] = n;
    }
  }
  return out;
}

// The group's offsets as of the current snapshot: the newest snapshot in its lineage
// that carries them (snapshots of other writers, e.g. a compaction, have none).
Result<OffsetMap> GroupOffsets(const ice::TableMetadata& m, const std::string& group) {
  const std::string key = OffsetsKey(group);
  const ice::Snapshot* s = m.CurrentSnapshot();
  for (size_t steps = 0; s && steps <= m.snapshots.size(); ++steps) {
    auto it = s->summary.find(key);
    if (it != s->summary.end()) return ParseOffsetsJson(it->second);
    s = s->parent_snapshot_id ? m.FindSnapshot(*s->parent_snapshot_id) : nullptr;
  }
  return OffsetMap{};
}

// A data file name: kelt-<topic>+<partition>+<first>+<last>+<tag>-<token>.parquet
// (Kafka topic names have no '+' or '/'); tag: the table's iceberg::TableTag followed by
// the writer's GroupTag (16 hex digits). An older kelt wrote no "+<tag>": then `tag` is
// empty.
struct DataFileName {
  TopicPartition tp;
  int64_t first = 0, last = 0;
  std::string tag;
  static std::optional<DataFileName> Parse(const std::string& file) {
    if (file.rfind("kelt-", 0) != 0 || file.size() < 14 ||
        file.substr(file.size() - 8) != ".parquet") {
      return std::nullopt;
    }
    std::string rest = file.substr(5, file.size() - 13);
    size_t p1 = rest.find('+');
    size_t p2 = p1 == std::string::npos ? p1 : rest.find('+', p1 + 1);
    size_t p3 = p2 == std::string::npos ? p2 : rest.find('+', p2 + 1);
    size_t dash = p3 == std::string::npos ? p3 : rest.find('-', p3 + 1);
    if (dash == std::string::npos) return std::nullopt;
    DataFileName n;
    size_t p4 = rest.find('+', p3 + 1);
    size_t last_end = dash;
    if (p4 != std::string::npos && p4 < dash) {
      n.tag = rest.substr(p4 + 1, dash - p4 - 1);
      if (n.tag.empty()) return std::nullopt;
      last_end = p4;
    }
    int64_t partition;
    std::string_view err;
    if (!text::ParseInt64(rest.substr(p1 + 1, p2 - p1 - 1), &partition, &err) ||
        !text::ParseInt64(rest.substr(p2 + 1, p3 - p2 - 1), &n.first, &err) ||
        !text::ParseInt64(rest.substr(p3 + 1, last_end - p3 - 1), &n.last, &err)) {
      return std::nullopt;
    }
    n.tp = TopicPartition{rest.substr(0, p1), static_cast<int32_t>(partition)};
    return n;
  }
};

// "a, b, c" of the first three, for a log line.
std::string SomeOf(const std::vector<std::string>& files) {
  std::string out;
  for (size_t i = 0; i < files.size() && i < 3; ++i) out += (i ? ", " : "") + files[i];
  return out;
}

// One table the sink lands into and its commit loop: the landing table, or its
// dead-letter sibling. Both keep the group's offsets in their own snapshot summaries,
// so each leaves out the rows it already holds, independently of the other.
class TableWriter {
 public:
  TableWriter(const IcebergSinkOptions& o, std::string table, ice::Catalog* catalog,
              const ice::FileIO* io)
      : o_(o), table_(std::move(table)), catalog_(catalog), io_(io) {}

  std::string name() const {
    return "iceberg:" + o_.table_namespace + "." + table_ + " (catalog " +
           ice::CatalogDisplayName(o_.catalog) + ")";
  }

  // Map `schema`, create or load the table (partitioned by `partition` when new), add
  // the landing columns it lacks, check it, and remove the files no commit can take
  // any more.
  Status Open(const std::shared_ptr<arrow::Schema>& schema,
              const std::string& partition) {
    KELT_ASSIGN_OR_RAISE(ice::LandingMapping fresh, ice::MapLandingSchema(*schema));
    if (ice::FileIO::IsS3(o_.warehouse)) {
      std::string root = o_.warehouse;
      while (!root.empty() && root.back() == '/') root.pop_back();
      if (root.size() <= 5)
        return Status::Invalid(name() + ": the warehouse needs a bucket");
      location_ = root + "/" + o_.table_namespace + "/" + table_;
    } else {
      std::error_code ec;
      const auto root = std::filesystem::absolute(o_.warehouse, ec);
      if (ec)
        return Status::IOError(name() + ": warehouse " + o_.warehouse + ": " +
                               ec.message());
      location_ =
          "file://" + (root / o_.table_namespace / table_).lexically_normal().string();
    }
    KELT_ASSIGN_OR_RAISE(ice::PartitionSpec fresh_spec,
                         ice::ParsePartitionSpec(partition, fresh.schema));
    KELT_ASSIGN_OR_RAISE(ice::LoadedTable t,
                         ice::CreateOrLoadTable(*catalog_, id(), location_, fresh.schema,
                                                fresh_spec, *io_));
    KELT_RETURN_NOT_OK(AdoptSchema(*schema, &t));
    landing_ = schema;
    // The configured spec, with the table's field ids.
    KELT_ASSIGN_OR_RAISE(ice::PartitionSpec spec,
                         ice::ParsePartitionSpec(partition, mapping_.schema));
    const ice::PartitionSpec* have = t.metadata.DefaultSpec();
    if (!have) return Status::Invalid(name() + ": table metadata has no default spec");
    if (have->fields != spec.fields) {
      return Status::Invalid(
          name() + ": the table's partition spec " + ice::PartitionSpecJson(*have) +
          " differs from the configured one " + ice::PartitionSpecJson(spec));
    }
    spec_ = *have;
    KELT_ASSIGN_OR_RAISE(partition_columns_,
                         ice::PartitionColumns(spec_, mapping_.schema));
    table_location_ = t.metadata.location;
    file_tag_ = ice::TableTag(t.metadata.table_uuid) + GroupTag(o_.group_id);
    RemoveLeftovers();
    return Status::OK();
  }

  const std::shared_ptr<arrow::Schema>& landing() const { return landing_; }

  // The landing grew (Sink::Evolve; the caller checked it only adds nullable columns):
  // add its new columns to the table's schema, and write later windows with it.
  Status Evolve(const std::shared_ptr<arrow::Schema>& schema) {
    KELT_ASSIGN_OR_RAISE(ice::LoadedTable t, Load());
    KELT_RETURN_NOT_OK(AdoptSchema(*schema, &t));
    landing_ = schema;
    KELT_ASSIGN_OR_RAISE(partition_columns_,
                         ice::PartitionColumns(spec_, mapping_.schema));
    return Status::OK();
  }

  Result<OffsetMap> Resume(const std::vector<TopicPartition>& partitions) {
    KELT_ASSIGN_OR_RAISE(ice::LoadedTable t, Load());
    KELT_ASSIGN_OR_RAISE(OffsetMap stored, GroupOffsets(t.metadata, o_.group_id));
    OffsetMap out;
    for (const auto& tp : partitions) {
      auto it = stored.find(tp);
      if (it != stored.end()) out[tp] = it->second;
    }
    return out;
  }

  // Land the rows of `batch` the table does not hold yet, with the spans' next offsets
  // merged into the summary; returns the spans' durable next offsets.
  Result<OffsetMap> Land(const std::shared_ptr<arrow::RecordBatch>& batch,
                         const std::vector<PartitionSpan>& spans) {
    if (spans.empty()) return OffsetMap{};
    bool lost_swap = false;
    using Clock = std::chrono::steady_clock;
    auto ms = [](Clock::duration d) {
      char text[32];
      std::snprintf(text, sizeof(text), "%.1f",
                    std::chrono::duration<double, std::milli>(d).count());
      return std::string(text);
    };
    for (int attempt = 0; attempt < kCommitAttempts; ++attempt) {
      const auto started = Clock::now();
      KELT_ASSIGN_OR_RAISE(ice::LoadedTable base, Load());
      KELT_ASSIGN_OR_RAISE(OffsetMap stored, GroupOffsets(base.metadata, o_.group_id));
      OffsetMap next = stored;
      bool advances = false;
      for (const auto& span : spans) {
        int64_t& n = next[span.tp];
        auto it = stored.find(span.tp);
        if (it == stored.end() || it->second < span.last_offset + 1) advances = true;
        n = std::max(it == stored.end() ? 0 : it->second, span.last_offset + 1);
      }
      OffsetMap durable;
      for (const auto& span : spans) durable[span.tp] = next[span.tp];
      if (!advances) {
        // Everything here is in the table already: another member landed it (this one
        // lost the partitions: a zombie), or an earlier attempt of this window did.
        Log(LogLevel::kInfo, "iceberg",
            name() +
                (lost_swap ? ": fenced: another writer committed this window's offsets "
                             "first; its files are dropped, nothing committed ("
                           : ": skipped: the table holds this window's offsets already, "
                             "nothing committed (") +
                CoveredText(spans, stored) + ")");
        return durable;
      }
      std::vector<ice::DataFile> files;
      int64_t left_out = 0;
      const auto loaded = Clock::now();
      Status st = WriteDataFiles(batch, stored, &files, &left_out);
      const auto written = Clock::now();
      if (st.ok() && left_out > 0) {
        Log(LogLevel::kInfo, "iceberg",
            name() + ": left out " + std::to_string(left_out) +
                " row(s) of this window that the table holds already (" +
                CoveredText(spans, stored) + ")");
      }
      if (st.ok()) {
        std::map<std::string, std::string> summary = {
            {OffsetsKey(o_.group_id), OffsetsJson(next)}};
        auto outcome = ice::CommitAppend(*catalog_, id(), base, partition_columns_, files,
                                         summary, *io_);
        if (outcome.ok() && outcome->committed) {
          // The split of a window's time (kafka_benchmark's commit latency,
          // bench/README.md).
          Log(LogLevel::kDebug, "iceberg",
              name() + ": committed " + std::to_string(files.size()) +
                  " data file(s): table read " + ms(loaded - started) +
                  " ms, data files " + ms(written - loaded) + " ms, commit " +
                  ms(Clock::now() - written) + " ms");
          return durable;
        }
        // An error may come from the swap itself, whose outcome can be unknown (a
        // PostgreSQL connection that broke after the UPDATE was sent): the files may
        // be in the table, so they stay. A later start removes them if they are not.
        if (!outcome.ok()) return outcome.status().WithPrefix(name() + ": ");
      }
      for (const auto& f : files) RemoveDataFile(f.path);
      KELT_RETURN_NOT_OK(st.WithPrefix(name() + ": "));
      // Lost the swap: another writer committed first. Re-read and retry on top.
      lost_swap = true;
      Log(LogLevel::kInfo, "iceberg",
          name() + ": lost the catalog's compare-and-swap to another writer; dropped " +
              std::to_string(files.size()) + " data file(s), re-reading the table");
    }
    return Status::Unavailable(name() + ": lost the catalog's compare-and-swap " +
                               std::to_string(kCommitAttempts) + " times in a row");
  }

 private:
  ice::TableIdentifier id() const { return {o_.table_namespace, table_}; }

  Result<ice::LoadedTable> Load() {
    KELT_ASSIGN_OR_RAISE(std::optional<ice::LoadedTable> t,
                         ice::LoadTable(*catalog_, id(), *io_));
    if (!t) return Status::NotFound(name() + ": the table is gone from the catalog");
    return std::move(*t);
  }

  // Map `landing` onto the table's current schema by name (mapping_): columns the table
  // has keep their field ids; those it lacks are added as optional columns with new
  // ids, in a new schema that becomes the current one (a commit by the catalog's
  // compare-and-swap; a lost swap re-reads the table, which another member may have
  // grown the same way, and maps again). A table column the landing lacks, or a column
  // of another type, is an error.
  Status AdoptSchema(const arrow::Schema& landing, ice::LoadedTable* t) {
    for (int attempt = 0; attempt < kCommitAttempts; ++attempt) {
      const ice::TableMetadata& m = t->metadata;
      const ice::Schema* current = m.CurrentSchema();
      if (!current) {
        return Status::Invalid(name() + ": table metadata has no current schema");
      }
      for (const auto& f : current->fields) {
        if (landing.GetFieldIndex(f.name) < 0) {
          return Status::Invalid(name() + ": the table has a column '" + f.name +
                                 "' that the landing schema lacks");
        }
      }
      std::vector<ice::Field> added;
      auto mapped =
          ice::MapLandingSchemaOnto(landing, *current, m.last_column_id, &added);
      if (!mapped.ok()) return mapped.status().WithPrefix(name() + ": ");
      if (added.empty()) {
        mapping_ = std::move(*mapped);
        return Status::OK();
      }
      ice::TableMetadata next = m;
      ice::Schema grown = *current;
      for (const auto& s : m.schemas)
        grown.schema_id = std::max(grown.schema_id, s.schema_id);
      ++grown.schema_id;
      std::string names;
      for (const auto& f : added) {
        grown.fields.push_back(f);
        next.last_column_id = std::max(next.last_column_id, f.id);
        names +=
            (names.empty() ? "" : ", ") + f.name + " (id " + std::to_string(f.id) + ")";
      }
      next.current_schema_id = grown.schema_id;
      next.schemas.push_back(grown);
      next.last_updated_ms = ice::NowMs();
      KELT_ASSIGN_OR_RAISE(
          std::optional<ice::LoadedTable> committed,
          ice::CommitMetadata(*catalog_, id(), *t, std::move(next), {}, *io_));
      if (committed) {
        Log(LogLevel::kInfo, "iceberg",
            name() + ": the table's schema grows: schema id " +
                std::to_string(current->schema_id) + " -> " +
                std::to_string(grown.schema_id) + ", columns added: " + names);
        *t = std::move(*committed);
        mapping_ = std::move(*mapped);
        return Status::OK();
      }
      KELT_ASSIGN_OR_RAISE(*t, Load());  // another writer committed first
    }
    return Status::Unavailable(name() + ": lost the catalog's compare-and-swap " +
                               std::to_string(kCommitAttempts) +
                               " times in a row while adding columns");
  }

  // "topic[p] window 10..19, table next 20; …": the spans the table holds rows of.
  static std::string CoveredText(const std::vector<PartitionSpan>& spans,
                                 const OffsetMap& stored) {
    std::string out;
    for (const auto& span : spans) {
      auto it = stored.find(span.tp);
      if (it == stored.end() || it->second <= span.first_offset) continue;
      if (!out.empty()) out += "; ";
      out += span.tp.topic + "[" + std::to_string(span.tp.partition) + "] window " +
             std::to_string(span.first_offset) + ".." + std::to_string(span.last_offset) +
             ", table next " + std::to_string(it->second);
    }
    return out;
  }

  // The rows of one data file: runs of a window's batch, and their offsets' range.
  struct Runs {
    std::vector<std::pair<int64_t, int64_t>> runs;  // (start, length)
    int64_t first = INT64_MAX, last = -1;
  };

  // One Parquet file per Kafka partition with rows at or past its stored next offset;
  // `left_out` counts the rows below it.
  Status WriteDataFiles(const std::shared_ptr<arrow::RecordBatch>& batch,
                        const OffsetMap& stored, std::vector<ice::DataFile>* files,
                        int64_t* left_out) {
    if (!batch || batch->num_rows() == 0) return Status::OK();
    auto topic_col = batch->GetColumnByName("_kafka_topic");
    auto part_col = batch->GetColumnByName("_kafka_partition");
    auto off_col = batch->GetColumnByName("_kafka_offset");
    if (!topic_col || topic_col->type_id() != arrow::Type::STRING || !part_col ||
        (part_col->type_id() != arrow::Type::INT32 &&
         part_col->type_id() != arrow::Type::INT64) ||
        !off_col || off_col->type_id() != arrow::Type::INT64) {
      return Status::Invalid(
          "the batch needs _kafka_topic utf8, _kafka_partition int32/int64 and "
          "_kafka_offset int64");
    }
    const auto& topics = static_cast<const arrow::StringArray&>(*topic_col);
    const auto& offs = static_cast<const arrow::Int64Array&>(*off_col);
    auto partition_at = [&](int64_t r) -> int32_t {
      if (part_col->type_id() == arrow::Type::INT32) {
        return static_cast<const arrow::Int32Array&>(*part_col).Value(r);
      }
      return static_cast<int32_t>(
          static_cast<const arrow::Int64Array&>(*part_col).Value(r));
    };
    KELT_ASSIGN_OR_RAISE(auto converted_all, ice::ToIcebergBatch(batch, mapping_));
    KELT_ASSIGN_OR_RAISE(auto partition_values,
                         ice::PartitionValues(*converted_all, spec_, mapping_.schema));
    using Tuple = std::vector<std::optional<ice::PartitionDatum>>;
    std::map<std::pair<TopicPartition, Tuple>, Runs> groups;
    for (int64_t r = 0; r < batch->num_rows(); ++r) {
      if (topics.IsNull(r) || part_col->IsNull(r) || offs.IsNull(r)) {
        return Status::Invalid("row " + std::to_string(r) +
                               " has a null _kafka_* column");
      }
      TopicPartition tp{std::string(topics.GetView(r)), partition_at(r)};
      auto it = stored.find(tp);
      const int64_t off = offs.Value(r);
      if (it != stored.end() && off < it->second) {  // already in the table
        ++*left_out;
        continue;
      }
      Tuple tuple;
      for (const auto& field : partition_values) tuple.push_back(field[r]);
      Runs& runs = groups[{std::move(tp), std::move(tuple)}];
      if (!runs.runs.empty() && runs.runs.back().first + runs.runs.back().second == r) {
        ++runs.runs.back().second;
      } else {
        runs.runs.push_back({r, 1});
      }
      runs.first = std::min(runs.first, off);
      runs.last = std::max(runs.last, off);
    }
    const std::string token = ice::RandomUuid().substr(0, 8);
    // Every file is in `files` before any is written: from there on, removed if the
    // commit does not happen (a file never written is nothing to remove).
    struct Job {
      const Runs* runs;
      size_t index;  // in `files`
    };
    std::vector<Job> jobs;
    int k = 0;
    for (const auto& [key, runs] : groups) {
      const auto& [tp, tuple] = key;
      // Flat under data/: the partition tuple is in the manifest, not the path.
      const std::string file = "kelt-" + tp.topic + "+" + std::to_string(tp.partition) +
                               "+" + std::to_string(runs.first) + "+" +
                               std::to_string(runs.last) + "+" + file_tag_ + "-" + token +
                               "-" + std::to_string(k++) + ".parquet";
      ice::DataFile df;
      df.path = table_location_ + "/data/" + file;
      df.partition = tuple;
      jobs.push_back({&runs, files->size()});
      files->push_back(std::move(df));
    }
    // The partitions' files in parallel, as the Parquet sink writes them, with its
    // writer settings (internal::WriteLandingParquetFile).
    const bool local = !ice::FileIO::IsS3(table_location_);
    std::vector<Status> results(jobs.size());
    internal::ParallelFor(jobs.size(), internal::UsableCores(), [&](size_t i) {
      results[i] =
          WriteDataFile(*converted_all, *jobs[i].runs, local, &(*files)[jobs[i].index]);
    });
    for (const Status& st : results) KELT_RETURN_NOT_OK(st);
    // The renames of this window's files, durable at once (one sync of data/).
    if (local && !jobs.empty()) {
      KELT_ASSIGN_OR_RAISE(std::string dir, ice::LocalPath(table_location_ + "/data"));
      KELT_RETURN_NOT_OK(internal::SyncPath(dir, true));
    }
    return Status::OK();
  }

  // One data file of WriteDataFiles: the rows of `runs` of `converted_all`, written at
  // df->path (fsynced when `local`; on S3 staged, then uploaded), and its size, record
  // count and column statistics. Touches nothing but `df` (runs in parallel).
  Status WriteDataFile(const arrow::RecordBatch& converted_all, const Runs& runs,
                       bool local, ice::DataFile* df) const {
    std::vector<std::shared_ptr<arrow::RecordBatch>> slices;
    for (const auto& [start, length] : runs.runs) {
      slices.push_back(converted_all.Slice(start, length));
    }
    std::shared_ptr<arrow::RecordBatch> converted = slices.front();
    if (slices.size() > 1) {
      auto joined = arrow::ConcatenateRecordBatches(slices);
      if (!joined.ok()) return Status::Internal(joined.status().ToString());
      converted = *joined;
    }
    // On S3: written to a staging file, sized there, then uploaded whole.
    std::uintmax_t size = 0;
    std::vector<int> without_statistics;
    KELT_RETURN_NOT_OK(io_->WriteVia(df->path, [&](const std::string& path) {
      KELT_RETURN_NOT_OK(internal::WriteLandingParquetFile(*converted, path, local, {},
                                                           &without_statistics));
      std::error_code ec;
      size = std::filesystem::file_size(path, ec);
      if (ec) return Status::IOError("stat " + path + ": " + ec.message());
      return Status::OK();
    }));
    df->file_size = static_cast<int64_t>(size);
    df->record_count = converted->num_rows();
    // The columns the writer leaves without min/max statistics (mostly distinct,
    // unordered text: no reader prunes a file by them) get no bounds in the manifest
    // either; bounds are optional in Iceberg, the counts stay.
    KELT_ASSIGN_OR_RAISE(
        df->stats, ice::ComputeStats(*converted, mapping_.schema, without_statistics));
    return Status::OK();
  }

  void RemoveDataFile(const std::string& location) { io_->Remove(location); }

  // The files of commits that never happened and never can: best effort, as nothing
  // depends on it but disk space. An error (a concurrent `kelt iceberg expire` removed a
  // manifest list this start read the table with, an unreachable store) is a warning;
  // the files stay for a later start.
  void RemoveLeftovers() {
    Status st = TryRemoveLeftovers();
    if (!st.ok()) {
      Log(LogLevel::kWarning, "iceberg",
          name() +
              ": leftover files not cleaned up at this start (a later start tries "
              "again): " +
              st.ToString());
    }
  }

  // Data files this table's writers of this group wrote (named with their tag) that no
  // snapshot references and whose range lies below the group's stored next offset: no
  // commit can take them any more (a commit first re-reads the table and leaves such rows
  // out, and one built on a base older than the table read here can never win); the
  // others may belong to a commit in flight and are left for a later start. Then the dead
  // manifests, manifest lists and metadata files (iceberg::FindMetadataLeftovers has
  // the argument). Nothing is removed unless the catalog still points at the table
  // read here once both directories are listed.
  Status TryRemoveLeftovers() {
    KELT_ASSIGN_OR_RAISE(ice::LoadedTable t, Load());
    const ice::TableMetadata& m = t.metadata;
    const std::string tag = ice::TableTag(m.table_uuid) + GroupTag(o_.group_id);
    KELT_ASSIGN_OR_RAISE(OffsetMap stored, GroupOffsets(m, o_.group_id));
    const std::string data_dir = m.location + "/data";
    KELT_ASSIGN_OR_RAISE(auto listed, io_->List(data_dir));
    std::vector<std::string> dead_data, untagged;
    size_t kept = 0;
    // Judged first against the current snapshot's files alone; if a file would be
    // removed (or reported), all are judged again against every snapshot's (an older
    // snapshot may still name it), which reads each snapshot's manifest list: a clean
    // start, or one after a crash that left only files no commit can drop yet, reads one
    // list however many snapshots the table keeps. (Kept files are never removed; their
    // count may then include one an older snapshot names.)
    auto judge = [&](bool current_only) -> Status {
      KELT_ASSIGN_OR_RAISE(auto referenced,
                           ice::ReferencedDataFiles(m, *io_, current_only));
      std::set<std::string> live;  // base names: data/ is flat
      for (const auto& r : referenced) live.insert(r.substr(r.rfind('/') + 1));
      dead_data.clear();
      untagged.clear();
      kept = 0;
      for (const auto& file : listed) {
        // A data file, or the Parquet writer's hidden staging file of one that a crash
        // cut off (".<name>.<token>.inprogress"): the same rule holds for both.
        std::string data_name = file;
        const std::string suffix = ".inprogress";
        if (file.size() > suffix.size() + 1 && file[0] == '.' &&
            file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0) {
          data_name = file.substr(1, file.size() - 1 - suffix.size());
          data_name = data_name.substr(0, data_name.rfind('.'));  // the token
        }
        auto parsed = DataFileName::Parse(data_name);
        if (!parsed || live.count(file)) continue;
        // Another table's, or another group's (judged by its own offsets).
        if (!parsed->tag.empty() && parsed->tag != tag) continue;
        auto it = stored.find(parsed->tp);
        if (it == stored.end() || parsed->last >= it->second) {
          ++kept;
        } else if (parsed->tag.empty()) {
          untagged.push_back(data_dir + "/" + file);
        } else {
          dead_data.push_back(data_dir + "/" + file);
        }
      }
      return Status::OK();
    };
    KELT_RETURN_NOT_OK(judge(/*current_only=*/true));
    if (!dead_data.empty() || !untagged.empty()) {
      KELT_RETURN_NOT_OK(judge(/*current_only=*/false));
    }
    // Lists metadata/, then reads the catalog again: `moved` covers data/ too.
    KELT_ASSIGN_OR_RAISE(ice::MetadataLeftovers leftovers,
                         ice::FindMetadataLeftovers(*catalog_, id(), t, *io_));
    if (leftovers.moved) {
      Log(LogLevel::kInfo, "iceberg",
          name() +
              ": another writer committed while this start looked for leftover "
              "files; none removed (a later start tries again)");
      return Status::OK();
    }
    for (const auto& f : dead_data) io_->Remove(f);
    if (!dead_data.empty() || kept) {
      Log(LogLevel::kInfo, "iceberg",
          name() + ": removed " + std::to_string(dead_data.size()) +
              " uncommitted data file(s); left " + std::to_string(kept) +
              " not yet safe to remove");
    }
    if (!untagged.empty()) {
      Log(LogLevel::kWarning, "iceberg",
          name() + ": " + std::to_string(untagged.size()) +
              " data file(s) of an older kelt below the stored offsets that no snapshot "
              "names (e.g. " +
              SomeOf(untagged) +
              "): remove them by hand while no writer runs, unless another table shares "
              "this location (their names do not say which table wrote them)");
    }
    for (const auto& f : leftovers.dead) io_->Remove(f);
    if (!leftovers.dead.empty()) {
      Log(LogLevel::kInfo, "iceberg",
          name() + ": removed " + std::to_string(leftovers.dead.size()) +
              " metadata, manifest and manifest list file(s) of commits that never "
              "happened");
    }
    if (!leftovers.undecided.empty()) {
      Log(LogLevel::kWarning, "iceberg",
          name() + ": " + std::to_string(leftovers.undecided.size()) +
              " metadata, manifest or manifest list file(s) of an older kelt that no "
              "snapshot names (e.g. " +
              SomeOf(leftovers.undecided) +
              "): remove them by hand while no writer runs (kelt cannot tell whether a "
              "commit in flight, or another table at this location, needs them)");
    }
    return Status::OK();
  }

  const IcebergSinkOptions& o_;
  const std::string table_;
  ice::Catalog* catalog_;
  const ice::FileIO* io_;
  std::shared_ptr<arrow::Schema> landing_;
  ice::LandingMapping mapping_;
  ice::PartitionSpec spec_;
  std::vector<ice::PartitionColumn> partition_columns_;
  std::string location_;
  std::string table_location_;
  std::string file_tag_;  // TableTag + GroupTag
};

class IcebergSink final : public Sink {
 public:
  explicit IcebergSink(IcebergSinkOptions o) : o_(std::move(o)) {}

  std::string name() const override {
    return "iceberg:" + o_.table_namespace + "." + o_.table + " (catalog " +
           ice::CatalogDisplayName(o_.catalog) + ")";
  }

  Status Open(const std::shared_ptr<arrow::Schema>& landing,
              const std::shared_ptr<arrow::Schema>& dead_letter) override {
    for (const char* c : {"_kafka_topic", "_kafka_partition", "_kafka_offset"}) {
      if (landing->GetFieldIndex(c) < 0) {
        return Status::Invalid(name() + ": the landing schema needs the column " + c +
                               " (the sink keeps each record once by its offset)");
      }
    }
    if (!ice::IsPostgresCatalog(o_.catalog)) {
      // SQLite creates the catalog file, not its directory.
      std::error_code dir_ec;
      const auto catalog_dir = std::filesystem::path(o_.catalog).parent_path();
      if (!catalog_dir.empty()) std::filesystem::create_directories(catalog_dir, dir_ec);
      if (dir_ec) {
        return Status::IOError(name() + ": create " + catalog_dir.string() + ": " +
                               dir_ec.message());
      }
    }
    KELT_ASSIGN_OR_RAISE(catalog_, ice::OpenCatalog(o_.catalog, o_.catalog_name));
    io_ = std::make_unique<ice::FileIO>(internal::ObjectStoreOptions{
        o_.s3_endpoint, o_.s3_region, o_.s3_access_key, o_.s3_secret_key});
    dead_letter_schema_ = dead_letter;
    main_ = std::make_unique<TableWriter>(o_, o_.table, catalog_.get(), io_.get());
    return main_->Open(landing, o_.partition);
  }

  Result<OffsetMap> Resume(const std::vector<TopicPartition>& partitions) override {
    return main_->Resume(partitions);
  }

  // Dead letters first, in the sibling table `<table>_dead_letter`: if the landing
  // commit then fails, the window is read again and the sibling, which holds its
  // offsets already, leaves those dead letters out. Resume follows the landing table.
  Result<OffsetMap> Write(const SinkWindow& window) override {
    if (window.dead_letters && window.dead_letters->num_rows() > 0) {
      if (!dead_letters_) {
        if (!dead_letter_schema_) {
          return Status::Invalid(name() + ": dead letters without a dead-letter schema");
        }
        auto dl = std::make_unique<TableWriter>(o_, o_.table + "_dead_letter",
                                                catalog_.get(), io_.get());
        KELT_RETURN_NOT_OK(dl->Open(dead_letter_schema_, ""));
        dead_letters_ = std::move(dl);
      }
      KELT_RETURN_NOT_OK(dead_letters_->Land(window.dead_letters, window.spans).status());
    }
    return main_->Land(window.batch, window.spans);
  }

  // New nullable columns: a new table schema with them (new field ids); the files
  // landed before read them as null.
  Status Evolve(const std::shared_ptr<arrow::Schema>& landing) override {
    if (!main_) return Status::Invalid(name() + ": Evolve before Open");
    KELT_RETURN_NOT_OK(
        internal::AddedColumns(*main_->landing(), *landing, name()).status());
    return main_->Evolve(landing);
  }

  Result<OffsetMap> Flush() override { return OffsetMap{}; }
  Status Drop(const std::vector<TopicPartition>& partitions) override {
    return Status::OK();  // nothing is held between windows
  }
  Status Close() override {
    dead_letters_.reset();
    main_.reset();
    catalog_.reset();
    return Status::OK();
  }

 private:
  IcebergSinkOptions o_;
  std::unique_ptr<ice::Catalog> catalog_;
  std::unique_ptr<ice::FileIO> io_;
  std::shared_ptr<arrow::Schema> dead_letter_schema_;
  std::unique_ptr<TableWriter> main_;
  std::unique_ptr<TableWriter> dead_letters_;
};

}  // namespace

std::string IcebergCatalogShown(const std::string& catalog) {
  return ice::CatalogDisplayName(catalog);
}

Result<std::unique_ptr<Sink>> MakeIcebergSink(IcebergSinkOptions options) {
  if (options.catalog.empty()) return Status::Invalid("iceberg: catalog is required");
  if (options.warehouse.empty()) return Status::Invalid("iceberg: warehouse is required");
  for (const auto* n : {&options.table_namespace, &options.table}) {
    if (!IsSafeName(*n)) {
      return Status::Invalid("iceberg: '" + *n +
                             "' is not a valid namespace or table name (letters, digits, "
                             "'_', '-', '.'; not starting with '.')");
    }
  }
  if (options.group_id.empty()) return Status::Invalid("iceberg: group_id is required");
  return std::unique_ptr<Sink>(std::make_unique<IcebergSink>(std::move(options)));
}

}  // namespace kelt
