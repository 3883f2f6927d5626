// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// `kelt tail`: print a topic's records, kcat-like. A throw-away consumer group that
// never commits; the start point comes from the consumer's resume hook (beginning or
// an offset) or auto.offset.reset=latest (end).
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <ctime>
#include <iostream>

#include "commands.h"
#include "kelt/kafka.h"
#include "kelt/record.h"
#include "terminal.h"

namespace kelt::cli {
namespace {

std::string IsoTime(int64_t ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

// Print a payload as it is when it is printable text, else escaped.
std::string Printable(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
      std::string q = JsonString(s);
      return q;
    }
  }
  return std::string(s);
}

void Print(const RecordView& r, const std::string& format) {
  if (format == "value") {
    std::cout << (r.value ? Printable(*r.value) : std::string("null")) << '\n';
  } else if (format == "json") {
    std::cout << "{\"topic\":" << JsonString(r.topic) << ",\"partition\":" << r.partition
              << ",\"offset\":" << r.offset << ",\"timestamp_ms\":"
              << (r.timestamp_ms ? std::to_string(*r.timestamp_ms) : std::string("null"))
              << ",\"key\":" << (r.key ? JsonString(*r.key) : std::string("null"))
              << ",\"value\":" << (r.value ? JsonString(*r.value) : std::string("null"))
              << ",\"headers\":{";
    for (size_t i = 0; i < r.headers.size(); ++i) {
      const auto& h = r.headers[i];
      std::cout << (i ? "," : "") << JsonString(h.name) << ":"
                << (h.value ? JsonString(*h.value) : std::string("null"));
    }
    std::cout << "}}\n";
  } else {
    std::cout << r.topic << '[' << r.partition << "]@" << r.offset;
    if (r.timestamp_ms) std::cout << ' ' << IsoTime(*r.timestamp_ms);
    std::cout << " key=" << (r.key ? Printable(*r.key) : std::string("null"));
    for (const auto& h : r.headers) {
      std::cout << " " << h.name << "=" << (h.value ? Printable(*h.value) : "null");
    }
    std::cout << "  " << (r.value ? Printable(*r.value) : std::string("null")) << '\n';
  }
}

}  // namespace

int RunTail(const TailArgs& a, std::atomic<bool>* stop) {
  ConsumerOptions o;
  o.brokers = a.brokers;
  o.topics = a.topics;
  o.group_id =
      "kelt-tail-" + std::to_string(::getpid()) + "-" +
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  std::string bad;
  if (!ParseProperties(a.properties, &o.properties, &bad)) {
    std::cerr << "kelt: tail: --property '" << bad << "': expected name=value\n";
    return 2;
  }
  std::optional<int64_t> offset;
  if (a.from == "beginning") {
    o.auto_offset_reset = AutoOffsetReset::kEarliest;
    offset = 0;  // below the log start: librdkafka resets to the earliest
  } else if (a.from == "end") {
    o.auto_offset_reset = AutoOffsetReset::kLatest;
  } else {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(a.from.data(), a.from.data() + a.from.size(), v);
    if (ec != std::errc() || p != a.from.data() + a.from.size() || v < 0) {
      std::cerr << "kelt: tail: --from must be beginning, end or an offset, got '"
                << a.from << "'\n";
      return 2;
    }
    o.auto_offset_reset = AutoOffsetReset::kEarliest;
    offset = v;
  }
  if (offset) {
    int64_t start = *offset;
    o.resume = [start](const std::vector<TopicPartition>& tps) -> Result<OffsetMap> {
      OffsetMap m;
      for (const auto& tp : tps) m[tp] = start;
      return m;
    };
  }
  auto consumer = Consumer::Make(o);
  if (!consumer.ok()) return Fail(consumer.status(), "tail");
  if (a.exit_at_end) {
    if (auto st = (*consumer)->StartCatchUp(); !st.ok()) return Fail(st, "tail");
  }
  WindowOptions w;
  w.max_records = 1000;
  w.max_wait = std::chrono::milliseconds(300);
  w.stop_at_end = true;
  int64_t printed = 0;
  int code = 0;
  while (!stop->load()) {
    auto window = (*consumer)->Poll(w);
    if (!window.ok()) {
      code = Fail(window.status(), "tail");
      break;
    }
    for (size_t i = 0; i < window->size(); ++i) {
      RecordView r = window->record(i);
      if (a.partition && r.partition != *a.partition) continue;
      Print(r, a.format);
      if (a.count > 0 && ++printed >= a.count) break;
    }
    std::cout.flush();
    if (a.count > 0 && printed >= a.count) break;
    if (a.exit_at_end && (*consumer)->caught_up()) break;
  }
  if (auto st = (*consumer)->Close(); !st.ok() && code == 0) code = Fail(st, "tail");
  return code;
}

}  // namespace kelt::cli
