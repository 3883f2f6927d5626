// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/kafka/client.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "kelt/log.h"

namespace kelt::kafka {

bool IsSecretProperty(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view needle :
       {"password", "secret", "sasl.jaas", "ssl.key.pem", "ssl_key", "ssl.key",
        "keystore", "token", "credential", "sasl.oauthbearer.config"}) {
    if (lower.find(needle) != std::string::npos) return true;
  }
  return false;
}

Status SetProperty(rd_kafka_conf_t* conf, const std::string& name,
                   const std::string& value) {
  char errstr[512] = {0};
  if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), errstr, sizeof(errstr)) ==
      RD_KAFKA_CONF_OK) {
    return Status::OK();
  }
  std::string detail = errstr;
  if (IsSecretProperty(name)) {
    detail = "invalid value (not shown: the property holds a secret)";
  }
  return Status::Invalid("kafka property '" + name + "': " + detail);
}

Status SetProperties(rd_kafka_conf_t* conf,
                     const std::map<std::string, std::string>& properties) {
  for (const auto& [name, value] : properties) {
    KELT_RETURN_NOT_OK(SetProperty(conf, name, value));
  }
  return Status::OK();
}

namespace {

void LogCallback(const rd_kafka_t* /*rk*/, int level, const char* fac, const char* buf) {
  // syslog levels: 0–3 error, 4 warning, 5–6 info, 7 debug.
  LogLevel l = level <= 3   ? LogLevel::kError
               : level == 4 ? LogLevel::kWarning
               : level <= 6 ? LogLevel::kInfo
                            : LogLevel::kDebug;
  std::string msg = fac ? fac : "";
  msg += ": ";
  msg += buf ? buf : "";
  Log(l, "librdkafka", msg);
}

}  // namespace

void InstallLogger(rd_kafka_conf_t* conf) {
  rd_kafka_conf_set_log_cb(conf, &LogCallback);
}

bool IsRetriable(rd_kafka_resp_err_t err) {
  switch (err) {
    case RD_KAFKA_RESP_ERR__TRANSPORT:
    case RD_KAFKA_RESP_ERR__TIMED_OUT:
    case RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE:
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
    case RD_KAFKA_RESP_ERR__WAIT_COORD:
    case RD_KAFKA_RESP_ERR__QUEUE_FULL:
    case RD_KAFKA_RESP_ERR__RESOLVE:
    case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
    case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
    case RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS:
    case RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NOT_COORDINATOR:
    case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
    case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS:
      return true;
    default:
      return false;
  }
}

std::string ErrorText(rd_kafka_resp_err_t err) { return rd_kafka_err2str(err); }

Status KafkaError(rd_kafka_resp_err_t err, std::string_view context) {
  std::string msg(context);
  msg += ": ";
  msg += rd_kafka_err2str(err);
  msg += " (";
  msg += rd_kafka_err2name(err);
  msg += ")";
  return Status::Kafka(std::move(msg), IsRetriable(err));
}

}  // namespace kelt::kafka
