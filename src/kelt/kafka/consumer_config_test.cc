// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The librdkafka properties kelt's consumer starts from: its prefetch defaults, and the
// user's properties over them.
#include "kelt/kafka/consumer_config.h"

#include "kelt/kafka.h"

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

// The prefetch is bounded by bytes; fetch.max.bytes stays librdkafka's to derive from it
// (and from message.max.bytes): a consumer with a message.max.bytes above the prefetch
// can still be made.
TEST(ConsumerProperties, ThePrefetchIsBoundedByBytesAndFetchMaxBytesFollowsIt) {
  ConsumerOptions o;
  o.brokers = "localhost:9092";
  o.group_id = "g";
  auto props = ConsumerProperties(o);
  EXPECT_GT(Number(props, "queued.max.messages.kbytes"), 0);
  EXPECT_GE(Number(props, "queued.min.messages"), 10'000'000);
  EXPECT_EQ(props.count("fetch.max.bytes"), 0u);
  EXPECT_EQ(props.at("enable.auto.commit"), "false");

  o.properties["message.max.bytes"] = "10485760";  // above the 8 MB prefetch
  o.topics = {"t"};
  auto consumer = Consumer::Make(o);
  EXPECT_TRUE(consumer.ok()) << consumer.status().ToString();
  if (consumer.ok()) (void)(*consumer)->Close();
  // What a fetch.max.bytes set to the prefetch would have done to that configuration.
  o.properties["fetch.max.bytes"] = "8388608";
  EXPECT_FALSE(Consumer::Make(o).ok());
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
