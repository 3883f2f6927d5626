// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/offsets.h"

namespace kelt {

std::string ToString(const TopicPartition& tp) {
  return tp.topic + "[" + std::to_string(tp.partition) + "]";
}

}  // namespace kelt
