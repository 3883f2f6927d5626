// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The consumer's configuration: ConsumerOptions checked (RDP's messages), the group
// options reconciled with the librdkafka properties that say the same, and the
// properties the client is made with (manual commits always; the classic protocol with
// the eager range assignor, or KIP-848's; prefetch bounded by prefetch.h). Internal
// header.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "kelt/kafka.h"
#include "kelt/status.h"

namespace kelt::kafka {

/// Check the brokers, the group, the topics, and that no property turns on auto commit
/// or auto offset store.
Status ValidateConsumerOptions(const ConsumerOptions& options);

/// Reconcile group_protocol and instance_id with the librdkafka properties that say the
/// same (kcat's habit: --property group.protocol=consumer), which move into the options:
/// they must agree, and the keys the consumer protocol moved to the broker are refused
/// with it rather than ignored.
Status ResolveGroupOptions(ConsumerOptions* options);

/// The librdkafka properties of a consumer with these (resolved) options.
std::map<std::string, std::string> ConsumerProperties(const ConsumerOptions& options);

/// The session timeout the members were asked to keep (see Consumer::SessionTimeout).
std::chrono::milliseconds SessionTimeout(const ConsumerOptions& options);

/// "'a', 'b'": the topics, for messages.
std::string JoinTopics(const std::vector<std::string>& topics);

}  // namespace kelt::kafka
