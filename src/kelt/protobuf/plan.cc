// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// ProtobufPlan: a message descriptor compiled into a tree of field nodes and its Arrow
// types (the mapping of README.md).
#include "kelt/protobuf/plan.h"

#include <arrow/api.h>
#include <google/protobuf/descriptor.pb.h>

#include <algorithm>
#include <set>

#include "kelt/protobuf/schema.h"

namespace kelt {

namespace gp = google::protobuf;

namespace protobuf {

const Node* Node::LargeChild(int32_t number) const {
  auto it = std::lower_bound(child_by_large_number.begin(), child_by_large_number.end(),
                             std::make_pair(number, 0));
  if (it == child_by_large_number.end() || it->first != number) return nullptr;
  return &children[it->second];
}

int32_t Node::EnumIndex(int32_t number) const {
  auto it =
      std::lower_bound(enum_index.begin(), enum_index.end(), std::make_pair(number, 0));
  if (it == enum_index.end() || it->first != number) return -1;
  return it->second;
}

std::shared_ptr<arrow::DataType> ValueType(const Node& node, bool dictionaries) {
  switch (node.kind) {
    case NodeKind::kInt32:
      return arrow::int32();
    case NodeKind::kInt64:
      return arrow::int64();
    case NodeKind::kUInt32:
      return arrow::uint32();
    case NodeKind::kUInt64:
      return arrow::uint64();
    case NodeKind::kFloat:
      return arrow::float32();
    case NodeKind::kDouble:
      return arrow::float64();
    case NodeKind::kBool:
      return arrow::boolean();
    case NodeKind::kString:
      return arrow::utf8();
    case NodeKind::kBytes:
      return arrow::binary();
    case NodeKind::kEnum:
      return dictionaries ? arrow::dictionary(arrow::int32(), arrow::utf8())
                          : arrow::int32();
    case NodeKind::kTimestamp:
      return arrow::timestamp(arrow::TimeUnit::NANO, "UTC");
    case NodeKind::kDuration:
      return arrow::duration(arrow::TimeUnit::NANO);
    case NodeKind::kWrapper:
      return ValueType(node.children[0], dictionaries);
    case NodeKind::kJson:
      return arrow::utf8();
    case NodeKind::kMessage: {
      arrow::FieldVector fields;
      for (const Node& child : node.children) {
        fields.push_back(
            arrow::field(child.name, FieldType(child, dictionaries), child.presence));
      }
      return arrow::struct_(fields);
    }
    case NodeKind::kMap: {
      const Node& value = node.children[1];
      return std::make_shared<arrow::MapType>(
          arrow::field("key", ValueType(node.children[0], dictionaries), false),
          arrow::field("value", ValueType(value, dictionaries), false));
    }
  }
  return arrow::null();
}

std::shared_ptr<arrow::DataType> FieldType(const Node& node, bool dictionaries) {
  std::shared_ptr<arrow::DataType> value = ValueType(node, dictionaries);
  if (node.repeated) return arrow::list(arrow::field("item", value, false));
  return value;
}

namespace {

std::shared_ptr<arrow::ArrayData> Convert(
    const Node& node, const std::shared_ptr<arrow::ArrayData>& data, bool element,
    const std::function<std::shared_ptr<arrow::ArrayData>(const Node&)>& dictionary) {
  if (node.repeated && !element) {
    auto out = std::make_shared<arrow::ArrayData>(*data);
    out->type = FieldType(node, true);
    out->child_data[0] = Convert(node, data->child_data[0], true, dictionary);
    return out;
  }
  switch (node.kind) {
    case NodeKind::kEnum: {
      auto out = std::make_shared<arrow::ArrayData>(*data);
      out->type = ValueType(node, true);
      out->dictionary = dictionary(node);
      return out;
    }
    case NodeKind::kMessage: {
      auto out = std::make_shared<arrow::ArrayData>(*data);
      out->type = ValueType(node, true);
      for (size_t i = 0; i < node.children.size(); ++i) {
        out->child_data[i] =
            Convert(node.children[i], data->child_data[i], false, dictionary);
      }
      return out;
    }
    case NodeKind::kMap: {
      auto out = std::make_shared<arrow::ArrayData>(*data);
      out->type = ValueType(node, true);
      auto entries = std::make_shared<arrow::ArrayData>(*data->child_data[0]);
      entries->type = static_cast<const arrow::MapType&>(*out->type).value_type();
      for (int i = 0; i < 2; ++i) {
        entries->child_data[i] =
            Convert(node.children[i], entries->child_data[i], true, dictionary);
      }
      out->child_data[0] = entries;
      return out;
    }
    default:
      return data;
  }
}

}  // namespace

std::shared_ptr<arrow::ArrayData> WithDictionaries(
    const Node& root, const std::shared_ptr<arrow::ArrayData>& data,
    const std::function<std::shared_ptr<arrow::ArrayData>(const Node&)>& dictionary) {
  return Convert(root, data, true, dictionary);
}

namespace {

class Compiler {
 public:
  Status CompileMessage(const gp::Descriptor* message, const std::string& path,
                        Node* node) {
    if (!stack_.insert(message).second) {
      return Status::Invalid(path + ": recursive message " + message->full_name() +
                             " (no Arrow type can hold it)");
    }
    node->id = next_id_++;
    node->oneof_count = message->real_oneof_decl_count();
    int32_t max_small = 0;
    for (int i = 0; i < message->field_count(); ++i) {
      const gp::FieldDescriptor* field = message->field(i);
      Node child;
      child.name = field->name();
      std::string child_path = path.empty() ? field->name() : path + "." + field->name();
      KELT_RETURN_NOT_OK(CompileField(field, child_path, &child));
      if (child.number < 1024) max_small = std::max(max_small, child.number + 1);
      node->children.push_back(std::move(child));
    }
    node->child_by_number.assign(max_small, 0);
    for (size_t i = 0; i < node->children.size(); ++i) {
      int32_t number = node->children[i].number;
      if (number < max_small) {
        node->child_by_number[number] = static_cast<int32_t>(i) + 1;
      } else {
        node->child_by_large_number.emplace_back(number, static_cast<int32_t>(i));
      }
    }
    std::sort(node->child_by_large_number.begin(), node->child_by_large_number.end());
    stack_.erase(message);
    return Status::OK();
  }

  int32_t node_count() const { return next_id_; }

 private:
  // The node of one value of `field` (the element of a repeated field), without `id`
  // for scalars.
  Status CompileValue(const gp::FieldDescriptor* field, const std::string& path,
                      Node* node) {
    using T = gp::FieldDescriptor;
    switch (field->type()) {
      case T::TYPE_INT32:
        node->kind = NodeKind::kInt32;
        node->coding = WireCoding::kVarint;
        break;
      case T::TYPE_SINT32:
        node->kind = NodeKind::kInt32;
        node->coding = WireCoding::kZigZag32;
        break;
      case T::TYPE_SFIXED32:
        node->kind = NodeKind::kInt32;
        node->coding = WireCoding::kFixed32;
        break;
      case T::TYPE_INT64:
        node->kind = NodeKind::kInt64;
        node->coding = WireCoding::kVarint;
        break;
      case T::TYPE_SINT64:
        node->kind = NodeKind::kInt64;
        node->coding = WireCoding::kZigZag64;
        break;
      case T::TYPE_SFIXED64:
        node->kind = NodeKind::kInt64;
        node->coding = WireCoding::kFixed64;
        break;
      case T::TYPE_UINT32:
        node->kind = NodeKind::kUInt32;
        node->coding = WireCoding::kVarint;
        break;
      case T::TYPE_FIXED32:
        node->kind = NodeKind::kUInt32;
        node->coding = WireCoding::kFixed32;
        break;
      case T::TYPE_UINT64:
        node->kind = NodeKind::kUInt64;
        node->coding = WireCoding::kVarint;
        break;
      case T::TYPE_FIXED64:
        node->kind = NodeKind::kUInt64;
        node->coding = WireCoding::kFixed64;
        break;
      case T::TYPE_FLOAT:
        node->kind = NodeKind::kFloat;
        node->coding = WireCoding::kFixed32;
        break;
      case T::TYPE_DOUBLE:
        node->kind = NodeKind::kDouble;
        node->coding = WireCoding::kFixed64;
        break;
      case T::TYPE_BOOL:
        node->kind = NodeKind::kBool;
        node->coding = WireCoding::kVarint;
        break;
      case T::TYPE_STRING:
        node->kind = NodeKind::kString;
        node->coding = WireCoding::kLength;
        break;
      case T::TYPE_BYTES:
        node->kind = NodeKind::kBytes;
        node->coding = WireCoding::kLength;
        break;
      case T::TYPE_ENUM: {
        node->kind = NodeKind::kEnum;
        node->coding = WireCoding::kVarint;
        const gp::EnumDescriptor* e = field->enum_type();
        node->closed_enum = e->file()->syntax() != gp::FileDescriptor::SYNTAX_PROTO3;
        for (int i = 0; i < e->value_count(); ++i) {
          int32_t number = e->value(i)->number();
          node->enum_names.push_back(e->value(i)->name());
          // With allow_alias, the first name of a number is the one that lands.
          bool seen = std::any_of(node->enum_index.begin(), node->enum_index.end(),
                                  [&](const auto& p) { return p.first == number; });
          if (!seen) node->enum_index.emplace_back(number, i);
        }
        std::sort(node->enum_index.begin(), node->enum_index.end());
        // The default of an absent field without presence: proto3's is the first value
        // (number 0); a proto2 field always has presence.
        node->enum_default_index = node->EnumIndex(field->default_value_enum()->number());
        break;
      }
      case T::TYPE_GROUP:
        return Status::Invalid(path + ": proto2 group fields are not supported");
      case T::TYPE_MESSAGE: {
        node->coding = WireCoding::kLength;
        const gp::Descriptor* message = field->message_type();
        const std::string& name = message->full_name();
        // Struct, Value and ListValue are recursive: they land as JSON text.
        if (name == "google.protobuf.Struct" || name == "google.protobuf.Value" ||
            name == "google.protobuf.ListValue") {
          node->kind = NodeKind::kJson;
          node->json = name == "google.protobuf.Struct"  ? JsonMessage::kStruct
                       : name == "google.protobuf.Value" ? JsonMessage::kValue
                                                         : JsonMessage::kList;
          break;
        }
        if (message->options().map_entry()) {
          node->kind = NodeKind::kMap;
          KELT_RETURN_NOT_OK(CompileMessage(message, path + "{}", node));
          node->kind = NodeKind::kMap;
          node->children[0].path = path + "{key}";
          node->children[1].path = path + "{}";
          break;
        }
        KELT_RETURN_NOT_OK(CompileMessage(message, path, node));
        if (name == "google.protobuf.Timestamp") {
          node->kind = NodeKind::kTimestamp;
        } else if (name == "google.protobuf.Duration") {
          node->kind = NodeKind::kDuration;
        } else if (name == "google.protobuf.DoubleValue" ||
                   name == "google.protobuf.FloatValue" ||
                   name == "google.protobuf.Int64Value" ||
                   name == "google.protobuf.UInt64Value" ||
                   name == "google.protobuf.Int32Value" ||
                   name == "google.protobuf.UInt32Value" ||
                   name == "google.protobuf.BoolValue" ||
                   name == "google.protobuf.StringValue" ||
                   name == "google.protobuf.BytesValue") {
          node->kind = NodeKind::kWrapper;
        } else {
          node->kind = NodeKind::kMessage;
        }
        break;
      }
    }
    return Status::OK();
  }

  Status CompileField(const gp::FieldDescriptor* field, const std::string& path,
                      Node* node) {
    node->number = field->number();
    node->path = field->is_repeated() && !field->is_map() ? path + "[]" : path;
    KELT_RETURN_NOT_OK(CompileValue(field, node->path, node));
    if (node->kind != NodeKind::kMessage && node->kind != NodeKind::kMap &&
        node->kind != NodeKind::kTimestamp && node->kind != NodeKind::kDuration &&
        node->kind != NodeKind::kWrapper) {  // kJson too: no CompileMessage
      node->id = next_id_++;
    }
    node->path = field->is_repeated() && !field->is_map() ? path + "[]" : path;
    node->name = field->name();
    node->repeated = field->is_repeated() && !field->is_map();
    node->presence = !field->is_repeated() && field->has_presence();
    if (const gp::OneofDescriptor* oneof = field->real_containing_oneof()) {
      node->oneof = oneof->index();
    }
    return Status::OK();
  }

  std::set<const gp::Descriptor*> stack_;
  int32_t next_id_ = 0;
};

}  // namespace
}  // namespace protobuf

ProtobufPlan::ProtobufPlan(std::unique_ptr<Program> program)
    : program_(std::move(program)) {}
ProtobufPlan::~ProtobufPlan() = default;

Result<std::shared_ptr<const ProtobufPlan>> ProtobufPlan::Compile(
    const ProtobufSchema& schema, const std::vector<int32_t>& message_indexes) {
  KELT_ASSIGN_OR_RAISE(const gp::Descriptor* message,
                       protobuf::FindMessage(schema, message_indexes));
  auto program = std::make_unique<Program>();
  program->pool = schema.pool();
  program->message_name = message->full_name();
  protobuf::Compiler compiler;
  KELT_RETURN_NOT_OK(compiler.CompileMessage(message, "", &program->root));
  program->root.kind = protobuf::NodeKind::kMessage;
  program->node_count = compiler.node_count();
  program->build_type = protobuf::ValueType(program->root, false);
  program->arrow_schema =
      arrow::schema(protobuf::ValueType(program->root, true)->fields());
  return std::shared_ptr<const ProtobufPlan>(new ProtobufPlan(std::move(program)));
}

const std::shared_ptr<arrow::Schema>& ProtobufPlan::arrow_schema() const {
  return program_->arrow_schema;
}
const std::string& ProtobufPlan::message_name() const { return program_->message_name; }

}  // namespace kelt
