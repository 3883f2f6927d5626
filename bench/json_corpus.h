// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The synthetic JSON records every benchmark uses: ~200-byte documents with 8 payload
// fields of mixed types (integers, a float, a bool, short and long strings, an RFC 3339
// timestamp), the same sequence for the same index.
#pragma once

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

#include "kelt/schema.h"

namespace kelt::bench {

/// Generates record i of the corpus, in order (the generator keeps its random state).
class JsonCorpus {
 public:
  /// The JSON payload of the next record; its event_id is 1000000000 + index.
  std::string Next() {
    static const char* const kEvents[] = {"click", "view", "purchase", "signup",
                                          "logout"};
    static const char* const kCountries[] = {"NO", "SE", "DE", "US", "JP", "BR"};
    const uint64_t r = rng_();
    const auto s1 = static_cast<unsigned long long>(rng_());
    const auto s2 = static_cast<unsigned long long>(rng_());
    char buf[512];
    int n = std::snprintf(
        buf, sizeof(buf),
        "{\"event_id\":%lld,\"user_id\":%llu,\"amount\":%.2f,\"is_member\":%s,"
        "\"event\":\"%s\",\"country\":\"%s\",\"session\":\"%016llx%016llx\","
        "\"ts\":\"2024-05-%02dT%02d:%02d:%02d.%03dZ\"}",
        static_cast<long long>(1000000000 + index_),
        static_cast<unsigned long long>(r % 10000000),
        static_cast<double>(r % 100000) / 100.0, (r & 1) ? "true" : "false",
        kEvents[r % 5], kCountries[(r >> 8) % 6], s1, s2,
        static_cast<int>(1 + (r >> 16) % 28), static_cast<int>((r >> 24) % 24),
        static_cast<int>((r >> 32) % 60), static_cast<int>((r >> 40) % 60),
        static_cast<int>((r >> 48) % 1000));
    ++index_;
    return std::string(buf, static_cast<size_t>(n));
  }

 private:
  std::mt19937_64 rng_{42};
  int64_t index_ = 0;
};

/// The landing schema of the corpus: its 8 payload fields plus partition and offset.
inline kelt::Schema CorpusLandingSchema() {
  return kelt::Schema({{"event_id", kelt::TypeId::kInt64},
                       {"user_id", kelt::TypeId::kInt64},
                       {"amount", kelt::TypeId::kFloat64},
                       {"is_member", kelt::TypeId::kBool},
                       {"event", kelt::TypeId::kUtf8},
                       {"country", kelt::TypeId::kUtf8},
                       {"session", kelt::TypeId::kUtf8},
                       {"ts", kelt::TypeId::kTimestamp},
                       {"_kafka_partition", kelt::TypeId::kInt64},
                       {"_kafka_offset", kelt::TypeId::kInt64}});
}

}  // namespace kelt::bench
