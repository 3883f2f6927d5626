// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The reference for protobuf_test, fuzz/protobuf_fuzzer.cc and
// bench/protobuf_benchmark.cc: libprotobuf parses a body into a DynamicMessage and its
// Reflection appends the values into the same Arrow columns as the decoder, by the same
// mapping (README.md). Never linked into the library.
#pragma once

#include <arrow/api.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/common/text.h"
#include "kelt/protobuf.h"
#include "kelt/protobuf/plan.h"
#include "kelt/protobuf/schema.h"

namespace kelt::protobuf {

class ReflectionReference {
 public:
  /// The message type of `plan`, looked up in its pool.
  explicit ReflectionReference(std::shared_ptr<const ProtobufPlan> plan)
      : plan_(std::move(plan)),
        descriptor_(
            plan_->program().pool->pool->FindMessageTypeByName(plan_->message_name())),
        prototype_(factory_.GetPrototype(descriptor_)),
        message_(prototype_->New()) {
    builder_ = arrow::MakeBuilder(plan_->program().build_type).ValueOrDie();
  }

  const google::protobuf::Descriptor* descriptor() const { return descriptor_; }
  google::protobuf::Message* NewMessage() const { return prototype_->New(); }

  /// Parse `body` with libprotobuf (false when it does not parse) and append it. A
  /// missing proto2 `required` field is not an error (the decoder's rule).
  bool Append(std::string_view body) {
    message_->Clear();
    if (!message_->ParsePartialFromArray(body.data(), static_cast<int>(body.size()))) {
      return false;
    }
    AppendMessage(*message_);
    return true;
  }

  /// Append a message (of descriptor()).
  void AppendMessage(const google::protobuf::Message& m) {
    Message(plan_->program().root, m, builder_.get());
    ++rows_;
  }

  std::shared_ptr<arrow::RecordBatch> Finish() {
    std::shared_ptr<arrow::Array> array = builder_->Finish().ValueOrDie();
    auto data =
        WithDictionaries(plan_->program().root, array->data(), [&](const Node& n) {
          arrow::StringBuilder names;
          for (const std::string& name : n.enum_names) (void)names.Append(name);
          for (int32_t number : extras_[&n]) (void)names.Append(std::to_string(number));
          return names.Finish().ValueOrDie()->data();
        });
    extras_.clear();
    int64_t rows = rows_;
    rows_ = 0;
    return arrow::RecordBatch::Make(plan_->arrow_schema(), rows, data->child_data);
  }

 private:
  using FD = google::protobuf::FieldDescriptor;
  using Refl = google::protobuf::Reflection;

  // The decoder's JSON text of a Struct, Value or ListValue (keys sorted).
  static void Json(const google::protobuf::Message& m, std::string* out) {
    const google::protobuf::Descriptor* d = m.GetDescriptor();
    const Refl* r = m.GetReflection();
    if (d->full_name() == "google.protobuf.Struct") {
      const FD* fields = d->FindFieldByNumber(1);
      std::map<std::string, const google::protobuf::Message*> sorted;
      for (int i = 0; i < r->FieldSize(m, fields); ++i) {
        const google::protobuf::Message& e = r->GetRepeatedMessage(m, fields, i);
        const auto* ed = e.GetDescriptor();
        sorted[e.GetReflection()->GetString(e, ed->FindFieldByNumber(1))] =
            &e.GetReflection()->GetMessage(e, ed->FindFieldByNumber(2));
      }
      out->push_back('{');
      bool first = true;
      for (const auto& [key, value] : sorted) {
        if (!first) out->push_back(',');
        first = false;
        text::AppendJsonString(out, key);
        out->push_back(':');
        Json(*value, out);
      }
      out->push_back('}');
    } else if (d->full_name() == "google.protobuf.ListValue") {
      const FD* values = d->FindFieldByNumber(1);
      out->push_back('[');
      for (int i = 0; i < r->FieldSize(m, values); ++i) {
        if (i > 0) out->push_back(',');
        Json(r->GetRepeatedMessage(m, values, i), out);
      }
      out->push_back(']');
    } else {  // Value
      const FD* set = r->GetOneofFieldDescriptor(m, d->oneof_decl(0));
      switch (set == nullptr ? 0 : set->number()) {
        case 2:
          text::AppendJsonDouble(out, r->GetDouble(m, set));
          break;
        case 3:
          text::AppendJsonString(out, r->GetString(m, set));
          break;
        case 4:
          *out += r->GetBool(m, set) ? "true" : "false";
          break;
        case 5:
        case 6:
          Json(r->GetMessage(m, set), out);
          break;
        default:
          *out += "null";
          break;
      }
    }
  }

  // An open enum's unknown number: its text after the names (the decoder's rule).
  int32_t EnumIndex(const Node& node, int32_t number) {
    int32_t index = node.EnumIndex(number);
    if (index >= 0) return index;
    std::vector<int32_t>& extras = extras_[&node];
    for (size_t i = 0; i < extras.size(); ++i) {
      if (extras[i] == number) return static_cast<int32_t>(node.enum_names.size() + i);
    }
    extras.push_back(number);
    return static_cast<int32_t>(node.enum_names.size() + extras.size() - 1);
  }

  void Message(const Node& node, const google::protobuf::Message& m,
               arrow::ArrayBuilder* b) {
    auto* s = static_cast<arrow::StructBuilder*>(b);
    const google::protobuf::Descriptor* d = m.GetDescriptor();
    for (size_t i = 0; i < node.children.size(); ++i) {
      const Node& child = node.children[i];
      Field(child, m, d->FindFieldByNumber(child.number),
            s->child_builder(static_cast<int>(i)).get());
    }
    (void)s->Append();
  }

  void NullStruct(const Node& node, arrow::ArrayBuilder* b) {
    auto* s = static_cast<arrow::StructBuilder*>(b);
    for (size_t i = 0; i < node.children.size(); ++i) {
      const Node& child = node.children[i];
      arrow::ArrayBuilder* c = s->child_builder(static_cast<int>(i)).get();
      if (child.kind == NodeKind::kMessage && !child.repeated) {
        NullStruct(child, c);
      } else if (child.presence) {
        (void)c->AppendNull();
      } else if (child.kind == NodeKind::kEnum && !child.repeated) {
        (void)static_cast<arrow::Int32Builder*>(c)->Append(child.enum_default_index);
      } else {
        (void)c->AppendEmptyValue();
      }
    }
    (void)s->Append(false);
  }

  void Field(const Node& node, const google::protobuf::Message& m, const FD* f,
             arrow::ArrayBuilder* b) {
    const Refl* r = m.GetReflection();
    if (node.kind == NodeKind::kMap) {
      auto* map = static_cast<arrow::MapBuilder*>(b);
      (void)map->Append();
      for (int i = 0; i < r->FieldSize(m, f); ++i) {
        const google::protobuf::Message& entry = r->GetRepeatedMessage(m, f, i);
        const google::protobuf::Descriptor* d = entry.GetDescriptor();
        Value(node.children[0], entry, d->FindFieldByNumber(1), -1, map->key_builder());
        Value(node.children[1], entry, d->FindFieldByNumber(2), -1, map->item_builder());
      }
      return;
    }
    if (node.repeated) {
      auto* list = static_cast<arrow::ListBuilder*>(b);
      (void)list->Append();
      for (int i = 0; i < r->FieldSize(m, f); ++i) {
        Value(node, m, f, i, list->value_builder());
      }
      return;
    }
    if (node.presence && !r->HasField(m, f)) {
      if (node.kind == NodeKind::kMessage) {
        NullStruct(node, b);
      } else {
        (void)b->AppendNull();
      }
      return;
    }
    Value(node, m, f, -1, b);
  }

  // The value of `f` in `m` (element `i` of a repeated field, or -1).
  void Value(const Node& node, const google::protobuf::Message& m, const FD* f, int i,
             arrow::ArrayBuilder* b) {
    const Refl* r = m.GetReflection();
    const bool rep = i >= 0;
    switch (node.kind) {
      case NodeKind::kInt32:
        (void)static_cast<arrow::Int32Builder*>(b)->Append(
            rep ? r->GetRepeatedInt32(m, f, i) : r->GetInt32(m, f));
        return;
      case NodeKind::kInt64:
        (void)static_cast<arrow::Int64Builder*>(b)->Append(
            rep ? r->GetRepeatedInt64(m, f, i) : r->GetInt64(m, f));
        return;
      case NodeKind::kUInt32:
        (void)static_cast<arrow::UInt32Builder*>(b)->Append(
            rep ? r->GetRepeatedUInt32(m, f, i) : r->GetUInt32(m, f));
        return;
      case NodeKind::kUInt64:
        (void)static_cast<arrow::UInt64Builder*>(b)->Append(
            rep ? r->GetRepeatedUInt64(m, f, i) : r->GetUInt64(m, f));
        return;
      case NodeKind::kFloat:
        (void)static_cast<arrow::FloatBuilder*>(b)->Append(
            rep ? r->GetRepeatedFloat(m, f, i) : r->GetFloat(m, f));
        return;
      case NodeKind::kDouble:
        (void)static_cast<arrow::DoubleBuilder*>(b)->Append(
            rep ? r->GetRepeatedDouble(m, f, i) : r->GetDouble(m, f));
        return;
      case NodeKind::kBool:
        (void)static_cast<arrow::BooleanBuilder*>(b)->Append(
            rep ? r->GetRepeatedBool(m, f, i) : r->GetBool(m, f));
        return;
      case NodeKind::kString:
        (void)static_cast<arrow::StringBuilder*>(b)->Append(
            rep ? r->GetRepeatedString(m, f, i) : r->GetString(m, f));
        return;
      case NodeKind::kBytes:
        (void)static_cast<arrow::BinaryBuilder*>(b)->Append(
            rep ? r->GetRepeatedString(m, f, i) : r->GetString(m, f));
        return;
      case NodeKind::kEnum: {
        int number = rep ? r->GetRepeatedEnumValue(m, f, i) : r->GetEnumValue(m, f);
        (void)static_cast<arrow::Int32Builder*>(b)->Append(EnumIndex(node, number));
        return;
      }
      default:
        break;
    }
    const google::protobuf::Message& sub =
        rep ? r->GetRepeatedMessage(m, f, i) : r->GetMessage(m, f);
    if (node.kind == NodeKind::kJson) {
      std::string json;
      Json(sub, &json);
      (void)static_cast<arrow::StringBuilder*>(b)->Append(json);
      return;
    }
    const google::protobuf::Descriptor* d = sub.GetDescriptor();
    const Refl* sr = sub.GetReflection();
    switch (node.kind) {
      case NodeKind::kMessage:
        Message(node, sub, b);
        return;
      case NodeKind::kTimestamp:
      case NodeKind::kDuration: {
        int64_t ns = sr->GetInt64(sub, d->FindFieldByNumber(1)) * 1000000000 +
                     sr->GetInt32(sub, d->FindFieldByNumber(2));
        if (node.kind == NodeKind::kTimestamp) {
          (void)static_cast<arrow::TimestampBuilder*>(b)->Append(ns);
        } else {
          (void)static_cast<arrow::DurationBuilder*>(b)->Append(ns);
        }
        return;
      }
      case NodeKind::kWrapper:
        Value(node.children[0], sub, d->FindFieldByNumber(1), -1, b);
        return;
      default:
        return;
    }
  }

  std::shared_ptr<const ProtobufPlan> plan_;
  google::protobuf::DynamicMessageFactory factory_;
  const google::protobuf::Descriptor* descriptor_;
  const google::protobuf::Message* prototype_;
  std::unique_ptr<google::protobuf::Message> message_;
  std::unique_ptr<arrow::ArrayBuilder> builder_;
  int64_t rows_ = 0;
  std::map<const Node*, std::vector<int32_t>> extras_;
};

}  // namespace kelt::protobuf
