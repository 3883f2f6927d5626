// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Internals of the Parquet sink that tests check directly: file names and Hive escaping.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kelt/sink.h"

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

}  // namespace kelt
