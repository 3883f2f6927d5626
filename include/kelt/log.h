// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The library is silent (STYLE rule 9): it reports through a hook the application
// installs. Without a hook, warnings and errors go nowhere.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

namespace kelt {

enum class LogLevel : uint8_t { kDebug, kInfo, kWarning, kError };

/// "debug", "info", "warning", "error".
std::string_view LogLevelName(LogLevel level);
/// The level of a LogLevelName; nullopt for anything else.
std::optional<LogLevel> ParseLogLevel(std::string_view name);

/// How an application renders log lines: `key=value` text or one JSON object a line.
enum class LogFormat : uint8_t { kText, kJson };

/// "text", "json".
std::string_view LogFormatName(LogFormat format);
/// The format of a LogFormatName; nullopt for anything else.
std::optional<LogFormat> ParseLogFormat(std::string_view name);

/// Receives (level, component, message). May be called from librdkafka's threads, so it
/// must be thread-safe. Messages never contain secrets (passwords, keys).
using LogHook = std::function<void(LogLevel, std::string_view, std::string_view)>;

/// Install (or, with nullptr, remove) the process-wide log hook; messages below
/// `min_level` are not delivered.
void SetLogHook(LogHook hook, LogLevel min_level = LogLevel::kInfo);

/// Deliver a message to the hook, if any (used by kelt's modules).
void Log(LogLevel level, std::string_view component, std::string_view message);

}  // namespace kelt
