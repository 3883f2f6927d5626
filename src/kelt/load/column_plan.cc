// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/load/column_plan.h"

#include <arrow/api.h>

#include <algorithm>

namespace kelt::load {

namespace {

constexpr std::string_view kMetaPrefix = "_kafka_";
constexpr std::string_view kHeaderPrefix = "_kafka_header.";

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

}  // namespace

// --- the payload path trie -------------------------------------------------------------

PathNode* PathNode::AddChild(const std::string& key) {
  for (auto& [name, node] : children) {
    if (name == key) return node.get();
  }
  children.emplace_back(key, std::make_unique<PathNode>());
  return children.back().second.get();
}

void PathNode::Seal() {
  has_children = !children.empty();
  if (children.size() > 8) {
    for (size_t i = 0; i < children.size(); ++i) {
      index.emplace(children[i].first, static_cast<int>(i));
    }
  }
  for (auto& [name, node] : children) node->Seal();
}

int PathNode::FindIndex(std::string_view key) const {
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

PathNode* PathNode::FindAndPredict(std::string_view key, size_t pos) {
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

// --- the plan -------------------------------------------------------------------------

Result<ColumnPlan> ColumnPlan::Make(const Schema& landing) {
  ColumnPlan plan(landing);
  KELT_RETURN_NOT_OK(plan.Compile());
  return plan;
}

Status ColumnPlan::Compile() {
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
    PlannedColumn col;
    col.name = f.name;
    col.type = f.type;
    col.unit = f.timestamp_unit.value_or(TimeUnit::kMilli);
    if (f.name.starts_with(kMetaPrefix)) {
      KELT_RETURN_NOT_OK(AddMetadata(f, &col));
    } else {
      AddPayload(f, &col);
    }
    if (f.type == TypeId::kUtf8 || f.type == TypeId::kBinary) ++text_columns_;
    columns_.push_back(std::move(col));
  }
  root_.Seal();
  ondemand_ok_ = OnDemandCompatible(root_);
  if (ondemand_ok_) AssignColumns(root_);
  return Status::OK();
}

Status ColumnPlan::AddMetadata(const Field& f, PlannedColumn* col) {
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
  metadata_columns_.push_back(static_cast<int>(columns_.size()));
  return Status::OK();
}

// A payload field reads its name as a top-level key, or its `source` path of keys.
void ColumnPlan::AddPayload(const Field& f, PlannedColumn* col) {
  col->source = ColumnSource::kPayload;
  col->payload_slot = static_cast<int>(payload_columns_.size());
  payload_columns_.push_back(static_cast<int>(columns_.size()));
  PathNode* node = &root_;
  if (f.source.empty()) {
    node = node->AddChild(f.name);
  } else {
    for (const std::string& seg : f.source) node = node->AddChild(seg);
  }
  node->payload_slots.push_back(col->payload_slot);
}

bool ColumnPlan::OnDemandCompatible(const PathNode& node) {
  for (const auto& [name, child] : node.children) {
    if (child->payload_slots.size() > 1) return false;
    if (!child->payload_slots.empty() && child->has_children) return false;
    if (!OnDemandCompatible(*child)) return false;
  }
  return true;
}

void ColumnPlan::AssignColumns(PathNode& node) {
  for (auto& [name, child] : node.children) {
    if (!child->payload_slots.empty()) {
      child->slot = child->payload_slots.front();
      child->column = payload_columns_[static_cast<size_t>(child->slot)];
    }
    AssignColumns(*child);
  }
}

std::vector<ColumnWriter> ColumnPlan::MakeWriters() const {
  std::vector<ColumnWriter> writers;
  writers.reserve(columns_.size());
  for (const PlannedColumn& col : columns_) writers.emplace_back(col.type);
  return writers;
}

}  // namespace kelt::load
