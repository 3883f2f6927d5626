// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Arrow time units as counts per second (timestamps, durations, times of day).
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

}  // namespace kelt
