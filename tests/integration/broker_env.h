// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// What the end-to-end tests need to know about the broker scripts/kafka.sh started:
// its env file (KEY=value lines) and unique topic names.
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
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

/// Create a topic with scripts/kafka.sh in the broker's directory: the directory of the
/// env file KELT_KAFKA_ENV names, else `kafka_dir`. kafka.sh runs `kelt topics create`:
/// the kelt binary of this build (KELT_CLI_PATH) unless KELT_CLI names one. Returns the
/// command's exit status; `command` gets the command line (for the failure message).
inline int CreateTopic(const std::string& name, int partitions, const char* source_dir,
                       const char* kafka_dir, std::string* command) {
  const char* env = std::getenv("KELT_KAFKA_ENV");
  const std::string dir =
      env ? std::filesystem::path(env).parent_path().string() : std::string(kafka_dir);
  std::string cli;
#ifdef KELT_CLI_PATH
  if (std::getenv("KELT_CLI") == nullptr)
    cli = std::string("KELT_CLI=") + KELT_CLI_PATH + " ";
#endif
  *command = cli + "bash " + source_dir + "/scripts/kafka.sh create-topic " + name + " " +
             std::to_string(partitions) + " --dir " + dir + " >/dev/null";
  return std::system(command->c_str());
}

}  // namespace kelt::testing
