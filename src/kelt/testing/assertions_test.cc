// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The test assertions of kelt/testing/assertions.h: they pass on OK, and their failures
// name the expression and carry the whole status text.
#include "kelt/testing/assertions.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "kelt/status.h"

namespace kelt {
namespace {

Status Fails() { return Status::Invalid("the widget is bent"); }
Result<int> FailsToCount() { return Status::NotFound("no such widget"); }
Result<int> Counts() { return 42; }
Result<std::unique_ptr<std::string>> Names() {
  return std::make_unique<std::string>("widget");
}

TEST(AssertionsTest, PassOnOk) {
  ASSERT_OK(Status::OK());
  EXPECT_OK(Status::OK());
  ASSERT_OK(Counts());
  EXPECT_OK(Counts()) << "never printed";
  ASSERT_NOT_OK(Fails());
  EXPECT_NOT_OK(FailsToCount());
  EXPECT_STATUS(Fails(), StatusCode::kInvalid, "widget is");
  ASSERT_STATUS(FailsToCount(), StatusCode::kNotFound, "");
}

TEST(AssertionsTest, AssignDeclaresOrAssigns) {
  ASSERT_OK_AND_ASSIGN(auto n, Counts());
  EXPECT_EQ(n, 42);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<std::string> name, Names());
  ASSERT_NE(name, nullptr);
  EXPECT_EQ(*name, "widget");
  int existing = 0;
  ASSERT_OK_AND_ASSIGN(existing, Counts());
  EXPECT_EQ(existing, 42);
  // Two in one scope, and the expression evaluated once.
  int calls = 0;
  auto count_calls = [&calls]() -> Result<int> { return ++calls; };
  ASSERT_OK_AND_ASSIGN(auto first, count_calls());
  ASSERT_OK_AND_ASSIGN(auto second, count_calls());
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 2);
  EXPECT_EQ(calls, 2);
}

TEST(AssertionsTest, OkFailuresPrintTheExpressionAndTheStatus) {
  EXPECT_FATAL_FAILURE(ASSERT_OK(Fails()), "Fails()");
  EXPECT_FATAL_FAILURE(ASSERT_OK(Fails()), "INVALID: the widget is bent");
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(Fails()), "INVALID: the widget is bent");
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(FailsToCount()), "NOT_FOUND: no such widget");
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(FailsToCount()) << "while counting",
                          "while counting");
}

void AssignFromFailure() {
  ASSERT_OK_AND_ASSIGN(auto n, FailsToCount());
  ADD_FAILURE() << "went on with " << n;
}

TEST(AssertionsTest, AssignFailurePrintsTheExpressionAndStopsTheTest) {
  EXPECT_FATAL_FAILURE(AssignFromFailure(), "FailsToCount()");
  EXPECT_FATAL_FAILURE(AssignFromFailure(), "NOT_FOUND: no such widget");
  // Only the fatal failure: the function returned before the ADD_FAILURE.
  EXPECT_FATAL_FAILURE(AssignFromFailure(), "is OK");
}

TEST(AssertionsTest, NotOkAndStatusFailures) {
  EXPECT_FATAL_FAILURE(ASSERT_NOT_OK(Counts()), "Counts() is not OK");
  EXPECT_NONFATAL_FAILURE(EXPECT_NOT_OK(Status::OK()), "Actual: OK");
  EXPECT_NONFATAL_FAILURE(EXPECT_STATUS(Fails(), StatusCode::kTypeError, "bent"),
                          "INVALID: the widget is bent");
  EXPECT_NONFATAL_FAILURE(EXPECT_STATUS(Fails(), StatusCode::kInvalid, "straight"),
                          "a message containing \"straight\"");
  EXPECT_FATAL_FAILURE(ASSERT_STATUS(Counts(), StatusCode::kInvalid, ""),
                       "fails with INVALID\n  Actual: OK");
}

}  // namespace
}  // namespace kelt
