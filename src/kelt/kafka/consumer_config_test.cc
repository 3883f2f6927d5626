// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The librdkafka properties kelt's consumer starts from: its prefetch defaults, and the
// user's properties over them.
#include "kelt/kafka/consumer_config.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace kelt::kafka {
namespace {

int64_t Number(const std::map<std::string, std::string>& props, const std::string& key) {
  auto it = props.find(key);
  EXPECT_NE(it, props.end()) << key;
  return it == props.end() ? -1 : std::stoll(it->second);
}

TEST(ConsumerProperties, OneFetchResponseIsBoundedByThePrefetch) {
  ConsumerOptions o;
  o.brokers = "localhost:9092";
  o.group_id = "g";
  auto props = ConsumerProperties(o);
  const int64_t prefetch = Number(props, "queued.max.messages.kbytes") * 1024;
  EXPECT_GT(prefetch, 0);
  // librdkafka's 50 MB default let one response over many partitions overshoot the
  // prefetch several times.
  EXPECT_LE(Number(props, "fetch.max.bytes"), prefetch);
  EXPECT_GE(Number(props, "fetch.max.bytes"), 1000000) << "at least message.max.bytes";
  EXPECT_EQ(props.at("enable.auto.commit"), "false");
}

TEST(ConsumerProperties, TheUsersPropertiesOverrideTheDefaults) {
  ConsumerOptions o;
  o.brokers = "localhost:9092";
  o.group_id = "g";
  o.properties["fetch.max.bytes"] = "52428800";
  o.properties["queued.max.messages.kbytes"] = "65536";
  o.properties["enable.auto.commit"] = "true";  // kelt commits what has landed only
  auto props = ConsumerProperties(o);
  EXPECT_EQ(props.at("fetch.max.bytes"), "52428800");
  EXPECT_EQ(props.at("queued.max.messages.kbytes"), "65536");
  EXPECT_EQ(props.at("enable.auto.commit"), "false");
}

}  // namespace
}  // namespace kelt::kafka
