// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Arrow time units as counts per second (timestamps, durations, times of day), and
// conversions to microseconds.
#pragma once

#include <arrow/type_fwd.h>

#include <cstdint>

namespace kelt {

/// How many of `unit` make one second (1, 1'000, 1'000'000, 1'000'000'000).
inline int64_t TimeUnitsPerSecond(arrow::TimeUnit::type unit) {
  switch (unit) {
    case arrow::TimeUnit::SECOND:
      return 1;
    case arrow::TimeUnit::MILLI:
      return 1'000;
    case arrow::TimeUnit::MICRO:
      return 1'000'000;
    case arrow::TimeUnit::NANO:
      return 1'000'000'000;
  }
  return 1;
}

/// `value` in `unit` as microseconds; nanoseconds round down to the instant's
/// microsecond (floor, also before 1970).
inline int64_t ToMicros(arrow::TimeUnit::type unit, int64_t value) {
  switch (unit) {
    case arrow::TimeUnit::SECOND:
      return value * 1'000'000;
    case arrow::TimeUnit::MILLI:
      return value * 1'000;
    case arrow::TimeUnit::MICRO:
      return value;
    case arrow::TimeUnit::NANO:
      return value >= 0 ? value / 1'000 : -((-value + 999) / 1'000);
  }
  return value;
}

}  // namespace kelt
