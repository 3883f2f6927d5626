// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz the JSON Schema → landing Schema mapping (a registry subject's schema is outside
// input). Invariants: no crash/UB, no endless $ref loop; a failure is kInvalid or
// kParseError with a message; a success has columns with distinct non-empty names, at
// most 10,000 of them, whose schema JSON re-parses to the same schema.
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "kelt/json_schema.h"

namespace {
void Check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view json(reinterpret_cast<const char*>(data), size);
  auto schema = kelt::SchemaFromJsonSchema(json);
  if (!schema.ok()) {
    Check(schema.status().code() == kelt::StatusCode::kInvalid ||
          schema.status().code() == kelt::StatusCode::kParseError);
    Check(!schema.status().message().empty());
    return 0;
  }
  Check(!schema->fields.empty() && schema->fields.size() <= 10000);
  std::set<std::string> names;
  for (const kelt::Field& f : schema->fields) {
    Check(!f.name.empty());
    Check(names.insert(f.name).second);
  }
  auto again = kelt::ParseSchemaJson(kelt::SchemaToJson(*schema));
  Check(again.ok() && *again == *schema);
  return 0;
}
