// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz the C ABI's JSON entry point that touches no broker and no file,
// rdp_kafka_elt_load_records_json, as a C caller reaches it: NUL-terminated strings of
// any bytes (invalid UTF-8 included), either of them possibly NULL.
// Input: byte 0 picks NULL arguments (bit 0: records, bit 1: schema); the rest is
// "records" 0x00 "schema" (no 0x00: the built-in schema below).
// Invariants: the envelope in the slice is one JSON object of valid UTF-8 with a boolean
// "ok"; ok ⇒ an "interchange" object of kind "kafka_elt_load"; not ok ⇒ an "error"
// string; `out` NULL is accepted; the slice is freed exactly once (ASan checks).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "kelt.h"

namespace {

constexpr const char* kSchema =
    R"({"fields":[{"name":"id","data_type":"Int64"},{"name":"name","data_type":"Utf8"},)"
    R"({"name":"at","data_type":"Timestamp"},{"name":"ok","data_type":"Bool"},)"
    R"({"name":"x","data_type":"Float64"}]})";

void Check(bool condition, const char* what) {
  if (!condition) {
    __builtin_printf("capi_json_fuzzer: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t nulls = data[0];
  const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t cut = rest.find('\0');
  const std::string records = rest.substr(0, cut);
  const std::string schema = cut == std::string::npos ? kSchema : rest.substr(cut + 1);
  const char* records_arg = (nulls & 1) ? nullptr : records.c_str();
  const char* schema_arg = (nulls & 2) ? nullptr : schema.c_str();

  RdpJsonSlice out{};
  rdp_kafka_elt_load_records_json(&out, records_arg, schema_arg);
  Check(out.ptr != nullptr && out.len > 0, "an empty envelope");
  const std::string text(reinterpret_cast<const char*>(out.ptr), out.len);
  rdp_json_slice_free(out);

  // nlohmann's parser rejects invalid UTF-8 in strings: the envelope must be clean even
  // when the input was not (errors quote it escaped or not at all).
  nlohmann::json envelope =
      nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  Check(envelope.is_object(), "the envelope is not one JSON object of valid UTF-8");
  Check(envelope.contains("ok") && envelope["ok"].is_boolean(), "no boolean \"ok\"");
  if (envelope["ok"].get<bool>()) {
    Check(records_arg != nullptr && schema_arg != nullptr, "ok with a NULL argument");
    const auto& interchange = envelope["interchange"];
    Check(interchange.is_object() && interchange.value("kind", "") == "kafka_elt_load",
          "ok without a kafka_elt_load interchange");
  } else {
    Check(envelope.contains("error") && envelope["error"].is_string() &&
              !envelope["error"].get<std::string>().empty(),
          "a failure without an error message");
  }
  // The result may be dropped.
  rdp_kafka_elt_load_records_json(nullptr, records_arg, schema_arg);
  return 0;
}
