// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kelt/registry.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

TEST(WireFormat, HeaderRoundTrips) {
  for (int32_t id : {0, 1, 255, 256, 65537, 0x7fffffff}) {
    std::string bytes = WireHeaderBytes(id) + "body";
    ASSERT_OK_AND_ASSIGN(WireHeader h, ParseWireHeader(bytes));
    EXPECT_EQ(h.schema_id, id);
    EXPECT_EQ(bytes.substr(h.body_offset), "body");
  }
  // Big-endian, as Confluent's serializers write it.
  EXPECT_EQ(WireHeaderBytes(0x01020304), std::string("\0\1\2\3\4", 5));
}

TEST(WireFormat, BadHeadersSayWhatIsWrong) {
  ASSERT_STATUS(ParseWireHeader(std::string("\0\0\0", 3)), StatusCode::kInvalid,
                "3 byte(s), fewer than the 5");
  ASSERT_STATUS(ParseWireHeader("{\"id\":1}"), StatusCode::kInvalid,
                "the first byte is 123, not the magic byte 0");
}

TEST(WireFormat, ProtobufMessageIndexes) {
  // [0] is the single byte 0; others are a zigzag count then zigzag indexes.
  EXPECT_EQ(ProtobufMessageIndexesBytes({0}), std::string("\0", 1));
  EXPECT_EQ(ProtobufMessageIndexesBytes({1}), std::string("\2\2", 2));
  EXPECT_EQ(ProtobufMessageIndexesBytes({2, 0, 70}), std::string("\6\4\0\x8c\x01", 5));
  for (const std::vector<int32_t>& v :
       {std::vector<int32_t>{0}, {1}, {3, 1}, {2, 0, 70}, {100000}}) {
    std::string bytes = ProtobufMessageIndexesBytes(v) + "rest";
    size_t used = 0;
    ASSERT_OK_AND_ASSIGN(auto back, ParseProtobufMessageIndexes(bytes, &used));
    EXPECT_EQ(back, v);
    EXPECT_EQ(bytes.substr(used), "rest");
  }
  size_t used = 0;
  ASSERT_STATUS(ParseProtobufMessageIndexes(std::string("\4\2", 2), &used),
                StatusCode::kInvalid, "truncated");
  ASSERT_STATUS(ParseProtobufMessageIndexes("", &used), StatusCode::kInvalid,
                "truncated");
  ASSERT_STATUS(ParseProtobufMessageIndexes(std::string("\x80\x10", 2), &used),
                StatusCode::kInvalid, "corrupt (a count of 1024)");
  ASSERT_STATUS(ParseProtobufMessageIndexes(std::string("\1", 1), &used),
                StatusCode::kInvalid, "corrupt (a count of -1)");
}

TEST(WireFormat, SchemaFormatNames) {
  for (SchemaFormat f :
       {SchemaFormat::kAvro, SchemaFormat::kProtobuf, SchemaFormat::kJson}) {
    EXPECT_EQ(ParseSchemaFormat(SchemaFormatName(f)), f);
  }
  EXPECT_EQ(ParseSchemaFormat("protobuf"), SchemaFormat::kProtobuf);
  EXPECT_FALSE(ParseSchemaFormat("XML").has_value());
}

}  // namespace
}  // namespace kelt
