// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Who holds a subscription's partitions, as the group coordinator says
// (Consumer::DescribeGroupHolding): DescribeConsumerGroups on the consumer's own handle
// for the other members' assignments, the metadata for how many partitions the
// subscribed topics have. Internal header.
#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "kelt/kafka.h"
#include "kelt/offsets.h"
#include "kelt/status.h"

namespace kelt::kafka {

/// Ask the coordinator of `group_id` who holds which partitions of `subscription` (topic
/// names, or regular expressions starting with '^') and of any member's assignment;
/// `held` are this member's (`rk`'s) partitions.
Result<Consumer::GroupHolding> DescribeGroupHolding(
    rd_kafka_t* rk, const std::string& group_id,
    const std::vector<std::string>& subscription, std::set<TopicPartition> held,
    std::chrono::milliseconds timeout);

}  // namespace kelt::kafka
