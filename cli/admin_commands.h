// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// `kelt topics`, `kelt cluster` and `kelt acls` (topics_command.cc): cluster
// administration over kelt::Admin; `kelt iceberg` (iceberg_command.cc): table
// maintenance. main.cc registers them and runs the one parsed.
#pragma once

#include <memory>

namespace CLI {
class App;
}  // namespace CLI

namespace kelt::cli {

class AdminCommands {
 public:
  virtual ~AdminCommands() = default;
  /// True when one of these subcommands was on the command line.
  virtual bool parsed() const = 0;
  /// Run it; the exit code (0 success, 1 failed, 2 bad usage).
  virtual int Run() = 0;
};

/// Add the subcommands to `app` (call before parsing).
std::unique_ptr<AdminCommands> AddAdminCommands(CLI::App* app);

/// Add `kelt iceberg expire|compact` (iceberg_command.cc) to `app`.
std::unique_ptr<AdminCommands> AddIcebergCommands(CLI::App* app);

}  // namespace kelt::cli
