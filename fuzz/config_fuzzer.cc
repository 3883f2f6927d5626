// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz the service config parser (YAML/JSON → EltConfig). It reads at most a schema file
// named by the input (relative to a directory that does not exist) and writes nothing.
// Invariants: no crash/UB/unbounded growth; a failure is kInvalid or kParseError with a
// message whose every line names a key path ("<path>: …") or the YAML position; a
// success has brokers, a group, topics, a schema and at least one sink.
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "kelt/config.h"

namespace {
void Check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto c = kelt::ParseEltConfig(text, "/nonexistent-kelt-fuzz-dir",
                                {{"log.level", "debug", "--log-level"}});
  if (c.ok()) {
    Check(!c->elt.consumer.brokers.empty());
    Check(!c->elt.consumer.group_id.empty());
    Check(!c->elt.consumer.topics.empty());
    Check(!c->elt.landing.fields.empty());
    Check(!c->sinks.empty());
    Check(c->log_level == kelt::LogLevel::kDebug);  // the override won
  } else {
    Check(c.status().code() == kelt::StatusCode::kInvalid ||
          c.status().code() == kelt::StatusCode::kParseError);
    Check(!c.status().message().empty());
    std::stringstream lines(c.status().message());
    std::string line;
    while (std::getline(lines, line)) Check(line.find(": ") != std::string::npos);
  }
  return 0;
}
