// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Table operations over a Catalog: create or load a table, and commit an `append`
// snapshot with a compare-and-swap of the metadata location.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kelt/iceberg/catalog.h"
#include "kelt/iceberg/file_io.h"
#include "kelt/iceberg/manifest.h"
#include "kelt/iceberg/metadata.h"
#include "kelt/status.h"

namespace kelt::iceberg {

struct LoadedTable {
  std::string metadata_location;
  TableMetadata metadata;
};

/// The local path of a location: "file:///a/b" → "/a/b", "/a/b" as is. Other schemes
/// (s3://, which FileIO reads and writes) are kNotImplemented.
Result<std::string> LocalPath(const std::string& location);

/// The table's current metadata, nullopt if the catalog has no such table.
Result<std::optional<LoadedTable>> LoadTable(Catalog& catalog, const TableIdentifier& id,
                                             const FileIO& io = FileIO::Local());

/// Load the table, or create it at `location` (a directory URI) with `schema` and
/// `spec` when it does not exist (if another writer creates it first, load theirs).
Result<LoadedTable> CreateOrLoadTable(Catalog& catalog, const TableIdentifier& id,
                                      const std::string& location, const Schema& schema,
                                      const PartitionSpec& spec,
                                      const FileIO& io = FileIO::Local());

/// The outcome of one attempt to commit.
struct AppendOutcome {
  bool committed = false;  ///< false: the CAS lost; nothing of this attempt remains
  LoadedTable table;       ///< the committed table when committed
};

/// Commit `files` (already written under the table's location) as one `append`
/// snapshot on top of `base`, with `summary` added to the snapshot summary. Writes
/// the manifest, the manifest list and the next metadata file, then swaps the
/// catalog's pointer from base's location to the new one. A lost swap removes the
/// three files it wrote (the data files are the caller's) and returns committed=false.
Result<AppendOutcome> CommitAppend(Catalog& catalog, const TableIdentifier& id,
                                   const LoadedTable& base,
                                   const std::vector<PartitionColumn>& partition,
                                   const std::vector<DataFile>& files,
                                   const std::map<std::string, std::string>& summary,
                                   const FileIO& io = FileIO::Local());

/// Commit `next_metadata` (the base's metadata with the caller's changes: a new
/// snapshot, expired snapshots) as the table's next metadata file: logs the base's
/// location in the metadata log, writes the file and swaps the catalog's pointer from
/// base's location to it. nullopt: the swap was lost, and the new metadata file and
/// the `written` files (the caller's manifests and lists of this attempt) are removed;
/// a failure to write the metadata file removes them too. An error from the swap
/// itself may be of unknown outcome: then every file stays.
Result<std::optional<LoadedTable>> CommitMetadata(Catalog& catalog,
                                                  const TableIdentifier& id,
                                                  const LoadedTable& base,
                                                  TableMetadata next_metadata,
                                                  const std::vector<std::string>& written,
                                                  const FileIO& io = FileIO::Local());

/// The version number of a metadata location "…/v<N>-….metadata.json" or
/// "…/<N>-….metadata.json" (Java, pyiceberg); 0 when it has none.
int64_t MetadataVersion(const std::string& location);

/// The file names (under the table's metadata/ directory) of the manifest and the
/// manifest list of a commit built on the metadata `base_location`:
/// "kelt-base<V>-<token>-m0.avro" and "snap-<id>-kelt-base<V>-<token>.avro", V the base's
/// version. A commit can only succeed while its base is current, so once the table's
/// version is past V such files that no snapshot names are dead (FindMetadataLeftovers).
std::string ManifestFileName(const std::string& base_location, const std::string& token);
std::string ManifestListFileName(int64_t snapshot_id, const std::string& base_location,
                                 const std::string& token);

/// kelt's files in the table's metadata/ directory that nothing of the current lineage
/// names (not the current metadata file, its metadata log, its snapshots' manifest
/// lists or their manifests).
struct MetadataLeftovers {
  /// Never committable any more (see FindMetadataLeftovers): safe to remove.
  std::vector<std::string> dead;
  /// Named by an older kelt without the base version: whether a commit in flight
  /// still needs one cannot be told, so they are only listed.
  std::vector<std::string> undecided;
};

/// The leftovers of commits that crashed between writing their files and the swap (or
/// of a crashed `expire`), as locations. A commit built on base version B writes
/// manifests and lists tagged B and a metadata file of version > B, and succeeds only
/// if the catalog still points at its base. Versions grow strictly along the lineage
/// and metadata locations are never reused, so with `t` at version V: a tagged file
/// with B < V, or a metadata file of version ≤ V outside the lineage, belongs to a
/// commit whose base is gone and can never be current; files of version or tag ≥ V
/// may be a concurrent writer's commit in flight and are kept. Metadata files older
/// than the oldest the metadata log names are kept too (committed once, rolled out of
/// the log: Iceberg keeps them unless write.metadata.delete-after-commit is on).
Result<MetadataLeftovers> FindMetadataLeftovers(const LoadedTable& t,
                                                const FileIO& io = FileIO::Local());

/// A new snapshot id: random, positive.
int64_t NewSnapshotId();

/// Milliseconds since the epoch, now.
int64_t NowMs();

/// The manifests a manifest list names.
Result<std::vector<ManifestFile>> ReadManifestListAt(const FileIO& io,
                                                     const std::string& location);

/// Every entry of a manifest (ReadManifestEntries), through `io`.
Result<std::vector<ManifestEntry>> ReadManifestEntriesAt(const FileIO& io,
                                                         const std::string& location);

/// The live data files of the current snapshot (what a reader of the table sees now);
/// empty for a table without snapshots.
Result<std::vector<std::string>> CurrentDataFiles(const TableMetadata& metadata,
                                                  const FileIO& io = FileIO::Local());

/// Every data file path referenced by any snapshot the metadata holds.
Result<std::vector<std::string>> ReferencedDataFiles(const TableMetadata& metadata,
                                                     const FileIO& io = FileIO::Local());

}  // namespace kelt::iceberg
