// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Arrow rows → Avro binary bodies (the produce side of issue #14). An AvroEncoder is a
// tree of steps compiled once from (Arrow schema, writer schema): each step knows the
// Arrow type it reads and the Avro encoding it writes, so Encode binds the batch's arrays
// to the steps once and then runs one switch per value, with no name lookup or type
// inspection per row. Encoding follows the Avro 1.11 spec, "Binary Encoding": zigzag
// varints for int and long, little-endian IEEE floats, length-prefixed bytes and
// strings, records as their fields in order, arrays and maps as one block of `count`
// items closed by a 0 block, unions as the branch index then the value, enums as the
// symbol index, fixed as its bytes.
#include <arrow/api.h>
#include <arrow/util/decimal.h>

#include <bit>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kelt/avro.h"
#include "kelt/avro/plan.h"
#include "kelt/common/time_units.h"

namespace kelt {

namespace avro {
namespace {

enum class Op : uint8_t {
  kNothing,      // Avro null: writes nothing
  kConstant,     // a missing field's default, already encoded (a = offset, b = length)
  kBool,         // bool
  kInt,          // an integer-valued column → int (range checked)
  kLong,         // an integer-valued column → long, times `factor`
  kFloat,        // a number column → float
  kDouble,       // a number column → double
  kBytes,        // binary, utf8 (large too) → bytes or string
  kDictBytes,    // dictionary<int, utf8|binary> → string or bytes
  kFixed,        // fixed_size_binary (or binary, size checked) → fixed of `a` bytes
  kEnum,         // utf8 → the symbol's index
  kDictEnum,     // dictionary<int, utf8> → the symbol's index
  kDecimal,      // decimal128/256 → bytes (a = 0) or fixed of a bytes
  kUuidFixed16,  // fixed_size_binary(16) → the uuid's canonical text
  kRecord,       // struct (or the batch) → its fields in the writer's order
  kArray,        // list, large_list → one block of items
  kMap,          // map<utf8, T> → one block of entries
  kUnion,        // a = the null branch (-1: none), b = the value's branch
  kArrowUnion,   // dense or sparse union → the branch columns[child] of each child
};

std::string_view OpName(Op op) {
  switch (op) {
    case Op::kNothing:
      return "nothing";
    case Op::kConstant:
      return "constant";
    case Op::kBool:
      return "bool";
    case Op::kInt:
      return "int";
    case Op::kLong:
      return "long";
    case Op::kFloat:
      return "float";
    case Op::kDouble:
      return "double";
    case Op::kBytes:
      return "bytes";
    case Op::kDictBytes:
      return "dict_bytes";
    case Op::kFixed:
      return "fixed";
    case Op::kEnum:
      return "enum";
    case Op::kDictEnum:
      return "dict_enum";
    case Op::kDecimal:
      return "decimal";
    case Op::kUuidFixed16:
      return "uuid_fixed16";
    case Op::kRecord:
      return "record";
    case Op::kArray:
      return "array";
    case Op::kMap:
      return "map";
    case Op::kUnion:
      return "union";
    case Op::kArrowUnion:
      return "arrow_union";
  }
  return "?";
}

struct Step {
  Op op = Op::kNothing;
  int32_t a = 0;
  int32_t b = 0;
  int64_t factor = 1;     // kLong: the unit change (e.g. 1000 for ms → us)
  int32_t precision = 0;  // kDecimal: the writer's, checked when the column's is larger
  bool check_precision = false;
  // A record field's default, written for a null the field's type does not admit
  // (offset into the constants, or -1).
  int32_t default_offset = -1;
  int32_t default_length = 0;
  std::string path;               // for messages: "address.zip", "tags[]"
  std::vector<int32_t> children;  // kRecord: fields; kArray: item; kMap: key, value;
                                  // kUnion: the value; kArrowUnion: one per child
  std::vector<int32_t> columns;   // kRecord: the column (or struct field) of each
                                  // child, -1 for a constant; kArrowUnion: the Avro
                                  // branch of each child
  std::unordered_map<std::string, int32_t> symbols;  // kEnum, kDictEnum
};

std::string Quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

std::string Join(const std::string& base, std::string_view name) {
  return base.empty() ? std::string(name) : base + "." + std::string(name);
}

// Arrow types whose values are integers in int64 storage or narrower.
bool IsIntegerValued(arrow::Type::type t) {
  switch (t) {
    case arrow::Type::DATE32:
    case arrow::Type::DATE64:
    case arrow::Type::TIME32:
    case arrow::Type::TIME64:
    case arrow::Type::TIMESTAMP:
    case arrow::Type::DURATION:
      return true;
    default:
      return arrow::is_integer(t);
  }
}

bool IsStringLike(arrow::Type::type t) {
  return t == arrow::Type::STRING || t == arrow::Type::LARGE_STRING;
}

bool IsBinaryLike(arrow::Type::type t) {
  return t == arrow::Type::BINARY || t == arrow::Type::LARGE_BINARY;
}

std::string_view UnitName(int64_t per_second) {
  switch (per_second) {
    case 1:
      return "s";
    case 1000:
      return "ms";
    case 1000000:
      return "us";
    default:
      return "ns";
  }
}

// --- reading Arrow values -----------------------------------------------------------

// The integer at `row` of an integer-valued array; false for a uint64 beyond int64.
bool IntAt(const arrow::ArrayData& d, int64_t row, int64_t* out) {
  switch (d.type->id()) {
    case arrow::Type::INT8:
      *out = d.GetValues<int8_t>(1)[row];
      return true;
    case arrow::Type::INT16:
      *out = d.GetValues<int16_t>(1)[row];
      return true;
    case arrow::Type::INT32:
    case arrow::Type::DATE32:
    case arrow::Type::TIME32:
      *out = d.GetValues<int32_t>(1)[row];
      return true;
    case arrow::Type::UINT8:
      *out = d.GetValues<uint8_t>(1)[row];
      return true;
    case arrow::Type::UINT16:
      *out = d.GetValues<uint16_t>(1)[row];
      return true;
    case arrow::Type::UINT32:
      *out = d.GetValues<uint32_t>(1)[row];
      return true;
    case arrow::Type::UINT64: {
      uint64_t v = d.GetValues<uint64_t>(1)[row];
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
      *out = static_cast<int64_t>(v);
      return true;
    }
    default:  // INT64, DATE64, TIME64, TIMESTAMP, DURATION
      *out = d.GetValues<int64_t>(1)[row];
      return true;
  }
}

double DoubleAt(const arrow::ArrayData& d, int64_t row) {
  switch (d.type->id()) {
    case arrow::Type::FLOAT:
      return d.GetValues<float>(1)[row];
    case arrow::Type::DOUBLE:
      return d.GetValues<double>(1)[row];
    default: {
      int64_t v = 0;
      if (!IntAt(d, row, &v)) return static_cast<double>(d.GetValues<uint64_t>(1)[row]);
      return static_cast<double>(v);
    }
  }
}

std::string_view BytesAt(const arrow::Array& a, int64_t row) {
  switch (a.type_id()) {
    case arrow::Type::STRING:
    case arrow::Type::BINARY:
      return static_cast<const arrow::BinaryArray&>(a).GetView(row);
    case arrow::Type::LARGE_STRING:
    case arrow::Type::LARGE_BINARY:
      return static_cast<const arrow::LargeBinaryArray&>(a).GetView(row);
    case arrow::Type::FIXED_SIZE_BINARY:
      return static_cast<const arrow::FixedSizeBinaryArray&>(a).GetView(row);
    default:
      return {};
  }
}

// --- writing Avro -------------------------------------------------------------------

void PutBytes(std::string* out, std::string_view bytes) {
  PutLong(out, static_cast<int64_t>(bytes.size()));
  out->append(bytes);
}

template <typename T>
void PutLittleEndian(std::string* out, T v) {
  static_assert(std::endian::native == std::endian::little);
  char raw[sizeof(T)];
  std::memcpy(raw, &v, sizeof(T));
  out->append(raw, sizeof(T));
}

// A decimal's two's complement, big-endian, in `width` bytes (16 or 32) from Arrow's
// little-endian storage.
std::string BigEndian(const uint8_t* little, int32_t width) {
  std::string out(static_cast<size_t>(width), '\0');
  for (int32_t i = 0; i < width; ++i)
    out[static_cast<size_t>(i)] = static_cast<char>(little[width - 1 - i]);
  return out;
}

}  // namespace
}  // namespace avro

using avro::Op;
using avro::Step;

struct AvroEncoder::Program {
  std::vector<Step> steps;  // steps[0] is the top-level record
  std::string constants;
  std::shared_ptr<arrow::Schema> arrow_schema;
  AvroSchema writer;  // owns the nodes (not used after compiling, kept for clarity)
  explicit Program(AvroSchema w) : writer(std::move(w)) {}
};

namespace avro {
namespace {

class EncoderCompiler {
 public:
  explicit EncoderCompiler(AvroEncoder::Program* program) : p_(program) {}

  Status CompileRoot(const AvroNode& root, const arrow::Schema& schema) {
    if (root.type != AvroType::kRecord) {
      return Status::Invalid("the Avro writer schema is a " +
                             std::string(AvroTypeName(root.type)) +
                             ", not a record: rows encode as records");
    }
    std::vector<std::shared_ptr<arrow::Field>> fields = schema.fields();
    int32_t id = NewStep(Op::kRecord, "");
    return CompileFields(id, root, fields, "");
  }

 private:
  int32_t NewStep(Op op, const std::string& path) {
    p_->steps.emplace_back();
    p_->steps.back().op = op;
    p_->steps.back().path = path;
    return static_cast<int32_t>(p_->steps.size() - 1);
  }

  Step& step(int32_t id) { return p_->steps[static_cast<size_t>(id)]; }

  Status CompileFields(int32_t id, const AvroNode& record,
                       const std::vector<std::shared_ptr<arrow::Field>>& fields,
                       const std::string& path) {
    for (const AvroField& f : record.fields) {
      std::string fpath = Join(path, f.name);
      int32_t column = -1;
      for (size_t i = 0; i < fields.size(); ++i) {
        if (fields[i]->name() == f.name) {
          column = static_cast<int32_t>(i);
          break;
        }
      }
      int32_t child = -1;
      if (column < 0) {
        if (!f.default_json) {
          return Status::Invalid("field " + Quoted(fpath) +
                                 ": no column of that name and no default in the "
                                 "Avro schema");
        }
        std::string bytes;
        KELT_RETURN_NOT_OK(EncodeDefaultJson(*f.type, *f.default_json,
                                             "field " + Quoted(fpath), &bytes));
        child = NewStep(Op::kConstant, fpath);
        step(child).a = static_cast<int32_t>(p_->constants.size());
        step(child).b = static_cast<int32_t>(bytes.size());
        p_->constants += bytes;
      } else {
        KELT_ASSIGN_OR_RAISE(
            child, Compile(*f.type, *fields[static_cast<size_t>(column)]->type(), fpath));
        if (f.default_json && step(child).op != Op::kUnion) {
          std::string bytes;
          KELT_RETURN_NOT_OK(EncodeDefaultJson(*f.type, *f.default_json,
                                               "field " + Quoted(fpath), &bytes));
          step(child).default_offset = static_cast<int32_t>(p_->constants.size());
          step(child).default_length = static_cast<int32_t>(bytes.size());
          p_->constants += bytes;
        }
      }
      step(id).children.push_back(child);
      step(id).columns.push_back(column);
    }
    return Status::OK();
  }

  Status Mismatch(const AvroNode& n, const arrow::DataType& t, const std::string& path,
                  std::string_view why = {}) {
    std::string avro(AvroTypeName(n.type));
    if (n.logical_type != AvroLogicalType::kNone) {
      avro = std::string(AvroLogicalTypeName(n.logical_type)) + " (" + avro + ")";
    }
    std::string msg = "field " + Quoted(path.empty() ? "<record>" : path) + ": Arrow " +
                      t.ToString() + " cannot be written as Avro " + avro;
    if (!why.empty()) msg += ": " + std::string(why);
    return Status::Invalid(std::move(msg));
  }

  Result<int32_t> Compile(const AvroNode& n, const arrow::DataType& t,
                          const std::string& path) {
    const arrow::Type::type id = t.id();
    if (n.type == AvroType::kUnion) return CompileUnion(n, t, path);
    if (id == arrow::Type::NA) {
      if (n.type == AvroType::kNull) return NewStep(Op::kNothing, path);
      return Mismatch(n, t, path, "a null column needs a type that admits null");
    }
    switch (n.logical_type) {
      case AvroLogicalType::kDecimal:
        return CompileDecimal(n, t, path);
      case AvroLogicalType::kUuid:
        if (id == arrow::Type::FIXED_SIZE_BINARY &&
            static_cast<const arrow::FixedSizeBinaryType&>(t).byte_width() == 16) {
          return NewStep(Op::kUuidFixed16, path);
        }
        break;  // a string column: below
      case AvroLogicalType::kDate:
        if (id == arrow::Type::DATE32) return NewStep(Op::kInt, path);
        return Mismatch(n, t, path, "expected date32");
      case AvroLogicalType::kTimeMillis:
      case AvroLogicalType::kTimeMicros:
      case AvroLogicalType::kTimestampMillis:
      case AvroLogicalType::kTimestampMicros:
      case AvroLogicalType::kTimestampNanos:
      case AvroLogicalType::kLocalTimestampMillis:
      case AvroLogicalType::kLocalTimestampMicros:
      case AvroLogicalType::kLocalTimestampNanos:
        return CompileTemporal(n, t, path);
      case AvroLogicalType::kNone:
        break;
    }
    switch (n.type) {
      case AvroType::kNull:
        return Mismatch(n, t, path);
      case AvroType::kBoolean:
        if (id == arrow::Type::BOOL) return NewStep(Op::kBool, path);
        return Mismatch(n, t, path);
      case AvroType::kInt:
        if (IsIntegerValued(id)) return NewStep(Op::kInt, path);
        return Mismatch(n, t, path);
      case AvroType::kLong:
        if (IsIntegerValued(id)) return NewStep(Op::kLong, path);
        return Mismatch(n, t, path);
      case AvroType::kFloat:
        if (id == arrow::Type::FLOAT || arrow::is_integer(id)) {
          return NewStep(Op::kFloat, path);
        }
        return Mismatch(n, t, path, "only float32 and integers become float");
      case AvroType::kDouble:
        if (id == arrow::Type::FLOAT || id == arrow::Type::DOUBLE ||
            arrow::is_integer(id)) {
          return NewStep(Op::kDouble, path);
        }
        return Mismatch(n, t, path);
      case AvroType::kString:
        if (IsStringLike(id)) return NewStep(Op::kBytes, path);
        if (IsDictionaryOf(t, /*binary_ok=*/false)) return NewStep(Op::kDictBytes, path);
        return Mismatch(n, t, path);
      case AvroType::kBytes:
        if (IsStringLike(id) || IsBinaryLike(id) ||
            id == arrow::Type::FIXED_SIZE_BINARY) {
          return NewStep(Op::kBytes, path);
        }
        if (IsDictionaryOf(t, /*binary_ok=*/true)) return NewStep(Op::kDictBytes, path);
        return Mismatch(n, t, path);
      case AvroType::kFixed: {
        if (id == arrow::Type::FIXED_SIZE_BINARY &&
            static_cast<const arrow::FixedSizeBinaryType&>(t).byte_width() != n.size) {
          return Mismatch(n, t, path,
                          "the sizes differ (" + std::to_string(n.size) + ")");
        }
        if (id != arrow::Type::FIXED_SIZE_BINARY && !IsBinaryLike(id)) {
          return Mismatch(n, t, path);
        }
        int32_t s = NewStep(Op::kFixed, path);
        step(s).a = n.size;
        return s;
      }
      case AvroType::kEnum: {
        Op op;
        if (IsStringLike(id)) {
          op = Op::kEnum;
        } else if (IsDictionaryOf(t, /*binary_ok=*/false)) {
          op = Op::kDictEnum;
        } else {
          return Mismatch(n, t, path, "enums are written from strings");
        }
        int32_t s = NewStep(op, path);
        for (size_t i = 0; i < n.symbols.size(); ++i) {
          step(s).symbols.emplace(n.symbols[i], static_cast<int32_t>(i));
        }
        return s;
      }
      case AvroType::kRecord: {
        if (id != arrow::Type::STRUCT) return Mismatch(n, t, path);
        int32_t s = NewStep(Op::kRecord, path);
        KELT_RETURN_NOT_OK(CompileFields(s, n, t.fields(), path));
        return s;
      }
      case AvroType::kArray: {
        if (id != arrow::Type::LIST && id != arrow::Type::LARGE_LIST) {
          return Mismatch(n, t, path);
        }
        int32_t s = NewStep(Op::kArray, path);
        KELT_ASSIGN_OR_RAISE(int32_t item,
                             Compile(*n.items, *t.field(0)->type(), path + "[]"));
        step(s).children.push_back(item);
        return s;
      }
      case AvroType::kMap: {
        if (id != arrow::Type::MAP) return Mismatch(n, t, path);
        const auto& m = static_cast<const arrow::MapType&>(t);
        if (!IsStringLike(m.key_type()->id())) {
          return Mismatch(n, t, path, "Avro map keys are strings");
        }
        int32_t s = NewStep(Op::kMap, path);
        int32_t key = NewStep(Op::kBytes, path + "{key}");
        KELT_ASSIGN_OR_RAISE(int32_t value,
                             Compile(*n.items, *m.item_type(), path + "{}"));
        step(s).children = {key, value};
        return s;
      }
      case AvroType::kUnion:
        break;  // handled above
    }
    return Mismatch(n, t, path);
  }

  static bool IsDictionaryOf(const arrow::DataType& t, bool binary_ok) {
    if (t.id() != arrow::Type::DICTIONARY) return false;
    auto v = static_cast<const arrow::DictionaryType&>(t).value_type()->id();
    return IsStringLike(v) || (binary_ok && IsBinaryLike(v));
  }

  // A union takes a column of one of its branches: the first branch that the column's
  // type can be written as (the null branch takes the column's nulls).
  Result<int32_t> CompileUnion(const AvroNode& n, const arrow::DataType& t,
                               const std::string& path) {
    int32_t null_branch = -1;
    for (size_t i = 0; i < n.branches.size(); ++i) {
      if (n.branches[i]->type == AvroType::kNull) null_branch = static_cast<int32_t>(i);
    }
    if (t.id() == arrow::Type::DENSE_UNION || t.id() == arrow::Type::SPARSE_UNION) {
      return CompileArrowUnion(n, t, path);
    }
    if (t.id() == arrow::Type::NA) {
      if (null_branch < 0) return Mismatch(n, t, path, "the union has no null branch");
      int32_t s = NewStep(Op::kUnion, path);
      step(s).a = null_branch;
      step(s).b = -1;
      return s;
    }
    std::string first_error;
    for (size_t i = 0; i < n.branches.size(); ++i) {
      if (n.branches[i]->type == AvroType::kNull) continue;
      size_t mark = p_->steps.size();
      Result<int32_t> value = Compile(*n.branches[i], t, path);
      if (!value.ok()) {
        p_->steps.resize(mark);  // the branch's steps, taken back
        if (first_error.empty()) first_error = value.status().message();
        continue;
      }
      int32_t s = NewStep(Op::kUnion, path);
      step(s).a = null_branch;
      step(s).b = static_cast<int32_t>(i);
      step(s).children.push_back(*value);
      return s;
    }
    if (first_error.empty()) return Mismatch(n, t, path, "the union has only null");
    return Mismatch(n, t, path, "no branch takes it; the first said: " + first_error);
  }

  // An Arrow union (what the decoder makes of a union other than [null, T]): each child
  // goes to the branch of its type code when that branch takes it (the decoder's type
  // ids are branch indexes), else to the first branch that does.
  Result<int32_t> CompileArrowUnion(const AvroNode& n, const arrow::DataType& t,
                                    const std::string& path) {
    const auto& u = static_cast<const arrow::UnionType&>(t);
    std::vector<int32_t> children, branches;
    for (int k = 0; k < u.num_fields(); ++k) {
      const arrow::DataType& ct = *u.field(k)->type();
      int8_t code = u.type_codes()[static_cast<size_t>(k)];
      std::vector<size_t> order;
      if (code >= 0 && static_cast<size_t>(code) < n.branches.size()) {
        order.push_back(static_cast<size_t>(code));
      }
      for (size_t i = 0; i < n.branches.size(); ++i) order.push_back(i);
      int32_t child = -1, branch = -1;
      for (size_t i : order) {
        size_t mark = p_->steps.size();
        Result<int32_t> c =
            n.branches[i]->type == AvroType::kNull && ct.id() != arrow::Type::NA
                ? Result<int32_t>(Status::Invalid(""))
                : Compile(*n.branches[i], ct, path);
        if (c.ok()) {
          child = *c;
          branch = static_cast<int32_t>(i);
          break;
        }
        p_->steps.resize(mark);
      }
      if (child < 0) {
        return Mismatch(n, t, path,
                        "no branch takes its member '" + u.field(k)->name() + "'");
      }
      children.push_back(child);
      branches.push_back(branch);
    }
    int32_t s = NewStep(Op::kArrowUnion, path);
    step(s).children = std::move(children);
    step(s).columns = std::move(branches);
    return s;
  }

  Result<int32_t> CompileDecimal(const AvroNode& n, const arrow::DataType& t,
                                 const std::string& path) {
    if (t.id() != arrow::Type::DECIMAL128 && t.id() != arrow::Type::DECIMAL256) {
      return Mismatch(n, t, path, "expected decimal128 or decimal256");
    }
    const auto& d = static_cast<const arrow::DecimalType&>(t);
    if (d.scale() != n.scale) {
      return Mismatch(
          n, t, path,
          "the scales differ (the schema's is " + std::to_string(n.scale) + ")");
    }
    int32_t s = NewStep(Op::kDecimal, path);
    step(s).a = n.type == AvroType::kFixed ? n.size : 0;
    step(s).precision = n.precision;
    step(s).check_precision = d.precision() > n.precision;
    return s;
  }

  Result<int32_t> CompileTemporal(const AvroNode& n, const arrow::DataType& t,
                                  const std::string& path) {
    int64_t avro_per_second = 1000;
    bool time_of_day = false;
    switch (n.logical_type) {
      case AvroLogicalType::kTimeMillis:
        time_of_day = true;
        break;
      case AvroLogicalType::kTimeMicros:
        time_of_day = true;
        avro_per_second = 1000000;
        break;
      case AvroLogicalType::kTimestampMicros:
      case AvroLogicalType::kLocalTimestampMicros:
        avro_per_second = 1000000;
        break;
      case AvroLogicalType::kTimestampNanos:
      case AvroLogicalType::kLocalTimestampNanos:
        avro_per_second = 1000000000;
        break;
      default:
        break;
    }
    int64_t arrow_per_second = 0;
    if (time_of_day && t.id() == arrow::Type::TIME32) {
      arrow_per_second =
          TimeUnitsPerSecond(static_cast<const arrow::Time32Type&>(t).unit());
    } else if (time_of_day && t.id() == arrow::Type::TIME64) {
      arrow_per_second =
          TimeUnitsPerSecond(static_cast<const arrow::Time64Type&>(t).unit());
    } else if (!time_of_day && t.id() == arrow::Type::TIMESTAMP) {
      arrow_per_second =
          TimeUnitsPerSecond(static_cast<const arrow::TimestampType&>(t).unit());
    } else {
      return Mismatch(n, t, path,
                      time_of_day ? "expected time32 or time64" : "expected a timestamp");
    }
    if (arrow_per_second > avro_per_second) {
      return Mismatch(n, t, path,
                      "its values in " + std::string(UnitName(arrow_per_second)) +
                          " would lose precision in " +
                          std::string(UnitName(avro_per_second)));
    }
    int32_t s = NewStep(n.type == AvroType::kInt ? Op::kInt : Op::kLong, path);
    step(s).factor = avro_per_second / arrow_per_second;
    return s;
  }

  AvroEncoder::Program* p_;
};

// The arrays of one batch, bound to the steps that read them.
struct Bound {
  std::vector<std::shared_ptr<arrow::Array>> arrays;  // by step
  std::vector<const arrow::ArrayData*> data;          // arrays[i]->data()
};

class Writer {
 public:
  Writer(const AvroEncoder::Program& p, const Bound& b) : p_(p), b_(b) {}

  Status Write(int32_t id, int64_t row, std::string* out) const {
    const Step& s = p_.steps[static_cast<size_t>(id)];
    if (s.op == Op::kConstant) {
      out->append(p_.constants, static_cast<size_t>(s.a), static_cast<size_t>(s.b));
      return Status::OK();
    }
    const arrow::Array& a = *b_.arrays[static_cast<size_t>(id)];
    if (s.op == Op::kUnion) {
      if (a.IsNull(row)) {
        if (s.a < 0) return Bad(s, row, "a null, and the union has no null branch");
        PutLong(out, s.a);
        return Status::OK();
      }
      PutLong(out, s.b);
      return Write(s.children[0], row, out);
    }
    if (s.op == Op::kArrowUnion) {
      const auto& u = static_cast<const arrow::UnionArray&>(a);
      const int k = u.child_id(row);
      const int64_t at =
          a.type_id() == arrow::Type::DENSE_UNION
              ? static_cast<const arrow::DenseUnionArray&>(a).value_offset(row)
              : row;
      PutLong(out, s.columns[static_cast<size_t>(k)]);
      return Write(s.children[static_cast<size_t>(k)], at, out);
    }
    if (s.op != Op::kNothing && a.IsNull(row) && (s.op != Op::kRecord || id != 0)) {
      if (s.default_offset >= 0) {
        out->append(p_.constants, static_cast<size_t>(s.default_offset),
                    static_cast<size_t>(s.default_length));
        return Status::OK();
      }
      return Bad(s, row, "a null, and the Avro type does not admit null");
    }
    const arrow::ArrayData& d = *b_.data[static_cast<size_t>(id)];
    switch (s.op) {
      case Op::kNothing:
      case Op::kConstant:
      case Op::kUnion:
      case Op::kArrowUnion:
        return Status::OK();
      case Op::kBool:
        out->push_back(static_cast<const arrow::BooleanArray&>(a).Value(row) ? 1 : 0);
        return Status::OK();
      case Op::kInt: {
        int64_t v = 0;
        if (!IntAt(d, row, &v) || !Scale(s.factor, &v) ||
            v < std::numeric_limits<int32_t>::min() ||
            v > std::numeric_limits<int32_t>::max()) {
          return Bad(s, row, "a value outside the range of an Avro int");
        }
        PutLong(out, v);
        return Status::OK();
      }
      case Op::kLong: {
        int64_t v = 0;
        if (!IntAt(d, row, &v) || !Scale(s.factor, &v)) {
          return Bad(s, row, "a value outside the range of an Avro long");
        }
        PutLong(out, v);
        return Status::OK();
      }
      case Op::kFloat:
        PutLittleEndian(out, static_cast<float>(DoubleAt(d, row)));
        return Status::OK();
      case Op::kDouble:
        PutLittleEndian(out, DoubleAt(d, row));
        return Status::OK();
      case Op::kBytes:
        PutBytes(out, BytesAt(a, row));
        return Status::OK();
      case Op::kDictBytes: {
        const auto& dict = static_cast<const arrow::DictionaryArray&>(a);
        PutBytes(out, BytesAt(*dict.dictionary(), dict.GetValueIndex(row)));
        return Status::OK();
      }
      case Op::kFixed: {
        std::string_view v = BytesAt(a, row);
        if (v.size() != static_cast<size_t>(s.a)) {
          return Bad(
              s, row,
              std::to_string(v.size()) + " bytes for a fixed of " + std::to_string(s.a));
        }
        out->append(v);
        return Status::OK();
      }
      case Op::kEnum:
      case Op::kDictEnum: {
        std::string_view v;
        if (s.op == Op::kEnum) {
          v = BytesAt(a, row);
        } else {
          const auto& dict = static_cast<const arrow::DictionaryArray&>(a);
          v = BytesAt(*dict.dictionary(), dict.GetValueIndex(row));
        }
        auto it = s.symbols.find(std::string(v));
        if (it == s.symbols.end()) {
          return Bad(s, row, "'" + std::string(v) + "', not a symbol of the enum");
        }
        PutLong(out, it->second);
        return Status::OK();
      }
      case Op::kDecimal:
        return WriteDecimal(s, a, row, out);
      case Op::kUuidFixed16: {
        static constexpr char kHex[] = "0123456789abcdef";
        std::string_view v = BytesAt(a, row);
        std::string text;
        for (size_t i = 0; i < v.size(); ++i) {
          if (i == 4 || i == 6 || i == 8 || i == 10) text.push_back('-');
          auto c = static_cast<uint8_t>(v[i]);
          text.push_back(kHex[c >> 4]);
          text.push_back(kHex[c & 15]);
        }
        PutBytes(out, text);
        return Status::OK();
      }
      case Op::kRecord:
        for (int32_t child : s.children) KELT_RETURN_NOT_OK(Write(child, row, out));
        return Status::OK();
      case Op::kArray: {
        int64_t begin, end;
        if (a.type_id() == arrow::Type::LARGE_LIST) {
          const auto& l = static_cast<const arrow::LargeListArray&>(a);
          begin = l.value_offset(row);
          end = begin + l.value_length(row);
        } else {
          const auto& l = static_cast<const arrow::ListArray&>(a);
          begin = l.value_offset(row);
          end = begin + l.value_length(row);
        }
        if (end > begin) {
          PutLong(out, end - begin);
          for (int64_t i = begin; i < end; ++i) {
            KELT_RETURN_NOT_OK(Write(s.children[0], i, out));
          }
        }
        PutLong(out, 0);
        return Status::OK();
      }
      case Op::kMap: {
        const auto& m = static_cast<const arrow::MapArray&>(a);
        int64_t begin = m.value_offset(row);
        int64_t end = begin + m.value_length(row);
        if (end > begin) {
          PutLong(out, end - begin);
          for (int64_t i = begin; i < end; ++i) {
            KELT_RETURN_NOT_OK(Write(s.children[0], i, out));
            KELT_RETURN_NOT_OK(Write(s.children[1], i, out));
          }
        }
        PutLong(out, 0);
        return Status::OK();
      }
    }
    return Status::OK();
  }

 private:
  static bool Scale(int64_t factor, int64_t* v) {
    if (factor == 1) return true;
    return !__builtin_mul_overflow(*v, factor, v);
  }

  Status WriteDecimal(const Step& s, const arrow::Array& a, int64_t row,
                      std::string* out) const {
    const auto& fsb = static_cast<const arrow::FixedSizeBinaryArray&>(a);
    const uint8_t* little = fsb.GetValue(row);
    const int32_t width = fsb.byte_width();
    if (s.check_precision) {
      bool fits = width == 16 ? arrow::Decimal128(little).FitsInPrecision(s.precision)
                              : arrow::Decimal256(little).FitsInPrecision(s.precision);
      if (!fits) {
        return Bad(
            s, row,
            "a decimal of more digits than the precision " + std::to_string(s.precision));
      }
    }
    std::string big = BigEndian(little, width);
    // Drop the leading bytes that only repeat the sign.
    size_t start = 0;
    while (start + 1 < big.size()) {
      auto b0 = static_cast<uint8_t>(big[start]);
      auto b1 = static_cast<uint8_t>(big[start + 1]);
      if ((b0 == 0x00 && (b1 & 0x80) == 0) || (b0 == 0xff && (b1 & 0x80) != 0)) {
        ++start;
      } else {
        break;
      }
    }
    std::string_view minimal(big.data() + start, big.size() - start);
    if (s.a == 0) {
      PutBytes(out, minimal);
      return Status::OK();
    }
    const auto size = static_cast<size_t>(s.a);
    if (minimal.size() > size) {
      return Bad(s, row,
                 "a decimal too large for a fixed of " + std::to_string(s.a) + " bytes");
    }
    char sign = (static_cast<uint8_t>(minimal[0]) & 0x80) ? '\xff' : '\0';
    out->append(size - minimal.size(), sign);
    out->append(minimal);
    return Status::OK();
  }

  static Status Bad(const Step& s, int64_t row, const std::string& what) {
    return Status::Invalid("Avro encoding: field " +
                           Quoted(s.path.empty() ? "<record>" : s.path) + ", row " +
                           std::to_string(row) + ": " + what);
  }

  const AvroEncoder::Program& p_;
  const Bound& b_;
};

void Bind(const AvroEncoder::Program& p, int32_t id, std::shared_ptr<arrow::Array> array,
          Bound* b) {
  const Step& s = p.steps[static_cast<size_t>(id)];
  if (s.op == Op::kConstant) return;
  b->data[static_cast<size_t>(id)] = array->data().get();
  switch (s.op) {
    case Op::kRecord: {
      if (id != 0) {
        const auto& st = static_cast<const arrow::StructArray&>(*array);
        for (size_t i = 0; i < s.children.size(); ++i) {
          if (s.columns[i] >= 0) Bind(p, s.children[i], st.field(s.columns[i]), b);
        }
      }
      break;
    }
    case Op::kArray:
      if (array->type_id() == arrow::Type::LARGE_LIST) {
        Bind(p, s.children[0], static_cast<const arrow::LargeListArray&>(*array).values(),
             b);
      } else {
        Bind(p, s.children[0], static_cast<const arrow::ListArray&>(*array).values(), b);
      }
      break;
    case Op::kMap: {
      const auto& m = static_cast<const arrow::MapArray&>(*array);
      Bind(p, s.children[0], m.keys(), b);
      Bind(p, s.children[1], m.items(), b);
      break;
    }
    case Op::kUnion:
      if (!s.children.empty()) Bind(p, s.children[0], array, b);
      break;
    case Op::kArrowUnion: {
      const auto& u = static_cast<const arrow::UnionArray&>(*array);
      for (size_t k = 0; k < s.children.size(); ++k) {
        Bind(p, s.children[k], u.field(static_cast<int>(k)), b);
      }
      break;
    }
    default:
      break;
  }
  b->arrays[static_cast<size_t>(id)] = std::move(array);
}

}  // namespace
}  // namespace avro

AvroEncoder::AvroEncoder(std::unique_ptr<Program> program)
    : program_(std::move(program)) {}
AvroEncoder::~AvroEncoder() = default;

Result<std::unique_ptr<AvroEncoder>> AvroEncoder::Make(
    std::shared_ptr<arrow::Schema> arrow_schema, const AvroSchema& writer) {
  if (arrow_schema == nullptr) return Status::Invalid("AvroEncoder: no Arrow schema");
  auto program = std::make_unique<Program>(writer);
  program->arrow_schema = std::move(arrow_schema);
  avro::EncoderCompiler compiler(program.get());
  KELT_RETURN_NOT_OK(compiler.CompileRoot(writer.root(), *program->arrow_schema));
  return std::unique_ptr<AvroEncoder>(new AvroEncoder(std::move(program)));
}

Status AvroEncoder::Encode(const arrow::RecordBatch& batch,
                           std::vector<std::string>* bodies,
                           std::string_view prefix) const {
  const Program& p = *program_;
  const arrow::Schema& want = *p.arrow_schema;
  const arrow::Schema& got = *batch.schema();
  if (got.num_fields() != want.num_fields()) {
    return Status::Invalid("Avro encoding: the batch has " +
                           std::to_string(got.num_fields()) + " columns, the encoder " +
                           std::to_string(want.num_fields()));
  }
  for (int i = 0; i < want.num_fields(); ++i) {
    const auto& g = got.field(i);
    const auto& w = want.field(i);
    if (g->name() != w->name() || !g->type()->Equals(*w->type())) {
      return Status::Invalid("Avro encoding: column " + std::to_string(i) + " is '" +
                             g->name() + "' " + g->type()->ToString() +
                             ", the encoder was made for '" + w->name() + "' " +
                             w->type()->ToString());
    }
  }
  avro::Bound bound;
  bound.arrays.resize(p.steps.size());
  bound.data.resize(p.steps.size());
  const Step& root = p.steps[0];
  for (size_t i = 0; i < root.children.size(); ++i) {
    if (root.columns[i] >= 0) {
      avro::Bind(p, root.children[i], batch.column(root.columns[i]), &bound);
    }
  }
  avro::Writer writer(p, bound);
  bodies->reserve(bodies->size() + static_cast<size_t>(batch.num_rows()));
  std::string body;
  for (int64_t row = 0; row < batch.num_rows(); ++row) {
    body.assign(prefix);
    for (int32_t child : root.children) {
      KELT_RETURN_NOT_OK(writer.Write(child, row, &body));
    }
    bodies->push_back(body);
  }
  return Status::OK();
}

const std::shared_ptr<arrow::Schema>& AvroEncoder::arrow_schema() const {
  return program_->arrow_schema;
}

std::string AvroEncoder::ToString() const {
  std::string out;
  for (size_t i = 0; i < program_->steps.size(); ++i) {
    const Step& s = program_->steps[i];
    out += std::to_string(i) + ": " + std::string(avro::OpName(s.op));
    if (!s.path.empty()) out += " " + s.path;
    if (s.op == Op::kUnion)
      out += " null=" + std::to_string(s.a) + " value=" + std::to_string(s.b);
    if (s.op == Op::kFixed || (s.op == Op::kDecimal && s.a > 0)) {
      out += " size=" + std::to_string(s.a);
    }
    if (s.factor != 1) out += " x" + std::to_string(s.factor);
    if (!s.children.empty()) {
      out += " ->";
      for (int32_t c : s.children) out += " " + std::to_string(c);
    }
    out += "\n";
  }
  return out;
}

}  // namespace kelt
