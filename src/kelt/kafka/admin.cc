// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// kelt::Admin over librdkafka's C admin API. Topics are described from Metadata
// (all topics, so that asking about a missing topic can never auto-create it, and so
// that librdkafka's mock cluster, which has no DescribeTopics, serves the tests).
// Every wait polls in short slices so that a cluster that cannot be reached fails the
// call early, with the brokers' last error, instead of at its timeout.
#include "kelt/admin.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <thread>
#include <utility>

#include "kelt/common/mutex.h"
#include "kelt/common/thread_annotations.h"
#include "kelt/kafka/client.h"

namespace kelt {

namespace {

using Clock = std::chrono::steady_clock;

struct EventDeleter {
  void operator()(rd_kafka_event_t* e) const { rd_kafka_event_destroy(e); }
};
struct AdminOptionsDeleter {
  void operator()(rd_kafka_AdminOptions_t* o) const { rd_kafka_AdminOptions_destroy(o); }
};
struct MetadataDeleter {
  void operator()(const rd_kafka_metadata_t* m) const { rd_kafka_metadata_destroy(m); }
};
struct AclBindingDeleter {
  void operator()(rd_kafka_AclBinding_t* a) const { rd_kafka_AclBinding_destroy(a); }
};
using EventPtr = std::unique_ptr<rd_kafka_event_t, EventDeleter>;
using AdminOptionsPtr = std::unique_ptr<rd_kafka_AdminOptions_t, AdminOptionsDeleter>;
using MetadataPtr = std::unique_ptr<const rd_kafka_metadata_t, MetadataDeleter>;
using AclBindingPtr = std::unique_ptr<rd_kafka_AclBinding_t, AclBindingDeleter>;

// How often "every broker is down" must be reported during one call before the call
// gives up: the first report can be the wrong address family of a name ("localhost"
// resolves to ::1 first), which the next attempt corrects.
constexpr int kDownReportsToGiveUp = 2;
constexpr std::chrono::milliseconds kSlice(100);

bool Blank(const std::string& s) {
  return s.find_first_not_of(" \t\r\n") == std::string::npos;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) {
    return c == '-' ? '_' : static_cast<char>(std::tolower(c));
  });
  return s;
}

std::string Seconds(std::chrono::milliseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", static_cast<double>(d.count()) / 1000.0);
  return buf;
}

struct Named {
  int value;
  const char* name;
};

constexpr Named kResourceTypes[] = {
    {RD_KAFKA_RESOURCE_TOPIC, "topic"},
    {RD_KAFKA_RESOURCE_GROUP, "group"},
    {RD_KAFKA_RESOURCE_BROKER, "cluster"},  // Kafka's CLUSTER resource (code 4)
    {RD_KAFKA_RESOURCE_TRANSACTIONAL_ID, "transactional_id"},
};
constexpr Named kPatternTypes[] = {
    {RD_KAFKA_RESOURCE_PATTERN_LITERAL, "literal"},
    {RD_KAFKA_RESOURCE_PATTERN_PREFIXED, "prefixed"},
};
constexpr Named kOperations[] = {
    {RD_KAFKA_ACL_OPERATION_ALL, "all"},
    {RD_KAFKA_ACL_OPERATION_READ, "read"},
    {RD_KAFKA_ACL_OPERATION_WRITE, "write"},
    {RD_KAFKA_ACL_OPERATION_CREATE, "create"},
    {RD_KAFKA_ACL_OPERATION_DELETE, "delete"},
    {RD_KAFKA_ACL_OPERATION_ALTER, "alter"},
    {RD_KAFKA_ACL_OPERATION_DESCRIBE, "describe"},
    {RD_KAFKA_ACL_OPERATION_CLUSTER_ACTION, "cluster_action"},
    {RD_KAFKA_ACL_OPERATION_DESCRIBE_CONFIGS, "describe_configs"},
    {RD_KAFKA_ACL_OPERATION_ALTER_CONFIGS, "alter_configs"},
    {RD_KAFKA_ACL_OPERATION_IDEMPOTENT_WRITE, "idempotent_write"},
};
constexpr Named kPermissions[] = {
    {RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW, "allow"},
    {RD_KAFKA_ACL_PERMISSION_TYPE_DENY, "deny"},
};

template <size_t N>
Result<int> Parse(const Named (&table)[N], const std::string& text, const char* what) {
  const std::string key = Lower(text);
  std::string known;
  for (const auto& e : table) {
    if (key == e.name) return e.value;
    known += (known.empty() ? "" : ", ") + std::string(e.name);
  }
  return Status::Invalid(std::string("unknown ACL ") + what + " '" + text +
                         "' (one of: " + known + ")");
}

template <size_t N>
std::string NameOf(const Named (&table)[N], int value) {
  for (const auto& e : table) {
    if (e.value == value) return e.name;
  }
  return "unknown(" + std::to_string(value) + ")";
}

std::string Describe(const AclBinding& a) {
  return a.permission + " " + a.principal + " " + a.operation + " on " + a.resource_type +
         " '" + a.resource_name + "'" +
         (a.pattern_type == "literal" ? "" : " (prefixed)") +
         (a.host == "*" ? "" : " from " + a.host);
}

}  // namespace

Status ValidateTopicName(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 249 && name != "." && name != "..";
  for (char c : name) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
                c == '-');
  }
  if (ok) return Status::OK();
  return Status::Invalid(
      "invalid topic name '" + name +
      "' (1 to 249 letters, digits, '.', '_' or '-'; not '.' or '..')");
}

class Admin::Impl {
 public:
  Status Open(const std::string& brokers,
              const std::map<std::string, std::string>& properties) {
    if (Blank(brokers)) return Status::Invalid("kafka brokers must not be empty");
    brokers_ = brokers;
    kafka::ConfPtr conf(rd_kafka_conf_new());
    std::map<std::string, std::string> props = {
        {"bootstrap.servers", brokers},
        {"client.id", "kelt-admin"},
    };
    for (const auto& [k, v] : properties) props[k] = v;
    // Describing a missing topic must never create it (brokers with
    // auto.create.topics.enable create topics that a Metadata request names).
    props["allow.auto.create.topics"] = "false";
    KELT_RETURN_NOT_OK(kafka::SetProperties(conf.get(), props));
    kafka::InstallLogger(conf.get());
    rd_kafka_conf_set_opaque(conf.get(), this);
    rd_kafka_conf_set_error_cb(conf.get(), &Impl::ErrorCallback);
    char errstr[512] = {0};
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), errstr, sizeof(errstr));
    if (rk == nullptr)
      return Status::Kafka(std::string("creating kafka admin: ") + errstr);
    conf.release();
    rk_.reset(rk);
    return Status::OK();
  }

  // ---- topics ---------------------------------------------------------------------

  Result<std::vector<TopicOutcome>> CreateTopics(const std::vector<TopicSpec>& topics,
                                                 std::chrono::milliseconds timeout,
                                                 bool wait_for_leaders) {
    if (topics.empty()) return Status::Invalid("no topic to create");
    const Call call = Begin(timeout);
    std::vector<rd_kafka_NewTopic_t*> news;
    struct Cleanup {
      std::vector<rd_kafka_NewTopic_t*>* v;
      ~Cleanup() {
        for (auto* t : *v) rd_kafka_NewTopic_destroy(t);
      }
    } cleanup{&news};
    for (const auto& t : topics) {
      KELT_RETURN_NOT_OK(ValidateTopicName(t.name));
      if (t.partitions == 0 || t.partitions < -1) {
        return Status::Invalid("topic '" + t.name +
                               "': partitions must be positive, not " +
                               std::to_string(t.partitions));
      }
      if (t.replication_factor == 0 || t.replication_factor < -1) {
        return Status::Invalid("topic '" + t.name +
                               "': replication factor must be positive, not " +
                               std::to_string(t.replication_factor));
      }
      char errstr[512] = {0};
      rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(
          t.name.c_str(), t.partitions, t.replication_factor, errstr, sizeof(errstr));
      if (nt == nullptr) return Status::Invalid("topic '" + t.name + "': " + errstr);
      news.push_back(nt);
      for (const auto& [k, v] : t.configs) {
        rd_kafka_resp_err_t err = rd_kafka_NewTopic_set_config(nt, k.c_str(), v.c_str());
        if (err)
          return kafka::KafkaError(err, "topic '" + t.name + "': config '" + k + "'");
      }
    }
    KELT_ASSIGN_OR_RAISE(AdminOptionsPtr options,
                         Options(RD_KAFKA_ADMIN_OP_CREATETOPICS, call, true));
    kafka::QueuePtr queue(rd_kafka_queue_new(rk_.get()));
    rd_kafka_CreateTopics(rk_.get(), news.data(), news.size(), options.get(),
                          queue.get());
    KELT_ASSIGN_OR_RAISE(EventPtr ev, Await(queue.get(), call, "CreateTopics"));
    const auto* result = rd_kafka_event_CreateTopics_result(ev.get());
    if (result == nullptr)
      return Status::Internal("CreateTopics: unexpected result event");
    size_t n = 0;
    const rd_kafka_topic_result_t** results =
        rd_kafka_CreateTopics_result_topics(result, &n);
    std::vector<TopicOutcome> out =
        Outcomes(topics.size(), results, n, [&](size_t i) { return topics[i].name; });
    for (size_t i = 0; i < out.size(); ++i) {
      if (!out[i].status.ok() || !wait_for_leaders) continue;
      out[i].status = WaitForLeaders(out[i].name, topics[i].partitions, call);
    }
    return out;
  }

  Result<std::vector<TopicOutcome>> DeleteTopics(const std::vector<std::string>& names,
                                                 std::chrono::milliseconds timeout) {
    if (names.empty()) return Status::Invalid("no topic to delete");
    const Call call = Begin(timeout);
    std::vector<rd_kafka_DeleteTopic_t*> dels;
    struct Cleanup {
      std::vector<rd_kafka_DeleteTopic_t*>* v;
      ~Cleanup() {
        for (auto* t : *v) rd_kafka_DeleteTopic_destroy(t);
      }
    } cleanup{&dels};
    for (const auto& name : names) {
      KELT_RETURN_NOT_OK(ValidateTopicName(name));
      dels.push_back(rd_kafka_DeleteTopic_new(name.c_str()));
    }
    KELT_ASSIGN_OR_RAISE(AdminOptionsPtr options,
                         Options(RD_KAFKA_ADMIN_OP_DELETETOPICS, call, true));
    kafka::QueuePtr queue(rd_kafka_queue_new(rk_.get()));
    rd_kafka_DeleteTopics(rk_.get(), dels.data(), dels.size(), options.get(),
                          queue.get());
    KELT_ASSIGN_OR_RAISE(EventPtr ev, Await(queue.get(), call, "DeleteTopics"));
    const auto* result = rd_kafka_event_DeleteTopics_result(ev.get());
    if (result == nullptr)
      return Status::Internal("DeleteTopics: unexpected result event");
    size_t n = 0;
    const rd_kafka_topic_result_t** results =
        rd_kafka_DeleteTopics_result_topics(result, &n);
    std::vector<TopicOutcome> out =
        Outcomes(names.size(), results, n, [&](size_t i) { return names[i]; });
    // Gone from the metadata, so that the name can be created again at once.
    for (auto& o : out) {
      if (!o.status.ok()) continue;
      while (true) {
        auto md = Metadata(call, "Metadata");
        if (!md.ok()) {
          o.status = md.status();
          break;
        }
        if (Find(**md, o.name) == nullptr) break;
        if (Clock::now() >= call.deadline) {
          o.status = Status::Kafka("topic '" + o.name +
                                       "' was deleted but still shows in "
                                       "the metadata after " +
                                       Seconds(call.timeout),
                                   true);
          break;
        }
        std::this_thread::sleep_for(kSlice);
      }
    }
    return out;
  }

  Result<std::vector<TopicInfo>> DescribeTopics(const std::vector<std::string>& names,
                                                std::chrono::milliseconds timeout) {
    const Call call = Begin(timeout);
    for (const auto& name : names) KELT_RETURN_NOT_OK(ValidateTopicName(name));
    KELT_ASSIGN_OR_RAISE(MetadataPtr md, Metadata(call, "Metadata"));
    std::vector<TopicInfo> out;
    for (const auto& name : names) {
      const rd_kafka_metadata_topic_t* t = Find(*md, name);
      if (t == nullptr || t->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
        return Status::NotFound("topic '" + name +
                                "' does not exist (or this principal " +
                                "may not describe it)");
      }
      if (t->err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
        return kafka::KafkaError(t->err, "topic '" + name + "'");
      }
      out.push_back(Info(*t));
    }
    return out;
  }

  Result<std::vector<TopicInfo>> ListTopics(std::chrono::milliseconds timeout) {
    const Call call = Begin(timeout);
    KELT_ASSIGN_OR_RAISE(MetadataPtr md, Metadata(call, "Metadata"));
    std::vector<TopicInfo> out;
    for (int i = 0; i < md->topic_cnt; ++i) out.push_back(Info(md->topics[i]));
    std::sort(out.begin(), out.end(),
              [](const TopicInfo& a, const TopicInfo& b) { return a.name < b.name; });
    return out;
  }

  // ---- cluster and ACLs -------------------------------------------------------------

  Result<ClusterInfo> DescribeCluster(std::chrono::milliseconds timeout) {
    const Call call = Begin(timeout);
    KELT_ASSIGN_OR_RAISE(AdminOptionsPtr options,
                         Options(RD_KAFKA_ADMIN_OP_DESCRIBECLUSTER, call, false));
    if (rd_kafka_error_t* e =
            rd_kafka_AdminOptions_set_include_authorized_operations(options.get(), 1)) {
      Status st =
          Status::Internal(std::string("DescribeCluster: ") + rd_kafka_error_string(e));
      rd_kafka_error_destroy(e);
      return st;
    }
    kafka::QueuePtr queue(rd_kafka_queue_new(rk_.get()));
    rd_kafka_DescribeCluster(rk_.get(), options.get(), queue.get());
    KELT_ASSIGN_OR_RAISE(EventPtr ev, Await(queue.get(), call, "DescribeCluster"));
    const auto* result = rd_kafka_event_DescribeCluster_result(ev.get());
    if (result == nullptr)
      return Status::Internal("DescribeCluster: unexpected result event");
    ClusterInfo info;
    const char* id = rd_kafka_DescribeCluster_result_cluster_id(result);
    info.cluster_id = id ? id : "";
    if (const rd_kafka_Node_t* c = rd_kafka_DescribeCluster_result_controller(result)) {
      info.controller_id = rd_kafka_Node_id(c);
    }
    size_t n = 0;
    const rd_kafka_Node_t** nodes = rd_kafka_DescribeCluster_result_nodes(result, &n);
    for (size_t i = 0; i < n; ++i) {
      const char* host = rd_kafka_Node_host(nodes[i]);
      info.brokers.push_back(
          {rd_kafka_Node_id(nodes[i]), host ? host : "", rd_kafka_Node_port(nodes[i])});
    }
    std::sort(info.brokers.begin(), info.brokers.end(),
              [](const BrokerInfo& a, const BrokerInfo& b) { return a.id < b.id; });
    const rd_kafka_AclOperation_t* ops =
        rd_kafka_DescribeCluster_result_authorized_operations(result, &n);
    std::set<std::string> names;
    for (size_t i = 0; ops != nullptr && i < n; ++i) {
      std::string name = NameOf(kOperations, ops[i]);
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      names.insert(name);
    }
    info.authorized_operations.assign(names.begin(), names.end());
    return info;
  }

  Status CreateAcls(const std::vector<AclBinding>& acls,
                    std::chrono::milliseconds timeout) {
    if (acls.empty()) return Status::Invalid("no ACL to create");
    const Call call = Begin(timeout);
    std::vector<AclBindingPtr> owned;
    std::vector<rd_kafka_AclBinding_t*> raw;
    for (const auto& a : acls) {
      KELT_ASSIGN_OR_RAISE(int type,
                           Parse(kResourceTypes, a.resource_type, "resource type"));
      KELT_ASSIGN_OR_RAISE(int pattern,
                           Parse(kPatternTypes, a.pattern_type, "pattern type"));
      KELT_ASSIGN_OR_RAISE(int op, Parse(kOperations, a.operation, "operation"));
      KELT_ASSIGN_OR_RAISE(int perm, Parse(kPermissions, a.permission, "permission"));
      if (Blank(a.principal) || a.principal.find(':') == std::string::npos) {
        return Status::Invalid("ACL principal '" + a.principal +
                               "': expected TYPE:NAME, e.g. User:alice");
      }
      if (Blank(a.resource_name)) return Status::Invalid("ACL resource name is empty");
      char errstr[512] = {0};
      rd_kafka_AclBinding_t* b = rd_kafka_AclBinding_new(
          static_cast<rd_kafka_ResourceType_t>(type), a.resource_name.c_str(),
          static_cast<rd_kafka_ResourcePatternType_t>(pattern), a.principal.c_str(),
          a.host.c_str(), static_cast<rd_kafka_AclOperation_t>(op),
          static_cast<rd_kafka_AclPermissionType_t>(perm), errstr, sizeof(errstr));
      if (b == nullptr) return Status::Invalid("ACL " + Describe(a) + ": " + errstr);
      owned.emplace_back(b);
      raw.push_back(b);
    }
    KELT_ASSIGN_OR_RAISE(AdminOptionsPtr options,
                         Options(RD_KAFKA_ADMIN_OP_CREATEACLS, call, false));
    kafka::QueuePtr queue(rd_kafka_queue_new(rk_.get()));
    rd_kafka_CreateAcls(rk_.get(), raw.data(), raw.size(), options.get(), queue.get());
    KELT_ASSIGN_OR_RAISE(EventPtr ev, Await(queue.get(), call, "CreateAcls"));
    const auto* result = rd_kafka_event_CreateAcls_result(ev.get());
    if (result == nullptr) return Status::Internal("CreateAcls: unexpected result event");
    size_t n = 0;
    const rd_kafka_acl_result_t** results = rd_kafka_CreateAcls_result_acls(result, &n);
    for (size_t i = 0; i < n && i < acls.size(); ++i) {
      if (const rd_kafka_error_t* e = rd_kafka_acl_result_error(results[i])) {
        return Status::Kafka("ACL " + Describe(acls[i]) + ": " +
                             rd_kafka_error_string(e));
      }
    }
    return Status::OK();
  }

  Result<std::vector<AclBinding>> ListAcls(std::chrono::milliseconds timeout) {
    const Call call = Begin(timeout);
    char errstr[512] = {0};
    AclBindingPtr filter(rd_kafka_AclBindingFilter_new(
        RD_KAFKA_RESOURCE_ANY, nullptr, RD_KAFKA_RESOURCE_PATTERN_ANY, nullptr, nullptr,
        RD_KAFKA_ACL_OPERATION_ANY, RD_KAFKA_ACL_PERMISSION_TYPE_ANY, errstr,
        sizeof(errstr)));
    if (!filter) return Status::Internal(std::string("ACL filter: ") + errstr);
    KELT_ASSIGN_OR_RAISE(AdminOptionsPtr options,
                         Options(RD_KAFKA_ADMIN_OP_DESCRIBEACLS, call, false));
    kafka::QueuePtr queue(rd_kafka_queue_new(rk_.get()));
    rd_kafka_DescribeAcls(rk_.get(), filter.get(), options.get(), queue.get());
    KELT_ASSIGN_OR_RAISE(EventPtr ev, Await(queue.get(), call, "DescribeAcls"));
    const auto* result = rd_kafka_event_DescribeAcls_result(ev.get());
    if (result == nullptr)
      return Status::Internal("DescribeAcls: unexpected result event");
    size_t n = 0;
    const rd_kafka_AclBinding_t** bindings =
        rd_kafka_DescribeAcls_result_acls(result, &n);
    std::vector<AclBinding> out;
    for (size_t i = 0; i < n; ++i) {
      const rd_kafka_AclBinding_t* b = bindings[i];
      AclBinding a;
      a.resource_type = NameOf(kResourceTypes, rd_kafka_AclBinding_restype(b));
      a.resource_name = rd_kafka_AclBinding_name(b);
      a.pattern_type =
          NameOf(kPatternTypes, rd_kafka_AclBinding_resource_pattern_type(b));
      a.principal = rd_kafka_AclBinding_principal(b);
      a.host = rd_kafka_AclBinding_host(b);
      a.operation = NameOf(kOperations, rd_kafka_AclBinding_operation(b));
      a.permission = NameOf(kPermissions, rd_kafka_AclBinding_permission_type(b));
      out.push_back(std::move(a));
    }
    return out;
  }

 private:
  // One call of the public API: its deadline and the broker-down reports seen before it.
  struct Call {
    std::chrono::milliseconds timeout;
    Clock::time_point deadline;
    int down_reports_before;
  };

  Call Begin(std::chrono::milliseconds timeout) KELT_EXCLUDES(mu_) {
    if (timeout.count() <= 0) timeout = std::chrono::milliseconds(1);
    internal::MutexLock lock(&mu_);
    return {timeout, Clock::now() + timeout, down_reports_};
  }

  static int RemainingMs(const Call& call) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(call.deadline -
                                                                      Clock::now());
    return static_cast<int>(std::max<int64_t>(1, left.count()));
  }

  // Not OK when the cluster cannot be reached at all (so waiting longer is pointless).
  Status Unreachable(const Call& call) KELT_EXCLUDES(mu_) {
    internal::MutexLock lock(&mu_);
    if (down_reports_ - call.down_reports_before >= kDownReportsToGiveUp ||
        auth_failed_) {
      return Status::Kafka("cannot reach the cluster at " + brokers_ +
                               (last_error_.empty() ? "" : ": " + last_error_),
                           !auth_failed_);
    }
    return Status::OK();
  }

  Status TimedOut(const Call& call, const std::string& what) KELT_EXCLUDES(mu_) {
    internal::MutexLock lock(&mu_);
    return Status::Kafka(
        "no answer to " + what + " from " + brokers_ + " within " +
            Seconds(call.timeout) +
            (last_error_.empty() ? "" : " (last error: " + last_error_ + ")"),
        true);
  }

  Result<AdminOptionsPtr> Options(rd_kafka_admin_op_t op, const Call& call,
                                  bool operation_timeout) {
    AdminOptionsPtr options(rd_kafka_AdminOptions_new(rk_.get(), op));
    char errstr[512] = {0};
    if (rd_kafka_AdminOptions_set_request_timeout(options.get(), RemainingMs(call),
                                                  errstr, sizeof(errstr))) {
      return Status::Invalid(std::string("admin request timeout: ") + errstr);
    }
    if (operation_timeout &&
        rd_kafka_AdminOptions_set_operation_timeout(options.get(), RemainingMs(call),
                                                    errstr, sizeof(errstr))) {
      return Status::Invalid(std::string("admin operation timeout: ") + errstr);
    }
    return options;
  }

  // The result event of one request (its request-level error checked).
  Result<EventPtr> Await(rd_kafka_queue_t* queue, const Call& call,
                         const std::string& what) {
    while (true) {
      int slice = std::min<int>(static_cast<int>(kSlice.count()), RemainingMs(call));
      if (rd_kafka_event_t* e = rd_kafka_queue_poll(queue, slice)) {
        EventPtr ev(e);
        rd_kafka_resp_err_t err = rd_kafka_event_error(ev.get());
        if (err == RD_KAFKA_RESP_ERR__TIMED_OUT) return TimedOut(call, what);
        if (err) {
          const char* detail = rd_kafka_event_error_string(ev.get());
          return Status::Kafka(
              what + " at " + brokers_ + ": " + (detail ? detail : kafka::ErrorText(err)),
              kafka::IsRetriable(err));
        }
        return ev;
      }
      rd_kafka_poll(rk_.get(), 0);  // serves the error callback
      KELT_RETURN_NOT_OK(Unreachable(call));
      if (Clock::now() >= call.deadline) return TimedOut(call, what);
    }
  }

  Result<MetadataPtr> Metadata(const Call& call, const std::string& what) {
    while (true) {
      const rd_kafka_metadata_t* md = nullptr;
      int slice = std::min(500, RemainingMs(call));
      rd_kafka_resp_err_t err = rd_kafka_metadata(rk_.get(), 1, nullptr, &md, slice);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return MetadataPtr(md);
      if (err != RD_KAFKA_RESP_ERR__TIMED_OUT && err != RD_KAFKA_RESP_ERR__TRANSPORT) {
        return kafka::KafkaError(err, what + " from " + brokers_);
      }
      rd_kafka_poll(rk_.get(), 0);  // serves the error callback
      KELT_RETURN_NOT_OK(Unreachable(call));
      if (Clock::now() >= call.deadline) return TimedOut(call, what);
    }
  }

  static const rd_kafka_metadata_topic_t* Find(const rd_kafka_metadata_t& md,
                                               const std::string& name) {
    for (int i = 0; i < md.topic_cnt; ++i) {
      if (name == md.topics[i].topic) return &md.topics[i];
    }
    return nullptr;
  }

  static TopicInfo Info(const rd_kafka_metadata_topic_t& t) {
    TopicInfo info;
    info.name = t.topic;
    for (int j = 0; j < t.partition_cnt; ++j) {
      const rd_kafka_metadata_partition_t& p = t.partitions[j];
      PartitionInfo pi;
      pi.id = p.id;
      pi.leader = p.leader;
      pi.replicas.assign(p.replicas, p.replicas + p.replica_cnt);
      pi.isr.assign(p.isrs, p.isrs + p.isr_cnt);
      info.partitions.push_back(std::move(pi));
    }
    std::sort(info.partitions.begin(), info.partitions.end(),
              [](const PartitionInfo& a, const PartitionInfo& b) { return a.id < b.id; });
    return info;
  }

  // Until the metadata shows `name` with `partitions` partitions (any when -1), each
  // with a leader.
  Status WaitForLeaders(const std::string& name, int32_t partitions, const Call& call) {
    std::string state = "not in the metadata yet";
    while (true) {
      KELT_ASSIGN_OR_RAISE(MetadataPtr md, Metadata(call, "Metadata"));
      const rd_kafka_metadata_topic_t* t = Find(*md, name);
      if (t != nullptr && t->err == RD_KAFKA_RESP_ERR_NO_ERROR && t->partition_cnt > 0 &&
          (partitions < 0 || t->partition_cnt == partitions)) {
        int led = 0;
        for (int j = 0; j < t->partition_cnt; ++j) {
          if (t->partitions[j].err == RD_KAFKA_RESP_ERR_NO_ERROR &&
              t->partitions[j].leader >= 0)
            ++led;
        }
        if (led == t->partition_cnt) return Status::OK();
        state = std::to_string(led) + " of " + std::to_string(t->partition_cnt) +
                " partitions have a leader";
      } else if (t != nullptr) {
        state = std::to_string(t->partition_cnt) + " partitions in the metadata" +
                (t->err ? std::string(", ") + kafka::ErrorText(t->err) : "");
      }
      if (Clock::now() >= call.deadline) {
        return Status::Kafka("topic '" + name + "' was created but is not ready after " +
                                 Seconds(call.timeout) + ": " + state,
                             true);
      }
      std::this_thread::sleep_for(kSlice);
    }
  }

  template <typename NameAt>
  std::vector<TopicOutcome> Outcomes(size_t count,
                                     const rd_kafka_topic_result_t** results, size_t n,
                                     NameAt name_at) {
    std::vector<TopicOutcome> out;
    for (size_t i = 0; i < count; ++i) {
      TopicOutcome o;
      o.name = name_at(i);
      o.status = Status::Internal("topic '" + o.name + "': no result from the broker");
      for (size_t r = 0; r < n; ++r) {
        if (o.name != rd_kafka_topic_result_name(results[r])) continue;
        rd_kafka_resp_err_t err = rd_kafka_topic_result_error(results[r]);
        const char* detail = rd_kafka_topic_result_error_string(results[r]);
        std::string context = "topic '" + o.name + "'";
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
          o.status = Status::OK();
        } else if (err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
          o.already_exists = true;
          o.status = Status::Kafka(context + " already exists");
        } else if (err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
          o.status = Status::NotFound(context + " does not exist");
        } else if (detail != nullptr && *detail != '\0') {
          o.status =
              Status::Kafka(context + ": " + detail + " (" + rd_kafka_err2name(err) + ")",
                            kafka::IsRetriable(err));
        } else {
          o.status = kafka::KafkaError(err, context);
        }
      }
      out.push_back(std::move(o));
    }
    return out;
  }

  static void ErrorCallback(rd_kafka_t* /*rk*/, int err, const char* reason,
                            void* opaque) {
    auto* self = static_cast<Impl*>(opaque);
    internal::MutexLock lock(&self->mu_);
    if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
      ++self->down_reports_;
      if (self->last_error_.empty() && reason != nullptr) self->last_error_ = reason;
      return;
    }
    if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION) self->auth_failed_ = true;
    if (reason != nullptr) self->last_error_ = reason;
  }

  std::string brokers_;
  internal::Mutex mu_;  // guards the fields below (written by the error callback)
  int down_reports_ KELT_GUARDED_BY(mu_) = 0;
  bool auth_failed_ KELT_GUARDED_BY(mu_) = false;
  std::string last_error_ KELT_GUARDED_BY(mu_);
  kafka::HandlePtr rk_;  // last: destroyed first
};

Admin::Admin(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Admin::~Admin() = default;

Result<std::unique_ptr<Admin>> Admin::Make(
    const std::string& brokers, const std::map<std::string, std::string>& properties) {
  auto impl = std::make_unique<Impl>();
  KELT_RETURN_NOT_OK(impl->Open(brokers, properties));
  return std::unique_ptr<Admin>(new Admin(std::move(impl)));
}

Result<std::vector<TopicOutcome>> Admin::CreateTopics(
    const std::vector<TopicSpec>& topics, std::chrono::milliseconds timeout,
    bool wait_for_leaders) {
  return impl_->CreateTopics(topics, timeout, wait_for_leaders);
}

Result<std::vector<TopicOutcome>> Admin::DeleteTopics(
    const std::vector<std::string>& names, std::chrono::milliseconds timeout) {
  return impl_->DeleteTopics(names, timeout);
}

Result<std::vector<TopicInfo>> Admin::DescribeTopics(
    const std::vector<std::string>& names, std::chrono::milliseconds timeout) {
  return impl_->DescribeTopics(names, timeout);
}

Result<std::vector<TopicInfo>> Admin::ListTopics(std::chrono::milliseconds timeout) {
  return impl_->ListTopics(timeout);
}

Result<ClusterInfo> Admin::DescribeCluster(std::chrono::milliseconds timeout) {
  return impl_->DescribeCluster(timeout);
}

Status Admin::CreateAcls(const std::vector<AclBinding>& acls,
                         std::chrono::milliseconds timeout) {
  return impl_->CreateAcls(acls, timeout);
}

Result<std::vector<AclBinding>> Admin::ListAcls(std::chrono::milliseconds timeout) {
  return impl_->ListAcls(timeout);
}

}  // namespace kelt
