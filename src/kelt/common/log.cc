// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/log.h"

#include <atomic>
#include <memory>
#include <mutex>

namespace kelt {
namespace {

struct HookState {
  LogHook hook;
  LogLevel min_level;
};

// Readers take a snapshot under the mutex and call outside it, so a hook may log.
std::mutex g_mutex;
std::shared_ptr<const HookState> g_state;
std::atomic<int> g_min_level{static_cast<int>(LogLevel::kError) +
                             1};  // no hook: drop all

}  // namespace

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

std::optional<LogLevel> ParseLogLevel(std::string_view name) {
  for (LogLevel l :
       {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError}) {
    if (LogLevelName(l) == name) return l;
  }
  return std::nullopt;
}

std::string_view LogFormatName(LogFormat format) {
  return format == LogFormat::kJson ? "json" : "text";
}

std::optional<LogFormat> ParseLogFormat(std::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return std::nullopt;
}

void SetLogHook(LogHook hook, LogLevel min_level) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (hook) {
    g_state = std::make_shared<const HookState>(HookState{std::move(hook), min_level});
    g_min_level.store(static_cast<int>(min_level));
  } else {
    g_state.reset();
    g_min_level.store(static_cast<int>(LogLevel::kError) + 1);
  }
}

void Log(LogLevel level, std::string_view component, std::string_view message) {
  if (static_cast<int>(level) < g_min_level.load(std::memory_order_relaxed)) return;
  std::shared_ptr<const HookState> state;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    state = g_state;
  }
  if (state && level >= state->min_level) state->hook(level, component, message);
}

}  // namespace kelt
