// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The compiled form of a ProtobufPlan: a tree of nodes, one per field, mirroring the
// message's fields (internal to protobuf/).
#pragma once

#include <google/protobuf/descriptor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kelt/protobuf.h"

namespace arrow {
class DataType;
class Array;
struct ArrayData;
}  // namespace arrow

namespace kelt {
namespace protobuf {

/// What a node writes (its Arrow value, the element's for repeated fields).
enum class NodeKind : uint8_t {
  kInt32,      // int32, sint32, sfixed32 → int32
  kInt64,      // int64, sint64, sfixed64 → int64
  kUInt32,     // uint32, fixed32 → uint32
  kUInt64,     // uint64, fixed64 → uint64
  kFloat,      // float → float32
  kDouble,     // double → float64
  kBool,       // bool → bool
  kString,     // string → utf8
  kBytes,      // bytes → binary
  kEnum,       // enum → dictionary<int32, utf8> (int32 indices while building)
  kMessage,    // message → struct
  kTimestamp,  // google.protobuf.Timestamp → timestamp[ns, UTC]
  kDuration,   // google.protobuf.Duration → duration[ns]
  kWrapper,    // google.protobuf.*Value → its value, nullable
  kMap,        // map<K, V> → map<K', V'> (children: key, value)
  kJson,       // google.protobuf.Struct/Value/ListValue → utf8, their JSON text
};

/// Which message a kJson node holds.
enum class JsonMessage : uint8_t { kStruct, kValue, kList };

/// How a value sits on the wire.
enum class WireCoding : uint8_t {
  kVarint,    // int32, int64, uint32, uint64, bool, enum
  kZigZag32,  // sint32
  kZigZag64,  // sint64
  kFixed32,   // fixed32, sfixed32, float
  kFixed64,   // fixed64, sfixed64, double
  kLength,    // string, bytes, messages
};

struct Node {
  int32_t id = 0;      // index of the decoder's per-node state
  int32_t number = 0;  // field number
  NodeKind kind = NodeKind::kInt32;
  WireCoding coding = WireCoding::kVarint;
  bool repeated = false;     // a list (maps are kMap, not repeated)
  bool presence = false;     // absent → null (else the default value)
  bool closed_enum = false;  // proto2 enum: unknown numbers are unknown fields
  int32_t oneof = -1;        // index of its real oneof in the parent, or -1
  std::string name;          // field name
  std::string path;          // for errors: "address.zip", "lines[]", "attrs{}"
  // kEnum: the dictionary (value names in declaration order) and number → index.
  std::vector<std::string> enum_names;
  std::vector<std::pair<int32_t, int32_t>> enum_index;  // sorted by number
  int32_t enum_default_index = 0;
  JsonMessage json = JsonMessage::kValue;  // kJson
  // kMessage/kTimestamp/kDuration/kWrapper/kMap: the fields (kMap: key, value).
  std::vector<Node> children;
  int32_t oneof_count = 0;
  // field number → child index + 1 (0 = unknown), for numbers below its size.
  std::vector<int32_t> child_by_number;
  std::vector<std::pair<int32_t, int32_t>> child_by_large_number;  // sorted

  /// The child for a field number, or nullptr.
  const Node* Child(int32_t number) const {
    if (number >= 0 && static_cast<size_t>(number) < child_by_number.size()) {
      int32_t i = child_by_number[number];
      return i == 0 ? nullptr : &children[i - 1];
    }
    return LargeChild(number);
  }
  const Node* LargeChild(int32_t number) const;
  /// The enum's dictionary index for `number`, or -1.
  int32_t EnumIndex(int32_t number) const;
};

/// The Arrow type of a node's value (element type for repeated fields), as output
/// (`dictionaries`) or as built (int32 indices for enums).
std::shared_ptr<arrow::DataType> ValueType(const Node& node, bool dictionaries);
/// The Arrow type of the node's column (list or map around ValueType as needed).
std::shared_ptr<arrow::DataType> FieldType(const Node& node, bool dictionaries);

/// Return `data` (built with ValueType(root, false)) with each enum's int32 indices
/// turned into a dictionary array of the output type (same buffers), its dictionary
/// from `dictionary`.
std::shared_ptr<arrow::ArrayData> WithDictionaries(
    const Node& root, const std::shared_ptr<arrow::ArrayData>& data,
    const std::function<std::shared_ptr<arrow::ArrayData>(const Node&)>& dictionary);

}  // namespace protobuf

struct ProtobufPlan::Program {
  std::shared_ptr<const ProtobufSchema::Pool> pool;  // keeps the descriptors alive
  std::string message_name;
  protobuf::Node root;  // kMessage, the top-level message
  int32_t node_count = 0;
  std::shared_ptr<arrow::Schema> arrow_schema;  // output (dictionaries for enums)
  std::shared_ptr<arrow::DataType> build_type;  // root struct, int32 for enums
};

}  // namespace kelt
