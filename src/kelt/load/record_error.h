// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Why the record being loaded did not land: the one error channel of the Load step's
// per-record code (readers, the value converter, the loader). Code that cannot write a
// record returns false and leaves the reason here, one of:
//  - none: a fast path declines the record (On-Demand meets a value that needs its
//    compact JSON text, say); the loader hands the record to the next path;
//  - a bad record: a stable code (load.h), RDP's error text and the landing column at
//    fault (-1 when the record as a whole is bad); counted and failed, skipped or
//    dead-lettered by policy. A fast path may report one too: the loader then redoes the
//    record on the DOM path, which decides which column is at fault as RDP does;
//  - fatal: a column could not grow (no memory, Arrow's 2 GiB offset limit); it ends the
//    window with that status whatever the policy.
// The loader clears it before every record. Internal header.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "kelt/status.h"

namespace kelt::load {

class RecordError {
 public:
  enum class Kind : uint8_t { kNone, kBadRecord, kFatal };

  /// Describe a bad record. Returns false, so that a writer can end with
  /// `return error.BadRecord(…)`.
  [[gnu::cold]] bool BadRecord(std::string_view code, std::string message, int column) {
    kind_ = Kind::kBadRecord;
    code_ = code;
    message_ = std::move(message);
    column_ = column;
    return false;
  }

  /// Describe a failure that ends the window. Returns false, as BadRecord() does.
  [[gnu::cold]] bool Fatal(Status status) {
    kind_ = Kind::kFatal;
    fatal_ = std::move(status);
    return false;
  }

  /// Forget the reason (a declined or redone record, or the next record).
  void Clear() {
    kind_ = Kind::kNone;
    fatal_ = Status::OK();
  }

  Kind kind() const { return kind_; }
  bool fatal() const { return kind_ == Kind::kFatal; }
  /// The bad record's code, message and column (meaningful for kBadRecord).
  std::string_view code() const { return code_; }
  const std::string& message() const { return message_; }
  int column() const { return column_; }
  /// The fatal status (meaningful for kFatal).
  const Status& status() const { return fatal_; }

 private:
  Kind kind_ = Kind::kNone;
  std::string_view code_;  // one of the kError* constants of load.h
  std::string message_;
  int column_ = -1;
  Status fatal_;
};

}  // namespace kelt::load
