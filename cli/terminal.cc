// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "terminal.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <thread>

#include "kelt/common/text.h"

namespace kelt::cli {
namespace {

std::mutex g_term;
bool g_bar_on_screen = false;

void WriteAll(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t n = ::write(fd, s.data(), s.size());
    if (n <= 0) return;
    s.remove_prefix(static_cast<size_t>(n));
  }
}

std::string Timestamp() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch())
                .count() %
            1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                tm.tm_sec, static_cast<int>(ms));
  return buf;
}

struct LogConfig {
  bool json = false;
  std::vector<std::string> secrets;
};
LogConfig g_log;

std::string Redact(std::string msg) {
  for (const auto& s : g_log.secrets) {
    if (s.size() < 3) continue;  // too short to search for without mangling text
    for (size_t at = msg.find(s); at != std::string::npos; at = msg.find(s, at + 3)) {
      msg.replace(at, s.size(), "***");
    }
  }
  return msg;
}

void Emit(LogLevel level, std::string_view component, std::string_view message) {
  std::string msg = Redact(std::string(message));
  std::string line;
  if (g_log.json) {
    line = "{\"ts\":\"" + Timestamp() + "\",\"level\":\"" +
           std::string(LogLevelName(level)) +
           "\",\"component\":" + JsonString(component) + ",\"msg\":" + JsonString(msg) +
           "}\n";
  } else {
    line = "ts=" + Timestamp() + " level=" + std::string(LogLevelName(level)) +
           " component=" + std::string(component) + " msg=" + JsonString(msg) + "\n";
  }
  WriteStderr(line);
}

}  // namespace

void InstallLogHook(LogFormat format, LogLevel level, std::vector<std::string> secrets) {
  g_log.json = format == LogFormat::kJson;
  g_log.secrets = std::move(secrets);
  SetLogHook(Emit, level);
}

void CliLog(LogLevel level, std::string_view message) { Log(level, "cli", message); }

void WriteStderr(std::string_view text) {
  std::lock_guard<std::mutex> lock(g_term);
  if (g_bar_on_screen) {
    WriteAll(2, "\r\x1b[2K");
    g_bar_on_screen = false;
  }
  WriteAll(2, text);
}

void DrawBar(std::string_view bar) {
  std::lock_guard<std::mutex> lock(g_term);
  WriteAll(2, "\r\x1b[2K");
  WriteAll(2, bar);
  g_bar_on_screen = true;
}

void EndBar() {
  std::lock_guard<std::mutex> lock(g_term);
  if (g_bar_on_screen) WriteAll(2, "\n");
  g_bar_on_screen = false;
}

void WatchSignals(std::atomic<bool>* stop) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set, stop] {
    int count = 0;
    while (true) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      ++count;
      const char* name = sig == SIGINT ? "SIGINT" : "SIGTERM";
      if (count == 1) {
        stop->store(true);
        CliLog(LogLevel::kWarning,
               std::string("received ") + name +
                   ": finishing the current window, committing what is durable (a "
                   "second signal exits at once)");
      } else {
        // No flush, no commit: what the sinks hold durably is found again at the
        // next start; a half-written file or transaction is discarded then.
        WriteStderr(std::string("kelt: second ") + name +
                    ": exiting now; uncommitted records will be read again\n");
        ::_exit(128 + sig);
      }
    }
  }).detach();
}

std::string HumanCount(double n) {
  char buf[32];
  if (n >= 1e9) {
    std::snprintf(buf, sizeof(buf), "%.2fG", n / 1e9);
  } else if (n >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.2fM", n / 1e6);
  } else if (n >= 1e4) {
    std::snprintf(buf, sizeof(buf), "%.1fk", n / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f", n);
  }
  return buf;
}

std::string HumanBytes(double n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (n >= 1024 && u < 4) {
    n /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", n, units[u]);
  return buf;
}

std::string HumanSeconds(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  long t = std::lround(s);
  char buf[32];
  if (t >= 3600) {
    std::snprintf(buf, sizeof(buf), "%ldh%02ldm", t / 3600, t % 3600 / 60);
  } else if (t >= 60) {
    std::snprintf(buf, sizeof(buf), "%ldm%02lds", t / 60, t % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1fs", s);
  }
  return buf;
}

std::string JsonString(std::string_view s) {
  std::string out;
  text::AppendJsonString(&out, s);
  return out;
}

}  // namespace kelt::cli
