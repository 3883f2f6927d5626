// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// kelt::MockCluster (include/kelt/mock_cluster.h) over librdkafka's mock API.
#include "kelt/mock_cluster.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <utility>

#include "kelt/kafka/client.h"

// The mock cluster's KIP-848 settings are in librdkafka 2.11's archive but not in the
// rdkafka_mock.h shipped with it; a system librdkafka before 2.11 (the fallback build)
// may not have them at all.
#if RD_KAFKA_VERSION >= 0x020b0000
extern "C" void rd_kafka_mock_set_group_consumer_session_timeout_ms(
    rd_kafka_mock_cluster_t* mcluster, int group_consumer_session_timeout_ms);
extern "C" void rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(
    rd_kafka_mock_cluster_t* mcluster, int group_consumer_heartbeat_interval_ms);
#define KELT_MOCK_HAS_KIP848 1
#endif

namespace kelt {

// The cluster and the client handle that hosts it (a mock cluster lives in a handle's
// background thread).
class MockCluster::Impl {
 public:
  Impl(kafka::HandlePtr rk, rd_kafka_mock_cluster_t* mc) : rk_(std::move(rk)), mc_(mc) {}
  ~Impl() {
    rd_kafka_mock_cluster_destroy(mc_);  // before its host handle
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  rd_kafka_mock_cluster_t* get() const { return mc_; }

 private:
  kafka::HandlePtr rk_;
  rd_kafka_mock_cluster_t* mc_;
};

namespace {

Status Check(rd_kafka_resp_err_t err, std::string_view context) {
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return Status::OK();
  return kafka::KafkaError(err, context);
}

}  // namespace

Result<std::unique_ptr<MockCluster>> MockCluster::Make(int brokers) {
  if (brokers < 1) {
    return Status::Invalid("mock cluster: brokers must be at least 1, got " +
                           std::to_string(brokers));
  }
  kafka::ConfPtr conf(rd_kafka_conf_new());
  // This handle only hosts the cluster: silence its "no bootstrap.servers" notice.
  KELT_RETURN_NOT_OK(kafka::SetProperty(conf.get(), "log_level", "3"));
  kafka::InstallLogger(conf.get());
  char errstr[512];
  kafka::HandlePtr rk(
      rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), errstr, sizeof(errstr)));
  if (rk == nullptr) return Status::Kafka(std::string("mock cluster: ") + errstr);
  conf.release();  // the handle owns it now
  rd_kafka_mock_cluster_t* mc = rd_kafka_mock_cluster_new(rk.get(), brokers);
  if (mc == nullptr) return Status::Kafka("mock cluster: could not create one");
  auto impl = std::make_unique<Impl>(std::move(rk), mc);
  return std::unique_ptr<MockCluster>(new MockCluster(std::move(impl)));
}

MockCluster::MockCluster(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)),
      bootstraps_(rd_kafka_mock_cluster_bootstraps(impl_->get())) {}

MockCluster::~MockCluster() = default;

Status MockCluster::CreateTopic(const std::string& name, int32_t partitions,
                                int16_t replication_factor) {
  if (partitions < 1 || replication_factor < 1) {
    return Status::Invalid("mock cluster: topic " + name +
                           " needs at least 1 partition and 1 replica");
  }
  return Check(rd_kafka_mock_topic_create(impl_->get(), name.c_str(), partitions,
                                          replication_factor),
               "mock cluster: create topic " + name);
}

Status MockCluster::SetBrokerDown(int32_t broker) {
  return Check(rd_kafka_mock_broker_set_down(impl_->get(), broker),
               "mock cluster: broker " + std::to_string(broker) + " down");
}

Status MockCluster::SetBrokerUp(int32_t broker) {
  return Check(rd_kafka_mock_broker_set_up(impl_->get(), broker),
               "mock cluster: broker " + std::to_string(broker) + " up");
}

void MockCluster::PushRequestErrors(KafkaApi api,
                                    const std::vector<KafkaErrorCode>& errors) {
  std::vector<rd_kafka_resp_err_t> codes;
  codes.reserve(errors.size());
  for (KafkaErrorCode e : errors) codes.push_back(static_cast<rd_kafka_resp_err_t>(e));
  rd_kafka_mock_push_request_errors_array(impl_->get(), static_cast<int16_t>(api),
                                          codes.size(), codes.data());
}

Status MockCluster::SetGroupCoordinator(const std::string& group, int32_t broker) {
  return Check(
      rd_kafka_mock_coordinator_set(impl_->get(), "group", group.c_str(), broker),
      "mock cluster: coordinator of group " + group);
}

Status MockCluster::SetPartitionLeader(const std::string& topic, int32_t partition,
                                       int32_t broker) {
  return Check(
      rd_kafka_mock_partition_set_leader(impl_->get(), topic.c_str(), partition, broker),
      "mock cluster: leader of " + topic + "[" + std::to_string(partition) + "]");
}

Status MockCluster::SetGroupConsumerTimings(
    std::chrono::milliseconds session_timeout,
    std::chrono::milliseconds heartbeat_interval) {
#ifdef KELT_MOCK_HAS_KIP848
  rd_kafka_mock_set_group_consumer_session_timeout_ms(
      impl_->get(), static_cast<int>(session_timeout.count()));
  rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(
      impl_->get(), static_cast<int>(heartbeat_interval.count()));
  return Status::OK();
#else
  return Status::NotImplemented(
      "mock cluster: consumer-group timings need librdkafka 2.11 or later");
#endif
}

Result<int64_t> MockCluster::CommittedOffset(const std::string& group,
                                             const std::string& topic, int32_t partition,
                                             std::chrono::milliseconds timeout) const {
  kafka::ConfPtr conf(rd_kafka_conf_new());
  KELT_RETURN_NOT_OK(kafka::SetProperty(conf.get(), "bootstrap.servers", bootstraps_));
  KELT_RETURN_NOT_OK(kafka::SetProperty(conf.get(), "group.id", group));
  kafka::InstallLogger(conf.get());
  char errstr[512];
  kafka::HandlePtr rk(
      rd_kafka_new(RD_KAFKA_CONSUMER, conf.get(), errstr, sizeof(errstr)));
  if (rk == nullptr) return Status::Kafka(std::string("mock cluster: ") + errstr);
  conf.release();  // the handle owns it now
  kafka::PartitionListPtr list(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), partition);
  KELT_RETURN_NOT_OK(
      Check(rd_kafka_committed(rk.get(), list.get(), static_cast<int>(timeout.count())),
            "mock cluster: committed offset of group " + group));
  const rd_kafka_topic_partition_t& tp = list->elems[0];
  KELT_RETURN_NOT_OK(Check(tp.err, "mock cluster: committed offset of group " + group +
                                       " in " + topic + "[" + std::to_string(partition) +
                                       "]"));
  return tp.offset < 0 ? int64_t{-1} : tp.offset;
}

}  // namespace kelt
