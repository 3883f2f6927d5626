// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// GoogleTest assertions over kelt::Status and kelt::Result<T> (tests only): on failure
// they print the expression and the whole status text ("<CODE_NAME>: <message>"), which
// a bare ASSERT_TRUE(x.ok()) does not. Header-only; GoogleTest is all it needs.
//
//   ASSERT_OK(expr), EXPECT_OK(expr)          expr (a Status or a Result<T>) is OK
//   ASSERT_NOT_OK(expr), EXPECT_NOT_OK(expr)  expr is not OK
//   ASSERT_OK_AND_ASSIGN(lhs, rexpr)          evaluate the Result rexpr once; fail the
//                                             test with its status, else move its value
//                                             into lhs: `auto v`, `std::unique_ptr<T> p`
//                                             or an existing variable
//   ASSERT_STATUS(expr, code, substring),     expr is not OK, has `code` (a StatusCode)
//   EXPECT_STATUS(expr, code, substring)      and a message containing `substring`
//                                             ("" for any message)
//
// All of them take more context with <<, as GoogleTest's own assertions do. They accept
// anything shaped like a Status (ok(), ToString()) or a Result (ok(), status(),
// ValueOrDie() &&), so arrow::Status and arrow::Result<T> work too; *_STATUS wants
// kelt's codes.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>

#include "kelt/status.h"

namespace kelt::testing {
namespace internal {

/// The status of a Status (itself) or of a Result (its status()).
template <typename T>
decltype(auto) StatusOf(const T& value) {
  if constexpr (requires { value.status(); }) {
    return value.status();
  } else {
    return (value);
  }
}

/// Predicate-formatter: `value` is OK.
template <typename T>
::testing::AssertionResult IsOk(const char* expr, const T& value) {
  if (value.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "Expected: " << expr << " is OK\n"
                                       << "  Actual: " << StatusOf(value).ToString();
}

/// Predicate-formatter: `value` is not OK.
template <typename T>
::testing::AssertionResult IsNotOk(const char* expr, const T& value) {
  if (!value.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "Expected: " << expr << " is not OK\n"
                                       << "  Actual: OK";
}

/// IsOk that names `expr` rather than the expression GoogleTest hands it (the
/// temporary of ASSERT_OK_AND_ASSIGN).
struct IsOkAs {
  const char* expr;
  template <typename T>
  ::testing::AssertionResult operator()(const char* /*temporary*/, const T& value) const {
    return IsOk(expr, value);
  }
};

/// Predicate-formatter: `value` failed with `code` and a message containing `substring`.
template <typename T>
::testing::AssertionResult HasStatus(const char* expr, const char* /*code_expr*/,
                                     const char* /*substring_expr*/, const T& value,
                                     StatusCode code, std::string_view substring) {
  const auto& status = StatusOf(value);
  if (!status.ok() && status.code() == code &&
      status.message().find(substring) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  failure << "Expected: " << expr << " fails with " << StatusCodeName(code);
  if (!substring.empty()) failure << " and a message containing \"" << substring << "\"";
  return failure << "\n  Actual: " << status.ToString();
}

}  // namespace internal
}  // namespace kelt::testing

#define KELT_TESTING_CONCAT_IMPL_(a, b) a##b
#define KELT_TESTING_CONCAT_(a, b) KELT_TESTING_CONCAT_IMPL_(a, b)

/// `expr` (a Status or a Result<T>) is OK; else the test fails with the status text.
#define EXPECT_OK(expr) EXPECT_PRED_FORMAT1(::kelt::testing::internal::IsOk, expr)
/// `expr` (a Status or a Result<T>) is OK; else the test fails and returns.
#define ASSERT_OK(expr) ASSERT_PRED_FORMAT1(::kelt::testing::internal::IsOk, expr)

/// `expr` (a Status or a Result<T>) is not OK.
#define EXPECT_NOT_OK(expr) EXPECT_PRED_FORMAT1(::kelt::testing::internal::IsNotOk, expr)
/// `expr` (a Status or a Result<T>) is not OK; else the test fails and returns.
#define ASSERT_NOT_OK(expr) ASSERT_PRED_FORMAT1(::kelt::testing::internal::IsNotOk, expr)

/// `expr` failed with `code` (a kelt::StatusCode) and a message containing `substring`.
#define EXPECT_STATUS(expr, code, substring) \
  EXPECT_PRED_FORMAT3(::kelt::testing::internal::HasStatus, expr, code, substring)
/// The same; else the test fails and returns.
#define ASSERT_STATUS(expr, code, substring) \
  ASSERT_PRED_FORMAT3(::kelt::testing::internal::HasStatus, expr, code, substring)

#define KELT_ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, text, ...)           \
  auto tmp = (__VA_ARGS__);                                            \
  ASSERT_PRED_FORMAT1((::kelt::testing::internal::IsOkAs{text}), tmp); \
  lhs = std::move(tmp).ValueOrDie()

/// Evaluate the Result `rexpr` once: on error fail the test (and return) with its status
/// text, else move its value into `lhs` (`auto v`, `std::unique_ptr<T> p`, or an
/// existing variable). A statement, not an expression: not for the body of an unbraced
/// if or loop.
#define ASSERT_OK_AND_ASSIGN(lhs, ...)                                            \
  KELT_ASSERT_OK_AND_ASSIGN_IMPL_(                                                \
      KELT_TESTING_CONCAT_(kelt_testing_result_, __COUNTER__), lhs, #__VA_ARGS__, \
      __VA_ARGS__)
