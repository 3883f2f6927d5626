// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The layout of a Parquet landing, in one place for the sink that writes it and the
// Transform stage that reads it: directory and file names, the hidden in-progress
// files, and which published files count (complete ranges only).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/landing/filesystem.h"
#include "kelt/offsets.h"
#include "kelt/status.h"

namespace kelt {

/// Escape a value for a Hive-style `key=value` directory: '/', '%', '=', ':', quotes,
/// control characters and the other characters Hive escapes become %XX. Empty → the
/// Hive default partition name.
std::string EscapeHivePathValue(std::string_view value);

/// What a landed file's name says.
struct ParquetFileInfo {
  TopicPartition tp;
  int64_t first = 0;  ///< first offset of the rotation
  int64_t last = 0;   ///< last offset of the rotation
  int part = 1;       ///< this file is part `part` of `parts`
  int parts = 1;
};

/// "<topic>+<partition>+<first:020>+<last:020>[+<part>of<parts>].parquet".
std::string ParquetFileName(const TopicPartition& tp, int64_t first, int64_t last,
                            int part, int parts);
std::optional<ParquetFileInfo> ParseParquetFileName(std::string_view name);

namespace landing {

/// The directory, relative to the root, of a topic's rows ("<topic>") or of its dead
/// letters ("<dead_letter_dir>/<topic>"); the topic is escaped like a Hive value.
std::string TopicDir(std::string_view topic, bool dead_letter,
                     std::string_view dead_letter_dir);

/// The hidden name a file of `tp` is written under until it is published:
/// ".<topic>+<partition>+<token>.inprogress". Readers never see such a file.
std::string InProgressName(const TopicPartition& tp, std::string_view token);
/// The partition a hidden in-progress name belongs to (nullopt for other names).
std::optional<TopicPartition> ParseInProgressName(std::string_view name);

/// A published landing file.
struct LandedFile {
  std::string path;  ///< in the file system (local: an absolute path; S3: bucket/key)
  ParquetFileInfo info;
  bool dead_letter = false;
};

/// What a topic's directories hold.
struct TopicListing {
  /// The files of complete ranges (all `n` parts present, counted over the rows and
  /// the dead-letter directory), in (partition, first offset, part, path) order.
  std::vector<LandedFile> complete;
  /// Paths of in-progress files and of the parts of incomplete ranges (a crash before
  /// or between renames): the sink deletes these at assignment.
  std::vector<std::string> leftovers;
};

/// List `topic`'s rows and dead-letter directories under `root`, keeping the
/// partitions `wanted` accepts (all when empty).
Result<TopicListing> ListTopic(
    const internal::FileSystemRoot& root, std::string_view topic,
    std::string_view dead_letter_dir,
    const std::function<bool(const TopicPartition&)>& wanted = {});

}  // namespace landing
}  // namespace kelt
