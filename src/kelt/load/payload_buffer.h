// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The padding simdjson needs after a payload. simdjson may read SIMDJSON_PADDING bytes
// past its input (it never interprets them). When those bytes lie in the same memory
// page as the payload's last byte they are mapped and readable, so the payload is
// parsed in place (simdjson's own advice); otherwise it is copied into one reused
// buffer. Sanitizer builds and KELT_ALWAYS_PAD builds (valgrind) always copy. One per
// Loader, shared by its On-Demand and DOM readers. Internal header.
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

namespace kelt::load {

class PayloadBuffer {
 public:
  /// Return where to parse `payload` from: its own bytes, or a padded copy valid until
  /// the next call.
  const char* Padded(std::string_view payload) {
    if (PaddingReadable(payload)) return payload.data();
    const size_t need = payload.size() + simdjson::SIMDJSON_PADDING;
    if (capacity_ < need) {
      capacity_ = std::max(need, capacity_ * 2);
      buffer_ = std::make_unique<char[]>(capacity_);  // zeroed once
    }
    // The padding's content does not matter, so stale bytes from a longer payload are
    // fine.
    std::memcpy(buffer_.get(), payload.data(), payload.size());
    return buffer_.get();
  }

 private:
  static bool PaddingReadable(std::string_view payload) {
#if defined(__SANITIZE_ADDRESS__) || defined(KELT_ALWAYS_PAD)
    return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
    return false;
#endif
#endif
    constexpr uintptr_t kPage = 4096;
    const auto end = reinterpret_cast<uintptr_t>(payload.data()) + payload.size();
    return !payload.empty() && (end % kPage) + simdjson::SIMDJSON_PADDING <= kPage;
  }

  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0;
};

}  // namespace kelt::load
