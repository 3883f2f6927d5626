// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// RDP's stateless Kafka calls (RDP_COMPATIBILITY.md §4) over kelt's consumer and
// producer: the same config JSON keys and defaults, without RDP's defects (a drained
// topic returns at once instead of after 15 s; any librdkafka property passes through;
// several topics). The C ABI, Python and Java reach these through the same functions.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/kafka.h"

namespace kelt::rdp {

/// A stateless poll: one consumer, one window, then close.
struct PollCall {
  ConsumerOptions consumer;
  WindowOptions window;
  /// Commit the window before returning, so that successive calls with the same group
  /// advance through the topic (RDP's documented loop). `"commit": false` re-reads.
  bool commit = true;
};

/// Parse consumer config JSON: RDP's keys `brokers`, `group_id`, `topic`, `max_records`
/// (500), `auto_offset_reset` ("earliest"), `session_timeout_ms`; kelt's `topics` (list),
/// `properties` (librdkafka pass-through), `max_wait_ms` (15000), `max_bytes`, `commit`,
/// `group_protocol` ("classic" | "consumer"), `instance_id`.
/// Unknown keys are ignored. Errors start with "config JSON: ".
Result<PollCall> ParseConsumerConfigJson(std::string_view json);

/// Parse producer config JSON: `brokers`, `topic`, `message_timeout_ms` (5000),
/// `key_column`, `value_column` (null = whole row), `headers` ([["name","value"],…]);
/// kelt's `properties`. Errors start with "config JSON: ".
Result<ProducerOptions> ParseProducerConfigJson(std::string_view json);

/// poll_kafka_window: the window's records.
Result<std::vector<StreamRecord>> PollKafkaWindow(const PollCall& call);

/// One stateless poll whose window `use` sees before it is committed (when the call
/// says so) and the consumer closed. An error from `use` ends the call uncommitted.
Status PollKafkaWindowThen(const PollCall& call,
                           const std::function<Status(const Window&)>& use);

}  // namespace kelt::rdp
