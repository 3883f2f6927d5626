// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The library is silent (STYLE rule 9): it reports through a hook the application
// installs. Without a hook, warnings and errors go nowhere.
#pragma once

#include <functional>
#include <string_view>

namespace kelt {

enum class LogLevel : uint8_t { kDebug, kInfo, kWarning, kError };

std::string_view LogLevelName(LogLevel level);

/// Receives (level, component, message). May be called from librdkafka's threads, so it
/// must be thread-safe. Messages never contain secrets (passwords, keys).
using LogHook = std::function<void(LogLevel, std::string_view, std::string_view)>;

/// Install (or, with nullptr, remove) the process-wide log hook; messages below
/// `min_level` are not delivered.
void SetLogHook(LogHook hook, LogLevel min_level = LogLevel::kInfo);

/// Deliver a message to the hook, if any (used by kelt's modules).
void Log(LogLevel level, std::string_view component, std::string_view message);

}  // namespace kelt
