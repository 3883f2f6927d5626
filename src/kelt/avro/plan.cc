// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The plan compiler: lays out the output columns from the reader's schema, then walks
// the writer's and the reader's schema together (Avro's "Schema Resolution") and emits
// flat programs. Field names, aliases, enum symbols and union branches are all matched
// here, once; defaults are encoded here into Avro bytes that the decoder reads like any
// record's, so the hot loop has one way to produce a value.
#include "kelt/avro/plan.h"

#include <arrow/api.h>
#include <simdjson.h>

#include <cstring>
#include <limits>
#include <unordered_map>

#include "kelt/common/arrow_status.h"
#include "kelt/model/json_dom.h"

namespace kelt::avro {

namespace dom = simdjson::dom;

std::string_view OpCodeName(OpCode code) {
  switch (code) {
    case OpCode::kNull:
      return "null";
    case OpCode::kNullInto:
      return "null_into";
    case OpCode::kBool:
      return "bool";
    case OpCode::kInt:
      return "int";
    case OpCode::kIntToLong:
      return "int_to_long";
    case OpCode::kIntToFloat:
      return "int_to_float";
    case OpCode::kIntToDouble:
      return "int_to_double";
    case OpCode::kLong:
      return "long";
    case OpCode::kLongToFloat:
      return "long_to_float";
    case OpCode::kLongToDouble:
      return "long_to_double";
    case OpCode::kFloat:
      return "float";
    case OpCode::kFloatToDouble:
      return "float_to_double";
    case OpCode::kDouble:
      return "double";
    case OpCode::kString:
      return "string";
    case OpCode::kBytesToString:
      return "bytes_to_string";
    case OpCode::kBytes:
      return "bytes";
    case OpCode::kFixed:
      return "fixed";
    case OpCode::kDecimalBytes:
      return "decimal_bytes";
    case OpCode::kDecimalFixed:
      return "decimal_fixed";
    case OpCode::kEnum:
      return "enum";
    case OpCode::kRecord:
      return "record";
    case OpCode::kArray:
      return "array";
    case OpCode::kMap:
      return "map";
    case OpCode::kUnionTag:
      return "union_tag";
    case OpCode::kUnion:
      return "union";
    case OpCode::kDefault:
      return "default";
    case OpCode::kFail:
      return "fail";
    case OpCode::kSkip:
      return "skip";
    case OpCode::kSkipVarint:
      return "skip_varint";
    case OpCode::kSkipBytes:
      return "skip_bytes";
    case OpCode::kSkipArray:
      return "skip_array";
    case OpCode::kSkipMap:
      return "skip_map";
  }
  return "?";
}

namespace {

// (Appended rather than concatenated: g++ 12 warns wrongly about "'" + s + "'".)
std::string Quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('\'');
  out.append(s);
  out.push_back('\'');
  return out;
}

std::string Unqualified(std::string_view name) {
  const size_t dot = name.rfind('.');
  return std::string(dot == std::string_view::npos ? name : name.substr(dot + 1));
}

bool IsNamed(const AvroNode& n) {
  return n.type == AvroType::kRecord || n.type == AvroType::kEnum ||
         n.type == AvroType::kFixed;
}

// "int", "long (timestamp-millis)", "record 'com.example.Order'".
std::string TypeLabel(const AvroNode& n) {
  std::string out(AvroTypeName(n.type));
  if (IsNamed(n)) out += " " + Quoted(n.name);
  if (n.logical_type != AvroLogicalType::kNone) {
    out += " (" + std::string(AvroLogicalTypeName(n.logical_type));
    if (n.logical_type == AvroLogicalType::kDecimal) {
      out += "(" + std::to_string(n.precision) + "," + std::to_string(n.scale) + ")";
    }
    out += ")";
  }
  return out;
}

// The writer's named type is the reader's: same (unqualified) name, or one of the
// reader's aliases (the spec's "act as though the writer's name were the reader's").
bool NamesMatch(const AvroNode& w, const AvroNode& r) {
  if (w.name == r.name || Unqualified(w.name) == Unqualified(r.name)) return true;
  for (const std::string& alias : r.aliases) {
    if (alias == w.name || Unqualified(alias) == Unqualified(w.name)) return true;
  }
  return false;
}

bool SameKind(const AvroNode& w, const AvroNode& r) {
  if (w.type != r.type) return false;
  if (!IsNamed(r)) return true;
  if (!NamesMatch(w, r)) return false;
  return r.type != AvroType::kFixed || w.size == r.size;
}

bool Promotable(AvroType w, AvroType r) {
  switch (w) {
    case AvroType::kInt:
      return r == AvroType::kLong || r == AvroType::kFloat || r == AvroType::kDouble;
    case AvroType::kLong:
      return r == AvroType::kFloat || r == AvroType::kDouble;
    case AvroType::kFloat:
      return r == AvroType::kDouble;
    case AvroType::kString:
      return r == AvroType::kBytes;
    case AvroType::kBytes:
      return r == AvroType::kString;
    default:
      return false;
  }
}

// The spec's "match" between two non-union schemas.
bool Matches(const AvroNode& w, const AvroNode& r) {
  return SameKind(w, r) || Promotable(w.type, r.type);
}

// The reader union's branch a (non-union) writer value goes to: the first of the same
// type (and name), else the first it promotes to, as Java's resolver picks; -1 if none.
int32_t BestBranch(const AvroNode& w, const AvroNode& r_union) {
  for (size_t i = 0; i < r_union.branches.size(); ++i) {
    if (SameKind(w, *r_union.branches[i])) return static_cast<int32_t>(i);
  }
  for (size_t i = 0; i < r_union.branches.size(); ++i) {
    if (Promotable(w.type, r_union.branches[i]->type)) return static_cast<int32_t>(i);
  }
  return -1;
}

// The label of a dense union's child field: the branch's type name (a named type's
// name without its namespace).
std::string BranchName(const AvroNode& n) {
  return IsNamed(n) ? Unqualified(n.name) : std::string(AvroTypeName(n.type));
}

// The fewest bytes a value of `n` takes (0 for null, empty records, fixed(0)).
int32_t MinSize(const AvroNode& n, int depth = 0) {
  if (depth > 256) return 0;  // recursive records are refused elsewhere
  switch (n.type) {
    case AvroType::kNull:
      return 0;
    case AvroType::kFloat:
      return 4;
    case AvroType::kDouble:
      return 8;
    case AvroType::kFixed:
      return n.size;
    case AvroType::kRecord: {
      int64_t sum = 0;
      for (const AvroField& f : n.fields) sum += MinSize(*f.type, depth + 1);
      return static_cast<int32_t>(std::min<int64_t>(sum, 1 << 30));
    }
    default:
      return 1;
  }
}

// --- default values: JSON → Avro binary ----------------------------------------------

// Decodes UTF-8 into code points (the JSON text simdjson checked is valid UTF-8).
std::vector<uint32_t> CodePoints(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n && i + k < s.size(); ++k) {
      cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
    }
    out.push_back(cp);
    i += n;
  }
  return out;
}

// Bytes and fixed defaults are strings whose code points 0-255 are the bytes.
bool DefaultBytes(dom::element e, std::string* bytes) {
  std::string_view s;
  if (e.get_string().get(s) != simdjson::SUCCESS) return false;
  bytes->clear();
  for (uint32_t cp : CodePoints(s)) {
    if (cp > 255) return false;
    bytes->push_back(static_cast<char>(cp));
  }
  return true;
}

bool DefaultNumber(dom::element e, double* out) {
  switch (e.type()) {
    case dom::element_type::INT64:
      *out = static_cast<double>(e.get_int64().value_unsafe());
      return true;
    case dom::element_type::UINT64:
      *out = static_cast<double>(e.get_uint64().value_unsafe());
      return true;
    case dom::element_type::DOUBLE:
      *out = e.get_double().value_unsafe();
      return true;
    case dom::element_type::STRING: {  // as Java's Jackson writes non-finite numbers
      std::string_view s = e.get_string().value_unsafe();
      if (s == "NaN")
        *out = std::numeric_limits<double>::quiet_NaN();
      else if (s == "Infinity")
        *out = std::numeric_limits<double>::infinity();
      else if (s == "-Infinity")
        *out = -std::numeric_limits<double>::infinity();
      else
        return false;
      return true;
    }
    default:
      return false;
  }
}

Status EncodeDefault(const AvroNode& n, dom::element e, const std::string& where,
                     int depth, std::string* out);

Status ParseAndEncodeDefault(const AvroNode& n, std::string_view json,
                             const std::string& where, int depth, std::string* out) {
  // A parser of its own: a record default may need its fields' defaults parsed while
  // its own document is still in use.
  dom::parser parser;
  dom::element e;
  if (parser.parse(json.data(), json.size()).get(e) != simdjson::SUCCESS) {
    return Status::Invalid(where + ": the default is not JSON");
  }
  return EncodeDefault(n, e, where, depth, out);
}

Status EncodeDefault(const AvroNode& n, dom::element e, const std::string& where,
                     int depth, std::string* out) {
  auto bad = [&]() {
    return Status::Invalid(where + ": the default " + model::Excerpt(e) +
                           " is not a value of type " + TypeLabel(n));
  };
  if (depth > 256) return Status::Invalid(where + ": the default is nested too deeply");
  switch (n.type) {
    case AvroType::kNull:
      return e.is_null() ? Status::OK() : bad();
    case AvroType::kBoolean: {
      bool v = false;
      if (e.get_bool().get(v) != simdjson::SUCCESS) return bad();
      out->push_back(v ? 1 : 0);
      return Status::OK();
    }
    case AvroType::kInt:
    case AvroType::kLong: {
      int64_t v = 0;
      if (!model::GetInt64(e, &v)) return bad();
      if (n.type == AvroType::kInt && (v < std::numeric_limits<int32_t>::min() ||
                                       v > std::numeric_limits<int32_t>::max())) {
        return bad();
      }
      PutLong(out, v);
      return Status::OK();
    }
    case AvroType::kFloat: {
      double d = 0;
      if (!DefaultNumber(e, &d)) return bad();
      const auto f = static_cast<float>(d);
      char buf[4];
      std::memcpy(buf, &f, 4);
      out->append(buf, 4);
      return Status::OK();
    }
    case AvroType::kDouble: {
      double d = 0;
      if (!DefaultNumber(e, &d)) return bad();
      char buf[8];
      std::memcpy(buf, &d, 8);
      out->append(buf, 8);
      return Status::OK();
    }
    case AvroType::kBytes: {
      std::string bytes;
      if (!DefaultBytes(e, &bytes)) return bad();
      PutLong(out, static_cast<int64_t>(bytes.size()));
      out->append(bytes);
      return Status::OK();
    }
    case AvroType::kString: {
      std::string_view s;
      if (e.get_string().get(s) != simdjson::SUCCESS) return bad();
      PutLong(out, static_cast<int64_t>(s.size()));
      out->append(s);
      return Status::OK();
    }
    case AvroType::kFixed: {
      std::string bytes;
      if (!DefaultBytes(e, &bytes) || bytes.size() != static_cast<size_t>(n.size)) {
        return bad();
      }
      out->append(bytes);
      return Status::OK();
    }
    case AvroType::kEnum: {
      std::string_view s;
      if (e.get_string().get(s) != simdjson::SUCCESS) return bad();
      for (size_t i = 0; i < n.symbols.size(); ++i) {
        if (n.symbols[i] == s) {
          PutLong(out, static_cast<int64_t>(i));
          return Status::OK();
        }
      }
      return bad();
    }
    case AvroType::kArray: {
      dom::array arr;
      if (e.get_array().get(arr) != simdjson::SUCCESS) return bad();
      if (arr.size() > 0) {
        PutLong(out, static_cast<int64_t>(arr.size()));
        size_t i = 0;
        for (dom::element item : arr) {
          KELT_RETURN_NOT_OK(EncodeDefault(
              *n.items, item, where + "[" + std::to_string(i++) + "]", depth + 1, out));
        }
      }
      PutLong(out, 0);
      return Status::OK();
    }
    case AvroType::kMap: {
      dom::object obj;
      if (e.get_object().get(obj) != simdjson::SUCCESS) return bad();
      if (obj.size() > 0) {
        PutLong(out, static_cast<int64_t>(obj.size()));
        for (dom::key_value_pair kv : obj) {
          PutLong(out, static_cast<int64_t>(kv.key.size()));
          out->append(kv.key);
          KELT_RETURN_NOT_OK(EncodeDefault(
              *n.items, kv.value, where + "." + std::string(kv.key), depth + 1, out));
        }
      }
      PutLong(out, 0);
      return Status::OK();
    }
    case AvroType::kRecord: {
      dom::object obj;
      if (e.get_object().get(obj) != simdjson::SUCCESS) return bad();
      for (const AvroField& f : n.fields) {
        const std::string fwhere = where + "." + f.name;
        dom::element v;
        if (obj[f.name].get(v) == simdjson::SUCCESS) {
          KELT_RETURN_NOT_OK(EncodeDefault(*f.type, v, fwhere, depth + 1, out));
        } else if (f.default_json) {
          KELT_RETURN_NOT_OK(
              ParseAndEncodeDefault(*f.type, *f.default_json, fwhere, depth + 1, out));
        } else {
          return Status::Invalid(where + ": the default " + model::Excerpt(e) +
                                 " has no field " + Quoted(f.name) +
                                 " and that field has no default");
        }
      }
      return Status::OK();
    }
    case AvroType::kUnion: {
      // The first branch the value fits (Avro 1.12; before it, only the first branch).
      for (size_t i = 0; i < n.branches.size(); ++i) {
        std::string encoded;
        if (EncodeDefault(*n.branches[i], e, where, depth + 1, &encoded).ok()) {
          PutLong(out, static_cast<int64_t>(i));
          out->append(encoded);
          return Status::OK();
        }
      }
      return bad();
    }
  }
  return bad();
}

// --- the compiler ----------------------------------------------------------------------

std::string FieldPath(const std::string& base, std::string_view name) {
  return base.empty() ? std::string(name) : base + "." + std::string(name);
}

class Compiler {
 public:
  explicit Compiler(AvroPlan::Program* p) : p_(p) {}

  // Column 0: the top-level struct whose children are the batch's columns.
  Status BuildRoot(const AvroNode& reader) {
    if (reader.type == AvroType::kRecord) {
      bool nullable = false;
      KELT_ASSIGN_OR_RAISE(int32_t col, BuildColumn(reader, "", &nullable));
      (void)col;  // 0
    } else {
      p_->columns.emplace_back();
      p_->columns[0].kind = ColumnKind::kStruct;
      bool nullable = false;
      KELT_ASSIGN_OR_RAISE(int32_t child, BuildColumn(reader, "value", &nullable));
      p_->columns[0].children.push_back(child);
      p_->columns[0].type =
          arrow::struct_({arrow::field("value", p_->columns[child].type, nullable)});
    }
    return Status::OK();
  }

  std::shared_ptr<arrow::Schema> RootSchema() const {
    return arrow::schema(p_->columns[0].type->fields());
  }

  // The top-level program (0): the writer's root read into column 0.
  Status CompileRoot(const AvroNode& writer, const AvroNode& reader) {
    const int32_t prog = NewProgram();
    std::vector<avro::Instr> code;
    if (reader.type == AvroType::kRecord) {
      KELT_RETURN_NOT_OK(Resolve(writer, 0, "", &code));
    } else {
      Emit(&code, OpCode::kRecord, 0, "");
      KELT_RETURN_NOT_OK(Resolve(writer, p_->columns[0].children[0], "", &code));
    }
    programs_[prog] = std::move(code);
    Link();
    return Status::OK();
  }

 private:
  // --- columns from the reader's schema ---

  int32_t NewColumn(ColumnKind kind, std::shared_ptr<arrow::DataType> type, int32_t width,
                    const AvroNode* node) {
    ColumnSpec c;
    c.kind = kind;
    c.type = std::move(type);
    c.width = width;
    c.node = node;
    p_->columns.push_back(std::move(c));
    return static_cast<int32_t>(p_->columns.size() - 1);
  }

  Result<int32_t> BuildColumn(const AvroNode& r, const std::string& path,
                              bool* nullable) {
    *nullable = false;
    switch (r.type) {
      case AvroType::kUnion:
        return BuildUnionColumn(r, path, nullable);
      case AvroType::kNull:
        *nullable = true;
        return NewColumn(ColumnKind::kNull, arrow::null(), 0, &r);
      case AvroType::kBoolean:
        return NewColumn(ColumnKind::kBool, arrow::boolean(), 0, &r);
      case AvroType::kInt: {
        auto type = r.logical_type == AvroLogicalType::kDate ? arrow::date32()
                    : r.logical_type == AvroLogicalType::kTimeMillis
                        ? arrow::time32(arrow::TimeUnit::MILLI)
                        : arrow::int32();
        return NewColumn(ColumnKind::kFixedWidth, std::move(type), 4, &r);
      }
      case AvroType::kLong:
        return NewColumn(ColumnKind::kFixedWidth, LongType(r.logical_type), 8, &r);
      case AvroType::kFloat:
        return NewColumn(ColumnKind::kFixedWidth, arrow::float32(), 4, &r);
      case AvroType::kDouble:
        return NewColumn(ColumnKind::kFixedWidth, arrow::float64(), 8, &r);
      case AvroType::kBytes:
      case AvroType::kFixed:
        if (r.logical_type == AvroLogicalType::kDecimal) {
          if (r.precision <= 38) {
            return NewColumn(ColumnKind::kFixedWidth,
                             arrow::decimal128(r.precision, r.scale), 16, &r);
          }
          return NewColumn(ColumnKind::kFixedWidth,
                           arrow::decimal256(r.precision, r.scale), 32, &r);
        }
        if (r.type == AvroType::kFixed) {
          return NewColumn(ColumnKind::kFixedWidth, arrow::fixed_size_binary(r.size),
                           r.size, &r);
        }
        return NewColumn(ColumnKind::kBinary, arrow::binary(), 0, &r);
      case AvroType::kString:
        return NewColumn(ColumnKind::kBinary, arrow::utf8(), 0, &r);
      case AvroType::kEnum: {
        arrow::StringBuilder b;
        for (const std::string& s : r.symbols) KELT_ARROW_RETURN_NOT_OK(b.Append(s));
        std::shared_ptr<arrow::Array> dict;
        KELT_ARROW_RETURN_NOT_OK(b.Finish(&dict));
        const int32_t col =
            NewColumn(ColumnKind::kFixedWidth,
                      arrow::dictionary(arrow::int32(), arrow::utf8()), 4, &r);
        p_->columns[col].dictionary = std::move(dict);
        return col;
      }
      case AvroType::kArray: {
        const int32_t col = NewColumn(ColumnKind::kList, nullptr, 0, &r);
        bool item_nullable = false;
        KELT_ASSIGN_OR_RAISE(int32_t item,
                             BuildColumn(*r.items, path + "[]", &item_nullable));
        p_->columns[col].children.push_back(item);
        p_->columns[col].type =
            arrow::list(arrow::field("item", p_->columns[item].type, item_nullable));
        return col;
      }
      case AvroType::kMap: {
        const int32_t col = NewColumn(ColumnKind::kList, nullptr, 0, &r);
        const int32_t entries = NewColumn(ColumnKind::kStruct, nullptr, 0, nullptr);
        const int32_t key = NewColumn(ColumnKind::kBinary, arrow::utf8(), 0, nullptr);
        bool value_nullable = false;
        KELT_ASSIGN_OR_RAISE(int32_t value,
                             BuildColumn(*r.items, path + "{}", &value_nullable));
        auto map_type = std::make_shared<arrow::MapType>(
            arrow::field("key", arrow::utf8(), false),
            arrow::field("value", p_->columns[value].type, value_nullable));
        p_->columns[col].children.push_back(entries);
        p_->columns[col].type = map_type;
        p_->columns[entries].children = {key, value};
        p_->columns[entries].type = map_type->value_type();
        return col;
      }
      case AvroType::kRecord: {
        for (const AvroNode* open : reader_stack_) {
          if (open == &r) {
            return Status::Invalid(
                Where(path) + "the recursive type " + Quoted(r.name) +
                " has no Arrow type (kelt reads recursive records only when they are "
                "not reached)");
          }
        }
        reader_stack_.push_back(&r);
        const int32_t col = NewColumn(ColumnKind::kStruct, nullptr, 0, &r);
        arrow::FieldVector fields;
        for (const AvroField& f : r.fields) {
          bool field_nullable = false;
          KELT_ASSIGN_OR_RAISE(
              int32_t child,
              BuildColumn(*f.type, FieldPath(path, f.name), &field_nullable));
          p_->columns[col].children.push_back(child);
          fields.push_back(arrow::field(f.name, p_->columns[child].type, field_nullable));
        }
        p_->columns[col].type = arrow::struct_(fields);
        reader_stack_.pop_back();
        return col;
      }
    }
    return Status::Internal("unknown Avro type");
  }

  static std::shared_ptr<arrow::DataType> LongType(AvroLogicalType lt) {
    switch (lt) {
      case AvroLogicalType::kTimeMicros:
        return arrow::time64(arrow::TimeUnit::MICRO);
      case AvroLogicalType::kTimestampMillis:
        return arrow::timestamp(arrow::TimeUnit::MILLI, "UTC");
      case AvroLogicalType::kTimestampMicros:
        return arrow::timestamp(arrow::TimeUnit::MICRO, "UTC");
      case AvroLogicalType::kTimestampNanos:
        return arrow::timestamp(arrow::TimeUnit::NANO, "UTC");
      case AvroLogicalType::kLocalTimestampMillis:
        return arrow::timestamp(arrow::TimeUnit::MILLI);
      case AvroLogicalType::kLocalTimestampMicros:
        return arrow::timestamp(arrow::TimeUnit::MICRO);
      case AvroLogicalType::kLocalTimestampNanos:
        return arrow::timestamp(arrow::TimeUnit::NANO);
      default:
        return arrow::int64();
    }
  }

  // [null, T], [T, null] and [T] land as T (nullable when null is a branch), [null] as
  // an Arrow null column; any other union as a dense union with a child per branch.
  Result<int32_t> BuildUnionColumn(const AvroNode& r, const std::string& path,
                                   bool* nullable) {
    int32_t null_branch = -1, value_branch = -1, values = 0;
    for (size_t i = 0; i < r.branches.size(); ++i) {
      if (r.branches[i]->type == AvroType::kNull) {
        null_branch = static_cast<int32_t>(i);
      } else {
        value_branch = static_cast<int32_t>(i);
        ++values;
      }
    }
    if (values <= 1) {
      const AvroNode& inner = *r.branches[values == 1 ? value_branch : null_branch];
      bool inner_nullable = false;
      KELT_ASSIGN_OR_RAISE(int32_t col, BuildColumn(inner, path, &inner_nullable));
      p_->columns[col].nullable_union = &r;
      p_->columns[col].null_branch = null_branch;
      *nullable = inner_nullable || null_branch >= 0;
      return col;
    }
    if (r.branches.size() > 127) {
      return Status::Invalid(Where(path) + "a union of " +
                             std::to_string(r.branches.size()) +
                             " branches (Arrow's unions hold at most 127)");
    }
    const int32_t col = NewColumn(ColumnKind::kDenseUnion, nullptr, 0, &r);
    arrow::FieldVector fields;
    std::vector<int8_t> codes;
    for (size_t i = 0; i < r.branches.size(); ++i) {
      bool child_nullable = false;
      KELT_ASSIGN_OR_RAISE(int32_t child,
                           BuildColumn(*r.branches[i], path, &child_nullable));
      p_->columns[col].children.push_back(child);
      fields.push_back(arrow::field(BranchName(*r.branches[i]), p_->columns[child].type,
                                    child_nullable));
      codes.push_back(static_cast<int8_t>(i));
    }
    p_->columns[col].type = arrow::dense_union(std::move(fields), std::move(codes));
    *nullable = null_branch >= 0;
    return col;
  }

  // --- programs ---

  int32_t NewProgram() {
    programs_.emplace_back();
    return static_cast<int32_t>(programs_.size() - 1);
  }

  int32_t PathId(const std::string& path) {
    auto [it, inserted] = path_ids_.emplace(path, static_cast<int32_t>(p_->paths.size()));
    if (inserted) p_->paths.push_back(path);
    return it->second;
  }

  void Emit(std::vector<Instr>* out, OpCode code, int32_t col, const std::string& path,
            int32_t a = 0, int32_t b = 0, uint8_t flags = 0) {
    Instr in;
    in.code = code;
    in.flags = flags;
    in.path = PathId(path);
    in.col = col;
    in.a = a;
    in.b = b;
    out->push_back(in);
  }

  static std::string Where(const std::string& path) {
    return path.empty() ? std::string() : "field " + Quoted(path) + ": ";
  }

  Status Mismatch(const AvroNode& w, const std::string& path, const ColumnSpec& c) {
    const AvroNode& r = c.nullable_union ? *c.nullable_union : *c.node;
    std::string reader = r.type == AvroType::kUnion ? "union [" : TypeLabel(r);
    if (r.type == AvroType::kUnion) {
      for (size_t i = 0; i < r.branches.size(); ++i) {
        reader += (i ? ", " : "") + TypeLabel(*r.branches[i]);
      }
      reader += "]";
    }
    return Status::Invalid(Where(path) + "the writer's " + TypeLabel(w) +
                           " cannot be read as the reader's " + reader);
  }

  // Whether a (non-union) writer value can go into column `col` at all.
  bool MatchesColumn(const AvroNode& w, int32_t col) const {
    const ColumnSpec& c = p_->columns[col];
    if (c.nullable_union) {
      if (w.type == AvroType::kNull) return c.null_branch >= 0;
      return Matches(w, *c.node);
    }
    if (c.node->type == AvroType::kUnion) return BestBranch(w, *c.node) >= 0;
    return Matches(w, *c.node);
  }

  Status Resolve(const AvroNode& w, int32_t col, const std::string& path,
                 std::vector<Instr>* out) {
    if (w.type != AvroType::kUnion) return ResolveNonUnion(w, col, path, out);
    // The writer's union: a program per branch, chosen by the index on the wire. A
    // branch the reader has no match for fails the record that uses it, not the plan
    // (the spec signals that error when such a value is read).
    const auto table = static_cast<int32_t>(p_->tables.size());
    p_->tables.resize(p_->tables.size() + w.branches.size());
    bool any = false;
    for (size_t i = 0; i < w.branches.size(); ++i) {
      const AvroNode& wb = *w.branches[i];
      std::vector<Instr> code;
      if (MatchesColumn(wb, col)) {
        KELT_RETURN_NOT_OK(ResolveNonUnion(wb, col, path, &code));
        any = true;
      } else {
        Emit(&code, OpCode::kFail, col, path, static_cast<int32_t>(i));
      }
      const int32_t prog = NewProgram();
      programs_[prog] = std::move(code);
      p_->tables[table + i] = prog;
    }
    if (!any) return Mismatch(w, path, p_->columns[col]);
    Emit(out, OpCode::kUnion, col, path, table, static_cast<int32_t>(w.branches.size()));
    return Status::OK();
  }

  Status ResolveNonUnion(const AvroNode& w, int32_t col, const std::string& path,
                         std::vector<Instr>* out) {
    const ColumnSpec& c = p_->columns[col];
    if (c.nullable_union) {
      if (w.type == AvroType::kNull) {
        if (c.null_branch < 0) return Mismatch(w, path, c);
        Emit(out, OpCode::kNullInto, col, path);
        return Status::OK();
      }
      if (!Matches(w, *c.node)) return Mismatch(w, path, c);
      return ResolveValue(w, col, path, out);
    }
    if (c.node->type == AvroType::kUnion) {
      const int32_t branch = BestBranch(w, *c.node);
      if (branch < 0) return Mismatch(w, path, c);
      const int32_t child = c.children[branch];
      Emit(out, OpCode::kUnionTag, col, path, branch);
      return ResolveNonUnion(w, child, path, out);
    }
    if (!Matches(w, *c.node)) return Mismatch(w, path, c);
    return ResolveValue(w, col, path, out);
  }

  Status DecimalCheck(const AvroNode& w, const AvroNode& r, const std::string& path) {
    if (w.logical_type != AvroLogicalType::kDecimal) return Status::OK();
    if (w.scale != r.scale || w.precision > r.precision) {
      return Status::Invalid(Where(path) + "the writer's " + TypeLabel(w) +
                             " cannot be read as the reader's " + TypeLabel(r) +
                             " (the scales must be equal and the reader's precision at "
                             "least the writer's)");
    }
    return Status::OK();
  }

  // w matches the column's node (neither is a union).
  Status ResolveValue(const AvroNode& w, int32_t col, const std::string& path,
                      std::vector<Instr>* out) {
    const AvroNode& r = *p_->columns[col].node;
    const AvroType wt = w.type;
    switch (r.type) {
      case AvroType::kNull:
        Emit(out, OpCode::kNull, col, path);
        return Status::OK();
      case AvroType::kBoolean:
        Emit(out, OpCode::kBool, col, path);
        return Status::OK();
      case AvroType::kInt:
        Emit(out, OpCode::kInt, col, path);
        return Status::OK();
      case AvroType::kLong:
        Emit(out, wt == AvroType::kInt ? OpCode::kIntToLong : OpCode::kLong, col, path);
        return Status::OK();
      case AvroType::kFloat:
        Emit(out,
             wt == AvroType::kInt    ? OpCode::kIntToFloat
             : wt == AvroType::kLong ? OpCode::kLongToFloat
                                     : OpCode::kFloat,
             col, path);
        return Status::OK();
      case AvroType::kDouble:
        Emit(out,
             wt == AvroType::kInt     ? OpCode::kIntToDouble
             : wt == AvroType::kLong  ? OpCode::kLongToDouble
             : wt == AvroType::kFloat ? OpCode::kFloatToDouble
                                      : OpCode::kDouble,
             col, path);
        return Status::OK();
      case AvroType::kString:
        Emit(out, wt == AvroType::kBytes ? OpCode::kBytesToString : OpCode::kString, col,
             path);
        return Status::OK();
      case AvroType::kBytes:
        if (r.logical_type == AvroLogicalType::kDecimal) {
          KELT_RETURN_NOT_OK(DecimalCheck(w, r, path));
          Emit(out, OpCode::kDecimalBytes, col, path, 0, r.precision,
               static_cast<uint8_t>(p_->columns[col].width));
        } else {
          Emit(out, OpCode::kBytes, col, path);
        }
        return Status::OK();
      case AvroType::kFixed:
        if (r.logical_type == AvroLogicalType::kDecimal) {
          KELT_RETURN_NOT_OK(DecimalCheck(w, r, path));
          Emit(out, OpCode::kDecimalFixed, col, path, r.size, r.precision,
               static_cast<uint8_t>(p_->columns[col].width));
        } else {
          Emit(out, OpCode::kFixed, col, path, r.size);
        }
        return Status::OK();
      case AvroType::kEnum: {
        const auto table = static_cast<int32_t>(p_->tables.size());
        for (const std::string& sym : w.symbols) {
          int32_t mapped = r.enum_default;
          for (size_t i = 0; i < r.symbols.size(); ++i) {
            if (r.symbols[i] == sym) mapped = static_cast<int32_t>(i);
          }
          p_->tables.push_back(mapped);
        }
        Emit(out, OpCode::kEnum, col, path, table,
             static_cast<int32_t>(w.symbols.size()));
        return Status::OK();
      }
      case AvroType::kArray: {
        const int32_t item_col = p_->columns[col].children[0];
        std::vector<Instr> body;
        KELT_RETURN_NOT_OK(Resolve(*w.items, item_col, path + "[]", &body));
        const int32_t prog = NewProgram();
        programs_[prog] = std::move(body);
        Emit(out, OpCode::kArray, col, path, prog, MinSize(*w.items));
        return Status::OK();
      }
      case AvroType::kMap: {
        const int32_t entries = p_->columns[col].children[0];
        const int32_t value_col = p_->columns[entries].children[1];
        std::vector<Instr> body;
        KELT_RETURN_NOT_OK(Resolve(*w.items, value_col, path + "{}", &body));
        const int32_t prog = NewProgram();
        programs_[prog] = std::move(body);
        Emit(out, OpCode::kMap, col, path, prog, MinSize(*w.items));
        return Status::OK();
      }
      case AvroType::kRecord:
        return ResolveRecord(w, col, path, out);
      case AvroType::kUnion:
        break;
    }
    return Status::Internal("unexpected reader type");
  }

  Status ResolveRecord(const AvroNode& w, int32_t col, const std::string& path,
                       std::vector<Instr>* out) {
    for (const AvroNode* open : writer_stack_) {
      if (open == &w) {
        return Status::Invalid(Where(path) + "the recursive type " + Quoted(w.name) +
                               " is not supported");
      }
    }
    writer_stack_.push_back(&w);
    const AvroNode& r = *p_->columns[col].node;
    Emit(out, OpCode::kRecord, col, path);
    // Reader field of each writer field: by name, else by one of the reader's aliases.
    std::vector<int32_t> reader_of(w.fields.size(), -1);
    std::vector<bool> matched(r.fields.size(), false);
    for (size_t j = 0; j < r.fields.size(); ++j) {
      for (size_t i = 0; i < w.fields.size(); ++i) {
        if (reader_of[i] < 0 && w.fields[i].name == r.fields[j].name) {
          reader_of[i] = static_cast<int32_t>(j);
          matched[j] = true;
        }
      }
    }
    for (size_t j = 0; j < r.fields.size(); ++j) {
      if (matched[j]) continue;
      for (size_t i = 0; i < w.fields.size() && !matched[j]; ++i) {
        if (reader_of[i] >= 0) continue;
        for (const std::string& alias : r.fields[j].aliases) {
          if (alias == w.fields[i].name) {
            reader_of[i] = static_cast<int32_t>(j);
            matched[j] = true;
            break;
          }
        }
      }
    }
    // Values come in the writer's order; each goes to its reader column by index.
    for (size_t i = 0; i < w.fields.size(); ++i) {
      if (reader_of[i] < 0) {
        KELT_RETURN_NOT_OK(
            Skip(*w.fields[i].type, FieldPath(path, w.fields[i].name), out));
        continue;
      }
      const AvroField& rf = r.fields[reader_of[i]];
      KELT_RETURN_NOT_OK(Resolve(*w.fields[i].type,
                                 p_->columns[col].children[reader_of[i]],
                                 FieldPath(path, rf.name), out));
    }
    for (size_t j = 0; j < r.fields.size(); ++j) {
      if (matched[j]) continue;
      const AvroField& rf = r.fields[j];
      const std::string fpath = FieldPath(path, rf.name);
      if (!rf.default_json) {
        return Status::Invalid(Where(fpath) + "the reader's field " +
                               Quoted(r.name + "." + rf.name) +
                               " has no default and the writer's record " +
                               Quoted(w.name) + " has no field " + Quoted(rf.name));
      }
      std::string encoded;
      KELT_RETURN_NOT_OK(ParseAndEncodeDefault(*rf.type, *rf.default_json,
                                               "field " + Quoted(fpath), 0, &encoded));
      // The default is read with the reader's own type on both sides.
      std::vector<Instr> body;
      KELT_RETURN_NOT_OK(Resolve(*rf.type, p_->columns[col].children[j], fpath, &body));
      const int32_t prog = NewProgram();
      programs_[prog] = std::move(body);
      const auto offset = static_cast<int32_t>(p_->constants.size());
      p_->constants += encoded;
      Emit(out, OpCode::kDefault, prog, fpath, offset,
           static_cast<int32_t>(encoded.size()));
    }
    writer_stack_.pop_back();
    return Status::OK();
  }

  // Operations that read past a writer value the reader does not keep. Values are
  // checked only as far as needed to find their end (lengths, counts, union indexes).
  Status Skip(const AvroNode& w, const std::string& path, std::vector<Instr>* out) {
    switch (w.type) {
      case AvroType::kNull:
        return Status::OK();
      case AvroType::kBoolean:
        SkipBytes(out, 1, path);
        return Status::OK();
      case AvroType::kInt:
      case AvroType::kLong:
      case AvroType::kEnum:
        Emit(out, OpCode::kSkipVarint, -1, path);
        return Status::OK();
      case AvroType::kFloat:
        SkipBytes(out, 4, path);
        return Status::OK();
      case AvroType::kDouble:
        SkipBytes(out, 8, path);
        return Status::OK();
      case AvroType::kFixed:
        SkipBytes(out, w.size, path);
        return Status::OK();
      case AvroType::kBytes:
      case AvroType::kString:
        Emit(out, OpCode::kSkipBytes, -1, path);
        return Status::OK();
      case AvroType::kArray:
      case AvroType::kMap: {
        const bool array = w.type == AvroType::kArray;
        std::vector<Instr> body;
        KELT_RETURN_NOT_OK(Skip(*w.items, path + (array ? "[]" : "{}"), &body));
        const int32_t prog = NewProgram();
        programs_[prog] = std::move(body);
        Emit(out, array ? OpCode::kSkipArray : OpCode::kSkipMap, -1, path, prog,
             MinSize(*w.items));
        return Status::OK();
      }
      case AvroType::kUnion: {
        const auto table = static_cast<int32_t>(p_->tables.size());
        p_->tables.resize(p_->tables.size() + w.branches.size());
        for (size_t i = 0; i < w.branches.size(); ++i) {
          std::vector<Instr> body;
          KELT_RETURN_NOT_OK(Skip(*w.branches[i], path, &body));
          const int32_t prog = NewProgram();
          programs_[prog] = std::move(body);
          p_->tables[table + i] = prog;
        }
        Emit(out, OpCode::kUnion, -1, path, table,
             static_cast<int32_t>(w.branches.size()));
        return Status::OK();
      }
      case AvroType::kRecord: {
        for (const AvroNode* open : writer_stack_) {
          if (open == &w) {
            return Status::Invalid(Where(path) + "the recursive type " + Quoted(w.name) +
                                   " is not supported");
          }
        }
        writer_stack_.push_back(&w);
        for (const AvroField& f : w.fields) {
          KELT_RETURN_NOT_OK(Skip(*f.type, FieldPath(path, f.name), out));
        }
        writer_stack_.pop_back();
        return Status::OK();
      }
    }
    return Status::Internal("unknown Avro type");
  }

  // Adjacent fixed-size skips become one.
  void SkipBytes(std::vector<Instr>* out, int32_t n, const std::string& path) {
    if (!out->empty() && out->back().code == OpCode::kSkip &&
        out->back().a <= std::numeric_limits<int32_t>::max() - n) {
      out->back().a += n;
      return;
    }
    Emit(out, OpCode::kSkip, -1, path, n);
  }

  // Lays the programs end to end in one array.
  void Link() {
    p_->code.clear();
    p_->begins.clear();
    p_->ends.clear();
    for (const std::vector<Instr>& prog : programs_) {
      p_->begins.push_back(static_cast<int32_t>(p_->code.size()));
      p_->code.insert(p_->code.end(), prog.begin(), prog.end());
      p_->ends.push_back(static_cast<int32_t>(p_->code.size()));
    }
  }

  AvroPlan::Program* p_;
  std::vector<std::vector<Instr>> programs_;
  std::unordered_map<std::string, int32_t> path_ids_;
  std::vector<const AvroNode*> reader_stack_;
  std::vector<const AvroNode*> writer_stack_;
};

}  // namespace

Result<std::shared_ptr<arrow::Schema>> ReaderArrowSchema(const AvroNode& root) {
  AvroPlan::Program program;
  Compiler compiler(&program);
  KELT_RETURN_NOT_OK(compiler.BuildRoot(root));
  return compiler.RootSchema();
}

void PutLong(std::string* out, int64_t v) {
  uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (z >= 0x80) {
    out->push_back(static_cast<char>((z & 0x7f) | 0x80));
    z >>= 7;
  }
  out->push_back(static_cast<char>(z));
}

Status EncodeDefaultJson(const AvroNode& node, std::string_view json,
                         const std::string& where, std::string* out) {
  return ParseAndEncodeDefault(node, json, where, 0, out);
}

}  // namespace kelt::avro

namespace kelt {

AvroPlan::AvroPlan(std::unique_ptr<Program> program) : program_(std::move(program)) {}
AvroPlan::~AvroPlan() = default;

Result<std::shared_ptr<const AvroPlan>> AvroPlan::Compile(const AvroSchema& writer,
                                                          const AvroSchema& reader) {
  auto program = std::make_unique<Program>();
  program->schemas = {writer, reader};
  avro::Compiler compiler(program.get());
  KELT_RETURN_NOT_OK(compiler.BuildRoot(reader.root()));
  KELT_RETURN_NOT_OK(compiler.CompileRoot(writer.root(), reader.root()));
  program->schema = compiler.RootSchema();
  return std::shared_ptr<const AvroPlan>(new AvroPlan(std::move(program)));
}

const std::shared_ptr<arrow::Schema>& AvroPlan::arrow_schema() const {
  return program_->schema;
}

std::string AvroPlan::ToString() const {
  std::string out;
  for (size_t p = 0; p < program_->begins.size(); ++p) {
    out += "program " + std::to_string(p) + ":\n";
    for (int32_t i = program_->begins[p]; i < program_->ends[p]; ++i) {
      const avro::Instr& in = program_->code[i];
      out += "  " + std::string(avro::OpCodeName(in.code));
      if (in.col >= 0) out += " col=" + std::to_string(in.col);
      out += " a=" + std::to_string(in.a) + " b=" + std::to_string(in.b);
      const std::string& path = program_->paths[in.path];
      if (!path.empty()) out += " '" + path + "'";
      out += "\n";
    }
  }
  return out;
}

}  // namespace kelt
