// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// What stops the consumer: librdkafka's fatal errors, failures a retry with the same
// configuration cannot cure (TLS certificates, authentication, authorization) reported
// by the error callback, a failed (re)assignment or resume hook, and the message errors
// of a batch that end the poll. The error that stopped it is kept and every later Poll
// returns it. The error callback, like the rebalance callback, is served on the polling
// thread (the main queue is forwarded to the consumer's). Internal header.
#pragma once

#include <librdkafka/rdkafka.h>

#include <string>
#include <utility>

#include "kelt/status.h"

namespace kelt::kafka {

class FatalError {
 public:
  /// `instance_id` (group.instance.id, may be empty), named in the hints, is the
  /// consumer's option: it outlives this object.
  explicit FatalError(const std::string& instance_id) : instance_id_(instance_id) {}

  /// The error that stopped the consumer, or OK.
  const Status& status() const { return status_; }
  /// Keep `st` unless an error was kept already.
  void SetIfFirst(Status st) {
    if (status_.ok()) status_ = std::move(st);
  }

  /// librdkafka's error callback: errors a retry cannot cure stop the consumer (the
  /// latest one wins); every error is logged.
  void OnClientError(rd_kafka_t* rk, int err, const char* reason);

  /// The error of an error message of a batch (named by its partition), or OK when
  /// librdkafka retries on its own. End-of-partition events are not errors: the window
  /// assembly takes them.
  Status OnMessageError(rd_kafka_t* rk, const rd_kafka_message_t& m);

 private:
  // librdkafka's fatal error, with what to do about the ones a user can cause.
  Status Describe(rd_kafka_t* rk) const;

  const std::string& instance_id_;
  Status status_;
};

}  // namespace kelt::kafka
