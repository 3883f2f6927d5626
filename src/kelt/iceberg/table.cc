// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0

#include "kelt/iceberg/table.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

namespace kelt::iceberg {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t NewSnapshotId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return static_cast<int64_t>(rng() >> 1) | 1;  // positive, never 0
}

namespace {

// `read(local_path)` of the file at `location` (downloaded first from S3).
template <typename T>
Result<T> ReadAt(const FileIO& io, const std::string& location,
                 Result<T> (*read)(const std::string&)) {
  Result<T> out = Status::Internal("not read");
  KELT_RETURN_NOT_OK(io.ReadVia(location, [&](const std::string& path) {
    out = read(path);
    return out.status();
  }));
  return out;
}

}  // namespace

int64_t MetadataVersion(const std::string& location) {
  std::string file = location.substr(location.rfind('/') + 1);
  size_t i = (!file.empty() && file[0] == 'v') ? 1 : 0;
  int64_t n = 0;
  bool any = false;
  for (; i < file.size() && std::isdigit(static_cast<unsigned char>(file[i])); ++i) {
    n = n * 10 + (file[i] - '0');
    any = true;
  }
  return any ? n : 0;
}

namespace {

std::string MetadataFileName(int64_t version) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "v%05lld-", static_cast<long long>(version));
  return std::string(buf) + RandomUuid() + ".metadata.json";
}

int64_t SummaryInt(const Snapshot* s, const char* key) {
  if (!s) return 0;
  auto it = s->summary.find(key);
  if (it == s->summary.end()) return 0;
  try {
    return std::stoll(it->second);
  } catch (...) {
    return 0;
  }
}

}  // namespace

std::string TableTag(const std::string& table_uuid) {
  std::string out;
  for (char c : table_uuid) {
    if (out.size() == 8) break;
    if (std::isxdigit(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

std::string ManifestFileName(const std::string& table_uuid,
                             const std::string& base_location, const std::string& token) {
  return "kelt-" + TableTag(table_uuid) + "-base" +
         std::to_string(MetadataVersion(base_location)) + "-" + token + "-m0.avro";
}

std::string ManifestListFileName(int64_t snapshot_id, const std::string& table_uuid,
                                 const std::string& base_location,
                                 const std::string& token) {
  return "snap-" + std::to_string(snapshot_id) + "-kelt-" + TableTag(table_uuid) +
         "-base" + std::to_string(MetadataVersion(base_location)) + "-" + token + ".avro";
}

namespace {

// What a sink- or maintenance-written manifest or list name carries.
struct KeltTag {
  std::string table;  // TableTag of its table; empty: an older kelt's name
  int64_t base = -1;  // the base version; -1: none (an older kelt's name)
};

// nullopt when the name is not kelt's.
std::optional<KeltTag> TaggedName(const std::string& name) {
  if (name.size() < 6 || name.substr(name.size() - 5) != ".avro") return std::nullopt;
  size_t at = std::string::npos;
  if (name.rfind("kelt-", 0) == 0) {
    at = 5;
  } else if (name.rfind("snap-", 0) == 0) {
    size_t k = name.find("-kelt-", 5);
    if (k == std::string::npos) return std::nullopt;
    at = k + 6;
  } else {
    return std::nullopt;
  }
  KeltTag out;
  // "<tag>-base<V>-…": eight lower-case hex digits (an older kelt's "base<V>-…" and
  // "<uuid>-…" names have none, or no "-base" after them).
  bool tagged = name.size() > at + 13 && name.compare(at + 8, 5, "-base") == 0;
  for (size_t i = at; tagged && i < at + 8; ++i) {
    const char c = name[i];
    tagged = std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
  }
  if (!tagged) return out;
  int64_t v = 0;
  size_t i = at + 13;
  const size_t digits = i;
  for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i) {
    v = v * 10 + (name[i] - '0');
  }
  if (i == digits || i >= name.size() || name[i] != '-') return out;
  out.table = name.substr(at, 8);
  out.base = v;
  return out;
}

// kelt's metadata file name: "v<digits>-<uuid>.metadata.json".
bool IsKeltMetadataFile(const std::string& name) {
  const std::string suffix = ".metadata.json";
  if (name.size() < 3 + suffix.size() || name[0] != 'v' ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return false;
  }
  size_t i = 1;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
  return i > 1 && name[i] == '-';
}

// The last path segment of a location: what a file is compared by within one
// directory, whatever spelling ("file:/…", "file:///…", "/…", "s3://…") named it.
std::string BaseName(const std::string& location) {
  return location.substr(location.rfind('/') + 1);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Result<MetadataLeftovers> FindMetadataLeftovers(Catalog& catalog,
                                                const TableIdentifier& id,
                                                const LoadedTable& t, const FileIO& io) {
  const TableMetadata& m = t.metadata;
  const std::string dir = m.location + "/metadata";
  const std::string tag = TableTag(m.table_uuid);
  const int64_t current = MetadataVersion(t.metadata_location);
  std::set<std::string> named = {BaseName(t.metadata_location)};
  // The oldest of kelt's metadata files the log names: a foreign writer's "00000-…"
  // would restart the count and say nothing about kelt's older files.
  int64_t oldest = current;
  for (const auto& e : m.metadata_log) {
    named.insert(BaseName(e.value));
    if (IsKeltMetadataFile(BaseName(e.value))) {
      oldest = std::min(oldest, MetadataVersion(e.value));
    }
  }
  for (const auto& snap : m.snapshots) named.insert(BaseName(snap.manifest_list));
  // The manifests: first those of the current snapshot alone. Every snapshot's list
  // (with fast appends each names all manifests before it: reading them all is
  // quadratic in the snapshots) is read only if that leaves a manifest-like file
  // unnamed, which an older snapshot may still name.
  auto name_manifests_of = [&](const Snapshot& snap) -> Status {
    KELT_ASSIGN_OR_RAISE(auto manifests, ReadManifestListAt(io, snap.manifest_list));
    for (const auto& mf : manifests) named.insert(BaseName(mf.path));
    return Status::OK();
  };
  const Snapshot* now_snap = m.CurrentSnapshot();
  if (now_snap != nullptr) KELT_RETURN_NOT_OK(name_manifests_of(*now_snap));
  KELT_ASSIGN_OR_RAISE(auto files, io.List(dir));
  MetadataLeftovers out;
  for (const auto& file : files) {
    const std::string location = dir + "/" + file;
    if (named.count(file)) continue;
    if (IsKeltMetadataFile(file)) {
      const int64_t v = MetadataVersion(file);
      if (v > current || v < oldest) continue;
      // Only this table's: another table at the same location has its own lineage.
      auto json = io.Read(location);
      auto other =
          json.ok() ? MetadataFromJson(*json) : Result<TableMetadata>(json.status());
      if (!other.ok()) {
        out.undecided.push_back(location);
      } else if (Lower(other->table_uuid) == Lower(m.table_uuid)) {
        out.dead.push_back(location);
      }
      continue;
    }
    std::optional<KeltTag> name_tag = TaggedName(file);
    if (!name_tag) continue;  // not kelt's
    if (name_tag->table.empty()) {
      out.undecided.push_back(location);
    } else if (name_tag->table == tag && name_tag->base < current) {
      out.dead.push_back(location);
    }
  }
  auto manifest_like = [](const std::vector<std::string>& locations) {
    return std::any_of(locations.begin(), locations.end(), [](const std::string& l) {
      return !IsKeltMetadataFile(BaseName(l));
    });
  };
  if (manifest_like(out.dead) || manifest_like(out.undecided)) {
    for (const auto& snap : m.snapshots) {
      if (&snap != now_snap) KELT_RETURN_NOT_OK(name_manifests_of(snap));
    }
    // What the older snapshots name is no leftover; the rest stands as judged (a
    // metadata file's judgement does not depend on the manifests named).
    auto now_named = [&](const std::string& location) {
      return named.count(BaseName(location)) > 0;
    };
    std::erase_if(out.dead, now_named);
    std::erase_if(out.undecided, now_named);
  }
  // The listing judged the files against t; that holds only while t is current.
  KELT_ASSIGN_OR_RAISE(std::optional<std::string> now, catalog.LoadTable(id));
  if (!now || *now != t.metadata_location) {
    out = MetadataLeftovers{};
    out.moved = true;
  }
  return out;
}

Result<std::string> LocalPath(const std::string& location) {
  if (location.rfind("file://", 0) == 0) return location.substr(7);
  if (location.rfind("file:", 0) == 0) return location.substr(5);
  if (!location.empty() && location[0] == '/') return location;
  return Status::NotImplemented("location '" + location +
                                "': only local warehouses are supported yet");
}

Result<std::optional<LoadedTable>> LoadTable(Catalog& catalog, const TableIdentifier& id,
                                             const FileIO& io) {
  KELT_ASSIGN_OR_RAISE(std::optional<std::string> loc, catalog.LoadTable(id));
  if (!loc) return std::optional<LoadedTable>();
  KELT_ASSIGN_OR_RAISE(std::string json, io.Read(*loc));
  auto m = MetadataFromJson(json);
  if (!m.ok()) return m.status().WithPrefix(*loc + ": ");
  return std::optional<LoadedTable>(LoadedTable{*loc, std::move(*m)});
}

Result<LoadedTable> CreateOrLoadTable(Catalog& catalog, const TableIdentifier& id,
                                      const std::string& location, const Schema& schema,
                                      const PartitionSpec& spec, const FileIO& io) {
  KELT_ASSIGN_OR_RAISE(std::optional<LoadedTable> existing, LoadTable(catalog, id, io));
  if (existing) return std::move(*existing);
  KELT_RETURN_NOT_OK(io.MakeDirs(location + "/metadata"));
  KELT_RETURN_NOT_OK(io.MakeDirs(location + "/data"));
  LoadedTable t;
  t.metadata = NewTableMetadata(location, schema, spec, RandomUuid(), NowMs());
  t.metadata_location = location + "/metadata/" + MetadataFileName(1);
  KELT_RETURN_NOT_OK(io.Write(t.metadata_location, MetadataToJson(t.metadata)));
  KELT_ASSIGN_OR_RAISE(bool created, catalog.CreateTable(id, t.metadata_location));
  if (created) return t;
  io.Remove(t.metadata_location);
  KELT_ASSIGN_OR_RAISE(existing, LoadTable(catalog, id, io));
  if (!existing) return Status::IOError("table " + id.ns + "." + id.name + " vanished");
  return std::move(*existing);
}

Result<AppendOutcome> CommitAppend(Catalog& catalog, const TableIdentifier& id,
                                   const LoadedTable& base,
                                   const std::vector<PartitionColumn>& partition,
                                   const std::vector<DataFile>& files,
                                   const std::map<std::string, std::string>& summary,
                                   const FileIO& io) {
  const TableMetadata& bm = base.metadata;
  const Schema* schema = bm.CurrentSchema();
  const PartitionSpec* spec = bm.DefaultSpec();
  if (!schema || !spec) {
    return Status::Invalid("table " + id.ns + "." + id.name +
                           ": metadata has no current schema or default spec");
  }
  const std::string meta_dir = bm.location + "/metadata/";
  const std::string token = RandomUuid();
  ManifestContext ctx{*schema, *spec, partition, NewSnapshotId()};
  const int64_t seq = bm.last_sequence_number + 1;
  std::vector<std::string> written;  // removed if the swap is lost or a step fails
  auto cleanup = [&] {
    for (const auto& w : written) io.Remove(w);
  };

  std::vector<ManifestFile> manifests;
  const std::string manifest_loc =
      meta_dir + ManifestFileName(bm.table_uuid, base.metadata_location, token);
  Result<ManifestFile> mf = Status::Internal("manifest not written");
  KELT_RETURN_NOT_OK(io.WriteVia(manifest_loc, [&](const std::string& path) {
    mf = WriteManifest(path, ctx, files);
    return mf.status();
  }));
  written.push_back(manifest_loc);
  mf->path = manifest_loc;
  mf->sequence_number = seq;
  mf->min_sequence_number = seq;
  manifests.push_back(std::move(*mf));
  const Snapshot* parent = bm.CurrentSnapshot();
  if (parent) {
    auto previous = ReadManifestListAt(io, parent->manifest_list);
    if (!previous.ok()) {
      cleanup();
      return previous.status();
    }
    for (auto& m : *previous) manifests.push_back(std::move(m));
  }
  const std::string list_loc =
      meta_dir +
      ManifestListFileName(ctx.snapshot_id, bm.table_uuid, base.metadata_location, token);
  Status st = io.WriteVia(list_loc, [&](const std::string& path) {
    return WriteManifestList(path, ctx.snapshot_id, bm.current_snapshot_id, seq,
                             manifests);
  });
  if (!st.ok()) {
    cleanup();
    return st;
  }
  written.push_back(list_loc);

  int64_t added_records = 0, added_size = 0;
  for (const auto& f : files) {
    added_records += f.record_count;
    added_size += f.file_size;
  }
  Snapshot snap;
  snap.snapshot_id = ctx.snapshot_id;
  snap.parent_snapshot_id = bm.current_snapshot_id;
  snap.sequence_number = seq;
  snap.timestamp_ms = std::max(NowMs(), bm.last_updated_ms);
  snap.manifest_list = list_loc;
  snap.schema_id = schema->schema_id;
  snap.summary = summary;
  snap.summary["operation"] = "append";
  snap.summary["added-data-files"] = std::to_string(files.size());
  snap.summary["added-records"] = std::to_string(added_records);
  snap.summary["added-files-size"] = std::to_string(added_size);
  snap.summary["total-data-files"] =
      std::to_string(SummaryInt(parent, "total-data-files") + files.size());
  snap.summary["total-records"] =
      std::to_string(SummaryInt(parent, "total-records") + added_records);
  snap.summary["total-files-size"] =
      std::to_string(SummaryInt(parent, "total-files-size") + added_size);
  snap.summary["total-delete-files"] = "0";
  snap.summary["total-position-deletes"] = "0";
  snap.summary["total-equality-deletes"] = "0";

  TableMetadata nm = bm;
  nm.last_sequence_number = seq;
  nm.last_updated_ms = snap.timestamp_ms;
  nm.current_snapshot_id = snap.snapshot_id;
  nm.snapshot_log.push_back({snap.timestamp_ms, std::to_string(snap.snapshot_id)});
  nm.snapshots.push_back(std::move(snap));
  KELT_ASSIGN_OR_RAISE(std::optional<LoadedTable> committed,
                       CommitMetadata(catalog, id, base, std::move(nm), written, io));
  if (!committed) return AppendOutcome{false, {}};
  return AppendOutcome{true, std::move(*committed)};
}

Result<std::optional<LoadedTable>> CommitMetadata(Catalog& catalog,
                                                  const TableIdentifier& id,
                                                  const LoadedTable& base,
                                                  TableMetadata next_metadata,
                                                  const std::vector<std::string>& written,
                                                  const FileIO& io) {
  auto cleanup = [&] {
    for (const auto& w : written) io.Remove(w);
  };
  const TableMetadata& bm = base.metadata;
  LoadedTable next;
  next.metadata = std::move(next_metadata);
  TableMetadata& nm = next.metadata;
  nm.last_updated_ms = std::max(nm.last_updated_ms, bm.last_updated_ms);
  nm.metadata_log.push_back({bm.last_updated_ms, base.metadata_location});
  // Iceberg's write.metadata.previous-versions-max (default 100): keep the log bounded.
  int64_t keep = 100;
  if (auto it = nm.properties.find("write.metadata.previous-versions-max");
      it != nm.properties.end()) {
    try {
      keep = std::max<int64_t>(1, std::stoll(it->second));
    } catch (...) {
    }
  }
  if (static_cast<int64_t>(nm.metadata_log.size()) > keep) {
    nm.metadata_log.erase(nm.metadata_log.begin(), nm.metadata_log.end() - keep);
  }
  next.metadata_location = bm.location + "/metadata/" +
                           MetadataFileName(std::max<int64_t>(
                               MetadataVersion(base.metadata_location) + 1,
                               static_cast<int64_t>(nm.metadata_log.size()) + 1));
  if (Status st = io.Write(next.metadata_location, MetadataToJson(nm)); !st.ok()) {
    cleanup();
    return st;
  }
  auto swapped = catalog.CommitTable(id, base.metadata_location, next.metadata_location);
  // An error here may leave the outcome unknown (the catalog could not tell whether its
  // UPDATE happened): the files stay, as the table may point at them now.
  if (!swapped.ok()) return swapped.status();
  if (!*swapped) {
    cleanup();  // lost: nothing points at these files
    io.Remove(next.metadata_location);
    return std::optional<LoadedTable>();
  }
  return std::optional<LoadedTable>(std::move(next));
}

Result<std::vector<ManifestEntry>> ReadManifestEntriesAt(const FileIO& io,
                                                         const std::string& location) {
  return ReadAt(io, location, ReadManifestEntries);
}

Result<std::vector<ManifestFile>> ReadManifestListAt(const FileIO& io,
                                                     const std::string& location) {
  return ReadAt(io, location, ReadManifestList);
}

namespace {

Result<std::vector<std::string>> ReadDataFiles(const FileIO& io,
                                               const std::string& location) {
  return ReadAt(io, location, ReadManifestDataFiles);
}

}  // namespace

Result<std::vector<std::string>> CurrentDataFiles(const TableMetadata& metadata,
                                                  const FileIO& io) {
  std::vector<std::string> out;
  const Snapshot* current = metadata.CurrentSnapshot();
  if (!current) return out;
  KELT_ASSIGN_OR_RAISE(auto manifests, ReadManifestListAt(io, current->manifest_list));
  for (const auto& m : manifests) {
    if (m.content != 0) {
      return Status::NotImplemented(
          "table has delete files, which kelt cannot apply yet");
    }
    KELT_ASSIGN_OR_RAISE(auto files, ReadDataFiles(io, m.path));
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

Result<std::vector<std::string>> ReferencedDataFiles(const TableMetadata& metadata,
                                                     const FileIO& io,
                                                     bool current_only) {
  std::set<std::string> manifests;
  const Snapshot* current = metadata.CurrentSnapshot();
  for (const auto& s : metadata.snapshots) {
    if (current_only && &s != current) continue;
    KELT_ASSIGN_OR_RAISE(auto entries, ReadManifestListAt(io, s.manifest_list));
    for (const auto& m : entries) manifests.insert(m.path);
  }
  std::set<std::string> files;
  for (const auto& m : manifests) {
    KELT_ASSIGN_OR_RAISE(auto paths, ReadDataFiles(io, m));
    files.insert(paths.begin(), paths.end());
  }
  return std::vector<std::string>(files.begin(), files.end());
}

}  // namespace kelt::iceberg
