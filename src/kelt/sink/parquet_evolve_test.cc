// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Sink::Evolve in the Parquet sink: the open files end with the old schema, the next
// rows start files with the new one; durable points, Resume and leftovers as before.
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <gtest/gtest.h>
#include <parquet/arrow/reader.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "kelt/landing/layout.h"
#include "kelt/sink.h"
#include "kelt/sink/evolve_testing.h"
#include "kelt/sink/sink_testing.h"
#include "kelt/testing/assertions.h"
#include "kelt/transform.h"

namespace kelt {
namespace {

namespace fs = std::filesystem;

using testing::EvolveSchemaA;
using testing::EvolveSchemaB;
using testing::EvolveWindow;
using testing::TempDir;

std::shared_ptr<arrow::Table> ReadParquet(const std::string& path) {
  auto in = arrow::io::ReadableFile::Open(path);
  EXPECT_OK(in);
  auto reader = parquet::arrow::OpenFile(*in, arrow::default_memory_pool());
  EXPECT_OK(reader);
  auto table = (*reader)->ReadTable();
  EXPECT_OK(table);
  return table.ok() ? (*table)->CombineChunks().ValueOrDie() : nullptr;
}

// The published landing files of partition `p` of topic "t", by name (= by offset).
std::vector<std::string> FilesOf(const std::string& root, int p) {
  std::vector<std::string> out;
  if (!fs::exists(root + "/t")) return out;
  for (const auto& e : fs::directory_iterator(root + "/t")) {
    std::string name = e.path().filename().string();
    if (name[0] == '.') continue;
    auto info = ParseParquetFileName(name);
    if (info && info->tp.partition == p) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::unique_ptr<Sink>> OpenSink(const std::string& root,
                                       const std::shared_ptr<arrow::Schema>& landing) {
  ParquetSinkOptions o;
  o.root = root;
  KELT_ASSIGN_OR_RAISE(auto sink, MakeParquetSink(o));
  KELT_RETURN_NOT_OK(sink->Open(landing, DeadLetterSchema()));
  return sink;
}

const OffsetMap kBoth5{{{"t", 0}, 5}, {{"t", 1}, 5}};
const OffsetMap kBoth10{{{"t", 0}, 10}, {{"t", 1}, 10}};

TEST(ParquetSinkEvolve, EndsTheOpenFilesAndStartsNewOnesWithTheNewSchema) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto sink, OpenSink(dir.path(), EvolveSchemaA()));
  ASSERT_OK_AND_ASSIGN(auto resumed, sink->Resume({{"t", 0}, {"t", 1}}));
  EXPECT_TRUE(resumed.empty());
  ASSERT_OK_AND_ASSIGN(auto adv,
                       sink->Write(EvolveWindow(EvolveSchemaA(), 0, 4, {0, 1})));
  EXPECT_TRUE(adv.empty());  // far below the rotation limits
  ASSERT_OK(sink->Evolve(EvolveSchemaB()));
  // The rotations ended: published, their offsets reported by the next call.
  EXPECT_EQ(FilesOf(dir.path(), 0).size(), 1u);
  EXPECT_EQ(FilesOf(dir.path(), 1).size(), 1u);
  ASSERT_OK_AND_ASSIGN(adv, sink->Write(EvolveWindow(EvolveSchemaB(), 5, 9, {0, 1})));
  EXPECT_EQ(adv, kBoth5);
  ASSERT_OK_AND_ASSIGN(adv, sink->Flush());
  EXPECT_EQ(adv, kBoth10);
  ASSERT_OK(sink->Close());

  for (int p : {0, 1}) {
    auto files = FilesOf(dir.path(), p);
    ASSERT_EQ(files.size(), 2u) << "partition " << p;
    auto old_rows = ReadParquet(files[0]);
    auto new_rows = ReadParquet(files[1]);
    ASSERT_NE(old_rows, nullptr);
    ASSERT_NE(new_rows, nullptr);
    // Each file has its own schema: the old one lacks the new columns (readers that
    // unify by name show nulls there).
    EXPECT_TRUE(old_rows->schema()->Equals(*EvolveSchemaA(), false))
        << old_rows->schema()->ToString();
    EXPECT_TRUE(new_rows->schema()->Equals(*EvolveSchemaB(), false))
        << new_rows->schema()->ToString();
    EXPECT_TRUE(old_rows->Equals(
        *arrow::Table::FromRecordBatches({EvolveWindow(EvolveSchemaA(), 0, 4, {p}).batch})
             .ValueOrDie()))
        << old_rows->ToString();
    EXPECT_TRUE(new_rows->Equals(
        *arrow::Table::FromRecordBatches({EvolveWindow(EvolveSchemaB(), 5, 9, {p}).batch})
             .ValueOrDie()))
        << new_rows->ToString();
    EXPECT_NE(files[0].find("+00000000000000000000+00000000000000000004"),
              std::string::npos)
        << files[0];
    EXPECT_NE(files[1].find("+00000000000000000005+00000000000000000009"),
              std::string::npos)
        << files[1];
  }

  // Read as kelt's Transform reads a landing (read_parquet with union_by_name): the
  // rows of the older files have null in the new columns.
  ASSERT_OK_AND_ASSIGN(auto session, SqlSession::Make());
  LandingSource source;
  source.location = dir.path();
  source.topic = "t";
  ASSERT_OK(session->RegisterLanding("landed", source));
  ASSERT_OK_AND_ASSIGN(
      auto read, session->Query("SELECT concat_ws('|', _kafka_partition, _kafka_offset, "
                                "name, coalesce(coupon, 'NULL'), "
                                "coalesce(CAST(extra.a AS VARCHAR), 'NULL')) AS r "
                                "FROM landed ORDER BY _kafka_partition, _kafka_offset"));
  ASSERT_OK_AND_ASSIGN(auto combined, read->CombineChunks());
  auto column =
      std::static_pointer_cast<arrow::StringArray>(combined->column(0)->chunk(0));
  std::vector<std::string> got;
  for (int64_t i = 0; i < column->length(); ++i) got.push_back(column->GetString(i));
  std::vector<std::string> want;
  for (int p : {0, 1}) {
    for (int64_t o = 0; o < 10; ++o) {
      const std::string n = std::to_string(o);
      want.push_back(std::to_string(p) + "|" + n + "|n" + n + "|" +
                     (o < 5 ? "NULL|NULL" : "c" + n + "|" + std::to_string(o * 10)));
    }
  }
  EXPECT_EQ(got, want);

  // Reopened with B: resumes after both files, removes leftovers of an interrupted
  // write in the new schema, and lands only what is new.
  const std::string straggler =
      dir.path() + "/t/" + ParquetFileName({"t", 0}, 10, 12, 1, 2);
  fs::copy_file(FilesOf(dir.path(), 0)[1], straggler);
  const std::string in_progress =
      dir.path() + "/t/" + landing::InProgressName({"t", 0}, "deadbeef");
  std::ofstream(in_progress) << "partial";
  ASSERT_OK_AND_ASSIGN(auto reopened, OpenSink(dir.path(), EvolveSchemaB()));
  ASSERT_OK_AND_ASSIGN(resumed, reopened->Resume({{"t", 0}, {"t", 1}}));
  EXPECT_EQ(resumed, kBoth10);
  EXPECT_FALSE(fs::exists(straggler));
  EXPECT_FALSE(fs::exists(in_progress));
  ASSERT_OK(reopened->Write(EvolveWindow(EvolveSchemaB(), 8, 12, {0})).status());
  ASSERT_OK_AND_ASSIGN(adv, reopened->Flush());
  EXPECT_EQ(adv, (OffsetMap{{{"t", 0}, 13}}));
  auto files = FilesOf(dir.path(), 0);
  ASSERT_EQ(files.size(), 3u);
  auto third = ReadParquet(files[2]);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(third->num_rows(), 3);  // 10..12: 8 and 9 were durable
}

TEST(ParquetSinkEvolve, ChecksBatchesAgainstTheCurrentSchema) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto sink, OpenSink(dir.path(), EvolveSchemaA()));
  ASSERT_OK(sink->Resume({{"t", 0}}).status());
  auto early = sink->Write(EvolveWindow(EvolveSchemaB(), 0, 1));
  ASSERT_FALSE(early.ok());
  EXPECT_NE(early.status().message().find("not the landing schema"), std::string::npos)
      << early.status().ToString();
  ASSERT_OK(sink->Write(EvolveWindow(EvolveSchemaA(), 0, 1)).status());
  ASSERT_OK(sink->Evolve(EvolveSchemaB()));
  auto late = sink->Write(EvolveWindow(EvolveSchemaA(), 2, 3));
  EXPECT_FALSE(late.ok());
  ASSERT_OK_AND_ASSIGN(auto adv, sink->Write(EvolveWindow(EvolveSchemaB(), 2, 3)));
  EXPECT_EQ(adv, (OffsetMap{{{"t", 0}, 2}}));
  // Evolving with nothing open publishes nothing and changes nothing durable.
  ASSERT_OK_AND_ASSIGN(adv, sink->Flush());
  EXPECT_EQ(adv, (OffsetMap{{{"t", 0}, 4}}));
  ASSERT_OK(sink->Evolve(EvolveSchemaB()));
  ASSERT_OK_AND_ASSIGN(adv, sink->Flush());
  EXPECT_TRUE(adv.empty());
  EXPECT_EQ(FilesOf(dir.path(), 0).size(), 2u);
}

TEST(ParquetSinkEvolve, RefusesATypeChangeOrAMissingColumnAndKeepsTheOldSchema) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto sink, OpenSink(dir.path(), EvolveSchemaA()));
  ASSERT_OK(sink->Resume({{"t", 0}}).status());
  ASSERT_OK(sink->Write(EvolveWindow(EvolveSchemaA(), 0, 1)).status());
  Status changed = sink->Evolve(testing::EvolveSchemaNameChanged());
  EXPECT_EQ(changed.code(), StatusCode::kInvalid) << changed.ToString();
  EXPECT_NE(changed.message().find("column 'name' is string"), std::string::npos)
      << changed.ToString();
  EXPECT_NE(changed.message().find("int64"), std::string::npos) << changed.ToString();
  auto fewer = EvolveSchemaB()->RemoveField(EvolveSchemaB()->GetFieldIndex("name"));
  Status missing = sink->Evolve(*fewer);
  EXPECT_NE(missing.message().find("no column 'name'"), std::string::npos)
      << missing.ToString();
  auto required = EvolveSchemaB()->SetField(
      1, arrow::field("coupon", arrow::utf8(), /*nullable=*/false));
  Status not_null = sink->Evolve(*required);
  EXPECT_NE(not_null.message().find("'coupon' must be nullable"), std::string::npos)
      << not_null.ToString();
  // Refused before anything ended: the open file still takes rows of A.
  EXPECT_TRUE(FilesOf(dir.path(), 0).empty());
  ASSERT_OK(sink->Write(EvolveWindow(EvolveSchemaA(), 2, 3)).status());
  ASSERT_OK_AND_ASSIGN(auto adv, sink->Flush());
  EXPECT_EQ(adv, (OffsetMap{{{"t", 0}, 4}}));
  EXPECT_EQ(FilesOf(dir.path(), 0).size(), 1u);
}

// A sink that does not override Evolve.
class FixedSink final : public Sink {
 public:
  std::string name() const override { return "fixed:here"; }
  Status Open(const std::shared_ptr<arrow::Schema>&,
              const std::shared_ptr<arrow::Schema>&) override {
    return Status::OK();
  }
  Result<OffsetMap> Resume(const std::vector<TopicPartition>&) override {
    return OffsetMap{};
  }
  Result<OffsetMap> Write(const SinkWindow&) override { return OffsetMap{}; }
  Result<OffsetMap> Flush() override { return OffsetMap{}; }
  Status Drop(const std::vector<TopicPartition>&) override { return Status::OK(); }
  Status Close() override { return Status::OK(); }
};

TEST(SinkEvolve, DefaultRefusesNamingTheSink) {
  FixedSink sink;
  Status st = sink.Evolve(EvolveSchemaB());
  EXPECT_EQ(st.code(), StatusCode::kNotImplemented);
  EXPECT_NE(st.message().find("fixed:here"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace kelt
