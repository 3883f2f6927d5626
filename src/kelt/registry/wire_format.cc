// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Confluent wire format's prefix: magic byte, schema id, and for Protobuf the
// message indexes (zigzag varints, as Confluent's serializers write them).
#include <string>
#include <vector>

#include "kelt/registry.h"

namespace kelt {
namespace {

// A message in a file nests at most this deep, and no file has more messages than
// this: longer lists are corrupt bytes, not a schema.
constexpr int64_t kMaxIndexes = 100;
constexpr int64_t kMaxIndex = 1 << 20;

// One zigzag varint at body[*pos] (at most 10 bytes); false when truncated or too long.
bool ReadZigzag(std::string_view body, size_t* pos, int64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= body.size()) return false;
    const auto b = static_cast<uint8_t>(body[(*pos)++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *out = static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
      return true;
    }
  }
  return false;
}

void AppendZigzag(std::string* out, int64_t value) {
  uint64_t v = (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

}  // namespace

Result<WireHeader> ParseWireHeader(std::string_view payload) {
  if (payload.size() < 5) {
    return Status::Invalid(
        "not in the schema registry's wire format: " + std::to_string(payload.size()) +
        " byte(s), fewer than the 5 of its header");
  }
  if (payload[0] != 0) {
    return Status::Invalid(
        "not in the schema registry's wire format: the first byte is " +
        std::to_string(static_cast<uint8_t>(payload[0])) + ", not the magic byte 0");
  }
  WireHeader h;
  uint32_t id = 0;
  for (int i = 1; i <= 4; ++i) id = (id << 8) | static_cast<uint8_t>(payload[i]);
  h.schema_id = static_cast<int32_t>(id);
  h.body_offset = 5;
  return h;
}

std::string WireHeaderBytes(int32_t id) {
  const auto u = static_cast<uint32_t>(id);
  return std::string{'\0', static_cast<char>(u >> 24), static_cast<char>(u >> 16),
                     static_cast<char>(u >> 8), static_cast<char>(u)};
}

Result<std::vector<int32_t>> ParseProtobufMessageIndexes(std::string_view body,
                                                         size_t* consumed) {
  size_t pos = 0;
  int64_t count = 0;
  auto bad = [](const std::string& what) {
    return Status::Invalid("the Protobuf message indexes after the schema id are " +
                           what);
  };
  if (!ReadZigzag(body, &pos, &count)) return bad("truncated");
  if (count < 0 || count > kMaxIndexes) {
    return bad("corrupt (a count of " + std::to_string(count) + ")");
  }
  std::vector<int32_t> out;
  if (count == 0) {
    out.push_back(0);
  } else {
    for (int64_t i = 0; i < count; ++i) {
      int64_t index = 0;
      if (!ReadZigzag(body, &pos, &index)) return bad("truncated");
      if (index < 0 || index > kMaxIndex) {
        return bad("corrupt (an index of " + std::to_string(index) + ")");
      }
      out.push_back(static_cast<int32_t>(index));
    }
  }
  *consumed = pos;
  return out;
}

std::string ProtobufMessageIndexesBytes(const std::vector<int32_t>& indexes) {
  std::string out;
  if (indexes.empty() || (indexes.size() == 1 && indexes[0] == 0)) {
    AppendZigzag(&out, 0);
    return out;
  }
  AppendZigzag(&out, static_cast<int64_t>(indexes.size()));
  for (int32_t i : indexes) AppendZigzag(&out, i);
  return out;
}

}  // namespace kelt
