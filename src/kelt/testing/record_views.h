// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Records for Load step tests (tests only): RecordAt(value, offset) is a record of
// orders[1]@offset whose value is `value` (nullopt: a tombstone). Header-only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kelt/record.h"

namespace kelt::testing {

/// A view of a record of topic "orders", partition 1, at `offset`; it points into
/// `value`, which must outlive it.
inline RecordView RecordAt(const std::optional<std::string>& value, int64_t offset) {
  RecordView r;
  r.topic = "orders";
  r.partition = 1;
  r.offset = offset;
  if (value) r.value = *value;
  return r;
}

}  // namespace kelt::testing
