// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/sink/boundary_types.h"

#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include "kelt/sink/all_types_testing.h"
#include "kelt/testing/assertions.h"

namespace kelt::internal {
namespace {

using testing::ColumnFromJson;

void ExpectArray(const arrow::Array& got, const std::shared_ptr<arrow::DataType>& type,
                 const std::string& json) {
  auto want = ColumnFromJson(type, json);
  ASSERT_TRUE(want);
  EXPECT_TRUE(got.Equals(*want))
      << "got " << got.ToString() << "\nwant " << want->ToString();
}

TEST(BoundaryTypesTest, DenseUnionBecomesAStructWithOneNonNullChildPerRow) {
  auto u = ColumnFromJson(testing::TestUnionType(),
                          R"([[0, 5], [1, "five"], [0, null], [1, "x"], [0, 7]])");
  BoundaryRules rules;
  rules.union_as_struct = true;
  auto to = BoundaryType(u->type(), rules);
  auto want_type = arrow::struct_(
      {arrow::field("i", arrow::int32()), arrow::field("s", arrow::utf8())});
  EXPECT_TRUE(to->Equals(*want_type)) << to->ToString();
  ASSERT_OK_AND_ASSIGN(auto got, ToBoundary(u, rules, "u"));
  ExpectArray(*got, want_type,
              R"([{"i": 5, "s": null}, {"i": null, "s": "five"},
                  {"i": null, "s": null}, {"i": null, "s": "x"}, {"i": 7, "s": null}])");
  // A slice starts at its own first row.
  ASSERT_OK_AND_ASSIGN(auto sliced, ToBoundary(u->Slice(1, 3), rules, "u"));
  ExpectArray(*sliced, want_type,
              R"([{"i": null, "s": "five"}, {"i": null, "s": null},
                  {"i": null, "s": "x"}])");
}

TEST(BoundaryTypesTest, SparseUnionAndUnnamedBranchesAndUnionsInsideLists) {
  auto sparse_type = arrow::sparse_union(
      {arrow::field("", arrow::int64()), arrow::field("b", arrow::boolean())}, {3, 7});
  auto sparse = ColumnFromJson(sparse_type, "[[3, 1], [7, true], [3, 2]]");
  BoundaryRules rules;
  rules.union_as_struct = true;
  ASSERT_OK_AND_ASSIGN(auto got, ToBoundary(sparse->Slice(1), rules, "col"));
  auto want_type = arrow::struct_(
      {arrow::field("branch_3", arrow::int64()), arrow::field("b", arrow::boolean())});
  ExpectArray(*got, want_type, R"([{"branch_3": null, "b": true},
                                   {"branch_3": 2, "b": null}])");

  auto list = ColumnFromJson(arrow::list(testing::TestUnionType()),
                             R"([[[0, 1], [1, "a"]], [], null, [[1, null]]])");
  ASSERT_OK_AND_ASSIGN(auto got_list, ToBoundary(list, rules, "l"));
  auto struct_type = arrow::struct_(
      {arrow::field("i", arrow::int32()), arrow::field("s", arrow::utf8())});
  ExpectArray(*got_list, arrow::list(struct_type),
              R"([[{"i": 1, "s": null}, {"i": null, "s": "a"}], [], null,
                  [{"i": null, "s": null}]])");
}

TEST(BoundaryTypesTest, DecimalsNullsAndUntouchedColumns) {
  BoundaryRules rules;
  rules.narrow_decimal256 = true;
  rules.null_as_utf8 = true;
  auto narrow = ColumnFromJson(arrow::decimal256(20, 3), R"(["-12345678901234567.891",
                                                          null, "0.001"])");
  ASSERT_OK_AND_ASSIGN(auto got, ToBoundary(narrow, rules, "d"));
  ExpectArray(*got, arrow::decimal128(20, 3),
              R"(["-12345678901234567.891", null, "0.001"])");
  auto wide =
      ColumnFromJson(arrow::decimal256(45, 2),
                     R"(["-1234567890123456789012345678901234567890123.45", null])");
  ASSERT_OK_AND_ASSIGN(got, ToBoundary(wide, rules, "d"));
  ExpectArray(*got, arrow::utf8(),
              R"(["-1234567890123456789012345678901234567890123.45", null])");
  ASSERT_OK_AND_ASSIGN(got,
                       ToBoundary(std::make_shared<arrow::NullArray>(2), rules, "n"));
  ExpectArray(*got, arrow::utf8(), "[null, null]");
  // A struct whose child needs no rewrite is the same array; one whose child does is
  // rebuilt around it.
  auto plain = ColumnFromJson(arrow::struct_({arrow::field("a", arrow::int32())}),
                              R"([{"a": 1}, null])");
  ASSERT_OK_AND_ASSIGN(got, ToBoundary(plain, rules, "p"));
  EXPECT_EQ(got.get(), plain.get());
  auto nested = ColumnFromJson(arrow::map(arrow::utf8(), arrow::decimal256(40, 1)),
                               R"([[["k", "1.5"]], null, []])");
  ASSERT_OK_AND_ASSIGN(got, ToBoundary(nested, rules, "m"));
  ExpectArray(*got, arrow::map(arrow::utf8(), arrow::utf8()),
              R"([[["k", "1.5"]], null, []])");
  // The union rule is off: a union stays a union.
  auto u = ColumnFromJson(testing::TestUnionType(), R"([[0, 5]])");
  ASSERT_OK_AND_ASSIGN(got, ToBoundary(u, rules, "u"));
  EXPECT_EQ(got.get(), u.get());
}

TEST(BoundaryTypesTest, UnionNullIsTheChosenChildsNull) {
  auto u = ColumnFromJson(testing::TestUnionType(), R"([[0, 5], [1, null], [0, null]])");
  EXPECT_FALSE(IsUnionNull(*u, 0));
  EXPECT_TRUE(IsUnionNull(*u, 1));
  EXPECT_TRUE(IsUnionNull(*u, 2));
  EXPECT_TRUE(IsUnionNull(*u->Slice(1), 0));
}

}  // namespace
}  // namespace kelt::internal
