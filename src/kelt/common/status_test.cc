// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/status.h"

#include <gtest/gtest.h>

#include <string>

namespace kelt {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status st;
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kOk);
  EXPECT_EQ(st.message(), "");
  EXPECT_FALSE(st.retriable());
  EXPECT_EQ(st.ToString(), "OK");
  EXPECT_TRUE(Status::OK().ok());
}

TEST(StatusTest, OkCodeWithMessageIsStillOk) {
  Status st(StatusCode::kOk, "ignored");
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(st.message(), "");
}

TEST(StatusTest, FactoriesSetCodeMessageAndRetriable) {
  struct Case {
    Status st;
    StatusCode code;
    bool retriable;
    std::string_view name;
  };
  const Case cases[] = {
      {Status::Invalid("m"), StatusCode::kInvalid, false, "INVALID"},
      {Status::ParseError("m"), StatusCode::kParseError, false, "PARSE_ERROR"},
      {Status::TypeError("m"), StatusCode::kTypeError, false, "TYPE_ERROR"},
      {Status::IOError("m"), StatusCode::kIOError, false, "IO_ERROR"},
      {Status::IOError("m", true), StatusCode::kIOError, true, "IO_ERROR"},
      {Status::Kafka("m"), StatusCode::kKafka, false, "KAFKA_ERROR"},
      {Status::Kafka("m", true), StatusCode::kKafka, true, "KAFKA_ERROR"},
      {Status::Unavailable("m"), StatusCode::kUnavailable, true, "UNAVAILABLE"},
      {Status::NotFound("m"), StatusCode::kNotFound, false, "NOT_FOUND"},
      {Status::Cancelled("m"), StatusCode::kCancelled, false, "CANCELLED"},
      {Status::NotImplemented("m"), StatusCode::kNotImplemented, false,
       "NOT_IMPLEMENTED"},
      {Status::Internal("m"), StatusCode::kInternal, false, "INTERNAL"},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(c.st.ok());
    EXPECT_EQ(c.st.code(), c.code);
    EXPECT_EQ(c.st.message(), "m");
    EXPECT_EQ(c.st.retriable(), c.retriable) << c.name;
    EXPECT_EQ(StatusCodeName(c.code), c.name);
    EXPECT_EQ(c.st.ToString(), std::string(c.name) + ": m");
  }
  EXPECT_EQ(StatusCodeName(StatusCode::kOk), "OK");
}

TEST(StatusTest, WithPrefixKeepsCodeAndRetriable) {
  Status st = Status::IOError("disk full", true).WithPrefix("sink parquet: ");
  EXPECT_EQ(st.code(), StatusCode::kIOError);
  EXPECT_TRUE(st.retriable());
  EXPECT_EQ(st.message(), "sink parquet: disk full");
  EXPECT_TRUE(Status::OK().WithPrefix("x: ").ok());
}

TEST(StatusTest, CopiesShareTheSameMessage) {
  Status a = Status::TypeError("bad cell");
  // The copy is what this test is about.
  // NOLINTNEXTLINE(performance-unnecessary-copy-initialization)
  Status b = a;
  EXPECT_EQ(b.code(), StatusCode::kTypeError);
  EXPECT_EQ(&a.message(), &b.message());  // one shared immutable state
}

TEST(StatusTest, ResultHoldsValueOrStatus) {
  Result<int> ok = 7;
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 7);
  EXPECT_TRUE(ok.status().ok());

  Result<int> err = Status::NotFound("nope");
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(err.status().message(), "nope");

  Result<std::string> converted = "text";  // U&& converting constructor
  ASSERT_TRUE(converted.ok());
  EXPECT_EQ(converted->size(), 4u);
  EXPECT_EQ(std::move(converted).ValueOrDie(), "text");
}

TEST(StatusTest, ResultFromOkStatusIsInternalError) {
  Result<int> r = Status::OK();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

Status FailIfNegative(int v) {
  if (v < 0) return Status::Invalid("negative");
  return Status::OK();
}

Result<int> Doubled(int v) {
  KELT_RETURN_NOT_OK(FailIfNegative(v));
  return v * 2;
}

Result<int> AddDoubled(int a, int b) {
  KELT_ASSIGN_OR_RAISE(int x, Doubled(a));
  KELT_ASSIGN_OR_RAISE(int y, Doubled(b));
  return x + y;
}

TEST(StatusTest, MacrosPropagate) {
  Result<int> ok = AddDoubled(1, 2);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 6);
  Result<int> err = AddDoubled(1, -2);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.status().code(), StatusCode::kInvalid);
  EXPECT_EQ(err.status().message(), "negative");
}

}  // namespace
}  // namespace kelt
