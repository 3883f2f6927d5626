// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Arrow schema → JSON Schema (json_schema.h): what the produce side registers for
// json-schema records it writes from rows of that schema.
#include <arrow/api.h>

#include <string>

#include "kelt/common/text.h"
#include "kelt/json_schema.h"

namespace kelt {
namespace {

// `{"type":"T"}` or, nullable, `{"type":["T","null"]}`, with `extra` members after.
std::string Typed(std::string_view type, bool nullable, const std::string& extra = "") {
  std::string out = "{\"type\":";
  if (nullable) {
    out += "[\"" + std::string(type) + "\",\"null\"]";
  } else {
    out += "\"" + std::string(type) + "\"";
  }
  return out + extra + "}";
}

Result<std::string> SchemaOf(const arrow::Field& f, const std::string& where);

// `"properties":{…}` and, when some field is not nullable, `"required":[…]`.
Result<std::string> Properties(const arrow::FieldVector& fields,
                               const std::string& prefix) {
  std::string props, required;
  for (const auto& f : fields) {
    KELT_ASSIGN_OR_RAISE(std::string s, SchemaOf(*f, prefix + f->name()));
    if (!props.empty()) props += ',';
    text::AppendJsonString(&props, f->name());
    props += ':' + s;
    if (!f->nullable()) {
      if (!required.empty()) required += ',';
      text::AppendJsonString(&required, f->name());
    }
  }
  std::string out = ",\"properties\":{" + props + "}";
  if (!required.empty()) out += ",\"required\":[" + required + "]";
  return out;
}

Result<std::string> SchemaOf(const arrow::Field& f, const std::string& where) {
  const arrow::DataType& t = *f.type();
  const bool n = f.nullable();
  switch (t.id()) {
    case arrow::Type::NA:
      return std::string("{}");
    case arrow::Type::BOOL:
      return Typed("boolean", n);
    case arrow::Type::INT8:
    case arrow::Type::INT16:
    case arrow::Type::INT32:
    case arrow::Type::INT64:
    case arrow::Type::UINT8:
    case arrow::Type::UINT16:
    case arrow::Type::UINT32:
    case arrow::Type::UINT64:
      return Typed("integer", n);
    case arrow::Type::HALF_FLOAT:
    case arrow::Type::FLOAT:
    case arrow::Type::DOUBLE:
    case arrow::Type::DECIMAL128:
    case arrow::Type::DECIMAL256:
      return Typed("number", n);
    case arrow::Type::STRING:
    case arrow::Type::LARGE_STRING:
    case arrow::Type::STRING_VIEW:
      return Typed("string", n);
    case arrow::Type::DICTIONARY: {
      const auto& value = *static_cast<const arrow::DictionaryType&>(t).value_type();
      if (!arrow::is_string(value.id())) break;
      return Typed("string", n);
    }
    case arrow::Type::BINARY:
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::BINARY_VIEW:
    case arrow::Type::FIXED_SIZE_BINARY:
      return Typed("string", n, ",\"contentEncoding\":\"base64\"");
    case arrow::Type::TIMESTAMP:
      return Typed("string", n, ",\"format\":\"date-time\"");
    case arrow::Type::DATE32:
    case arrow::Type::DATE64:
      return Typed("string", n, ",\"format\":\"date\"");
    case arrow::Type::STRUCT: {
      KELT_ASSIGN_OR_RAISE(std::string props, Properties(t.fields(), where + "."));
      return Typed("object", n, props);
    }
    case arrow::Type::LIST:
    case arrow::Type::LARGE_LIST:
    case arrow::Type::FIXED_SIZE_LIST: {
      KELT_ASSIGN_OR_RAISE(std::string items, SchemaOf(*t.field(0), where + "[]"));
      return Typed("array", n, ",\"items\":" + items);
    }
    case arrow::Type::MAP: {
      const auto& map = static_cast<const arrow::MapType&>(t);
      if (!arrow::is_string(map.key_type()->id())) break;
      KELT_ASSIGN_OR_RAISE(std::string items, SchemaOf(*map.item_field(), where + "{}"));
      return Typed("object", n, ",\"additionalProperties\":" + items);
    }
    default:
      break;
  }
  return Status::TypeError("column '" + where + "': " + t.ToString() +
                           " has no JSON Schema type kelt writes");
}

}  // namespace

Result<std::string> JsonSchemaFromArrow(const arrow::Schema& schema,
                                        std::string_view title) {
  KELT_ASSIGN_OR_RAISE(std::string props, Properties(schema.fields(), ""));
  std::string out = "{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"title\":";
  text::AppendJsonString(&out, title);
  return out + ",\"type\":\"object\"" + props + "}";
}

}  // namespace kelt
