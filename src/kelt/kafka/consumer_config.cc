// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/kafka/consumer_config.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <exception>

#include "kelt/kafka/prefetch.h"

namespace kelt {

Result<GroupProtocol> ParseGroupProtocol(std::string_view text, std::string_view what) {
  if (text == "classic") return GroupProtocol::kClassic;
  if (text == "consumer") return GroupProtocol::kConsumer;
  return Status::Invalid(std::string(what) + ": expected classic or consumer, got '" +
                         std::string(text) + "'");
}

std::string_view GroupProtocolName(GroupProtocol protocol) {
  return protocol == GroupProtocol::kConsumer ? "consumer" : "classic";
}

std::string_view AutoOffsetResetName(AutoOffsetReset reset) {
  switch (reset) {
    case AutoOffsetReset::kEarliest:
      return "earliest";
    case AutoOffsetReset::kLatest:
      return "latest";
    case AutoOffsetReset::kError:
      return "error";
  }
  return "earliest";
}

Result<AutoOffsetReset> ParseAutoOffsetReset(std::string_view text,
                                             std::string_view what) {
  if (text == "earliest" || text == "smallest" || text == "beginning") {
    return AutoOffsetReset::kEarliest;
  }
  if (text == "latest" || text == "largest" || text == "end")
    return AutoOffsetReset::kLatest;
  if (text == "error") return AutoOffsetReset::kError;
  return Status::Invalid(std::string(what) +
                         ": expected earliest, latest or error, got '" +
                         std::string(text) + "'");
}

namespace kafka {

namespace {

// KIP-848's group.protocol=consumer came with librdkafka 2.4.
bool HasConsumerGroupProtocol() { return rd_kafka_version() >= 0x02040000; }
// librdkafka's default session.timeout.ms, and Kafka's group.consumer.session.timeout.ms.
constexpr int kDefaultSessionTimeoutMs = 45000;

bool IsBlank(const std::string& s) {
  return s.find_first_not_of(" \t\r\n") == std::string::npos;
}

// With the consumer protocol: a librdkafka that has it, and none of the settings the
// protocol moved to the broker.
Status CheckConsumerProtocol(const ConsumerOptions& options) {
  if (!HasConsumerGroupProtocol()) {
    return Status::Invalid(std::string("group_protocol consumer needs librdkafka 2.4 or "
                                       "later; this kelt runs librdkafka ") +
                           rd_kafka_version_str());
  }
  if (options.session_timeout_ms) {
    return Status::Invalid(
        "session_timeout_ms applies to group_protocol classic only: with consumer the "
        "broker's group.consumer.session.timeout.ms decides");
  }
  for (const char* moved : {"session.timeout.ms", "heartbeat.interval.ms",
                            "partition.assignment.strategy", "group.protocol.type"}) {
    if (options.properties.count(moved)) {
      return Status::Invalid(std::string("kafka property '") + moved +
                             "' does not apply with group_protocol consumer (the broker "
                             "decides; group.remote.assignor chooses its assignor)");
    }
  }
  return Status::OK();
}

}  // namespace

Status ValidateConsumerOptions(const ConsumerOptions& options) {
  if (IsBlank(options.brokers)) {
    return Status::Invalid("kafka brokers must not be empty");
  }
  if (IsBlank(options.group_id)) {
    return Status::Invalid("kafka group_id must not be empty");
  }
  if (options.topics.empty() ||
      std::any_of(options.topics.begin(), options.topics.end(), IsBlank)) {
    return Status::Invalid("kafka topic must not be empty");
  }
  for (const char* forbidden : {"enable.auto.commit", "enable.auto.offset.store"}) {
    auto it = options.properties.find(forbidden);
    if (it != options.properties.end() && it->second != "false") {
      return Status::Invalid(std::string("kafka property '") + forbidden +
                             "' must stay false: kelt commits offsets only after the "
                             "window is durable");
    }
  }
  return Status::OK();
}

Status ResolveGroupOptions(ConsumerOptions* options) {
  auto& props = options->properties;
  if (auto it = props.find("group.protocol"); it != props.end()) {
    KELT_ASSIGN_OR_RAISE(
        GroupProtocol p,
        ParseGroupProtocol(it->second, "kafka property 'group.protocol'"));
    if (p != options->group_protocol &&
        options->group_protocol != GroupProtocol::kClassic) {
      return Status::Invalid("kafka property 'group.protocol' is '" + it->second +
                             "' but group_protocol is '" +
                             std::string(GroupProtocolName(options->group_protocol)) +
                             "'");
    }
    options->group_protocol = p;
    props.erase(it);
  }
  if (auto it = props.find("group.instance.id"); it != props.end()) {
    if (!options->instance_id.empty() && options->instance_id != it->second) {
      return Status::Invalid(
          "kafka property 'group.instance.id' and instance_id differ: set one of them");
    }
    options->instance_id = it->second;
    props.erase(it);
  }
  if (options->group_protocol != GroupProtocol::kConsumer) return Status::OK();
  return CheckConsumerProtocol(*options);
}

std::map<std::string, std::string> ConsumerProperties(const ConsumerOptions& options) {
  std::map<std::string, std::string> props = {
      {"bootstrap.servers", options.brokers},
      {"group.id", options.group_id},
      {"auto.offset.reset", std::string(AutoOffsetResetName(options.auto_offset_reset))},
      {"enable.partition.eof", "true"},
      // Lower than the library default so a window's deadline is not spent waiting
      // for a fetch that has nothing to return.
      {"fetch.wait.max.ms", "100"},
  };
  SetPrefetchDefaults(&props);
  if (options.group_protocol == GroupProtocol::kConsumer) {
    props["group.protocol"] = "consumer";
  } else {
    props["partition.assignment.strategy"] = "range";
    if (options.session_timeout_ms) {
      props["session.timeout.ms"] = std::to_string(*options.session_timeout_ms);
    }
  }
  if (!options.instance_id.empty()) props["group.instance.id"] = options.instance_id;
  for (const auto& [k, v] : options.properties) props[k] = v;
  props["enable.auto.commit"] = "false";
  props["enable.auto.offset.store"] = "false";
  return props;
}

std::chrono::milliseconds SessionTimeout(const ConsumerOptions& options) {
  if (options.group_protocol == GroupProtocol::kClassic) {
    if (options.session_timeout_ms) {
      return std::chrono::milliseconds(*options.session_timeout_ms);
    }
    auto it = options.properties.find("session.timeout.ms");
    if (it != options.properties.end()) {
      try {
        return std::chrono::milliseconds(std::stoll(it->second));
      } catch (const std::exception&) {
      }
    }
  }
  return std::chrono::milliseconds(kDefaultSessionTimeoutMs);
}

std::string JoinTopics(const std::vector<std::string>& topics) {
  std::string out;
  for (const std::string& t : topics) {
    if (!out.empty()) out += ", ";
    out += "'" + t + "'";
  }
  return out;
}

}  // namespace kafka
}  // namespace kelt
