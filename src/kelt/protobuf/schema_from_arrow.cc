// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Arrow columns → a proto3 message (the produce side's auto_register): the inverse of
// plan.cc's mapping, so that what ProtobufEncoder writes lands back as the same columns.
#include <arrow/api.h>

#include <set>
#include <string>

#include "kelt/protobuf.h"

namespace kelt {
namespace {

bool IsIdentifier(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// A message name for a struct field: its name in CamelCase ("ship_to" → "ShipTo"),
// made distinct from the names already used in the same scope.
std::string MessageNameFor(const std::string& field, std::set<std::string>* taken) {
  std::string name;
  bool up = true;
  for (char c : field) {
    if (c == '_') {
      up = true;
      continue;
    }
    name += up && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    up = false;
  }
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) name.insert(0, "M");
  std::string unique = name;
  for (int n = 2; taken->count(unique) > 0; ++n) unique = name + std::to_string(n);
  taken->insert(unique);
  return unique;
}

class ProtoWriter {
 public:
  bool uses_timestamp = false;
  bool uses_duration = false;

  // The scalar type of `type`, or "" when it is no scalar.
  std::string Scalar(const arrow::DataType& type) {
    switch (type.id()) {
      case arrow::Type::BOOL:
        return "bool";
      case arrow::Type::INT8:
      case arrow::Type::INT16:
      case arrow::Type::INT32:
        return "int32";
      case arrow::Type::INT64:
        return "int64";
      case arrow::Type::UINT8:
      case arrow::Type::UINT16:
      case arrow::Type::UINT32:
        return "uint32";
      case arrow::Type::UINT64:
        return "uint64";
      case arrow::Type::HALF_FLOAT:
      case arrow::Type::FLOAT:
        return "float";
      case arrow::Type::DOUBLE:
        return "double";
      case arrow::Type::STRING:
      case arrow::Type::LARGE_STRING:
      case arrow::Type::STRING_VIEW:
        return "string";
      case arrow::Type::BINARY:
      case arrow::Type::LARGE_BINARY:
      case arrow::Type::BINARY_VIEW:
      case arrow::Type::FIXED_SIZE_BINARY:
        return "bytes";
      case arrow::Type::TIMESTAMP:
        uses_timestamp = true;
        return "google.protobuf.Timestamp";
      case arrow::Type::DURATION:
        uses_duration = true;
        return "google.protobuf.Duration";
      default:
        return "";
    }
  }

  // The declarations of `fields` as the body of a message, at `indent`; nested messages
  // for struct fields are declared first.
  Status Message(const std::string& name, const arrow::FieldVector& fields,
                 const std::string& path, const std::string& indent, std::string* out) {
    std::string nested, body;
    std::set<std::string> taken;  // a nested message may not share a field's name
    for (const auto& f : fields) taken.insert(f->name());
    int number = 0;
    for (const auto& f : fields) {
      const std::string where = path + f->name();
      if (!IsIdentifier(f->name())) {
        return Status::Invalid("column '" + where +
                               "': not a Protobuf field name (letters, digits, _)");
      }
      std::string label, type;
      KELT_RETURN_NOT_OK(
          FieldType(*f, where, indent + "  ", &taken, &nested, &label, &type));
      body += indent + "  " + label + type + " " + f->name() + " = " +
              std::to_string(++number) + ";\n";
    }
    *out += indent + "message " + name + " {\n" + nested + body + indent + "}\n";
    return Status::OK();
  }

 private:
  Status FieldType(const arrow::Field& f, const std::string& where,
                   const std::string& indent, std::set<std::string>* taken,
                   std::string* nested, std::string* label, std::string* type) {
    const arrow::DataType& t = *f.type();
    std::string scalar = Scalar(t);
    if (!scalar.empty()) {
      // Messages (Timestamp, Duration) have presence of their own.
      bool message = t.id() == arrow::Type::TIMESTAMP || t.id() == arrow::Type::DURATION;
      *label = f.nullable() && !message ? "optional " : "";
      *type = scalar;
      return Status::OK();
    }
    switch (t.id()) {
      case arrow::Type::STRUCT: {
        *type = MessageNameFor(f.name(), taken);
        *label = "";
        return Message(*type, t.fields(), where + ".", indent, nested);
      }
      case arrow::Type::LIST:
      case arrow::Type::LARGE_LIST: {
        const auto& item = *t.field(0);
        if (item.type()->id() == arrow::Type::LIST ||
            item.type()->id() == arrow::Type::LARGE_LIST ||
            item.type()->id() == arrow::Type::MAP) {
          return Status::TypeError("column '" + where + "': " + t.ToString() +
                                   " has no Protobuf type (a repeated field of "
                                   "repeated fields)");
        }
        std::string ignored;
        KELT_RETURN_NOT_OK(FieldType(*item.WithName(f.name()), where + "[]", indent,
                                     taken, nested, &ignored, type));
        *label = "repeated ";
        return Status::OK();
      }
      case arrow::Type::MAP: {
        const auto& map = static_cast<const arrow::MapType&>(t);
        std::string key = Scalar(*map.key_type());
        if (key.empty() || key == "bool" || key == "float" || key == "double" ||
            key == "bytes" || key.find('.') != std::string::npos) {
          return Status::TypeError("column '" + where + "': " + t.ToString() +
                                   " has no Protobuf type (map keys are integers or "
                                   "strings)");
        }
        const auto& item = *map.item_field();
        if (item.type()->id() == arrow::Type::LIST ||
            item.type()->id() == arrow::Type::LARGE_LIST ||
            item.type()->id() == arrow::Type::MAP) {
          return Status::TypeError("column '" + where + "': " + t.ToString() +
                                   " has no Protobuf type (a map of repeated values)");
        }
        std::string ignored, value;
        KELT_RETURN_NOT_OK(FieldType(*item.WithName(f.name() + "_value"), where + "{}",
                                     indent, taken, nested, &ignored, &value));
        *label = "";
        *type = "map<" + key + ", " + value + ">";
        return Status::OK();
      }
      default:
        return Status::TypeError("column '" + where + "': " + t.ToString() +
                                 " has no Protobuf type kelt writes");
    }
  }
};

}  // namespace

Result<std::string> ProtobufSchemaFromArrow(
    const arrow::Schema& schema, const ProtobufSchemaFromArrowOptions& options) {
  if (!IsIdentifier(options.message_name)) {
    return Status::Invalid("'" + options.message_name +
                           "' is not a Protobuf message name (letters, digits, _)");
  }
  ProtoWriter writer;
  std::string message;
  KELT_RETURN_NOT_OK(
      writer.Message(options.message_name, schema.fields(), "", "", &message));
  std::string out = "syntax = \"proto3\";\n";
  if (!options.package.empty()) out += "package " + options.package + ";\n";
  if (writer.uses_timestamp) out += "import \"google/protobuf/timestamp.proto\";\n";
  if (writer.uses_duration) out += "import \"google/protobuf/duration.proto\";\n";
  return out + "\n" + message;
}

}  // namespace kelt
