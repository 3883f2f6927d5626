// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Load step. Design (see README.md beside this file):
//  - Make() compiles the landing schema once into a column plan: each column knows its
//    source (a metadata attribute or a payload path) and its rewindable column writer
//    (column_writer.h), and payload paths are compiled into a small trie.
//  - Append() writes a record's values straight into the column writers, by the first
//    of three paths that takes it: (1) On-Demand, simdjson's streaming parser walking
//    the object once (when the schema allows it); (2) the DOM fast path, the parsed
//    document walked once, each value into its column; (3) the DOM slow path, columns
//    converted in schema order, which reports a bad record exactly as RDP does (the
//    first failing column in schema order, the last duplicate key). A path that fails
//    rewinds every column to the record's start and hands the record to the next, so
//    a bad record never leaves the columns misaligned, whatever the policy.
//  - A bad record fails the window, is skipped, or becomes a row of the dead-letter
//    batch (dead_letters.h), by policy.
#include "kelt/load.h"

#include <arrow/api.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kelt/common/parallel.h"
#include "kelt/common/text.h"
#include "kelt/load/column_writer.h"
#include "kelt/load/dead_letters.h"
#include "kelt/load/loader_testing.h"

namespace kelt {

std::string_view BadRecordPolicyName(BadRecordPolicy policy) {
  switch (policy) {
    case BadRecordPolicy::kFail:
      return "fail";
    case BadRecordPolicy::kSkip:
      return "skip";
    case BadRecordPolicy::kDeadLetter:
      return "dead_letter";
  }
  return "fail";
}

std::optional<BadRecordPolicy> ParseBadRecordPolicy(std::string_view name) {
  if (name == "fail") return BadRecordPolicy::kFail;
  if (name == "skip") return BadRecordPolicy::kSkip;
  if (name == "dead_letter" || name == "dead-letter") return BadRecordPolicy::kDeadLetter;
  return std::nullopt;
}

LoadStats& LoadStats::operator+=(const LoadStats& o) {
  records += o.records;
  rows += o.rows;
  bad_records += o.bad_records;
  skipped += o.skipped;
  dead_lettered += o.dead_lettered;
  tombstones += o.tombstones;
  payload_bytes += o.payload_bytes;
  return *this;
}

Result<std::vector<std::unique_ptr<Loader>>> MakeLoaderPerCore(
    const Schema& landing, const LoadOptions& options) {
  const size_t cores = std::clamp<size_t>(internal::UsableCores(), 1, 4);
  std::vector<std::unique_ptr<Loader>> loaders;
  for (size_t k = 0; k < cores; ++k) {
    KELT_ASSIGN_OR_RAISE(auto loader, Loader::Make(landing, options));
    loaders.push_back(std::move(loader));
  }
  return loaders;
}

namespace {

constexpr std::string_view kMetaPrefix = "_kafka_";
constexpr std::string_view kHeaderPrefix = "_kafka_header.";

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

// The natural kind of a metadata value, which decides the declared types it can land in.
enum class MetaKind : uint8_t { kInteger, kText, kBytes, kMicros };

struct MetaSpec {
  std::string_view name;
  ColumnSource source;
  MetaKind kind;
};

constexpr MetaSpec kMetaSpecs[] = {
    {"_kafka_topic", ColumnSource::kTopic, MetaKind::kText},
    {"_kafka_partition", ColumnSource::kPartition, MetaKind::kInteger},
    {"_kafka_offset", ColumnSource::kOffset, MetaKind::kInteger},
    {"_kafka_timestamp_ms", ColumnSource::kTimestampMs, MetaKind::kInteger},
    {"_kafka_timestamp", ColumnSource::kTimestamp, MetaKind::kMicros},
    {"_kafka_timestamp_type", ColumnSource::kTimestampType, MetaKind::kText},
    {"_kafka_key", ColumnSource::kKey, MetaKind::kText},
    {"_kafka_key_bytes", ColumnSource::kKeyBytes, MetaKind::kBytes},
    {"_kafka_value", ColumnSource::kValue, MetaKind::kText},
    {"_kafka_value_bytes", ColumnSource::kValueBytes, MetaKind::kBytes},
    {"_kafka_headers", ColumnSource::kHeaders, MetaKind::kText},
};

bool MetaTypeAllowed(MetaKind kind, ColumnSource source, TypeId type) {
  switch (kind) {
    case MetaKind::kInteger:
      return type == TypeId::kInt64 || type == TypeId::kFloat64 ||
             type == TypeId::kUtf8 ||
             (source == ColumnSource::kTimestampMs && type == TypeId::kTimestamp);
    case MetaKind::kText:
      return type == TypeId::kUtf8 || type == TypeId::kBinary;
    case MetaKind::kBytes:
      return type == TypeId::kBinary;
    case MetaKind::kMicros:
      return type == TypeId::kTimestamp || type == TypeId::kInt64;
  }
  return false;
}

struct Column {
  std::string name;
  ColumnSource source = ColumnSource::kPayload;
  TypeId type = TypeId::kUtf8;
  TimeUnit unit = TimeUnit::kMilli;
  std::string header_name;  // for kHeader
  int payload_index = -1;   // for kPayload: index into payload slots
};

// Compare n bytes; inline word compares for the short keys JSON objects mostly have
// (a libc memcmp call costs more than the comparison itself here).
inline bool ShortEquals(const char* a, const char* b, size_t n) {
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

// A node of the payload path trie; the root's children are top-level keys.
struct PathNode {
  std::vector<std::pair<std::string, std::unique_ptr<PathNode>>> children;
  std::vector<int> payload_slots;                   // payload slots that end at this node
  bool has_children = false;                        // set by Seal()
  std::unordered_map<std::string_view, int> index;  // only for wide nodes

  PathNode* Child(std::string_view key) {
    for (auto& [name, node] : children) {
      if (name == key) return node.get();
    }
    return nullptr;
  }
  PathNode* AddChild(const std::string& key) {
    if (PathNode* existing = Child(key)) return existing;
    children.emplace_back(key, std::make_unique<PathNode>());
    return children.back().second.get();
  }
  void Seal() {
    has_children = !children.empty();
    if (children.size() > 8) {
      for (size_t i = 0; i < children.size(); ++i) {
        index.emplace(children[i].first, static_cast<int>(i));
      }
    }
    for (auto& [name, node] : children) node->Seal();
  }
  // Return the index of the child named `key`, or -1.
  int FindIndex(std::string_view key) const {
    if (!index.empty()) {
      auto it = index.find(key);
      return it == index.end() ? -1 : it->second;
    }
    for (size_t i = 0; i < children.size(); ++i) {
      const std::string& name = children[i].first;
      if (name.size() == key.size() &&
          std::memcmp(name.data(), key.data(), key.size()) == 0) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }

  // Return the child named `key` (or nullptr), the key being at position `pos` of its
  // object. Producers write keys in the same order record after record, so the node
  // remembers which key it saw at each position and confirms it with one comparison.
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

  // Find() for a key still in its JSON text: `raw` points just past the key's opening
  // quote and `end` at the end of the document. Returns true with *child set when the
  // key is the one predicted at `pos`. A predicted key without '"' or '\\' matches
  // exactly when the raw bytes equal it and a quote follows: no byte before that quote
  // can be an escape, so that quote closes the key. This spares unescaping every key.
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

  // Look `key` up and remember it as the prediction for position `pos`.
  [[gnu::noinline]] PathNode* FindAndPredict(std::string_view key, size_t pos) {
    constexpr size_t kMaxPredicted = 64;
    int found = FindIndex(key);
    PathNode* child =
        found < 0 ? nullptr : children[static_cast<size_t>(found)].second.get();
    if (pos < kMaxPredicted) {
      if (pos >= order.size()) order.resize(pos + 1);
      Prediction& pr = order[pos];
      pr.node = child;
      pr.key.assign(key);
      pr.plain = key.find_first_of("\"\\") == std::string_view::npos;
    }
    return child;
  }

  struct Prediction {
    PathNode* node = nullptr;  // the child, or nullptr for a key the schema does not use
    std::string key;
    bool plain = false;  // key has no '"' or '\\', so its JSON text is the key itself
  };
  std::vector<Prediction> order;

  // The On-Demand path's target when payload_slots has one slot: its landing column.
  int column = -1;
  int slot = -1;
};

// A bad record's description.
struct BadRecord {
  std::string_view code;
  std::string message;
  int column = -1;
};

std::string Truncated(std::string_view s) {
  constexpr size_t kMax = 64;
  std::string out = text::Utf8Lossy(s.substr(0, std::min(s.size(), kMax)));
  if (s.size() > kMax) out += "…";
  return out;
}

// Append the compact JSON text of a DOM element (serde_json's `to_string`): input key
// order, numbers re-printed from their parsed value.
void AppendCompactJson(std::string* out, simdjson::dom::element e) {
  using simdjson::dom::element_type;
  switch (e.type()) {
    case element_type::NULL_VALUE:
      out->append("null");
      break;
    case element_type::BOOL:
      out->append(e.get_bool().value_unsafe() ? "true" : "false");
      break;
    case element_type::INT64:
      text::AppendInt64(out, e.get_int64().value_unsafe());
      break;
    case element_type::UINT64: {
      char buf[24];
      int n =
          std::snprintf(buf, sizeof(buf), "%llu",
                        static_cast<unsigned long long>(e.get_uint64().value_unsafe()));
      out->append(buf, static_cast<size_t>(n));
      break;
    }
    case element_type::DOUBLE:
      text::AppendJsonDouble(out, e.get_double().value_unsafe());
      break;
    case element_type::STRING:
      text::AppendJsonString(out, e.get_string().value_unsafe());
      break;
    case element_type::ARRAY: {
      out->push_back('[');
      bool first = true;
      // Copy the array out of its simdjson_result first: iterating the temporary's
      // value_unsafe() would dangle.
      simdjson::dom::array array = e.get_array().value_unsafe();
      for (simdjson::dom::element child : array) {
        if (!first) out->push_back(',');
        first = false;
        AppendCompactJson(out, child);
      }
      out->push_back(']');
      break;
    }
    case element_type::OBJECT: {
      out->push_back('{');
      bool first = true;
      simdjson::dom::object object = e.get_object().value_unsafe();
      for (simdjson::dom::key_value_pair kv : object) {
        if (!first) out->push_back(',');
        first = false;
        text::AppendJsonString(out, kv.key);
        out->push_back(':');
        AppendCompactJson(out, kv.value);
      }
      out->push_back('}');
      break;
    }
  }
}

int64_t UnitFactorMicros(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSecond:
      return 1000000;
    case TimeUnit::kMilli:
      return 1000;
    case TimeUnit::kMicro:
      return 1;
    case TimeUnit::kNano:
      return -1000;  // divide
  }
  return 1000;
}

bool EpochToMicros(int64_t v, TimeUnit unit, int64_t* out) {
  int64_t f = UnitFactorMicros(unit);
  if (f < 0) {
    // Floor division so that -1 ns is -1 µs, not 0.
    int64_t q = v / -f, r = v % -f;
    *out = (r < 0) ? q - 1 : q;
    return true;
  }
  return !__builtin_mul_overflow(v, f, out);
}

bool EpochToMicros(double v, TimeUnit unit, int64_t* out) {
  int64_t f = UnitFactorMicros(unit);
  double us = f < 0 ? v / static_cast<double>(-f) : v * static_cast<double>(f);
  if (!std::isfinite(us) || us >= 9.2e18 || us <= -9.2e18) return false;
  *out = static_cast<int64_t>(std::floor(us));
  return true;
}

}  // namespace

class Loader::Impl {
 public:
  Impl(Schema schema, LoadOptions options)
      : schema_(std::move(schema)), options_(options) {}

  Status Compile() {
    if (schema_.fields.empty()) return Status::Invalid("landing schema has no fields");
    arrow_schema_ = ToArrowSchema(schema_);
    for (size_t i = 0; i < schema_.fields.size(); ++i) {
      const Field& f = schema_.fields[i];
      if (f.name.empty()) {
        return Status::Invalid("landing schema: fields[" + std::to_string(i) +
                               "] has an empty name");
      }
      for (size_t j = 0; j < i; ++j) {
        if (schema_.fields[j].name == f.name) {
          return Status::Invalid("landing schema: duplicate field name '" + f.name + "'");
        }
      }
      Column col;
      col.name = f.name;
      col.type = f.type;
      col.unit = f.timestamp_unit.value_or(TimeUnit::kMilli);
      if (f.name.starts_with(kMetaPrefix)) {
        KELT_RETURN_NOT_OK(CompileMetadata(f, &col));
        metadata_columns_.push_back(static_cast<int>(columns_.size()));
      } else {
        col.source = ColumnSource::kPayload;
        col.payload_index = static_cast<int>(payload_columns_.size());
        payload_columns_.push_back(static_cast<int>(columns_.size()));
        PathNode* node = &root_;
        if (f.source.empty()) {
          node = node->AddChild(f.name);
        } else {
          for (const std::string& seg : f.source) node = node->AddChild(seg);
        }
        node->payload_slots.push_back(col.payload_index);
      }
      columns_.push_back(std::move(col));
      writers_.emplace_back(f.type);
    }
    root_.Seal();
    ondemand_ok_ = OnDemandCompatible(root_);
    if (ondemand_ok_) AssignColumns(root_);
    slots_.resize(payload_columns_.size());
    slot_set_.resize(payload_columns_.size());
    written_.resize(payload_columns_.size());
    scratch_.resize(columns_.size());
    return Status::OK();
  }

  // Make room for `records` more rows and about `payload_bytes` of string data.
  Status Reserve(int64_t records, int64_t payload_bytes) {
    const int64_t rows = stats_.rows + records;
    const auto n_text = static_cast<int64_t>(
        std::count_if(columns_.begin(), columns_.end(), [](const Column& c) {
          return c.type == TypeId::kUtf8 || c.type == TypeId::kBinary;
        }));
    const int64_t per_text_column = n_text == 0 ? 0 : payload_bytes / (n_text + 1);
    for (load::ColumnWriter& w : writers_) {
      KELT_RETURN_NOT_OK(w.Reserve(rows, per_text_column));
    }
    row_capacity_ = rows;
    return Status::OK();
  }

  Status Append(const RecordView& r) {
    ++stats_.records;
    if (r.value) stats_.payload_bytes += static_cast<int64_t>(r.value->size());
    if (stats_.rows >= row_capacity_) {
      KELT_RETURN_NOT_OK(Reserve(std::max<int64_t>(1024, stats_.rows), 0));
    }
    BadRecord bad;
    if (!WriteRecord(r, &bad)) {
      for (load::ColumnWriter& w : writers_) w.Rewind(stats_.rows);
      if (!fatal_.ok()) {
        --stats_.records;
        return std::exchange(fatal_, Status::OK());
      }
      return HandleBad(r, std::move(bad));
    }
    ++stats_.rows;
    return Status::OK();
  }

  Result<LoadedWindow> Finish() {
    LoadedWindow out;
    std::vector<std::shared_ptr<arrow::Array>> arrays(columns_.size());
    for (size_t c = 0; c < columns_.size(); ++c) {
      KELT_ASSIGN_OR_RAISE(
          arrays[c],
          writers_[c].Finish(arrow_schema_->field(static_cast<int>(c))->type()));
    }
    out.batch = arrow::RecordBatch::Make(arrow_schema_, stats_.rows, std::move(arrays));
    KELT_ASSIGN_OR_RAISE(out.dead_letters, dead_letters_.Finish());
    out.stats = stats_;
    stats_ = LoadStats{};
    row_capacity_ = 0;
    return out;
  }

  bool needs_headers() const { return needs_headers_; }
  void set_force_dom(bool force) { force_dom_ = force; }
  const Schema& schema() const { return schema_; }
  const std::shared_ptr<arrow::Schema>& arrow_schema() const { return arrow_schema_; }

 private:
  Status CompileMetadata(const Field& f, Column* col) {
    const MetaSpec* spec = nullptr;
    MetaSpec header_spec{"", ColumnSource::kHeader, MetaKind::kText};
    if (f.name.starts_with(kHeaderPrefix) && f.name.size() > kHeaderPrefix.size()) {
      spec = &header_spec;
      col->header_name = f.name.substr(kHeaderPrefix.size());
    } else {
      for (const MetaSpec& s : kMetaSpecs) {
        if (s.name == f.name) spec = &s;
      }
    }
    if (spec == nullptr) {
      return Status::Invalid("schema mismatch: unknown kafka metadata column '" + f.name +
                             "'");
    }
    if (!MetaTypeAllowed(spec->kind, spec->source, f.type)) {
      return Status::Invalid("schema mismatch: kafka metadata column '" + f.name +
                             "' cannot have type " + std::string(TypeName(f.type)));
    }
    col->source = spec->source;
    if (spec->source == ColumnSource::kHeader || spec->source == ColumnSource::kHeaders) {
      needs_headers_ = true;
    }
    return Status::OK();
  }

  // --- one record --------------------------------------------------------------------

  // How the payload columns of the current record are filled.
  enum class PayloadMode : uint8_t { kNone, kObject, kRawText, kAllNull };

  // Write one value into every column, in schema order. Returns false with *bad set
  // (or fatal_ set) after writing some columns; the caller rewinds them.
  bool WriteRecord(const RecordView& r, BadRecord* bad) {
    if (ondemand_ok_ && r.value && !payload_columns_.empty() && !force_dom_) {
      if (WriteObjectOnDemand(r, *r.value)) return true;
      if (!fatal_.ok()) return false;
      for (load::ColumnWriter& w : writers_) w.Rewind(stats_.rows);
    }
    PayloadMode mode = PayloadMode::kNone;
    std::string_view raw;
    if (!payload_columns_.empty()) {
      if (!r.value) {
        ++stats_.tombstones;
        mode = PayloadMode::kAllNull;
      } else if (!ClassifyPayload(*r.value, &mode, &raw, bad)) {
        return false;
      }
    }
    if (mode == PayloadMode::kObject && WriteObjectFast(r)) return true;
    if (!fatal_.ok()) return false;
    // The slow path: convert in schema order so that the first failing column (in
    // schema order) and the last duplicate key decide, exactly as RDP does.
    for (load::ColumnWriter& w : writers_) w.Rewind(stats_.rows);
    if (mode == PayloadMode::kObject) {
      std::fill(slot_set_.begin(), slot_set_.end(), 0);
      Walk(root_, doc_.get_object().value_unsafe());
    }
    for (size_t c = 0; c < columns_.size(); ++c) {
      const Column& col = columns_[c];
      bool ok;
      if (col.source != ColumnSource::kPayload) {
        ok = WriteMetadata(r, c, bad);
      } else if (mode == PayloadMode::kObject) {
        const auto p = static_cast<size_t>(col.payload_index);
        ok = slot_set_[p] ? WriteElement(slots_[p], c, bad) : WriteNull(c);
      } else if (mode == PayloadMode::kRawText) {
        ok = WriteText(raw, c, bad);
      } else {
        ok = WriteNull(c);
      }
      if (!ok) return false;
    }
    return true;
  }

  // The fast path for an object payload: write each value into its column while
  // walking the object once (columns are independent, so order does not matter; a
  // repeated key rewinds its column and writes again). Returns false on any failure;
  // the caller then redoes the record on the slow path to report it exactly.
  bool WriteObjectFast(const RecordView& r) {
    if (!WriteMetadataColumns(r)) return false;
    ++generation_;
    if (!WalkWrite(root_, doc_.get_object().value_unsafe())) return false;
    for (size_t p = 0; p < payload_columns_.size(); ++p) {
      if (written_[p] != generation_ &&
          !WriteNull(static_cast<size_t>(payload_columns_[p]))) {
        return false;
      }
    }
    return true;
  }

  // The metadata columns of a record on a fast path (any failure sends the record to
  // the slow path). Partition and offset into Int64 columns, what nearly every landing
  // schema has, skip WriteMetadata's general dispatch.
  bool WriteMetadataColumns(const RecordView& r) {
    BadRecord ignored;
    for (int ci : metadata_columns_) {
      const auto c = static_cast<size_t>(ci);
      const Column& col = columns_[c];
      if (col.type == TypeId::kInt64 && col.source == ColumnSource::kPartition) {
        writers_[c].AppendInt64(r.partition);
      } else if (col.type == TypeId::kInt64 && col.source == ColumnSource::kOffset) {
        writers_[c].AppendInt64(r.offset);
      } else if (!WriteMetadata(r, c, &ignored)) {
        return false;
      }
    }
    return true;
  }

  bool WalkWrite(PathNode& node, simdjson::dom::object obj) {
    BadRecord ignored;
    size_t pos = 0;
    for (simdjson::dom::key_value_pair kv : obj) {
      PathNode* child = node.Find(kv.key, pos++);
      if (child == nullptr) continue;
      for (int p : child->payload_slots) {
        const auto slot = static_cast<size_t>(p);
        const auto c = static_cast<size_t>(payload_columns_[slot]);
        if (written_[slot] == generation_) writers_[c].Rewind(stats_.rows);
        if (!WriteElement(kv.value, c, &ignored)) return false;
        written_[slot] = generation_;
      }
      if (child->has_children && kv.value.type() == simdjson::dom::element_type::OBJECT) {
        if (!WalkWrite(*child, kv.value.get_object().value_unsafe())) return false;
      }
    }
    return true;
  }

  // --- the On-Demand fast path --------------------------------------------------------
  //
  // Most records are well-formed objects whose values convert without error. For them
  // simdjson's On-Demand API converts each value straight from the input, skipping the
  // DOM tape. Every value is consumed (values of keys the schema does not use are
  // validated by walking them), and the document must end after the object, so a record
  // passes here only if the DOM parser would accept it too. Anything unusual — not an
  // object, a conversion that fails, a value that would need its compact JSON text —
  // returns false, and the record is redone on the DOM path, which decides exactly as
  // RDP does. The fuzz target checks that both paths agree.

  // The fast path needs each value once: no key feeding two columns, and no key that is
  // both a column and the parent of nested columns.
  static bool OnDemandCompatible(const PathNode& node) {
    for (const auto& [name, child] : node.children) {
      if (child->payload_slots.size() > 1) return false;
      if (!child->payload_slots.empty() && child->has_children) return false;
      if (!OnDemandCompatible(*child)) return false;
    }
    return true;
  }

  void AssignColumns(PathNode& node) {
    for (auto& [name, child] : node.children) {
      if (!child->payload_slots.empty()) {
        child->slot = child->payload_slots.front();
        child->column = payload_columns_[static_cast<size_t>(child->slot)];
      }
      AssignColumns(*child);
    }
  }

  bool WriteObjectOnDemand(const RecordView& r, std::string_view payload) {
    const char* input = payload.data();
    if (!PaddingReadable(payload)) {
      EnsurePadded(payload.size());
      std::memcpy(padded_.get(), payload.data(), payload.size());
      input = padded_.get();
    }
    simdjson::ondemand::document doc;
    if (od_parser_
            .iterate(input, payload.size(), payload.size() + simdjson::SIMDJSON_PADDING)
            .get(doc) != simdjson::SUCCESS) {
      return false;
    }
    simdjson::ondemand::object obj;
    if (doc.get_object().get(obj) != simdjson::SUCCESS) return false;
    if (!WriteMetadataColumns(r)) return false;
    ++generation_;
    written_count_ = 0;
    if (!WalkOnDemand(root_, obj, input + payload.size())) return false;
    // The document must end with the object: trailing content goes to the DOM path,
    // which rejects it. (simdjson 3.0 has no document::at_end().)
    const char* rest = nullptr;
    if (doc.current_location().get(rest) != simdjson::OUT_OF_BOUNDS) return false;
    if (written_count_ == payload_columns_.size()) return true;
    for (size_t p = 0; p < payload_columns_.size(); ++p) {
      if (written_[p] != generation_ &&
          !WriteNull(static_cast<size_t>(payload_columns_[p]))) {
        return false;
      }
    }
    return true;
  }

  // `end` is the end of the document (keys are matched in the input text).
  bool WalkOnDemand(PathNode& node, simdjson::ondemand::object obj, const char* end) {
    size_t pos = 0;
    for (auto field_result : obj) {
      simdjson::ondemand::field field;
      if (std::move(field_result).get(field) != simdjson::SUCCESS) return false;
      PathNode* child;
      if (!node.FindPredictedRaw(field.key().raw(), end, pos, &child)) {
        std::string_view key;
        if (field.unescaped_key().get(key) != simdjson::SUCCESS) return false;
        child = node.FindAndPredict(key, pos);
      }
      ++pos;
      simdjson::ondemand::value& value = field.value();
      if (child == nullptr) {
        if (!SkipValue(value)) return false;
        continue;
      }
      if (child->column >= 0) {
        const auto slot = static_cast<size_t>(child->slot);
        const auto c = static_cast<size_t>(child->column);
        if (written_[slot] == generation_) {
          writers_[c].Rewind(stats_.rows);  // last one wins
        } else {
          written_[slot] = generation_;
          ++written_count_;
        }
        if (!WriteOnDemandValue(value, c)) return false;
        continue;
      }
      simdjson::ondemand::json_type type;
      if (value.type().get(type) != simdjson::SUCCESS) return false;
      if (type == simdjson::ondemand::json_type::object) {
        simdjson::ondemand::object inner;
        if (value.get_object().get(inner) != simdjson::SUCCESS) return false;
        if (!WalkOnDemand(*child, inner, end)) return false;
      } else if (!SkipValue(value)) {
        return false;
      }
    }
    return true;
  }

  // Consume a value the schema does not use, validating it completely.
  static bool SkipValue(simdjson::ondemand::value value) {
    using simdjson::ondemand::json_type;
    json_type type;
    if (value.type().get(type) != simdjson::SUCCESS) return false;
    switch (type) {
      case json_type::object: {
        simdjson::ondemand::object obj;
        if (value.get_object().get(obj) != simdjson::SUCCESS) return false;
        for (auto field_result : obj) {
          simdjson::ondemand::field field;
          std::string_view key;
          if (std::move(field_result).get(field) != simdjson::SUCCESS ||
              field.unescaped_key().get(key) != simdjson::SUCCESS ||
              !SkipValue(field.value())) {
            return false;
          }
        }
        return true;
      }
      case json_type::array: {
        simdjson::ondemand::array arr;
        if (value.get_array().get(arr) != simdjson::SUCCESS) return false;
        for (auto element : arr) {
          simdjson::ondemand::value v;
          if (std::move(element).get(v) != simdjson::SUCCESS || !SkipValue(v))
            return false;
        }
        return true;
      }
      case json_type::number: {
        simdjson::ondemand::number n;
        return value.get_number().get(n) == simdjson::SUCCESS;
      }
      case json_type::string: {
        std::string_view s;
        return value.get_string().get(s) == simdjson::SUCCESS;
      }
      case json_type::boolean: {
        bool b;
        return value.get_bool().get(b) == simdjson::SUCCESS;
      }
      case json_type::null: {
        bool is_null = false;
        return value.is_null().get(is_null) == simdjson::SUCCESS && is_null;
      }
    }
    return false;
  }

  // Convert one value into column c on the fast path; false sends the record to the DOM
  // path (which reports conversion errors with RDP's texts).
  bool WriteOnDemandValue(simdjson::ondemand::value value, size_t c) {
    using simdjson::ondemand::json_type;
    using simdjson::ondemand::number_type;
    const Column& col = columns_[c];
    load::ColumnWriter& w = writers_[c];
    json_type type;
    if (value.type().get(type) != simdjson::SUCCESS) return false;
    switch (type) {
      case json_type::null: {
        bool is_null = false;
        if (value.is_null().get(is_null) != simdjson::SUCCESS || !is_null) return false;
        return WriteNull(c);
      }
      case json_type::string: {
        std::string_view s;
        if (value.get_string().get(s) != simdjson::SUCCESS) return false;
        if (col.type == TypeId::kUtf8 || col.type == TypeId::kBinary) {
          return WriteBytes(c, s);
        }
        // WriteText's first timestamp rule, without its dispatch.
        if (col.type == TypeId::kTimestamp) {
          if (auto us = text::ParseTimestampMicros(s)) {
            w.AppendInt64(*us);
            return true;
          }
        }
        BadRecord ignored;
        return WriteText(s, c, &ignored);
      }
      case json_type::boolean: {
        bool b;
        if (col.type != TypeId::kBool || value.get_bool().get(b) != simdjson::SUCCESS) {
          return false;
        }
        w.AppendBool(b);
        return true;
      }
      case json_type::number: {
        // get_int64() succeeds exactly for the numbers the DOM parser stores as INT64
        // (at most 19 digits, no fraction or exponent, in range), so integer columns
        // need no get_number_type() scan first.
        switch (col.type) {
          case TypeId::kInt64: {
            int64_t v;
            if (value.get_int64().get(v) != simdjson::SUCCESS) return false;
            w.AppendInt64(v);
            return true;
          }
          case TypeId::kFloat64: {
            double d;
            if (value.get_double().get(d) != simdjson::SUCCESS) return false;
            w.AppendDouble(d);
            return true;
          }
          case TypeId::kTimestamp: {
            number_type nt;
            if (value.get_number_type().get(nt) != simdjson::SUCCESS) return false;
            int64_t us = 0;
            if (nt == number_type::signed_integer) {
              int64_t v;
              if (value.get_int64().get(v) != simdjson::SUCCESS ||
                  !EpochToMicros(v, col.unit, &us)) {
                return false;
              }
            } else {
              double d;
              if (value.get_double().get(d) != simdjson::SUCCESS ||
                  !EpochToMicros(d, col.unit, &us)) {
                return false;
              }
            }
            w.AppendInt64(us);
            return true;
          }
          case TypeId::kDate: {
            int64_t v;
            if (value.get_int64().get(v) != simdjson::SUCCESS ||
                v < std::numeric_limits<int32_t>::min() ||
                v > std::numeric_limits<int32_t>::max()) {
              return false;
            }
            w.AppendDate(static_cast<int32_t>(v));
            return true;
          }
          default:
            return false;  // a number as text: the DOM path re-prints it as RDP does
        }
      }
      default:
        return false;  // object/array values convert through their compact JSON text
    }
  }

  // Parse the payload and decide the RDP rule that applies (2, 3 or 4).
  bool ClassifyPayload(std::string_view payload, PayloadMode* mode, std::string_view* raw,
                       BadRecord* bad) {
    simdjson::error_code err = Parse(payload);
    if (err == simdjson::UTF8_ERROR && !options_.strict_payload) {
      // RDP sees broker bytes through a lossy UTF-8 conversion: do the same, then parse.
      lossy_payload_.clear();
      text::AppendUtf8Lossy(&lossy_payload_, payload);
      payload = lossy_payload_;
      err = Parse(payload);
    }
    if (!err && doc_.type() == simdjson::dom::element_type::OBJECT) {
      *mode = PayloadMode::kObject;
      return true;
    }
    if (payload_columns_.size() == 1) {
      // Rule 3: the raw payload text, converted to the single payload field's type.
      if (err == simdjson::UTF8_ERROR || !text::IsValidUtf8(payload)) {
        if (options_.strict_payload) {
          bad->code = kErrorInvalidUtf8;
          bad->message = "payload is not valid UTF-8 (byte " +
                         std::to_string(text::FirstInvalidUtf8(payload)) + ")";
          bad->column = payload_columns_[0];
          return false;
        }
        lossy_payload_.clear();
        text::AppendUtf8Lossy(&lossy_payload_, payload);
        payload = lossy_payload_;
      }
      *raw = payload;
      *mode = PayloadMode::kRawText;
      return true;
    }
    if (options_.strict_payload) {
      bad->code = kErrorMalformedPayload;
      bad->message =
          err ? std::string("payload is not valid JSON: ") + simdjson::error_message(err)
              : "payload is not a JSON object";
      return false;
    }
    *mode = PayloadMode::kAllNull;  // Rule 4.
    return true;
  }

  simdjson::error_code Parse(std::string_view payload) {
    const char* input = payload.data();
    if (!PaddingReadable(payload)) {
      EnsurePadded(payload.size());
      std::memcpy(padded_.get(), payload.data(), payload.size());
      input = padded_.get();
    }
    auto result = parser_.parse(input, payload.size(), false);
    if (result.error()) return result.error();
    doc_ = result.value_unsafe();
    return simdjson::SUCCESS;
  }

  // simdjson reads (never interprets) up to SIMDJSON_PADDING bytes past the end; their
  // content does not matter, so stale bytes from a longer payload are fine.
  void EnsurePadded(size_t size) {
    const size_t need = size + simdjson::SIMDJSON_PADDING;
    if (padded_capacity_ < need) {
      padded_capacity_ = std::max(need, padded_capacity_ * 2);
      padded_ = std::make_unique<char[]>(padded_capacity_);  // zeroed once
    }
  }

  // simdjson may read SIMDJSON_PADDING bytes past the input. When those bytes lie in
  // the same memory page as the payload's last byte they are mapped and readable, so
  // the payload can be parsed in place (simdjson's own advice); otherwise it is copied
  // into a padded buffer. Sanitizer and valgrind builds always copy.
  static bool PaddingReadable(std::string_view payload) {
#if defined(__SANITIZE_ADDRESS__) || defined(KELT_ALWAYS_PAD)
    return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
    return false;
#endif
#endif
    constexpr uintptr_t kPage = 4096;
    const auto end = reinterpret_cast<uintptr_t>(payload.data()) + payload.size();
    return !payload.empty() && (end % kPage) + simdjson::SIMDJSON_PADDING <= kPage;
  }

  void Walk(PathNode& node, simdjson::dom::object obj) {
    size_t pos = 0;
    for (simdjson::dom::key_value_pair kv : obj) {
      PathNode* child = node.Find(kv.key, pos++);
      if (child == nullptr) continue;
      for (int p : child->payload_slots) {  // duplicate keys: the last one wins
        slots_[static_cast<size_t>(p)] = kv.value;
        slot_set_[static_cast<size_t>(p)] = 1;
      }
      if (!child->children.empty() &&
          kv.value.type() == simdjson::dom::element_type::OBJECT) {
        Walk(*child, kv.value.get_object().value_unsafe());
      }
    }
  }

  // --- writing values ------------------------------------------------------------------

  bool WriteNull(size_t c) { return Check(writers_[c].AppendNull(), c); }

  [[gnu::always_inline]] bool WriteBytes(size_t c, std::string_view v) {
    return Check(writers_[c].AppendBytes(v), c);
  }

  // A write that failed for lack of memory or room is not a bad record: it ends the
  // window with an error (fatal_), whatever the policy.
  [[gnu::always_inline]] bool Check(const Status& st, size_t c) {
    if (st.ok()) [[likely]]
      return true;
    return SetFatal(st, c);
  }
  [[gnu::noinline]] bool SetFatal(const Status& st, size_t c) {
    fatal_ = st.WithPrefix("column '" + columns_[c].name + "': ");
    return false;
  }

  [[gnu::always_inline]] bool WriteElement(simdjson::dom::element e, size_t c,
                                           BadRecord* bad) {
    using simdjson::dom::element_type;
    const Column& col = columns_[c];
    load::ColumnWriter& w = writers_[c];
    const element_type t = e.type();
    if (t == element_type::NULL_VALUE) return WriteNull(c);
    switch (col.type) {
      case TypeId::kInt64:
        if (t == element_type::INT64) {
          w.AppendInt64(e.get_int64().value_unsafe());
          return true;
        }
        if (t == element_type::UINT64 || t == element_type::DOUBLE) {
          return Fail(bad, c, kErrorTypeMismatch,
                      "schema mismatch: expected i64 in kafka value JSON");
        }
        break;
      case TypeId::kFloat64:
        if (t == element_type::DOUBLE || t == element_type::INT64 ||
            t == element_type::UINT64) {
          w.AppendDouble(e.get_double().value_unsafe());
          return true;
        }
        break;
      case TypeId::kBool:
        if (t == element_type::BOOL) {
          w.AppendBool(e.get_bool().value_unsafe());
          return true;
        }
        break;
      case TypeId::kTimestamp: {
        int64_t us = 0;
        bool in_range = true;
        if (t == element_type::INT64) {
          in_range = EpochToMicros(e.get_int64().value_unsafe(), col.unit, &us);
        } else if (t == element_type::UINT64 || t == element_type::DOUBLE) {
          in_range = EpochToMicros(e.get_double().value_unsafe(), col.unit, &us);
        } else {
          break;
        }
        if (!in_range) {
          return Fail(
              bad, c, kErrorTypeMismatch,
              "schema mismatch: kafka value timestamp cast failed: epoch number out "
              "of range");
        }
        w.AppendInt64(us);
        return true;
      }
      case TypeId::kDate:
        if (t == element_type::INT64) {
          int64_t v = e.get_int64().value_unsafe();
          if (v < std::numeric_limits<int32_t>::min() ||
              v > std::numeric_limits<int32_t>::max()) {
            return Fail(
                bad, c, kErrorTypeMismatch,
                "schema mismatch: kafka value date cast failed: day number out of range");
          }
          w.AppendDate(static_cast<int32_t>(v));
          return true;
        }
        break;
      case TypeId::kUtf8:
      case TypeId::kBinary:
        break;
    }
    if (t == element_type::STRING)
      return WriteText(e.get_string().value_unsafe(), c, bad);
    // Any other combination converts the compact JSON text (RDP: `other.to_string()`).
    std::string& s = scratch_[c];
    s.clear();
    AppendCompactJson(&s, e);
    return WriteText(s, c, bad);
  }

  // Convert text to column c's type (RDP's string rules) and write it.
  bool WriteText(std::string_view s, size_t c, BadRecord* bad) {
    const Column& col = columns_[c];
    load::ColumnWriter& w = writers_[c];
    std::string_view error;
    switch (col.type) {
      case TypeId::kUtf8:
      case TypeId::kBinary:
        return WriteBytes(c, s);
      case TypeId::kInt64: {
        int64_t v = 0;
        if (!text::ParseInt64(s, &v, &error)) {
          return Fail(
              bad, c, kErrorTypeMismatch,
              "schema mismatch: kafka value int64 cast failed: " + std::string(error));
        }
        w.AppendInt64(v);
        return true;
      }
      case TypeId::kFloat64: {
        double v = 0;
        if (!text::ParseFloat64(s, &v, &error)) {
          return Fail(
              bad, c, kErrorTypeMismatch,
              "schema mismatch: kafka value float64 cast failed: " + std::string(error));
        }
        w.AppendDouble(v);
        return true;
      }
      case TypeId::kBool: {
        bool v = false;
        if (!text::ParseBool(s, &v, &error)) {
          return Fail(
              bad, c, kErrorTypeMismatch,
              "schema mismatch: kafka value bool cast failed: " + std::string(error));
        }
        w.AppendBool(v);
        return true;
      }
      case TypeId::kTimestamp: {
        if (auto us = text::ParseTimestampMicros(s)) {
          w.AppendInt64(*us);
          return true;
        }
        int64_t epoch = 0, us = 0;
        if (text::ParseInt64(s, &epoch, &error) && EpochToMicros(epoch, col.unit, &us)) {
          w.AppendInt64(us);
          return true;
        }
        return Fail(
            bad, c, kErrorTypeMismatch,
            "schema mismatch: kafka value timestamp cast failed: expected an RFC 3339 "
            "timestamp or an epoch number, got '" +
                Truncated(s) + "'");
      }
      case TypeId::kDate: {
        if (auto days = text::ParseDateDays(s)) {
          w.AppendDate(*days);
          return true;
        }
        return Fail(
            bad, c, kErrorTypeMismatch,
            "schema mismatch: kafka value date cast failed: expected YYYY-MM-DD, got '" +
                Truncated(s) + "'");
      }
    }
    return true;
  }

  bool WriteMetadata(const RecordView& r, size_t c, BadRecord* bad) {
    const Column& col = columns_[c];
    load::ColumnWriter& w = writers_[c];
    std::string& scratch = scratch_[c];
    // Integer-valued attributes, in the column's declared type.
    auto write_integer = [&](int64_t v) {
      switch (col.type) {
        case TypeId::kFloat64:
          w.AppendDouble(static_cast<double>(v));
          return true;
        case TypeId::kUtf8:
          scratch.clear();
          text::AppendInt64(&scratch, v);
          return WriteBytes(c, scratch);
        case TypeId::kTimestamp:
          w.AppendInt64(v * 1000);  // _kafka_timestamp_ms into a Timestamp column
          return true;
        default:
          w.AppendInt64(v);
          return true;
      }
    };
    // Text-valued attributes: Utf8 columns get valid UTF-8, Binary columns raw bytes.
    auto write_text = [&](std::string_view v) {
      if (col.type == TypeId::kUtf8 && !text::IsValidUtf8(v)) {
        scratch.clear();
        text::AppendUtf8Lossy(&scratch, v);
        return WriteBytes(c, scratch);
      }
      return WriteBytes(c, v);
    };
    switch (col.source) {
      case ColumnSource::kTopic:
        return write_text(r.topic);
      case ColumnSource::kPartition:
        return write_integer(r.partition);
      case ColumnSource::kOffset:
        return write_integer(r.offset);
      case ColumnSource::kTimestampMs:
        return r.timestamp_ms ? write_integer(*r.timestamp_ms) : WriteNull(c);
      case ColumnSource::kTimestamp:
        if (!r.timestamp_ms) return WriteNull(c);
        w.AppendInt64(*r.timestamp_ms * 1000);
        return true;
      case ColumnSource::kTimestampType:
        return r.timestamp_type == TimestampType::kNotAvailable
                   ? WriteNull(c)
                   : write_text(TimestampTypeName(r.timestamp_type));
      case ColumnSource::kKey:
      case ColumnSource::kKeyBytes:
        return r.key ? write_text(*r.key) : WriteNull(c);
      case ColumnSource::kValue:
      case ColumnSource::kValueBytes:
        if (!r.value) return WriteNull(c);
        if (options_.strict_payload && col.type == TypeId::kUtf8 &&
            !text::IsValidUtf8(*r.value)) {
          return Fail(bad, c, kErrorInvalidUtf8,
                      "payload is not valid UTF-8 (byte " +
                          std::to_string(text::FirstInvalidUtf8(*r.value)) + ")");
        }
        return write_text(*r.value);
      case ColumnSource::kHeaders:
        if (r.headers.empty()) return WriteNull(c);
        HeadersJson(r.headers, &scratch);
        return WriteBytes(c, scratch);
      case ColumnSource::kHeader: {
        const HeaderView* last = nullptr;
        for (const HeaderView& h : r.headers) {
          if (h.name == col.header_name) last = &h;
        }
        return (last != nullptr && last->value) ? write_text(*last->value) : WriteNull(c);
      }
      case ColumnSource::kPayload:
        break;
    }
    return WriteNull(c);
  }

  // {"name":"value",…}; a name that repeats maps to an array of its values in order.
  static void HeadersJson(std::span<const HeaderView> headers, std::string* out) {
    out->clear();
    out->push_back('{');
    bool first = true;
    for (size_t i = 0; i < headers.size(); ++i) {
      const HeaderView& h = headers[i];
      bool seen = false;
      size_t count = 0;
      for (size_t j = 0; j < headers.size(); ++j) {
        if (headers[j].name == h.name) {
          if (j < i) seen = true;
          ++count;
        }
      }
      if (seen) continue;
      if (!first) out->push_back(',');
      first = false;
      text::AppendJsonString(out, h.name);
      out->push_back(':');
      auto append_value = [&](const HeaderView& hv) {
        if (hv.value) {
          text::AppendJsonString(out, *hv.value);
        } else {
          out->append("null");
        }
      };
      if (count == 1) {
        append_value(h);
      } else {
        out->push_back('[');
        bool first_value = true;
        for (size_t j = i; j < headers.size(); ++j) {
          if (headers[j].name != h.name) continue;
          if (!first_value) out->push_back(',');
          first_value = false;
          append_value(headers[j]);
        }
        out->push_back(']');
      }
    }
    out->push_back('}');
  }

  static bool Fail(BadRecord* bad, size_t c, std::string_view code, std::string message) {
    bad->code = code;
    bad->message = std::move(message);
    bad->column = static_cast<int>(c);
    return false;
  }

  std::string Where(const RecordView& r) const {
    std::string out = " (at ";
    out += text::Utf8Lossy(r.topic);
    out += '[';
    out += std::to_string(r.partition);
    out += "]@";
    out += std::to_string(r.offset);
    return out;
  }

  Status HandleBad(const RecordView& r, BadRecord bad) {
    std::string field =
        bad.column >= 0 ? columns_[static_cast<size_t>(bad.column)].name : "";
    if (options_.on_bad_record == BadRecordPolicy::kFail) {
      --stats_.records;  // the record is not part of the window
      std::string msg = bad.message + Where(r);
      if (!field.empty()) msg += ", field '" + field + "'";
      msg += ')';
      return Status::TypeError(std::move(msg));
    }
    ++stats_.bad_records;
    if (options_.on_bad_record == BadRecordPolicy::kSkip) {
      ++stats_.skipped;
      return Status::OK();
    }
    ++stats_.dead_lettered;
    return dead_letters_.Append(r, bad.code, field, bad.message);
  }

  Schema schema_;
  LoadOptions options_;
  std::shared_ptr<arrow::Schema> arrow_schema_;
  std::vector<Column> columns_;
  std::vector<int> payload_columns_;   // payload slot → column index
  std::vector<int> metadata_columns_;  // indices of the `_kafka_*` columns
  PathNode root_;
  bool needs_headers_ = false;

  // Per-record working state, reused across records.
  simdjson::dom::parser parser_;
  simdjson::ondemand::parser od_parser_;
  bool ondemand_ok_ = false;  // the schema allows the On-Demand fast path
  bool force_dom_ = false;    // tests and the fuzzer compare both paths
  simdjson::dom::element doc_;
  std::unique_ptr<char[]> padded_;
  size_t padded_capacity_ = 0;
  std::string lossy_payload_;
  std::vector<simdjson::dom::element> slots_;
  std::vector<uint8_t> slot_set_;
  std::vector<uint64_t> written_;     // generation_ when a payload slot was written
  uint64_t generation_ = 0;           // one per record on the fast path
  size_t written_count_ = 0;          // payload slots written this record (On-Demand)
  std::vector<std::string> scratch_;  // per-column text being converted

  std::vector<load::ColumnWriter> writers_;  // one per landing column
  load::DeadLetterWriter dead_letters_;
  int64_t row_capacity_ = 0;  // rows every writer can take without growing
  Status fatal_;              // a failure that ends the window, not a bad record
  LoadStats stats_;
};

Loader::Loader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

void LoaderTesting::ForceDomPath(Loader* loader, bool force) {
  loader->impl_->set_force_dom(force);
}
Loader::~Loader() = default;

Result<std::unique_ptr<Loader>> Loader::Make(const Schema& landing, LoadOptions options) {
  auto impl = std::make_unique<Impl>(landing, options);
  KELT_RETURN_NOT_OK(impl->Compile());
  return std::unique_ptr<Loader>(new Loader(std::move(impl)));
}

Status Loader::Reserve(int64_t records, int64_t payload_bytes) {
  return impl_->Reserve(records, payload_bytes);
}

Status Loader::Append(const RecordView& record) { return impl_->Append(record); }

Status Loader::Append(const StreamRecord& record) {
  std::vector<HeaderView> headers;
  return impl_->Append(ViewOf(record, &headers));
}

Result<LoadedWindow> Loader::Finish() { return impl_->Finish(); }
bool Loader::needs_headers() const { return impl_->needs_headers(); }
const Schema& Loader::schema() const { return impl_->schema(); }
const std::shared_ptr<arrow::Schema>& Loader::arrow_schema() const {
  return impl_->arrow_schema();
}

Result<LoadedWindow> LoadRecords(std::span<const StreamRecord> records,
                                 const Schema& landing, const LoadOptions& options) {
  KELT_ASSIGN_OR_RAISE(auto loader, Loader::Make(landing, options));
  int64_t bytes = 0;
  for (const StreamRecord& r : records)
    bytes += r.value ? static_cast<int64_t>(r.value->size()) : 0;
  KELT_RETURN_NOT_OK(loader->Reserve(static_cast<int64_t>(records.size()), bytes));
  std::vector<HeaderView> headers;
  for (const StreamRecord& r : records) {
    KELT_RETURN_NOT_OK(loader->Append(ViewOf(r, &headers)));
  }
  return loader->Finish();
}

Result<LoadedWindow> LoadRecordsJson(std::string_view records_json, const Schema& landing,
                                     const LoadOptions& options) {
  auto records = ParseRecordsJson(records_json);
  if (!records.ok()) {
    return records.status().WithPrefix(
        "schema mismatch: invalid kafka stream record JSON: ");
  }
  return LoadRecords(*records, landing, options);
}

}  // namespace kelt
