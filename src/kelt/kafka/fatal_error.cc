// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/kafka/fatal_error.h"

#include <string_view>

#include "kelt/kafka/client.h"
#include "kelt/log.h"
#include "kelt/offsets.h"

namespace kelt::kafka {

void FatalError::OnClientError(rd_kafka_t* rk, int err, const char* reason) {
  auto code = static_cast<rd_kafka_resp_err_t>(err);
  if (code == RD_KAFKA_RESP_ERR__FATAL) {
    status_ = Describe(rk);
  } else if ((code == RD_KAFKA_RESP_ERR__SSL || code == RD_KAFKA_RESP_ERR__TRANSPORT) &&
             reason != nullptr &&
             std::string_view(reason).find("certificate") != std::string_view::npos) {
    // The broker's certificate is not trusted (_SSL), or the broker refused ours (a
    // TLS alert, _TRANSPORT): a retry with the same CA and keys cannot succeed.
    status_ = Status::Kafka(std::string("kafka TLS handshake failed: ") + reason);
  } else if (code == RD_KAFKA_RESP_ERR__AUTHENTICATION ||
             code == RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED ||
             code == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
             code == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED) {
    // Retrying with the same credentials cannot succeed: surface it now.
    status_ = Status::Kafka(std::string("kafka authentication/authorization failed: ") +
                            (reason ? reason : rd_kafka_err2str(code)));
  }
  Log(IsRetriable(code) ? LogLevel::kWarning : LogLevel::kError, "kafka",
      reason ? reason : rd_kafka_err2str(code));
}

Status FatalError::OnMessageError(rd_kafka_t* rk, const rd_kafka_message_t& m) {
  std::string where = m.rkt ? ToString({rd_kafka_topic_name(m.rkt), m.partition})
                            : std::string("consumer");
  switch (m.err) {
    case RD_KAFKA_RESP_ERR__FATAL:
      // The message can come before the error callback that keeps the error.
      if (status_.ok()) status_ = Describe(rk);
      return status_;
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
    case RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE:
    case RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET:
      return KafkaError(m.err, where);
    default:
      // Transient (leader moves, timeouts, unknown topic while it is being created):
      // librdkafka retries on its own.
      Log(LogLevel::kWarning, "kafka",
          where + ": " + rd_kafka_err2str(m.err) + " (retrying)");
      return Status::OK();
  }
}

Status FatalError::Describe(rd_kafka_t* rk) const {
  char buf[512] = {0};
  rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, buf, sizeof(buf));
  std::string hint;
  if (orig == RD_KAFKA_RESP_ERR_UNRELEASED_INSTANCE_ID) {
    hint = ": instance_id '" + instance_id_ +
           "' is still held by a member that did not leave the group; under "
           "group_protocol consumer a new member cannot take it until that member's "
           "session times out (the broker's group.consumer.session.timeout.ms): start "
           "again after it, or use group_protocol classic";
  } else if (orig == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID) {
    hint = ": another member joined with the same instance_id '" + instance_id_ +
           "' (each worker needs its own)";
  }
  return Status::Kafka(std::string("fatal kafka error: ") + buf + " (" +
                       rd_kafka_err2name(orig) + ")" + hint);
}

}  // namespace kelt::kafka
