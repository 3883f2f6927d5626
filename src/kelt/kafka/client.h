// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// librdkafka plumbing shared by the consumer and the producer: RAII owners for C handles,
// configuration building with secret redaction, error translation. Internal header.
#pragma once

#include <librdkafka/rdkafka.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "kelt/status.h"

namespace kelt::kafka {

struct HandleDeleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
struct ConfDeleter {
  void operator()(rd_kafka_conf_t* c) const { rd_kafka_conf_destroy(c); }
};
struct QueueDeleter {
  void operator()(rd_kafka_queue_t* q) const { rd_kafka_queue_destroy(q); }
};
struct MessageDeleter {
  void operator()(rd_kafka_message_t* m) const { rd_kafka_message_destroy(m); }
};
struct PartitionListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* l) const {
    rd_kafka_topic_partition_list_destroy(l);
  }
};
struct HeadersDeleter {
  void operator()(rd_kafka_headers_t* h) const { rd_kafka_headers_destroy(h); }
};

using HandlePtr = std::unique_ptr<rd_kafka_t, HandleDeleter>;
using ConfPtr = std::unique_ptr<rd_kafka_conf_t, ConfDeleter>;
using QueuePtr = std::unique_ptr<rd_kafka_queue_t, QueueDeleter>;
using MessagePtr = std::unique_ptr<rd_kafka_message_t, MessageDeleter>;
using PartitionListPtr =
    std::unique_ptr<rd_kafka_topic_partition_list_t, PartitionListDeleter>;
using HeadersPtr = std::unique_ptr<rd_kafka_headers_t, HeadersDeleter>;

/// True for properties whose values are secrets (passwords, keys, tokens): their values
/// never appear in a message kelt produces.
bool IsSecretProperty(std::string_view name);

/// Set one property. Errors name the property; for secret properties the value (which
/// librdkafka may echo) is removed from the message.
Status SetProperty(rd_kafka_conf_t* conf, const std::string& name,
                   const std::string& value);

/// Set every property of `properties`, in order.
Status SetProperties(rd_kafka_conf_t* conf,
                     const std::map<std::string, std::string>& properties);

/// Route librdkafka's log lines to kelt's log hook (component "librdkafka").
void InstallLogger(rd_kafka_conf_t* conf);

/// Translate a librdkafka error: fatal → non-retriable, transport/timeouts → retriable.
Status KafkaError(rd_kafka_resp_err_t err, std::string_view context);

/// True for errors that a retry of the same request may cure.
bool IsRetriable(rd_kafka_resp_err_t err);

/// The text of `err`, e.g. "Broker: Unknown topic or partition".
std::string ErrorText(rd_kafka_resp_err_t err);

}  // namespace kelt::kafka
