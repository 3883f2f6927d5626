// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The config parser: YAML tree (yaml-cpp) → overrides applied to the tree → EltConfig,
// collecting every problem with its key path and line. yaml-cpp throws; its exceptions
// stop here.
#include "kelt/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <type_traits>

#include "kelt/json_schema.h"
#include "kelt/load.h"
#include "kelt/schema.h"

namespace kelt {
namespace {

std::string EnvName(std::string_view key) {
  std::string env = "KELT_";
  for (char c : key) {
    env +=
        (c == '.') ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return env;
}

bool IsSinkKind(std::string_view s) {
  return s == "parquet" || s == "duckdb" || s == "postgres" || s == "iceberg";
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min(
          {prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string DidYouMean(std::string_view bad, const std::vector<std::string>& known) {
  std::string best;
  size_t best_d = std::max<size_t>(2, bad.size() / 3) + 1;
  for (const auto& k : known) {
    size_t d = EditDistance(bad, k);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

// The spec key of a path: "sinks[2].parquet.root" → "parquet.root".
std::string SpecKey(std::string_view path) {
  if (path.substr(0, 6) == "sinks[") {
    size_t close = path.find("].");
    if (close != std::string_view::npos) return std::string(path.substr(close + 2));
  }
  return std::string(path);
}

// Control characters from the input (a quoted key "a\nb", yaml-cpp's texts) are shown
// escaped, so each message stays one line and cannot drive the terminal.
std::string OneLine(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// --- reading the tree ----------------------------------------------------------------

class Reader {
 public:
  Reader(std::filesystem::path base_dir, std::map<std::string, std::string> origins,
         bool built_by_program)
      : base_dir_(std::move(base_dir)),
        origins_(std::move(origins)),
        built_by_program_(built_by_program) {}

  void Error(const std::string& path, const YAML::Node& node, const std::string& msg) {
    std::string where;
    auto it = origins_.find(path);
    if (it == origins_.end()) {
      // A map an override created ("windw" for "windw.max_records").
      it = origins_.lower_bound(path);
      if (it != origins_.end() &&
          !(it->first.size() > path.size() &&
            it->first.compare(0, path.size(), path) == 0 &&
            (it->first[path.size()] == '.' || it->first[path.size()] == '['))) {
        it = origins_.end();
      }
    }
    if (it != origins_.end()) {
      where = " (" + it->second + ")";
    } else if (!built_by_program_ && node.IsDefined() && !node.Mark().is_null()) {
      where = " (line " + std::to_string(node.Mark().line + 1) + ")";
    }
    errors_.push_back(OneLine(path + ": " + msg + where));
    error_paths_.insert(path);
  }

  bool HasError(const std::string& path) const { return error_paths_.count(path) > 0; }

  bool from_file(const std::string& path) const { return !origins_.count(path); }

  // ", got "abc"" unless the key is secret.
  std::string Got(const std::string& path, const YAML::Node& node) {
    if (IsSecretConfigKey(SpecKey(path))) return " (value not shown: it is a secret)";
    if (node.IsScalar()) return ", got \"" + node.Scalar() + "\"";
    if (node.IsMap()) return ", got a map";
    if (node.IsSequence()) return ", got a list";
    return ", got nothing";
  }

  // Replace ${NAME} with the environment variable's value.
  std::optional<std::string> Expand(const std::string& path, const YAML::Node& node,
                                    const std::string& s) {
    std::string out;
    size_t i = 0;
    while (i < s.size()) {
      size_t open = s.find("${", i);
      if (open == std::string::npos) break;
      size_t close = s.find('}', open + 2);
      if (close == std::string::npos) break;
      out.append(s, i, open - i);
      std::string name = s.substr(open + 2, close - open - 2);
      const char* v = name.empty() ? nullptr : std::getenv(name.c_str());
      if (v == nullptr) {
        Error(path, node, "environment variable '" + name + "' is not set");
        return std::nullopt;
      }
      out += v;
      i = close + 1;
    }
    out.append(s, i, std::string::npos);
    return out;
  }

  std::optional<std::string> String(const std::string& path, const YAML::Node& node) {
    if (!node.IsScalar()) {
      Error(path, node, "expected a string" + Got(path, node));
      return std::nullopt;
    }
    if (built_by_program_) return node.Scalar();
    return Expand(path, node, node.Scalar());
  }

  std::optional<int64_t> Int(const std::string& path, const YAML::Node& node, int64_t min,
                             int64_t max) {
    if (!node.IsScalar()) {
      Error(path, node, "expected an integer" + Got(path, node));
      return std::nullopt;
    }
    const std::string& s = node.Scalar();
    int64_t v = 0;
    const char* b = s.data();
    const char* e = s.data() + s.size();
    if (b != e && *b == '+') ++b;
    auto [p, ec] = std::from_chars(b, e, v);
    if (s.empty() || ec != std::errc() || p != e) {
      Error(path, node, "expected an integer" + Got(path, node));
      return std::nullopt;
    }
    if (v < min || v > max) {
      Error(path, node,
            "expected an integer from " + std::to_string(min) +
                (max == INT64_MAX ? " up" : " to " + std::to_string(max)) +
                Got(path, node));
      return std::nullopt;
    }
    return v;
  }

  std::optional<bool> Bool(const std::string& path, const YAML::Node& node) {
    if (node.IsScalar()) {
      std::string s = node.Scalar();
      std::transform(s.begin(), s.end(), s.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (s == "true" || s == "yes" || s == "on" || s == "1") return true;
      if (s == "false" || s == "no" || s == "off" || s == "0") return false;
    }
    Error(path, node, "expected true or false" + Got(path, node));
    return std::nullopt;
  }

  std::optional<std::string> Enum(const std::string& path, const YAML::Node& node,
                                  const std::vector<std::string>& choices) {
    auto s = String(path, node);
    if (!s) return std::nullopt;
    if (std::find(choices.begin(), choices.end(), *s) != choices.end()) return s;
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
    Error(path, node, "expected one of " + list + Got(path, node));
    return std::nullopt;
  }

  // Report keys of `map` not in `known`; return false when `map` is not a map.
  bool CheckMap(const std::string& path, const YAML::Node& map,
                const std::vector<std::string>& known) {
    if (!map.IsMap()) {
      Error(path.empty() ? "(document)" : path, map,
            "expected a map of keys" + (path.empty() ? std::string() : Got(path, map)));
      return false;
    }
    for (const auto& kv : map) {
      const std::string key = kv.first.Scalar();
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        std::string full = path.empty() ? key : path + "." + key;
        Error(full, kv.first, "unknown key" + DidYouMean(key, known));
      }
    }
    return true;
  }

  std::filesystem::path Resolve(const std::string& path, const std::string& value) {
    if (value.find("://") != std::string::npos) return value;
    std::filesystem::path p(value);
    if (p.is_relative() && from_file(path)) return base_dir_ / p;
    return p;
  }

  const std::filesystem::path& base_dir() const { return base_dir_; }
  const std::vector<std::string>& errors() const { return errors_; }
  // Every problem found, one per line (OK when none).
  Status Problems() const {
    if (errors_.empty()) return Status::OK();
    std::string msg;
    for (const auto& e : errors_) msg += (msg.empty() ? "" : "\n") + e;
    return Status::Invalid(std::move(msg));
  }

 private:
  std::filesystem::path base_dir_;
  std::map<std::string, std::string> origins_;
  bool built_by_program_ = false;
  std::vector<std::string> errors_;
  std::set<std::string> error_paths_;
};

// An inline schema's JSON is bounded: YAML aliases can make a small document expand
// exponentially when walked.
constexpr size_t kMaxInlineSchemaBytes = 1u << 20;
// ... and so is its nesting: an alias inside the node it names (`b: &b [*b]`) makes the
// tree cyclic, which would be walked until the stack runs out.
constexpr int kMaxInlineSchemaDepth = 64;

// Emit a YAML tree as JSON (an inline schema is handed to the schema parser as JSON).
// False when it nests deeper than kMaxInlineSchemaDepth (out is then incomplete).
bool ToJson(const YAML::Node& n, std::string& out, int depth = 0) {
  if (depth > kMaxInlineSchemaDepth) return false;
  if (out.size() > kMaxInlineSchemaBytes) return true;
  auto quote = [&](const std::string& s) {
    out += '"';
    for (char c : s) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += c;
      }
    }
    out += '"';
  };
  if (n.IsMap()) {
    out += '{';
    bool first = true;
    for (const auto& kv : n) {
      if (out.size() > kMaxInlineSchemaBytes) return true;
      if (!first) out += ',';
      first = false;
      quote(kv.first.Scalar());
      out += ':';
      if (!ToJson(kv.second, out, depth + 1)) return false;
    }
    out += '}';
  } else if (n.IsSequence()) {
    out += '[';
    for (size_t i = 0; i < n.size(); ++i) {
      if (out.size() > kMaxInlineSchemaBytes) return true;
      if (i) out += ',';
      if (!ToJson(n[i], out, depth + 1)) return false;
    }
    out += ']';
  } else if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    bool plain = n.Tag() != "!";
    if (plain && (s == "true" || s == "false" || s == "null")) {
      out += s;
      return true;
    }
    if (plain && !s.empty()) {
      double d;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
      if (ec == std::errc() && p == s.data() + s.size()) {
        out += s;
        return true;
      }
    }
    quote(s);
  } else {
    out += "null";
  }
  return true;
}

// Read `node[key]` when present into `set`.
template <typename F>
void With(const YAML::Node& map, const char* key, F&& set) {
  if (!map.IsMap()) return;
  YAML::Node v = map[key];
  if (v.IsDefined()) set(v);
}

// `schema: registry:<subject>` or `schema: {registry: <subject>}` or
// `schema: {registry: {subject: …, url: …, message: …}}`: remember the subject (and the
// URL, which `registry.url` may give instead, and a Protobuf subject's message);
// ResolveRegistrySchema fetches it once every key is read. True when `v` is one of
// these forms.
bool ReadRegistrySchema(Reader& r, const YAML::Node& v, EltConfig& c) {
  constexpr std::string_view kPrefix = "registry:";
  if (v.IsScalar()) {
    std::string_view t = v.Scalar();
    if (t.substr(0, kPrefix.size()) != kPrefix) return false;
    c.schema_subject = std::string(t.substr(kPrefix.size()));
    if (c.schema_subject.empty()) r.Error("schema", v, "registry: names no subject");
    return true;
  }
  if (!v.IsMap() || !v["registry"].IsDefined()) return false;
  if (v.size() != 1) {
    r.Error("schema", v, "a registry schema has one key, registry (subject, url)");
    return true;
  }
  YAML::Node reg = v["registry"];
  if (reg.IsScalar()) {
    if (auto s = r.String("schema.registry", reg)) c.schema_subject = *s;
  } else if (reg.IsMap()) {
    for (const auto& kv : reg) {
      const std::string key = kv.first.Scalar();
      if (key == "subject") {
        if (auto s = r.String("schema.registry.subject", kv.second))
          c.schema_subject = *s;
      } else if (key == "url") {
        if (auto s = r.String("schema.registry.url", kv.second)) c.registry.url = *s;
      } else if (key == "message") {
        if (auto s = r.String("schema.registry.message", kv.second))
          c.schema_message = *s;
      } else {
        r.Error("schema.registry." + key, kv.first,
                "unknown key; expected subject, url or message (credentials: "
                "registry.*)");
      }
    }
  } else {
    r.Error("schema.registry", reg, "expected a subject name or {subject, url}");
    return true;
  }
  if (c.schema_subject.empty() && !r.HasError("schema.registry")) {
    r.Error("schema.registry", reg, "names no subject");
  }
  return true;
}

void ReadSchema(Reader& r, const YAML::Node& v, EltConfig& c) {
  c.schema_subject.clear();
  c.schema_message.clear();
  if (ReadRegistrySchema(r, v, c)) return;
  std::string json;
  if (v.IsScalar()) {
    auto s = r.String("schema", v);
    if (!s) return;
    std::string_view t = *s;
    size_t first = t.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && (t[first] == '{' || t[first] == '[')) {
      json = *s;
      c.schema_origin = "inline";
    } else {
      std::filesystem::path file = r.Resolve("schema", *s);
      std::ifstream in(file, std::ios::binary);
      if (!in) {
        r.Error("schema", v, "cannot read schema file '" + file.string() + "'");
        return;
      }
      std::stringstream ss;
      ss << in.rdbuf();
      json = ss.str();
      c.schema_origin = file.string();
    }
  } else if (v.IsMap() || v.IsSequence()) {
    if (!ToJson(v, json)) {
      r.Error("schema", v,
              "the inline schema nests deeper than " +
                  std::to_string(kMaxInlineSchemaDepth) +
                  " levels (an alias inside the node it names?)");
      return;
    }
    c.schema_origin = "inline";
    if (json.size() > kMaxInlineSchemaBytes) {
      r.Error("schema", v, "the inline schema is too large (aliases expanding?)");
      return;
    }
  } else {
    r.Error("schema", v, "expected a schema file path or an inline schema");
    return;
  }
  auto schema = ParseSchemaJson(json, SchemaDialect::kLenient);
  if (!schema.ok()) {
    r.Error("schema", v,
            (c.schema_origin == "inline" ? "" : c.schema_origin + ": ") +
                schema.status().message());
    return;
  }
  if (schema->fields.empty()) {
    r.Error("schema", v, "the landing schema has no fields");
    return;
  }
  // The loader's checks (metadata column names and types) belong to validation too.
  auto loader = Loader::Make(WithIdentityColumns(*schema));
  if (!loader.ok()) {
    r.Error("schema", v, loader.status().message());
    return;
  }
  c.elt.landing = std::move(*schema);
}

// The `_kafka_*` columns of a registry subject's landing: each row's identity and the
// record's time.
Schema RegistryMetadataColumns() {
  Schema landing;
  landing.fields.emplace_back("_kafka_topic", TypeId::kUtf8);
  landing.fields.emplace_back("_kafka_partition", TypeId::kInt64);
  landing.fields.emplace_back("_kafka_offset", TypeId::kInt64);
  landing.fields.emplace_back("_kafka_timestamp", TypeId::kTimestamp);
  return landing;
}

// A record's writer schema, by the id in its header. kNotFound: the id is unknown, the
// record's fault; kInvalid: a schema of another format than `format`; any other failure
// (a registry that is down, refused credentials, an answer that is not the registry's)
// is kUnavailable, which ends the window rather than making records bad.
Result<std::shared_ptr<const RegisteredSchema>> WriterSchema(SchemaRegistry& registry,
                                                             int32_t id,
                                                             SchemaFormat format) {
  auto writer = registry.ById(id);
  if (!writer.ok() && writer.status().code() != StatusCode::kNotFound) {
    return Status::Unavailable("fetching writer schema id " + std::to_string(id) + ": " +
                               writer.status().message());
  }
  if (!writer.ok()) return writer.status();
  if ((*writer)->format != format) {
    return Status::Invalid("schema id " + std::to_string(id) + " is a " +
                           std::string(SchemaFormatName((*writer)->format)) +
                           " schema, not " + std::string(SchemaFormatName(format)));
  }
  return writer;
}

// The subject's latest schema now, when it is still of `format`.
Result<std::shared_ptr<const RegisteredSchema>> LatestSchema(SchemaRegistry& registry,
                                                             const std::string& subject,
                                                             SchemaFormat format) {
  KELT_ASSIGN_OR_RAISE(auto latest, registry.Latest(subject));
  if (latest->format != format) {
    return Status::Invalid("subject '" + subject + "' now holds a " +
                           std::string(SchemaFormatName(latest->format)) + " schema");
  }
  return latest;
}

Result<ProtobufSchemaSource> ProtobufSource(SchemaRegistry& registry,
                                            const RegisteredSchema& schema) {
  ProtobufSchemaSource out{schema.id, schema.text, {}};
  KELT_ASSIGN_OR_RAISE(auto referenced, registry.ResolveReferences(schema.references));
  for (auto& r : referenced)
    out.imports.push_back({std::move(r.name), std::move(r.text)});
  return out;
}

// Protobuf payloads of a registry subject whose latest schema is `latest`.
Result<std::shared_ptr<const ProtobufPayload>> RegistryProtobufPayload(
    const std::shared_ptr<SchemaRegistry>& registry, const std::string& subject,
    const std::string& message, const RegisteredSchema& latest) {
  auto payload = std::make_shared<ProtobufPayload>();
  KELT_ASSIGN_OR_RAISE(payload->reader, ProtobufSource(*registry, latest));
  payload->message = message;
  payload->writer_schema = [registry](int32_t id) -> Result<ProtobufSchemaSource> {
    KELT_ASSIGN_OR_RAISE(auto writer,
                         WriterSchema(*registry, id, SchemaFormat::kProtobuf));
    auto source = ProtobufSource(*registry, *writer);
    // A reference the registry does not have: the record's schema cannot be built.
    if (!source.ok() && source.status().code() == StatusCode::kNotFound) {
      return Status::Invalid(source.status().message());
    }
    if (!source.ok()) return Status::Unavailable(source.status().message());
    return source;
  };
  // A newer version of the subject met mid-run grows the landing (EltLoop).
  payload->latest_schema = [registry, subject]() -> Result<ProtobufSchemaSource> {
    KELT_ASSIGN_OR_RAISE(auto latest,
                         LatestSchema(*registry, subject, SchemaFormat::kProtobuf));
    return ProtobufSource(*registry, *latest);
  };
  return std::shared_ptr<const ProtobufPayload>(std::move(payload));
}

// The Avro payload whose reader schema is `schema`, its writer schemas from `registry`.
std::shared_ptr<AvroPayload> AvroPayloadOf(
    const std::shared_ptr<SchemaRegistry>& registry, const RegisteredSchema& schema) {
  auto avro = std::make_shared<AvroPayload>();
  avro->reader_schema = schema.text;
  avro->reader_schema_id = schema.id;
  avro->writer_schema = [registry](int32_t id) -> Result<std::string> {
    KELT_ASSIGN_OR_RAISE(auto writer, WriterSchema(*registry, id, SchemaFormat::kAvro));
    return writer->text;
  };
  return avro;
}

std::string RegistryOrigin(const SchemaRegistry& registry, const std::string& subject,
                           const RegisteredSchema& schema) {
  return "registry " + registry.display_url() + " subject " + subject + " version " +
         std::to_string(schema.version) + " (id " + std::to_string(schema.id) + ")";
}

// A JSON Schema subject: its payloads are JSON in the wire format, landed by the JSON
// Load step into the `_kafka_*` columns, then the columns of the subject's latest schema
// (SchemaFromJsonSchema). A writer schema id is checked to be a JSON schema.
void ResolveJsonSchemaSubject(Reader& r, const YAML::Node& v, EltConfig& c,
                              const std::shared_ptr<SchemaRegistry>& registry,
                              const RegisteredSchema& schema) {
  const std::string origin = "subject '" + c.schema_subject + "' version " +
                             std::to_string(schema.version) + " (id " +
                             std::to_string(schema.id) + "): ";
  auto columns = SchemaFromJsonSchema(schema.text);
  if (!columns.ok()) {
    r.Error("schema", v, origin + "JSON Schema " + columns.status().message());
    return;
  }
  Schema landing = RegistryMetadataColumns();
  for (Field& f : columns->fields) landing.fields.push_back(std::move(f));
  auto json = std::make_shared<RegistryJsonPayload>();
  json->check_schema_id = [registry](int32_t id) {
    return WriterSchema(*registry, id, SchemaFormat::kJson).status();
  };
  LoadOptions load = c.elt.load;
  load.registry_json = json;
  if (auto loader = Loader::Make(WithIdentityColumns(landing), load); !loader.ok()) {
    r.Error("schema", v, origin + loader.status().message());
    return;
  }
  c.elt.load.registry_json = std::move(json);
  c.elt.landing = std::move(landing);
  c.schema_origin = RegistryOrigin(*registry, c.schema_subject, schema);
}

// The config's registry client, made the first time a subject needs it and shared by
// the value and key subjects (one cache of schema ids); null after an error.
std::shared_ptr<SchemaRegistry> RegistryClient(Reader& r, const YAML::Node& where,
                                               const EltConfig& c,
                                               std::shared_ptr<SchemaRegistry>& client) {
  if (client) return client;
  auto made = SchemaRegistry::Make(c.registry);
  if (!made.ok()) {
    r.Error("registry", where, made.status().message());
    return nullptr;
  }
  client = std::move(*made);
  return client;
}

// The landing of a registry subject: its latest schema is the reader schema of the
// payloads, the landing Schema has the identity columns and the record's time.
void ResolveRegistrySchema(Reader& r, const YAML::Node& v, EltConfig& c,
                           std::shared_ptr<SchemaRegistry>& client) {
  if (c.registry.url.empty()) {
    r.Error("schema", v,
            "a registry schema needs the registry's URL (registry.url, --registry-url, "
            "KELT_REGISTRY_URL)");
    return;
  }
  std::shared_ptr<SchemaRegistry> registry = RegistryClient(r, v, c, client);
  if (!registry) return;
  auto latest = registry->Latest(c.schema_subject);
  if (!latest.ok()) {
    r.Error("schema", v,
            "registry " + registry->display_url() + ": " + latest.status().message());
    return;
  }
  const RegisteredSchema& schema = **latest;
  if (schema.format == SchemaFormat::kJson) {
    ResolveJsonSchemaSubject(r, v, c, registry, schema);
    return;
  }
  if (schema.format == SchemaFormat::kProtobuf) {
    auto payload =
        RegistryProtobufPayload(registry, c.schema_subject, c.schema_message, schema);
    if (!payload.ok()) {
      r.Error("schema", v,
              "subject '" + c.schema_subject + "': " + payload.status().message());
      return;
    }
    c.elt.load.protobuf = std::move(*payload);
  } else if (schema.format != SchemaFormat::kAvro) {
    r.Error("schema", v,
            "subject '" + c.schema_subject + "' holds a " +
                std::string(SchemaFormatName(schema.format)) +
                " schema; kelt lands AVRO, PROTOBUF and JSON subjects from a registry");
    return;
  } else if (!c.schema_message.empty()) {
    r.Error("schema.registry.message", v,
            "subject '" + c.schema_subject +
                "' holds an AVRO schema: message names a Protobuf message");
    return;
  } else {
    auto avro = AvroPayloadOf(registry, schema);
    // A newer version of the subject met mid-run grows the landing (EltLoop).
    avro->latest_schema =
        [registry,
         subject = c.schema_subject]() -> Result<std::pair<int32_t, std::string>> {
      KELT_ASSIGN_OR_RAISE(auto latest,
                           LatestSchema(*registry, subject, SchemaFormat::kAvro));
      return std::pair<int32_t, std::string>{latest->id, latest->text};
    };
    c.elt.load.avro = std::move(avro);
  }
  Schema landing = RegistryMetadataColumns();
  auto loader = Loader::Make(landing, c.elt.load);
  if (!loader.ok()) {
    r.Error("schema", v,
            "subject '" + c.schema_subject + "': " + loader.status().message());
    return;
  }
  c.elt.landing = std::move(landing);
  c.schema_origin = RegistryOrigin(*registry, c.schema_subject, schema);
}

// `key.format: registry`: the key subject's latest schema decodes the keys
// (LoadOptions::key; no growth: a key's extra fields are left out).
void ResolveKeySchema(Reader& r, const YAML::Node& root, EltConfig& c,
                      std::shared_ptr<SchemaRegistry>& client) {
  const YAML::Node where = root["key"].IsDefined() ? root["key"] : root;
  std::string subject = c.key_subject;
  const auto& topics = c.elt.consumer.topics;
  if (subject.empty()) {
    if (topics.size() != 1 || topics[0].empty() || topics[0][0] == '^') {
      r.Error("key.subject", where,
              "required with key.format registry unless there is one topic (whose "
              "keys' subject is <topic>-key)");
      return;
    }
    subject = topics[0] + "-key";
  }
  if (c.registry.url.empty()) {
    r.Error("key.format", where,
            "registry keys need the registry's URL (registry.url, --registry-url, "
            "KELT_REGISTRY_URL)");
    return;
  }
  std::shared_ptr<SchemaRegistry> registry = RegistryClient(r, where, c, client);
  if (!registry) return;
  auto latest = registry->Latest(subject);
  if (!latest.ok()) {
    r.Error("key.subject", where,
            "registry " + registry->display_url() + ": " + latest.status().message());
    return;
  }
  auto key = std::make_shared<LoadOptions>();
  if ((*latest)->format == SchemaFormat::kAvro) {
    key->avro = AvroPayloadOf(registry, **latest);
  } else if ((*latest)->format == SchemaFormat::kProtobuf) {
    auto payload = RegistryProtobufPayload(registry, subject, "", **latest);
    if (!payload.ok()) {
      r.Error("key.subject", where,
              "subject '" + subject + "': " + payload.status().message());
      return;
    }
    auto fixed = std::make_shared<ProtobufPayload>(**payload);
    fixed->latest_schema = nullptr;  // keys do not grow the landing
    key->protobuf = std::move(fixed);
  } else {
    r.Error("key.subject", where,
            "subject '" + subject + "' holds a " +
                std::string(SchemaFormatName((*latest)->format)) +
                " schema; kelt decodes AVRO and PROTOBUF keys from a registry");
    return;
  }
  LoadOptions load = c.elt.load;
  load.key = key;
  auto loader = Loader::Make(WithIdentityColumns(c.elt.landing), load);
  if (!loader.ok()) {
    r.Error("key.subject", where,
            "subject '" + subject + "': " + loader.status().message());
    return;
  }
  c.key_subject = subject;
  c.elt.load.key = std::move(key);
}

// --- the key table -------------------------------------------------------------------

// What a row reads into: root keys set the EltConfig, sink keys the SinkConfig being
// read.
struct Target {
  EltConfig& config;
  SinkConfig* sink;
};

using Setter = std::function<void(Reader& r, const std::string& path, const YAML::Node& v,
                                  const Target& t)>;

// One row: the key, what it is (for the docs, flags, environment and Python), and how
// it is read into the options. Defaults are read from default-constructed options.
struct KeySpec {
  std::string key;
  std::string type;
  std::string def;
  std::string flag;
  std::string python;
  std::string help;
  Setter set;
  bool secret = false;
  // Sink keys only: the sink needs a non-empty value (`empty` tells).
  bool required = false;
  std::function<bool(const Target&)> empty;

  KeySpec Secret() && {
    secret = true;
    return std::move(*this);
  }
  KeySpec Required() && {
    required = true;
    def = "(required)";
    return std::move(*this);
  }
  // A key of the consumer alone (ParseConsumerConfig reads these and no others).
  bool consumer = false;
  KeySpec Consumer() && {
    consumer = true;
    return std::move(*this);
  }
  // For defaults that are not a value of the member ("(required)", "(group)").
  KeySpec Default(std::string text) && {
    def = std::move(text);
    return std::move(*this);
  }
};

// A row's member in the target (`get` takes an EltConfig& or a SinkConfig&).
template <typename F>
auto& At(const F& get, const Target& t) {
  if constexpr (std::is_invocable_v<const F&, EltConfig&>) {
    return get(t.config);
  } else {
    return get(*t.sink);
  }
}

// The member's value in default-constructed options.
template <typename F>
auto DefaultOf(const F& get) {
  if constexpr (std::is_invocable_v<const F&, EltConfig&>) {
    EltConfig c;
    return std::remove_cvref_t<decltype(get(c))>(get(c));
  } else {
    SinkConfig s;
    return std::remove_cvref_t<decltype(get(s))>(get(s));
  }
}

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

struct Doc {
  const char* flag;
  const char* python;
  const char* help;
};

KeySpec Row(const char* key, std::string type, std::string def, const Doc& d) {
  KeySpec k;
  k.key = key;
  k.type = std::move(type);
  k.def = std::move(def);
  k.flag = d.flag;
  k.python = d.python;
  k.help = d.help;
  return k;
}

template <typename F>
KeySpec Str(const char* key, F get, Doc d) {
  KeySpec k = Row(key, "string", DefaultOf(get), d);
  k.set = [get](Reader& r, const std::string& path, const YAML::Node& v,
                const Target& t) {
    if (auto s = r.String(path, v)) At(get, t) = *s;
  };
  k.empty = [get](const Target& t) { return At(get, t).empty(); };
  return k;
}

// A file or directory: relative to the config file when it came from the file.
template <typename F>
KeySpec Path(const char* key, F get, Doc d) {
  KeySpec k = Str(key, get, d);
  k.set = [get](Reader& r, const std::string& path, const YAML::Node& v,
                const Target& t) {
    if (auto s = r.String(path, v)) {
      At(get, t) = s->empty() ? *s : r.Resolve(path, *s).string();
    }
  };
  return k;
}

template <typename F>
KeySpec Int(const char* key, F get, int64_t min, int64_t max, Doc d) {
  using T = decltype(DefaultOf(get));
  const T def = DefaultOf(get);
  std::string text;
  if constexpr (std::is_same_v<T, std::chrono::milliseconds>) {
    text = std::to_string(def.count());
  } else if constexpr (IsOptional<T>::value) {
    text = def ? std::to_string(*def) : "(librdkafka's)";
  } else {
    text = std::to_string(def);
  }
  KeySpec k = Row(key, "integer", text, d);
  k.set = [get, min, max](Reader& r, const std::string& path, const YAML::Node& v,
                          const Target& t) {
    auto x = r.Int(path, v, min, max);
    if (!x) return;
    if constexpr (std::is_same_v<T, std::chrono::milliseconds>) {
      At(get, t) = std::chrono::milliseconds(*x);
    } else if constexpr (IsOptional<T>::value) {
      At(get, t) = static_cast<typename T::value_type>(*x);
    } else {
      At(get, t) = static_cast<T>(*x);
    }
  };
  return k;
}

template <typename F>
KeySpec Bool(const char* key, F get, Doc d) {
  KeySpec k = Row(key, "boolean", DefaultOf(get) ? "true" : "false", d);
  k.set = [get](Reader& r, const std::string& path, const YAML::Node& v,
                const Target& t) {
    if (auto b = r.Bool(path, v)) At(get, t) = *b;
  };
  return k;
}

std::string Join(const std::vector<std::string>& names, const char* sep) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : sep) + n;
  return out;
}

// A typed enum: its names come from its Name function, in `values` order.
template <typename E, typename F>
KeySpec Enum(const char* key, F get, std::vector<E> values, std::string_view (*name)(E),
             Doc d) {
  std::vector<std::string> names;
  for (E e : values) names.emplace_back(name(e));
  KeySpec k = Row(key, Join(names, "|"), std::string(name(DefaultOf(get))), d);
  k.set = [get, values, names](Reader& r, const std::string& path, const YAML::Node& v,
                               const Target& t) {
    auto s = r.Enum(path, v, names);
    if (!s) return;
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == *s) At(get, t) = values[i];
    }
  };
  return k;
}

KeySpec Custom(const char* key, const char* type, const char* def, Doc d, Setter set) {
  KeySpec k = Row(key, type, def, d);
  k.set = std::move(set);
  return k;
}

void ReadSchema(Reader& r, const YAML::Node& v, EltConfig& c);

// The documentation order: `kelt validate --list-keys` (the user guide's table), the
// flags of `kelt run`, the environment variables, the Python keyword arguments and the
// parser all come from here. Sink keys are listed under "<kind>.".
const std::vector<KeySpec>& Specs() {
  static const std::vector<KeySpec> specs = [] {
    std::vector<KeySpec> v;
    auto add = [&](KeySpec k) { v.push_back(std::move(k)); };
    add(Str("brokers", [](EltConfig & c) -> auto& { return c.elt.consumer.brokers; },
            {"--brokers", "brokers", "Kafka bootstrap servers"})
            .Default("(required)")
            .Consumer());
    add(Str("group", [](EltConfig & c) -> auto& { return c.elt.consumer.group_id; },
            {"--group", "group_id", "consumer group id"})
            .Default("(required)")
            .Consumer());
    add(Custom(
            "topics", "list", "(required)",
            {"--topic", "topics",
             "topics to read; a name starting with ^ is a regular expression"},
            [](Reader& r, const std::string& path, const YAML::Node& v, const Target& t) {
              auto& topics = t.config.elt.consumer.topics;
              if (v.IsScalar()) {
                if (auto s = r.String(path, v)) topics = {*s};
              } else if (v.IsSequence()) {
                for (size_t i = 0; i < v.size(); ++i) {
                  if (auto s = r.String(path + "[" + std::to_string(i) + "]", v[i]))
                    topics.push_back(*s);
                }
              } else {
                r.Error(path, v, "expected a list of topic names" + r.Got(path, v));
              }
            })
            .Consumer());
    add(Enum("auto_offset_reset",
             [](EltConfig & c) -> auto& { return c.elt.consumer.auto_offset_reset; },
             std::vector{AutoOffsetReset::kEarliest, AutoOffsetReset::kLatest,
                         AutoOffsetReset::kError},
             &AutoOffsetResetName,
             {"", "auto_offset_reset",
              "where a partition without a committed or landed offset starts"})
            .Consumer());
    add(Enum("group_protocol",
             [](EltConfig & c) -> auto& { return c.elt.consumer.group_protocol; },
             std::vector{GroupProtocol::kClassic, GroupProtocol::kConsumer},
             &GroupProtocolName,
             {"", "group_protocol",
              "consumer group protocol: consumer is KIP-848 (Kafka >= 4.0, incremental "
              "rebalances)"})
            .Consumer());
    add(Str("instance_id",
            [](EltConfig & c) -> auto& { return c.elt.consumer.instance_id; },
            {"--instance-id", "instance_id",
             "group.instance.id (static membership): a restarted worker takes its "
             "partitions back at once"})
            .Consumer());
    add(Int("session_timeout_ms",
            [](EltConfig & c) -> auto& { return c.elt.consumer.session_timeout_ms; }, 1,
            INT32_MAX,
            {"", "session_timeout_ms",
             "consumer session timeout (group_protocol classic)"})
            .Consumer());
    add(Custom(
            "properties", "map", "{}",
            {"--property", "properties",
             "librdkafka properties passed through (security.protocol, sasl.*, ssl.*, "
             "fetch.*)"},
            [](Reader& r, const std::string& path, const YAML::Node& v, const Target& t) {
              if (!v.IsMap()) {
                r.Error(path, v,
                        "expected a map of librdkafka properties" + r.Got(path, v));
                return;
              }
              for (const auto& kv : v) {
                std::string name = kv.first.Scalar();
                if (auto s = r.String(path + "." + name, kv.second))
                  t.config.elt.consumer.properties[name] = *s;
              }
            })
            .Consumer());
    add(Custom(
        "schema", "path|map", "(required)",
        {"--schema", "landing_schema",
         "landing schema: a JSON file (relative to the config file), inline, or "
         "registry:<subject> (the subject's latest Avro, Protobuf or JSON Schema)"},
        [](Reader& r, const std::string&, const YAML::Node& v, const Target& t) {
          ReadSchema(r, v, t.config);
        }));
    add(Str("registry.url", [](EltConfig & c) -> auto& { return c.registry.url; },
            {"--registry-url", "registry_url",
             "Schema Registry base URL (Apicurio: …/apis/ccompat/v7), for "
             "`schema: registry:<subject>`"}));
    add(Str("registry.username",
            [](EltConfig & c) -> auto& { return c.registry.username; },
            {"", "", "Schema Registry basic-auth user (Confluent Cloud: the API key)"}));
    add(Str("registry.password",
            [](EltConfig & c) -> auto& { return c.registry.password; },
            {"", "", "Schema Registry basic-auth password"})
            .Secret());
    add(Str("registry.bearer_token",
            [](EltConfig & c) -> auto& { return c.registry.bearer_token; },
            {"", "", "Schema Registry bearer token (OAuth)"})
            .Secret());
    add(Path("registry.ca_location",
             [](EltConfig & c) -> auto& { return c.registry.ca_location; },
             {"", "", "CA bundle (PEM) of the registry's TLS certificate"}));
    add(Path("registry.certificate_location",
             [](EltConfig & c) -> auto& { return c.registry.certificate_location; },
             {"", "", "client certificate (PEM) for mutual TLS to the registry"}));
    add(Path("registry.key_location",
             [](EltConfig & c) -> auto& { return c.registry.key_location; },
             {"", "", "client key (PEM) for mutual TLS to the registry"}));
    add(Str("registry.key_password",
            [](EltConfig & c) -> auto& { return c.registry.key_password; },
            {"", "", "password of the client key"})
            .Secret());
    add(Int("registry.timeout_ms",
            [](EltConfig & c) -> auto& { return c.registry.timeout; }, 1, INT32_MAX,
            {"", "", "limit of each registry request"}));
    add(Enum("key.format", [](EltConfig & c) -> auto& { return c.key_format; },
             std::vector{KeyFormat::kRaw, KeyFormat::kRegistry}, &KeyFormatName,
             {"--key-format", "key_format",
              "record keys: raw (a `_kafka_key` column of the schema takes them as "
              "text or bytes) or registry (decoded by key.subject's schema into a "
              "`_kafka_key` column of its type)"}));
    add(Str("key.subject", [](EltConfig & c) -> auto& { return c.key_subject; },
            {"--key-subject", "key_subject",
             "the registry subject of the keys (default: <topic>-key, for one topic)"}));
    add(Enum("on_bad_record",
             [](EltConfig & c) -> auto& { return c.elt.load.on_bad_record; },
             std::vector{BadRecordPolicy::kFail, BadRecordPolicy::kSkip,
                         BadRecordPolicy::kDeadLetter},
             &BadRecordPolicyName,
             {"--on-bad-record", "on_bad_record",
              "what happens to a record that does not fit the schema"}));
    add(Bool("strict_payload",
             [](EltConfig & c) -> auto& { return c.elt.load.strict_payload; },
             {"", "strict_payload", "non-object or non-UTF-8 payloads are bad records"}));
    add(Int("window.max_records",
            [](EltConfig & c) -> auto& { return c.elt.window.max_records; }, 1, INT64_MAX,
            {"--window-records", "max_records", "a window ends at this many records"}));
    add(Int(
        "window.max_bytes", [](EltConfig & c) -> auto& { return c.elt.window.max_bytes; },
        1, INT64_MAX,
        {"--window-bytes", "max_bytes", "a window ends at this many payload+key bytes"}));
    add(Int("window.max_wait_ms",
            [](EltConfig & c) -> auto& { return c.elt.window.max_wait; }, 1, INT32_MAX,
            {"--window-wait-ms", "max_wait_ms", "a window ends at this deadline"}));
    add(Bool("window.stop_at_end",
             [](EltConfig & c) -> auto& { return c.elt.window.stop_at_end; },
             {"", "", "a window ends when every assigned partition reached its end"}));
    add(Bool("until_caught_up",
             [](EltConfig & c) -> auto& { return c.elt.until_caught_up; },
             {"--until-caught-up", "until_caught_up",
              "stop at the end of the topic as it was when the run started"}));
    add(Int(
        "max_windows", [](EltConfig & c) -> auto& { return c.elt.max_windows; }, 0,
        INT64_MAX,
        {"--max-windows", "max_windows", "stop after this many windows (0: no limit)"}));
    add(Int("assignment_timeout_ms",
            [](EltConfig & c) -> auto& { return c.elt.assignment_timeout; }, 0, INT64_MAX,
            {"", "assignment_timeout_ms",
             "with until_caught_up: fail when no partition is assigned this long (0: "
             "wait; longer while other members hold them)"}));
    add(Int("stalled_write_warning_ms",
            [](EltConfig & c) -> auto& { return c.elt.stalled_write_warning; }, 0,
            INT64_MAX,
            {"", "stalled_write_warning_ms",
             "log a warning naming the sink when a window's write has not returned "
             "after this long, and again each time it passes (0: never)"}));
    add(Int("min_records_per_loader",
            [](EltConfig & c) -> auto& { return c.elt.min_records_per_loader; }, 1,
            INT64_MAX,
            {"", "min_records_per_loader",
             "a window loads on every core (up to 4) when each gets at least this many "
             "records"}));
    add(Int("metrics.port", [](EltConfig & c) -> auto& { return c.metrics_port; }, 0,
            65535,
            {"--metrics-port", "", "serve Prometheus /metrics on this port (0: off)"}));
    add(Str("metrics.host", [](EltConfig & c) -> auto& { return c.metrics_host; },
            {"--metrics-host", "", "address /metrics binds to"}));
    add(Enum("log.format", [](EltConfig & c) -> auto& { return c.log_format; },
             std::vector{LogFormat::kText, LogFormat::kJson}, &LogFormatName,
             {"--log-format", "", "structured log lines on stderr"}));
    add(Enum("log.level", [](EltConfig & c) -> auto& { return c.log_level; },
             std::vector{LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning,
                         LogLevel::kError},
             &LogLevelName, {"--log-level", "", "lowest level logged"}));
    add(Enum("progress", [](EltConfig & c) -> auto& { return c.progress; },
             std::vector{ProgressMode::kAuto, ProgressMode::kBar, ProgressMode::kLines,
                         ProgressMode::kNone},
             &ProgressModeName,
             {"--progress", "", "a bar on a terminal, periodic lines otherwise"}));
    add(Int("progress_interval_ms",
            [](EltConfig & c) -> auto& { return c.progress_interval_ms; }, 1, INT64_MAX,
            {"", "", "interval of progress lines"}));

    // Parquet.
    add(Path("parquet.root", [](SinkConfig & s) -> auto& { return s.parquet.root; },
             {"--parquet", "",
              "landing root: a directory (relative to the config file) or "
              "s3://bucket/prefix"})
            .Required());
    add(Str("parquet.s3_endpoint",
            [](SinkConfig & s) -> auto& { return s.parquet.s3_endpoint; },
            {"", "", "S3 endpoint override"}));
    add(Str("parquet.s3_region",
            [](SinkConfig & s) -> auto& { return s.parquet.s3_region; },
            {"", "", "S3 region"}));
    add(Str("parquet.s3_access_key",
            [](SinkConfig & s) -> auto& { return s.parquet.s3_access_key; },
            {"", "", "S3 access key"})
            .Secret());
    add(Str("parquet.s3_secret_key",
            [](SinkConfig & s) -> auto& { return s.parquet.s3_secret_key; },
            {"", "", "S3 secret key"})
            .Secret());
    add(Str("parquet.partition_by",
            [](SinkConfig & s) -> auto& { return s.parquet.partition_by; },
            {"", "", "hive directories from this column"}));
    add(Str("parquet.time_layout",
            [](SinkConfig & s) -> auto& { return s.parquet.time_layout; },
            {"", "", "for a time partition_by: e.g. year=%Y/month=%m/day=%d"}));
    add(Int("parquet.rotate_records",
            [](SinkConfig & s) -> auto& { return s.parquet.rotate_records; }, 1,
            INT64_MAX, {"", "", "file rotation: records"}));
    add(Int("parquet.rotate_bytes",
            [](SinkConfig & s) -> auto& { return s.parquet.rotate_bytes; }, 1, INT64_MAX,
            {"", "", "file rotation: bytes"}));
    add(Int("parquet.rotate_age_ms",
            [](SinkConfig & s) -> auto& { return s.parquet.rotate_age; }, 1, INT64_MAX,
            {"", "", "file rotation: age"}));
    add(Enum("parquet.compression",
             [](SinkConfig & s) -> auto& { return s.parquet.compression; },
             std::vector{ParquetCompression::kZstd, ParquetCompression::kSnappy,
                         ParquetCompression::kGzip, ParquetCompression::kLz4,
                         ParquetCompression::kNone},
             &ParquetCompressionName, {"", "", "codec"}));
    add(Enum("parquet.dictionary",
             [](SinkConfig & s) -> auto& { return s.parquet.dictionary; },
             std::vector{ParquetDictionary::kAuto, ParquetDictionary::kAll,
                         ParquetDictionary::kNone},
             &ParquetDictionaryName,
             {"", "", "dictionary encoding (auto: not for numbers and timestamps)"}));
    add(Enum("parquet.integer_encoding",
             [](SinkConfig & s) -> auto& { return s.parquet.integer_encoding; },
             std::vector{ParquetIntegerEncoding::kDelta, ParquetIntegerEncoding::kPlain},
             &ParquetIntegerEncodingName,
             {"", "", "integers and timestamps without a dictionary"}));
    add(Str("parquet.dead_letter_dir",
            [](SinkConfig & s) -> auto& { return s.parquet.dead_letter_dir; },
            {"", "", "dead letters' directory under the root"}));

    // DuckDB.
    add(Path("duckdb.path", [](SinkConfig & s) -> auto& { return s.duckdb.path; },
             {"--duckdb", "", "database file (relative to the config file)"})
            .Required());
    add(Str("duckdb.table", [](SinkConfig & s) -> auto& { return s.duckdb.table; },
            {"--duckdb-table", "", "landing table"}));
    add(Str("duckdb.dead_letter_table",
            [](SinkConfig & s) -> auto& { return s.duckdb.dead_letter_table; },
            {"", "", "dead letters"})
            .Default("<table>_dead_letter"));
    add(Str("duckdb.offsets_table",
            [](SinkConfig & s) -> auto& { return s.duckdb.offsets_table; },
            {"", "", "offsets table"}));
    add(Str("duckdb.group_id", [](SinkConfig & s) -> auto& { return s.duckdb.group_id; },
            {"", "", "group the stored offsets belong to"})
            .Default("(group)"));
    add(Bool("duckdb.unique_offsets_index",
             [](SinkConfig & s) -> auto& { return s.duckdb.unique_offsets_index; },
             {"", "", "UNIQUE index on the record identity"}));

    // PostgreSQL.
    add(Str("postgres.conninfo",
            [](SinkConfig & s) -> auto& { return s.postgres.conninfo; },
            {"--postgres", "", "libpq connection string or URI"})
            .Required()
            .Secret());
    add(Str("postgres.table", [](SinkConfig & s) -> auto& { return s.postgres.table; },
            {"--postgres-table", "", "landing table"}));
    add(Str("postgres.dead_letter_table",
            [](SinkConfig & s) -> auto& { return s.postgres.dead_letter_table; },
            {"", "", "dead letters"})
            .Default("<table>_dead_letter"));
    add(Str("postgres.offsets_table",
            [](SinkConfig & s) -> auto& { return s.postgres.offsets_table; },
            {"", "", "offsets table"}));
    add(Str("postgres.group_id",
            [](SinkConfig & s) -> auto& { return s.postgres.group_id; },
            {"", "", "group the stored offsets belong to"})
            .Default("(group)"));
    add(Bool("postgres.create_table_if_missing",
             [](SinkConfig & s) -> auto& { return s.postgres.create_table_if_missing; },
             {"", "", "create the tables"}));
    add(Bool("postgres.replace_nul_in_text",
             [](SinkConfig & s) -> auto& { return s.postgres.replace_nul_in_text; },
             {"", "", "NUL in text lands as U+FFFD instead of failing"}));

    // Apache Iceberg (SQL catalog on SQLite or PostgreSQL; local or S3 warehouse).
    add(Path("iceberg.catalog", [](SinkConfig & s) -> auto& { return s.iceberg.catalog; },
             {"", "",
              "SQL catalog: SQLite file (relative to the config file) or "
              "postgresql:// URI"})
            .Required()
            .Secret());
    add(Str("iceberg.catalog_name",
            [](SinkConfig & s) -> auto& { return s.iceberg.catalog_name; },
            {"", "", "the catalog's name (catalog_name column)"}));
    add(Path("iceberg.warehouse",
             [](SinkConfig & s) -> auto& { return s.iceberg.warehouse; },
             {"", "",
              "warehouse: a directory (relative to the config file) or "
              "s3://bucket/prefix"})
            .Required());
    add(Str("iceberg.s3_endpoint",
            [](SinkConfig & s) -> auto& { return s.iceberg.s3_endpoint; },
            {"", "", "S3 endpoint override (s3:// warehouse)"}));
    add(Str("iceberg.s3_region",
            [](SinkConfig & s) -> auto& { return s.iceberg.s3_region; },
            {"", "", "S3 region"}));
    add(Str("iceberg.s3_access_key",
            [](SinkConfig & s) -> auto& { return s.iceberg.s3_access_key; },
            {"", "", "S3 access key"})
            .Secret());
    add(Str("iceberg.s3_secret_key",
            [](SinkConfig & s) -> auto& { return s.iceberg.s3_secret_key; },
            {"", "", "S3 secret key"})
            .Secret());
    add(Str("iceberg.namespace",
            [](SinkConfig & s) -> auto& { return s.iceberg.table_namespace; },
            {"", "", "table namespace"}));
    add(Str("iceberg.table", [](SinkConfig & s) -> auto& { return s.iceberg.table; },
            {"", "", "table name"}));
    add(Str("iceberg.partition",
            [](SinkConfig & s) -> auto& { return s.iceberg.partition; },
            {"", "", "partition spec of a new table, e.g. day(at), base"}));
    add(Str("iceberg.group_id",
            [](SinkConfig & s) -> auto& { return s.iceberg.group_id; },
            {"", "", "group the snapshot offsets belong to"})
            .Default("(group)"));

    // A sink key's Python name is its field in kelt.ParquetSink & co.
    for (auto& k : v) {
      std::string_view key = k.key;
      std::string head(key.substr(0, key.find('.')));
      if (IsSinkKind(head)) k.python = std::string(key.substr(head.size() + 1));
    }
    return v;
  }();
  return specs;
}

// Keys one level below `prefix` ("" for the root, "window", "parquet", …).
std::vector<std::string> ChildKeys(std::string_view prefix) {
  std::vector<std::string> out;
  for (const auto& s : Specs()) {
    std::string_view k = s.key;
    if (prefix.empty()) {
      std::string head(k.substr(0, k.find('.')));
      if (IsSinkKind(head)) continue;
      if (std::find(out.begin(), out.end(), head) == out.end()) out.push_back(head);
    } else if (k.size() > prefix.size() && k.substr(0, prefix.size()) == prefix &&
               k[prefix.size()] == '.') {
      out.emplace_back(k.substr(prefix.size() + 1));
    }
  }
  if (prefix.empty()) out.emplace_back("sinks");
  return out;
}

void ReadSink(Reader& r, const std::string& path, SinkConfig::Kind kind,
              const YAML::Node& m, EltConfig& c, SinkConfig& out) {
  const std::string name(SinkKindName(kind));
  const std::string p = path + "." + name;
  if (!r.CheckMap(p, m, ChildKeys(name))) return;
  out.kind = kind;
  out.duckdb.group_id = c.elt.consumer.group_id;
  out.postgres.group_id = c.elt.consumer.group_id;
  out.iceberg.group_id = c.elt.consumer.group_id;
  const Target t{c, &out};
  for (const auto& spec : Specs()) {
    std::string_view key = spec.key;
    if (key.size() <= name.size() || key.substr(0, name.size()) != name ||
        key[name.size()] != '.') {
      continue;
    }
    const std::string leaf(key.substr(name.size() + 1));
    const std::string kp = p + "." + leaf;
    With(m, leaf.c_str(), [&](const YAML::Node& v) { spec.set(r, kp, v, t); });
    if (!spec.required || r.HasError(kp) || !spec.empty(t)) continue;
    if (!m[leaf].IsDefined()) {
      r.Error(kp, m, "required for a " + name + " sink");
    } else {
      r.Error(kp, m[leaf], "must not be empty");
    }
  }
}

// The consumer's required keys and the checks across its keys.
void CheckConsumer(Reader& r, const YAML::Node& root, const ConsumerOptions& co) {
  if (co.brokers.empty() && !r.HasError("brokers"))
    r.Error("brokers", root["brokers"], "required (Kafka bootstrap servers)");
  if (co.group_id.empty() && !r.HasError("group"))
    r.Error("group", root["group"], "required (consumer group id)");
  if (co.topics.empty() && !r.HasError("topics"))
    r.Error("topics", root["topics"], "required (at least one topic)");
  for (size_t i = 0; i < co.topics.size(); ++i) {
    if (co.topics[i].empty())
      r.Error("topics[" + std::to_string(i) + "]", root["topics"], "must not be empty");
  }
  if (co.group_protocol == GroupProtocol::kConsumer && co.session_timeout_ms) {
    r.Error("session_timeout_ms", root["session_timeout_ms"],
            "applies to group_protocol classic only (with consumer the broker's "
            "group.consumer.session.timeout.ms decides)");
  }
}

void ReadRoot(Reader& r, const YAML::Node& root, EltConfig& c) {
  if (!r.CheckMap("", root, ChildKeys(""))) return;
  auto& co = c.elt.consumer;
  const Target t{c, nullptr};
  // Maps of keys ("window", "metrics", "log"): whether each is present and a map.
  std::map<std::string, bool> maps;
  for (const auto& spec : Specs()) {
    std::string_view key = spec.key;
    const size_t dot = key.find('.');
    if (dot == std::string_view::npos) {
      With(root, spec.key.c_str(),
           [&](const YAML::Node& v) { spec.set(r, spec.key, v, t); });
      continue;
    }
    const std::string head(key.substr(0, dot));
    if (IsSinkKind(head)) continue;
    auto it = maps.find(head);
    if (it == maps.end()) {
      YAML::Node m = root[head];
      it =
          maps.emplace(head, m.IsDefined() && r.CheckMap(head, m, ChildKeys(head))).first;
    }
    if (!it->second) continue;
    const std::string leaf(key.substr(dot + 1));
    With(root[head], leaf.c_str(),
         [&](const YAML::Node& v) { spec.set(r, spec.key, v, t); });
  }

  // Required keys.
  CheckConsumer(r, root, co);
  if (!root["schema"].IsDefined())
    r.Error("schema", root, "required (the landing schema)");
  std::shared_ptr<SchemaRegistry> client;
  if (!c.schema_subject.empty() && !r.HasError("schema")) {
    ResolveRegistrySchema(r, root["schema"], c, client);
  }
  c.elt.load.key.reset();
  if (c.key_format == KeyFormat::kRegistry && !r.HasError("schema") &&
      !r.HasError("topics")) {
    ResolveKeySchema(r, root, c, client);
  }

  YAML::Node sinks = root["sinks"];
  if (!sinks.IsDefined()) {
    r.Error("sinks", root,
            "required (at least one sink: parquet, duckdb, postgres or iceberg)");
  } else if (!sinks.IsSequence() || sinks.size() == 0) {
    r.Error("sinks", sinks,
            "expected a non-empty list of sinks (at least one sink: parquet, duckdb, "
            "postgres or iceberg)" +
                r.Got("sinks", sinks));
  } else {
    for (size_t i = 0; i < sinks.size(); ++i) {
      const std::string path = "sinks[" + std::to_string(i) + "]";
      YAML::Node item = sinks[i];
      if (!item.IsMap() || item.size() != 1) {
        r.Error(
            path, item,
            "expected one of parquet:, duckdb:, postgres:, iceberg: with its keys below");
        continue;
      }
      std::string kind = item.begin()->first.Scalar();
      std::optional<SinkConfig::Kind> parsed = ParseSinkKind(kind);
      if (!parsed) {
        r.Error(path + "." + kind, item.begin()->first,
                "unknown sink kind" +
                    DidYouMean(kind, {"parquet", "duckdb", "postgres", "iceberg"}) +
                    "; expected parquet, duckdb, postgres or iceberg");
        continue;
      }
      SinkConfig sc;
      ReadSink(r, path, *parsed, item.begin()->second, c, sc);
      c.sinks.push_back(std::move(sc));
    }
  }
}

// --- overrides -----------------------------------------------------------------------

// Split "sinks[1].parquet.root" / "window.max_records" into segments; "[N]" segments
// are indices. A librdkafka property name keeps its dots.
struct Segment {
  std::string key;
  int index = -1;
};

Result<std::vector<Segment>> SplitPath(const std::string& key) {
  std::vector<Segment> out;
  if (key.rfind("properties.", 0) == 0 && key.size() > 11) {
    out.push_back({"properties"});
    out.push_back({key.substr(11)});
    return out;
  }
  size_t i = 0;
  while (i <= key.size()) {
    size_t dot = key.find('.', i);
    std::string part =
        key.substr(i, dot == std::string::npos ? std::string::npos : dot - i);
    size_t br = part.find('[');
    if (br != std::string::npos) {
      if (part.back() != ']') return Status::Invalid(key + ": not a config key");
      int idx = 0;
      auto [p, ec] =
          std::from_chars(part.data() + br + 1, part.data() + part.size() - 1, idx);
      if (ec != std::errc() || p != part.data() + part.size() - 1 || idx < 0)
        return Status::Invalid(key + ": not a config key (bad list index)");
      out.push_back({part.substr(0, br)});
      out.push_back({"", idx});
    } else {
      if (part.empty()) return Status::Invalid(key + ": not a config key");
      out.push_back({part});
    }
    if (dot == std::string::npos) break;
    i = dot + 1;
  }
  return out;
}

bool IsListKey(const std::string& key) { return key == "topics"; }

YAML::Node ScalarOrList(const std::string& key, const std::string& value) {
  if (!IsListKey(key)) return YAML::Node(value);
  YAML::Node seq(YAML::NodeType::Sequence);
  std::stringstream ss(value);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) seq.push_back(item);
  }
  return seq;
}

// Apply one override to the tree; return the canonical path it set.
Result<std::string> ApplyOverride(YAML::Node& root, const ConfigOverride& o) {
  if (!root.IsMap()) return Status::Invalid("(document): expected a map of keys");
  std::string key = o.key;
  // "parquet.root" → "sinks[N].parquet.root" for the one parquet sink.
  std::string head = key.substr(0, key.find('.'));
  if (IsSinkKind(head) && key.size() > head.size() + 1) {
    YAML::Node sinks = root["sinks"];
    if (!sinks.IsDefined() || sinks.IsNull()) {
      sinks = YAML::Node(YAML::NodeType::Sequence);
      root["sinks"] = sinks;
    }
    if (!sinks.IsSequence())
      return Status::Invalid("sinks: expected a list of sinks (" + o.origin + ")");
    int found = -1;
    for (size_t i = 0; i < sinks.size(); ++i) {
      if (sinks[i].IsMap() && sinks[i][head].IsDefined()) {
        if (found >= 0) {
          return Status::Invalid(o.key + " (" + o.origin + "): the config has several " +
                                 head + " sinks; use sinks[N]." + key);
        }
        found = static_cast<int>(i);
      }
    }
    if (found < 0) {
      YAML::Node item(YAML::NodeType::Map);
      item[head] = YAML::Node(YAML::NodeType::Map);
      sinks.push_back(item);
      found = static_cast<int>(sinks.size()) - 1;
    }
    key = "sinks[" + std::to_string(found) + "]." + key;
  }
  KELT_ASSIGN_OR_RAISE(auto segs, SplitPath(key));
  YAML::Node node = root;
  for (size_t i = 0; i + 1 < segs.size(); ++i) {
    const Segment& s = segs[i];
    if (s.index >= 0) {
      if (!node.IsSequence() || static_cast<size_t>(s.index) >= node.size())
        return Status::Invalid(o.key + " (" + o.origin + "): no such list item");
      node.reset(node[s.index]);
    } else {
      if (!node.IsMap() && !node.IsNull())
        return Status::Invalid(o.key + " (" + o.origin + "): not a map");
      if (!node[s.key].IsDefined() || node[s.key].IsNull())
        node[s.key] = YAML::Node(YAML::NodeType::Map);
      YAML::Node child = node[s.key];
      node.reset(child);
    }
  }
  const Segment& last = segs.back();
  if (last.index >= 0) {
    if (!node.IsSequence() || static_cast<size_t>(last.index) >= node.size())
      return Status::Invalid(o.key + " (" + o.origin + "): no such list item");
    node[last.index] = YAML::Node(o.value);
  } else {
    if (!node.IsMap() && !node.IsNull())
      return Status::Invalid(o.key + " (" + o.origin + "): not a map");
    node[last.key] = ScalarOrList(last.key, o.value);
  }
  return key;
}

}  // namespace

std::optional<SinkConfig::Kind> ParseSinkKind(std::string_view name) {
  for (auto kind : {SinkConfig::Kind::kParquet, SinkConfig::Kind::kDuckDb,
                    SinkConfig::Kind::kPostgres, SinkConfig::Kind::kIceberg}) {
    if (name == SinkKindName(kind)) return kind;
  }
  if (name == "postgresql") return SinkConfig::Kind::kPostgres;
  return std::nullopt;
}

std::string_view SinkKindName(SinkConfig::Kind kind) {
  switch (kind) {
    case SinkConfig::Kind::kParquet:
      return "parquet";
    case SinkConfig::Kind::kDuckDb:
      return "duckdb";
    case SinkConfig::Kind::kPostgres:
      return "postgres";
    case SinkConfig::Kind::kIceberg:
      return "iceberg";
  }
  return "parquet";
}

bool IsSecretConfigKey(std::string_view key) {
  std::string lower(key);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view needle :
       {"password", "secret", "sasl.jaas", "ssl.key", "ssl_key", "keystore", "token",
        "credential", "sasl.oauthbearer.config", "access_key", "conninfo"}) {
    if (lower.find(needle) != std::string::npos) return true;
  }
  return false;
}

std::string_view KeyFormatName(KeyFormat format) {
  return format == KeyFormat::kRegistry ? "registry" : "raw";
}

std::string_view ProgressModeName(ProgressMode mode) {
  switch (mode) {
    case ProgressMode::kAuto:
      return "auto";
    case ProgressMode::kBar:
      return "bar";
    case ProgressMode::kLines:
      return "lines";
    case ProgressMode::kNone:
      return "none";
  }
  return "auto";
}

Result<EltConfig> ParseEltConfig(std::string_view text,
                                 const std::filesystem::path& base_dir,
                                 const std::vector<ConfigOverride>& overrides,
                                 bool built_by_program) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    // e.msg is yaml-cpp's text without the position; the mark is 0-based.
    return Status::ParseError("not a valid YAML document: " + OneLine(e.msg) + " (line " +
                              std::to_string(e.mark.line + 1) + ", column " +
                              std::to_string(e.mark.column + 1) + ")");
  }
  if (root.IsNull() || !root.IsDefined()) root = YAML::Node(YAML::NodeType::Map);
  std::map<std::string, std::string> origins;
  try {
    for (const auto& o : overrides) {
      auto path = ApplyOverride(root, o);
      if (!path.ok()) return Status::Invalid(OneLine(path.status().message()));
      origins[*path] = o.origin.empty() ? "override" : o.origin;
    }
  } catch (const YAML::Exception& e) {
    return Status::Invalid("cannot apply an override: " + OneLine(e.msg));
  }
  EltConfig c;
  Reader r(base_dir, std::move(origins), built_by_program);
  try {
    ReadRoot(r, root, c);
  } catch (const YAML::Exception& e) {
    return Status::Invalid("config: " + OneLine(e.msg));
  }
  KELT_RETURN_NOT_OK(r.Problems());
  return c;
}

Result<ConsumerOptions> ParseConsumerConfig(std::string_view text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Status::ParseError("not a valid consumer document: " + OneLine(e.msg));
  }
  if (root.IsNull() || !root.IsDefined()) root = YAML::Node(YAML::NodeType::Map);
  EltConfig c;
  Reader r(".", {}, /*built_by_program=*/true);
  std::vector<std::string> keys;
  for (const auto& s : Specs()) {
    if (s.consumer) keys.push_back(s.key);
  }
  try {
    if (r.CheckMap("", root, keys)) {
      const Target t{c, nullptr};
      for (const auto& spec : Specs()) {
        if (!spec.consumer) continue;
        With(root, spec.key.c_str(),
             [&](const YAML::Node& v) { spec.set(r, spec.key, v, t); });
      }
      CheckConsumer(r, root, c.elt.consumer);
    }
  } catch (const YAML::Exception& e) {
    return Status::Invalid("consumer: " + OneLine(e.msg));
  }
  KELT_RETURN_NOT_OK(r.Problems());
  return std::move(c.elt.consumer);
}

Result<RegistryLanding> ResolveRegistryLanding(const RegistryLandingRequest& request) {
  EltConfig c;
  c.registry = request.registry;
  c.schema_subject = request.subject;
  c.schema_message = request.message;
  c.key_format = request.key_format;
  c.key_subject = request.key_subject;
  c.elt.consumer.topics = request.topics;
  c.elt.load = request.load;
  c.elt.load.key.reset();
  Reader r(".", {}, /*built_by_program=*/true);
  const YAML::Node none;
  std::shared_ptr<SchemaRegistry> client;
  try {
    if (c.schema_subject.empty()) {
      r.Error("schema", none, "a registry landing needs a subject (registry:<subject>)");
    } else {
      ResolveRegistrySchema(r, none, c, client);
    }
    if (c.key_format == KeyFormat::kRegistry && !r.HasError("schema")) {
      ResolveKeySchema(r, YAML::Node(YAML::NodeType::Map), c, client);
    }
  } catch (const YAML::Exception& e) {
    return Status::Invalid("registry landing: " + OneLine(e.msg));
  }
  KELT_RETURN_NOT_OK(r.Problems());
  return RegistryLanding{std::move(c.elt.landing), std::move(c.elt.load),
                         std::move(c.schema_origin)};
}

Result<EltConfig> LoadEltConfig(const std::filesystem::path& path,
                                const std::vector<ConfigOverride>& overrides) {
  if (path.empty()) return ParseEltConfig("", std::filesystem::current_path(), overrides);
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("cannot read config file '" + path.string() + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::filesystem::path base = path.parent_path();
  if (base.empty()) base = ".";
  auto c = ParseEltConfig(ss.str(), base, overrides);
  if (!c.ok()) {
    // Each line names the file, so a list of problems reads well on its own.
    std::string msg;
    std::stringstream lines(c.status().message());
    std::string line;
    while (std::getline(lines, line)) {
      msg += (msg.empty() ? "" : "\n") + path.string() + ": " + line;
    }
    return Status(c.status().code(), msg);
  }
  return c;
}

Result<std::vector<std::unique_ptr<Sink>>> MakeSinks(const EltConfig& config) {
  std::vector<std::unique_ptr<Sink>> sinks;
  for (size_t i = 0; i < config.sinks.size(); ++i) {
    const auto& s = config.sinks[i];
    Result<std::unique_ptr<Sink>> sink = Status::Internal("unknown sink kind");
    switch (s.kind) {
      case SinkConfig::Kind::kParquet:
        sink = MakeParquetSink(s.parquet);
        break;
      case SinkConfig::Kind::kDuckDb:
        sink = MakeDuckDbSink(s.duckdb);
        break;
      case SinkConfig::Kind::kPostgres:
        sink = MakePostgresSink(s.postgres);
        break;
      case SinkConfig::Kind::kIceberg:
        sink = MakeIcebergSink(s.iceberg);
        break;
    }
    if (!sink.ok()) {
      return sink.status().WithPrefix("sinks[" + std::to_string(i) + "]." +
                                      std::string(SinkKindName(s.kind)) + ": ");
    }
    sinks.push_back(std::move(*sink));
  }
  return sinks;
}

const std::vector<ConfigKeyInfo>& EltConfigKeys() {
  static const std::vector<ConfigKeyInfo> keys = [] {
    std::vector<ConfigKeyInfo> out;
    for (const auto& s : Specs()) {
      ConfigKeyInfo k;
      k.key = s.key;
      k.type = s.type;
      k.default_value = s.def;
      k.env =
          std::string(s.key) == "properties" ? "KELT_PROPERTY_<NAME>" : EnvName(s.key);
      k.flag = s.flag;
      k.python = s.python;
      k.help = s.help;
      k.secret = s.secret;
      k.consumer = s.consumer;
      out.push_back(std::move(k));
    }
    return out;
  }();
  return keys;
}

std::vector<ConfigOverride> ConfigOverridesFromEnv(
    const std::vector<std::string>& environ_names,
    const std::function<const char*(const char*)>& getenv) {
  auto get = [&](const std::string& name) -> const char* {
    return getenv ? getenv(name.c_str()) : std::getenv(name.c_str());
  };
  std::vector<ConfigOverride> out;
  for (const auto& s : Specs()) {
    if (std::string(s.key) == "properties") continue;
    std::string env = EnvName(s.key);
    if (const char* v = get(env)) out.push_back({s.key, v, "env " + env});
  }
  const std::string prefix = "KELT_PROPERTY_";
  for (const auto& name : environ_names) {
    if (name.size() <= prefix.size() || name.rfind(prefix, 0) != 0) continue;
    const char* v = get(name);
    if (v == nullptr) continue;
    std::string prop = name.substr(prefix.size());
    for (char& ch : prop) {
      ch = ch == '_' ? '.'
                     : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    out.push_back({"properties." + prop, v, "env " + name});
  }
  return out;
}

}  // namespace kelt
