// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// What the end-to-end tests need to know about the broker scripts/kafka.sh started:
// its env file (KEY=value lines) and unique topic names.
#pragma once

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

namespace kelt::testing {

/// Read the broker env file named by the environment variable `var` (empty if unset).
/// Without the variable, read `fallback` when given.
inline std::map<std::string, std::string> ReadBrokerEnv(const char* var,
                                                        const char* fallback = nullptr) {
  std::map<std::string, std::string> env;
  const char* path = std::getenv(var);
  if (path == nullptr) path = fallback;
  if (path == nullptr) return env;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

/// A topic name unique to this run, so reruns against a kept broker do not collide.
inline std::string UniqueTopic(const std::string& base) {
  return base + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

}  // namespace kelt::testing
