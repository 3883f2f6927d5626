// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// What the tests of the wire-format loaders share (avro_load_test.cc,
// protobuf_load_test.cc): records of a test topic, varints and the wire format's
// header. Tests only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kelt/record.h"

namespace kelt::load::testing {

/// A record of topic "orders", partition 1, at `offset`, whose value is `value` (not
/// copied; nullopt: a tombstone).
inline RecordView OrdersRecord(const std::optional<std::string>& value, int64_t offset) {
  RecordView r;
  r.topic = "orders";
  r.partition = 1;
  r.offset = offset;
  if (value) r.value = *value;
  return r;
}

/// A base-128 varint (Avro's and Protobuf's), and a zigzag-encoded one.
inline std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
inline std::string Zigzag(int64_t v) {
  return Varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}

/// The wire format's header of schema `id`: a magic byte 0 and the id, big-endian.
inline std::string WireHeader(int32_t id) {
  std::string out(1, '\0');
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((static_cast<uint32_t>(id) >> shift) & 0xff));
  }
  return out;
}

}  // namespace kelt::load::testing
