// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz the pipeline JSON parser and validator (ValidatePipeline: it reads and writes
// nothing, so arbitrary paths in the input are harmless). Invariants: no crash/UB; a
// failure is a parse-stage failure with one of the parse codes and a message; the
// envelope of any result is valid JSON-shaped text that starts as RDP_COMPATIBILITY.md §6
// says.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "kelt/pipeline_json.h"

namespace {
void Check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view json(reinterpret_cast<const char*>(data), size);
  kelt::PipelineRunResult r = kelt::ValidatePipeline(json);
  std::string envelope = kelt::PipelineRunResultToJson(r);
  if (r.ok) {
    Check(r.sink_results.empty());
    Check(
        envelope.starts_with(R"({"ok":true,"interchange":{"kind":"run_pipeline_json")"));
  } else {
    Check(r.error_stage == "parse");
    Check(r.error_code == "ORCHESTRATION_JSON_INVALID" ||
          r.error_code == "ORCHESTRATION_VALIDATION" ||
          r.error_code == "ORCHESTRATION_VERSION_UNSUPPORTED");
    Check(!r.error_message.empty());
    Check(envelope.starts_with(R"({"ok":false,"error":{"code":)"));
  }
  return 0;
}
