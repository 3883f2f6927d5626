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

/// The short table tag kelt puts in the names of the files it writes for a table: the
/// first 8 hex digits of its `table-uuid`, lower case. Two tables that share a location
/// (two catalogs on one warehouse, a table re-created in place) tell their files apart
/// by it.
std::string TableTag(const std::string& table_uuid);

/// The file names (under the table's metadata/ directory) of the manifest and the
/// manifest list of a commit built on the metadata `base_location` of the table
/// `table_uuid`: "kelt-<tag>-base<V>-<token>-m0.avro" and
/// "snap-<id>-kelt-<tag>-base<V>-<token>.avro", tag = TableTag, V the base's version.
/// A commit can only succeed while its base is current (FindMetadataLeftovers).
std::string ManifestFileName(const std::string& table_uuid,
                             const std::string& base_location, const std::string& token);
std::string ManifestListFileName(int64_t snapshot_id, const std::string& table_uuid,
                                 const std::string& base_location,
                                 const std::string& token);

/// kelt's files in the table's metadata/ directory that nothing of the current lineage
/// names (not the current metadata file, its metadata log, its snapshots' manifest
/// lists or their manifests).
struct MetadataLeftovers {
  /// Never committable any more (see FindMetadataLeftovers): safe to remove.
  std::vector<std::string> dead;
  /// kelt's by name but without this table's tag (an older kelt's names), or a
  /// metadata file that cannot be read: whether a commit in flight, or another table
  /// at the same location, still needs one cannot be told, so they are only listed.
  std::vector<std::string> undecided;
  /// The catalog's pointer moved between the load and the listing: nothing was
  /// judged (dead and undecided are empty); a later start cleans up.
  bool moved = false;
};

/// The leftovers of commits that crashed between writing their files and the swap (or
/// of a crashed `expire`), as locations, for the table `id` loaded as `t`. A commit
/// built on base location L writes manifests and lists tagged with L's version and a
/// metadata file of a version above it, and succeeds only if the catalog still points
/// at L. Versions need not grow along the lineage (a Java or pyiceberg commit restarts
/// them at 0), but locations are never reused. So: the directory is listed, then the
/// catalog is read again; if it still points at t's location, it pointed there all the
/// while, and every commit that can still win is built on t (version V): its files are
/// tagged V or versioned > V and are kept, while a file tagged B < V, or a metadata file
/// of version ≤ V outside the lineage, was built on a base that stopped being current
/// before t did and can never be current again. If the pointer moved, `moved` is set
/// and nothing is judged. Only this table's files are judged: manifests and lists
/// carrying its TableTag, metadata files whose `table-uuid` is its own. Metadata files
/// older than the oldest kelt-named one its metadata log names are kept (committed
/// once, rolled out of the log: Iceberg keeps them unless
/// write.metadata.delete-after-commit is on). A caller that listed other directories
/// before this call (the sink's data/) may rely on the same check: the catalog is read
/// again after them too.
Result<MetadataLeftovers> FindMetadataLeftovers(Catalog& catalog,
                                                const TableIdentifier& id,
                                                const LoadedTable& t,
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

/// Every data file path referenced by any snapshot the metadata holds, or with
/// `current_only` by the current snapshot alone (one manifest list read, not one a
/// snapshot: what a clean start needs).
Result<std::vector<std::string>> ReferencedDataFiles(const TableMetadata& metadata,
                                                     const FileIO& io = FileIO::Local(),
                                                     bool current_only = false);

}  // namespace kelt::iceberg
