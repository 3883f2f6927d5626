// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/kafka/group_holding.h"

#include <memory>

#include "kelt/kafka/client.h"

namespace kelt::kafka {

namespace {

using EventPtr = std::unique_ptr<rd_kafka_event_t, decltype(&rd_kafka_event_destroy)>;

// The partitions of `topics` that `held` lacks, from the metadata: one request for one
// topic, and one for the whole cluster for several (a request per topic waited behind
// the connection's fetch long-poll each: ~8 s for 100 topics). librdkafka also hands
// the cluster's metadata to the group, as its periodic refresh does: a subscribed topic
// that changed (a regex's new topic, more partitions) makes it rejoin a little sooner.
// Topics missing from the cluster count no partitions.
Result<int64_t> CountUnheld(rd_kafka_t* rk, const std::set<std::string>& topics,
                            const std::set<TopicPartition>& held, int timeout_ms) {
  if (topics.empty()) return 0;
  std::unique_ptr<rd_kafka_topic_t, decltype(&rd_kafka_topic_destroy)> rkt(
      nullptr, &rd_kafka_topic_destroy);
  if (topics.size() == 1) {
    rkt.reset(rd_kafka_topic_new(rk, topics.begin()->c_str(), nullptr));
    if (!rkt) return 0;
  }
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t err =
      rd_kafka_metadata(rk, rkt ? 0 : 1, rkt.get(), &md, timeout_ms);
  if (err) {
    return KafkaError(err, "reading the metadata of " +
                               (rkt ? "'" + *topics.begin() + "'"
                                    : std::to_string(topics.size()) + " topics"));
  }
  int64_t unheld = 0;
  for (int t = 0; t < md->topic_cnt; ++t) {
    if (!topics.count(md->topics[t].topic)) continue;
    for (int p = 0; p < md->topics[t].partition_cnt; ++p) {
      if (!held.count({md->topics[t].topic, md->topics[t].partitions[p].id})) ++unheld;
    }
  }
  rd_kafka_metadata_destroy(md);
  return unheld;
}

// The coordinator's description of `group_id` (a DescribeConsumerGroups result event).
Result<EventPtr> DescribeGroup(rd_kafka_t* rk, const std::string& group_id,
                               int timeout_ms) {
  QueuePtr queue(rd_kafka_queue_new(rk));
  std::unique_ptr<rd_kafka_AdminOptions_t, decltype(&rd_kafka_AdminOptions_destroy)>
      admin(rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS),
            &rd_kafka_AdminOptions_destroy);
  char errstr[256] = {0};
  if (rd_kafka_AdminOptions_set_request_timeout(admin.get(), timeout_ms, errstr,
                                                sizeof(errstr))) {
    return Status::Invalid(std::string("describing the group: ") + errstr);
  }
  const char* groups[] = {group_id.c_str()};
  rd_kafka_DescribeConsumerGroups(rk, groups, 1, admin.get(), queue.get());
  EventPtr event(rd_kafka_queue_poll(queue.get(), timeout_ms + 1000),
                 &rd_kafka_event_destroy);
  if (!event) {
    return Status::Unavailable("describing group " + group_id + ": no answer");
  }
  if (rd_kafka_resp_err_t err = rd_kafka_event_error(event.get())) {
    return KafkaError(err, "describing group " + group_id);
  }
  return event;
}

std::string MemberId(rd_kafka_t* rk) {
  char* raw = rd_kafka_memberid(rk);
  std::string id = raw ? raw : "";
  if (raw) rd_kafka_mem_free(rk, raw);
  return id;
}

// Count into `out` the members of `group` other than `mine` that hold partitions, and
// the partitions they hold that `held` lacks (added to `held`, their topics to
// `topics`).
void CountOthers(const rd_kafka_ConsumerGroupDescription_t* group,
                 const std::string& mine, std::set<TopicPartition>* held,
                 std::set<std::string>* topics, Consumer::GroupHolding* out) {
  // The classic coordinator of Kafka before 4.0 describes a rebalancing group's
  // members without their assignments: then each other member counts as holding some.
  const rd_kafka_consumer_group_state_t state =
      rd_kafka_ConsumerGroupDescription_state(group);
  const bool rebalancing = state == RD_KAFKA_CONSUMER_GROUP_STATE_PREPARING_REBALANCE ||
                           state == RD_KAFKA_CONSUMER_GROUP_STATE_COMPLETING_REBALANCE;
  const size_t members = rd_kafka_ConsumerGroupDescription_member_count(group);
  for (size_t i = 0; i < members; ++i) {
    const rd_kafka_MemberDescription_t* m =
        rd_kafka_ConsumerGroupDescription_member(group, i);
    if (mine == rd_kafka_MemberDescription_consumer_id(m)) continue;
    const rd_kafka_MemberAssignment_t* a = rd_kafka_MemberDescription_assignment(m);
    const rd_kafka_topic_partition_list_t* parts =
        a ? rd_kafka_MemberAssignment_partitions(a) : nullptr;
    const int count = parts ? parts->cnt : 0;
    if (count > 0 || rebalancing) ++out->other_members;
    for (int j = 0; j < count; ++j) {
      topics->insert(parts->elems[j].topic);
      if (held->insert({parts->elems[j].topic, parts->elems[j].partition}).second)
        ++out->held_by_others;
    }
  }
}

}  // namespace

Result<Consumer::GroupHolding> DescribeGroupHolding(
    rd_kafka_t* rk, const std::string& group_id,
    const std::vector<std::string>& subscription, std::set<TopicPartition> held,
    std::chrono::milliseconds timeout) {
  const int timeout_ms = static_cast<int>(timeout.count());
  std::set<std::string> topics;
  bool regex = false;
  for (const std::string& t : subscription) {
    if (!t.empty() && t[0] == '^') {
      regex = true;
    } else {
      topics.insert(t);
    }
  }
  for (const auto& tp : held) topics.insert(tp.topic);
  Consumer::GroupHolding out;
  // This member holds every partition of the subscription: nobody else holds any (the
  // common case of one worker, answered without asking the coordinator).
  KELT_ASSIGN_OR_RAISE(int64_t unheld, CountUnheld(rk, topics, held, timeout_ms));
  if (unheld == 0 && !regex) return out;

  KELT_ASSIGN_OR_RAISE(EventPtr event, DescribeGroup(rk, group_id, timeout_ms));
  size_t n = 0;
  const rd_kafka_ConsumerGroupDescription_t** descs =
      rd_kafka_DescribeConsumerGroups_result_groups(
          rd_kafka_event_DescribeConsumerGroups_result(event.get()), &n);
  const std::string mine = MemberId(rk);
  const size_t topics_before = topics.size();
  for (size_t g = 0; g < n; ++g) {
    if (const rd_kafka_error_t* e = rd_kafka_ConsumerGroupDescription_error(descs[g])) {
      return Status::Kafka("describing group " + group_id + ": " +
                           rd_kafka_error_string(e));
    }
    CountOthers(descs[g], mine, &held, &topics, &out);
  }
  if (out.held_by_others == 0 && topics.size() == topics_before) {
    out.unassigned = unheld;
  } else {
    KELT_ASSIGN_OR_RAISE(out.unassigned, CountUnheld(rk, topics, held, timeout_ms));
  }
  return out;
}

}  // namespace kelt::kafka
