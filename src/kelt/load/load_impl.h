// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Loader::Impl: one window's loading, behind the public Loader. JSON payloads
// (loader.cc, JsonLoad; plain or in the Confluent wire format), Avro and Protobuf
// payloads in the wire format (avro_load.cc, protobuf_load.cc, on wire_load.h) implement
// it; Loader::Make picks by LoadOptions. One virtual call per record (the readers below
// it stay inline). Internal header.
#pragma once

#include <arrow/type_fwd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kelt/load.h"

namespace kelt {

namespace load {
/// Why the last bad record was bad (the parts of its dead letter).
struct BadRecordNote {
  std::string code;
  std::string field;
  std::string message;
};
}  // namespace load

class Loader::Impl {
 public:
  virtual ~Impl() = default;
  virtual Status Reserve(int64_t records, int64_t payload_bytes) = 0;
  virtual Status Append(const RecordView& r) = 0;
  virtual Result<LoadedWindow> Finish() = 0;
  virtual bool needs_headers() const = 0;
  virtual const Schema& schema() const = 0;
  virtual const std::shared_ptr<arrow::Schema>& arrow_schema() const = 0;
  /// Tests and the fuzzer compare the JSON readers; nothing for other payloads.
  virtual void set_force_dom(bool) {}
  virtual int32_t newer_writer_schema() const { return -1; }
  /// Rows landed in the window so far.
  virtual int64_t rows() const = 0;
  /// Why the last bad record was bad, under any policy (nullptr: not kept). A key
  /// loader's (KeyColumn) tells what its key's dead letter says.
  virtual const load::BadRecordNote* last_bad() const { return nullptr; }
};

namespace load {

/// The Impl for `landing` and `options`' payload format (options.key aside).
Result<std::unique_ptr<Loader::Impl>> MakeLoadImpl(const Schema& landing,
                                                   LoadOptions options);

/// `values` with decoded keys (options.key): the keys land as one more column,
/// `_kafka_key` (key_load.cc).
Result<std::unique_ptr<Loader::Impl>> MakeKeyedLoad(std::unique_ptr<Loader::Impl> values,
                                                    const LoadOptions& options);

/// Why a payload without the wire format's header is bad (MALFORMED_PAYLOAD).
inline constexpr std::string_view kNoWireHeader =
    "the payload is not in the schema registry's wire format (a magic byte 0 and a "
    "4-byte schema id)";

/// Read the wire format's header: magic byte 0, then the schema id, 4 bytes big-endian
/// (the body starts at byte 5). False when the payload has no header.
inline bool ReadWireHeader(std::string_view payload, int32_t* id) {
  if (payload.size() < 5 || payload[0] != 0) return false;
  const auto* b = reinterpret_cast<const uint8_t*>(payload.data());
  *id = static_cast<int32_t>((uint32_t{b[1]} << 24) | (uint32_t{b[2]} << 16) |
                             (uint32_t{b[3]} << 8) | uint32_t{b[4]});
  return true;
}

/// The loader of Avro payloads: `metadata` holds the landing's `_kafka_*` columns only,
/// `options.avro` the reader schema and the writer schemas' source.
Result<std::unique_ptr<Loader::Impl>> MakeAvroLoad(const Schema& metadata,
                                                   const LoadOptions& options);

/// The loader of Protobuf payloads: `metadata` holds the landing's `_kafka_*` columns
/// only, `options.protobuf` the reader schema and message and the writer schemas' source.
Result<std::unique_ptr<Loader::Impl>> MakeProtobufLoad(const Schema& metadata,
                                                       const LoadOptions& options);

}  // namespace load
}  // namespace kelt
