// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The column plan: a landing schema compiled once, in Loader::Make. Each landing column
// knows where its value comes from (a `_kafka_*` record attribute, resolved here so an
// unknown name fails before any record is read, or a path into the JSON payload) and
// its declared type, which picks its rewindable writer (column_writer.h). Payload paths
// are compiled into a trie of object keys (PathNode) that the readers walk while they
// walk a payload object. The trie's nodes are the plan's only state that changes after
// Make: each learns the order in which producers write its keys. Internal header.
#pragma once

#include <arrow/type_fwd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kelt/load/column_writer.h"
#include "kelt/schema.h"
#include "kelt/status.h"

namespace kelt::load {

/// Where a landing column's value comes from.
enum class ColumnSource : uint8_t {
  kPayload,
  kTopic,
  kPartition,
  kOffset,
  kTimestampMs,
  kTimestamp,
  kTimestampType,
  kKey,
  kKeyBytes,
  kValue,
  kValueBytes,
  kHeaders,
  kHeader,
};

/// One landing column, compiled.
struct PlannedColumn {
  std::string name;
  ColumnSource source = ColumnSource::kPayload;
  TypeId type = TypeId::kUtf8;
  TimeUnit unit = TimeUnit::kMilli;  // of a Timestamp column: the unit of epoch numbers
  std::string header_name;           // for kHeader
  int payload_slot = -1;             // for kPayload: its index among the payload columns
};

// Compare n bytes; inline word compares for the short keys JSON objects mostly have
// (a libc memcmp call costs more than the comparison itself here).
[[gnu::always_inline]] inline bool ShortEquals(const char* a, const char* b, size_t n) {
  auto load64 = [](const char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  };
  auto load32 = [](const char* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  };
  if (n >= 8 && n <= 16) {
    return load64(a) == load64(b) && load64(a + n - 8) == load64(b + n - 8);
  }
  if (n >= 4 && n < 8) {
    return load32(a) == load32(b) && load32(a + n - 4) == load32(b + n - 4);
  }
  if (n < 4) {
    for (size_t i = 0; i < n; ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  return std::memcmp(a, b, n) == 0;
}

/// A node of the payload path trie; the root's children are top-level keys.
struct PathNode {
  std::vector<std::pair<std::string, std::unique_ptr<PathNode>>> children;
  std::vector<int> payload_slots;                   // payload slots that end at this node
  bool has_children = false;                        // set by Seal()
  std::unordered_map<std::string_view, int> index;  // only for wide nodes

  // The On-Demand path's target when payload_slots has one slot (set by the plan when
  // the On-Demand path can take the schema): its slot and landing column.
  int slot = -1;
  int column = -1;

  /// Return the child named `key`, adding it when there is none.
  PathNode* AddChild(const std::string& key);
  /// Finish the trie below this node (has_children, the index of wide nodes).
  void Seal();
  /// Return the index of the child named `key`, or -1.
  int FindIndex(std::string_view key) const;

  /// Return the child named `key` (or nullptr), the key being at position `pos` of its
  /// object. Producers write keys in the same order record after record, so the node
  /// remembers which key it saw at each position and confirms it with one comparison.
  [[gnu::always_inline]] PathNode* Find(std::string_view key, size_t pos) {
    if (pos < order.size()) {
      const Prediction& pr = order[pos];
      if (pr.key.size() == key.size() &&
          ShortEquals(pr.key.data(), key.data(), key.size())) {
        return pr.node;
      }
    }
    return FindAndPredict(key, pos);
  }

  /// Find() for a key still in its JSON text: `raw` points just past the key's opening
  /// quote and `end` at the end of the document. Returns true with *child set when the
  /// key is the one predicted at `pos`. A predicted key without '"' or '\\' matches
  /// exactly when the raw bytes equal it and a quote follows: no byte before that quote
  /// can be an escape, so that quote closes the key. This spares unescaping every key.
  [[gnu::always_inline]] bool FindPredictedRaw(const char* raw, const char* end,
                                               size_t pos, PathNode** child) const {
    if (pos >= order.size()) return false;
    const Prediction& pr = order[pos];
    const size_t n = pr.key.size();
    if (!pr.plain || static_cast<size_t>(end - raw) <= n || raw[n] != '"' ||
        !ShortEquals(pr.key.data(), raw, n)) {
      return false;
    }
    *child = pr.node;
    return true;
  }

  /// Look `key` up and remember it as the prediction for position `pos`.
  [[gnu::noinline]] PathNode* FindAndPredict(std::string_view key, size_t pos);

  struct Prediction {
    PathNode* node = nullptr;  // the child, or nullptr for a key the schema does not use
    std::string key;
    bool plain = false;  // key has no '"' or '\\', so its JSON text is the key itself
  };
  std::vector<Prediction> order;
};

class ColumnPlan {
 public:
  /// Compile `landing`. Fails for an empty schema, empty or duplicate field names,
  /// unknown `_kafka_*` names and metadata columns of a type their value cannot take
  /// (the messages Loader::Make documents).
  static Result<ColumnPlan> Make(const Schema& landing);

  const Schema& schema() const { return schema_; }
  const std::shared_ptr<arrow::Schema>& arrow_schema() const { return arrow_schema_; }

  /// The landing columns, in schema order.
  const std::vector<PlannedColumn>& columns() const { return columns_; }
  /// The landing column of each payload slot (payload columns in schema order).
  const std::vector<int>& payload_columns() const { return payload_columns_; }
  /// The `_kafka_*` columns, in schema order.
  const std::vector<int>& metadata_columns() const { return metadata_columns_; }
  /// The root of the payload path trie.
  PathNode& paths() { return root_; }

  /// True when a column reads record headers.
  bool needs_headers() const { return needs_headers_; }
  /// True when the On-Demand path can take this schema: every payload key feeds at most
  /// one column and no key is both a column and the parent of nested columns, so each
  /// value is needed once, as it streams past.
  bool ondemand_ok() const { return ondemand_ok_; }
  /// The number of Utf8 and Binary columns (the ones payload bytes are shared among).
  int64_t text_columns() const { return text_columns_; }

  /// One empty writer per landing column, for its declared type.
  std::vector<ColumnWriter> MakeWriters() const;

 private:
  explicit ColumnPlan(Schema schema) : schema_(std::move(schema)) {}
  Status Compile();
  Status AddMetadata(const Field& f, PlannedColumn* col);
  void AddPayload(const Field& f, PlannedColumn* col);
  static bool OnDemandCompatible(const PathNode& node);
  void AssignColumns(PathNode& node);

  Schema schema_;
  std::shared_ptr<arrow::Schema> arrow_schema_;
  std::vector<PlannedColumn> columns_;
  std::vector<int> payload_columns_;
  std::vector<int> metadata_columns_;
  PathNode root_;
  bool needs_headers_ = false;
  bool ondemand_ok_ = false;
  int64_t text_columns_ = 0;
};

}  // namespace kelt::load
