// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The value converter: RDP's conversion rules (RDP_COMPATIBILITY.md §3) from a JSON
// value, a text or a record attribute to a landing column's declared type, appending the
// result to the column's writer (column_writer.h). A value that does not convert is a
// bad record with RDP's error text (TYPE_MISMATCH, or INVALID_UTF8 for a raw payload
// under strict_payload); a writer that cannot grow is fatal. Both are reported through
// the RecordError the caller passes (record_error.h). The DOM readers convert every
// value here; the On-Demand reader converts the values it can take without the DOM
// itself and comes here for nulls, text and the metadata columns.
//
// The calls made once per value (Null, Bytes, Element, MetadataColumns) are defined in
// this header so that they inline into the readers' loops. Internal header.
#pragma once

#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>

#include "kelt/load.h"
#include "kelt/load/column_plan.h"
#include "kelt/load/column_writer.h"
#include "kelt/load/record_error.h"
#include "kelt/record.h"

namespace kelt::load {

// The factor from `unit` to microseconds; negative for a divisor.
inline int64_t UnitFactorMicros(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSecond:
      return 1000000;
    case TimeUnit::kMilli:
      return 1000;
    case TimeUnit::kMicro:
      return 1;
    case TimeUnit::kNano:
      return -1000;  // divide
  }
  return 1000;
}

/// Return an epoch number in `unit` as microseconds; false when it does not fit.
inline bool EpochToMicros(int64_t v, TimeUnit unit, int64_t* out) {
  int64_t f = UnitFactorMicros(unit);
  if (f < 0) {
    // Floor division so that -1 ns is -1 µs, not 0.
    int64_t q = v / -f, r = v % -f;
    *out = (r < 0) ? q - 1 : q;
    return true;
  }
  return !__builtin_mul_overflow(v, f, out);
}

/// EpochToMicros() for a fractional epoch number (floored to the microsecond).
inline bool EpochToMicros(double v, TimeUnit unit, int64_t* out) {
  int64_t f = UnitFactorMicros(unit);
  double us = f < 0 ? v / static_cast<double>(-f) : v * static_cast<double>(f);
  if (!std::isfinite(us) || us >= 9.2e18 || us <= -9.2e18) return false;
  *out = static_cast<int64_t>(std::floor(us));
  return true;
}

class ValueConverter {
 public:
  /// `writers` holds one writer per column of `plan`, in schema order; the plan and
  /// the writers must outlive the converter and stay where they are.
  ValueConverter(const ColumnPlan& plan, std::span<ColumnWriter> writers,
                 bool strict_payload)
      : columns_(plan.columns()),
        metadata_columns_(plan.metadata_columns()),
        writers_(writers),
        strict_payload_(strict_payload) {}

  const PlannedColumn& column(size_t c) const { return columns_[c]; }
  ColumnWriter& writer(size_t c) { return writers_[c]; }

  /// Append a null to column c.
  bool Null(size_t c, RecordError& error) {
    return Check(writers_[c].AppendNull(), c, error);
  }

  /// Append bytes to column c, a Utf8 or Binary column.
  [[gnu::always_inline]] bool Bytes(size_t c, std::string_view v, RecordError& error) {
    return Check(writers_[c].AppendBytes(v), c, error);
  }

  /// Convert a JSON value (RDP's `serde_json::Value` rules) into column c.
  [[gnu::always_inline]] bool Element(simdjson::dom::element e, size_t c,
                                      RecordError& error);

  /// Convert text (RDP's string rules) into column c.
  bool Text(std::string_view s, size_t c, RecordError& error);

  /// Write the record attribute metadata column c reads.
  bool Metadata(const RecordView& r, size_t c, RecordError& error);

  /// Write every metadata column of a record. Partition and offset into Int64 columns,
  /// what nearly every landing schema has, skip Metadata's general dispatch.
  bool MetadataColumns(const RecordView& r, RecordError& error) {
    for (int ci : metadata_columns_) {
      const auto c = static_cast<size_t>(ci);
      const PlannedColumn& col = columns_[c];
      if (col.type == TypeId::kInt64 && col.source == ColumnSource::kPartition) {
        writers_[c].AppendInt64(r.partition);
      } else if (col.type == TypeId::kInt64 && col.source == ColumnSource::kOffset) {
        writers_[c].AppendInt64(r.offset);
      } else if (!Metadata(r, c, error)) {
        return false;
      }
    }
    return true;
  }

 private:
  // A write that failed for lack of memory or room is not a bad record: it ends the
  // window, whatever the policy.
  [[gnu::always_inline]] bool Check(const Status& st, size_t c, RecordError& error) {
    if (st.ok()) [[likely]]
      return true;
    return WriteFailed(st, c, error);
  }
  [[gnu::noinline]] bool WriteFailed(const Status& st, size_t c, RecordError& error);

  bool EpochElement(simdjson::dom::element e, size_t c, RecordError& error);
  bool DaysElement(int64_t days, size_t c, RecordError& error);
  // Any other combination converts the compact JSON text (RDP: `other.to_string()`).
  bool JsonText(simdjson::dom::element e, size_t c, RecordError& error);
  // Metadata attributes: integers in the declared type, text as valid UTF-8 (Utf8) or
  // raw bytes (Binary).
  bool Integer(int64_t v, size_t c, RecordError& error);
  bool Attribute(std::string_view v, size_t c, RecordError& error);

  std::span<const PlannedColumn> columns_;
  std::span<const int> metadata_columns_;
  std::span<ColumnWriter> writers_;
  bool strict_payload_;
  std::string scratch_;  // text being converted (compact JSON, lossy UTF-8, digits)
};

inline bool ValueConverter::Element(simdjson::dom::element e, size_t c,
                                    RecordError& error) {
  using simdjson::dom::element_type;
  ColumnWriter& w = writers_[c];
  const element_type t = e.type();
  if (t == element_type::NULL_VALUE) return Null(c, error);
  switch (columns_[c].type) {
    case TypeId::kInt64:
      if (t == element_type::INT64) {
        w.AppendInt64(e.get_int64().value_unsafe());
        return true;
      }
      if (t == element_type::UINT64 || t == element_type::DOUBLE) {
        return error.BadRecord(kErrorTypeMismatch,
                               "schema mismatch: expected i64 in kafka value JSON",
                               static_cast<int>(c));
      }
      break;
    case TypeId::kFloat64:
      if (t == element_type::DOUBLE || t == element_type::INT64 ||
          t == element_type::UINT64) {
        w.AppendDouble(e.get_double().value_unsafe());
        return true;
      }
      break;
    case TypeId::kBool:
      if (t == element_type::BOOL) {
        w.AppendBool(e.get_bool().value_unsafe());
        return true;
      }
      break;
    case TypeId::kTimestamp:
      if (t == element_type::INT64 || t == element_type::UINT64 ||
          t == element_type::DOUBLE) {
        return EpochElement(e, c, error);
      }
      break;
    case TypeId::kDate:
      if (t == element_type::INT64)
        return DaysElement(e.get_int64().value_unsafe(), c, error);
      break;
    case TypeId::kUtf8:
    case TypeId::kBinary:
      if (t == element_type::STRING)
        return Bytes(c, e.get_string().value_unsafe(), error);
      break;
  }
  if (t == element_type::STRING) return Text(e.get_string().value_unsafe(), c, error);
  return JsonText(e, c, error);
}

}  // namespace kelt::load
