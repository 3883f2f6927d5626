// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The pipeline JSON runner (RDP_COMPATIBILITY.md §6): parse and validate the document
// into a plain spec, read the sources into DuckDB as `df`, apply `transform.sql`, then
// write each sink independently. transform/README.md ("Pipeline JSON") has the decisions.
#include "kelt/pipeline_json.h"

#include <arrow/api.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kelt/common/arrow_status.h"
#include "kelt/common/text.h"
#include "kelt/kafka.h"
#include "kelt/model/json_dom.h"
#include "kelt/schema.h"
#include "kelt/serde.h"
#include "kelt/sink.h"
#include "kelt/sink/postgres_load.h"
#include "kelt/transform/duckdb_session.h"

namespace kelt {
namespace {

using simdjson::dom::element;
using transform::QuoteIdentifier;
using transform::QuoteLiteral;

// --- the spec -----------------------------------------------------------------------

enum class SourceFormat { kJson, kCsv, kParquet };

struct SourceSpec {
  std::vector<std::string> paths;
  SourceFormat format = SourceFormat::kParquet;
  std::optional<Schema> schema;
};

struct SinkSpec {
  std::string kind;
  std::string place;  // "sinks[1]", for messages
  std::string sql;    // empty: the sink writes `df`
  std::string path;   // parquet_file, duckdb
  std::string table;  // postgresql, duckdb
  std::string url;    // postgresql
  std::string uri;    // object_store
  bool create_table_if_missing = true;
  bool truncate_before_load = false;
  // object_store (and an s3:// parquet_file path): empty means the AWS environment.
  std::string endpoint, region, access_key_id, secret_access_key;
  // kafka
  ProducerOptions producer;
  ValueFormatOptions value_format;  // json, or avro/protobuf/json-schema of a subject
};

struct PipelineSpec {
  int64_t version = 0;
  SourceSpec source;
  std::string transform_sql;
  std::vector<SinkSpec> sinks;
};

// A failure of the call (or, for a sink, of that sink).
struct Failure {
  std::string code;
  std::string stage;
  std::string message;
};

constexpr const char* kJsonInvalid = "ORCHESTRATION_JSON_INVALID";
constexpr const char* kValidation = "ORCHESTRATION_VALIDATION";
constexpr const char* kVersion = "ORCHESTRATION_VERSION_UNSUPPORTED";
constexpr const char* kIngest = "INGEST_FAILED";
constexpr const char* kSql = "TRANSFORM_SQL_FAILED";

Failure Invalid(const std::string& place, const std::string& message) {
  return {kValidation, "parse", model::Located(place, message)};
}

// --- parsing ------------------------------------------------------------------------

// Readers of optional keys: nullopt when absent (or JSON null), a Failure when present
// with the wrong type.
class Object {
 public:
  Object(simdjson::dom::object o, std::string place) : o_(o), place_(std::move(place)) {}

  std::string Place(std::string_view key) const { return model::JoinPath(place_, key); }

  std::optional<element> Get(std::string_view key) const {
    element e;
    if (o_.at_key(key).get(e) != simdjson::SUCCESS || e.is_null()) return std::nullopt;
    return e;
  }

  std::optional<Failure> String(std::string_view key, bool required,
                                std::string* out) const {
    auto e = Get(key);
    if (!e)
      return required ? std::optional(Invalid(Place(key), "missing")) : std::nullopt;
    std::string_view v;
    if (e->get_string().get(v) != simdjson::SUCCESS) {
      return Invalid(Place(key), "must be a string, not " + model::Excerpt(*e));
    }
    if (required && v.empty()) return Invalid(Place(key), "must not be empty");
    *out = std::string(v);
    return std::nullopt;
  }

  std::optional<Failure> Bool(std::string_view key, bool* out) const {
    auto e = Get(key);
    if (!e) return std::nullopt;
    if (e->get_bool().get(*out) != simdjson::SUCCESS) {
      return Invalid(Place(key), "must be true or false, not " + model::Excerpt(*e));
    }
    return std::nullopt;
  }

  std::optional<Failure> Int(std::string_view key, int64_t* out) const {
    auto e = Get(key);
    if (!e) return std::nullopt;
    if (!model::GetInt64(*e, out)) {
      return Invalid(Place(key), "must be an integer, not " + model::Excerpt(*e));
    }
    return std::nullopt;
  }

 private:
  simdjson::dom::object o_;
  std::string place_;
};

#define KELT_PIPELINE_TRY(expr)                   \
  do {                                            \
    if (auto failure_ = (expr)) return *failure_; \
  } while (false)

std::optional<Failure> AsObject(element e, const std::string& place,
                                simdjson::dom::object* out) {
  if (e.get_object().get(*out) != simdjson::SUCCESS) {
    return Invalid(place, "must be an object, not " + model::Excerpt(e));
  }
  return std::nullopt;
}

std::optional<SourceFormat> FormatOfName(std::string_view name) {
  if (text::EqualsIgnoreAsciiCase(name, "json") ||
      text::EqualsIgnoreAsciiCase(name, "ndjson") ||
      text::EqualsIgnoreAsciiCase(name, "jsonl")) {
    return SourceFormat::kJson;
  }
  if (text::EqualsIgnoreAsciiCase(name, "csv")) return SourceFormat::kCsv;
  if (text::EqualsIgnoreAsciiCase(name, "parquet")) return SourceFormat::kParquet;
  return std::nullopt;
}

std::optional<SourceFormat> FormatOfExtension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext.empty()) return std::nullopt;
  ext = ext.substr(1);
  if (text::EqualsIgnoreAsciiCase(ext, "pq")) return SourceFormat::kParquet;
  return FormatOfName(ext);
}

std::optional<Failure> ParseSources(element e, SourceSpec* out) {
  simdjson::dom::object o;
  KELT_PIPELINE_TRY(AsObject(e, "sources", &o));
  Object sources(o, "sources");
  auto paths = sources.Get("paths");
  if (!paths) return Invalid("sources.paths", "missing");
  std::string_view one;
  simdjson::dom::array list;
  if (paths->get_string().get(one) == simdjson::SUCCESS) {
    out->paths.emplace_back(one);
  } else if (paths->get_array().get(list) == simdjson::SUCCESS) {
    size_t i = 0;
    for (element p : list) {
      std::string place = "sources.paths[" + std::to_string(i++) + "]";
      if (p.get_string().get(one) != simdjson::SUCCESS) {
        return Invalid(place, "must be a string, not " + model::Excerpt(p));
      }
      out->paths.emplace_back(one);
    }
  } else {
    return Invalid("sources.paths", "must be a string or a list of strings, not " +
                                        model::Excerpt(*paths));
  }
  if (out->paths.empty()) return Invalid("sources.paths", "must name at least one file");
  for (size_t i = 0; i < out->paths.size(); ++i) {
    if (out->paths[i].empty()) {
      return Invalid("sources.paths[" + std::to_string(i) + "]", "must not be empty");
    }
  }

  std::string format;
  if (auto options = sources.Get("options")) {
    simdjson::dom::object oo;
    KELT_PIPELINE_TRY(AsObject(*options, "sources.options", &oo));
    KELT_PIPELINE_TRY(Object(oo, "sources.options").String("format", false, &format));
  }
  if (!format.empty()) {
    auto f = FormatOfName(format);
    if (!f) {
      return Invalid("sources.options.format",
                     "unknown format '" + format + "' (expected json, csv or parquet)");
    }
    out->format = *f;
  } else {
    // No format: every path's extension must name the same one.
    for (size_t i = 0; i < out->paths.size(); ++i) {
      auto f = FormatOfExtension(out->paths[i]);
      if (!f) {
        return Invalid(
            "sources.options.format",
            "missing, and the extension of sources.paths[" + std::to_string(i) + "] ('" +
                out->paths[i] +
                "') names no format (.json/.ndjson/.jsonl, .csv, .parquet/.pq)");
      }
      if (i > 0 && *f != out->format) {
        return Invalid("sources.options.format",
                       "missing, and the paths' extensions name different formats");
      }
      out->format = *f;
    }
  }

  if (auto schema = sources.Get("schema")) {
    Schema s;
    Status st =
        model::SchemaFromJson(*schema, SchemaDialect::kStrict, "sources.schema", &s);
    if (!st.ok()) return Failure{kValidation, "parse", st.message()};
    if (s.fields.empty()) return Invalid("sources.schema.fields", "must not be empty");
    out->schema = std::move(s);
  }
  return std::nullopt;
}

const char* const kSinkKinds = "parquet_file, postgresql, object_store, duckdb or kafka";

std::optional<Failure> ParseSink(element e, size_t index, SinkSpec* out) {
  out->place = "sinks[" + std::to_string(index) + "]";
  simdjson::dom::object o;
  KELT_PIPELINE_TRY(AsObject(e, out->place, &o));
  Object sink(o, out->place);
  KELT_PIPELINE_TRY(sink.String("kind", true, &out->kind));
  KELT_PIPELINE_TRY(sink.String("sql", false, &out->sql));
  const std::string& kind = out->kind;
  if (kind == "parquet_file") {
    KELT_PIPELINE_TRY(sink.String("path", true, &out->path));
  } else if (kind == "postgresql") {
    KELT_PIPELINE_TRY(sink.String("url", true, &out->url));
    KELT_PIPELINE_TRY(sink.String("table", true, &out->table));
    KELT_PIPELINE_TRY(
        sink.Bool("create_table_if_missing", &out->create_table_if_missing));
    KELT_PIPELINE_TRY(sink.Bool("truncate_before_load", &out->truncate_before_load));
  } else if (kind == "object_store") {
    KELT_PIPELINE_TRY(sink.String("uri", true, &out->uri));
    if (!out->uri.starts_with("s3://") || out->uri.size() <= 5) {
      return Invalid(sink.Place("uri"),
                     "'" + out->uri + "' is not an s3://bucket/prefix URI");
    }
  } else if (kind == "duckdb") {
    KELT_PIPELINE_TRY(sink.String("path", true, &out->path));
    KELT_PIPELINE_TRY(sink.String("table", true, &out->table));
    KELT_PIPELINE_TRY(
        sink.Bool("create_table_if_missing", &out->create_table_if_missing));
    KELT_PIPELINE_TRY(sink.Bool("truncate_before_load", &out->truncate_before_load));
  } else if (kind == "kafka") {
    ProducerOptions& p = out->producer;
    KELT_PIPELINE_TRY(sink.String("brokers", true, &p.brokers));
    KELT_PIPELINE_TRY(sink.String("topic", true, &p.topic));
    std::string column;
    if (sink.Get("key_column")) {
      KELT_PIPELINE_TRY(sink.String("key_column", true, &column));
      p.key_column = column;
    }
    if (sink.Get("value_column")) {
      KELT_PIPELINE_TRY(sink.String("value_column", true, &column));
      p.value_column = column;
    }
    int64_t timeout = p.message_timeout_ms;
    KELT_PIPELINE_TRY(sink.Int("message_timeout_ms", &timeout));
    if (timeout <= 0 || timeout > INT32_MAX) {
      return Invalid(sink.Place("message_timeout_ms"), "must be a positive integer");
    }
    p.message_timeout_ms = static_cast<int>(timeout);
    // value_format, subject, auto_register, record_name, message, registry: serde/.
    auto value_format = ParseValueFormatJson(simdjson::minify(e));
    if (!value_format.ok()) return Invalid(out->place, value_format.status().message());
    out->value_format = std::move(*value_format);
    if (out->value_format.encoder.format != ValueFormat::kJson && p.value_column) {
      return Invalid(sink.Place("value_column"),
                     "not with value_format " +
                         std::string(ValueFormatName(out->value_format.encoder.format)));
    }
    if (auto props = sink.Get("properties")) {
      simdjson::dom::object po;
      KELT_PIPELINE_TRY(AsObject(*props, sink.Place("properties"), &po));
      for (auto [key, value] : po) {
        std::string_view v;
        if (value.get_string().get(v) != simdjson::SUCCESS) {
          return Invalid(sink.Place("properties") + "." + std::string(key),
                         "must be a string");
        }
        p.properties[std::string(key)] = std::string(v);
      }
    }
  } else {
    return Invalid(sink.Place("kind"),
                   "unknown sink kind '" + kind + "' (expected " + kSinkKinds + ")");
  }
  if (kind == "object_store" || kind == "parquet_file") {
    KELT_PIPELINE_TRY(sink.String("endpoint", false, &out->endpoint));
    KELT_PIPELINE_TRY(sink.String("region", false, &out->region));
    KELT_PIPELINE_TRY(sink.String("access_key_id", false, &out->access_key_id));
    KELT_PIPELINE_TRY(sink.String("secret_access_key", false, &out->secret_access_key));
  }
  return std::nullopt;
}

std::optional<Failure> ParseSpec(std::string_view json, PipelineSpec* spec) {
  simdjson::dom::parser parser;
  element root;
  if (auto error = parser.parse(json.data(), json.size()).get(root)) {
    return Failure{kJsonInvalid, "parse",
                   std::string("pipeline JSON: ") + simdjson::error_message(error)};
  }
  simdjson::dom::object o;
  if (root.get_object().get(o) != simdjson::SUCCESS) {
    return Failure{
        kJsonInvalid, "parse",
        "pipeline JSON: the document must be an object, not " + model::Excerpt(root)};
  }
  Object doc(o, "");
  // The version first: what the other keys mean depends on it.
  auto version = doc.Get("pipeline_spec_version");
  if (!version) return Invalid("pipeline_spec_version", "missing");
  if (!model::GetInt64(*version, &spec->version)) {
    return Invalid("pipeline_spec_version",
                   "must be an integer, not " + model::Excerpt(*version));
  }
  if (spec->version < 1 || spec->version > 2) {
    return Failure{kVersion, "parse",
                   "pipeline_spec_version " + std::to_string(spec->version) +
                       " is not supported (supported: 1, 2)"};
  }
  auto sources = doc.Get("sources");
  if (!sources) return Invalid("sources", "missing");
  KELT_PIPELINE_TRY(ParseSources(*sources, &spec->source));
  if (auto transform = doc.Get("transform")) {
    simdjson::dom::object t;
    KELT_PIPELINE_TRY(AsObject(*transform, "transform", &t));
    KELT_PIPELINE_TRY(Object(t, "transform").String("sql", false, &spec->transform_sql));
  }
  auto sinks = doc.Get("sinks");
  if (!sinks) return Invalid("sinks", "missing");
  simdjson::dom::array list;
  if (sinks->get_array().get(list) != simdjson::SUCCESS) {
    return Invalid("sinks", "must be a list of sinks, not " + model::Excerpt(*sinks));
  }
  size_t i = 0;
  for (element s : list) {
    SinkSpec sink;
    KELT_PIPELINE_TRY(ParseSink(s, i++, &sink));
    spec->sinks.push_back(std::move(sink));
  }
  if (spec->sinks.empty()) return Invalid("sinks", "must hold at least one sink");
  return std::nullopt;
}

// --- ingest -------------------------------------------------------------------------

std::string_view DuckDbType(TypeId type) {
  switch (type) {
    case TypeId::kInt64:
      return "BIGINT";
    case TypeId::kFloat64:
      return "DOUBLE";
    case TypeId::kBool:
      return "BOOLEAN";
    case TypeId::kUtf8:
      return "VARCHAR";
    case TypeId::kTimestamp:
      return "TIMESTAMPTZ";
    case TypeId::kDate:
      return "DATE";
    case TypeId::kBinary:
      return "BLOB";
  }
  return "VARCHAR";
}

std::string PathList(const std::vector<std::string>& paths) {
  std::string out = "[";
  for (size_t i = 0; i < paths.size(); ++i) {
    if (i > 0) out += ", ";
    out += QuoteLiteral(paths[i]);
  }
  return out + "]";
}

// The table function reading `paths`. With a schema, CSV and JSON are read as text
// (then cast by the caller), so no type is guessed from a sample of the file.
std::string Reader(const SourceSpec& source, const std::vector<std::string>& paths) {
  std::string files = PathList(paths);
  switch (source.format) {
    case SourceFormat::kJson: {
      std::string r = "read_json(" + files + ", format = 'newline_delimited'";
      if (source.schema) {
        r += ", columns = {";
        for (size_t i = 0; i < source.schema->fields.size(); ++i) {
          if (i > 0) r += ", ";
          r += QuoteLiteral(source.schema->fields[i].name) + ": 'VARCHAR'";
        }
        r += "}";
      } else {
        r += ", union_by_name = true";
      }
      return r + ")";
    }
    case SourceFormat::kCsv:
      return "read_csv(" + files + ", header = true" +
             (source.schema ? ", all_varchar = true" : ", union_by_name = true") + ")";
    case SourceFormat::kParquet:
      return "read_parquet(" + files + (source.schema ? "" : ", union_by_name = true") +
             ")";
  }
  return "";
}

constexpr std::string_view kSourceTable = "__kelt_pipeline_source";

// Read one file through the schema: every field must be a column of the file (JSON:
// a missing key is null); each value is cast to the field's type, and the first one
// that does not fit is reported with its file, column and value.
std::optional<Failure> IngestFileWithSchema(transform::DuckDbSession& db,
                                            const SourceSpec& source,
                                            const std::string& path) {
  const Schema& schema = *source.schema;
  std::string reader = Reader(source, {path});
  auto probe = db.Query("SELECT * FROM " + reader + " LIMIT 0");
  if (!probe.ok()) return Failure{kIngest, "ingest", probe.status().message()};
  std::string select;
  for (const Field& f : schema.fields) {
    if ((*probe)->schema()->GetFieldIndex(f.name) < 0) {
      return Failure{kIngest, "ingest",
                     "'" + path + "': no column '" + f.name + "' (sources.schema)"};
    }
    if (!select.empty()) select += ", ";
    select += "CAST(" + QuoteIdentifier(f.name) + " AS " +
              std::string(DuckDbType(f.type)) + ")";
  }
  Status st = db.Exec("INSERT INTO " + std::string(kSourceTable) + " SELECT " + select +
                      " FROM " + reader);
  if (st.ok()) return std::nullopt;
  for (const Field& f : schema.fields) {
    std::string column = QuoteIdentifier(f.name);
    auto bad = db.Query("SELECT CAST(" + column + " AS VARCHAR) AS v FROM " + reader +
                        " WHERE " + column + " IS NOT NULL AND TRY_CAST(" + column +
                        " AS " + std::string(DuckDbType(f.type)) + ") IS NULL LIMIT 1");
    if (bad.ok() && (*bad)->num_rows() > 0) {
      auto value = (*bad)->column(0)->GetScalar(0);
      std::string shown = value.ok() ? (*value)->ToString() : "?";
      return Failure{kIngest, "ingest",
                     "'" + path + "': column '" + f.name + "': value '" + shown +
                         "' does not fit " + std::string(TypeName(f.type))};
    }
  }
  return Failure{kIngest, "ingest", "'" + path + "': " + st.message()};
}

std::optional<Failure> Ingest(transform::DuckDbSession& db, const SourceSpec& source,
                              int64_t* rows) {
  for (size_t i = 0; i < source.paths.size(); ++i) {
    const std::string& path = source.paths[i];
    bool pattern = path.find_first_of("*?[") != std::string::npos;
    std::error_code ec;
    if (!pattern && path.find("://") == std::string::npos &&
        !std::filesystem::is_regular_file(path, ec)) {
      return Failure{
          kIngest, "ingest",
          "sources.paths[" + std::to_string(i) + "]: '" + path + "': no such file"};
    }
  }
  const std::string table(kSourceTable);
  if (source.schema) {
    std::string columns;
    for (const Field& f : source.schema->fields) {
      if (!columns.empty()) columns += ", ";
      columns += QuoteIdentifier(f.name) + " " + std::string(DuckDbType(f.type));
    }
    Status st = db.Exec("CREATE TEMP TABLE " + table + " (" + columns + ")");
    if (!st.ok()) return Failure{kIngest, "ingest", st.message()};
    // File by file, so a value that does not fit is reported with its file: a glob
    // is expanded first (DuckDB's `glob`, the same matching its readers use).
    for (size_t i = 0; i < source.paths.size(); ++i) {
      const std::string& path = source.paths[i];
      std::vector<std::string> files = {path};
      if (path.find_first_of("*?[") != std::string::npos) {
        auto listed =
            db.Query("SELECT file FROM glob(" + QuoteLiteral(path) + ") ORDER BY file");
        if (!listed.ok()) return Failure{kIngest, "ingest", listed.status().message()};
        files.clear();
        auto column = (*listed)->column(0);
        for (int64_t row = 0; row < column->length(); ++row) {
          auto value = column->GetScalar(row);
          if (value.ok()) files.push_back((*value)->ToString());
        }
        if (files.empty()) {
          return Failure{
              kIngest, "ingest",
              "sources.paths[" + std::to_string(i) + "]: '" + path + "' matches no file"};
        }
      }
      for (const std::string& file : files) {
        if (auto failure = IngestFileWithSchema(db, source, file)) return failure;
      }
    }
  } else {
    Status st = db.Exec("CREATE TEMP TABLE " + table + " AS SELECT * FROM " +
                        Reader(source, source.paths));
    if (!st.ok()) return Failure{kIngest, "ingest", st.message()};
  }
  auto count = db.QueryInt("SELECT count(*)::BIGINT FROM " + table);
  if (!count.ok()) return Failure{kIngest, "ingest", count.status().message()};
  *rows = *count;
  Status st = db.Exec("CREATE OR REPLACE TEMP VIEW df AS SELECT * FROM " + table);
  if (!st.ok()) return Failure{kIngest, "ingest", st.message()};
  return std::nullopt;
}

// --- queries --------------------------------------------------------------------

// Run `sql` and return its result in kelt's types (RDP_COMPATIBILITY.md §1): DuckDB
// widens sums of BIGINT to HUGEINT (Arrow decimal128(38,0)), which no sink of the data
// model takes and RDP (Polars) keeps as Int64. So integer columns become BIGINT (an
// overflow is a SQL error) and FLOAT/DECIMAL become DOUBLE; other types are left as they
// are. A statement DuckDB cannot DESCRIBE (not a query) runs unchanged.
Result<std::shared_ptr<arrow::Table>> QueryInKeltTypes(transform::DuckDbSession& db,
                                                       std::string_view sql) {
  std::string text(sql);
  while (!text.empty() &&
         (text.back() == ';' || std::isspace(static_cast<unsigned char>(text.back())))) {
    text.pop_back();
  }
  auto described = db.Query("DESCRIBE " + text);
  if (!described.ok() || (*described)->num_columns() < 2) return db.Query(sql);
  static const char* const kIntegers[] = {"TINYINT",  "SMALLINT", "INTEGER",
                                          "HUGEINT",  "UTINYINT", "USMALLINT",
                                          "UINTEGER", "UBIGINT",  "UHUGEINT"};
  std::string select;
  bool widened = false;
  for (int64_t row = 0; row < (*described)->num_rows(); ++row) {
    auto name = (*described)->column(0)->GetScalar(row);
    auto type = (*described)->column(1)->GetScalar(row);
    if (!name.ok() || !type.ok()) return db.Query(sql);
    std::string column = QuoteIdentifier((*name)->ToString());
    std::string t = (*type)->ToString();
    std::string target;
    if (std::find(std::begin(kIntegers), std::end(kIntegers), t) != std::end(kIntegers)) {
      target = "BIGINT";
    } else if (t == "FLOAT" || t.starts_with("DECIMAL")) {
      target = "DOUBLE";
    }
    if (!select.empty()) select += ", ";
    if (target.empty()) {
      select += column;
    } else {
      select += "CAST(" + column + " AS " + target + ") AS " + column;
      widened = true;
    }
  }
  if (!widened) return db.Query(sql);
  return db.Query("SELECT " + select + " FROM (" + text + "\n)");
}

// --- sinks --------------------------------------------------------------------------

// The object an object_store sink writes: the URI itself when it names a .parquet
// object, else `part-0.parquet` under the prefix.
std::string ObjectUri(const std::string& uri) {
  if (uri.ends_with(".parquet")) return uri;
  std::string prefix = uri;
  while (prefix.ends_with("/")) prefix.pop_back();
  return prefix + "/part-0.parquet";
}

// S3 settings of a sink. Arrow 26 builds the client with its own endpoint setting, so
// the AWS SDK's `AWS_ENDPOINT_URL[_S3]` variables would be ignored: kelt reads them
// (the service-specific one first, as the SDK does) when the sink has no `endpoint`.
ParquetSinkOptions Storage(const SinkSpec& s) {
  ParquetSinkOptions o;
  o.s3_endpoint = s.endpoint;
  for (const char* var : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    const char* value = std::getenv(var);
    if (o.s3_endpoint.empty() && value != nullptr) o.s3_endpoint = value;
  }
  o.s3_region = s.region;
  o.s3_access_key = s.access_key_id;
  o.s3_secret_key = s.secret_access_key;
  return o;
}

Status WriteDuckDb(const SinkSpec& s, const std::shared_ptr<arrow::Table>& data) {
  // Parent directories are created, as for parquet_file.
  std::filesystem::path parent = std::filesystem::path(s.path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) {
    return Status::IOError("duckdb sink: creating '" + parent.string() +
                           "': " + ec.message());
  }
  KELT_ASSIGN_OR_RAISE(auto db, transform::DuckDbSession::Open(s.path));
  KELT_RETURN_NOT_OK(db->RegisterArrow("__kelt_pipeline_out", data));
  const std::string table = transform::QuoteTableName(s.table);
  KELT_RETURN_NOT_OK(db->Exec("BEGIN TRANSACTION"));
  Status st = [&]() -> Status {
    if (s.create_table_if_missing) {
      KELT_RETURN_NOT_OK(db->Exec("CREATE TABLE IF NOT EXISTS " + table +
                                  " AS SELECT * FROM __kelt_pipeline_out LIMIT 0"));
    }
    if (s.truncate_before_load) KELT_RETURN_NOT_OK(db->Exec("DELETE FROM " + table));
    KELT_RETURN_NOT_OK(
        db->Exec("INSERT INTO " + table + " BY NAME SELECT * FROM __kelt_pipeline_out"));
    return db->Exec("COMMIT");
  }();
  if (!st.ok()) (void)db->Exec("ROLLBACK");
  return st;
}

Result<int64_t> WriteKafka(const SinkSpec& s, const arrow::RecordBatch& batch) {
  ProducerOptions options = s.producer;
  // The registry is asked (and, with auto_register, written to) before anything is sent.
  KELT_ASSIGN_OR_RAISE(options.value_encoder,
                       MakeValueEncoder(s.value_format, batch.schema()));
  KELT_ASSIGN_OR_RAISE(auto producer, Producer::Make(options));
  auto sent = producer->Send(batch);
  Status closed = producer->Close();
  if (!sent.ok()) return sent.status();
  KELT_RETURN_NOT_OK(closed);
  return *sent;
}

PipelineSinkResult RunSink(transform::DuckDbSession& db, const SinkSpec& s,
                           const std::shared_ptr<arrow::Table>& df) {
  PipelineSinkResult r;
  r.kind = s.kind;
  if (s.kind == "parquet_file") {
    r.target = {{"path", s.path}};
  } else if (s.kind == "postgresql") {
    r.target = {{"table", s.table}};
  } else if (s.kind == "object_store") {
    r.target = {{"uri", ObjectUri(s.uri)}};
  } else if (s.kind == "duckdb") {
    r.target = {{"path", s.path}, {"table", s.table}};
  } else if (s.kind == "kafka") {
    r.target = {{"topic", s.producer.topic}};
  }
  auto fail = [&](std::string code, std::string stage, const Status& st) {
    r.ok = false;
    r.error_code = std::move(code);
    r.stage = std::move(stage);
    r.message = s.place + ": " + st.message();
    return r;
  };

  std::shared_ptr<arrow::Table> data = df;
  if (!s.sql.empty()) {
    auto q = QueryInKeltTypes(db, s.sql);
    if (!q.ok()) return fail(kSql, "sink_sql", q.status());
    data = *q;
  }
  auto combined = data->CombineChunksToBatch();
  if (!combined.ok())
    return fail("INTERNAL", "sink", internal::FromArrow(combined.status()));
  const arrow::RecordBatch& batch = **combined;

  if (s.kind == "parquet_file") {
    Status st = ExportToParquet(batch, s.path, Storage(s));
    if (!st.ok()) return fail("PARQUET_SINK_WRITE_FAILED", "sink", st);
  } else if (s.kind == "object_store") {
    Status st = ExportToParquet(batch, ObjectUri(s.uri), Storage(s));
    if (!st.ok()) return fail("OBJECT_STORE_SINK_FAILED", "sink", st);
  } else if (s.kind == "postgresql") {
    pg::TableLoadOptions o;
    o.conninfo = s.url;
    o.table = s.table;
    o.create_table_if_missing = s.create_table_if_missing;
    o.truncate_before_load = s.truncate_before_load;
    auto loaded = pg::LoadTable(o, batch);
    if (!loaded.ok()) return fail("POSTGRES_SINK_FAILED", "sink", loaded.status());
  } else if (s.kind == "duckdb") {
    Status st = WriteDuckDb(s, data);
    if (!st.ok()) return fail("DUCKDB_SINK_FAILED", "sink", st);
  } else if (s.kind == "kafka") {
    auto sent = WriteKafka(s, batch);
    if (!sent.ok()) return fail("KAFKA_SINK_FAILED", "sink", sent.status());
  }
  r.ok = true;
  r.row_count = batch.num_rows();
  return r;
}

PipelineRunResult Fail(Failure f) {
  PipelineRunResult r;
  r.ok = false;
  r.error_code = std::move(f.code);
  r.error_stage = std::move(f.stage);
  r.error_message = std::move(f.message);
  return r;
}

}  // namespace

PipelineRunResult ValidatePipeline(std::string_view pipeline_json) {
  PipelineSpec spec;
  if (auto failure = ParseSpec(pipeline_json, &spec)) return Fail(std::move(*failure));
  PipelineRunResult result;
  result.ok = true;
  return result;
}

PipelineRunResult RunPipeline(std::string_view pipeline_json) {
  PipelineSpec spec;
  if (auto failure = ParseSpec(pipeline_json, &spec)) return Fail(std::move(*failure));

  auto db = transform::DuckDbSession::Open("");
  if (!db.ok()) return Fail({kIngest, "ingest", db.status().message()});
  PipelineRunResult result;
  if (auto failure = Ingest(**db, spec.source, &result.ingested_row_count)) {
    return Fail(std::move(*failure));
  }
  if (!spec.transform_sql.empty()) {
    auto t = QueryInKeltTypes(**db, spec.transform_sql);
    if (!t.ok())
      return Fail({kSql, "transform", "transform.sql: " + t.status().message()});
    Status st = (*db)->RegisterArrow("df", *t);
    if (!st.ok()) return Fail({kSql, "transform", st.message()});
  }
  auto df = QueryInKeltTypes(**db, "SELECT * FROM df");
  if (!df.ok()) return Fail({kSql, "transform", df.status().message()});
  for (const SinkSpec& sink : spec.sinks) {
    result.sink_results.push_back(RunSink(**db, sink, *df));
  }
  result.ok = true;
  return result;
}

std::string PipelineRunResultToJson(const PipelineRunResult& r) {
  std::string out;
  if (!r.ok) {
    out = R"({"ok":false,"error":{"code":)";
    text::AppendJsonString(&out, r.error_code);
    out += R"(,"message":)";
    text::AppendJsonString(&out, r.error_message);
    out += R"(,"stage":)";
    text::AppendJsonString(&out, r.error_stage);
    return out + "}}";
  }
  out = R"({"ok":true,"interchange":{"kind":"run_pipeline_json","ingested_row_count":)";
  text::AppendInt64(&out, r.ingested_row_count);
  out += R"(,"sink_results":[)";
  for (size_t i = 0; i < r.sink_results.size(); ++i) {
    const PipelineSinkResult& s = r.sink_results[i];
    if (i > 0) out += ",";
    out += R"({"kind":)";
    text::AppendJsonString(&out, s.kind);
    out += s.ok ? R"(,"status":"ok")" : R"(,"status":"error")";
    for (const auto& [key, value] : s.target) {
      out += ",";
      text::AppendJsonString(&out, key);
      out += ":";
      text::AppendJsonString(&out, value);
    }
    if (s.ok) {
      out += R"(,"row_count":)";
      text::AppendInt64(&out, s.row_count);
    } else {
      out += R"(,"error_code":)";
      text::AppendJsonString(&out, s.error_code);
      out += R"(,"stage":)";
      text::AppendJsonString(&out, s.stage);
      out += R"(,"message":)";
      text::AppendJsonString(&out, s.message);
    }
    out += "}";
  }
  return out + "]}}";
}

std::string RunPipelineJson(std::string_view pipeline_json) {
  return PipelineRunResultToJson(RunPipeline(pipeline_json));
}

}  // namespace kelt
