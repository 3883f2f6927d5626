// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0

#include "kelt/iceberg/metadata.h"

#include <simdjson.h>

#include <cstdio>
#include <random>

#include "kelt/common/text.h"

namespace kelt::iceberg {

using text::AppendInt64;
using text::AppendJsonString;

const Schema* TableMetadata::CurrentSchema() const {
  for (const auto& s : schemas) {
    if (s.schema_id == current_schema_id) return &s;
  }
  return nullptr;
}

const PartitionSpec* TableMetadata::DefaultSpec() const {
  for (const auto& s : partition_specs) {
    if (s.spec_id == default_spec_id) return &s;
  }
  return nullptr;
}

const Snapshot* TableMetadata::FindSnapshot(int64_t id) const {
  for (const auto& s : snapshots) {
    if (s.snapshot_id == id) return &s;
  }
  return nullptr;
}

const Snapshot* TableMetadata::CurrentSnapshot() const {
  return current_snapshot_id ? FindSnapshot(*current_snapshot_id) : nullptr;
}

std::string RandomUuid() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t hi = rng(), lo = rng();
  hi = (hi & ~0xF000ull) | 0x4000ull;                  // version 4
  lo = (lo & ~(0xC000ull << 48)) | (0x8000ull << 48);  // variant 10
  char buf[37];
  std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx",
                static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xFFFF),
                static_cast<unsigned>(hi & 0xFFFF), static_cast<unsigned>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFull));
  return buf;
}

TableMetadata NewTableMetadata(std::string location, Schema schema, PartitionSpec spec,
                               std::string table_uuid, int64_t now_ms) {
  TableMetadata m;
  m.table_uuid = std::move(table_uuid);
  m.location = std::move(location);
  m.last_updated_ms = now_ms;
  for (const auto& f : schema.fields) m.last_column_id = std::max(m.last_column_id, f.id);
  m.current_schema_id = schema.schema_id;
  m.schemas.push_back(std::move(schema));
  for (const auto& f : spec.fields) {
    m.last_partition_id = std::max(m.last_partition_id, f.field_id);
  }
  m.default_spec_id = spec.spec_id;
  m.partition_specs.push_back(std::move(spec));
  return m;
}

namespace {

void Key(std::string* out, std::string_view key) {
  AppendJsonString(out, key);
  *out += ':';
}

void AppendStringMap(std::string* out, const std::map<std::string, std::string>& m) {
  *out += '{';
  bool first = true;
  for (const auto& [k, v] : m) {
    if (!first) *out += ',';
    first = false;
    Key(out, k);
    AppendJsonString(out, v);
  }
  *out += '}';
}

}  // namespace

std::string PartitionFieldsJson(const PartitionSpec& spec) {
  std::string out = "[";
  for (size_t i = 0; i < spec.fields.size(); ++i) {
    const auto& f = spec.fields[i];
    if (i) out += ',';
    out += "{\"source-id\":";
    AppendInt64(&out, f.source_id);
    out += ",\"field-id\":";
    AppendInt64(&out, f.field_id);
    out += ",\"name\":";
    AppendJsonString(&out, f.name);
    out += ",\"transform\":";
    AppendJsonString(&out, f.transform);
    out += '}';
  }
  return out + "]";
}

std::string PartitionSpecJson(const PartitionSpec& spec) {
  std::string out = "{\"spec-id\":";
  AppendInt64(&out, spec.spec_id);
  out += ",\"fields\":" + PartitionFieldsJson(spec) + "}";
  return out;
}

std::string MetadataToJson(const TableMetadata& m) {
  std::string out = "{";
  Key(&out, "format-version");
  AppendInt64(&out, m.format_version);
  out += ',';
  Key(&out, "table-uuid");
  AppendJsonString(&out, m.table_uuid);
  out += ',';
  Key(&out, "location");
  AppendJsonString(&out, m.location);
  out += ',';
  Key(&out, "last-sequence-number");
  AppendInt64(&out, m.last_sequence_number);
  out += ',';
  Key(&out, "last-updated-ms");
  AppendInt64(&out, m.last_updated_ms);
  out += ',';
  Key(&out, "last-column-id");
  AppendInt64(&out, m.last_column_id);
  out += ',';
  Key(&out, "current-schema-id");
  AppendInt64(&out, m.current_schema_id);
  out += ',';
  Key(&out, "schemas");
  out += '[';
  for (size_t i = 0; i < m.schemas.size(); ++i) {
    if (i) out += ',';
    out += SchemaJson(m.schemas[i]);
  }
  out += "],";
  Key(&out, "default-spec-id");
  AppendInt64(&out, m.default_spec_id);
  out += ',';
  Key(&out, "partition-specs");
  out += '[';
  for (size_t i = 0; i < m.partition_specs.size(); ++i) {
    if (i) out += ',';
    out += PartitionSpecJson(m.partition_specs[i]);
  }
  out += "],";
  Key(&out, "last-partition-id");
  AppendInt64(&out, m.last_partition_id);
  out += ',';
  Key(&out, "default-sort-order-id");
  out += "0,";
  Key(&out, "sort-orders");
  out += "[{\"order-id\":0,\"fields\":[]}],";
  Key(&out, "properties");
  AppendStringMap(&out, m.properties);
  out += ',';
  Key(&out, "current-snapshot-id");
  AppendInt64(&out, m.current_snapshot_id.value_or(-1));
  out += ',';
  Key(&out, "refs");
  if (m.current_snapshot_id) {
    out += "{\"main\":{\"snapshot-id\":";
    AppendInt64(&out, *m.current_snapshot_id);
    out += ",\"type\":\"branch\"}},";
  } else {
    out += "{},";
  }
  Key(&out, "snapshots");
  out += '[';
  for (size_t i = 0; i < m.snapshots.size(); ++i) {
    const Snapshot& s = m.snapshots[i];
    if (i) out += ',';
    out += "{\"snapshot-id\":";
    AppendInt64(&out, s.snapshot_id);
    if (s.parent_snapshot_id) {
      out += ",\"parent-snapshot-id\":";
      AppendInt64(&out, *s.parent_snapshot_id);
    }
    out += ",\"sequence-number\":";
    AppendInt64(&out, s.sequence_number);
    out += ",\"timestamp-ms\":";
    AppendInt64(&out, s.timestamp_ms);
    out += ",\"manifest-list\":";
    AppendJsonString(&out, s.manifest_list);
    out += ",\"summary\":";
    AppendStringMap(&out, s.summary);
    out += ",\"schema-id\":";
    AppendInt64(&out, s.schema_id);
    out += '}';
  }
  out += "],";
  Key(&out, "snapshot-log");
  out += '[';
  for (size_t i = 0; i < m.snapshot_log.size(); ++i) {
    if (i) out += ',';
    out += "{\"timestamp-ms\":";
    AppendInt64(&out, m.snapshot_log[i].timestamp_ms);
    out += ",\"snapshot-id\":" + m.snapshot_log[i].value + "}";
  }
  out += "],";
  Key(&out, "metadata-log");
  out += '[';
  for (size_t i = 0; i < m.metadata_log.size(); ++i) {
    if (i) out += ',';
    out += "{\"timestamp-ms\":";
    AppendInt64(&out, m.metadata_log[i].timestamp_ms);
    out += ",\"metadata-file\":";
    AppendJsonString(&out, m.metadata_log[i].value);
    out += '}';
  }
  out += "]}";
  return out;
}

namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

Status Missing(std::string_view where, std::string_view key) {
  return Status::ParseError("table metadata: " + std::string(where) + " has no valid \"" +
                            std::string(key) + "\"");
}

template <typename T>
Status GetInt(object o, std::string_view where, std::string_view key, T* out) {
  int64_t v;
  if (o[key].get_int64().get(v)) return Missing(where, key);
  *out = static_cast<T>(v);
  return Status::OK();
}

Status GetString(object o, std::string_view where, std::string_view key,
                 std::string* out) {
  std::string_view v;
  if (o[key].get_string().get(v)) return Missing(where, key);
  *out = std::string(v);
  return Status::OK();
}

Status GetStringMap(object o, std::string_view key,
                    std::map<std::string, std::string>* out) {
  object m;
  if (o[key].get_object().get(m)) return Status::OK();  // optional
  for (auto [k, v] : m) {
    std::string_view s;
    if (v.get_string().get(s)) {
      return Status::ParseError("table metadata: " + std::string(key) + "." +
                                std::string(k) + " is not a string");
    }
    (*out)[std::string(k)] = std::string(s);
  }
  return Status::OK();
}

Status ParseSchema(object o, Schema* s) {
  KELT_RETURN_NOT_OK(GetInt(o, "schema", "schema-id", &s->schema_id));
  array fields;
  if (o["fields"].get_array().get(fields)) return Missing("schema", "fields");
  for (element fe : fields) {
    object fo;
    if (fe.get_object().get(fo)) return Missing("schema", "fields[]");
    Field f;
    KELT_RETURN_NOT_OK(GetInt(fo, "schema field", "id", &f.id));
    KELT_RETURN_NOT_OK(GetString(fo, "schema field", "name", &f.name));
    if (fo["required"].get_bool().get(f.required))
      return Missing("schema field", "required");
    std::string_view type;
    if (fo["type"].get_string().get(type)) {
      return Status::NotImplemented("table metadata: column '" + f.name +
                                    "' has a nested type, which kelt does not read yet");
    }
    f.type = std::string(type);
    s->fields.push_back(std::move(f));
  }
  return Status::OK();
}

}  // namespace

Result<TableMetadata> MetadataFromJson(std::string_view json) {
  simdjson::dom::parser parser;
  element root;
  if (auto err = parser.parse(json.data(), json.size()).get(root)) {
    return Status::ParseError(std::string("table metadata: ") +
                              simdjson::error_message(err));
  }
  object o;
  if (root.get_object().get(o))
    return Status::ParseError("table metadata: not an object");
  TableMetadata m;
  KELT_RETURN_NOT_OK(GetInt(o, "metadata", "format-version", &m.format_version));
  if (m.format_version != 2) {
    return Status::NotImplemented("table metadata: format version " +
                                  std::to_string(m.format_version) +
                                  " (kelt reads and writes version 2)");
  }
  KELT_RETURN_NOT_OK(GetString(o, "metadata", "table-uuid", &m.table_uuid));
  KELT_RETURN_NOT_OK(GetString(o, "metadata", "location", &m.location));
  KELT_RETURN_NOT_OK(
      GetInt(o, "metadata", "last-sequence-number", &m.last_sequence_number));
  KELT_RETURN_NOT_OK(GetInt(o, "metadata", "last-updated-ms", &m.last_updated_ms));
  KELT_RETURN_NOT_OK(GetInt(o, "metadata", "last-column-id", &m.last_column_id));
  KELT_RETURN_NOT_OK(GetInt(o, "metadata", "current-schema-id", &m.current_schema_id));
  array schemas;
  if (o["schemas"].get_array().get(schemas)) return Missing("metadata", "schemas");
  for (element se : schemas) {
    object so;
    if (se.get_object().get(so)) return Missing("metadata", "schemas[]");
    Schema s;
    KELT_RETURN_NOT_OK(ParseSchema(so, &s));
    m.schemas.push_back(std::move(s));
  }
  KELT_RETURN_NOT_OK(GetInt(o, "metadata", "default-spec-id", &m.default_spec_id));
  array specs;
  if (o["partition-specs"].get_array().get(specs)) {
    return Missing("metadata", "partition-specs");
  }
  for (element pe : specs) {
    object po;
    if (pe.get_object().get(po)) return Missing("metadata", "partition-specs[]");
    PartitionSpec spec;
    KELT_RETURN_NOT_OK(GetInt(po, "partition spec", "spec-id", &spec.spec_id));
    array fields;
    if (po["fields"].get_array().get(fields)) return Missing("partition spec", "fields");
    for (element fe : fields) {
      object fo;
      if (fe.get_object().get(fo)) return Missing("partition spec", "fields[]");
      PartitionField f;
      KELT_RETURN_NOT_OK(GetInt(fo, "partition field", "source-id", &f.source_id));
      KELT_RETURN_NOT_OK(GetInt(fo, "partition field", "field-id", &f.field_id));
      KELT_RETURN_NOT_OK(GetString(fo, "partition field", "name", &f.name));
      KELT_RETURN_NOT_OK(GetString(fo, "partition field", "transform", &f.transform));
      spec.fields.push_back(std::move(f));
    }
    m.partition_specs.push_back(std::move(spec));
  }
  KELT_RETURN_NOT_OK(GetInt(o, "metadata", "last-partition-id", &m.last_partition_id));
  KELT_RETURN_NOT_OK(GetStringMap(o, "properties", &m.properties));
  int64_t current = -1;
  if (!o["current-snapshot-id"].get_int64().get(current) && current >= 0) {
    m.current_snapshot_id = current;
  }
  array snapshots;
  if (!o["snapshots"].get_array().get(snapshots)) {
    for (element se : snapshots) {
      object so;
      if (se.get_object().get(so)) return Missing("metadata", "snapshots[]");
      Snapshot s;
      KELT_RETURN_NOT_OK(GetInt(so, "snapshot", "snapshot-id", &s.snapshot_id));
      int64_t parent;
      if (!so["parent-snapshot-id"].get_int64().get(parent))
        s.parent_snapshot_id = parent;
      KELT_RETURN_NOT_OK(GetInt(so, "snapshot", "sequence-number", &s.sequence_number));
      KELT_RETURN_NOT_OK(GetInt(so, "snapshot", "timestamp-ms", &s.timestamp_ms));
      KELT_RETURN_NOT_OK(GetString(so, "snapshot", "manifest-list", &s.manifest_list));
      KELT_RETURN_NOT_OK(GetStringMap(so, "summary", &s.summary));
      int64_t schema_id;
      if (!so["schema-id"].get_int64().get(schema_id)) {
        s.schema_id = static_cast<int>(schema_id);
      }
      m.snapshots.push_back(std::move(s));
    }
  }
  array log;
  if (!o["snapshot-log"].get_array().get(log)) {
    for (element le : log) {
      object lo;
      LogEntry e;
      int64_t id;
      if (le.get_object().get(lo) || lo["snapshot-id"].get_int64().get(id)) {
        return Missing("snapshot-log", "snapshot-id");
      }
      KELT_RETURN_NOT_OK(GetInt(lo, "snapshot-log", "timestamp-ms", &e.timestamp_ms));
      e.value = std::to_string(id);
      m.snapshot_log.push_back(std::move(e));
    }
  }
  if (!o["metadata-log"].get_array().get(log)) {
    for (element le : log) {
      object lo;
      if (le.get_object().get(lo)) return Missing("metadata-log", "entry");
      LogEntry e;
      KELT_RETURN_NOT_OK(GetInt(lo, "metadata-log", "timestamp-ms", &e.timestamp_ms));
      KELT_RETURN_NOT_OK(GetString(lo, "metadata-log", "metadata-file", &e.value));
      m.metadata_log.push_back(std::move(e));
    }
  }
  return m;
}

}  // namespace kelt::iceberg
