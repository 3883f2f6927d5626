// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// ProtobufDecoder: a reflection-free reader of the Protobuf wire format driven by the
// plan's field tree, writing into Arrow builders.
//
// Each message is read in two passes over the same code: the first validates every
// byte (tags, varints, lengths, wire types, UTF-8, Timestamp ranges) and writes
// nothing; the second, which cannot meet bad bytes, appends. So a failed record leaves
// no trace although Arrow's builders cannot un-append. Within a message, the fields are
// first collected (field number → where its values are: the last one for a scalar,
// every one for a message to merge or a repeated field), then written in column order.
#include <arrow/api.h>

#include <cstring>
#include <limits>
#include <map>

#include "kelt/common/arrow_status.h"
#include "kelt/common/text.h"
#include "kelt/protobuf.h"
#include "kelt/protobuf/plan.h"

namespace kelt {

using protobuf::Node;
using protobuf::NodeKind;
using protobuf::WireCoding;

std::string_view ProtobufErrorKindName(ProtobufErrorKind kind) {
  switch (kind) {
    case ProtobufErrorKind::kTruncated:
      return "TRUNCATED";
    case ProtobufErrorKind::kBadVarint:
      return "BAD_VARINT";
    case ProtobufErrorKind::kBadFieldNumber:
      return "BAD_FIELD_NUMBER";
    case ProtobufErrorKind::kWrongWireType:
      return "WRONG_WIRE_TYPE";
    case ProtobufErrorKind::kBadWireType:
      return "BAD_WIRE_TYPE";
    case ProtobufErrorKind::kBadGroup:
      return "BAD_GROUP";
    case ProtobufErrorKind::kBadPackedLength:
      return "BAD_PACKED_LENGTH";
    case ProtobufErrorKind::kInvalidUtf8:
      return "INVALID_UTF8";
    case ProtobufErrorKind::kOutOfRange:
      return "OUT_OF_RANGE";
    case ProtobufErrorKind::kTooLarge:
      return "TOO_LARGE";
    case ProtobufErrorKind::kTooDeep:
      return "TOO_DEEP";
  }
  return "UNKNOWN";
}

namespace {

constexpr int kMaxGroupDepth = 64;

// Wire types (the encoding spec's VARINT, I64, LEN, SGROUP, EGROUP, I32).
constexpr uint8_t kVarintWire = 0;
constexpr uint8_t kI64Wire = 1;
constexpr uint8_t kLenWire = 2;
constexpr uint8_t kStartGroupWire = 3;
constexpr uint8_t kEndGroupWire = 4;
constexpr uint8_t kI32Wire = 5;

uint8_t WireTypeOf(WireCoding coding) {
  switch (coding) {
    case WireCoding::kVarint:
    case WireCoding::kZigZag32:
    case WireCoding::kZigZag64:
      return kVarintWire;
    case WireCoding::kFixed32:
      return kI32Wire;
    case WireCoding::kFixed64:
      return kI64Wire;
    case WireCoding::kLength:
      return kLenWire;
  }
  return kLenWire;
}

bool IsMessageLike(NodeKind kind) {
  return kind == NodeKind::kMessage || kind == NodeKind::kTimestamp ||
         kind == NodeKind::kDuration || kind == NodeKind::kWrapper ||
         kind == NodeKind::kMap || kind == NodeKind::kJson;
}

constexpr int kMaxJsonDepth = 100;  // libprotobuf's recursion limit

// One occurrence of a field in the bytes: a varint's or fixed value's raw bits, or a
// LEN value's position and length in the body.
struct Occurrence {
  uint64_t value = 0;
  uint32_t length = 0;
  uint32_t offset = 0;  // of the tag, for errors
  uint8_t wire = 0;
};

}  // namespace

class ProtobufDecoder::Impl {
 public:
  explicit Impl(std::shared_ptr<const ProtobufPlan> plan)
      : plan_(std::move(plan)), program_(&plan_->program()) {}

  Status Init() {
    const int32_t n = program_->node_count;
    slots_.resize(n);
    oneof_current_.resize(n);
    builders_.assign(n, nullptr);
    value_builders_.assign(n, nullptr);
    enum_extras_.resize(n);
    KELT_ARROW_ASSIGN_OR_RAISE(root_builder_, arrow::MakeBuilder(program_->build_type));
    AssignBuilders(program_->root, root_builder_.get());
    return Status::OK();
  }

  Status Reserve(int64_t records) {
    KELT_ARROW_RETURN_NOT_OK(root_builder_->Reserve(records));
    for (const Node& child : program_->root.children) {
      KELT_ARROW_RETURN_NOT_OK(builders_[child.id]->Reserve(records));
    }
    return Status::OK();
  }

  Status Append(std::string_view body) {
    if (body.size() > std::numeric_limits<uint32_t>::max()) {
      error_ = {ProtobufErrorKind::kTooLarge, "", 0};
      return Status::ParseError(
          "Protobuf message: too large: " + std::to_string(body.size()) + " bytes");
    }
    body_ = reinterpret_cast<const uint8_t*>(body.data());
    Occurrence whole;
    whole.length = static_cast<uint32_t>(body.size());
    whole.wire = kLenWire;
    if (!Message(program_->root, &whole, 1, /*write=*/false)) return ErrorStatus();
    write_status_ = arrow::Status::OK();
    writing_ = true;
    Message(program_->root, &whole, 1, /*write=*/true);
    writing_ = false;
    if (!write_status_.ok()) {
      error_ = {ProtobufErrorKind::kTooLarge, "", 0};
      return Status::ParseError("Protobuf message: " + write_status_.ToString());
    }
    ++num_rows_;
    return Status::OK();
  }

  Result<std::shared_ptr<arrow::RecordBatch>> Finish() {
    std::shared_ptr<arrow::Array> array;
    KELT_ARROW_RETURN_NOT_OK(root_builder_->Finish(&array));
    write_status_ = arrow::Status::OK();
    std::shared_ptr<arrow::ArrayData> data =
        protobuf::WithDictionaries(program_->root, array->data(),
                                   [this](const Node& node) { return Dictionary(node); });
    KELT_ARROW_RETURN_NOT_OK(write_status_);
    std::vector<std::shared_ptr<arrow::ArrayData>> columns;
    for (size_t i = 0; i < data->child_data.size(); ++i) {
      columns.push_back(data->child_data[i]);
    }
    for (auto& extras : enum_extras_) extras.clear();
    int64_t rows = num_rows_;
    num_rows_ = 0;
    return arrow::RecordBatch::Make(program_->arrow_schema, rows, std::move(columns));
  }

  const ProtobufDecodeError& last_error() const { return error_; }
  int64_t num_rows() const { return num_rows_; }
  const std::shared_ptr<const ProtobufPlan>& plan() const { return plan_; }

 private:
  // --- builders ------------------------------------------------------------------------

  void AssignBuilders(const Node& node, arrow::ArrayBuilder* column) {
    builders_[node.id] = column;
    arrow::ArrayBuilder* value = column;
    if (node.repeated) value = static_cast<arrow::ListBuilder*>(column)->value_builder();
    value_builders_[node.id] = value;
    if (node.kind == NodeKind::kMessage) {
      auto* s = static_cast<arrow::StructBuilder*>(value);
      for (size_t i = 0; i < node.children.size(); ++i) {
        AssignBuilders(node.children[i], s->child_builder(static_cast<int>(i)).get());
      }
    } else if (node.kind == NodeKind::kMap) {
      auto* m = static_cast<arrow::MapBuilder*>(value);
      AssignBuilders(node.children[0], m->key_builder());
      AssignBuilders(node.children[1], m->item_builder());
    }
  }

  void Check(const arrow::Status& st) {
    if (!st.ok() && write_status_.ok()) write_status_ = st;
  }

  // The dictionary of an enum column: the names, then this batch's unknown numbers.
  std::shared_ptr<arrow::ArrayData> Dictionary(const Node& node) {
    arrow::StringBuilder names;
    for (const std::string& name : node.enum_names) Check(names.Append(name));
    std::vector<int32_t> extra_numbers(enum_extras_[node.id].size());
    for (const auto& [number, index] : enum_extras_[node.id]) {
      extra_numbers[index - node.enum_names.size()] = number;
    }
    for (int32_t number : extra_numbers) Check(names.Append(std::to_string(number)));
    std::shared_ptr<arrow::Array> dictionary;
    Check(names.Finish(&dictionary));
    return dictionary->data();
  }

  // --- errors --------------------------------------------------------------------------

  bool Fail(ProtobufErrorKind kind, const std::string& field, uint64_t offset) {
    error_ = {kind, field, static_cast<int64_t>(offset)};
    return false;
  }

  Status ErrorStatus() const {
    std::string what;
    switch (error_.kind) {
      case ProtobufErrorKind::kTruncated:
        what = "truncated";
        break;
      case ProtobufErrorKind::kBadVarint:
        what = "a varint longer than 10 bytes";
        break;
      case ProtobufErrorKind::kBadFieldNumber:
        what = "field number 0 or beyond 2^29 - 1";
        break;
      case ProtobufErrorKind::kWrongWireType:
        what = "a wire type the field cannot have";
        break;
      case ProtobufErrorKind::kBadWireType:
        what = "wire type 6 or 7";
        break;
      case ProtobufErrorKind::kBadGroup:
        what = "an unmatched or too deep group";
        break;
      case ProtobufErrorKind::kBadPackedLength:
        what = "packed values cut short";
        break;
      case ProtobufErrorKind::kInvalidUtf8:
        what = "a string that is not UTF-8";
        break;
      case ProtobufErrorKind::kOutOfRange:
        what = "a time beyond int64 nanoseconds";
        break;
      case ProtobufErrorKind::kTooLarge:
        what = "too large";
        break;
      case ProtobufErrorKind::kTooDeep:
        what = "Struct/Value nested too deep";
        break;
    }
    std::string msg = "Protobuf message: ";
    if (!error_.field.empty()) msg += "field '" + error_.field + "' ";
    msg += "at byte " + std::to_string(error_.offset) + ": " + what + " (" +
           std::string(ProtobufErrorKindName(error_.kind)) + ")";
    return Status::ParseError(std::move(msg));
  }

  // --- reading -------------------------------------------------------------------------

  bool ReadVarint(uint64_t* pos, uint64_t end, uint64_t* out, const std::string& field) {
    if (*pos < end && body_[*pos] < 0x80) [[likely]] {  // one byte: most tags and lengths
      *out = body_[(*pos)++];
      return true;
    }
    return ReadLongVarint(pos, end, out, field);
  }

  bool ReadLongVarint(uint64_t* pos, uint64_t end, uint64_t* out,
                      const std::string& field) {
    uint64_t start = *pos;
    uint64_t result = 0;
    for (int i = 0; i < 10; ++i) {
      if (*pos >= end) return Fail(ProtobufErrorKind::kTruncated, field, start);
      uint8_t byte = body_[(*pos)++];
      result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
      if ((byte & 0x80) == 0) {
        *out = result;
        return true;
      }
    }
    return Fail(ProtobufErrorKind::kBadVarint, field, start);
  }

  bool SkipField(uint8_t wire, uint32_t number, uint64_t* pos, uint64_t end,
                 uint64_t tag_offset, int depth) {
    static const std::string kNoField;
    uint64_t value = 0;
    switch (wire) {
      case kVarintWire:
        return ReadVarint(pos, end, &value, kNoField);
      case kI64Wire:
        if (end - *pos < 8)
          return Fail(ProtobufErrorKind::kTruncated, kNoField, tag_offset);
        *pos += 8;
        return true;
      case kI32Wire:
        if (end - *pos < 4)
          return Fail(ProtobufErrorKind::kTruncated, kNoField, tag_offset);
        *pos += 4;
        return true;
      case kLenWire:
        if (!ReadVarint(pos, end, &value, kNoField)) return false;
        if (value > end - *pos)
          return Fail(ProtobufErrorKind::kTruncated, kNoField, tag_offset);
        *pos += value;
        return true;
      case kStartGroupWire:
        if (depth >= kMaxGroupDepth)
          return Fail(ProtobufErrorKind::kBadGroup, kNoField, tag_offset);
        for (;;) {
          uint64_t inner_offset = *pos;
          uint64_t tag = 0;
          if (!ReadVarint(pos, end, &tag, kNoField)) return false;
          auto inner_wire = static_cast<uint8_t>(tag & 7);
          uint64_t inner_number = tag >> 3;
          if (inner_number == 0 || inner_number > 0x1fffffff) {
            return Fail(ProtobufErrorKind::kBadFieldNumber, kNoField, inner_offset);
          }
          if (inner_wire == kEndGroupWire) {
            if (inner_number != number) {
              return Fail(ProtobufErrorKind::kBadGroup, kNoField, inner_offset);
            }
            return true;
          }
          if (!SkipField(inner_wire, static_cast<uint32_t>(inner_number), pos, end,
                         inner_offset, depth + 1)) {
            return false;
          }
        }
      case kEndGroupWire:
        return Fail(ProtobufErrorKind::kBadGroup, kNoField, tag_offset);
      default:
        return Fail(ProtobufErrorKind::kBadWireType, kNoField, tag_offset);
    }
  }

  std::string_view Bytes(const Occurrence& o) const {
    return {reinterpret_cast<const char*>(body_ + o.value), o.length};
  }

  // Check a packed run of a repeated scalar field.
  bool CheckPacked(const Node& field, const Occurrence& o) {
    switch (field.coding) {
      case WireCoding::kFixed32:
        if (o.length % 4 != 0)
          return Fail(ProtobufErrorKind::kBadPackedLength, field.path, o.offset);
        return true;
      case WireCoding::kFixed64:
        if (o.length % 8 != 0)
          return Fail(ProtobufErrorKind::kBadPackedLength, field.path, o.offset);
        return true;
      default: {
        uint64_t pos = o.value;
        uint64_t end = o.value + o.length;
        uint64_t v = 0;
        while (pos < end) {
          if (!ReadVarint(&pos, end, &v, field.path)) return false;
        }
        return true;
      }
    }
  }

  // Find where each field of `msg` is in its occurrences (merged in order), checking
  // every byte of this level.
  bool Collect(const Node& msg, const Occurrence* occs, size_t n) {
    for (const Node& child : msg.children) slots_[child.id].clear();
    std::vector<int32_t>& oneofs = oneof_current_[msg.id];
    oneofs.assign(msg.oneof_count, -1);
    for (size_t k = 0; k < n; ++k) {
      uint64_t pos = occs[k].value;
      const uint64_t end = pos + occs[k].length;
      while (pos < end) {
        const uint64_t tag_offset = pos;
        uint64_t tag = 0;
        if (!ReadVarint(&pos, end, &tag, msg.path)) return false;
        auto wire = static_cast<uint8_t>(tag & 7);
        uint64_t number = tag >> 3;
        if (number == 0 || number > 0x1fffffff) {
          return Fail(ProtobufErrorKind::kBadFieldNumber, msg.path, tag_offset);
        }
        const Node* child = msg.Child(static_cast<int32_t>(number));
        if (child == nullptr) {
          if (!SkipField(wire, static_cast<uint32_t>(number), &pos, end, tag_offset, 0)) {
            return false;
          }
          continue;
        }
        Occurrence o;
        o.offset = static_cast<uint32_t>(tag_offset);
        o.wire = wire;
        const uint8_t expected = WireTypeOf(child->coding);
        const bool packed =
            child->repeated && child->coding != WireCoding::kLength && wire == kLenWire;
        if (wire != expected && !packed) {
          if (wire > kI32Wire)
            return Fail(ProtobufErrorKind::kBadWireType, child->path, tag_offset);
          return Fail(ProtobufErrorKind::kWrongWireType, child->path, tag_offset);
        }
        switch (wire) {
          case kVarintWire:
            if (!ReadVarint(&pos, end, &o.value, child->path)) return false;
            break;
          case kI64Wire:
            if (end - pos < 8)
              return Fail(ProtobufErrorKind::kTruncated, child->path, tag_offset);
            std::memcpy(&o.value, body_ + pos, 8);
            pos += 8;
            break;
          case kI32Wire: {
            if (end - pos < 4)
              return Fail(ProtobufErrorKind::kTruncated, child->path, tag_offset);
            uint32_t v = 0;
            std::memcpy(&v, body_ + pos, 4);
            o.value = v;
            pos += 4;
            break;
          }
          default: {  // kLenWire
            uint64_t length = 0;
            if (!ReadVarint(&pos, end, &length, child->path)) return false;
            if (length > end - pos) {
              return Fail(ProtobufErrorKind::kTruncated, child->path, tag_offset);
            }
            o.value = pos;
            o.length = static_cast<uint32_t>(length);
            pos += length;
            if (writing_) {
              // checked by the first pass
            } else if (packed) {
              if (!CheckPacked(*child, o)) return false;
            } else if (child->kind == NodeKind::kString && !text::IsValidUtf8(Bytes(o))) {
              return Fail(ProtobufErrorKind::kInvalidUtf8, child->path, tag_offset);
            }
            break;
          }
        }
        // A closed (proto2) enum's unknown number is an unknown field.
        if (child->kind == NodeKind::kEnum && child->closed_enum && !packed &&
            child->EnumIndex(static_cast<int32_t>(o.value)) < 0) {
          continue;
        }
        if (child->oneof >= 0) {
          auto index = static_cast<int32_t>(child - msg.children.data());
          int32_t& current = oneofs[child->oneof];
          if (current != index) {
            if (current >= 0) {
              // A member the wire replaces is still checked, as libprotobuf parses it.
              const Node& replaced = msg.children[current];
              std::vector<Occurrence>& gone = slots_[replaced.id];
              if (!writing_ && IsMessageLike(replaced.kind) &&
                  !MessageValue(replaced, gone.data(), gone.size(), /*write=*/false)) {
                return false;
              }
              gone.clear();
            }
            current = index;
          }
        }
        std::vector<Occurrence>& slot = slots_[child->id];
        if (!child->repeated && !IsMessageLike(child->kind)) slot.clear();
        slot.push_back(o);
      }
    }
    return true;
  }

  // --- values --------------------------------------------------------------------------

  int32_t EnumIndex(const Node& node, int32_t number) {
    int32_t index = node.EnumIndex(number);
    if (index >= 0) return index;
    // An open enum's unknown number lands as its decimal text, added to this batch's
    // dictionary after the declared names.
    auto& extras = enum_extras_[node.id];
    auto it = extras.find(number);
    if (it != extras.end()) return it->second;
    auto next = static_cast<int32_t>(node.enum_names.size() + extras.size());
    extras.emplace(number, next);
    return next;
  }

  // Append one scalar `raw` (a varint's or fixed value's bits) of `kind_node`'s type.
  void AppendScalar(const Node& node, arrow::ArrayBuilder* b, uint64_t raw) {
    switch (node.coding) {
      case WireCoding::kZigZag32: {
        auto v = static_cast<uint32_t>(raw);
        raw = static_cast<uint32_t>((v >> 1) ^ (~(v & 1) + 1));
        break;
      }
      case WireCoding::kZigZag64:
        raw = (raw >> 1) ^ (~(raw & 1) + 1);
        break;
      default:
        break;
    }
    switch (node.kind) {
      case NodeKind::kInt32:
        Check(static_cast<arrow::Int32Builder*>(b)->Append(
            static_cast<int32_t>(static_cast<uint32_t>(raw))));
        break;
      case NodeKind::kInt64:
        Check(static_cast<arrow::Int64Builder*>(b)->Append(static_cast<int64_t>(raw)));
        break;
      case NodeKind::kUInt32:
        Check(static_cast<arrow::UInt32Builder*>(b)->Append(static_cast<uint32_t>(raw)));
        break;
      case NodeKind::kUInt64:
        Check(static_cast<arrow::UInt64Builder*>(b)->Append(raw));
        break;
      case NodeKind::kFloat: {
        auto bits = static_cast<uint32_t>(raw);
        float f = 0;
        std::memcpy(&f, &bits, 4);
        Check(static_cast<arrow::FloatBuilder*>(b)->Append(f));
        break;
      }
      case NodeKind::kDouble: {
        double d = 0;
        std::memcpy(&d, &raw, 8);
        Check(static_cast<arrow::DoubleBuilder*>(b)->Append(d));
        break;
      }
      case NodeKind::kBool:
        Check(static_cast<arrow::BooleanBuilder*>(b)->Append(raw != 0));
        break;
      case NodeKind::kEnum:
        Check(static_cast<arrow::Int32Builder*>(b)->Append(
            EnumIndex(node, static_cast<int32_t>(static_cast<uint32_t>(raw)))));
        break;
      default:
        break;
    }
  }

  void AppendOccurrence(const Node& node, arrow::ArrayBuilder* b, const Occurrence& o) {
    if (node.kind == NodeKind::kString) {
      Check(static_cast<arrow::StringBuilder*>(b)->Append(Bytes(o)));
    } else if (node.kind == NodeKind::kBytes) {
      Check(static_cast<arrow::BinaryBuilder*>(b)->Append(Bytes(o)));
    } else {
      AppendScalar(node, b, o.value);
    }
  }

  // The value of an absent field without presence (proto3's defaults).
  void AppendDefault(const Node& node, arrow::ArrayBuilder* b) {
    if (node.kind == NodeKind::kEnum) {
      Check(static_cast<arrow::Int32Builder*>(b)->Append(node.enum_default_index));
    } else {
      Check(b->AppendEmptyValue());
    }
  }

  // A null struct: its children get nulls where they may, empty values elsewhere.
  void AppendNullStruct(const Node& node) {
    auto* s = static_cast<arrow::StructBuilder*>(value_builders_[node.id]);
    for (const Node& child : node.children) {
      arrow::ArrayBuilder* b = builders_[child.id];
      if (child.kind == NodeKind::kMessage && !child.repeated) {
        AppendNullStruct(child);  // so its own not-null children hold no nulls
      } else if (child.presence) {
        Check(b->AppendNull());
      } else if (child.kind == NodeKind::kEnum && !child.repeated) {
        AppendDefault(child, b);
      } else {
        Check(b->AppendEmptyValue());
      }
    }
    Check(s->Append(false));
  }

  // The last occurrence of `child` of the message collected last, or nullptr.
  const Occurrence* Last(const Node& child) const {
    const std::vector<Occurrence>& slot = slots_[child.id];
    return slot.empty() ? nullptr : &slot.back();
  }

  // Seconds and nanos of a Timestamp or Duration as nanoseconds.
  bool Nanoseconds(const Node& node, int64_t* out) {
    const Occurrence* seconds = Last(node.children[0]);
    const Occurrence* nanos = Last(node.children[1]);
    int64_t s = seconds ? static_cast<int64_t>(seconds->value) : 0;
    int64_t ns = nanos ? static_cast<int32_t>(static_cast<uint32_t>(nanos->value)) : 0;
    int64_t total = 0;
    if (__builtin_mul_overflow(s, int64_t{1000000000}, &total) ||
        __builtin_add_overflow(total, ns, &total)) {
      uint32_t offset = seconds ? seconds->offset : (nanos ? nanos->offset : 0);
      return Fail(ProtobufErrorKind::kOutOfRange, node.path, offset);
    }
    *out = total;
    return true;
  }

  // A present value of a message-like node, merged from its occurrences (none: the
  // empty message).
  bool MessageValue(const Node& node, const Occurrence* occs, size_t n, bool write) {
    switch (node.kind) {
      case NodeKind::kMessage:
        return Message(node, occs, n, write);
      case NodeKind::kTimestamp:
      case NodeKind::kDuration: {
        if (!Collect(node, occs, n)) return false;
        int64_t ns = 0;
        if (!Nanoseconds(node, &ns)) return false;
        if (write) {
          arrow::ArrayBuilder* b = value_builders_[node.id];
          Check(node.kind == NodeKind::kTimestamp
                    ? static_cast<arrow::TimestampBuilder*>(b)->Append(ns)
                    : static_cast<arrow::DurationBuilder*>(b)->Append(ns));
        }
        return true;
      }
      case NodeKind::kJson: {
        json_.clear();
        if (!Json(node, node.json, occs, n, 0, &json_)) return false;
        if (write) {
          Check(static_cast<arrow::StringBuilder*>(value_builders_[node.id])
                    ->Append(json_));
        }
        return true;
      }
      case NodeKind::kWrapper: {
        if (!Collect(node, occs, n)) return false;
        if (write) {
          const Node& value = node.children[0];
          arrow::ArrayBuilder* b = value_builders_[node.id];
          if (const Occurrence* o = Last(value)) {
            AppendOccurrence(value, b, *o);
          } else {
            AppendDefault(value, b);
          }
        }
        return true;
      }
      default:
        return true;
    }
  }

  // Read one field of a Struct/Value/ListValue: its tag, then its value into `o`.
  // Unknown numbers (`known` false) are skipped; *skip is then set.
  bool JsonField(const Node& node, uint64_t* pos, uint64_t end, Occurrence* o,
                 uint32_t* number, bool* skip, uint8_t (*expected)(uint32_t number)) {
    const uint64_t tag_offset = *pos;
    uint64_t tag = 0;
    if (!ReadVarint(pos, end, &tag, node.path)) return false;
    auto wire = static_cast<uint8_t>(tag & 7);
    uint64_t n = tag >> 3;
    if (n == 0 || n > 0x1fffffff) {
      return Fail(ProtobufErrorKind::kBadFieldNumber, node.path, tag_offset);
    }
    *number = static_cast<uint32_t>(n);
    uint8_t want = expected(*number);
    *skip = want == 0xff;
    if (*skip) return SkipField(wire, *number, pos, end, tag_offset, 0);
    if (wire != want) {
      return Fail(wire > kI32Wire ? ProtobufErrorKind::kBadWireType
                                  : ProtobufErrorKind::kWrongWireType,
                  node.path, tag_offset);
    }
    o->offset = static_cast<uint32_t>(tag_offset);
    o->wire = wire;
    switch (wire) {
      case kVarintWire:
        return ReadVarint(pos, end, &o->value, node.path);
      case kI64Wire:
        if (end - *pos < 8)
          return Fail(ProtobufErrorKind::kTruncated, node.path, tag_offset);
        std::memcpy(&o->value, body_ + *pos, 8);
        *pos += 8;
        return true;
      default: {
        uint64_t length = 0;
        if (!ReadVarint(pos, end, &length, node.path)) return false;
        if (length > end - *pos) {
          return Fail(ProtobufErrorKind::kTruncated, node.path, tag_offset);
        }
        o->value = *pos;
        o->length = static_cast<uint32_t>(length);
        *pos += length;
        return true;
      }
    }
  }

  // Append the JSON text of a Struct, Value or ListValue merged from `occs` to `out`:
  // objects with keys sorted (a repeated key keeps its last value), a Value without a
  // kind and non-finite numbers as null.
  bool Json(const Node& node, protobuf::JsonMessage kind, const Occurrence* occs,
            size_t n, int depth, std::string* out) {
    using protobuf::JsonMessage;
    if (depth > kMaxJsonDepth) {
      return Fail(ProtobufErrorKind::kTooDeep, node.path, n > 0 ? occs[0].offset : 0);
    }
    switch (kind) {
      case JsonMessage::kStruct: {
        std::map<std::string_view, std::vector<Occurrence>> entries;
        for (size_t k = 0; k < n; ++k) {
          uint64_t pos = occs[k].value;
          const uint64_t end = pos + occs[k].length;
          while (pos < end) {
            Occurrence entry;
            uint32_t number = 0;
            bool skip = false;
            if (!JsonField(node, &pos, end, &entry, &number, &skip, [](uint32_t f) {
                  return f == 1 ? kLenWire : uint8_t{0xff};
                })) {
              return false;
            }
            if (skip) continue;
            std::string_view key;
            std::vector<Occurrence> value;
            uint64_t epos = entry.value;
            const uint64_t eend = epos + entry.length;
            while (epos < eend) {
              Occurrence o;
              if (!JsonField(node, &epos, eend, &o, &number, &skip, [](uint32_t f) {
                    return f == 1 || f == 2 ? kLenWire : uint8_t{0xff};
                  })) {
                return false;
              }
              if (skip) continue;
              if (number == 1) {
                key = Bytes(o);
                if (!text::IsValidUtf8(key)) {
                  return Fail(ProtobufErrorKind::kInvalidUtf8, node.path, o.offset);
                }
              } else {
                value.push_back(o);
              }
            }
            auto [it, inserted] = entries.try_emplace(key);
            if (!inserted) {
              // The value a repeated key replaces is still checked, as libprotobuf
              // parses every entry of a map.
              std::string scratch;
              if (!Json(node, JsonMessage::kValue, it->second.data(), it->second.size(),
                        depth + 1, &scratch)) {
                return false;
              }
            }
            it->second = std::move(value);
          }
        }
        out->push_back('{');
        bool first = true;
        for (const auto& [key, value] : entries) {
          if (!first) out->push_back(',');
          first = false;
          text::AppendJsonString(out, key);
          out->push_back(':');
          if (!Json(node, JsonMessage::kValue, value.data(), value.size(), depth + 1,
                    out)) {
            return false;
          }
        }
        out->push_back('}');
        return true;
      }
      case JsonMessage::kList: {
        out->push_back('[');
        bool first = true;
        for (size_t k = 0; k < n; ++k) {
          uint64_t pos = occs[k].value;
          const uint64_t end = pos + occs[k].length;
          while (pos < end) {
            Occurrence o;
            uint32_t number = 0;
            bool skip = false;
            if (!JsonField(node, &pos, end, &o, &number, &skip, [](uint32_t f) {
                  return f == 1 ? kLenWire : uint8_t{0xff};
                })) {
              return false;
            }
            if (skip) continue;
            if (!first) out->push_back(',');
            first = false;
            if (!Json(node, JsonMessage::kValue, &o, 1, depth + 1, out)) return false;
          }
        }
        out->push_back(']');
        return true;
      }
      case JsonMessage::kValue: {
        uint32_t current = 0;  // the kind's field number, 0 = none
        Occurrence scalar;
        std::vector<Occurrence> nested;  // struct_value / list_value, to merge
        for (size_t k = 0; k < n; ++k) {
          uint64_t pos = occs[k].value;
          const uint64_t end = pos + occs[k].length;
          while (pos < end) {
            Occurrence o;
            uint32_t number = 0;
            bool skip = false;
            if (!JsonField(node, &pos, end, &o, &number, &skip, [](uint32_t f) {
                  switch (f) {
                    case 1:
                    case 4:
                      return kVarintWire;
                    case 2:
                      return kI64Wire;
                    case 3:
                    case 5:
                    case 6:
                      return kLenWire;
                    default:
                      return uint8_t{0xff};
                  }
                })) {
              return false;
            }
            if (skip) continue;
            if (number == 3 && !text::IsValidUtf8(Bytes(o))) {
              return Fail(ProtobufErrorKind::kInvalidUtf8, node.path, o.offset);
            }
            if (current != number && (current == 5 || current == 6)) {
              // The member the wire replaces is still checked, as libprotobuf parses it.
              std::string scratch;
              if (!Json(node, current == 5 ? JsonMessage::kStruct : JsonMessage::kList,
                        nested.data(), nested.size(), depth + 1, &scratch)) {
                return false;
              }
              nested.clear();
            }
            current = number;
            if (number == 5 || number == 6) {
              nested.push_back(o);
            } else {
              scalar = o;
            }
          }
        }
        switch (current) {
          case 2: {
            double d = 0;
            std::memcpy(&d, &scalar.value, 8);
            text::AppendJsonDouble(out, d);
            return true;
          }
          case 3:
            text::AppendJsonString(out, Bytes(scalar));
            return true;
          case 4:
            *out += scalar.value != 0 ? "true" : "false";
            return true;
          case 5:
            return Json(node, JsonMessage::kStruct, nested.data(), nested.size(),
                        depth + 1, out);
          case 6:
            return Json(node, JsonMessage::kList, nested.data(), nested.size(), depth + 1,
                        out);
          default:
            *out += "null";
            return true;
        }
      }
    }
    return true;
  }

  bool Message(const Node& msg, const Occurrence* occs, size_t n, bool write) {
    if (!Collect(msg, occs, n)) return false;
    for (const Node& child : msg.children) {
      if (!Field(child, write)) return false;
    }
    if (write)
      Check(static_cast<arrow::StructBuilder*>(value_builders_[msg.id])->Append());
    return true;
  }

  bool Field(const Node& field, bool write) {
    const std::vector<Occurrence>& occs = slots_[field.id];
    if (field.kind == NodeKind::kMap) {
      auto* map = static_cast<arrow::MapBuilder*>(builders_[field.id]);
      if (write) Check(map->Append());
      const Node& key = field.children[0];
      const Node& value = field.children[1];
      for (const Occurrence& entry : occs) {
        if (!Collect(field, &entry, 1)) return false;
        if (write) {
          if (const Occurrence* k = Last(key)) {
            AppendOccurrence(key, map->key_builder(), *k);
          } else {
            AppendDefault(key, map->key_builder());
          }
        }
        if (IsMessageLike(value.kind)) {
          const std::vector<Occurrence>& v = slots_[value.id];
          if (!MessageValue(value, v.data(), v.size(), write)) return false;
        } else if (write) {
          if (const Occurrence* v = Last(value)) {
            AppendOccurrence(value, map->item_builder(), *v);
          } else {
            AppendDefault(value, map->item_builder());
          }
        }
      }
      return true;
    }
    if (field.repeated) {
      if (write) Check(static_cast<arrow::ListBuilder*>(builders_[field.id])->Append());
      arrow::ArrayBuilder* b = value_builders_[field.id];
      for (const Occurrence& o : occs) {
        if (IsMessageLike(field.kind)) {
          if (!MessageValue(field, &o, 1, write)) return false;
        } else if (!write) {
          continue;  // checked when collected
        } else if (o.wire == kLenWire && field.coding != WireCoding::kLength) {
          AppendPacked(field, b, o);
        } else {
          AppendOccurrence(field, b, o);
        }
      }
      return true;
    }
    if (occs.empty()) {
      if (!write) return true;
      if (field.kind == NodeKind::kMessage) {
        AppendNullStruct(field);
      } else if (field.presence) {
        Check(builders_[field.id]->AppendNull());
      } else {
        AppendDefault(field, builders_[field.id]);
      }
      return true;
    }
    if (IsMessageLike(field.kind))
      return MessageValue(field, occs.data(), occs.size(), write);
    if (write) AppendOccurrence(field, builders_[field.id], occs.back());
    return true;
  }

  void AppendPacked(const Node& field, arrow::ArrayBuilder* b, const Occurrence& o) {
    uint64_t pos = o.value;
    const uint64_t end = o.value + o.length;
    while (pos < end) {
      uint64_t raw = 0;
      if (field.coding == WireCoding::kFixed32) {
        uint32_t v = 0;
        std::memcpy(&v, body_ + pos, 4);
        raw = v;
        pos += 4;
      } else if (field.coding == WireCoding::kFixed64) {
        std::memcpy(&raw, body_ + pos, 8);
        pos += 8;
      } else {
        static const std::string kNone;
        ReadVarint(&pos, end, &raw, kNone);  // checked when collected
      }
      if (field.kind == NodeKind::kEnum && field.closed_enum &&
          field.EnumIndex(static_cast<int32_t>(raw)) < 0) {
        continue;  // a closed enum's unknown number is an unknown field
      }
      AppendScalar(field, b, raw);
    }
  }

  std::shared_ptr<const ProtobufPlan> plan_;
  const ProtobufPlan::Program* program_;
  std::unique_ptr<arrow::ArrayBuilder> root_builder_;
  // Per node id: where its field was in the message collected last, the builder of its
  // column and of its values (differ for lists), the open oneof members of a message,
  // an open enum's unknown numbers of this batch (number → dictionary index).
  std::vector<std::vector<Occurrence>> slots_;
  std::vector<std::vector<int32_t>> oneof_current_;
  std::vector<arrow::ArrayBuilder*> builders_;
  std::vector<arrow::ArrayBuilder*> value_builders_;
  std::vector<std::map<int32_t, int32_t>> enum_extras_;
  const uint8_t* body_ = nullptr;
  int64_t num_rows_ = 0;
  ProtobufDecodeError error_;
  arrow::Status write_status_;
  bool writing_ = false;  // the second pass: the bytes are known good
  std::string json_;      // a kJson value's text
};

ProtobufDecoder::ProtobufDecoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProtobufDecoder::~ProtobufDecoder() = default;

Result<std::unique_ptr<ProtobufDecoder>> ProtobufDecoder::Make(
    std::shared_ptr<const ProtobufPlan> plan) {
  if (plan == nullptr) return Status::Invalid("ProtobufDecoder: no plan");
  auto impl = std::make_unique<Impl>(std::move(plan));
  KELT_RETURN_NOT_OK(impl->Init());
  return std::unique_ptr<ProtobufDecoder>(new ProtobufDecoder(std::move(impl)));
}

Status ProtobufDecoder::Reserve(int64_t records) { return impl_->Reserve(records); }
Status ProtobufDecoder::Append(std::string_view body) { return impl_->Append(body); }
const ProtobufDecodeError& ProtobufDecoder::last_error() const {
  return impl_->last_error();
}
int64_t ProtobufDecoder::num_rows() const { return impl_->num_rows(); }
Result<std::shared_ptr<arrow::RecordBatch>> ProtobufDecoder::Finish() {
  return impl_->Finish();
}
const std::shared_ptr<const ProtobufPlan>& ProtobufDecoder::plan() const {
  return impl_->plan();
}

}  // namespace kelt
