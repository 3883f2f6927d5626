// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// JSON Schema records in the Confluent wire format: the header (magic byte, schema id),
// then the row as a JSON object (UTF-8). With the subject's latest schema, each value is
// checked against the landing column SchemaFromJsonSchema derives for its path, so a
// record that the subject's consumers would land wrongly fails here, naming the record
// and field; with auto_register, JsonSchemaFromArrow's schema is registered instead.
#include <simdjson.h>

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kelt/common/mutex.h"
#include "kelt/common/text.h"
#include "kelt/common/thread_annotations.h"
#include "kelt/common/time_units.h"
#include "kelt/json_schema.h"
#include "kelt/serde/record_encoders.h"

namespace kelt::serde {
namespace {

bool IsInteger(arrow::Type::type id) { return arrow::is_integer(id); }
bool IsFloat(arrow::Type::type id) {
  return arrow::is_floating(id) || arrow::is_decimal(id);
}
bool IsStringLike(const arrow::DataType& t) {
  if (arrow::is_string(t.id()) || t.id() == arrow::Type::STRING_VIEW) return true;
  if (t.id() == arrow::Type::DICTIONARY) {
    return arrow::is_string(
        static_cast<const arrow::DictionaryType&>(t).value_type()->id());
  }
  return false;
}

// --- rows as JSON text
// ------------------------------------------------------------------

Status CheckWritable(const arrow::DataType& t, const std::string& where) {
  switch (t.id()) {
    case arrow::Type::STRUCT:
      for (const auto& f : t.fields()) {
        KELT_RETURN_NOT_OK(CheckWritable(*f->type(), where + "." + f->name()));
      }
      return Status::OK();
    case arrow::Type::LIST:
    case arrow::Type::LARGE_LIST:
    case arrow::Type::FIXED_SIZE_LIST:
      return CheckWritable(*t.field(0)->type(), where + "[]");
    case arrow::Type::MAP: {
      const auto& map = static_cast<const arrow::MapType&>(t);
      if (!arrow::is_string(map.key_type()->id())) break;
      return CheckWritable(*map.item_type(), where + "{}");
    }
    case arrow::Type::DICTIONARY:
      return CheckWritable(*static_cast<const arrow::DictionaryType&>(t).value_type(),
                           where);
    case arrow::Type::NA:
    case arrow::Type::BOOL:
    case arrow::Type::HALF_FLOAT:
    case arrow::Type::FLOAT:
    case arrow::Type::DOUBLE:
    case arrow::Type::DECIMAL128:
    case arrow::Type::DECIMAL256:
    case arrow::Type::STRING:
    case arrow::Type::LARGE_STRING:
    case arrow::Type::BINARY:
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::FIXED_SIZE_BINARY:
    case arrow::Type::TIMESTAMP:
    case arrow::Type::DATE32:
    case arrow::Type::DATE64:
      return Status::OK();
    default:
      if (IsInteger(t.id())) return Status::OK();
      break;
  }
  return Status::TypeError("column '" + where + "': " + t.ToString() +
                           " has no JSON form kelt writes");
}

void AppendObject(const arrow::StructArray& a, int64_t row, std::string* out);

// Append the non-null value at `i` of `a` as JSON.
void AppendValue(const arrow::Array& a, int64_t i, std::string* out) {
  if (a.IsNull(i)) {
    *out += "null";
    return;
  }
  switch (a.type_id()) {
    case arrow::Type::NA:
      *out += "null";
      return;
    case arrow::Type::BOOL:
      *out += static_cast<const arrow::BooleanArray&>(a).Value(i) ? "true" : "false";
      return;
    case arrow::Type::INT8:
      return text::AppendInt64(out, static_cast<const arrow::Int8Array&>(a).Value(i));
    case arrow::Type::INT16:
      return text::AppendInt64(out, static_cast<const arrow::Int16Array&>(a).Value(i));
    case arrow::Type::INT32:
      return text::AppendInt64(out, static_cast<const arrow::Int32Array&>(a).Value(i));
    case arrow::Type::INT64:
      return text::AppendInt64(out, static_cast<const arrow::Int64Array&>(a).Value(i));
    case arrow::Type::UINT8:
      return text::AppendInt64(out, static_cast<const arrow::UInt8Array&>(a).Value(i));
    case arrow::Type::UINT16:
      return text::AppendInt64(out, static_cast<const arrow::UInt16Array&>(a).Value(i));
    case arrow::Type::UINT32:
      return text::AppendInt64(out, static_cast<const arrow::UInt32Array&>(a).Value(i));
    case arrow::Type::UINT64:
      *out += std::to_string(static_cast<const arrow::UInt64Array&>(a).Value(i));
      return;
    case arrow::Type::HALF_FLOAT:
    case arrow::Type::FLOAT:
    case arrow::Type::DOUBLE:
    case arrow::Type::DECIMAL128:
    case arrow::Type::DECIMAL256: {
      if (a.type_id() == arrow::Type::DOUBLE) {
        text::AppendJsonDouble(out, static_cast<const arrow::DoubleArray&>(a).Value(i));
        return;
      }
      if (a.type_id() == arrow::Type::FLOAT) {
        text::AppendJsonDouble(out, static_cast<const arrow::FloatArray&>(a).Value(i));
        return;
      }
      auto scalar = a.GetScalar(i);  // float16 and decimals: their exact digits
      *out += scalar.ok() ? (*scalar)->ToString() : std::string("null");
      return;
    }
    case arrow::Type::STRING:
    case arrow::Type::LARGE_STRING:
    case arrow::Type::BINARY:
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::FIXED_SIZE_BINARY: {
      std::string_view v =
          a.type_id() == arrow::Type::STRING
              ? static_cast<const arrow::StringArray&>(a).GetView(i)
          : a.type_id() == arrow::Type::LARGE_STRING
              ? static_cast<const arrow::LargeStringArray&>(a).GetView(i)
          : a.type_id() == arrow::Type::BINARY
              ? static_cast<const arrow::BinaryArray&>(a).GetView(i)
          : a.type_id() == arrow::Type::LARGE_BINARY
              ? static_cast<const arrow::LargeBinaryArray&>(a).GetView(i)
              : static_cast<const arrow::FixedSizeBinaryArray&>(a).GetView(i);
      if (arrow::is_string(a.type_id())) {
        text::AppendJsonString(out, v);
      } else {
        text::AppendJsonString(out, text::Base64Encode(v));
      }
      return;
    }
    case arrow::Type::TIMESTAMP: {
      const auto& t = static_cast<const arrow::TimestampType&>(*a.type());
      int64_t v = static_cast<const arrow::TimestampArray&>(a).Value(i);
      text::AppendJsonString(out, text::FormatTimestampMicros(ToMicros(t.unit(), v)));
      return;
    }
    case arrow::Type::DATE32:
      text::AppendJsonString(
          out, text::FormatDateDays(static_cast<const arrow::Date32Array&>(a).Value(i)));
      return;
    case arrow::Type::DATE64: {
      int64_t ms = static_cast<const arrow::Date64Array&>(a).Value(i);
      int64_t days = ms >= 0 ? ms / 86400000 : -((-ms + 86399999) / 86400000);
      text::AppendJsonString(out, text::FormatDateDays(static_cast<int32_t>(days)));
      return;
    }
    case arrow::Type::DICTIONARY: {
      const auto& d = static_cast<const arrow::DictionaryArray&>(a);
      AppendValue(*d.dictionary(), d.GetValueIndex(i), out);
      return;
    }
    case arrow::Type::STRUCT:
      AppendObject(static_cast<const arrow::StructArray&>(a), i, out);
      return;
    case arrow::Type::LIST:
    case arrow::Type::LARGE_LIST:
    case arrow::Type::FIXED_SIZE_LIST: {
      int64_t begin = 0, end = 0;
      std::shared_ptr<arrow::Array> values;
      if (a.type_id() == arrow::Type::LIST) {
        const auto& l = static_cast<const arrow::ListArray&>(a);
        begin = l.value_offset(i);
        end = begin + l.value_length(i);
        values = l.values();
      } else if (a.type_id() == arrow::Type::LARGE_LIST) {
        const auto& l = static_cast<const arrow::LargeListArray&>(a);
        begin = l.value_offset(i);
        end = begin + l.value_length(i);
        values = l.values();
      } else {
        const auto& l = static_cast<const arrow::FixedSizeListArray&>(a);
        begin = l.value_offset(i);
        end = begin + l.value_length(i);
        values = l.values();
      }
      *out += '[';
      for (int64_t j = begin; j < end; ++j) {
        if (j > begin) *out += ',';
        AppendValue(*values, j, out);
      }
      *out += ']';
      return;
    }
    case arrow::Type::MAP: {
      const auto& map = static_cast<const arrow::MapArray&>(a);
      const auto& keys = static_cast<const arrow::StringArray&>(*map.keys());
      *out += '{';
      for (int64_t j = map.value_offset(i); j < map.value_offset(i + 1); ++j) {
        if (j > map.value_offset(i)) *out += ',';
        text::AppendJsonString(out, keys.GetView(j));
        *out += ':';
        AppendValue(*map.items(), j, out);
      }
      *out += '}';
      return;
    }
    default:
      *out += "null";  // CheckWritable refused the type before any row
      return;
  }
}

// An object of the struct's non-null fields (absent, not null: a property the schema
// types without null may be left out, not set to null).
void AppendObject(const arrow::StructArray& a, int64_t row, std::string* out) {
  *out += '{';
  bool first = true;
  for (int c = 0; c < a.num_fields(); ++c) {
    const std::shared_ptr<arrow::Array>& child = a.field(c);
    if (child->IsNull(row)) continue;
    if (!first) *out += ',';
    first = false;
    text::AppendJsonString(out, a.type()->field(c)->name());
    *out += ':';
    AppendValue(*child, row, out);
  }
  *out += '}';
}

// --- the check against the landing
// --------------------------------------------------------

namespace dom = simdjson::dom;

// Whether the JSON Schema types the property at `path` (through `properties` only) as a
// string and nothing else but null: then only strings fit its Utf8 column. A property
// reached through $ref, allOf, … is not looked at: its Utf8 column takes any value,
// landed as JSON text.
bool IsStringProperty(dom::element root, const std::vector<std::string>& path) {
  dom::element at = root;
  for (const std::string& key : path) {
    if (at["properties"][key].get(at) != simdjson::SUCCESS) return false;
  }
  dom::element type;
  if (at["type"].get(type) != simdjson::SUCCESS) return false;
  std::string_view one;
  if (type.get_string().get(one) == simdjson::SUCCESS) return one == "string";
  dom::array many;
  if (type.get_array().get(many) != simdjson::SUCCESS) return false;
  bool string = false;
  for (dom::element t : many) {
    std::string_view name;
    if (t.get_string().get(name) != simdjson::SUCCESS) return false;
    if (name == "string") {
      string = true;
    } else if (name != "null") {
      return false;
    }
  }
  return string;
}

// One column (or a struct's field, at any depth) and the landing column its values go to.
struct Check {
  std::string path;                     // "address.zip"
  std::vector<const arrow::Field*> at;  // the fields from the top-level column down
  std::vector<int> index;               // their positions
  enum Kind : uint8_t {
    kAny,
    kInteger,
    kNumber,
    kBool,
    kString,
    kTimestamp,
    kDate,
    kBinary,
    kNotInSchema
  } kind = kAny;
  std::string expected;  // the landing's type, for errors
};

std::string Describe(const arrow::DataType& t) {
  if (IsInteger(t.id())) return "an integer";
  if (IsFloat(t.id())) return "a number";
  if (t.id() == arrow::Type::BOOL) return "a boolean";
  if (IsStringLike(t)) return "a string";
  if (t.id() == arrow::Type::STRUCT || t.id() == arrow::Type::MAP) return "an object";
  if (arrow::is_list_like(t.id())) return "an array";
  return "a " + t.ToString();
}

// Why the value at `r` does not fit `c`'s landing column; "" when it does.
std::string FitError(const Check& c, const arrow::DataType& type, const arrow::Array& a,
                     int64_t r) {
  const arrow::Type::type id = type.id();
  auto not_a = [&] {
    return Describe(type) + " where the schema wants " +
           (c.expected[0] == 'i' ? "an " : "a ") + c.expected;
  };
  switch (c.kind) {
    case Check::kAny:
      return "";
    case Check::kNotInSchema:
      return "not a property of the subject's JSON Schema";
    case Check::kInteger:
      if (IsInteger(id)) return "";
      if (id == arrow::Type::DOUBLE || id == arrow::Type::FLOAT) {
        double v = id == arrow::Type::DOUBLE
                       ? static_cast<const arrow::DoubleArray&>(a).Value(r)
                       : static_cast<const arrow::FloatArray&>(a).Value(r);
        if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.2e18) return "";
        return text::FormatDouble(v) + " is not an integer";
      }
      return not_a();
    case Check::kNumber:
      return IsInteger(id) || IsFloat(id) ? "" : not_a();
    case Check::kBool:
      return id == arrow::Type::BOOL ? "" : not_a();
    case Check::kString:
      return IsStringLike(type) || id == arrow::Type::TIMESTAMP ||
                     id == arrow::Type::DATE32 || id == arrow::Type::DATE64 ||
                     arrow::is_binary(id) || id == arrow::Type::FIXED_SIZE_BINARY
                 ? ""
                 : not_a();
    case Check::kBinary:
      return arrow::is_binary(id) || id == arrow::Type::FIXED_SIZE_BINARY ||
                     IsStringLike(type)
                 ? ""
                 : not_a();
    case Check::kTimestamp:
    case Check::kDate: {
      bool date = c.kind == Check::kDate;
      if (!date && id == arrow::Type::TIMESTAMP) return "";
      if (date && (id == arrow::Type::DATE32 || id == arrow::Type::DATE64)) return "";
      if (id != arrow::Type::STRING) return not_a();
      std::string_view v = static_cast<const arrow::StringArray&>(a).GetView(r);
      bool ok = date ? text::ParseDateDays(v).has_value()
                     : text::ParseTimestampMicros(v).has_value();
      if (ok) return "";
      std::string quoted;
      text::AppendJsonString(&quoted, v);
      return quoted + " is not a " + c.expected;
    }
  }
  return "";
}

}  // namespace

struct JsonSchemaCheck::Impl {
  std::shared_ptr<arrow::Schema> columns;
  Schema landing;
  std::vector<Check> checks;

  // The landing column whose source path is `path`, or null.
  const Field* LandingAt(const std::vector<std::string>& path) const {
    for (const Field& f : landing.fields) {
      if (f.source.empty() ? path.size() == 1 && path[0] == f.name : f.source == path) {
        return &f;
      }
    }
    return nullptr;
  }

  void AddChecks(dom::element root, const arrow::FieldVector& fields,
                 const std::vector<std::string>& parent,
                 std::vector<const arrow::Field*>* at, std::vector<int>* index,
                 std::vector<Check>* checks) {
    for (int i = 0; i < static_cast<int>(fields.size()); ++i) {
      const arrow::Field& f = *fields[i];
      std::vector<std::string> path = parent;
      path.push_back(f.name());
      at->push_back(&f);
      index->push_back(i);
      const Field* landing = LandingAt(path);
      if (landing == nullptr && f.type()->id() == arrow::Type::STRUCT) {
        AddChecks(root, f.type()->fields(), path, at, index, checks);  // its fields, then
      } else {
        Check c;
        for (size_t p = 0; p < path.size(); ++p) c.path += (p ? "." : "") + path[p];
        c.at = *at;
        c.index = *index;
        if (landing == nullptr) {
          c.kind = Check::kNotInSchema;
        } else {
          c.expected = std::string(TypeName(landing->type));
          switch (landing->type) {
            case TypeId::kInt64:
              c.kind = Check::kInteger;
              c.expected = "integer";
              break;
            case TypeId::kFloat64:
              c.kind = Check::kNumber;
              c.expected = "number";
              break;
            case TypeId::kBool:
              c.kind = Check::kBool;
              c.expected = "boolean";
              break;
            case TypeId::kTimestamp:
              c.kind = Check::kTimestamp;
              c.expected = "date-time string";
              break;
            case TypeId::kDate:
              c.kind = Check::kDate;
              c.expected = "date string";
              break;
            case TypeId::kBinary:
              c.kind = Check::kBinary;
              c.expected = "string";
              break;
            case TypeId::kUtf8:
              c.kind = IsStringProperty(root, path) ? Check::kString : Check::kAny;
              c.expected = "string";
              break;
          }
        }
        checks->push_back(std::move(c));
      }
      at->pop_back();
      index->pop_back();
    }
  }
};

Status CheckJsonWritable(const arrow::Schema& schema) {
  for (const auto& f : schema.fields()) {
    KELT_RETURN_NOT_OK(CheckWritable(*f->type(), f->name()));
  }
  return Status::OK();
}

Status AppendRowsJson(const arrow::RecordBatch& batch, const std::string& header,
                      std::vector<std::string>* out) {
  auto as_struct = arrow::StructArray::Make(batch.columns(), batch.schema()->fields());
  if (!as_struct.ok()) return Status::Invalid(as_struct.status().message());
  const auto& rows = static_cast<const arrow::StructArray&>(**as_struct);
  out->reserve(out->size() + static_cast<size_t>(batch.num_rows()));
  for (int64_t r = 0; r < batch.num_rows(); ++r) {
    std::string payload = header;
    AppendObject(rows, r, &payload);
    out->push_back(std::move(payload));
  }
  return Status::OK();
}

Result<JsonSchemaCheck> JsonSchemaCheck::Make(std::string_view json_schema,
                                              std::shared_ptr<arrow::Schema> columns) {
  auto impl = std::make_shared<Impl>();
  KELT_ASSIGN_OR_RAISE(impl->landing, SchemaFromJsonSchema(json_schema));
  dom::parser parser;
  dom::element root;
  if (parser.parse(json_schema.data(), json_schema.size()).get(root) !=
      simdjson::SUCCESS) {
    return Status::ParseError("the JSON Schema is not JSON");
  }
  impl->columns = std::move(columns);
  std::vector<const arrow::Field*> at;
  std::vector<int> index;
  impl->AddChecks(root, impl->columns->fields(), {}, &at, &index, &impl->checks);
  JsonSchemaCheck out;
  out.impl_ = std::move(impl);
  return out;
}

// Each value against its landing column: the first that does not fit fails the batch.
Status JsonSchemaCheck::CheckRows(const arrow::RecordBatch& batch,
                                  const std::string& subject) const {
  for (const Check& c : impl_->checks) {
    if (c.kind == Check::kAny) continue;
    // The leaf array and, for each row, whether every struct above it is non-null.
    std::vector<std::shared_ptr<arrow::Array>> arrays{batch.column(c.index[0])};
    for (size_t d = 1; d < c.index.size(); ++d) {
      const auto& s = static_cast<const arrow::StructArray&>(*arrays.back());
      arrays.push_back(s.field(c.index[d]));
    }
    const arrow::Array& leaf = *arrays.back();
    const arrow::DataType& type = *c.at.back()->type();
    for (int64_t r = 0; r < batch.num_rows(); ++r) {
      bool present = true;
      for (const auto& a : arrays) present = present && !a->IsNull(r);
      if (!present) continue;
      std::string why = FitError(c, type, leaf, r);
      if (!why.empty()) {
        return Status::TypeError("record " + std::to_string(r) + ": field '" + c.path +
                                 "': " + why + " (subject '" + subject + "')");
      }
    }
  }
  return Status::OK();
}

// --- the encoder

namespace {

class JsonSchemaRecords final : public RecordEncoder {
 public:
  JsonSchemaRecords(std::unique_ptr<SchemaRegistry> registry,
                    RegistryEncoderOptions options)
      : registry_(std::move(registry)), options_(std::move(options)) {}

  Status UseLatest(const RegisteredSchema& latest) KELT_EXCLUDES(mu_) {
    auto landing = SchemaFromJsonSchema(latest.text);
    if (!landing.ok()) {
      return landing.status().WithPrefix("subject '" + options_.subject +
                                         "': its JSON Schema: ");
    }
    internal::MutexLock lock(&mu_);
    latest_text_ = latest.text;
    latest_header_ = WireHeaderBytes(latest.id);
    return Status::OK();
  }

  Status Encode(const arrow::RecordBatch& batch,
                std::vector<std::string>* payloads) const override KELT_EXCLUDES(mu_) {
    const Entry* entry = nullptr;
    {
      internal::MutexLock lock(&mu_);
      KELT_ASSIGN_OR_RAISE(entry, For(batch.schema()));
    }
    // Entries never move (EntriesBySchema): checking and writing run unlocked.
    if (entry->check)
      KELT_RETURN_NOT_OK(entry->check->CheckRows(batch, options_.subject));
    return AppendRowsJson(batch, entry->header, payloads);
  }

  Status Prepare(std::shared_ptr<arrow::Schema> schema) override KELT_EXCLUDES(mu_) {
    internal::MutexLock lock(&mu_);
    return For(schema).status();
  }

 private:
  struct Entry {
    std::string header;
    std::optional<JsonSchemaCheck> check;  // with the latest schema
  };

  Result<Entry*> For(const std::shared_ptr<arrow::Schema>& schema) const
      KELT_REQUIRES(mu_) {
    if (Entry* known = entries_.Find(*schema)) return known;
    KELT_ASSIGN_OR_RAISE(std::unique_ptr<Entry> made, Make(schema));
    return entries_.Add(schema, std::move(made));
  }

  Result<std::unique_ptr<Entry>> Make(const std::shared_ptr<arrow::Schema>& schema) const
      KELT_REQUIRES(mu_) {
    KELT_RETURN_NOT_OK(CheckJsonWritable(*schema));
    auto entry = std::make_unique<Entry>();
    if (options_.auto_register) {
      KELT_ASSIGN_OR_RAISE(std::string text,
                           JsonSchemaFromArrow(*schema, RecordNameFor(options_)));
      KELT_ASSIGN_OR_RAISE(int32_t id,
                           RegisterRowsSchema(*registry_, options_, SchemaFormat::kJson,
                                              "JSON Schema", text));
      entry->header = WireHeaderBytes(id);
    } else {
      auto check = JsonSchemaCheck::Make(*latest_text_, schema);
      if (!check.ok()) {
        return check.status().WithPrefix("subject '" + options_.subject + "': ");
      }
      entry->check.emplace(std::move(*check));
      entry->header = latest_header_;
    }
    return entry;
  }

  std::unique_ptr<SchemaRegistry> registry_;
  const RegistryEncoderOptions options_;
  mutable internal::Mutex mu_;
  std::optional<std::string> latest_text_ KELT_GUARDED_BY(mu_);
  std::string latest_header_ KELT_GUARDED_BY(mu_);
  mutable EntriesBySchema<Entry> entries_ KELT_GUARDED_BY(mu_);
};

}  // namespace

Result<std::shared_ptr<RecordEncoder>> MakeJsonSchemaRecords(
    std::unique_ptr<SchemaRegistry> registry, const RegistryEncoderOptions& options,
    std::shared_ptr<const RegisteredSchema> latest) {
  auto encoder = std::make_shared<JsonSchemaRecords>(std::move(registry), options);
  if (latest) KELT_RETURN_NOT_OK(encoder->UseLatest(*latest));
  return std::shared_ptr<RecordEncoder>(std::move(encoder));
}

}  // namespace kelt::serde
