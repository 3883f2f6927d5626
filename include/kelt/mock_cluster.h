// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// librdkafka's in-process mock cluster, for tests and examples: Kafka brokers that live
// inside this process, reachable at bootstraps() by any client (kelt's consumer,
// producer and admin client, or another Kafka client in the same process). It is not a
// broker: it keeps everything in memory, speaks a subset of the protocol (no
// CreateTopics, DeleteTopics, DescribeCluster or ACL requests: topics are made with
// CreateTopic), and exists to inject failures (brokers down, request errors, moved
// leaders and coordinators). The C ABI (kelt_mock_cluster_*) and Python
// (kelt._kelt.MockCluster) expose the same cluster. librdkafka stays behind these types
// (STYLE rule 4).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kelt/status.h"

namespace kelt {

/// Kafka protocol API keys whose requests MockCluster::PushRequestErrors can fail (any
/// other key may be cast in).
enum class KafkaApi : int16_t {
  kProduce = 0,
  kFetch = 1,
  kListOffsets = 2,
  kMetadata = 3,
  kOffsetCommit = 8,
  kOffsetFetch = 9,
  kFindCoordinator = 10,
  kJoinGroup = 11,
  kHeartbeat = 12,
  kLeaveGroup = 13,
  kSyncGroup = 14,
  kConsumerGroupHeartbeat = 68,  ///< KIP-848
};

/// Kafka protocol error codes a mock broker can answer with (any other code may be cast
/// in; the numbers are the protocol's).
enum class KafkaErrorCode : int16_t {
  kNone = 0,
  kUnknownTopicOrPartition = 3,
  kLeaderNotAvailable = 5,
  kNotLeaderForPartition = 6,
  kRequestTimedOut = 7,
  kOffsetMetadataTooLarge = 12,
  kNetworkException = 13,
  kCoordinatorLoadInProgress = 14,
  kCoordinatorNotAvailable = 15,
  kNotCoordinator = 16,
  kIllegalGeneration = 22,
  kUnknownMemberId = 25,
  kRebalanceInProgress = 27,
  kTopicAuthorizationFailed = 29,
  kGroupAuthorizationFailed = 30,
};

/// A mock Kafka cluster of `brokers` brokers (ids 1..brokers), torn down with the object.
/// The operations may be called from any thread.
class MockCluster {
 public:
  /// Start a cluster of `brokers` brokers (at least 1).
  static Result<std::unique_ptr<MockCluster>> Make(int brokers = 1);
  ~MockCluster();
  MockCluster(const MockCluster&) = delete;
  MockCluster& operator=(const MockCluster&) = delete;

  /// The brokers' addresses ("127.0.0.1:port,…"), for a client's bootstrap.servers.
  const std::string& bootstraps() const { return bootstraps_; }

  /// Create a topic (the mock's own call: clients' CreateTopics is not served).
  Status CreateTopic(const std::string& name, int32_t partitions,
                     int16_t replication_factor = 1);

  /// Take broker `broker` down (its connections drop, new ones are refused) or bring it
  /// back up.
  Status SetBrokerDown(int32_t broker);
  Status SetBrokerUp(int32_t broker);

  /// Answer the next requests of `api`, whichever broker gets them, with `errors` in turn
  /// (then normally again).
  void PushRequestErrors(KafkaApi api, const std::vector<KafkaErrorCode>& errors);

  /// Move the coordinator of consumer group `group` to broker `broker`.
  Status SetGroupCoordinator(const std::string& group, int32_t broker);

  /// Move the leader of `topic`'s partition `partition` to broker `broker` (-1: no
  /// leader).
  Status SetPartitionLeader(const std::string& topic, int32_t partition, int32_t broker);

  /// The session timeout and heartbeat interval the cluster gives members of consumer-
  /// protocol groups (KIP-848; the broker's, not the client's, under that protocol).
  /// kNotImplemented with a librdkafka before 2.11 (the system-librdkafka build).
  Status SetGroupConsumerTimings(std::chrono::milliseconds session_timeout,
                                 std::chrono::milliseconds heartbeat_interval);

  /// The offset consumer group `group` committed for `topic`'s partition `partition`
  /// (-1: none), asked of the cluster by a client that does not join the group.
  Result<int64_t> CommittedOffset(
      const std::string& group, const std::string& topic, int32_t partition,
      std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;

  class Impl;

 private:
  explicit MockCluster(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::string bootstraps_;
};

}  // namespace kelt
