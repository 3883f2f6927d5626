// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// `kelt topics create|describe|delete|list`, `kelt cluster describe` and
// `kelt acls create|list`: kelt::Admin from the command line. The brokers and librdkafka
// properties come as for the other subcommands: --bootstrap/--brokers (env KELT_BROKERS),
// --property NAME=VALUE, KELT_PROPERTY_<NAME> in the environment (so a password need not
// be on the command line), or a kelt run config (--config-file, env KELT_CONFIG).
#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "admin_commands.h"
#include "commands.h"
#include "kelt/admin.h"
#include "kelt/config.h"
#include "terminal.h"

extern char** environ;

namespace kelt::cli {
namespace {

// How to reach the cluster: shared by every admin subcommand.
struct Connection {
  std::string brokers;
  std::string config_file;
  std::vector<std::string> properties;
  double timeout_s = 30;

  void AddTo(CLI::App* cmd) {
    cmd->add_option("--bootstrap,--brokers", brokers, "bootstrap servers")
        ->envname("KELT_BROKERS");
    cmd->add_option("--property", properties,
                    "NAME=VALUE librdkafka property (repeatable; also "
                    "KELT_PROPERTY_<NAME> in the environment)");
    cmd->add_option(
           "--config-file", config_file,
           "take brokers and properties from this kelt run config; env KELT_CONFIG")
        ->envname("KELT_CONFIG");
    cmd->add_option("--timeout", timeout_s,
                    "seconds the whole command may take (default 30)")
        ->check(CLI::Range(0.1, 86400.0));
  }

  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  }

  // Opens the admin client, or prints why not and sets *code (1 or 2).
  std::unique_ptr<Admin> Open(const std::string& context, int* code) const {
    std::vector<std::string> names;
    for (char** e = environ; e && *e; ++e) {
      std::string kv = *e;
      names.push_back(kv.substr(0, kv.find('=')));
    }
    std::vector<ConfigOverride> overrides = ConfigOverridesFromEnv(names);
    std::string bootstrap;
    std::map<std::string, std::string> props;
    if (!config_file.empty()) {
      auto c = LoadEltConfig(config_file, overrides);
      if (!c.ok()) {
        Fail(c.status(), context);
        *code = 2;
        return nullptr;
      }
      bootstrap = c->elt.consumer.brokers;
      props = c->elt.consumer.properties;
    } else {
      const std::string prefix = "properties.";
      for (const auto& o : overrides) {
        if (o.key.rfind(prefix, 0) == 0) props[o.key.substr(prefix.size())] = o.value;
      }
    }
    if (!brokers.empty()) bootstrap = brokers;
    std::string bad;
    if (!ParseProperties(properties, &props, &bad)) {
      std::cerr << "kelt: " << context << ": --property '" << bad
                << "': expected NAME=VALUE\n";
      *code = 2;
      return nullptr;
    }
    if (bootstrap.empty()) {
      std::cerr << "kelt: " << context
                << ": no brokers: give --bootstrap HOST:PORT (or KELT_BROKERS, or "
                   "--config-file)\n";
      *code = 2;
      return nullptr;
    }
    std::vector<std::string> secrets;
    for (const auto& [k, v] : props) {
      if (IsSecretConfigKey("properties." + k) && !v.empty()) secrets.push_back(v);
    }
    // librdkafka's connection errors are summed up in the command's own error.
    InstallLogHook(LogFormat::kText, LogLevel::kError, secrets);
    auto admin = Admin::Make(bootstrap, props);
    if (!admin.ok()) {
      Fail(admin.status(), context);
      *code = admin.status().code() == StatusCode::kInvalid ? 2 : 1;
      return nullptr;
    }
    return std::move(admin).ValueOrDie();
  }
};

std::string IdList(const std::vector<int32_t>& ids, const char* sep) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? sep : "") + std::to_string(ids[i]);
  return s;
}

size_t ReplicationFactor(const TopicInfo& t) {
  return t.partitions.empty() ? 0 : t.partitions[0].replicas.size();
}

std::string TopicJson(const TopicInfo& t, bool with_partitions) {
  std::string s = "{\"name\":" + JsonString(t.name) +
                  ",\"partition_count\":" + std::to_string(t.partitions.size()) +
                  ",\"replication_factor\":" + std::to_string(ReplicationFactor(t));
  if (with_partitions) {
    s += ",\"partitions\":[";
    for (size_t i = 0; i < t.partitions.size(); ++i) {
      const auto& p = t.partitions[i];
      s += std::string(i ? "," : "") + "{\"partition\":" + std::to_string(p.id) +
           ",\"leader\":" + (p.leader >= 0 ? std::to_string(p.leader) : "null") +
           ",\"replicas\":[" + IdList(p.replicas, ",") + "],\"isr\":[" +
           IdList(p.isr, ",") + "]}";
    }
    s += "]";
  }
  return s + "}";
}

class Commands : public AdminCommands {
 public:
  explicit Commands(CLI::App* app) {
    topics_ = app->add_subcommand("topics", "Create, describe, delete and list topics");
    topics_->require_subcommand(1);

    create_ = topics_->add_subcommand(
        "create",
        "Create topics; returns once every partition has a leader (ready to produce to)");
    create_->add_option("name", names_, "topic name(s)")->required();
    create_->add_option("--partitions", partitions_, "partitions (default: the broker's)")
        ->check(CLI::Range(1, 1 << 20));
    create_
        ->add_option("--replication-factor", replication_factor_,
                     "replicas of each partition (default: the broker's)")
        ->check(CLI::Range(1, 32767));
    create_->add_option("--config", configs_, "NAME=VALUE topic config (repeatable)");
    create_->add_flag("--if-not-exists", if_not_exists_,
                      "a topic that exists already is no error");
    conn_.AddTo(create_);

    describe_ = topics_->add_subcommand(
        "describe",
        "Print topics' partitions with their leader, replicas and in-sync replicas");
    describe_->add_option("name", names_, "topic name(s)")->required();
    describe_->add_flag("--json", json_, "one JSON array of topics");
    conn_.AddTo(describe_);

    delete_ =
        topics_->add_subcommand("delete", "Delete topics (and every record in them)");
    delete_->add_option("name", names_, "topic name(s)")->required();
    delete_->add_flag("--if-exists", if_exists_,
                      "a topic that does not exist is no error");
    conn_.AddTo(delete_);

    list_ = topics_->add_subcommand("list", "List the topics (internal ones included)");
    list_->add_flag("--json", json_, "one JSON array of topics with their counts");
    conn_.AddTo(list_);

    cluster_ = app->add_subcommand("cluster", "Look at the cluster");
    cluster_->require_subcommand(1);
    cluster_describe_ = cluster_->add_subcommand(
        "describe",
        "Print the cluster id, controller, brokers and the cluster operations this "
        "client's principal may perform");
    cluster_describe_->add_flag("--json", json_, "one JSON object");
    conn_.AddTo(cluster_describe_);

    acls_ =
        app->add_subcommand("acls", "Create and list ACLs (brokers with an authorizer)");
    acls_->require_subcommand(1);
    acls_create_ = acls_->add_subcommand(
        "create",
        "Allow (or --deny) a principal operations on resources: one ACL per "
        "resource and operation");
    acls_create_->add_option("--principal", principal_, "e.g. User:alice")->required();
    acls_create_
        ->add_option("--operation", operations_,
                     "all | read | write | create | delete | alter | describe | "
                     "cluster-action | describe-configs | alter-configs | "
                     "idempotent-write (repeatable)")
        ->required();
    acls_create_->add_option("--topic", acl_topics_, "topic name, or * (repeatable)");
    acls_create_->add_option("--group", acl_groups_, "group id, or * (repeatable)");
    acls_create_->add_option("--transactional-id", acl_txn_ids_,
                             "transactional id, or * (repeatable)");
    acls_create_->add_flag("--cluster", acl_cluster_, "the cluster itself");
    acls_create_->add_flag("--prefixed", prefixed_,
                           "names are prefixes (default: literal names)");
    acls_create_->add_option("--host", host_, "client host (default: any)");
    acls_create_->add_flag("--deny", deny_, "deny instead of allow");
    conn_.AddTo(acls_create_);
    acls_list_ = acls_->add_subcommand("list", "List every ACL");
    acls_list_->add_flag("--json", json_, "one JSON array of ACLs");
    conn_.AddTo(acls_list_);
  }

  bool parsed() const override {
    return topics_->parsed() || cluster_->parsed() || acls_->parsed();
  }

  int Run() override {
    if (create_->parsed()) return Create();
    if (describe_->parsed()) return Describe();
    if (delete_->parsed()) return Delete();
    if (list_->parsed()) return List();
    if (cluster_describe_->parsed()) return DescribeCluster();
    if (acls_create_->parsed()) return CreateAcls();
    if (acls_list_->parsed()) return ListAcls();
    return 2;
  }

 private:
  int Create() {
    std::vector<TopicSpec> specs;
    std::map<std::string, std::string> configs;
    std::string bad;
    if (!ParseProperties(configs_, &configs, &bad)) {
      std::cerr << "kelt: topics create: --config '" << bad << "': expected NAME=VALUE\n";
      return 2;
    }
    for (const auto& name : names_) {
      if (auto st = ValidateTopicName(name); !st.ok()) {
        Fail(st, "topics create");
        return 2;
      }
      specs.push_back(
          {name, partitions_, static_cast<int16_t>(replication_factor_), configs});
    }
    int code = 0;
    auto admin = conn_.Open("topics create", &code);
    if (!admin) return code;
    auto outcomes = admin->CreateTopics(specs, conn_.timeout());
    if (!outcomes.ok()) return Fail(outcomes.status(), "topics create");
    for (const auto& o : *outcomes) {
      if (o.status.ok()) {
        std::cout << "created topic " << o.name << "\n";
      } else if (o.already_exists && if_not_exists_) {
        std::cout << "topic " << o.name << " already exists\n";
      } else {
        code = Fail(o.status, "topics create");
      }
    }
    return code;
  }

  int Describe() {
    int code = 0;
    auto admin = conn_.Open("topics describe", &code);
    if (!admin) return code;
    auto topics = admin->DescribeTopics(names_, conn_.timeout());
    if (!topics.ok()) return Fail(topics.status(), "topics describe");
    if (json_) {
      std::cout << "[";
      for (size_t i = 0; i < topics->size(); ++i) {
        std::cout << (i ? "," : "") << TopicJson((*topics)[i], true);
      }
      std::cout << "]\n";
      return 0;
    }
    for (const auto& t : *topics) {
      std::cout << "Topic: " << t.name << "\tPartitionCount: " << t.partitions.size()
                << "\tReplicationFactor: " << ReplicationFactor(t) << "\n";
      for (const auto& p : t.partitions) {
        std::cout << "\tTopic: " << t.name << "\tPartition: " << p.id
                  << "\tLeader: " << (p.leader >= 0 ? std::to_string(p.leader) : "none")
                  << "\tReplicas: " << IdList(p.replicas, ",")
                  << "\tIsr: " << IdList(p.isr, ",") << "\n";
      }
    }
    return 0;
  }

  int Delete() {
    for (const auto& name : names_) {
      if (auto st = ValidateTopicName(name); !st.ok()) {
        Fail(st, "topics delete");
        return 2;
      }
    }
    int code = 0;
    auto admin = conn_.Open("topics delete", &code);
    if (!admin) return code;
    auto outcomes = admin->DeleteTopics(names_, conn_.timeout());
    if (!outcomes.ok()) return Fail(outcomes.status(), "topics delete");
    for (const auto& o : *outcomes) {
      if (o.status.ok()) {
        std::cout << "deleted topic " << o.name << "\n";
      } else if (o.status.code() == StatusCode::kNotFound && if_exists_) {
        std::cout << "topic " << o.name << " does not exist\n";
      } else {
        code = Fail(o.status, "topics delete");
      }
    }
    return code;
  }

  int List() {
    int code = 0;
    auto admin = conn_.Open("topics list", &code);
    if (!admin) return code;
    auto topics = admin->ListTopics(conn_.timeout());
    if (!topics.ok()) return Fail(topics.status(), "topics list");
    if (json_) {
      std::cout << "[";
      for (size_t i = 0; i < topics->size(); ++i) {
        std::cout << (i ? "," : "") << TopicJson((*topics)[i], false);
      }
      std::cout << "]\n";
      return 0;
    }
    for (const auto& t : *topics) std::cout << t.name << "\n";
    return 0;
  }

  int DescribeCluster() {
    int code = 0;
    auto admin = conn_.Open("cluster describe", &code);
    if (!admin) return code;
    auto c = admin->DescribeCluster(conn_.timeout());
    if (!c.ok()) return Fail(c.status(), "cluster describe");
    if (json_) {
      std::cout << "{\"cluster_id\":" << JsonString(c->cluster_id) << ",\"controller\":"
                << (c->controller_id >= 0 ? std::to_string(c->controller_id) : "null")
                << ",\"brokers\":[";
      for (size_t i = 0; i < c->brokers.size(); ++i) {
        const auto& b = c->brokers[i];
        std::cout << (i ? "," : "") << "{\"id\":" << b.id
                  << ",\"host\":" << JsonString(b.host) << ",\"port\":" << b.port << "}";
      }
      std::cout << "],\"authorized_operations\":[";
      for (size_t i = 0; i < c->authorized_operations.size(); ++i) {
        std::cout << (i ? "," : "") << JsonString(c->authorized_operations[i]);
      }
      std::cout << "]}\n";
      return 0;
    }
    std::cout << "cluster id: " << c->cluster_id << "\ncontroller: "
              << (c->controller_id >= 0 ? std::to_string(c->controller_id) : "none")
              << "\nbrokers:";
    for (const auto& b : c->brokers) {
      std::cout << " " << b.id << "=" << b.host << ":" << b.port;
    }
    std::cout << "\nauthorized cluster operations:";
    for (const auto& op : c->authorized_operations) std::cout << " " << op;
    if (c->authorized_operations.empty()) std::cout << " (none)";
    std::cout << "\n";
    return 0;
  }

  int CreateAcls() {
    std::vector<std::pair<std::string, std::string>> resources;
    for (const auto& n : acl_topics_) resources.emplace_back("topic", n);
    for (const auto& n : acl_groups_) resources.emplace_back("group", n);
    for (const auto& n : acl_txn_ids_) resources.emplace_back("transactional_id", n);
    if (acl_cluster_) resources.emplace_back("cluster", "kafka-cluster");
    if (resources.empty()) {
      std::cerr << "kelt: acls create: name a resource: --topic, --group, "
                   "--transactional-id or --cluster\n";
      return 2;
    }
    std::vector<AclBinding> acls;
    for (const auto& [type, name] : resources) {
      for (const auto& op : operations_) {
        AclBinding a;
        a.resource_type = type;
        a.resource_name = name;
        a.pattern_type = prefixed_ ? "prefixed" : "literal";
        a.principal = principal_;
        a.host = host_;
        a.operation = op;
        a.permission = deny_ ? "deny" : "allow";
        acls.push_back(std::move(a));
      }
    }
    int code = 0;
    auto admin = conn_.Open("acls create", &code);
    if (!admin) return code;
    if (auto st = admin->CreateAcls(acls, conn_.timeout()); !st.ok()) {
      Fail(st, "acls create");
      return st.code() == StatusCode::kInvalid ? 2 : 1;
    }
    std::cout << "created " << acls.size() << " ACL" << (acls.size() == 1 ? "" : "s")
              << "\n";
    return 0;
  }

  int ListAcls() {
    int code = 0;
    auto admin = conn_.Open("acls list", &code);
    if (!admin) return code;
    auto acls = admin->ListAcls(conn_.timeout());
    if (!acls.ok()) return Fail(acls.status(), "acls list");
    if (json_) std::cout << "[";
    for (size_t i = 0; i < acls->size(); ++i) {
      const auto& a = (*acls)[i];
      if (json_) {
        std::cout << (i ? "," : "")
                  << "{\"resource_type\":" << JsonString(a.resource_type)
                  << ",\"resource_name\":" << JsonString(a.resource_name)
                  << ",\"pattern_type\":" << JsonString(a.pattern_type)
                  << ",\"principal\":" << JsonString(a.principal)
                  << ",\"host\":" << JsonString(a.host)
                  << ",\"operation\":" << JsonString(a.operation)
                  << ",\"permission\":" << JsonString(a.permission) << "}";
      } else {
        std::cout << a.permission << "\t" << a.principal << "\t" << a.operation << "\t"
                  << a.resource_type << ":" << a.resource_name
                  << (a.pattern_type == "literal" ? "" : " (" + a.pattern_type + ")")
                  << "\thost " << a.host << "\n";
      }
    }
    if (json_) std::cout << "]\n";
    return 0;
  }

  Connection conn_;
  std::vector<std::string> names_;
  int32_t partitions_ = -1;
  int replication_factor_ = -1;
  std::vector<std::string> configs_;
  bool if_not_exists_ = false;
  bool if_exists_ = false;
  bool json_ = false;
  std::string principal_;
  std::vector<std::string> operations_;
  std::vector<std::string> acl_topics_, acl_groups_, acl_txn_ids_;
  bool acl_cluster_ = false;
  bool prefixed_ = false;
  std::string host_ = "*";
  bool deny_ = false;

  CLI::App* topics_ = nullptr;
  CLI::App* create_ = nullptr;
  CLI::App* describe_ = nullptr;
  CLI::App* delete_ = nullptr;
  CLI::App* list_ = nullptr;
  CLI::App* cluster_ = nullptr;
  CLI::App* cluster_describe_ = nullptr;
  CLI::App* acls_ = nullptr;
  CLI::App* acls_create_ = nullptr;
  CLI::App* acls_list_ = nullptr;
};

}  // namespace

std::unique_ptr<AdminCommands> AddAdminCommands(CLI::App* app) {
  return std::make_unique<Commands>(app);
}

}  // namespace kelt::cli
