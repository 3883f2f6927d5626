// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/landing/layout.h"

#include <arrow/filesystem/filesystem.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

namespace kelt {

namespace {

constexpr std::string_view kInProgressSuffix = ".inprogress";

std::string Pad20(int64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%020lld", static_cast<long long>(v));
  return buf;
}

bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && *out >= 0;
}

}  // namespace

std::string EscapeHivePathValue(std::string_view value) {
  // Hive's escaping: every character that is special in a path or a URI, '%' itself,
  // and control characters become %XX. No escaped value contains '/', so a component
  // `key=value` can never climb out of its parent.
  static constexpr std::string_view kSpecial = "\"#%'*/:=?\\{[]^";
  std::string out;
  out.reserve(value.size());
  for (unsigned char c : value) {
    if (c < 0x20 || c == 0x7f ||
        kSpecial.find(static_cast<char>(c)) != std::string_view::npos) {
      char buf[4];
      std::snprintf(buf, sizeof(buf), "%%%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (out.empty()) return "__HIVE_DEFAULT_PARTITION__";
  return out;
}

std::string ParquetFileName(const TopicPartition& tp, int64_t first, int64_t last,
                            int part, int parts) {
  std::string name = tp.topic + "+" + std::to_string(tp.partition) + "+" + Pad20(first) +
                     "+" + Pad20(last);
  if (parts > 1) name += "+" + std::to_string(part) + "of" + std::to_string(parts);
  return name + ".parquet";
}

std::optional<ParquetFileInfo> ParseParquetFileName(std::string_view name) {
  constexpr std::string_view kExt = ".parquet";
  if (name.size() <= kExt.size() || name.substr(name.size() - kExt.size()) != kExt)
    return std::nullopt;
  name.remove_suffix(kExt.size());
  // Kafka topic names cannot contain '+' ([a-zA-Z0-9._-]): split on every '+'.
  std::vector<std::string_view> t;
  size_t start = 0;
  while (true) {
    size_t plus = name.find('+', start);
    t.push_back(name.substr(start, plus == std::string_view::npos ? plus : plus - start));
    if (plus == std::string_view::npos) break;
    start = plus + 1;
  }
  if (t.size() != 4 && t.size() != 5) return std::nullopt;
  ParquetFileInfo info;
  int64_t partition;
  if (t[0].empty() || !ParseInt(t[1], &partition) || partition > INT32_MAX ||
      !ParseInt(t[2], &info.first) || !ParseInt(t[3], &info.last)) {
    return std::nullopt;
  }
  info.tp = {std::string(t[0]), static_cast<int32_t>(partition)};
  if (t.size() == 5) {
    size_t of = t[4].find("of");
    int64_t part, parts;
    if (of == std::string_view::npos || !ParseInt(t[4].substr(0, of), &part) ||
        !ParseInt(t[4].substr(of + 2), &parts) || parts > 1'000'000) {
      return std::nullopt;
    }
    info.part = static_cast<int>(part);
    info.parts = static_cast<int>(parts);
  }
  if (info.first > info.last || info.part < 1 || info.part > info.parts)
    return std::nullopt;
  return info;
}

namespace landing {

std::string TopicDir(std::string_view topic, bool dead_letter,
                     std::string_view dead_letter_dir) {
  std::string t = EscapeHivePathValue(topic);
  if (t == "." || t == "..") t = "%2E" + t.substr(1);
  return dead_letter ? std::string(dead_letter_dir) + "/" + t : t;
}

std::string InProgressName(const TopicPartition& tp, std::string_view token) {
  return "." + tp.topic + "+" + std::to_string(tp.partition) + "+" + std::string(token) +
         std::string(kInProgressSuffix);
}

std::optional<TopicPartition> ParseInProgressName(std::string_view name) {
  if (name.size() <= kInProgressSuffix.size() + 1 || name[0] != '.' ||
      !name.ends_with(kInProgressSuffix)) {
    return std::nullopt;
  }
  // ".<topic>+<partition>+<token>.inprogress"
  std::string_view rest = name.substr(1, name.size() - 1 - kInProgressSuffix.size());
  const size_t a = rest.rfind('+');
  if (a == std::string_view::npos || a == 0) return std::nullopt;
  const size_t b = rest.rfind('+', a - 1);
  int64_t p;
  if (b == std::string_view::npos || b == 0 ||
      !ParseInt(rest.substr(b + 1, a - b - 1), &p) || p > INT32_MAX) {
    return std::nullopt;
  }
  return TopicPartition{std::string(rest.substr(0, b)), static_cast<int32_t>(p)};
}

Result<TopicListing> ListTopic(const internal::FileSystemRoot& root,
                               std::string_view topic, std::string_view dead_letter_dir,
                               const std::function<bool(const TopicPartition&)>& wanted) {
  auto keep = [&](const TopicPartition& tp) {
    return tp.topic == topic && (!wanted || wanted(tp));
  };
  // A rotation's parts are spread over the topic's directory (rows, maybe under Hive
  // directories) and the dead-letter directory: a range counts when every part is
  // there.
  struct Range {
    int parts = 0;
    std::set<int> seen;
    std::vector<LandedFile> files;
  };
  std::map<std::tuple<int32_t, int64_t, int64_t, int>, Range> ranges;
  TopicListing out;
  for (bool dead : {false, true}) {
    arrow::fs::FileSelector selector;
    selector.base_dir = root.Join(TopicDir(topic, dead, dead_letter_dir));
    selector.recursive = true;
    selector.allow_not_found = true;
    auto listed = root.fs->GetFileInfo(selector);
    if (!listed.ok()) {
      return Status::IOError(
          "listing '" + selector.base_dir + "': " + listed.status().message(), true);
    }
    for (const arrow::fs::FileInfo& entry : *listed) {
      if (!entry.IsFile()) continue;
      const std::string name = entry.base_name();
      if (auto tp = ParseInProgressName(name)) {
        if (keep(*tp)) out.leftovers.push_back(entry.path());
        continue;
      }
      if (name.empty() || name[0] == '.') continue;  // hidden: not landing files
      auto info = ParseParquetFileName(name);
      if (!info || !keep(info->tp)) continue;
      Range& r = ranges[{info->tp.partition, info->first, info->last, info->parts}];
      r.parts = info->parts;
      r.seen.insert(info->part);
      r.files.push_back({entry.path(), *info, dead});
    }
  }
  for (auto& [key, r] : ranges) {
    const bool complete = static_cast<int>(r.seen.size()) == r.parts;
    for (LandedFile& f : r.files) {
      if (complete) {
        out.complete.push_back(std::move(f));
      } else {
        out.leftovers.push_back(std::move(f.path));  // interrupted between renames
      }
    }
  }
  std::sort(out.complete.begin(), out.complete.end(),
            [](const LandedFile& a, const LandedFile& b) {
              return std::tie(a.info.tp.partition, a.info.first, a.info.part, a.path) <
                     std::tie(b.info.tp.partition, b.info.first, b.info.part, b.path);
            });
  return out;
}

}  // namespace landing
}  // namespace kelt
