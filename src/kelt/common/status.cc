// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/status.h"

namespace kelt {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalid:
      return "INVALID";
    case StatusCode::kParseError:
      return "PARSE_ERROR";
    case StatusCode::kTypeError:
      return "TYPE_ERROR";
    case StatusCode::kIOError:
      return "IO_ERROR";
    case StatusCode::kKafka:
      return "KAFKA_ERROR";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kCancelled:
      return "CANCELLED";
    case StatusCode::kNotImplemented:
      return "NOT_IMPLEMENTED";
    case StatusCode::kInternal:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

Status::Status(StatusCode code, std::string message, bool retriable) {
  if (code != StatusCode::kOk) {
    state_ = std::make_shared<const State>(State{code, retriable, std::move(message)});
  }
}

const std::string& Status::message() const noexcept {
  static const std::string kEmpty;
  return ok() ? kEmpty : state_->message;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(state_->code));
  out += ": ";
  out += state_->message;
  return out;
}

Status Status::WithPrefix(std::string_view prefix) const {
  if (ok()) return *this;
  std::string msg(prefix);
  msg += state_->message;
  return Status(state_->code, std::move(msg), state_->retriable);
}

}  // namespace kelt
