// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Cluster administration over Kafka's admin API: topics (create, describe, delete, list),
// the cluster as the client's principal sees it, and ACLs. What `kelt topics`,
// `kelt cluster` and `kelt acls` run. librdkafka stays behind these types (STYLE rule 4).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kelt/status.h"

namespace kelt {

/// A topic to create. -1 leaves a count to the broker (num.partitions,
/// default.replication.factor).
struct TopicSpec {
  std::string name;
  int32_t partitions = -1;
  int16_t replication_factor = -1;
  /// Topic configs (retention.ms, cleanup.policy, …).
  std::map<std::string, std::string> configs;
};

/// One partition as the cluster's metadata shows it (broker ids).
struct PartitionInfo {
  int32_t id = 0;
  int32_t leader = -1;  ///< -1: no leader right now
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;
};

struct TopicInfo {
  std::string name;
  std::vector<PartitionInfo> partitions;  ///< by id
};

/// What happened to one topic of CreateTopics or DeleteTopics.
struct TopicOutcome {
  std::string name;
  /// OK, or why not. A topic that does not exist (DeleteTopics) is kNotFound.
  Status status;
  /// CreateTopics: the topic existed already (status is then an error too).
  bool already_exists = false;
};

struct BrokerInfo {
  int32_t id = 0;
  std::string host;
  int32_t port = 0;
};

struct ClusterInfo {
  std::string cluster_id;
  int32_t controller_id = -1;
  std::vector<BrokerInfo> brokers;  ///< by id
  /// The operations on the cluster resource that the client's principal may perform,
  /// upper case and sorted ("DESCRIBE", "IDEMPOTENT_WRITE", …); empty when none.
  std::vector<std::string> authorized_operations;
};

/// One ACL: `principal` may (or may not) do `operation` on the resources matched by
/// resource_type, resource_name and pattern_type, from `host`. Names are lower case
/// with '_' (operation "idempotent_write"); parsing also accepts '-' and upper case.
struct AclBinding {
  std::string resource_type;             ///< topic | group | cluster | transactional_id
  std::string resource_name;             ///< "*" for all; the cluster is "kafka-cluster"
  std::string pattern_type = "literal";  ///< literal | prefixed
  std::string principal;                 ///< e.g. "User:alice"
  std::string host = "*";
  /// all | read | write | create | delete | alter | describe | cluster_action |
  /// describe_configs | alter_configs | idempotent_write
  std::string operation;
  std::string permission = "allow";  ///< allow | deny
};

/// A connection to a cluster for administrative requests. Every call takes a timeout
/// that bounds it as a whole (waits included). A cluster that cannot be reached at all
/// (every broker down, authentication failed) fails a call at once, naming the
/// brokers' last error. Error messages never contain the value of a secret property.
class Admin {
 public:
  /// `brokers`: bootstrap.servers; `properties`: librdkafka properties
  /// (security.protocol, sasl.*, ssl.*, …). Nothing is contacted yet.
  static Result<std::unique_ptr<Admin>> Make(
      const std::string& brokers,
      const std::map<std::string, std::string>& properties = {});
  ~Admin();
  Admin(const Admin&) = delete;
  Admin& operator=(const Admin&) = delete;

  /// Create topics. Returns one outcome per topic, in order; fails only when the request
  /// could not be made or answered. With `wait_for_leaders`, each topic that was created
  /// is then awaited until the metadata shows all its partitions with a leader (so that a
  /// producer started right after finds them); a topic that does not get there in time
  /// is an error outcome.
  Result<std::vector<TopicOutcome>> CreateTopics(const std::vector<TopicSpec>& topics,
                                                 std::chrono::milliseconds timeout,
                                                 bool wait_for_leaders = true);

  /// Delete topics; one outcome per topic, in order. A deleted topic is awaited until the
  /// metadata no longer shows it.
  Result<std::vector<TopicOutcome>> DeleteTopics(const std::vector<std::string>& names,
                                                 std::chrono::milliseconds timeout);

  /// Describe topics from the cluster's metadata, in the order given; kNotFound names the
  /// first that does not exist (or that the principal may not describe).
  Result<std::vector<TopicInfo>> DescribeTopics(const std::vector<std::string>& names,
                                                std::chrono::milliseconds timeout);

  /// Every topic the principal may describe, internal ones (`__consumer_offsets`, …)
  /// included, sorted by name.
  Result<std::vector<TopicInfo>> ListTopics(std::chrono::milliseconds timeout);

  /// The cluster id, controller, brokers and the principal's cluster operations.
  Result<ClusterInfo> DescribeCluster(std::chrono::milliseconds timeout);

  /// Create ACLs (an existing identical ACL is no error). Fails naming the first ACL the
  /// cluster refused.
  Status CreateAcls(const std::vector<AclBinding>& acls,
                    std::chrono::milliseconds timeout);

  /// Every ACL of the cluster.
  Result<std::vector<AclBinding>> ListAcls(std::chrono::milliseconds timeout);

 private:
  class Impl;
  explicit Admin(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Check a topic name as Kafka does: 1 to 249 of [A-Za-z0-9._-], not "." or "..".
Status ValidateTopicName(const std::string& name);

}  // namespace kelt
