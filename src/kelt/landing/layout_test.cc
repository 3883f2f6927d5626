// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/landing/layout.h"

#include <arrow/filesystem/localfs.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace kelt {
namespace {

TEST(ParquetNames, RoundTripAndRejectStrangers) {
  TopicPartition tp{"orders.v1", 7};
  std::string one = ParquetFileName(tp, 0, 99, 1, 1);
  EXPECT_EQ(one, "orders.v1+7+00000000000000000000+00000000000000000099.parquet");
  auto info = ParseParquetFileName(one);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->tp, tp);
  EXPECT_EQ(info->first, 0);
  EXPECT_EQ(info->last, 99);
  EXPECT_EQ(info->parts, 1);
  auto two = ParseParquetFileName(ParquetFileName(tp, 100, 250, 2, 3));
  ASSERT_TRUE(two);
  EXPECT_EQ(two->part, 2);
  EXPECT_EQ(two->parts, 3);
  EXPECT_EQ(two->first, 100);
  for (const char* bad :
       {"x.parquet", "t+1+2.parquet", "t+a+0+1.parquet", "t+1+5+4.parquet",
        "t+1+0+1+4of3.parquet", "t+1+0+1.csv", "+1+0+1.parquet", "t+1+-1+1.parquet"}) {
    EXPECT_FALSE(ParseParquetFileName(bad)) << bad;
  }
}

TEST(ParquetNames, HiveEscapingCannotLeaveTheRoot) {
  EXPECT_EQ(EscapeHivePathValue("2026-12-02"), "2026-12-02");
  EXPECT_EQ(EscapeHivePathValue("../../etc"), "..%2F..%2Fetc");
  EXPECT_EQ(EscapeHivePathValue("a=b/c"), "a%3Db%2Fc");
  EXPECT_EQ(EscapeHivePathValue("50%"), "50%25");
  EXPECT_EQ(EscapeHivePathValue(std::string("a\nb\0c", 5)), "a%0Ab%00c");
  EXPECT_EQ(EscapeHivePathValue(""), "__HIVE_DEFAULT_PARTITION__");
  for (const char* v : {"..", "/", "a/../..", "\\..\\"}) {
    EXPECT_EQ(EscapeHivePathValue(v).find('/'), std::string::npos) << v;
  }
}

TEST(LandingLayout, InProgressNamesRoundTrip) {
  const TopicPartition tp{"orders.v1", 12};
  const std::string name = landing::InProgressName(tp, "00ff");
  EXPECT_EQ(name, ".orders.v1+12+00ff.inprogress");
  auto parsed = landing::ParseInProgressName(name);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(*parsed, tp);
  for (const char* bad :
       {".inprogress", "orders+1+x.inprogress", ".orders+x+y.inprogress",
        ".orders+1+x.parquet", ".+1+x.inprogress"}) {
    EXPECT_FALSE(landing::ParseInProgressName(bad)) << bad;
  }
  EXPECT_EQ(landing::TopicDir("t", false, "_dead_letter"), "t");
  EXPECT_EQ(landing::TopicDir("t", true, "dl"), "dl/t");
  EXPECT_EQ(landing::TopicDir("..", false, "dl"), "%2E.");
}

// Only complete ranges count: every part of a rotation, counted over the rows and the
// dead-letter directory; in-progress files and the parts of an incomplete range are
// leftovers, and other topics and unwanted partitions are not listed at all.
TEST(LandingLayout, ListTopicCountsCompleteRangesOnly) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kelt_layout_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto touch = [&](const std::string& rel) {
    std::filesystem::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel) << "x";
  };
  const TopicPartition p0{"t", 0}, p1{"t", 1};
  touch("t/" + ParquetFileName(p0, 0, 9, 1, 1));
  touch("t/day=1/" + ParquetFileName(p0, 10, 19, 1, 2));
  touch("_dead_letter/t/" + ParquetFileName(p0, 10, 19, 2, 2));  // complete over both
  touch("t/" + ParquetFileName(p0, 20, 29, 1, 2));               // part 2 missing
  touch("t/" + landing::InProgressName(p0, "abc"));
  touch("t/" + ParquetFileName(p1, 0, 4, 1, 1));
  touch("u/" + ParquetFileName({"u", 0}, 0, 4, 1, 1));
  touch("t/notes.txt");
  internal::FileSystemRoot root{std::make_shared<arrow::fs::LocalFileSystem>(),
                                dir.string(), true};
  auto listing = landing::ListTopic(root, "t", "_dead_letter",
                                    [&](const TopicPartition& tp) { return tp == p0; });
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  ASSERT_EQ(listing->complete.size(), 3u);
  EXPECT_EQ(listing->complete[0].info.first, 0);
  EXPECT_EQ(listing->complete[1].info.first, 10);
  EXPECT_EQ(listing->complete[1].info.part, 1);
  EXPECT_FALSE(listing->complete[1].dead_letter);
  EXPECT_TRUE(listing->complete[2].dead_letter);
  ASSERT_EQ(listing->leftovers.size(), 2u);
  auto all = landing::ListTopic(root, "t", "_dead_letter");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->complete.size(), 4u);  // p1's file too
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kelt
