// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// `kelt iceberg expire` and `kelt iceberg compact`: maintenance of an Iceberg table a
// run lands into (include/kelt/sink.h, ExpireIcebergSnapshots and CompactIcebergTable).
// Both commit by the catalog's compare-and-swap, so they may run while `kelt run` lands.
// The result is one JSON line on stdout.
#include <CLI/CLI.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "admin_commands.h"
#include "commands.h"
#include "kelt/log.h"
#include "kelt/sink.h"
#include "terminal.h"

namespace kelt::cli {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "90s", "15m", "12h", "7d", "500ms" → milliseconds; nullopt if not a duration.
std::optional<int64_t> ParseDurationMs(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == 0 || i > 15) return std::nullopt;
  const int64_t n = std::stoll(s.substr(0, i));
  const std::string unit = s.substr(i);
  if (unit == "ms") return n;
  if (unit == "s") return n * 1000;
  if (unit == "m") return n * 60'000;
  if (unit == "h") return n * 3'600'000;
  if (unit == "d") return n * 86'400'000;
  return std::nullopt;
}

// "2026-01-31", "2026-01-31T12:00:00Z" (UTC; a trailing "Z" optional) → ms since the
// epoch; nullopt if not such a timestamp.
std::optional<int64_t> ParseTimestampMs(const std::string& s) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &consumed) != 3 ||
      consumed != 10) {
    return std::nullopt;
  }
  std::string rest = s.substr(10);
  if (!rest.empty()) {
    int used = 0;
    if ((rest[0] != 'T' && rest[0] != ' ') ||
        std::sscanf(rest.c_str() + 1, "%2d:%2d:%2d%n", &tm.tm_hour, &tm.tm_min,
                    &tm.tm_sec, &used) != 3 ||
        used != 8) {
      return std::nullopt;
    }
    rest = rest.substr(9);
    if (rest != "" && rest != "Z" && rest != "+00:00") return std::nullopt;
  }
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
      tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm)) * 1000;
}

class Commands final : public AdminCommands {
 public:
  explicit Commands(CLI::App* app) {
    iceberg_ = app->add_subcommand(
        "iceberg", "Maintain an Iceberg table (safe while `kelt run` lands into it)");
    iceberg_->require_subcommand(1);
    expire_ = iceberg_->add_subcommand(
        "expire",
        "Expire old snapshots (never the current one, nor the offsets a run resumes "
        "from) and delete the files only they referenced");
    AddTable(expire_);
    expire_
        ->add_option("--older-than", older_than_,
                     "expire snapshots committed before this: a duration back from now "
                     "(500ms, 90s, 15m, 12h, 7d) or a UTC time (2026-01-31T12:00:00Z)")
        ->required();
    expire_
        ->add_option("--retain-last", retain_last_,
                     "always keep the newest N snapshots (default 1)")
        ->check(CLI::Range(1, 1'000'000));
    compact_ = iceberg_->add_subcommand(
        "compact",
        "Rewrite each partition's small data files into larger ones (a `replace` "
        "snapshot carrying the run's offsets); old files stay until `expire`");
    AddTable(compact_);
    compact_
        ->add_option("--target-file-size", target_file_size_,
                     "bytes: files smaller than this are rewritten, into files of about "
                     "this size (default 134217728, 128 MiB)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
    compact_
        ->add_option("--min-files", min_files_,
                     "compact a partition when it has at least N small files (default 2)")
        ->check(CLI::Range(2, 1'000'000));
  }

  bool parsed() const override { return iceberg_->parsed(); }

  int Run() override {
    const size_t dot = table_name_.rfind('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == table_name_.size()) {
      std::cerr << "kelt: iceberg: --table must be NAMESPACE.TABLE, not '" << table_name_
                << "'\n";
      return 2;
    }
    table_.table_namespace = table_name_.substr(0, dot);
    table_.table = table_name_.substr(dot + 1);
    std::vector<std::string> secrets;
    if (auto pw = PostgresConnectionPassword(table_.catalog); !pw.empty()) {
      secrets.push_back(std::move(pw));
    }
    InstallLogHook(LogFormat::kText, LogLevel::kWarning, std::move(secrets));
    const std::string shown = "iceberg " + table_name_ + " (catalog " +
                              IcebergCatalogShown(table_.catalog) + ")";
    if (expire_->parsed()) return Expire(shown);
    if (compact_->parsed()) return Compact(shown);
    return 2;
  }

 private:
  void AddTable(CLI::App* cmd) {
    cmd->add_option("--catalog", table_.catalog,
                    "the SQL catalog: a SQLite file or a postgresql:// URI (as the "
                    "sink's `catalog`); env KELT_ICEBERG_CATALOG")
        ->envname("KELT_ICEBERG_CATALOG")
        ->required();
    cmd->add_option("--table", table_name_, "NAMESPACE.TABLE")->required();
    cmd->add_option("--catalog-name", table_.catalog_name,
                    "the catalog's name (default kelt)");
    cmd->add_option("--s3-endpoint", table_.s3_endpoint,
                    "S3 endpoint override for an s3:// table (credentials from the AWS "
                    "environment)");
    cmd->add_option("--s3-region", table_.s3_region, "S3 region for an s3:// table");
  }

  int Expire(const std::string& shown) {
    IcebergExpireOptions o;
    o.retain_last = retain_last_;
    if (auto d = ParseDurationMs(older_than_)) {
      o.older_than_ms = NowMs() - *d;
    } else if (auto t = ParseTimestampMs(older_than_)) {
      o.older_than_ms = *t;
    } else {
      std::cerr << "kelt: iceberg expire: --older-than '" << older_than_
                << "' is neither a duration (90s, 15m, 12h, 7d) nor a UTC time "
                   "(2026-01-31T12:00:00Z)\n";
      return 2;
    }
    auto r = ExpireIcebergSnapshots(table_, o);
    if (!r.ok()) return Fail(r.status(), "iceberg expire");
    std::cout << "{\"table\":" << JsonString(table_name_)
              << ",\"expired_snapshots\":" << r->expired.size()
              << ",\"kept_snapshots\":" << r->snapshots_kept
              << ",\"deleted_data_files\":" << r->data_files_deleted
              << ",\"deleted_manifests\":" << r->manifests_deleted
              << ",\"deleted_manifest_lists\":" << r->manifest_lists_deleted
              << ",\"kept_outside_table\":" << r->files_outside_table.size() << "}\n";
    for (const auto& f : r->files_outside_table) {
      std::cerr << "kelt: " << shown
                << ": not deleted (outside the table's location): " << f << "\n";
    }
    std::cerr << "kelt: " << shown << ": expired " << r->expired.size()
              << " snapshot(s), deleted " << r->data_files_deleted << " data file(s)\n";
    return 0;
  }

  int Compact(const std::string& shown) {
    IcebergCompactOptions o;
    o.target_file_size = target_file_size_;
    o.min_files = min_files_;
    auto r = CompactIcebergTable(table_, o);
    if (!r.ok()) return Fail(r.status(), "iceberg compact");
    std::cout << "{\"table\":" << JsonString(table_name_)
              << ",\"committed\":" << (r->committed ? "true" : "false")
              << ",\"snapshot_id\":" << r->snapshot_id
              << ",\"partitions\":" << r->partitions
              << ",\"files_rewritten\":" << r->files_rewritten
              << ",\"files_written\":" << r->files_written
              << ",\"records\":" << r->records << ",\"attempts\":" << r->attempts
              << "}\n";
    if (r->committed) {
      std::cerr << "kelt: " << shown << ": rewrote " << r->files_rewritten
                << " file(s) into " << r->files_written << "\n";
    } else {
      std::cerr << "kelt: " << shown << ": nothing to compact\n";
    }
    return 0;
  }

  CLI::App* iceberg_ = nullptr;
  CLI::App* expire_ = nullptr;
  CLI::App* compact_ = nullptr;
  IcebergTableRef table_;
  std::string table_name_;
  std::string older_than_;
  int retain_last_ = 1;
  int64_t target_file_size_ = int64_t{128} << 20;
  int min_files_ = 2;
};

}  // namespace

std::unique_ptr<AdminCommands> AddIcebergCommands(CLI::App* app) {
  return std::make_unique<Commands>(app);
}

}  // namespace kelt::cli
