// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/schema.h"

#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>

#include <array>
#include <charconv>

#include "kelt/common/text.h"
#include "kelt/model/json_dom.h"

namespace kelt {

namespace dom = simdjson::dom;

// --- shared DOM helpers (declared in json_dom.h) -----------------------------------

namespace model {
namespace {

constexpr size_t kExcerptLimit = 60;

// Writes compact JSON of an element until about `limit` bytes have been produced.
class ExcerptWriter {
 public:
  explicit ExcerptWriter(size_t limit) : limit_(limit) {}

  void Write(dom::element e) {
    if (Full()) return;
    switch (e.type()) {
      case dom::element_type::ARRAY: {
        dom::array arr;
        if (e.get_array().get(arr)) return;
        out_.push_back('[');
        bool first = true;
        for (dom::element child : arr) {
          if (!first) out_.push_back(',');
          first = false;
          Write(child);
          if (Full()) return;
        }
        out_.push_back(']');
        break;
      }
      case dom::element_type::OBJECT: {
        dom::object obj;
        if (e.get_object().get(obj)) return;
        out_.push_back('{');
        bool first = true;
        for (dom::key_value_pair kv : obj) {
          if (!first) out_.push_back(',');
          first = false;
          WriteString(kv.key);
          out_.push_back(':');
          Write(kv.value);
          if (Full()) return;
        }
        out_.push_back('}');
        break;
      }
      case dom::element_type::STRING: {
        std::string_view s;
        if (e.get_string().get(s)) return;
        WriteString(s);
        break;
      }
      case dom::element_type::INT64: {
        int64_t v = 0;
        if (!e.get_int64().get(v)) text::AppendInt64(&out_, v);
        break;
      }
      case dom::element_type::UINT64: {
        uint64_t v = 0;
        if (!e.get_uint64().get(v)) {
          char buf[24];
          auto res = std::to_chars(buf, buf + sizeof(buf), v);
          out_.append(buf, res.ptr);
        }
        break;
      }
      case dom::element_type::DOUBLE: {
        double v = 0;
        if (!e.get_double().get(v)) text::AppendJsonDouble(&out_, v);
        break;
      }
      case dom::element_type::BOOL: {
        bool v = false;
        if (!e.get_bool().get(v)) out_.append(v ? "true" : "false");
        break;
      }
      case dom::element_type::NULL_VALUE:
        out_.append("null");
        break;
    }
  }

  std::string Finish() && {
    if (out_.size() > limit_) {
      size_t cut = limit_;
      // Back up to a UTF-8 lead byte so the excerpt stays valid text.
      while (cut > 0 && (static_cast<unsigned char>(out_[cut]) & 0xC0) == 0x80) --cut;
      out_.resize(cut);
      out_.append("\xE2\x80\xA6");  // "…"
    }
    return std::move(out_);
  }

 private:
  bool Full() const { return out_.size() > limit_; }

  void WriteString(std::string_view s) {
    // Escape only what can appear in the excerpt; the rest is cut anyway.
    text::AppendJsonString(&out_, s.substr(0, limit_ + 4));
  }

  size_t limit_;
  std::string out_;
};

}  // namespace

Status ParseDocument(std::string_view json, dom::element* root) {
  // One parser per thread, reused: after the first document of a given size the
  // parser owns big enough buffers and parsing allocates nothing.
  thread_local dom::parser parser;
  // realloc_if_needed=true: simdjson copies the input into its own padded buffer,
  // so any string_view is safe to pass.
  const char* data = json.data() != nullptr ? json.data() : "";
  auto err = parser.parse(data, json.size(), true).get(*root);
  if (err != simdjson::SUCCESS) {
    return Status::ParseError("invalid JSON: " +
                              std::string(simdjson::error_message(err)));
  }
  return Status::OK();
}

std::string Excerpt(dom::element e) {
  ExcerptWriter writer(kExcerptLimit);
  writer.Write(e);
  return std::move(writer).Finish();
}

std::string Located(std::string_view where, std::string_view message) {
  std::string out;
  out.reserve(where.size() + message.size() + 2);
  if (!where.empty()) {
    out.append(where);
    out.append(": ");
  }
  out.append(message);
  return out;
}

std::string JoinPath(std::string_view base, std::string_view key) {
  std::string out(base);
  if (!base.empty() && !key.empty() && key.front() != '[') out.push_back('.');
  out.append(key);
  return out;
}

bool GetInt64(dom::element e, int64_t* out) {
  if (e.type() != dom::element_type::INT64) return false;
  return e.get_int64().get(*out) == simdjson::SUCCESS;
}

}  // namespace model

// --- types -----------------------------------------------------------------------------

namespace {

constexpr std::array<TypeId, 7> kAllTypes = {
    TypeId::kInt64,     TypeId::kFloat64, TypeId::kBool,  TypeId::kUtf8,
    TypeId::kTimestamp, TypeId::kDate,    TypeId::kBinary};

std::string Quoted(std::string_view s) {
  std::string out = "'";
  out.append(s);
  out.push_back('\'');
  return out;
}

}  // namespace

std::string_view TypeName(TypeId id) {
  switch (id) {
    case TypeId::kInt64:
      return "Int64";
    case TypeId::kFloat64:
      return "Float64";
    case TypeId::kBool:
      return "Bool";
    case TypeId::kUtf8:
      return "Utf8";
    case TypeId::kTimestamp:
      return "Timestamp";
    case TypeId::kDate:
      return "Date";
    case TypeId::kBinary:
      return "Binary";
  }
  return "Unknown";
}

std::optional<TypeId> ParseTypeName(std::string_view name, bool lenient) {
  if (!lenient) {
    for (TypeId id : kAllTypes) {
      if (name == TypeName(id)) return id;
    }
    return std::nullopt;
  }
  struct Alias {
    std::string_view lower;
    TypeId id;
  };
  static constexpr Alias kAliases[] = {
      {"int64", TypeId::kInt64},        {"i64", TypeId::kInt64},
      {"float64", TypeId::kFloat64},    {"f64", TypeId::kFloat64},
      {"double", TypeId::kFloat64},     {"bool", TypeId::kBool},
      {"boolean", TypeId::kBool},       {"utf8", TypeId::kUtf8},
      {"string", TypeId::kUtf8},        {"str", TypeId::kUtf8},
      {"text", TypeId::kUtf8},          {"timestamp", TypeId::kTimestamp},
      {"datetime", TypeId::kTimestamp}, {"date", TypeId::kDate},
      {"binary", TypeId::kBinary},      {"bytes", TypeId::kBinary},
  };
  for (const Alias& alias : kAliases) {
    if (text::EqualsIgnoreAsciiCase(name, alias.lower)) return alias.id;
  }
  return std::nullopt;
}

std::string_view TimeUnitName(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSecond:
      return "s";
    case TimeUnit::kMilli:
      return "ms";
    case TimeUnit::kMicro:
      return "us";
    case TimeUnit::kNano:
      return "ns";
  }
  return "?";
}

std::optional<TimeUnit> ParseTimeUnit(std::string_view name) {
  if (name == "s") return TimeUnit::kSecond;
  if (name == "ms") return TimeUnit::kMilli;
  if (name == "us") return TimeUnit::kMicro;
  if (name == "ns") return TimeUnit::kNano;
  return std::nullopt;
}

int Schema::FieldIndex(std::string_view name) const {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// --- source paths ----------------------------------------------------------------------

namespace {

// A source path can be written as one dotted string when splitting that string on '.'
// gives the segments back.
bool SourceIsDottable(const std::vector<std::string>& source) {
  for (const std::string& seg : source) {
    if (seg.empty() || seg.find('.') != std::string::npos) return false;
  }
  return true;
}

std::string JoinDotted(const std::vector<std::string>& source) {
  std::string out;
  for (size_t i = 0; i < source.size(); ++i) {
    if (i > 0) out.push_back('.');
    out.append(source[i]);
  }
  return out;
}

// Split "a.b.c"; empty segments ("a..b", ".a", "") are rejected.
bool SplitDotted(std::string_view text, std::vector<std::string>* out) {
  out->clear();
  size_t start = 0;
  while (true) {
    size_t dot = text.find('.', start);
    std::string_view seg = text.substr(
        start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (seg.empty()) return false;
    out->emplace_back(seg);
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

void AppendSourceJson(std::string* out, const std::vector<std::string>& source) {
  if (SourceIsDottable(source)) {
    text::AppendJsonString(out, JoinDotted(source));
    return;
  }
  out->push_back('[');
  for (size_t i = 0; i < source.size(); ++i) {
    if (i > 0) out->push_back(',');
    text::AppendJsonString(out, source[i]);
  }
  out->push_back(']');
}

// --- schema JSON -------------------------------------------------------------------

constexpr std::string_view kTypeHint =
    " (expected one of Int64, Float64, Bool, Utf8, Timestamp, Date, Binary)";

Status FieldFromJson(dom::element e, SchemaDialect dialect, const std::string& where,
                     Field* out) {
  dom::object obj;
  if (e.get_object().get(obj) != simdjson::SUCCESS) {
    return Status::Invalid(model::Located(
        where, "expected an object like {\"name\":\"id\",\"data_type\":\"Int64\"}, got " +
                   model::Excerpt(e)));
  }
  bool has_name = false, has_type = false, has_source = false, has_unit = false;
  for (dom::key_value_pair kv : obj) {
    auto duplicate = [&](bool* seen) {
      if (*seen) {
        return Status::Invalid(model::Located(where, "duplicate key " + Quoted(kv.key)));
      }
      *seen = true;
      return Status::OK();
    };
    if (kv.key == "name") {
      KELT_RETURN_NOT_OK(duplicate(&has_name));
      std::string_view name;
      if (kv.value.get_string().get(name) != simdjson::SUCCESS) {
        return Status::Invalid(
            model::Located(model::JoinPath(where, "name"),
                           "expected a string, got " + model::Excerpt(kv.value)));
      }
      out->name.assign(name);
    } else if (kv.key == "data_type") {
      KELT_RETURN_NOT_OK(duplicate(&has_type));
      std::string_view type_name;
      if (kv.value.get_string().get(type_name) != simdjson::SUCCESS) {
        return Status::Invalid(model::Located(
            model::JoinPath(where, "data_type"),
            "expected a type name string, got " + model::Excerpt(kv.value)));
      }
      auto id = ParseTypeName(type_name, dialect == SchemaDialect::kLenient);
      if (!id) {
        return Status::Invalid(
            model::Located(model::JoinPath(where, "data_type"),
                           "unknown type " + Quoted(type_name) + std::string(kTypeHint)));
      }
      out->type = *id;
    } else if (kv.key == "source") {
      KELT_RETURN_NOT_OK(duplicate(&has_source));
      const std::string at = model::JoinPath(where, "source");
      out->source.clear();
      std::string_view dotted;
      dom::array segments;
      if (kv.value.is_null()) {
        // null means "not set", like a missing key.
      } else if (kv.value.get_string().get(dotted) == simdjson::SUCCESS) {
        if (!SplitDotted(dotted, &out->source)) {
          return Status::Invalid(model::Located(
              at,
              "empty path segment in " + model::Excerpt(kv.value) +
                  " (use an array of strings for keys that are empty or contain '.')"));
        }
      } else if (kv.value.get_array().get(segments) == simdjson::SUCCESS) {
        size_t i = 0;
        for (dom::element seg : segments) {
          std::string_view s;
          if (seg.get_string().get(s) != simdjson::SUCCESS) {
            return Status::Invalid(
                model::Located(at + "[" + std::to_string(i) + "]",
                               "expected a string, got " + model::Excerpt(seg)));
          }
          out->source.emplace_back(s);
          ++i;
        }
        if (out->source.empty()) {
          return Status::Invalid(
              model::Located(at, "expected at least one path segment"));
        }
      } else {
        return Status::Invalid(model::Located(
            at, "expected a dotted path string or an array of strings, got " +
                    model::Excerpt(kv.value)));
      }
    } else if (kv.key == "timestamp_unit") {
      KELT_RETURN_NOT_OK(duplicate(&has_unit));
      out->timestamp_unit.reset();
      if (kv.value.is_null()) continue;
      std::string_view unit_name;
      std::optional<TimeUnit> unit;
      if (kv.value.get_string().get(unit_name) == simdjson::SUCCESS) {
        unit = ParseTimeUnit(unit_name);
      }
      if (!unit) {
        return Status::Invalid(model::Located(
            model::JoinPath(where, "timestamp_unit"),
            "expected \"s\", \"ms\", \"us\" or \"ns\", got " + model::Excerpt(kv.value)));
      }
      out->timestamp_unit = unit;
    }
    // Any other key is ignored, as serde does for RDP's Field.
  }
  if (!has_name) return Status::Invalid(model::Located(where, "missing key 'name'"));
  if (!has_type) return Status::Invalid(model::Located(where, "missing key 'data_type'"));
  if (out->timestamp_unit && out->type != TypeId::kTimestamp) {
    return Status::Invalid(
        model::Located(model::JoinPath(where, "timestamp_unit"),
                       "only Timestamp fields take a timestamp_unit (this field is " +
                           std::string(TypeName(out->type)) + ")"));
  }
  return Status::OK();
}

}  // namespace

namespace model {

Status SchemaFromJson(dom::element e, SchemaDialect dialect, std::string_view path,
                      Schema* out) {
  out->fields.clear();
  const bool lenient = dialect == SchemaDialect::kLenient;
  dom::array fields;
  dom::object obj;
  std::string fields_path;
  if (lenient && e.get_array().get(fields) == simdjson::SUCCESS) {
    // Python's bare list of fields: errors read "[0].data_type" under the path.
    fields_path = std::string(path);
  } else if (e.get_object().get(obj) == simdjson::SUCCESS) {
    dom::element fields_elem;
    if (obj["fields"].get(fields_elem) != simdjson::SUCCESS) {
      return Status::Invalid(Located(path, "missing key 'fields'"));
    }
    fields_path = JoinPath(path, "fields");
    if (fields_elem.get_array().get(fields) != simdjson::SUCCESS) {
      return Status::Invalid(Located(
          fields_path, "expected an array of fields, got " + Excerpt(fields_elem)));
    }
  } else {
    return Status::Invalid(Located(
        path, std::string("expected an object like {\"fields\":[…]}") +
                  (lenient ? " or an array of fields" : "") + ", got " + Excerpt(e)));
  }
  out->fields.reserve(fields.size());
  size_t i = 0;
  for (dom::element fe : fields) {
    Field field;
    KELT_RETURN_NOT_OK(
        FieldFromJson(fe, dialect, fields_path + "[" + std::to_string(i) + "]", &field));
    out->fields.push_back(std::move(field));
    ++i;
  }
  return Status::OK();
}

void AppendFieldJson(std::string* out, const Field& field) {
  out->append("{\"name\":");
  text::AppendJsonString(out, field.name);
  out->append(",\"data_type\":\"");
  out->append(TypeName(field.type));
  out->push_back('"');
  if (!field.source.empty()) {
    out->append(",\"source\":");
    AppendSourceJson(out, field.source);
  }
  if (field.timestamp_unit) {
    out->append(",\"timestamp_unit\":\"");
    out->append(TimeUnitName(*field.timestamp_unit));
    out->push_back('"');
  }
  out->push_back('}');
}

void AppendSchemaJson(std::string* out, const Schema& schema) {
  out->append("{\"fields\":[");
  for (size_t i = 0; i < schema.fields.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendFieldJson(out, schema.fields[i]);
  }
  out->append("]}");
}

}  // namespace model

Result<Schema> ParseSchemaJson(std::string_view json, SchemaDialect dialect) {
  dom::element root;
  KELT_RETURN_NOT_OK(model::ParseDocument(json, &root));
  Schema schema;
  KELT_RETURN_NOT_OK(model::SchemaFromJson(root, dialect, "", &schema));
  return schema;
}

std::string SchemaToJson(const Schema& schema) {
  std::string out;
  out.reserve(16 + schema.fields.size() * 40);
  model::AppendSchemaJson(&out, schema);
  return out;
}

std::string FieldToJson(const Field& field) {
  std::string out;
  model::AppendFieldJson(&out, field);
  return out;
}

// --- Arrow -----------------------------------------------------------------------------

namespace {

constexpr std::string_view kSourceKey = "kelt.source";
constexpr std::string_view kUnitKey = "kelt.timestamp_unit";

// Metadata form of a source path: the dotted text when that round-trips (and does not
// look like the array form), else a JSON array of strings.
std::string SourceMetadataText(const std::vector<std::string>& source) {
  if (SourceIsDottable(source) && source.front().front() != '[')
    return JoinDotted(source);
  std::string out = "[";
  for (size_t i = 0; i < source.size(); ++i) {
    if (i > 0) out.push_back(',');
    text::AppendJsonString(&out, source[i]);
  }
  out.push_back(']');
  return out;
}

Status ParseSourceMetadata(std::string_view text, const std::string& column,
                           std::vector<std::string>* out) {
  auto bad = [&]() {
    return Status::Invalid("column '" + column + "': metadata " +
                           std::string(kSourceKey) +
                           " must be a dotted path or a JSON array of strings, got '" +
                           std::string(text) + "'");
  };
  out->clear();
  if (!text.empty() && text.front() == '[') {
    dom::element root;
    dom::array arr;
    if (!model::ParseDocument(text, &root).ok() ||
        root.get_array().get(arr) != simdjson::SUCCESS) {
      return bad();
    }
    for (dom::element seg : arr) {
      std::string_view s;
      if (seg.get_string().get(s) != simdjson::SUCCESS) return bad();
      out->emplace_back(s);
    }
    if (out->empty()) return bad();
    return Status::OK();
  }
  if (!SplitDotted(text, out)) return bad();
  return Status::OK();
}

}  // namespace

std::shared_ptr<arrow::DataType> ToArrowType(TypeId id) {
  switch (id) {
    case TypeId::kInt64:
      return arrow::int64();
    case TypeId::kFloat64:
      return arrow::float64();
    case TypeId::kBool:
      return arrow::boolean();
    case TypeId::kUtf8:
      return arrow::utf8();
    case TypeId::kTimestamp:
      return arrow::timestamp(arrow::TimeUnit::MICRO, "UTC");
    case TypeId::kDate:
      return arrow::date32();
    case TypeId::kBinary:
      return arrow::binary();
  }
  return arrow::utf8();
}

std::shared_ptr<arrow::Schema> ToArrowSchema(const Schema& schema) {
  arrow::FieldVector fields;
  fields.reserve(schema.fields.size());
  for (const Field& f : schema.fields) {
    std::shared_ptr<arrow::KeyValueMetadata> metadata;
    if (!f.source.empty() || f.timestamp_unit) {
      metadata = std::make_shared<arrow::KeyValueMetadata>();
      if (!f.source.empty()) {
        metadata->Append(std::string(kSourceKey), SourceMetadataText(f.source));
      }
      if (f.timestamp_unit) {
        metadata->Append(std::string(kUnitKey),
                         std::string(TimeUnitName(*f.timestamp_unit)));
      }
    }
    fields.push_back(arrow::field(f.name, ToArrowType(f.type), /*nullable=*/true,
                                  std::move(metadata)));
  }
  return arrow::schema(std::move(fields));
}

Result<Schema> FromArrowSchema(const arrow::Schema& schema) {
  Schema out;
  out.fields.reserve(static_cast<size_t>(schema.num_fields()));
  for (const auto& af : schema.fields()) {
    Field f;
    f.name = af->name();
    switch (af->type()->id()) {
      case arrow::Type::INT8:
      case arrow::Type::INT16:
      case arrow::Type::INT32:
      case arrow::Type::INT64:
      case arrow::Type::UINT8:
      case arrow::Type::UINT16:
      case arrow::Type::UINT32:
      case arrow::Type::UINT64:  // values above i64 max are rejected when converting
        f.type = TypeId::kInt64;
        break;
      case arrow::Type::FLOAT:
      case arrow::Type::DOUBLE:
        f.type = TypeId::kFloat64;
        break;
      case arrow::Type::BOOL:
        f.type = TypeId::kBool;
        break;
      case arrow::Type::STRING:
      case arrow::Type::LARGE_STRING:
      case arrow::Type::STRING_VIEW:
      case arrow::Type::NA:  // an all-null column (e.g. a pandas column of None)
        f.type = TypeId::kUtf8;
        break;
      case arrow::Type::TIMESTAMP:  // any unit; values are converted to µs, UTC
        f.type = TypeId::kTimestamp;
        break;
      case arrow::Type::DATE32:
      case arrow::Type::DATE64:
        f.type = TypeId::kDate;
        break;
      case arrow::Type::BINARY:
      case arrow::Type::LARGE_BINARY:
      case arrow::Type::BINARY_VIEW:
      case arrow::Type::FIXED_SIZE_BINARY:
        f.type = TypeId::kBinary;
        break;
      default:
        return Status::Invalid(
            "column '" + af->name() + "': unsupported Arrow type " +
            af->type()->ToString() +
            " (kelt columns are Int64, Float64, Bool, Utf8, Timestamp, "
            "Date or Binary)");
    }
    if (const auto& md = af->metadata(); md != nullptr) {
      if (int i = md->FindKey(std::string(kSourceKey)); i >= 0) {
        KELT_RETURN_NOT_OK(ParseSourceMetadata(md->value(i), af->name(), &f.source));
      }
      if (int i = md->FindKey(std::string(kUnitKey)); i >= 0) {
        f.timestamp_unit = ParseTimeUnit(md->value(i));
        if (!f.timestamp_unit) {
          return Status::Invalid(
              "column '" + af->name() + "': metadata " + std::string(kUnitKey) +
              " must be \"s\", \"ms\", \"us\" or \"ns\", got '" + md->value(i) + "'");
        }
      }
    }
    out.fields.push_back(std::move(f));
  }
  return out;
}

}  // namespace kelt
