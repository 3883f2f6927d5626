// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The registry-backed PayloadEncoders of each value format (internal to serde/):
// registry_encoder.cc makes them, one file per format defines them.
#pragma once

#include <arrow/api.h>

#include <memory>
#include <string>

#include "kelt/registry.h"
#include "kelt/serde.h"

namespace kelt::serde {

/// A PayloadEncoder that can compile (and, with auto_register, register) for an Arrow
/// schema before the first batch, so that a column that cannot be written fails early.
class RecordEncoder : public PayloadEncoder {
 public:
  virtual Status Prepare(std::shared_ptr<arrow::Schema> schema) = 0;
};

/// The subject with each character a schema name may not hold as '_' ("orders-value" →
/// "orders_value"; a leading digit gets a '_' in front).
std::string RecordNameOf(const std::string& subject);

/// Protobuf records: `latest` the subject's latest schema, or null with auto_register.
Result<std::shared_ptr<RecordEncoder>> MakeProtobufRecords(
    std::unique_ptr<SchemaRegistry> registry, const RegistryEncoderOptions& options,
    std::shared_ptr<const RegisteredSchema> latest);

/// The message `message` of a registered Protobuf schema (its references fetched) and
/// the Arrow schema its records land as: what `kelt produce` reads JSON input as.
Result<std::shared_ptr<arrow::Schema>> ProtobufColumns(SchemaRegistry& registry,
                                                       const RegisteredSchema& schema,
                                                       const std::string& message);

/// JSON Schema records: `latest` the subject's latest schema, or null with auto_register.
Result<std::shared_ptr<RecordEncoder>> MakeJsonSchemaRecords(
    std::unique_ptr<SchemaRegistry> registry, const RegistryEncoderOptions& options,
    std::shared_ptr<const RegisteredSchema> latest);

}  // namespace kelt::serde
