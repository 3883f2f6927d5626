// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Avro schema JSON → a graph of AvroNodes. Parsed with simdjson rather than Avro C:
// Avro C 1.11's schema API (avro/schema.h) has no logical types, no aliases and no
// field defaults (it drops those attributes while parsing), which are what schema
// resolution and the Arrow mapping need.
#include <simdjson.h>

#include <cmath>
#include <string>
#include <unordered_map>
#include <utility>

#include "kelt/avro.h"
#include "kelt/avro/plan.h"
#include "kelt/model/json_dom.h"

namespace kelt {

namespace dom = simdjson::dom;

std::string_view AvroTypeName(AvroType type) {
  switch (type) {
    case AvroType::kNull:
      return "null";
    case AvroType::kBoolean:
      return "boolean";
    case AvroType::kInt:
      return "int";
    case AvroType::kLong:
      return "long";
    case AvroType::kFloat:
      return "float";
    case AvroType::kDouble:
      return "double";
    case AvroType::kBytes:
      return "bytes";
    case AvroType::kString:
      return "string";
    case AvroType::kRecord:
      return "record";
    case AvroType::kEnum:
      return "enum";
    case AvroType::kArray:
      return "array";
    case AvroType::kMap:
      return "map";
    case AvroType::kUnion:
      return "union";
    case AvroType::kFixed:
      return "fixed";
  }
  return "?";
}

std::string_view AvroLogicalTypeName(AvroLogicalType type) {
  switch (type) {
    case AvroLogicalType::kNone:
      return "";
    case AvroLogicalType::kDecimal:
      return "decimal";
    case AvroLogicalType::kUuid:
      return "uuid";
    case AvroLogicalType::kDate:
      return "date";
    case AvroLogicalType::kTimeMillis:
      return "time-millis";
    case AvroLogicalType::kTimeMicros:
      return "time-micros";
    case AvroLogicalType::kTimestampMillis:
      return "timestamp-millis";
    case AvroLogicalType::kTimestampMicros:
      return "timestamp-micros";
    case AvroLogicalType::kTimestampNanos:
      return "timestamp-nanos";
    case AvroLogicalType::kLocalTimestampMillis:
      return "local-timestamp-millis";
    case AvroLogicalType::kLocalTimestampMicros:
      return "local-timestamp-micros";
    case AvroLogicalType::kLocalTimestampNanos:
      return "local-timestamp-nanos";
  }
  return "?";
}

struct AvroSchema::Graph {
  std::vector<std::unique_ptr<AvroNode>> nodes;
  const AvroNode* root = nullptr;
};

namespace {

// Deeper schemas are refused: the plan compiler and the decoder recurse once per level.
constexpr int kMaxDepth = 128;

std::optional<AvroType> PrimitiveType(std::string_view name) {
  static constexpr std::pair<std::string_view, AvroType> kPrimitives[] = {
      {"null", AvroType::kNull},   {"boolean", AvroType::kBoolean},
      {"int", AvroType::kInt},     {"long", AvroType::kLong},
      {"float", AvroType::kFloat}, {"double", AvroType::kDouble},
      {"bytes", AvroType::kBytes}, {"string", AvroType::kString}};
  for (const auto& [n, t] : kPrimitives) {
    if (n == name) return t;
  }
  return std::nullopt;
}

// [A-Za-z_][A-Za-z0-9_]*
bool IsValidName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    if (!alpha && (i == 0 || c < '0' || c > '9')) return false;
  }
  return true;
}

// A dot-separated sequence of names (or "" for the null namespace).
bool IsValidFullName(std::string_view s) {
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    if (!IsValidName(s.substr(start, dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// (Appended rather than concatenated: g++ 12 warns wrongly about "'" + s + "'".)
std::string Quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('\'');
  out.append(s);
  out.push_back('\'');
  return out;
}

std::string Sub(std::string_view path, std::string_view key) {
  return model::JoinPath(path, key);
}
std::string Index(std::string_view path, std::string_view key, size_t i) {
  return model::JoinPath(path, std::string(key) + "[" + std::to_string(i) + "]");
}

Status Error(std::string_view path, std::string_view message) {
  return Status::Invalid(model::Located(path, message));
}

// floor(log10(2^(8n-1) - 1)): the digits a two's-complement fixed of n bytes holds.
int32_t MaxDecimalDigits(int64_t size) {
  if (size <= 0) return 0;
  if (size > 64) return 1000;
  return static_cast<int32_t>(
      std::floor(static_cast<double>(8 * size - 1) * std::log10(2.0)));
}

class Parser {
 public:
  explicit Parser(AvroSchema::Graph* graph) : graph_(graph) {}

  Status Parse(dom::element e, const std::string& space, const std::string& path,
               int depth, const AvroNode** out) {
    if (depth > kMaxDepth) {
      return Error(path,
                   "schema nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    switch (e.type()) {
      case dom::element_type::STRING: {
        return Reference(e.get_string().value_unsafe(), space, path, out);
      }
      case dom::element_type::ARRAY:
        return ParseUnion(e.get_array().value_unsafe(), space, path, depth, out);
      case dom::element_type::OBJECT:
        return ParseObject(e.get_object().value_unsafe(), space, path, depth, out);
      default:
        return Error(path, "expected a type name, an object or a union (array), got " +
                               model::Excerpt(e));
    }
  }

 private:
  AvroNode* NewNode(AvroType type) {
    graph_->nodes.push_back(std::make_unique<AvroNode>());
    AvroNode* node = graph_->nodes.back().get();
    node->type = type;
    return node;
  }

  // A type name: a primitive, or a named type defined before (Avro forbids forward
  // references; a record may refer to itself from its own fields).
  Status Reference(std::string_view name, const std::string& space,
                   const std::string& path, const AvroNode** out) {
    if (auto prim = PrimitiveType(name)) {
      *out = NewNode(*prim);
      return Status::OK();
    }
    // A simple name is looked up in the enclosing namespace first, then in the null
    // namespace (as Java's parser does).
    if (name.find('.') == std::string_view::npos && !space.empty()) {
      auto it = named_.find(space + "." + std::string(name));
      if (it != named_.end()) {
        *out = it->second;
        return Status::OK();
      }
    }
    auto it = named_.find(std::string(name));
    if (it != named_.end()) {
      *out = it->second;
      return Status::OK();
    }
    return Error(path, "unknown type " + Quoted(name));
  }

  Status ParseUnion(dom::array arr, const std::string& space, const std::string& path,
                    int depth, const AvroNode** out) {
    AvroNode* node = NewNode(AvroType::kUnion);
    size_t i = 0;
    for (dom::element b : arr) {
      const std::string bpath = std::string(path) + "[" + std::to_string(i) + "]";
      const AvroNode* branch = nullptr;
      KELT_RETURN_NOT_OK(Parse(b, space, bpath, depth + 1, &branch));
      if (branch->type == AvroType::kUnion) {
        return Error(bpath, "a union may not immediately contain another union");
      }
      for (const AvroNode* other : node->branches) {
        const bool named = branch->type == AvroType::kRecord ||
                           branch->type == AvroType::kEnum ||
                           branch->type == AvroType::kFixed;
        if (other->type == branch->type && (!named || other->name == branch->name)) {
          return Error(
              bpath,
              "the union already has a branch of type " +
                  Quoted(named ? branch->name : std::string(AvroTypeName(branch->type))));
        }
      }
      node->branches.push_back(branch);
      ++i;
    }
    if (node->branches.empty()) return Error(path, "a union needs at least one branch");
    *out = node;
    return Status::OK();
  }

  Status ParseObject(dom::object obj, const std::string& space, const std::string& path,
                     int depth, const AvroNode** out) {
    dom::element type_elem;
    if (obj["type"].get(type_elem) != simdjson::SUCCESS) {
      return Error(path, "missing key 'type'");
    }
    std::string_view type;
    if (type_elem.get_string().get(type) != simdjson::SUCCESS) {
      // {"type": {...}} and {"type": [...]} are schemas wrapped once more; Avro's own
      // parsers refuse them, and so does kelt, by name.
      return Error(Sub(path, "type"),
                   "expected a type name, got " + model::Excerpt(type_elem));
    }
    if (auto prim = PrimitiveType(type)) {
      AvroNode* node = NewNode(*prim);
      ApplyLogicalType(obj, node);
      *out = node;
      return Status::OK();
    }
    if (type == "record" || type == "error")
      return ParseRecord(obj, space, path, depth, out);
    if (type == "enum") return ParseEnum(obj, space, path, out);
    if (type == "fixed") return ParseFixed(obj, space, path, out);
    if (type == "array" || type == "map") {
      const char* key = type == "array" ? "items" : "values";
      dom::element items;
      if (obj[key].get(items) != simdjson::SUCCESS) {
        return Error(path, "missing key " + Quoted(key));
      }
      AvroNode* node = NewNode(type == "array" ? AvroType::kArray : AvroType::kMap);
      KELT_RETURN_NOT_OK(Parse(items, space, Sub(path, key), depth + 1, &node->items));
      *out = node;
      return Status::OK();
    }
    // {"type": "com.example.Named"}: a reference written as an object.
    return Reference(type, space, Sub(path, "type"), out);
  }

  // Reads name, namespace and aliases of a named type, registers it and returns its
  // namespace (for the names defined inside it).
  Status StartNamed(dom::object obj, const std::string& space, const std::string& path,
                    AvroNode* node, std::string* inner_space) {
    std::string_view name;
    if (obj["name"].get_string().get(name) != simdjson::SUCCESS) {
      return Error(path, "missing key 'name' (a string)");
    }
    std::string ns = space;
    dom::element ns_elem;
    if (obj["namespace"].get(ns_elem) == simdjson::SUCCESS && !ns_elem.is_null()) {
      std::string_view s;
      if (ns_elem.get_string().get(s) != simdjson::SUCCESS) {
        return Error(Sub(path, "namespace"), "expected a string");
      }
      ns = std::string(s);
    }
    std::string full;
    if (name.find('.') != std::string_view::npos) {
      full = std::string(name);  // a full name: the namespace attribute is ignored
    } else {
      full = ns.empty() ? std::string(name) : ns + "." + std::string(name);
    }
    if (!IsValidFullName(full)) {
      return Error(Sub(path, "name"), "invalid name " + Quoted(full) +
                                          " (names are [A-Za-z_][A-Za-z0-9_]*, dotted)");
    }
    if (PrimitiveType(full)) {
      return Error(Sub(path, "name"), "a named type may not be called " + Quoted(full));
    }
    if (!named_.emplace(full, node).second) {
      return Error(Sub(path, "name"), "type " + Quoted(full) + " is defined twice");
    }
    node->name = full;
    const size_t dot = full.rfind('.');
    *inner_space = dot == std::string::npos ? std::string() : full.substr(0, dot);
    dom::element aliases;
    if (obj["aliases"].get(aliases) == simdjson::SUCCESS) {
      dom::array arr;
      if (aliases.get_array().get(arr) != simdjson::SUCCESS) {
        return Error(Sub(path, "aliases"), "expected an array of strings");
      }
      for (dom::element a : arr) {
        std::string_view s;
        if (a.get_string().get(s) != simdjson::SUCCESS) {
          return Error(Sub(path, "aliases"), "expected an array of strings");
        }
        // An alias is relative to the namespace of the name it is an alias for.
        node->aliases.push_back(s.find('.') != std::string_view::npos ||
                                        inner_space->empty()
                                    ? std::string(s)
                                    : *inner_space + "." + std::string(s));
      }
    }
    return Status::OK();
  }

  Status ParseRecord(dom::object obj, const std::string& space, const std::string& path,
                     int depth, const AvroNode** out) {
    AvroNode* node = NewNode(AvroType::kRecord);
    std::string inner;
    KELT_RETURN_NOT_OK(StartNamed(obj, space, path, node, &inner));
    dom::array fields;
    if (obj["fields"].get_array().get(fields) != simdjson::SUCCESS) {
      return Error(path, "missing key 'fields' (an array)");
    }
    size_t i = 0;
    for (dom::element f : fields) {
      const std::string fpath = Index(path, "fields", i++);
      dom::object fobj;
      if (f.get_object().get(fobj) != simdjson::SUCCESS) {
        return Error(fpath, "expected an object, got " + model::Excerpt(f));
      }
      AvroField field;
      std::string_view name;
      if (fobj["name"].get_string().get(name) != simdjson::SUCCESS) {
        return Error(fpath, "missing key 'name' (a string)");
      }
      if (!IsValidName(name)) {
        return Error(Sub(fpath, "name"), "invalid field name " + Quoted(name) +
                                             " (names are [A-Za-z_][A-Za-z0-9_]*)");
      }
      for (const AvroField& other : node->fields) {
        if (other.name == name) {
          return Error(Sub(fpath, "name"), "field " + Quoted(name) + " is defined twice");
        }
      }
      field.name = std::string(name);
      dom::element type;
      if (fobj["type"].get(type) != simdjson::SUCCESS) {
        return Error(fpath, "missing key 'type'");
      }
      KELT_RETURN_NOT_OK(Parse(type, inner, Sub(fpath, "type"), depth + 1, &field.type));
      dom::element def;
      if (fobj["default"].get(def) == simdjson::SUCCESS) {
        field.default_json = simdjson::to_string(def);
      }
      dom::element aliases;
      if (fobj["aliases"].get(aliases) == simdjson::SUCCESS) {
        dom::array arr;
        if (aliases.get_array().get(arr) != simdjson::SUCCESS) {
          return Error(Sub(fpath, "aliases"), "expected an array of strings");
        }
        for (dom::element a : arr) {
          std::string_view s;
          if (a.get_string().get(s) != simdjson::SUCCESS) {
            return Error(Sub(fpath, "aliases"), "expected an array of strings");
          }
          field.aliases.emplace_back(s);
        }
      }
      node->fields.push_back(std::move(field));
    }
    *out = node;
    return Status::OK();
  }

  Status ParseEnum(dom::object obj, const std::string& space, const std::string& path,
                   const AvroNode** out) {
    AvroNode* node = NewNode(AvroType::kEnum);
    std::string inner;
    KELT_RETURN_NOT_OK(StartNamed(obj, space, path, node, &inner));
    dom::array symbols;
    if (obj["symbols"].get_array().get(symbols) != simdjson::SUCCESS) {
      return Error(path, "missing key 'symbols' (an array)");
    }
    size_t i = 0;
    for (dom::element s : symbols) {
      std::string_view sym;
      const std::string spath = Index(path, "symbols", i++);
      if (s.get_string().get(sym) != simdjson::SUCCESS || !IsValidName(sym)) {
        return Error(spath, "invalid symbol " + model::Excerpt(s) +
                                " (symbols are [A-Za-z_][A-Za-z0-9_]*)");
      }
      for (const std::string& other : node->symbols) {
        if (other == sym)
          return Error(spath, "symbol " + Quoted(sym) + " is defined twice");
      }
      node->symbols.emplace_back(sym);
    }
    dom::element def;
    if (obj["default"].get(def) == simdjson::SUCCESS) {
      std::string_view sym;
      if (def.get_string().get(sym) != simdjson::SUCCESS) {
        return Error(Sub(path, "default"),
                     "expected a symbol, got " + model::Excerpt(def));
      }
      for (size_t k = 0; k < node->symbols.size(); ++k) {
        if (node->symbols[k] == sym) node->enum_default = static_cast<int32_t>(k);
      }
      if (node->enum_default < 0) {
        return Error(Sub(path, "default"),
                     "the default " + Quoted(sym) + " is not one of the symbols");
      }
    }
    *out = node;
    return Status::OK();
  }

  Status ParseFixed(dom::object obj, const std::string& space, const std::string& path,
                    const AvroNode** out) {
    AvroNode* node = NewNode(AvroType::kFixed);
    std::string inner;
    KELT_RETURN_NOT_OK(StartNamed(obj, space, path, node, &inner));
    dom::element size_elem;
    int64_t size = -1;
    if (obj["size"].get(size_elem) != simdjson::SUCCESS ||
        !model::GetInt64(size_elem, &size) || size < 0 ||
        size > std::numeric_limits<int32_t>::max()) {
      return Error(Sub(path, "size"), "expected a size in bytes (0 to 2^31-1)");
    }
    node->size = static_cast<int32_t>(size);
    ApplyLogicalType(obj, node);
    *out = node;
    return Status::OK();
  }

  // Sets the node's logical type when `obj` names one kelt maps and it is valid for
  // the node; otherwise leaves kNone (the spec: ignore unknown and invalid ones).
  static void ApplyLogicalType(dom::object obj, AvroNode* node) {
    std::string_view name;
    if (obj["logicalType"].get_string().get(name) != simdjson::SUCCESS) return;
    const AvroType t = node->type;
    auto set_if = [&](AvroType want, AvroLogicalType lt) {
      if (t == want) node->logical_type = lt;
    };
    if (name == "decimal") {
      if (t != AvroType::kBytes && t != AvroType::kFixed) return;
      int64_t precision = 0, scale = 0;
      dom::element e;
      if (obj["precision"].get(e) != simdjson::SUCCESS ||
          !model::GetInt64(e, &precision)) {
        return;
      }
      if (obj["scale"].get(e) == simdjson::SUCCESS && !model::GetInt64(e, &scale)) return;
      // Arrow's widest decimal holds 76 digits; a wider one stays bytes/fixed.
      const int64_t max =
          t == AvroType::kFixed ? std::min(MaxDecimalDigits(node->size), 76) : 76;
      if (precision < 1 || precision > max || scale < 0 || scale > precision) return;
      node->logical_type = AvroLogicalType::kDecimal;
      node->precision = static_cast<int32_t>(precision);
      node->scale = static_cast<int32_t>(scale);
    } else if (name == "uuid") {
      set_if(AvroType::kString, AvroLogicalType::kUuid);
    } else if (name == "date") {
      set_if(AvroType::kInt, AvroLogicalType::kDate);
    } else if (name == "time-millis") {
      set_if(AvroType::kInt, AvroLogicalType::kTimeMillis);
    } else if (name == "time-micros") {
      set_if(AvroType::kLong, AvroLogicalType::kTimeMicros);
    } else if (name == "timestamp-millis") {
      set_if(AvroType::kLong, AvroLogicalType::kTimestampMillis);
    } else if (name == "timestamp-micros") {
      set_if(AvroType::kLong, AvroLogicalType::kTimestampMicros);
    } else if (name == "timestamp-nanos") {
      set_if(AvroType::kLong, AvroLogicalType::kTimestampNanos);
    } else if (name == "local-timestamp-millis") {
      set_if(AvroType::kLong, AvroLogicalType::kLocalTimestampMillis);
    } else if (name == "local-timestamp-micros") {
      set_if(AvroType::kLong, AvroLogicalType::kLocalTimestampMicros);
    } else if (name == "local-timestamp-nanos") {
      set_if(AvroType::kLong, AvroLogicalType::kLocalTimestampNanos);
    }
  }

  AvroSchema::Graph* graph_;
  std::unordered_map<std::string, AvroNode*> named_;
};

}  // namespace

AvroSchema::AvroSchema(std::shared_ptr<const Graph> graph) : graph_(std::move(graph)) {}

Result<AvroSchema> AvroSchema::Parse(std::string_view json) {
  dom::element root;
  KELT_RETURN_NOT_OK(model::ParseDocument(json, &root));
  auto graph = std::make_shared<Graph>();
  Parser parser(graph.get());
  KELT_RETURN_NOT_OK(parser.Parse(root, "", "", 0, &graph->root));
  return AvroSchema(std::move(graph));
}

const AvroNode& AvroSchema::root() const { return *graph_->root; }

Result<std::shared_ptr<arrow::Schema>> AvroSchema::ToArrowSchema() const {
  return avro::ReaderArrowSchema(root());
}

}  // namespace kelt
