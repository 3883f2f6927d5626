// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// ProtobufEncoder: Arrow rows → message bodies, through libprotobuf's DynamicMessage and
// Reflection (the produce side is not the hot path; the library's serializer is the one
// every reader agrees with). Make checks every column against its field once, so Encode
// fails only on values: an integer out of the field's range, an unknown enum name, a
// string that is not UTF-8, a null inside a repeated field.
#include <arrow/api.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/common/text.h"
#include "kelt/common/time_units.h"
#include "kelt/protobuf.h"
#include "kelt/protobuf/schema.h"

namespace kelt {
namespace {

namespace gp = google::protobuf;
using FD = gp::FieldDescriptor;

enum class WellKnown : uint8_t { kNone, kTimestamp, kDuration, kWrapper, kJson };

WellKnown KindOf(const gp::Descriptor* d) {
  const std::string& n = d->full_name();
  if (n == "google.protobuf.Timestamp") return WellKnown::kTimestamp;
  if (n == "google.protobuf.Duration") return WellKnown::kDuration;
  if (n == "google.protobuf.Struct" || n == "google.protobuf.Value" ||
      n == "google.protobuf.ListValue") {
    return WellKnown::kJson;
  }
  if (n.rfind("google.protobuf.", 0) == 0 && n.size() > 5 &&
      n.compare(n.size() - 5, 5, "Value") == 0 && d->field_count() == 1 &&
      d->field(0)->name() == "value") {
    return WellKnown::kWrapper;
  }
  return WellKnown::kNone;
}

bool IsInteger(arrow::Type::type t) {
  return t >= arrow::Type::UINT8 && t <= arrow::Type::INT64;
}
bool IsText(arrow::Type::type t) {
  return t == arrow::Type::STRING || t == arrow::Type::LARGE_STRING ||
         t == arrow::Type::STRING_VIEW;
}
bool IsBytes(arrow::Type::type t) {
  return IsText(t) || t == arrow::Type::BINARY || t == arrow::Type::LARGE_BINARY ||
         t == arrow::Type::BINARY_VIEW || t == arrow::Type::FIXED_SIZE_BINARY;
}
bool IsList(arrow::Type::type t) {
  return t == arrow::Type::LIST || t == arrow::Type::LARGE_LIST;
}
bool IsTextDictionary(const arrow::DataType& t) {
  if (t.id() != arrow::Type::DICTIONARY) return false;
  const auto& d = static_cast<const arrow::DictionaryType&>(t);
  return IsText(d.value_type()->id());
}

std::string Join(const std::string& path, const std::string& name) {
  return path.empty() ? name : path + "." + name;
}

Status Mismatch(const std::string& path, const FD* f, const arrow::DataType& t,
                std::string_view want) {
  return Status::TypeError("column '" + path + "' (" + t.ToString() +
                           ") cannot encode field " + f->full_name() + " (" +
                           std::string(f->type_name()) + "): expected " +
                           std::string(want));
}

Status CheckField(const FD* f, const arrow::DataType& t, const std::string& path);

// The columns of a struct (or the batch) against message `d`'s fields by name.
Status CheckMessage(const gp::Descriptor* d, const arrow::FieldVector& fields,
                    const std::string& path) {
  for (const auto& child : fields) {
    const std::string where = Join(path, child->name());
    const FD* f = d->FindFieldByName(child->name());
    if (f == nullptr) {
      return Status::TypeError("column '" + where + "': message " + d->full_name() +
                               " has no field '" + child->name() + "'");
    }
    KELT_RETURN_NOT_OK(CheckField(f, *child->type(), where));
  }
  return Status::OK();
}

// One value of `f` (its label aside).
Status CheckValue(const FD* f, const arrow::DataType& t, const std::string& path) {
  const arrow::Type::type id = t.id();
  switch (f->cpp_type()) {
    case FD::CPPTYPE_INT32:
    case FD::CPPTYPE_INT64:
    case FD::CPPTYPE_UINT32:
    case FD::CPPTYPE_UINT64:
      return IsInteger(id) ? Status::OK() : Mismatch(path, f, t, "an integer column");
    case FD::CPPTYPE_FLOAT:
    case FD::CPPTYPE_DOUBLE:
      return IsInteger(id) || arrow::is_floating(id)
                 ? Status::OK()
                 : Mismatch(path, f, t, "a number column");
    case FD::CPPTYPE_BOOL:
      return id == arrow::Type::BOOL ? Status::OK() : Mismatch(path, f, t, "bool");
    case FD::CPPTYPE_STRING:
      if (f->type() == FD::TYPE_STRING) {
        return IsText(id) || IsTextDictionary(t)
                   ? Status::OK()
                   : Mismatch(path, f, t, "a string column");
      }
      return IsBytes(id) ? Status::OK() : Mismatch(path, f, t, "a binary column");
    case FD::CPPTYPE_ENUM:
      return IsText(id) || IsTextDictionary(t) || IsInteger(id)
                 ? Status::OK()
                 : Mismatch(path, f, t, "the value names (string) or numbers");
    case FD::CPPTYPE_MESSAGE:
      break;
  }
  const gp::Descriptor* d = f->message_type();
  switch (KindOf(d)) {
    case WellKnown::kTimestamp:
      return id == arrow::Type::TIMESTAMP ? Status::OK()
                                          : Mismatch(path, f, t, "a timestamp column");
    case WellKnown::kDuration:
      return id == arrow::Type::DURATION ? Status::OK()
                                         : Mismatch(path, f, t, "a duration column");
    case WellKnown::kWrapper:
      return CheckValue(d->field(0), t, path);
    case WellKnown::kJson:
      return IsText(id) ? Status::OK() : Mismatch(path, f, t, "JSON text (string)");
    case WellKnown::kNone:
      break;
  }
  if (id != arrow::Type::STRUCT) return Mismatch(path, f, t, "a struct column");
  return CheckMessage(d, static_cast<const arrow::StructType&>(t).fields(), path);
}

Status CheckField(const FD* f, const arrow::DataType& t, const std::string& path) {
  if (f->is_map()) {
    if (t.id() != arrow::Type::MAP) return Mismatch(path, f, t, "a map column");
    const auto& m = static_cast<const arrow::MapType&>(t);
    const gp::Descriptor* entry = f->message_type();
    KELT_RETURN_NOT_OK(CheckValue(entry->map_key(), *m.key_type(), path + "{key}"));
    return CheckValue(entry->map_value(), *m.item_type(), path + "{}");
  }
  if (f->is_repeated()) {
    if (!IsList(t.id())) return Mismatch(path, f, t, "a list column");
    return CheckValue(f, *static_cast<const arrow::BaseListType&>(t).value_type(),
                      path + "[]");
  }
  return CheckValue(f, t, path);
}

// --- reading one Arrow value -----------------------------------------------------------

// An integer cell as int64 (`*big` set for a uint64 beyond int64).
int64_t IntAt(const arrow::Array& a, int64_t i, uint64_t* big) {
  *big = 0;
  switch (a.type_id()) {
    case arrow::Type::INT8:
      return static_cast<const arrow::Int8Array&>(a).Value(i);
    case arrow::Type::INT16:
      return static_cast<const arrow::Int16Array&>(a).Value(i);
    case arrow::Type::INT32:
      return static_cast<const arrow::Int32Array&>(a).Value(i);
    case arrow::Type::INT64:
      return static_cast<const arrow::Int64Array&>(a).Value(i);
    case arrow::Type::UINT8:
      return static_cast<const arrow::UInt8Array&>(a).Value(i);
    case arrow::Type::UINT16:
      return static_cast<const arrow::UInt16Array&>(a).Value(i);
    case arrow::Type::UINT32:
      return static_cast<const arrow::UInt32Array&>(a).Value(i);
    default: {
      const uint64_t v = static_cast<const arrow::UInt64Array&>(a).Value(i);
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) *big = v;
      return static_cast<int64_t>(v);
    }
  }
}

double DoubleAt(const arrow::Array& a, int64_t i) {
  switch (a.type_id()) {
    case arrow::Type::HALF_FLOAT:
      return static_cast<double>(static_cast<const arrow::HalfFloatArray&>(a).Value(i));
    case arrow::Type::FLOAT:
      return static_cast<const arrow::FloatArray&>(a).Value(i);
    case arrow::Type::DOUBLE:
      return static_cast<const arrow::DoubleArray&>(a).Value(i);
    default: {
      uint64_t big = 0;
      const int64_t v = IntAt(a, i, &big);
      return big != 0 ? static_cast<double>(big) : static_cast<double>(v);
    }
  }
}

std::string_view BytesAt(const arrow::Array& a, int64_t i) {
  switch (a.type_id()) {
    case arrow::Type::STRING:
      return static_cast<const arrow::StringArray&>(a).GetView(i);
    case arrow::Type::LARGE_STRING:
      return static_cast<const arrow::LargeStringArray&>(a).GetView(i);
    case arrow::Type::STRING_VIEW:
      return static_cast<const arrow::StringViewArray&>(a).GetView(i);
    case arrow::Type::BINARY:
      return static_cast<const arrow::BinaryArray&>(a).GetView(i);
    case arrow::Type::LARGE_BINARY:
      return static_cast<const arrow::LargeBinaryArray&>(a).GetView(i);
    case arrow::Type::BINARY_VIEW:
      return static_cast<const arrow::BinaryViewArray&>(a).GetView(i);
    case arrow::Type::FIXED_SIZE_BINARY:
      return static_cast<const arrow::FixedSizeBinaryArray&>(a).GetView(i);
    case arrow::Type::DICTIONARY: {
      const auto& d = static_cast<const arrow::DictionaryArray&>(a);
      return BytesAt(*d.dictionary(), d.GetValueIndex(i));
    }
    default:
      return {};
  }
}

// --- writing a message -----------------------------------------------------------------

class Writer {
 public:
  // The columns (top level or a struct's children) into message `m`, at row `i`.
  Status Fields(gp::Message* m, const arrow::FieldVector& fields,
                const arrow::ArrayVector& columns, int64_t i, const std::string& path) {
    const gp::Descriptor* d = m->GetDescriptor();
    for (size_t c = 0; c < columns.size(); ++c) {
      const FD* f = d->FindFieldByName(fields[c]->name());
      KELT_RETURN_NOT_OK(Field(m, f, *columns[c], i, Join(path, fields[c]->name())));
    }
    return Status::OK();
  }

 private:
  Status Field(gp::Message* m, const FD* f, const arrow::Array& a, int64_t i,
               const std::string& path) {
    if (a.IsNull(i)) return Status::OK();  // absent: the field's default, or null
    if (f->is_map()) {
      const auto& map = static_cast<const arrow::MapArray&>(a);
      const FD* key = f->message_type()->map_key();
      const FD* value = f->message_type()->map_value();
      for (int64_t j = map.value_offset(i); j < map.value_offset(i + 1); ++j) {
        gp::Message* entry = m->GetReflection()->AddMessage(m, f);
        KELT_RETURN_NOT_OK(Put(entry, key, false, *map.keys(), j, path + "{key}"));
        if (!map.items()->IsNull(j)) {
          KELT_RETURN_NOT_OK(Put(entry, value, false, *map.items(), j, path + "{}"));
        }
      }
      return Status::OK();
    }
    if (f->is_repeated()) {
      const bool large = a.type_id() == arrow::Type::LARGE_LIST;
      int64_t begin = 0;
      int64_t end = 0;
      const arrow::Array* values = nullptr;
      if (large) {
        const auto& list = static_cast<const arrow::LargeListArray&>(a);
        begin = list.value_offset(i);
        end = list.value_offset(i + 1);
        values = list.values().get();
      } else {
        const auto& list = static_cast<const arrow::ListArray&>(a);
        begin = list.value_offset(i);
        end = list.value_offset(i + 1);
        values = list.values().get();
      }
      for (int64_t j = begin; j < end; ++j) {
        if (values->IsNull(j)) {
          return Status::TypeError("column '" + path + "', row " + std::to_string(i) +
                                   ": a null item in repeated field " + f->full_name() +
                                   " (a repeated field cannot hold nulls)");
        }
        KELT_RETURN_NOT_OK(Put(m, f, true, *values, j, path + "[]"));
      }
      return Status::OK();
    }
    return Put(m, f, false, a, i, path);
  }

  // Set (or, `add`, append to) field `f` of `m` from cell `i` of `a`.
  Status Put(gp::Message* m, const FD* f, bool add, const arrow::Array& a, int64_t i,
             const std::string& path) {
    const gp::Reflection* r = m->GetReflection();
    auto bad = [&](const std::string& why) {
      return Status::TypeError("column '" + path + "', row " + std::to_string(i) + ": " +
                               why + " (field " + f->full_name() + ")");
    };
    switch (f->cpp_type()) {
      case FD::CPPTYPE_INT32:
      case FD::CPPTYPE_INT64:
      case FD::CPPTYPE_UINT32:
      case FD::CPPTYPE_UINT64:
        return PutInteger(m, r, f, add, a, i, bad);
      case FD::CPPTYPE_FLOAT: {
        const auto v = static_cast<float>(DoubleAt(a, i));
        add ? r->AddFloat(m, f, v) : r->SetFloat(m, f, v);
        return Status::OK();
      }
      case FD::CPPTYPE_DOUBLE: {
        const double v = DoubleAt(a, i);
        add ? r->AddDouble(m, f, v) : r->SetDouble(m, f, v);
        return Status::OK();
      }
      case FD::CPPTYPE_BOOL: {
        const bool v = static_cast<const arrow::BooleanArray&>(a).Value(i);
        add ? r->AddBool(m, f, v) : r->SetBool(m, f, v);
        return Status::OK();
      }
      case FD::CPPTYPE_STRING: {
        std::string v(BytesAt(a, i));
        if (f->type() == FD::TYPE_STRING && !text::IsValidUtf8(v)) {
          return bad("not UTF-8");
        }
        add ? r->AddString(m, f, std::move(v)) : r->SetString(m, f, std::move(v));
        return Status::OK();
      }
      case FD::CPPTYPE_ENUM:
        return PutEnum(m, r, f, add, a, i, bad);
      case FD::CPPTYPE_MESSAGE:
        break;
    }
    gp::Message* sub = add ? r->AddMessage(m, f) : r->MutableMessage(m, f);
    const gp::Descriptor* d = f->message_type();
    const gp::Reflection* sr = sub->GetReflection();
    switch (KindOf(d)) {
      case WellKnown::kTimestamp:
      case WellKnown::kDuration: {
        const bool duration = a.type_id() == arrow::Type::DURATION;
        const int64_t per = TimeUnitsPerSecond(
            duration ? static_cast<const arrow::DurationType&>(*a.type()).unit()
                     : static_cast<const arrow::TimestampType&>(*a.type()).unit());
        const int64_t v = duration
                              ? static_cast<const arrow::DurationArray&>(a).Value(i)
                              : static_cast<const arrow::TimestampArray&>(a).Value(i);
        int64_t seconds = v / per;
        int64_t rest = v % per;
        if (!duration && rest < 0) {  // a Timestamp's nanos are never negative
          --seconds;
          rest += per;
        }
        sr->SetInt64(sub, d->FindFieldByName("seconds"), seconds);
        sr->SetInt32(sub, d->FindFieldByName("nanos"),
                     static_cast<int32_t>(rest * (1000000000 / per)));
        return Status::OK();
      }
      case WellKnown::kWrapper:
        return Put(sub, d->field(0), false, a, i, path);
      case WellKnown::kJson: {
        const std::string json(BytesAt(a, i));
        auto st = gp::util::JsonStringToMessage(json, sub);
        if (!st.ok())
          return bad("JSON text that is not a " + d->full_name() + ": " +
                     std::string(st.message()));
        return Status::OK();
      }
      case WellKnown::kNone:
        break;
    }
    const auto& s = static_cast<const arrow::StructArray&>(a);
    arrow::ArrayVector children;
    for (int c = 0; c < s.num_fields(); ++c) children.push_back(s.field(c));
    return Fields(sub, s.struct_type()->fields(), children, i, path);
  }

  template <typename Bad>
  Status PutInteger(gp::Message* m, const gp::Reflection* r, const FD* f, bool add,
                    const arrow::Array& a, int64_t i, const Bad& bad) {
    uint64_t big = 0;
    const int64_t v = IntAt(a, i, &big);
    switch (f->cpp_type()) {
      case FD::CPPTYPE_INT32:
        if (big != 0 || v < std::numeric_limits<int32_t>::min() ||
            v > std::numeric_limits<int32_t>::max()) {
          return bad((big != 0 ? std::to_string(big) : std::to_string(v)) +
                     " is out of range for a 32-bit field");
        }
        add ? r->AddInt32(m, f, static_cast<int32_t>(v))
            : r->SetInt32(m, f, static_cast<int32_t>(v));
        return Status::OK();
      case FD::CPPTYPE_INT64:
        if (big != 0) return bad(std::to_string(big) + " is out of range for int64");
        add ? r->AddInt64(m, f, v) : r->SetInt64(m, f, v);
        return Status::OK();
      case FD::CPPTYPE_UINT32:
        if (big != 0 || v < 0 || v > std::numeric_limits<uint32_t>::max()) {
          return bad((big != 0 ? std::to_string(big) : std::to_string(v)) +
                     " is out of range for an unsigned 32-bit field");
        }
        add ? r->AddUInt32(m, f, static_cast<uint32_t>(v))
            : r->SetUInt32(m, f, static_cast<uint32_t>(v));
        return Status::OK();
      default: {
        if (big == 0 && v < 0) {
          return bad(std::to_string(v) + " is negative in an unsigned field");
        }
        const uint64_t u = big != 0 ? big : static_cast<uint64_t>(v);
        add ? r->AddUInt64(m, f, u) : r->SetUInt64(m, f, u);
        return Status::OK();
      }
    }
  }

  // An enum from its value's name, or its number (an open enum's unknown number lands
  // as its decimal text when decoded, so that text is read back as the number).
  template <typename Bad>
  Status PutEnum(gp::Message* m, const gp::Reflection* r, const FD* f, bool add,
                 const arrow::Array& a, int64_t i, const Bad& bad) {
    const gp::EnumDescriptor* e = f->enum_type();
    int64_t number = 0;
    if (IsInteger(a.type_id())) {
      uint64_t big = 0;
      number = IntAt(a, i, &big);
      if (big != 0) return bad(std::to_string(big) + " is not an enum number");
    } else {
      const std::string_view name = BytesAt(a, i);
      const gp::EnumValueDescriptor* v = e->FindValueByName(std::string(name));
      if (v != nullptr) {
        number = v->number();
      } else if (std::string_view why; !text::ParseInt64(name, &number, &why)) {
        return bad("'" + text::Utf8Lossy(name) + "' is not a value of enum " +
                   e->full_name());
      }
    }
    if (number < std::numeric_limits<int32_t>::min() ||
        number > std::numeric_limits<int32_t>::max() ||
        (e->file()->syntax() != gp::FileDescriptor::SYNTAX_PROTO3 &&
         e->FindValueByNumber(static_cast<int>(number)) == nullptr)) {
      return bad(std::to_string(number) + " is not a number of enum " + e->full_name());
    }
    const int n = static_cast<int>(number);
    add ? r->AddEnumValue(m, f, n) : r->SetEnumValue(m, f, n);
    return Status::OK();
  }
};

}  // namespace

struct ProtobufEncoder::State {
  gp::DynamicMessageFactory factory;
  std::shared_ptr<const ProtobufSchema::Pool> pool;  // keeps the descriptors alive
  const gp::Descriptor* descriptor = nullptr;
  std::unique_ptr<gp::Message> message;
  std::shared_ptr<arrow::Schema> columns;
};

Result<std::unique_ptr<ProtobufEncoder>> ProtobufEncoder::Make(
    const ProtobufSchema& schema, const std::vector<int32_t>& message_indexes,
    std::shared_ptr<arrow::Schema> columns) {
  KELT_ASSIGN_OR_RAISE(const gp::Descriptor* d,
                       protobuf::FindMessage(schema, message_indexes));
  KELT_RETURN_NOT_OK(CheckMessage(d, columns->fields(), ""));
  auto state = std::make_unique<State>();
  state->pool = schema.pool();
  state->descriptor = d;
  state->message.reset(state->factory.GetPrototype(d)->New());
  state->columns = std::move(columns);
  return std::unique_ptr<ProtobufEncoder>(new ProtobufEncoder(std::move(state)));
}

ProtobufEncoder::ProtobufEncoder(std::unique_ptr<State> state)
    : state_(std::move(state)) {}
ProtobufEncoder::~ProtobufEncoder() = default;

const std::string& ProtobufEncoder::message_name() const {
  return state_->descriptor->full_name();
}

Status ProtobufEncoder::Encode(const arrow::RecordBatch& batch,
                               std::vector<std::string>* bodies) {
  if (!batch.schema()->Equals(*state_->columns, /*check_metadata=*/false)) {
    return Status::Invalid("the batch's columns are not the encoder's: " +
                           batch.schema()->ToString());
  }
  Writer writer;
  gp::Message* m = state_->message.get();
  for (int64_t i = 0; i < batch.num_rows(); ++i) {
    m->Clear();
    KELT_RETURN_NOT_OK(
        writer.Fields(m, batch.schema()->fields(), batch.columns(), i, ""));
    if (!m->IsInitialized()) {  // proto2 `required` fields
      return Status::TypeError(
          "row " + std::to_string(i) + ": " + message_name() +
          " lacks required fields: " + m->InitializationErrorString());
    }
    std::string body;
    if (!m->SerializePartialToString(&body)) {
      return Status::Invalid("row " + std::to_string(i) + ": " + message_name() +
                             " did not serialize (larger than 2 GiB?)");
    }
    bodies->push_back(std::move(body));
  }
  return Status::OK();
}

}  // namespace kelt
