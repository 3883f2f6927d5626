// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The CLI owns the terminal: structured log lines (kelt's log hook), the progress bar
// and the signal watcher share stderr through one lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/log.h"

namespace kelt::cli {

/// Install kelt's log hook: one line per message at `level` or above on stderr, as text
/// (`ts=… level=… component=… msg="…"`) or JSON. Occurrences of any of `secrets` in a
/// message are replaced by "***" (defence in depth: the library already hides them).
void InstallLogHook(LogFormat format, LogLevel level, std::vector<std::string> secrets);

/// Log from the CLI itself through the same hook.
void CliLog(LogLevel level, std::string_view message);

/// Write `text` to stderr under the terminal lock; when a progress bar is on screen,
/// clear its line first.
void WriteStderr(std::string_view text);

/// Draw `bar` on the current stderr line (no newline) under the terminal lock.
void DrawBar(std::string_view bar);
/// End the bar's line (a newline) if a bar is on screen.
void EndBar();

/// Block SIGINT and SIGTERM in this thread (call first in main, before any thread
/// exists) and watch them from a sigwait thread: the first sets `stop` and logs that
/// the run is ending; a second exits the process at once (exit code 128 + signal) —
/// safe because nothing is committed to Kafka before the sinks hold it durably.
void WatchSignals(std::atomic<bool>* stop);

/// Human-readable counts: 1234567 → "1.23M", bytes → "1.2 MiB", seconds → "1m05s".
/// `s` as a JSON string literal, quotes included (invalid UTF-8 becomes U+FFFD).
std::string JsonString(std::string_view s);

std::string HumanCount(double n);
std::string HumanBytes(double n);
std::string HumanSeconds(double s);

}  // namespace kelt::cli
