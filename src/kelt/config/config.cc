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

#include "kelt/load.h"
#include "kelt/schema.h"

namespace kelt {
namespace {

// --- the keys --------------------------------------------------------------------------

struct KeySpec {
  const char* key;
  const char* type;
  const char* def;
  const char* flag;
  const char* help;
  bool secret = false;
};

// The documentation order; `kelt run --help`, the user guide's table and the
// environment variables all come from here. Sink keys are listed under "<kind>.".
const std::vector<KeySpec>& Specs() {
  static const std::vector<KeySpec> specs = {
      {"brokers", "string", "(required)", "--brokers", "Kafka bootstrap servers"},
      {"group", "string", "(required)", "--group", "consumer group id"},
      {"topics", "list", "(required)", "--topic",
       "topics to read; a name starting with ^ is a regular expression"},
      {"auto_offset_reset", "earliest|latest|error", "earliest", "",
       "where a partition without a committed or landed offset starts"},
      {"group_protocol", "classic|consumer", "classic", "",
       "consumer group protocol: consumer is KIP-848 (Kafka >= 4.0, incremental "
       "rebalances)"},
      {"instance_id", "string", "", "--instance-id",
       "group.instance.id (static membership): a restarted worker takes its partitions "
       "back at once"},
      {"session_timeout_ms", "integer", "(librdkafka's)", "",
       "consumer session timeout (group_protocol classic)"},
      {"properties", "map", "{}", "--property",
       "librdkafka properties passed through (security.protocol, sasl.*, ssl.*, "
       "fetch.*)"},
      {"schema", "path|map", "(required)", "--schema",
       "landing schema: a JSON file (relative to the config file) or inline"},
      {"on_bad_record", "fail|skip|dead_letter", "dead_letter", "--on-bad-record",
       "what happens to a record that does not fit the schema"},
      {"strict_payload", "boolean", "false", "",
       "non-object or non-UTF-8 payloads are bad records"},
      {"window.max_records", "integer", "10000", "--window-records",
       "a window ends at this many records"},
      {"window.max_bytes", "integer", "67108864", "--window-bytes",
       "a window ends at this many payload+key bytes"},
      {"window.max_wait_ms", "integer", "1000", "--window-wait-ms",
       "a window ends at this deadline"},
      {"window.stop_at_end", "boolean", "true", "",
       "a window ends when every assigned partition reached its end"},
      {"until_caught_up", "boolean", "false", "--until-caught-up",
       "stop at the end of the topic as it was when the run started"},
      {"max_windows", "integer", "0", "--max-windows",
       "stop after this many windows (0: no limit)"},
      {"assignment_timeout_ms", "integer", "60000", "",
       "with until_caught_up: fail when no partition is assigned this long (0: wait; "
       "longer while other members hold them)"},
      {"metrics.port", "integer", "0", "--metrics-port",
       "serve Prometheus /metrics on this port (0: off)"},
      {"metrics.host", "string", "127.0.0.1", "--metrics-host",
       "address /metrics binds to"},
      {"log.format", "text|json", "text", "--log-format",
       "structured log lines on stderr"},
      {"log.level", "debug|info|warning|error", "info", "--log-level",
       "lowest level logged"},
      {"progress", "auto|bar|lines|none", "auto", "--progress",
       "a bar on a terminal, periodic lines otherwise"},
      {"progress_interval_ms", "integer", "2000", "", "interval of progress lines"},
      {"parquet.root", "string", "(required)", "--parquet",
       "landing root: a directory (relative to the config file) or s3://bucket/prefix"},
      {"parquet.s3_endpoint", "string", "", "", "S3 endpoint override"},
      {"parquet.s3_region", "string", "", "", "S3 region"},
      {"parquet.s3_access_key", "string", "", "", "S3 access key", true},
      {"parquet.s3_secret_key", "string", "", "", "S3 secret key", true},
      {"parquet.partition_by", "string", "", "", "hive directories from this column"},
      {"parquet.time_layout", "string", "", "",
       "for a time partition_by: e.g. year=%Y/month=%m/day=%d"},
      {"parquet.rotate_records", "integer", "1000000", "", "file rotation: records"},
      {"parquet.rotate_bytes", "integer", "134217728", "", "file rotation: bytes"},
      {"parquet.rotate_age_ms", "integer", "60000", "", "file rotation: age"},
      {"parquet.compression", "zstd|snappy|gzip|lz4|none", "zstd", "", "codec"},
      {"parquet.dictionary", "auto|all|none", "auto", "",
       "dictionary encoding (auto: not for numbers and timestamps)"},
      {"parquet.integer_encoding", "delta|plain", "delta", "",
       "integers and timestamps without a dictionary"},
      {"parquet.dead_letter_dir", "string", "_dead_letter", "",
       "dead letters' directory under the root"},
      {"duckdb.path", "string", "(required)", "--duckdb",
       "database file (relative to the config file)"},
      {"duckdb.table", "string", "landing", "--duckdb-table", "landing table"},
      {"duckdb.dead_letter_table", "string", "<table>_dead_letter", "", "dead letters"},
      {"duckdb.offsets_table", "string", "_kelt_offsets", "", "offsets table"},
      {"duckdb.group_id", "string", "(group)", "", "group the stored offsets belong to"},
      {"duckdb.unique_offsets_index", "boolean", "true", "",
       "UNIQUE index on the record identity"},
      {"postgres.conninfo", "string", "(required)", "--postgres",
       "libpq connection string or URI", true},
      {"postgres.table", "string", "landing", "--postgres-table", "landing table"},
      {"postgres.dead_letter_table", "string", "<table>_dead_letter", "", "dead letters"},
      {"postgres.offsets_table", "string", "kelt_offsets", "", "offsets table"},
      {"postgres.group_id", "string", "(group)", "",
       "group the stored offsets belong to"},
      {"postgres.create_table_if_missing", "boolean", "true", "", "create the tables"},
      {"postgres.replace_nul_in_text", "boolean", "false", "",
       "NUL in text lands as U+FFFD instead of failing"},
  };
  return specs;
}

std::string EnvName(std::string_view key) {
  std::string env = "KELT_";
  for (char c : key) {
    env +=
        (c == '.') ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return env;
}

bool IsSinkKind(std::string_view s) {
  return s == "parquet" || s == "duckdb" || s == "postgres";
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
  Reader(std::filesystem::path base_dir, std::map<std::string, std::string> origins)
      : base_dir_(std::move(base_dir)), origins_(std::move(origins)) {}

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
    } else if (node.IsDefined() && !node.Mark().is_null()) {
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

 private:
  std::filesystem::path base_dir_;
  std::map<std::string, std::string> origins_;
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

void ReadSink(Reader& r, const std::string& path, const std::string& kind,
              const YAML::Node& m, const std::string& group, SinkConfig& out) {
  const std::string p = path + "." + kind;
  if (!r.CheckMap(p, m, ChildKeys(kind))) return;
  auto str = [&](const char* key, std::string& dst) {
    With(m, key, [&](const YAML::Node& v) {
      if (auto s = r.String(p + "." + key, v)) dst = *s;
    });
  };
  auto i64 = [&](const char* key, int64_t& dst, int64_t min) {
    With(m, key, [&](const YAML::Node& v) {
      if (auto x = r.Int(p + "." + key, v, min, INT64_MAX)) dst = *x;
    });
  };
  auto boolean = [&](const char* key, bool& dst) {
    With(m, key, [&](const YAML::Node& v) {
      if (auto b = r.Bool(p + "." + key, v)) dst = *b;
    });
  };
  auto required = [&](const char* key, const std::string& value) {
    if (r.HasError(p + "." + key)) return;
    if (value.empty() && !(m.IsMap() && m[key].IsDefined())) {
      r.Error(p + "." + key, m, "required for a " + kind + " sink");
    } else if (value.empty()) {
      r.Error(p + "." + key, m[key], "must not be empty");
    }
  };
  if (kind == "parquet") {
    out.kind = SinkConfig::Kind::kParquet;
    auto& o = out.parquet;
    str("root", o.root);
    required("root", o.root);
    if (!o.root.empty()) o.root = r.Resolve(p + ".root", o.root).string();
    str("s3_endpoint", o.s3_endpoint);
    str("s3_region", o.s3_region);
    str("s3_access_key", o.s3_access_key);
    str("s3_secret_key", o.s3_secret_key);
    str("partition_by", o.partition_by);
    str("time_layout", o.time_layout);
    i64("rotate_records", o.rotate_records, 1);
    i64("rotate_bytes", o.rotate_bytes, 1);
    int64_t age = o.rotate_age.count();
    i64("rotate_age_ms", age, 1);
    o.rotate_age = std::chrono::milliseconds(age);
    With(m, "compression", [&](const YAML::Node& v) {
      if (auto s =
              r.Enum(p + ".compression", v, {"zstd", "snappy", "gzip", "lz4", "none"}))
        o.compression = *s;
    });
    With(m, "dictionary", [&](const YAML::Node& v) {
      if (auto s = r.Enum(p + ".dictionary", v, {"auto", "all", "none"}))
        o.dictionary = *s;
    });
    With(m, "integer_encoding", [&](const YAML::Node& v) {
      if (auto s = r.Enum(p + ".integer_encoding", v, {"delta", "plain"}))
        o.integer_encoding = *s;
    });
    str("dead_letter_dir", o.dead_letter_dir);
  } else if (kind == "duckdb") {
    out.kind = SinkConfig::Kind::kDuckDb;
    auto& o = out.duckdb;
    str("path", o.path);
    required("path", o.path);
    if (!o.path.empty()) o.path = r.Resolve(p + ".path", o.path).string();
    str("table", o.table);
    str("dead_letter_table", o.dead_letter_table);
    str("offsets_table", o.offsets_table);
    o.group_id = group;
    str("group_id", o.group_id);
    boolean("unique_offsets_index", o.unique_offsets_index);
  } else {
    out.kind = SinkConfig::Kind::kPostgres;
    auto& o = out.postgres;
    str("conninfo", o.conninfo);
    required("conninfo", o.conninfo);
    str("table", o.table);
    str("dead_letter_table", o.dead_letter_table);
    str("offsets_table", o.offsets_table);
    o.group_id = group;
    str("group_id", o.group_id);
    boolean("create_table_if_missing", o.create_table_if_missing);
    boolean("replace_nul_in_text", o.replace_nul_in_text);
  }
}

void ReadSchema(Reader& r, const YAML::Node& v, EltConfig& c) {
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

void ReadRoot(Reader& r, const YAML::Node& root, EltConfig& c) {
  if (!r.CheckMap("", root, ChildKeys(""))) return;
  auto& co = c.elt.consumer;
  auto str = [&](const char* key, std::string& dst) {
    With(root, key, [&](const YAML::Node& v) {
      if (auto s = r.String(key, v)) dst = *s;
    });
  };
  str("brokers", co.brokers);
  str("group", co.group_id);
  With(root, "topics", [&](const YAML::Node& v) {
    if (v.IsScalar()) {
      if (auto s = r.String("topics", v)) co.topics = {*s};
    } else if (v.IsSequence()) {
      for (size_t i = 0; i < v.size(); ++i) {
        if (auto s = r.String("topics[" + std::to_string(i) + "]", v[i]))
          co.topics.push_back(*s);
      }
    } else {
      r.Error("topics", v, "expected a list of topic names" + r.Got("topics", v));
    }
  });
  With(root, "auto_offset_reset", [&](const YAML::Node& v) {
    if (auto s = r.Enum("auto_offset_reset", v, {"earliest", "latest", "error"}))
      co.auto_offset_reset = *s;
  });
  With(root, "group_protocol", [&](const YAML::Node& v) {
    if (auto s = r.Enum("group_protocol", v, {"classic", "consumer"})) {
      co.group_protocol =
          *s == "consumer" ? GroupProtocol::kConsumer : GroupProtocol::kClassic;
    }
  });
  With(root, "instance_id", [&](const YAML::Node& v) {
    if (auto s = r.String("instance_id", v)) co.instance_id = *s;
  });
  With(root, "session_timeout_ms", [&](const YAML::Node& v) {
    if (auto x = r.Int("session_timeout_ms", v, 1, INT32_MAX))
      co.session_timeout_ms = static_cast<int>(*x);
  });
  With(root, "properties", [&](const YAML::Node& v) {
    if (!v.IsMap()) {
      r.Error("properties", v,
              "expected a map of librdkafka properties" + r.Got("properties", v));
      return;
    }
    for (const auto& kv : v) {
      std::string name = kv.first.Scalar();
      if (auto s = r.String("properties." + name, kv.second)) co.properties[name] = *s;
    }
  });
  With(root, "schema", [&](const YAML::Node& v) { ReadSchema(r, v, c); });
  With(root, "on_bad_record", [&](const YAML::Node& v) {
    if (auto s = r.Enum("on_bad_record", v, {"fail", "skip", "dead_letter"}))
      c.elt.load.on_bad_record = *ParseBadRecordPolicy(*s);
  });
  With(root, "strict_payload", [&](const YAML::Node& v) {
    if (auto b = r.Bool("strict_payload", v)) c.elt.load.strict_payload = *b;
  });
  With(root, "window", [&](const YAML::Node& w) {
    if (!r.CheckMap("window", w, ChildKeys("window"))) return;
    With(w, "max_records", [&](const YAML::Node& v) {
      if (auto x = r.Int("window.max_records", v, 1, INT64_MAX))
        c.elt.window.max_records = *x;
    });
    With(w, "max_bytes", [&](const YAML::Node& v) {
      if (auto x = r.Int("window.max_bytes", v, 1, INT64_MAX))
        c.elt.window.max_bytes = *x;
    });
    With(w, "max_wait_ms", [&](const YAML::Node& v) {
      if (auto x = r.Int("window.max_wait_ms", v, 1, INT32_MAX))
        c.elt.window.max_wait = std::chrono::milliseconds(*x);
    });
    With(w, "stop_at_end", [&](const YAML::Node& v) {
      if (auto b = r.Bool("window.stop_at_end", v)) c.elt.window.stop_at_end = *b;
    });
  });
  With(root, "until_caught_up", [&](const YAML::Node& v) {
    if (auto b = r.Bool("until_caught_up", v)) c.elt.until_caught_up = *b;
  });
  With(root, "max_windows", [&](const YAML::Node& v) {
    if (auto x = r.Int("max_windows", v, 0, INT64_MAX)) c.elt.max_windows = *x;
  });
  With(root, "assignment_timeout_ms", [&](const YAML::Node& v) {
    if (auto x = r.Int("assignment_timeout_ms", v, 0, INT64_MAX))
      c.elt.assignment_timeout = std::chrono::milliseconds(*x);
  });
  With(root, "metrics", [&](const YAML::Node& m) {
    if (!r.CheckMap("metrics", m, ChildKeys("metrics"))) return;
    With(m, "port", [&](const YAML::Node& v) {
      if (auto x = r.Int("metrics.port", v, 0, 65535))
        c.metrics_port = static_cast<int>(*x);
    });
    With(m, "host", [&](const YAML::Node& v) {
      if (auto s = r.String("metrics.host", v)) c.metrics_host = *s;
    });
  });
  With(root, "log", [&](const YAML::Node& m) {
    if (!r.CheckMap("log", m, ChildKeys("log"))) return;
    With(m, "format", [&](const YAML::Node& v) {
      if (auto s = r.Enum("log.format", v, {"text", "json"})) c.log_format = *s;
    });
    With(m, "level", [&](const YAML::Node& v) {
      if (auto s = r.Enum("log.level", v, {"debug", "info", "warning", "error"}))
        c.log_level = *s;
    });
  });
  With(root, "progress", [&](const YAML::Node& v) {
    if (auto s = r.Enum("progress", v, {"auto", "bar", "lines", "none"})) c.progress = *s;
  });
  With(root, "progress_interval_ms", [&](const YAML::Node& v) {
    if (auto x = r.Int("progress_interval_ms", v, 1, INT64_MAX))
      c.progress_interval_ms = *x;
  });

  // Required keys.
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
  if (!root["schema"].IsDefined())
    r.Error("schema", root, "required (the landing schema)");
  if (co.group_protocol == GroupProtocol::kConsumer && co.session_timeout_ms) {
    r.Error("session_timeout_ms", root["session_timeout_ms"],
            "applies to group_protocol classic only (with consumer the broker's "
            "group.consumer.session.timeout.ms decides)");
  }

  YAML::Node sinks = root["sinks"];
  if (!sinks.IsDefined()) {
    r.Error("sinks", root, "required (at least one of parquet, duckdb, postgres)");
  } else if (!sinks.IsSequence() || sinks.size() == 0) {
    r.Error("sinks", sinks, "expected a non-empty list of sinks" + r.Got("sinks", sinks));
  } else {
    for (size_t i = 0; i < sinks.size(); ++i) {
      const std::string path = "sinks[" + std::to_string(i) + "]";
      YAML::Node item = sinks[i];
      if (!item.IsMap() || item.size() != 1) {
        r.Error(path, item,
                "expected one of parquet:, duckdb:, postgres: with its keys below");
        continue;
      }
      std::string kind = item.begin()->first.Scalar();
      if (!IsSinkKind(kind)) {
        r.Error(path + "." + kind, item.begin()->first,
                "unknown sink kind" +
                    DidYouMean(kind, {"parquet", "duckdb", "postgres"}) +
                    "; expected parquet, duckdb or postgres");
        continue;
      }
      SinkConfig sc;
      ReadSink(r, path, kind, item.begin()->second, co.group_id, sc);
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

std::string_view SinkKindName(SinkConfig::Kind kind) {
  switch (kind) {
    case SinkConfig::Kind::kParquet:
      return "parquet";
    case SinkConfig::Kind::kDuckDb:
      return "duckdb";
    case SinkConfig::Kind::kPostgres:
      return "postgres";
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

Result<EltConfig> ParseEltConfig(std::string_view text,
                                 const std::filesystem::path& base_dir,
                                 const std::vector<ConfigOverride>& overrides) {
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
  Reader r(base_dir, std::move(origins));
  try {
    ReadRoot(r, root, c);
  } catch (const YAML::Exception& e) {
    return Status::Invalid("config: " + OneLine(e.msg));
  }
  if (!r.errors().empty()) {
    std::string msg;
    for (const auto& e : r.errors()) msg += (msg.empty() ? "" : "\n") + e;
    return Status::Invalid(std::move(msg));
  }
  return c;
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
      k.help = s.help;
      k.secret = s.secret;
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
