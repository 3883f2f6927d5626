// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Exactly once survives maintenance because neither command changes what the current
// snapshot's lineage says about offsets: compaction copies every group's offsets into
// its `replace` snapshot, and expiry keeps the lineage down to the newest snapshot
// carrying each group's offsets. Both commit by compare-and-swap against the table
// they planned on, so a concurrent append either lands first (and the plan is redone
// on top of it) or lands on top of the maintenance snapshot.

#include "kelt/iceberg/maintenance.h"

#include <arrow/api.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <tuple>

#include "kelt/iceberg/manifest.h"
#include "kelt/iceberg/partition.h"
#include "kelt/iceberg/table.h"
#include "kelt/iceberg/table_schema.h"

namespace kelt::iceberg {
namespace {

std::string TableName(Catalog& catalog, const TableIdentifier& id) {
  return "table " + id.ns + "." + id.name + " in " + catalog.name();
}

Result<LoadedTable> Load(Catalog& catalog, const TableIdentifier& id, const FileIO& io) {
  KELT_ASSIGN_OR_RAISE(std::optional<LoadedTable> t, LoadTable(catalog, id, io));
  if (!t) return Status::NotFound("the catalog has no such table");
  return std::move(*t);
}

// The current snapshot and its ancestors, newest first (stopping at a missing parent).
std::vector<const Snapshot*> Lineage(const TableMetadata& m) {
  std::vector<const Snapshot*> out;
  const Snapshot* s = m.CurrentSnapshot();
  while (s && out.size() <= m.snapshots.size()) {
    out.push_back(s);
    s = s->parent_snapshot_id ? m.FindSnapshot(*s->parent_snapshot_id) : nullptr;
  }
  return out;
}

bool IsOffsetsKey(const std::string& key) { return key.rfind(kOffsetsKeyPrefix, 0) == 0; }

int64_t SummaryInt(const Snapshot& s, const char* key) {
  auto it = s.summary.find(key);
  if (it == s.summary.end()) return 0;
  try {
    return std::stoll(it->second);
  } catch (...) {
    return 0;
  }
}

}  // namespace

std::map<std::string, std::string> LineageOffsets(const TableMetadata& m) {
  std::map<std::string, std::string> out;
  for (const Snapshot* s : Lineage(m)) {
    for (const auto& [k, v] : s->summary) {
      if (IsOffsetsKey(k)) out.emplace(k, v);  // the newest wins
    }
  }
  return out;
}

// --- expire ----------------------------------------------------------------------------

namespace {

struct ExpirePlan {
  TableMetadata next;
  std::vector<int64_t> expired;
  std::vector<std::string> lists, manifests, data_files;  // to delete after the swap
  std::vector<std::string> outside;  // referenced only by expired snapshots, not deleted
};

// Which snapshots stay, and which files only the others reference.
Result<ExpirePlan> PlanExpiry(const TableMetadata& m, const ExpireOptions& o,
                              const FileIO& io) {
  ExpirePlan plan;
  std::set<int64_t> keep;
  const std::vector<const Snapshot*> lineage = Lineage(m);
  for (size_t i = 0; i < lineage.size(); ++i) {
    if (static_cast<int>(i) < std::max(o.retain_last, 1))
      keep.insert(lineage[i]->snapshot_id);
  }
  // The sink resumes from the newest snapshot of the lineage carrying its group's
  // offsets, reached through parent links: keep the lineage down to the last of them.
  std::set<std::string> groups;
  for (const Snapshot* s : lineage) {
    for (const auto& [k, v] : s->summary) {
      if (IsOffsetsKey(k)) groups.insert(k);
    }
  }
  for (const Snapshot* s : lineage) {
    if (groups.empty()) break;
    keep.insert(s->snapshot_id);
    for (const auto& [k, v] : s->summary) groups.erase(k);
  }
  for (const Snapshot& s : m.snapshots) {
    if (s.timestamp_ms >= o.older_than_ms) keep.insert(s.snapshot_id);
  }
  std::vector<const Snapshot*> kept, expired;
  for (const Snapshot& s : m.snapshots) {
    (keep.count(s.snapshot_id) ? kept : expired).push_back(&s);
  }
  if (expired.empty()) return plan;

  // What the kept snapshots still read.
  std::set<std::string> kept_lists, kept_manifests, kept_files;
  for (const Snapshot* s : kept) {
    kept_lists.insert(s->manifest_list);
    KELT_ASSIGN_OR_RAISE(auto manifests, ReadManifestListAt(io, s->manifest_list));
    for (const auto& mf : manifests) kept_manifests.insert(mf.path);
  }
  for (const auto& path : kept_manifests) {
    KELT_ASSIGN_OR_RAISE(auto entries, ReadManifestEntriesAt(io, path));
    for (const auto& e : entries) {
      if (e.status != EntryStatus::kDeleted) kept_files.insert(e.file.path);
    }
  }
  // What only the expired ones reference: their lists, the manifests no kept list
  // names, and every data file those manifests mention (DELETED entries included:
  // the files a compaction replaced) that no kept manifest lists as live.
  std::set<std::string> lists, manifests, files;
  for (const Snapshot* s : expired) {
    plan.expired.push_back(s->snapshot_id);
    if (!kept_lists.count(s->manifest_list)) lists.insert(s->manifest_list);
    KELT_ASSIGN_OR_RAISE(auto entries, ReadManifestListAt(io, s->manifest_list));
    for (const auto& mf : entries) {
      if (!kept_manifests.count(mf.path)) manifests.insert(mf.path);
    }
  }
  for (const auto& path : manifests) {
    KELT_ASSIGN_OR_RAISE(auto entries, ReadManifestEntriesAt(io, path));
    for (const auto& e : entries) {
      if (!kept_files.count(e.file.path)) files.insert(e.file.path);
    }
  }
  // Paths come from the table's own files, which anyone with write access to the
  // warehouse could have crafted: only what lies under the table's location (no "..")
  // is ever deleted; anything else is left where it is and counted.
  const std::string root =
      m.location + (m.location.empty() || m.location.back() == '/' ? "" : "/");
  auto inside = [&](const std::string& path) {
    return !root.empty() && path.size() > root.size() &&
           path.compare(0, root.size(), root) == 0 &&
           path.find("/../", root.size() - 1) == std::string::npos &&
           path.compare(path.size() - 3, 3, "/..") != 0;
  };
  for (auto* group : {&lists, &manifests, &files}) {
    for (auto it = group->begin(); it != group->end();) {
      if (inside(*it)) {
        ++it;
      } else {
        plan.outside.push_back(*it);
        it = group->erase(it);
      }
    }
  }
  plan.lists.assign(lists.begin(), lists.end());
  plan.manifests.assign(manifests.begin(), manifests.end());
  plan.data_files.assign(files.begin(), files.end());

  plan.next = m;
  TableMetadata& n = plan.next;
  n.snapshots.clear();
  for (const Snapshot* s : kept) n.snapshots.push_back(*s);
  // The snapshot log keeps the entries of kept snapshots (it must name only snapshots
  // the metadata holds).
  std::vector<LogEntry> log;
  for (const auto& e : m.snapshot_log) {
    try {
      if (keep.count(std::stoll(e.value))) log.push_back(e);
    } catch (...) {
    }
  }
  n.snapshot_log = std::move(log);
  n.last_updated_ms = std::max(NowMs(), m.last_updated_ms);
  return plan;
}

}  // namespace

Result<ExpireOutcome> ExpireSnapshots(Catalog& catalog, const TableIdentifier& id,
                                      const ExpireOptions& options, const FileIO& io) {
  ExpireOutcome out;
  for (int attempt = 1; attempt <= std::max(options.max_attempts, 1); ++attempt) {
    out.attempts = attempt;
    auto base = Load(catalog, id, io);
    if (!base.ok()) return base.status().WithPrefix(TableName(catalog, id) + ": ");
    auto plan = PlanExpiry(base->metadata, options, io);
    if (!plan.ok()) return plan.status().WithPrefix(TableName(catalog, id) + ": ");
    if (plan->expired.empty()) {
      out.snapshots_kept = static_cast<int64_t>(base->metadata.snapshots.size());
      return out;
    }
    auto committed = CommitMetadata(catalog, id, *base, plan->next, {}, io);
    if (!committed.ok()) {
      return committed.status().WithPrefix(TableName(catalog, id) + ": ");
    }
    if (!*committed) continue;  // a concurrent commit won: plan again on top of it
    // Committed: nothing the table reads names these files any more.
    for (const auto& f : plan->data_files) io.Remove(f);
    for (const auto& f : plan->manifests) io.Remove(f);
    for (const auto& f : plan->lists) io.Remove(f);
    out.expired = plan->expired;
    out.snapshots_kept = static_cast<int64_t>(plan->next.snapshots.size());
    out.data_files_deleted = static_cast<int64_t>(plan->data_files.size());
    out.manifests_deleted = static_cast<int64_t>(plan->manifests.size());
    out.manifest_lists_deleted = static_cast<int64_t>(plan->lists.size());
    out.files_outside_table = plan->outside;
    return out;
  }
  return Status::Unavailable(TableName(catalog, id) +
                             ": expire lost the catalog's compare-and-swap " +
                             std::to_string(options.max_attempts) +
                             " times in a row (writers commit faster than it plans)");
}

// --- compact ---------------------------------------------------------------------------

namespace {

using Tuple = std::vector<std::optional<PartitionDatum>>;

// A live entry of the current snapshot, its inherited values resolved.
struct LiveFile {
  size_t manifest = 0;  // index into the current manifest list
  ManifestEntry entry;
};

// Read `files` with the codec and join them into one batch.
Result<std::shared_ptr<arrow::RecordBatch>> ReadAll(
    const std::vector<const LiveFile*>& files, const DataFileCodec& codec,
    const FileIO& io) {
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  for (const LiveFile* f : files) {
    Result<std::shared_ptr<arrow::RecordBatch>> batch = Status::Internal("not read");
    KELT_RETURN_NOT_OK(io.ReadVia(f->entry.file.path, [&](const std::string& path) {
      batch = codec.read(path);
      return batch.status().WithPrefix(f->entry.file.path + ": ");
    }));
    if ((*batch)->num_rows() != f->entry.file.record_count) {
      return Status::Invalid("data file " + f->entry.file.path + " has " +
                             std::to_string((*batch)->num_rows()) +
                             " rows, its manifest entry says " +
                             std::to_string(f->entry.file.record_count));
    }
    batches.push_back(std::move(*batch));
  }
  auto table = arrow::Table::FromRecordBatches(batches);
  if (!table.ok()) {
    return Status::Invalid("data files of one partition differ in schema: " +
                           table.status().ToString());
  }
  auto joined = (*table)->CombineChunksToBatch();
  if (!joined.ok()) return Status::Internal(joined.status().ToString());
  return *joined;
}

// One attempt: plan on `base`, write the new files, commit. committed=false in the
// outcome with nothing written: nothing to compact. Lost swap: nullopt (files removed).
Result<std::optional<CompactOutcome>> CompactOnce(
    Catalog& catalog, const TableIdentifier& id, const LoadedTable& base,
    const CompactOptions& o, const DataFileCodec& codec, const FileIO& io, int attempt) {
  const TableMetadata& bm = base.metadata;
  CompactOutcome out;
  const Snapshot* current = bm.CurrentSnapshot();
  if (!current) return std::optional<CompactOutcome>(out);
  const Schema* schema = bm.CurrentSchema();
  const PartitionSpec* spec = bm.DefaultSpec();
  if (!schema || !spec) {
    return Status::Invalid("metadata has no current schema or default spec");
  }
  KELT_ASSIGN_OR_RAISE(std::vector<PartitionColumn> partition,
                       PartitionColumns(*spec, *schema));
  KELT_ASSIGN_OR_RAISE(std::vector<ManifestFile> manifests,
                       ReadManifestListAt(io, current->manifest_list));
  std::vector<LiveFile> live;
  for (size_t i = 0; i < manifests.size(); ++i) {
    const ManifestFile& mf = manifests[i];
    if (mf.content != 0) {
      return Status::NotImplemented(
          "the table has delete files, which kelt cannot apply");
    }
    KELT_ASSIGN_OR_RAISE(auto entries, ReadManifestEntriesAt(io, mf.path));
    for (auto& e : entries) {
      if (e.status == EntryStatus::kDeleted) continue;
      // Resolve what the entry inherits from the manifest list.
      if (!e.snapshot_id) e.snapshot_id = mf.added_snapshot_id;
      if (!e.sequence_number) e.sequence_number = mf.sequence_number;
      if (!e.file_sequence_number) e.file_sequence_number = mf.sequence_number;
      live.push_back(LiveFile{i, std::move(e)});
    }
  }
  // Plan: per partition tuple (of the default spec), the small files, oldest first,
  // packed into bins of about the target size; a bin of one file is left alone.
  std::map<Tuple, std::vector<const LiveFile*>> small;
  for (const LiveFile& f : live) {
    if (manifests[f.manifest].partition_spec_id != spec->spec_id) continue;
    if (f.entry.file.file_size >= o.target_file_size) continue;
    small[f.entry.file.partition].push_back(&f);
  }
  std::vector<std::vector<const LiveFile*>> bins;
  for (auto& [tuple, files] : small) {
    if (static_cast<int>(files.size()) < std::max(o.min_files, 2)) continue;
    std::stable_sort(files.begin(), files.end(),
                     [](const LiveFile* a, const LiveFile* b) {
                       return std::tie(*a->entry.sequence_number, a->entry.file.path) <
                              std::tie(*b->entry.sequence_number, b->entry.file.path);
                     });
    bool any = false;
    std::vector<const LiveFile*> bin;
    int64_t size = 0;
    auto close_bin = [&] {
      if (bin.size() >= 2) {
        bins.push_back(std::move(bin));
        any = true;
      }
      bin.clear();
      size = 0;
    };
    for (const LiveFile* f : files) {
      bin.push_back(f);
      size += f->entry.file.file_size;
      if (size >= o.target_file_size) close_bin();
    }
    close_bin();
    if (any) ++out.partitions;
  }
  if (bins.empty()) return std::optional<CompactOutcome>(out);

  const int64_t snapshot_id = NewSnapshotId();
  const int64_t seq = bm.last_sequence_number + 1;
  const std::string token = RandomUuid();
  std::vector<std::string> written;
  auto fail = [&](Status st) {
    for (const auto& w : written) io.Remove(w);
    return st;
  };
  std::vector<ManifestEntry> entries;
  std::set<const LiveFile*> rewritten;
  int64_t added_size = 0, removed_size = 0, records = 0;
  for (size_t b = 0; b < bins.size(); ++b) {
    auto batch = ReadAll(bins[b], codec, io);
    if (!batch.ok()) return fail(batch.status());
    // Not "kelt-…": the sink's leftover check must never take a compacted file for
    // one of its own uncommitted ones.
    DataFile df;
    df.path = bm.location + "/data/compact-" + token.substr(0, 8) + "-" +
              std::to_string(b) + ".parquet";
    df.partition = bins[b].front()->entry.file.partition;
    df.record_count = (*batch)->num_rows();
    std::uintmax_t size = 0;
    Status st = io.WriteVia(df.path, [&](const std::string& path) {
      KELT_RETURN_NOT_OK(codec.write(**batch, path));
      std::error_code ec;
      size = std::filesystem::file_size(path, ec);
      if (ec) return Status::IOError("stat " + path + ": " + ec.message());
      return Status::OK();
    });
    written.push_back(df.path);
    if (!st.ok()) return fail(st);
    df.file_size = static_cast<int64_t>(size);
    auto stats = ComputeStats(**batch, *schema);
    if (!stats.ok()) return fail(stats.status());
    df.stats = std::move(*stats);
    added_size += df.file_size;
    records += df.record_count;
    entries.push_back(
        ManifestEntry{EntryStatus::kAdded, snapshot_id, std::nullopt, std::nullopt, df});
    for (const LiveFile* f : bins[b]) {
      rewritten.insert(f);
      removed_size += f->entry.file.file_size;
      ManifestEntry gone = f->entry;
      gone.status = EntryStatus::kDeleted;
      gone.snapshot_id = snapshot_id;
      entries.push_back(std::move(gone));
    }
    out.files_rewritten += static_cast<int64_t>(bins[b].size());
    out.files_written += 1;
  }
  // The manifests holding a rewritten file are replaced by the new one, which keeps
  // their other live files as EXISTING; the other manifests are carried over as is.
  std::set<size_t> touched;
  for (const LiveFile* f : rewritten) touched.insert(f->manifest);
  int64_t min_seq = seq;
  for (const LiveFile& f : live) {
    if (!touched.count(f.manifest) || rewritten.count(&f)) continue;
    ManifestEntry kept = f.entry;
    kept.status = EntryStatus::kExisting;
    min_seq = std::min(min_seq, *kept.sequence_number);
    entries.push_back(std::move(kept));
  }
  ManifestContext ctx{*schema, *spec, partition, snapshot_id};
  const std::string meta_dir = bm.location + "/metadata/";
  const std::string manifest_loc =
      meta_dir + ManifestFileName(bm.table_uuid, base.metadata_location, token);
  Result<ManifestFile> mf = Status::Internal("manifest not written");
  Status st = io.WriteVia(manifest_loc, [&](const std::string& path) {
    mf = WriteManifestEntries(path, ctx, entries);
    return mf.status();
  });
  if (!st.ok()) return fail(st);
  written.push_back(manifest_loc);
  mf->path = manifest_loc;
  mf->sequence_number = seq;
  mf->min_sequence_number = min_seq;
  std::vector<ManifestFile> list = {*mf};
  for (size_t i = 0; i < manifests.size(); ++i) {
    if (!touched.count(i)) list.push_back(manifests[i]);
  }
  const std::string list_loc =
      meta_dir +
      ManifestListFileName(snapshot_id, bm.table_uuid, base.metadata_location, token);
  st = io.WriteVia(list_loc, [&](const std::string& path) {
    return WriteManifestList(path, snapshot_id, current->snapshot_id, seq, list);
  });
  if (!st.ok()) return fail(st);
  written.push_back(list_loc);

  Snapshot snap;
  snap.snapshot_id = snapshot_id;
  snap.parent_snapshot_id = current->snapshot_id;
  snap.sequence_number = seq;
  snap.timestamp_ms = std::max(NowMs(), bm.last_updated_ms);
  snap.manifest_list = list_loc;
  snap.schema_id = schema->schema_id;
  // A sink resuming after the compaction resumes where it would have before.
  snap.summary = LineageOffsets(bm);
  const int64_t total_files =
      static_cast<int64_t>(live.size()) - out.files_rewritten + out.files_written;
  snap.summary["operation"] = "replace";
  snap.summary["added-data-files"] = std::to_string(out.files_written);
  snap.summary["deleted-data-files"] = std::to_string(out.files_rewritten);
  snap.summary["added-records"] = std::to_string(records);
  snap.summary["deleted-records"] = std::to_string(records);
  snap.summary["added-files-size"] = std::to_string(added_size);
  snap.summary["removed-files-size"] = std::to_string(removed_size);
  snap.summary["total-data-files"] = std::to_string(total_files);
  snap.summary["total-records"] = std::to_string(SummaryInt(*current, "total-records"));
  snap.summary["total-files-size"] = std::to_string(
      SummaryInt(*current, "total-files-size") - removed_size + added_size);
  snap.summary["total-delete-files"] = "0";
  snap.summary["total-position-deletes"] = "0";
  snap.summary["total-equality-deletes"] = "0";

  if (o.before_commit) o.before_commit(attempt);
  TableMetadata nm = bm;
  nm.last_sequence_number = seq;
  nm.last_updated_ms = snap.timestamp_ms;
  nm.current_snapshot_id = snapshot_id;
  nm.snapshot_log.push_back({snap.timestamp_ms, std::to_string(snapshot_id)});
  nm.snapshots.push_back(std::move(snap));
  KELT_ASSIGN_OR_RAISE(std::optional<LoadedTable> committed,
                       CommitMetadata(catalog, id, base, std::move(nm), written, io));
  if (!committed) return std::optional<CompactOutcome>();
  out.committed = true;
  out.snapshot_id = snapshot_id;
  out.records = records;
  return std::optional<CompactOutcome>(out);
}

}  // namespace

Result<CompactOutcome> CompactTable(Catalog& catalog, const TableIdentifier& id,
                                    const CompactOptions& options,
                                    const DataFileCodec& codec, const FileIO& io) {
  if (options.target_file_size <= 0) {
    return Status::Invalid(TableName(catalog, id) +
                           ": the target file size must be positive");
  }
  for (int attempt = 1; attempt <= std::max(options.max_attempts, 1); ++attempt) {
    auto base = Load(catalog, id, io);
    if (!base.ok()) return base.status().WithPrefix(TableName(catalog, id) + ": ");
    auto done = CompactOnce(catalog, id, *base, options, codec, io, attempt);
    if (!done.ok()) return done.status().WithPrefix(TableName(catalog, id) + ": ");
    if (*done) {
      (*done)->attempts = attempt;
      return **done;
    }
    // Lost the swap to a concurrent commit (a run landing): plan again on top of it.
  }
  return Status::Unavailable(TableName(catalog, id) +
                             ": compact lost the catalog's compare-and-swap " +
                             std::to_string(options.max_attempts) +
                             " times in a row (runs commit faster than it rewrites; "
                             "its files of the lost attempts are removed)");
}

}  // namespace kelt::iceberg
