// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// CopySmall: memcpy for the short strings and byte runs that records mostly hold,
// without a libc call. Used on the hot paths that append values to Arrow buffers (the
// JSON Load step's column writers, the Avro decoder). Internal header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kelt::internal {

/// Copy `n` bytes from `src` to `dst` (which must not overlap). The overlapping word
/// copies never read or write outside [src, src+n) / [dst, dst+n).
[[gnu::always_inline]] inline void CopySmall(uint8_t* dst, const void* source, size_t n) {
  const auto* src = static_cast<const uint8_t*>(source);
  if (n > 16 && n <= 32) {
    uint64_t a[2], b[2];
    std::memcpy(a, src, 16);
    std::memcpy(b, src + n - 16, 16);
    std::memcpy(dst, a, 16);
    std::memcpy(dst + n - 16, b, 16);
  } else if (n >= 8 && n <= 16) {
    uint64_t a, b;
    std::memcpy(&a, src, 8);
    std::memcpy(&b, src + n - 8, 8);
    std::memcpy(dst, &a, 8);
    std::memcpy(dst + n - 8, &b, 8);
  } else if (n >= 4 && n < 8) {
    uint32_t a, b;
    std::memcpy(&a, src, 4);
    std::memcpy(&b, src + n - 4, 4);
    std::memcpy(dst, &a, 4);
    std::memcpy(dst + n - 4, &b, 4);
  } else if (n < 4) {
    for (size_t i = 0; i < n; ++i) dst[i] = src[i];
  } else {
    std::memcpy(dst, src, n);
  }
}

}  // namespace kelt::internal
