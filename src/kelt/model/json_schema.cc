// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// JSON Schema → landing Schema (json_schema.h). Each subschema reduces to a Shape: a
// column type, an object's properties, null, or anything. Its type keywords give one
// shape per type, joined as a union; its $ref, anyOf/oneOf (their branches joined as a
// union) and allOf intersect with it, in that order ($ref first), which is also the
// order of their properties. Objects are then flattened into columns depth first,
// in property order. A property's subschema is reduced only when it is flattened, with
// the $ref targets expanded on the way to it: meeting one of them again is a cycle.
#include "kelt/json_schema.h"

#include <simdjson.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kelt {
namespace {

namespace dom = simdjson::dom;

// How deep objects may nest and $refs chain: far more than a real payload has, far less
// than the stack takes.
constexpr int kMaxDepth = 64;
// How many columns a schema may land as: a schema whose definitions each use the next
// one twice doubles its columns at every level without being recursive.
constexpr size_t kMaxColumns = 10000;

// A key as a JSON pointer token: '~' → "~0", '/' → "~1".
std::string PointerToken(std::string_view key) {
  std::string out;
  for (char ch : key) {
    if (ch == '~') {
      out += "~0";
    } else if (ch == '/') {
      out += "~1";
    } else {
      out += ch;
    }
  }
  return out;
}

// A URI fragment's %XX escapes decoded (a $ref is a URI reference).
std::string PercentDecoded(std::string_view s) {
  auto hex = [](char ch) -> int {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// What a subschema lands as.
struct Shape {
  enum class Kind : uint8_t {
    kAny,     // no type information: the value's JSON text, Utf8
    kNull,    // only null
    kColumn,  // one column of `type`
    kObject,  // an object: its properties become columns (none: its JSON text, Utf8)
  };
  struct Property {
    std::string name;
    dom::element schema;
    std::string pointer;            // where its schema is, for messages
    std::vector<std::string> refs;  // the $ref targets expanded on the way to it
  };

  static Shape Column(TypeId t) {
    Shape s;
    s.kind = Kind::kColumn;
    s.type = t;
    return s;
  }
  static Shape Null() {
    Shape s;
    s.kind = Kind::kNull;
    return s;
  }
  static Shape Object() {
    Shape s;
    s.kind = Kind::kObject;
    return s;
  }

  Kind kind = Kind::kAny;
  TypeId type = TypeId::kUtf8;
  std::vector<Property> properties;
};

// `b`'s properties added to `a`'s; a property both define keeps `a`'s definition.
void MergeProperties(Shape* a, Shape b) {
  for (Shape::Property& p : b.properties) {
    auto same = [&](const Shape::Property& q) { return q.name == p.name; };
    if (std::none_of(a->properties.begin(), a->properties.end(), same)) {
      a->properties.push_back(std::move(p));
    }
  }
}

bool IsNumber(TypeId t) { return t == TypeId::kInt64 || t == TypeId::kFloat64; }
bool IsText(TypeId t) {
  return t == TypeId::kUtf8 || t == TypeId::kTimestamp || t == TypeId::kDate;
}

// A value of either shape (type lists, anyOf, oneOf): unlike types land as JSON text.
Shape Union(Shape a, Shape b) {
  using K = Shape::Kind;
  if (a.kind == K::kNull) return b;
  if (b.kind == K::kNull) return a;
  if (a.kind == K::kAny || b.kind == K::kAny) return Shape{};
  if (a.kind == K::kObject && b.kind == K::kObject) {
    MergeProperties(&a, std::move(b));
    return a;
  }
  if (a.kind == K::kColumn && b.kind == K::kColumn) {
    if (a.type == b.type) return a;
    if (IsNumber(a.type) && IsNumber(b.type)) return Shape::Column(TypeId::kFloat64);
  }
  return Shape::Column(TypeId::kUtf8);
}

// A value of both shapes (allOf, $ref beside other keywords); kInvalid when no value
// can be.
Result<Shape> Intersection(Shape a, Shape b, const std::string& at) {
  using K = Shape::Kind;
  if (a.kind == K::kAny || a.kind == K::kNull) return b;
  if (b.kind == K::kAny || b.kind == K::kNull) return a;
  if (a.kind == K::kObject && b.kind == K::kObject) {
    MergeProperties(&a, std::move(b));
    return a;
  }
  if (a.kind == K::kColumn && b.kind == K::kColumn) {
    if (a.type == b.type) return a;
    if (IsNumber(a.type) && IsNumber(b.type)) return Shape::Column(TypeId::kInt64);
    // A string and a string of a format: the format's type.
    if (IsText(a.type) && IsText(b.type)) return a.type == TypeId::kUtf8 ? b : a;
  }
  auto name = [](const Shape& s) {
    return s.kind == K::kObject ? std::string("an object")
                                : std::string(TypeName(s.type));
  };
  return Status::Invalid(at + ": its subschemas (allOf, $ref) want both " + name(a) +
                         " and " + name(b) + "; no value is both");
}

class Mapper {
 public:
  Status Parse(std::string_view json) {
    if (auto err = parser_.parse(json.data(), json.size()).get(root_)) {
      return Status::ParseError(std::string("the JSON Schema is not JSON: ") +
                                simdjson::error_message(err));
    }
    std::string_view id;
    if (root_["$id"].get(id) == simdjson::SUCCESS) {
      base_id_ = std::string(id.substr(0, id.find('#')));
    }
    return Status::OK();
  }

  Result<Schema> Map() {
    KELT_ASSIGN_OR_RAISE(Shape root, ShapeOf(root_, "#", {}, 0));
    if (root.kind != Shape::Kind::kObject || root.properties.empty()) {
      return Status::Invalid(
          "#: the root schema is not an object with properties (kelt lands an object's "
          "properties as columns)");
    }
    KELT_RETURN_NOT_OK(Flatten(root, {}, "", 0));
    return std::move(schema_);
  }

 private:
  // The shape of the subschema `s`, at pointer `at`, reached through the $ref targets
  // `refs`.
  Result<Shape> ShapeOf(dom::element s, const std::string& at,
                        const std::vector<std::string>& refs, int depth) {
    if (depth > kMaxDepth) {
      return Status::Invalid(at + ": the schema nests deeper than " +
                             std::to_string(kMaxDepth) + " levels");
    }
    bool admits = true;
    if (s.get_bool().get(admits) == simdjson::SUCCESS) {
      if (!admits) return Status::Invalid(at + ": the schema false admits no value");
      return Shape{};
    }
    dom::object o;
    if (s.get_object().get(o) != simdjson::SUCCESS) {
      return Status::Invalid(at + ": expected a schema (an object or a boolean)");
    }
    // A $ref beside other keywords (2019-09 and later) is one more constraint; its
    // properties come first: `{"$ref": base, "properties": {…more}}` extends base.
    Shape shape;
    dom::element ref;
    if (o["$ref"].get(ref) == simdjson::SUCCESS) {
      std::string_view text;
      if (ref.get_string().get(text) != simdjson::SUCCESS) {
        return Status::Invalid(at + "/$ref: expected a string");
      }
      KELT_ASSIGN_OR_RAISE(auto target, Resolve(text, at));
      if (std::find(refs.begin(), refs.end(), target.second) != refs.end()) {
        return Status::Invalid(at + ": $ref '" + std::string(text) +
                               "' refers back to a schema it is inside; a recursive "
                               "schema cannot be flattened into columns");
      }
      std::vector<std::string> deeper = refs;
      deeper.push_back(target.second);
      KELT_ASSIGN_OR_RAISE(shape,
                           ShapeOf(target.first, target.second, deeper, depth + 1));
    }
    KELT_ASSIGN_OR_RAISE(Shape own, OwnShape(o, at, refs, depth));
    KELT_ASSIGN_OR_RAISE(shape, Intersection(std::move(shape), std::move(own), at));
    for (const char* keyword : {"anyOf", "oneOf"}) {
      dom::element branches;
      if (o[keyword].get(branches) != simdjson::SUCCESS) continue;
      KELT_ASSIGN_OR_RAISE(Shape any, Branches(branches, at + "/" + keyword, refs, depth,
                                               /*all=*/false));
      KELT_ASSIGN_OR_RAISE(shape, Intersection(std::move(shape), std::move(any), at));
    }
    dom::element all;
    if (o["allOf"].get(all) == simdjson::SUCCESS) {
      KELT_ASSIGN_OR_RAISE(Shape each, Branches(all, at + "/allOf", refs, depth, true));
      KELT_ASSIGN_OR_RAISE(shape, Intersection(std::move(shape), std::move(each), at));
    }
    return shape;
  }

  // The shape of a schema's own type keywords: `type`, else `properties` or
  // `enum`/`const`.
  Result<Shape> OwnShape(dom::object o, const std::string& at,
                         const std::vector<std::string>& refs, int depth) {
    dom::element type;
    if (o["type"].get(type) == simdjson::SUCCESS) {
      std::string_view name;
      if (type.get_string().get(name) == simdjson::SUCCESS) {
        return TypeShape(name, o, at, refs);
      }
      dom::array names;
      if (type.get_array().get(names) != simdjson::SUCCESS || names.size() == 0) {
        return Status::Invalid(at + "/type: expected a type name or a list of them");
      }
      Shape out = Shape::Null();
      for (dom::element n : names) {
        if (n.get_string().get(name) != simdjson::SUCCESS) {
          return Status::Invalid(at + "/type: expected a list of type names");
        }
        KELT_ASSIGN_OR_RAISE(Shape one, TypeShape(name, o, at, refs));
        out = Union(std::move(out), std::move(one));
      }
      return out;
    }
    if (o["properties"].error() == simdjson::SUCCESS) return ObjectShape(o, at, refs);
    dom::element values;
    if (o["enum"].get(values) == simdjson::SUCCESS) {
      dom::array list;
      if (values.get_array().get(list) != simdjson::SUCCESS) {
        return Status::Invalid(at + "/enum: expected a list of values");
      }
      if (list.size() == 0) return Shape{};
      Shape out = Shape::Null();
      for (dom::element v : list) out = Union(std::move(out), ValueShape(v));
      return out;
    }
    if (o["const"].get(values) == simdjson::SUCCESS) return ValueShape(values);
    return Shape{};
  }

  // The shape of one JSON Schema type name.
  Result<Shape> TypeShape(std::string_view name, dom::object o, const std::string& at,
                          const std::vector<std::string>& refs) {
    if (name == "integer") return Shape::Column(TypeId::kInt64);
    if (name == "number") return Shape::Column(TypeId::kFloat64);
    if (name == "boolean") return Shape::Column(TypeId::kBool);
    if (name == "null") return Shape::Null();
    if (name == "array") return Shape::Column(TypeId::kUtf8);  // its JSON text
    if (name == "object") return ObjectShape(o, at, refs);
    if (name == "string") {
      std::string_view format;
      if (o["format"].get(format) == simdjson::SUCCESS) {
        if (format == "date-time") return Shape::Column(TypeId::kTimestamp);
        if (format == "date") return Shape::Column(TypeId::kDate);
      }
      return Shape::Column(TypeId::kUtf8);
    }
    return Status::Invalid(at + "/type: unknown type '" + std::string(name) +
                           "' (expected string, integer, number, boolean, object, "
                           "array or null)");
  }

  // An object's properties, in order (their subschemas are read when flattened).
  Result<Shape> ObjectShape(dom::object o, const std::string& at,
                            const std::vector<std::string>& refs) {
    Shape out = Shape::Object();
    dom::element properties;
    if (o["properties"].get(properties) != simdjson::SUCCESS) return out;
    dom::object props;
    if (properties.get_object().get(props) != simdjson::SUCCESS) {
      return Status::Invalid(at + "/properties: expected an object");
    }
    for (dom::key_value_pair kv : props) {
      out.properties.push_back({std::string(kv.key), kv.value,
                                at + "/properties/" + PointerToken(kv.key), refs});
    }
    return out;
  }

  // The shape of an enum or const value.
  static Shape ValueShape(dom::element v) {
    switch (v.type()) {
      case dom::element_type::NULL_VALUE:
        return Shape::Null();
      case dom::element_type::BOOL:
        return Shape::Column(TypeId::kBool);
      case dom::element_type::INT64:
        return Shape::Column(TypeId::kInt64);
      case dom::element_type::UINT64:
      case dom::element_type::DOUBLE:
        return Shape::Column(TypeId::kFloat64);
      default:
        return Shape::Column(TypeId::kUtf8);  // a string; an object or array as text
    }
  }

  // The branches of anyOf/oneOf (their union) or of allOf (`all`: their intersection).
  Result<Shape> Branches(dom::element list, const std::string& at,
                         const std::vector<std::string>& refs, int depth, bool all) {
    dom::array branches;
    if (list.get_array().get(branches) != simdjson::SUCCESS || branches.size() == 0) {
      return Status::Invalid(at + ": expected a non-empty list of schemas");
    }
    std::optional<Shape> out;
    size_t i = 0;
    for (dom::element b : branches) {
      KELT_ASSIGN_OR_RAISE(Shape one,
                           ShapeOf(b, at + "/" + std::to_string(i++), refs, depth + 1));
      if (!out) {
        out = std::move(one);
      } else if (all) {
        KELT_ASSIGN_OR_RAISE(out, Intersection(std::move(*out), std::move(one), at));
      } else {
        out = Union(std::move(*out), std::move(one));
      }
    }
    return std::move(*out);
  }

  // The target of a $ref within this document, and its canonical name ("#/…").
  Result<std::pair<dom::element, std::string>> Resolve(std::string_view ref,
                                                       const std::string& at) {
    std::string_view fragment = ref;
    if (!base_id_.empty() && ref.substr(0, base_id_.size()) == base_id_) {
      fragment = ref.substr(base_id_.size());
    }
    const std::string quoted = "$ref '" + std::string(ref) + "'";
    if (fragment.empty() || fragment[0] != '#') {
      return Status::Invalid(at + ": " + quoted +
                             " is outside this schema; kelt resolves a $ref within the "
                             "subject's own schema (#, #/$defs/…, #/definitions/…)");
    }
    std::string pointer = PercentDecoded(fragment.substr(1));
    if (!pointer.empty() && pointer[0] != '/') {
      return Status::Invalid(at + ": " + quoted +
                             " names an anchor; kelt resolves JSON pointers (#/$defs/…)");
    }
    dom::element target;
    if (root_.at_pointer(pointer).get(target) != simdjson::SUCCESS) {
      return Status::Invalid(at + ": " + quoted + " points at nothing in this schema");
    }
    return std::pair{target, "#" + pointer};
  }

  // One column per property of `object` below `path`, named after `prefix`.
  Status Flatten(const Shape& object, const std::vector<std::string>& path,
                 const std::string& prefix, int depth) {
    for (const Shape::Property& p : object.properties) {
      if (p.name.empty()) {
        return Status::Invalid(p.pointer +
                               ": an empty property name cannot name a column");
      }
      KELT_ASSIGN_OR_RAISE(Shape shape, ShapeOf(p.schema, p.pointer, p.refs, depth + 1));
      std::string name = prefix.empty() ? p.name : prefix + "_" + p.name;
      std::vector<std::string> source = path;
      source.push_back(p.name);
      if (shape.kind == Shape::Kind::kObject && !shape.properties.empty()) {
        KELT_RETURN_NOT_OK(Flatten(shape, source, name, depth + 1));
        continue;
      }
      const TypeId type = shape.kind == Shape::Kind::kColumn ? shape.type : TypeId::kUtf8;
      if (schema_.fields.size() == kMaxColumns) {
        return Status::Invalid(p.pointer + ": the schema lands as more than " +
                               std::to_string(kMaxColumns) + " columns");
      }
      auto [it, added] = pointer_of_.emplace(name, p.pointer);
      if (!added) {
        return Status::Invalid(p.pointer + ": lands as column '" + name + "', as " +
                               it->second + " does; rename one of them");
      }
      Field f(std::move(name), type);
      if (source.size() > 1) f.source = std::move(source);
      schema_.fields.push_back(std::move(f));
    }
    return Status::OK();
  }

  dom::parser parser_;
  dom::element root_;
  std::string base_id_;  // the root's $id: a $ref may start with it
  Schema schema_;
  std::map<std::string, std::string> pointer_of_;  // column name → its property's pointer
};

}  // namespace

Result<Schema> SchemaFromJsonSchema(std::string_view json_schema) {
  Mapper mapper;
  KELT_RETURN_NOT_OK(mapper.Parse(json_schema));
  return mapper.Map();
}

}  // namespace kelt
