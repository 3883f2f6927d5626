// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace kelt {

/// The error taxonomy. Each code says *who* can fix the problem, which decides
/// how the boundaries translate it (Python: OSError for kIOError/kKafka/kUnavailable,
/// ValueError otherwise; C ABI: the code name travels with the message).
enum class StatusCode : uint8_t {
  kOk = 0,
  /// The caller passed something unusable: bad config key, bad schema, bad argument.
  kInvalid,
  /// Outside input is not well-formed JSON/text (records JSON, DataSet JSON, config
  /// JSON).
  kParseError,
  /// A value does not convert to the landing type (RDP's "schema mismatch" family).
  kTypeError,
  /// Local or remote storage failed (files, object store, database).
  kIOError,
  /// The Kafka client or broker reported an error.
  kKafka,
  /// A transient condition; retrying the same operation may succeed.
  kUnavailable,
  /// Something that should exist does not.
  kNotFound,
  /// The operation was cancelled (signal, shutdown, lost partition).
  kCancelled,
  /// The feature is not available in this build.
  kNotImplemented,
  /// A bug in kelt: an invariant did not hold.
  kInternal,
};

/// Return the stable upper-snake name of a code, e.g. "TYPE_ERROR".
std::string_view StatusCodeName(StatusCode code);

/// The outcome of a fallible operation: OK, or a code, a message and a retriable flag.
/// Cheap to copy when OK (one null pointer).
class [[nodiscard]] Status {
 public:
  Status() noexcept = default;
  Status(StatusCode code, std::string message, bool retriable = false);

  static Status OK() { return Status(); }
  static Status Invalid(std::string msg) {
    return {StatusCode::kInvalid, std::move(msg)};
  }
  static Status ParseError(std::string msg) {
    return {StatusCode::kParseError, std::move(msg)};
  }
  static Status TypeError(std::string msg) {
    return {StatusCode::kTypeError, std::move(msg)};
  }
  static Status IOError(std::string msg, bool retriable = false) {
    return {StatusCode::kIOError, std::move(msg), retriable};
  }
  static Status Kafka(std::string msg, bool retriable = false) {
    return {StatusCode::kKafka, std::move(msg), retriable};
  }
  static Status Unavailable(std::string msg) {
    return {StatusCode::kUnavailable, std::move(msg), true};
  }
  static Status NotFound(std::string msg) {
    return {StatusCode::kNotFound, std::move(msg)};
  }
  static Status Cancelled(std::string msg) {
    return {StatusCode::kCancelled, std::move(msg)};
  }
  static Status NotImplemented(std::string msg) {
    return {StatusCode::kNotImplemented, std::move(msg)};
  }
  static Status Internal(std::string msg) {
    return {StatusCode::kInternal, std::move(msg)};
  }

  bool ok() const noexcept { return state_ == nullptr; }
  StatusCode code() const noexcept { return ok() ? StatusCode::kOk : state_->code; }
  /// The message alone, without the code name (what RDP-compatible envelopes carry).
  const std::string& message() const noexcept;
  bool retriable() const noexcept { return !ok() && state_->retriable; }

  /// Return "OK" or "<CODE_NAME>: <message>".
  std::string ToString() const;

  /// Return a copy whose message is `prefix + message` (context added on the way up).
  Status WithPrefix(std::string_view prefix) const;

 private:
  struct State {
    StatusCode code;
    bool retriable;
    std::string message;
  };
  std::shared_ptr<const State> state_;
};

/// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<T, Status>, "Result<Status> is not allowed");

 public:
  Result(const T& value) : v_(value) {}            // NOLINT(google-explicit-constructor)
  Result(T&& value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).ok()) {
      v_ = Status::Internal("Result constructed from an OK Status without a value");
    }
  }
  template <typename U,
            typename = std::enable_if_t<std::is_convertible_v<U&&, T> &&
                                        !std::is_same_v<std::decay_t<U>, T> &&
                                        !std::is_same_v<std::decay_t<U>, Status>>>
  Result(U&& value)
      : v_(T(std::forward<U>(value))) {}  // NOLINT(google-explicit-constructor)

  bool ok() const noexcept { return std::holds_alternative<T>(v_); }
  const Status& status() const& {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  Status status() && { return ok() ? Status::OK() : std::get<Status>(std::move(v_)); }

  const T& ValueOrDie() const& { return std::get<T>(v_); }
  T& ValueOrDie() & { return std::get<T>(v_); }
  T ValueOrDie() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return ValueOrDie(); }
  T& operator*() & { return ValueOrDie(); }
  const T* operator->() const { return &ValueOrDie(); }
  T* operator->() { return &ValueOrDie(); }
  T MoveValueUnsafe() { return std::get<T>(std::move(v_)); }

 private:
  std::variant<Status, T> v_;
};

namespace internal {
inline Status ToStatus(const Status& s) { return s; }
inline Status ToStatus(Status&& s) { return std::move(s); }
template <typename T>
Status ToStatus(const Result<T>& r) {
  return r.status();
}
}  // namespace internal

}  // namespace kelt

#define KELT_CONCAT_IMPL(a, b) a##b
#define KELT_CONCAT(a, b) KELT_CONCAT_IMPL(a, b)

/// Return the Status of `expr` from the enclosing function when it is not OK.
#define KELT_RETURN_NOT_OK(expr)                                  \
  do {                                                            \
    ::kelt::Status _kelt_st = ::kelt::internal::ToStatus((expr)); \
    if (!_kelt_st.ok()) return _kelt_st;                          \
  } while (false)

#define KELT_ASSIGN_OR_RAISE_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                              \
  if (!tmp.ok()) return std::move(tmp).status();   \
  lhs = std::move(tmp).MoveValueUnsafe();

/// Evaluate a Result expression; on error return its Status, else assign the value.
#define KELT_ASSIGN_OR_RAISE(lhs, rexpr) \
  KELT_ASSIGN_OR_RAISE_IMPL(KELT_CONCAT(_kelt_res_, __COUNTER__), lhs, rexpr)
