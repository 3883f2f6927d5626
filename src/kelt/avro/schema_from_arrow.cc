// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// An Avro writer schema from an Arrow schema (`kelt produce --auto-register`): the
// decoding table of README.md read backwards, so that a batch encoded with the derived
// schema decodes to the same Arrow types (nullability aside), except where noted there.
#include <arrow/api.h>

#include <string>

#include "kelt/avro.h"
#include "kelt/common/text.h"

namespace kelt {
namespace {

using text::AppendJsonString;

bool IsAvroName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

class SchemaWriter {
 public:
  explicit SchemaWriter(const AvroSchemaFromArrowOptions& o) : o_(o) {}

  Result<std::string> Root(const arrow::Schema& schema) {
    if (!IsAvroName(o_.name)) {
      return Status::Invalid("Avro record name '" + o_.name +
                             "' is not a valid Avro name");
    }
    std::string out;
    KELT_RETURN_NOT_OK(Record(schema.fields(), o_.name, "", &out));
    return out;
  }

 private:
  Status Record(const arrow::FieldVector& fields, const std::string& name,
                const std::string& path, std::string* out) {
    *out += R"({"type":"record","name":)";
    AppendJsonString(out, name);
    if (!o_.name_space.empty() && path.empty()) {
      *out += R"(,"namespace":)";
      AppendJsonString(out, o_.name_space);
    }
    *out += R"(,"fields":[)";
    for (size_t i = 0; i < fields.size(); ++i) {
      const arrow::Field& f = *fields[i];
      std::string fpath = path.empty() ? f.name() : path + "." + f.name();
      if (!IsAvroName(f.name())) {
        return Status::Invalid("column '" + fpath +
                               "': not a valid Avro field name ([A-Za-z_][A-Za-z0-9_]*)");
      }
      if (i) *out += ',';
      *out += R"({"name":)";
      AppendJsonString(out, f.name());
      *out += R"(,"type":)";
      KELT_RETURN_NOT_OK(Nullable(f, fpath, out));
      if (f.nullable()) *out += R"(,"default":null)";
      *out += '}';
    }
    *out += "]}";
    return Status::OK();
  }

  Status Nullable(const arrow::Field& f, const std::string& path, std::string* out) {
    if (f.type()->id() == arrow::Type::NA) {
      *out += R"("null")";
      return Status::OK();
    }
    if (!f.nullable()) return Type(*f.type(), path, out);
    *out += R"(["null",)";
    KELT_RETURN_NOT_OK(Type(*f.type(), path, out));
    *out += ']';
    return Status::OK();
  }

  // A name for a named type at `path`: the record's name and the path, each character
  // an Avro name may not hold ('.', '[', '{', …) as '_'.
  std::string NameFor(const std::string& path) {
    std::string name = o_.name + "_" + path;
    for (char& c : name) {
      bool ok =
          (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
      if (!ok) c = '_';
    }
    return name;
  }

  static std::string Logical(std::string_view base, std::string_view logical) {
    return R"({"type":")" + std::string(base) + R"(","logicalType":")" +
           std::string(logical) + R"("})";
  }

  Status Type(const arrow::DataType& t, const std::string& path, std::string* out) {
    auto refuse = [&](std::string_view why) {
      return Status::Invalid("column '" + path + "': Arrow " + t.ToString() +
                             " has no Avro counterpart" +
                             (why.empty() ? "" : ": " + std::string(why)));
    };
    switch (t.id()) {
      case arrow::Type::NA:
        *out += R"("null")";
        return Status::OK();
      case arrow::Type::BOOL:
        *out += R"("boolean")";
        return Status::OK();
      case arrow::Type::INT8:
      case arrow::Type::INT16:
      case arrow::Type::INT32:
      case arrow::Type::UINT8:
      case arrow::Type::UINT16:
        *out += R"("int")";
        return Status::OK();
      case arrow::Type::INT64:
      case arrow::Type::UINT32:
      case arrow::Type::UINT64:  // values beyond int64 fail their row
        *out += R"("long")";
        return Status::OK();
      case arrow::Type::FLOAT:
        *out += R"("float")";
        return Status::OK();
      case arrow::Type::DOUBLE:
        *out += R"("double")";
        return Status::OK();
      case arrow::Type::STRING:
      case arrow::Type::LARGE_STRING:
        *out += R"("string")";
        return Status::OK();
      case arrow::Type::BINARY:
      case arrow::Type::LARGE_BINARY:
        *out += R"("bytes")";
        return Status::OK();
      case arrow::Type::FIXED_SIZE_BINARY: {
        *out += R"({"type":"fixed","name":)";
        AppendJsonString(out, NameFor(path));
        *out += R"(,"size":)" +
                std::to_string(
                    static_cast<const arrow::FixedSizeBinaryType&>(t).byte_width()) +
                "}";
        return Status::OK();
      }
      case arrow::Type::DECIMAL128:
      case arrow::Type::DECIMAL256: {
        const auto& d = static_cast<const arrow::DecimalType&>(t);
        *out += R"({"type":"bytes","logicalType":"decimal","precision":)" +
                std::to_string(d.precision()) + R"(,"scale":)" +
                std::to_string(d.scale()) + "}";
        return Status::OK();
      }
      case arrow::Type::DATE32:
        *out += Logical("int", "date");
        return Status::OK();
      case arrow::Type::TIME32:
        *out += Logical("int", "time-millis");
        return Status::OK();
      case arrow::Type::TIME64:
        if (static_cast<const arrow::Time64Type&>(t).unit() == arrow::TimeUnit::NANO) {
          return refuse("Avro's finest time of day is time-micros");
        }
        *out += Logical("long", "time-micros");
        return Status::OK();
      case arrow::Type::TIMESTAMP: {
        const auto& ts = static_cast<const arrow::TimestampType&>(t);
        std::string unit = ts.unit() == arrow::TimeUnit::NANO    ? "nanos"
                           : ts.unit() == arrow::TimeUnit::MICRO ? "micros"
                                                                 : "millis";
        *out += Logical(
            "long", (ts.timezone().empty() ? "local-timestamp-" : "timestamp-") + unit);
        return Status::OK();
      }
      case arrow::Type::DICTIONARY: {
        const auto& d = static_cast<const arrow::DictionaryType&>(t);
        // An enum's symbols are not in the type: the values are written as strings.
        return Type(*d.value_type(), path, out);
      }
      case arrow::Type::LIST:
      case arrow::Type::LARGE_LIST: {
        *out += R"({"type":"array","items":)";
        KELT_RETURN_NOT_OK(Nullable(*t.field(0), path + "[]", out));
        *out += '}';
        return Status::OK();
      }
      case arrow::Type::MAP: {
        const auto& m = static_cast<const arrow::MapType&>(t);
        if (m.key_type()->id() != arrow::Type::STRING &&
            m.key_type()->id() != arrow::Type::LARGE_STRING) {
          return refuse("Avro map keys are strings");
        }
        *out += R"({"type":"map","values":)";
        KELT_RETURN_NOT_OK(Nullable(*m.item_field(), path + "{}", out));
        *out += '}';
        return Status::OK();
      }
      case arrow::Type::STRUCT:
        return Record(t.fields(), NameFor(path), path, out);
      default:
        return refuse("");
    }
  }

  const AvroSchemaFromArrowOptions& o_;
};

}  // namespace

Result<std::string> AvroSchemaFromArrow(const arrow::Schema& schema,
                                        const AvroSchemaFromArrowOptions& options) {
  SchemaWriter writer(options);
  return writer.Root(schema);
}

}  // namespace kelt
