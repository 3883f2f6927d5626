// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The decoder's output, checked by value and against libprotobuf's DynamicMessage
// (reflection_testing.h) on the same bytes.
#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <random>

#include "kelt/protobuf.h"
#include "kelt/protobuf/reflection_testing.h"
#include "kelt/testing/arrow_assertions.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

using protobuf::ReflectionReference;

struct Fixture {
  std::shared_ptr<const ProtobufPlan> plan;
  std::unique_ptr<ProtobufDecoder> decoder;
  std::unique_ptr<ReflectionReference> reference;

  // The bytes of a message in text format.
  std::string Encode(const std::string& text) const {
    std::unique_ptr<google::protobuf::Message> m(reference->NewMessage());
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, m.get())) << text;
    return m->SerializeAsString();
  }
};

Fixture Make(std::string_view proto, std::vector<int32_t> indexes = {}) {
  Fixture f;
  auto schema = ProtobufSchema::Parse(proto);
  EXPECT_TRUE(schema.ok()) << schema.status().ToString();
  auto plan = ProtobufPlan::Compile(*schema, indexes);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  f.plan = *plan;
  f.decoder = ProtobufDecoder::Make(f.plan).ValueOrDie();
  f.reference = std::make_unique<ReflectionReference>(f.plan);
  return f;
}

// Decode `texts` (text format) and check the batch against the reference's.
std::shared_ptr<arrow::RecordBatch> DecodeChecked(Fixture& f,
                                                  const std::vector<std::string>& texts) {
  EXPECT_TRUE(f.decoder->Reserve(static_cast<int64_t>(texts.size())).ok());
  for (const std::string& text : texts) {
    std::string bytes = f.Encode(text);
    Status st = f.decoder->Append(bytes);
    EXPECT_TRUE(st.ok()) << st.ToString() << "\n" << text;
    EXPECT_TRUE(f.reference->Append(bytes));
  }
  auto batch = f.decoder->Finish().ValueOrDie();
  auto expected = f.reference->Finish();
  EXPECT_TRUE(batch->ValidateFull().ok()) << batch->ValidateFull().ToString();
  EXPECT_TRUE(batch->Equals(*expected)) << "got\n"
                                        << batch->ToString() << "expected\n"
                                        << expected->ToString();
  return batch;
}

using testing::ExpectColumn;

constexpr std::string_view kScalars = R"(
syntax = "proto3";
message S {
  int32 i32 = 1; sint32 s32 = 2; sfixed32 sf32 = 3;
  int64 i64 = 4; sint64 s64 = 5; sfixed64 sf64 = 6;
  uint32 u32 = 7; fixed32 f32 = 8; uint64 u64 = 9; fixed64 f64 = 10;
  float fl = 11; double db = 12; bool b = 13; string s = 14; bytes by = 15;
  optional int32 opt = 16;
}
)";

TEST(ProtobufDecoderTest, ScalarsAndProto3Presence) {
  Fixture f = Make(kScalars);
  EXPECT_EQ(f.plan->arrow_schema()->ToString(),
            "i32: int32 not null\ns32: int32 not null\nsf32: int32 not null\n"
            "i64: int64 not null\ns64: int64 not null\nsf64: int64 not null\n"
            "u32: uint32 not null\nf32: uint32 not null\nu64: uint64 not null\n"
            "f64: uint64 not null\nfl: float not null\ndb: double not null\n"
            "b: bool not null\ns: string not null\nby: binary not null\nopt: int32");
  auto batch = DecodeChecked(
      f, {"i32: -5 s32: -6 sf32: -7 i64: -8000000000 s64: -9 sf64: -10 u32: 4000000000 "
          "f32: 4000000001 u64: 18000000000000000000 f64: 18000000000000000001 fl: 1.5 "
          "db: -2.25 b: true s: 'héllo' by: '\\x00\\xff' opt: 0",
          ""});
  ExpectColumn(*batch, "i32", "[-5, 0]");
  ExpectColumn(*batch, "s32", "[-6, 0]");
  ExpectColumn(*batch, "sf32", "[-7, 0]");
  ExpectColumn(*batch, "i64", "[-8000000000, 0]");
  ExpectColumn(*batch, "s64", "[-9, 0]");
  ExpectColumn(*batch, "sf64", "[-10, 0]");
  ExpectColumn(*batch, "u32", "[4000000000, 0]");
  ExpectColumn(*batch, "f32", "[4000000001, 0]");
  ExpectColumn(*batch, "u64", "[18000000000000000000, 0]");
  ExpectColumn(*batch, "f64", "[18000000000000000001, 0]");
  ExpectColumn(*batch, "fl", "[1.5, 0]");
  ExpectColumn(*batch, "db", "[-2.25, 0]");
  ExpectColumn(*batch, "b", "[true, false]");
  ExpectColumn(*batch, "s", R"(["héllo", ""])");
  ExpectColumn(*batch, "opt", "[0, null]");
}

constexpr std::string_view kRich = R"(
syntax = "proto3";
package r;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
enum Color { RED = 0; GREEN = 1; BLUE = 2; }
message Inner { string name = 1; int32 n = 2; repeated int32 xs = 3; }
message R {
  Color color = 1;
  repeated Color colors = 2;
  Inner inner = 3;
  repeated Inner inners = 4;
  map<string, int64> counts = 5;
  map<int32, Inner> by_id = 6;
  oneof choice { string text = 7; int32 number = 8; Inner sub = 9; }
  google.protobuf.Timestamp at = 10;
  google.protobuf.Duration took = 11;
  google.protobuf.Int32Value maybe_int = 12;
  google.protobuf.StringValue maybe_text = 13;
  repeated sint64 packed = 14;
  repeated fixed32 fixed = 15;
  repeated string names = 16;
  google.protobuf.BoolValue maybe_bool = 17;
  google.protobuf.Struct attrs = 18;
  google.protobuf.Value any = 19;
  repeated google.protobuf.ListValue lists = 20;
}
)";

TEST(ProtobufDecoderTest, MessagesListsMapsOneofsAndWellKnownTypes) {
  Fixture f = Make(kRich, {1});
  EXPECT_EQ(f.plan->arrow_schema()->field(0)->type()->ToString(),
            "dictionary<values=string, indices=int32, ordered=0>");
  EXPECT_EQ(f.plan->arrow_schema()->GetFieldByName("at")->ToString(),
            "at: timestamp[ns, tz=UTC]");
  EXPECT_EQ(f.plan->arrow_schema()->GetFieldByName("took")->ToString(),
            "took: duration[ns]");
  EXPECT_EQ(f.plan->arrow_schema()->GetFieldByName("maybe_int")->ToString(),
            "maybe_int: int32");
  EXPECT_EQ(f.plan->arrow_schema()->GetFieldByName("counts")->ToString(),
            "counts: map<string, int64> not null");
  auto batch = DecodeChecked(
      f, {R"(color: BLUE colors: [GREEN, RED] inner { name: "a" n: 1 xs: [1, 2] }
             inners { name: "b" } inners { n: 3 }
             counts { key: "k" value: 7 } by_id { key: 4 value { name: "c" } }
             text: "t" at { seconds: 1700000000 nanos: 5 } took { seconds: -2 nanos: -1 }
             maybe_int { value: 0 } maybe_text { value: "w" }
             packed: [-1, 2, -3] fixed: [7, 8] names: ["x", "y"] maybe_bool {}
             attrs { fields { key: "c" value { struct_value {} } }
                     fields { key: "a" value { number_value: 1.5 } }
                     fields { key: "b" value { list_value { values { bool_value: true }
                       values { null_value: NULL_VALUE } values { string_value: "x" } } } } }
             any {} lists {} lists { values { number_value: 1 }
               values { struct_value { fields { key: "k" value { string_value: "v" } } } } })",
          R"(number: 9)", R"(sub { name: "s" })", ""});
  ExpectColumn(*batch, "text", R"(["t", null, null, null])");
  ExpectColumn(*batch, "number", "[null, 9, null, null]");
  ExpectColumn(*batch, "at", R"([1700000000000000005, null, null, null])");
  ExpectColumn(*batch, "took", "[-2000000001, null, null, null]");
  ExpectColumn(*batch, "maybe_int", "[0, null, null, null]");
  ExpectColumn(*batch, "maybe_text", R"(["w", null, null, null])");
  ExpectColumn(*batch, "maybe_bool", "[false, null, null, null]");
  ExpectColumn(*batch, "packed", "[[-1, 2, -3], [], [], []]");
  ExpectColumn(*batch, "fixed", "[[7, 8], [], [], []]");
  ExpectColumn(*batch, "names", R"([["x", "y"], [], [], []])");
  ExpectColumn(*batch, "inner",
               R"([{"name": "a", "n": 1, "xs": [1, 2]}, null, null, null])");
  ExpectColumn(*batch, "counts", R"([[["k", 7]], [], [], []])");
  ExpectColumn(*batch, "attrs",
               R"(["{\"a\":1.5,\"b\":[true,null,\"x\"],\"c\":{}}", null, null, null])");
  ExpectColumn(*batch, "any", R"(["null", null, null, null])");
  ExpectColumn(*batch, "lists", R"([["[]", "[1.0,{\"k\":\"v\"}]"], [], [], []])");
  auto color = arrow::json::DictArrayFromJSONString(
      arrow::dictionary(arrow::int32(), arrow::utf8()), "[2, 0, 0, 0]",
      R"(["RED", "GREEN", "BLUE"])");
  EXPECT_TRUE(batch->GetColumnByName("color")->Equals(**color))
      << batch->GetColumnByName("color")->ToString();
}

// Builds bodies by hand, for what text format cannot say.
struct Wire {
  std::string bytes;
  Wire& Varint(uint64_t v) {
    while (v >= 0x80) {
      bytes.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    bytes.push_back(static_cast<char>(v));
    return *this;
  }
  Wire& Tag(uint32_t number, int wire) { return Varint((uint64_t{number} << 3) | wire); }
  Wire& Len(uint32_t number, std::string_view v) {
    Tag(number, 2).Varint(v.size());
    bytes += v;
    return *this;
  }
  Wire& Raw(std::string_view v) {
    bytes += v;
    return *this;
  }
};

TEST(ProtobufDecoderTest, WireRulesMatchLibprotobuf) {
  Fixture f = Make(kRich, {1});
  std::vector<std::string> bodies = {
      // Scalars repeated on the wire: the last wins; messages merge.
      Wire().Tag(8, 0).Varint(1).Tag(8, 0).Varint(2).bytes,
      Wire()
          .Len(3, Wire().Len(1, "a").Tag(3, 0).Varint(1).bytes)
          .Len(3, Wire().Tag(2, 0).Varint(5).Tag(3, 0).Varint(2).bytes)
          .bytes,
      // Packed and unpacked runs of one repeated field, mixed.
      Wire()
          .Tag(14, 0)
          .Varint(3)
          .Len(14, Wire().Varint(4).Varint(1).bytes)
          .Tag(14, 0)
          .Varint(6)
          .bytes,
      Wire()
          .Tag(15, 5)
          .Raw(std::string("\x01\0\0\0", 4))
          .Len(15, std::string("\x02\0\0\0\x03\0\0\0", 8))
          .bytes,
      // Unknown fields of every wire type, a group among them, are skipped.
      Wire()
          .Tag(100, 0)
          .Varint(1)
          .Tag(101, 1)
          .Raw("12345678")
          .Len(102, "xyz")
          .Tag(103, 5)
          .Raw("1234")
          .Tag(104, 3)
          .Tag(1, 0)
          .Varint(1)
          .Tag(104, 4)
          .Tag(8, 0)
          .Varint(7)
          .bytes,
      // Oneof: the last member on the wire wins, the others are cleared.
      Wire().Len(7, "t").Tag(8, 0).Varint(3).bytes,
      Wire().Tag(8, 0).Varint(3).Len(9, Wire().Len(1, "x").bytes).Len(7, "u").bytes,
      // An open enum's unknown number.
      Wire().Tag(1, 0).Varint(7).bytes,
  };
  for (const std::string& body : bodies) {
    ASSERT_OK(f.decoder->Append(body));
    ASSERT_TRUE(f.reference->Append(body));
  }
  ASSERT_OK_AND_ASSIGN(auto batch, f.decoder->Finish());
  ASSERT_OK(batch->ValidateFull().ok() ? Status::OK() : Status::Internal("invalid"));
  ExpectColumn(*batch, "number", "[2, null, null, null, 7, 3, null, null]");
  ExpectColumn(*batch, "text", R"([null, null, null, null, null, null, "u", null])");
  ExpectColumn(*batch, "inner",
               R"([null, {"name": "a", "n": 5, "xs": [1, 2]}, null, null, null, null,
                   null, null])");
  ExpectColumn(*batch, "packed", "[[], [], [-2, 2, -1, 3], [], [], [], [], []]");
  ExpectColumn(*batch, "fixed", "[[], [], [], [1, 2, 3], [], [], [], []]");
  // The unknown number 7 lands as its text, after the declared names.
  auto color = arrow::json::DictArrayFromJSONString(
      arrow::dictionary(arrow::int32(), arrow::utf8()), "[0, 0, 0, 0, 0, 0, 0, 3]",
      R"(["RED", "GREEN", "BLUE", "7"])");
  EXPECT_TRUE(batch->GetColumnByName("color")->Equals(**color))
      << batch->GetColumnByName("color")->ToString();
}

TEST(ProtobufDecoderTest, Proto2PresenceAndClosedEnums) {
  Fixture f = Make(R"(
syntax = "proto2";
enum E { A = 1; B = 2; }
message M {
  optional int32 x = 1;
  optional string s = 2 [default = "d"];
  optional E e = 3;
  repeated E es = 4;
  required int64 id = 5;
}
)");
  auto batch = DecodeChecked(f, {"x: 0 s: 'a' e: B es: [A, B] id: 1", "id: 2"});
  ExpectColumn(*batch, "x", "[0, null]");
  ExpectColumn(*batch, "s", R"(["a", null])");
  // A closed enum's unknown number is an unknown field, as libprotobuf has it.
  std::string body = Wire()
                         .Tag(3, 0)
                         .Varint(2)
                         .Tag(3, 0)
                         .Varint(9)
                         .Len(4, "\x01\x09\x02")
                         .Tag(5, 0)
                         .Varint(3)
                         .bytes;
  ASSERT_OK(f.decoder->Append(body));
  ASSERT_TRUE(f.reference->Append(body));
  ASSERT_OK_AND_ASSIGN(auto second, f.decoder->Finish());
  EXPECT_TRUE(second->Equals(*f.reference->Finish())) << second->ToString();
}

TEST(ProtobufDecoderTest, BadBytesLeaveNoTrace) {
  Fixture f = Make(kRich, {1});
  struct Case {
    std::string body;
    ProtobufErrorKind kind;
    std::string field;
    int64_t offset;
  };
  std::string too_long_varint = Wire().Tag(8, 0).bytes + std::string(10, '\xff') + "\x01";
  // The first entry's Value holds a string running past the Value's end.
  std::string replaced_entry =
      Wire().Len(1, "k").Len(2, Wire().Tag(3, 2).Varint(5).Raw("x").bytes).bytes;
  std::string later_entry = Wire().Len(1, "k").Len(2, Wire().Len(3, "ok").bytes).bytes;
  std::string repeated_key =
      Wire().Len(18, Wire().Len(1, replaced_entry).Len(1, later_entry).bytes).bytes;
  std::vector<Case> cases = {
      {Wire().Tag(8, 0).bytes, ProtobufErrorKind::kTruncated, "number", 1},
      {"\x80", ProtobufErrorKind::kTruncated, "", 0},
      {too_long_varint, ProtobufErrorKind::kBadVarint, "number", 1},
      {Wire().Tag(0, 0).Varint(1).bytes, ProtobufErrorKind::kBadFieldNumber, "", 0},
      {Wire().Tag(8, 2).Varint(0).bytes, ProtobufErrorKind::kWrongWireType, "number", 0},
      {Wire().Tag(99, 6).bytes, ProtobufErrorKind::kBadWireType, "", 0},
      {Wire().Tag(99, 4).bytes, ProtobufErrorKind::kBadGroup, "", 0},
      {Wire().Tag(99, 3).Tag(98, 4).bytes, ProtobufErrorKind::kBadGroup, "", 2},
      {Wire().Len(15, "abc").bytes, ProtobufErrorKind::kBadPackedLength, "fixed[]", 0},
      {Wire().Len(7, "\xc3\x28").bytes, ProtobufErrorKind::kInvalidUtf8, "text", 0},
      {Wire().Len(18, Wire().Len(1, Wire().Len(1, "\xff").bytes).bytes).bytes,
       ProtobufErrorKind::kInvalidUtf8, "attrs", 5},
      // A oneof member the wire replaces is still checked.
      {Wire().Len(9, std::string("\0\1", 2)).Len(7, "u").bytes,
       ProtobufErrorKind::kBadFieldNumber, "sub", 2},
      {Wire().Len(3, Wire().Len(1, "\xff").bytes).bytes, ProtobufErrorKind::kInvalidUtf8,
       "inner.name", 2},
      {Wire().Len(16, "ok").Tag(16, 2).Varint(1000000000).bytes,
       ProtobufErrorKind::kTruncated, "names[]", 5},
      {Wire().Len(10, Wire().Tag(1, 0).Varint(uint64_t{1} << 62).bytes).bytes,
       ProtobufErrorKind::kOutOfRange, "at", 2},
      // A Struct entry that a later entry of the same key replaces is still checked
      // (found by protobuf_fuzzer).
      {repeated_key, ProtobufErrorKind::kTruncated, "attrs", 10},
      {Wire().Len(5, Wire().Len(1, "k").Tag(2, 0).bytes).bytes,
       ProtobufErrorKind::kTruncated, "counts{}", 6},
      {Wire().Len(5, Wire().Len(1, "k").Tag(2, 1).Raw("12345678").bytes).bytes,
       ProtobufErrorKind::kWrongWireType, "counts{}", 5},
  };
  std::string good = f.Encode(
      "color: GREEN inner { name: 'x' xs: [1] } counts { key: 'a' "
      "value: 1 } names: ['n'] at { seconds: 1 }");
  for (const Case& c : cases) {
    ASSERT_OK(f.decoder->Append(good));
    ASSERT_TRUE(f.reference->Append(good));
    Status st = f.decoder->Append(c.body);
    EXPECT_EQ(st.code(), StatusCode::kParseError) << c.field;
    EXPECT_EQ(f.decoder->last_error().kind, c.kind)
        << st.ToString() << " expected " << ProtobufErrorKindName(c.kind);
    EXPECT_EQ(f.decoder->last_error().field, c.field) << st.ToString();
    EXPECT_EQ(f.decoder->last_error().offset, c.offset) << st.ToString();
    EXPECT_NE(st.message().find(std::string(ProtobufErrorKindName(c.kind))),
              std::string::npos)
        << st.ToString();
  }
  EXPECT_EQ(f.decoder->num_rows(), static_cast<int64_t>(cases.size()));
  ASSERT_OK_AND_ASSIGN(auto batch, f.decoder->Finish());
  ASSERT_TRUE(batch->ValidateFull().ok()) << batch->ValidateFull().ToString();
  auto expected = f.reference->Finish();
  EXPECT_TRUE(batch->Equals(*expected)) << batch->ToString();
}

// libprotobuf parses every entry of a map, so a Struct entry whose key comes again later
// must be well-formed even though the JSON text keeps the later value only.
TEST(ProtobufDecoderTest, StructEntryReplacedByARepeatedKeyIsStillChecked) {
  Fixture f = Make(kRich, {1});
  auto body = [](std::string_view first_value) {
    return Wire()
        .Len(18, Wire()
                     .Len(1, Wire().Len(1, "k").Len(2, first_value).bytes)
                     .Len(1, Wire().Len(1, "k").Len(2, Wire().Len(3, "ok").bytes).bytes)
                     .bytes)
        .bytes;
  };
  std::string bad = body(Wire().Tag(3, 2).Varint(5).Raw("x").bytes);
  std::unique_ptr<google::protobuf::Message> probe(f.reference->NewMessage());
  EXPECT_FALSE(probe->ParsePartialFromString(bad));
  EXPECT_EQ(f.decoder->Append(bad).code(), StatusCode::kParseError);
  EXPECT_EQ(f.decoder->last_error().kind, ProtobufErrorKind::kTruncated);
  EXPECT_EQ(f.decoder->last_error().field, "attrs");

  std::string good = body(Wire().Len(3, "first").bytes);
  ASSERT_TRUE(probe->ParsePartialFromString(good));
  ASSERT_OK(f.decoder->Append(good));
  ASSERT_OK_AND_ASSIGN(auto batch, f.decoder->Finish());
  ASSERT_EQ(batch->num_rows(), 1);
  auto attrs = batch->GetColumnByName("attrs");
  ASSERT_NE(attrs, nullptr);
  EXPECT_EQ(attrs->GetScalar(0).ValueOrDie()->ToString(), R"({"k":"ok"})");
}

TEST(ProtobufDecoderTest, ErrorMessagesNameFieldAndByte) {
  Fixture f = Make(kRich, {1});
  EXPECT_STATUS(f.decoder->Append(Wire().Len(3, Wire().Len(1, "\xff").bytes).bytes),
                StatusCode::kParseError,
                "Protobuf message: field 'inner.name' at byte 2: a string that is not "
                "UTF-8 (INVALID_UTF8)");
}

// Inside a null struct, a not-null field holds no null (Parquet writers check that).
TEST(ProtobufDecoderTest, NullStructsHoldNoNullsInNotNullFields) {
  Fixture f = Make(R"(
syntax = "proto3";
message Leaf { int32 n = 1; optional int32 o = 2; }
message Mid { Leaf leaf = 1; string s = 2; }
message Top { Mid mid = 1; }
)",
                   {2});
  auto batch = DecodeChecked(f, {"", "mid { s: 'x' }"});
  ExpectColumn(*batch, "mid", R"([null, {"leaf": null, "s": "x"}])");
  auto mid = std::static_pointer_cast<arrow::StructArray>(batch->column(0));
  EXPECT_EQ(mid->field(1)->null_count(), 0);  // s
  auto leaf = std::static_pointer_cast<arrow::StructArray>(mid->field(0));
  EXPECT_EQ(leaf->null_count(), 2);
  EXPECT_EQ(leaf->field(0)->null_count(), 0);  // n
  EXPECT_EQ(leaf->field(1)->null_count(), 2);  // o
}

TEST(ProtobufDecoderTest, NestedIndexSelectsTheMessage) {
  Fixture f = Make(R"(
syntax = "proto3";
message Outer { int32 a = 1; message Mid { message Leaf { string leaf = 1; } } }
message Other { int32 b = 1; message Deep { int64 deep = 1; } }
)",
                   {1, 0});
  EXPECT_EQ(f.plan->message_name(), "Other.Deep");
  auto batch = DecodeChecked(f, {"deep: 42"});
  ExpectColumn(*batch, "deep", "[42]");
}

// --- random messages: the decoder equals DynamicMessage + reflection -----------------

void Fill(google::protobuf::Message* m, std::mt19937* rng, int depth);

void FillValue(google::protobuf::Message* m, const google::protobuf::FieldDescriptor* f,
               std::mt19937* rng, int depth) {
  using FD = google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* r = m->GetReflection();
  std::uniform_int_distribution<int64_t> any64;
  std::uniform_int_distribution<int> small(0, 3);
  const bool rep = f->is_repeated();
  auto pick_string = [&] {
    static const char* kStrings[] = {"",     "a",    "héllo",
                                     "日本", "\x7f", "longer text value"};
    return std::string(kStrings[(*rng)() % 6]);
  };
  switch (f->cpp_type()) {
#define KELT_FILL(CPP, SET, ADD, EXPR) \
  case FD::CPP: {                      \
    auto v = EXPR;                     \
    if (rep) {                         \
      r->ADD(m, f, v);                 \
    } else {                           \
      r->SET(m, f, v);                 \
    }                                  \
    break;                             \
  }
    KELT_FILL(CPPTYPE_INT32, SetInt32, AddInt32,
              static_cast<int32_t>(any64(*rng) >> small(*rng) * 10))
    KELT_FILL(CPPTYPE_INT64, SetInt64, AddInt64, any64(*rng) >> small(*rng) * 20)
    KELT_FILL(CPPTYPE_UINT32, SetUInt32, AddUInt32, static_cast<uint32_t>(any64(*rng)))
    KELT_FILL(CPPTYPE_UINT64, SetUInt64, AddUInt64, static_cast<uint64_t>(any64(*rng)))
    KELT_FILL(CPPTYPE_FLOAT, SetFloat, AddFloat,
              static_cast<float>(any64(*rng) % 1000) / 8)
    KELT_FILL(CPPTYPE_DOUBLE, SetDouble, AddDouble, static_cast<double>(any64(*rng)) / 3)
    KELT_FILL(CPPTYPE_BOOL, SetBool, AddBool, ((*rng)() & 1) == 1)
    KELT_FILL(CPPTYPE_STRING, SetString, AddString, pick_string())
#undef KELT_FILL
    case FD::CPPTYPE_ENUM: {
      const google::protobuf::EnumDescriptor* e = f->enum_type();
      int number = e->value(static_cast<int>((*rng)() % e->value_count()))->number();
      if (rep) {
        r->AddEnumValue(m, f, number);
      } else {
        r->SetEnumValue(m, f, number);
      }
      break;
    }
    case FD::CPPTYPE_MESSAGE: {
      google::protobuf::Message* sub =
          rep ? r->AddMessage(m, f) : r->MutableMessage(m, f);
      const std::string& name = f->message_type()->full_name();
      if (name == "google.protobuf.Timestamp" || name == "google.protobuf.Duration") {
        const auto* d = sub->GetDescriptor();
        sub->GetReflection()->SetInt64(sub, d->FindFieldByNumber(1),
                                       any64(*rng) % 4000000000LL);
        sub->GetReflection()->SetInt32(sub, d->FindFieldByNumber(2),
                                       static_cast<int32_t>((*rng)() % 1000000000));
      } else {
        Fill(sub, rng, depth + 1);
      }
      break;
    }
  }
}

void Fill(google::protobuf::Message* m, std::mt19937* rng, int depth) {
  const google::protobuf::Descriptor* d = m->GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    if ((*rng)() % 3 == 0) continue;  // absent
    if (depth > 3 &&
        f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
      continue;  // Struct and Value nest without end
    }
    if (f->is_map()) {
      // One entry at most: reflection lists a parsed map in hash order.
      if ((*rng)() % 2) FillValue(m, f, rng, depth);
    } else if (f->is_repeated()) {
      int n = static_cast<int>((*rng)() % 4);
      for (int k = 0; k < n; ++k) FillValue(m, f, rng, depth);
    } else {
      FillValue(m, f, rng, depth);
    }
  }
}

TEST(ProtobufDecoderTest, RandomMessagesEqualDynamicMessage) {
  for (auto [proto, index] : {std::pair(kScalars, 0), std::pair(kRich, 1)}) {
    Fixture f = Make(proto, {index});
    std::mt19937 rng(14);
    std::string all;
    for (int batch = 0; batch < 5; ++batch) {
      for (int i = 0; i < 200; ++i) {
        std::unique_ptr<google::protobuf::Message> m(f.reference->NewMessage());
        Fill(m.get(), &rng, 0);
        std::string bytes = m->SerializeAsString();
        ASSERT_OK(f.decoder->Append(bytes)) << m->DebugString();
        ASSERT_TRUE(f.reference->Append(bytes));
      }
      ASSERT_OK_AND_ASSIGN(auto got, f.decoder->Finish());
      auto expected = f.reference->Finish();
      ASSERT_TRUE(got->ValidateFull().ok()) << got->ValidateFull().ToString();
      ASSERT_TRUE(got->Equals(*expected)) << "batch " << batch;
    }
  }
}

// --- the encoder: what the decoder lands encodes back to the same values --------------

// Decode `texts`, encode the batch, decode the bodies again: the same batch, and bodies
// that libprotobuf parses into the messages the texts describe.
void ExpectRoundTrip(std::string_view proto, std::vector<int32_t> indexes,
                     const std::vector<std::string>& texts) {
  Fixture f = Make(proto, indexes);
  auto batch = DecodeChecked(f, texts);
  auto schema = ProtobufSchema::Parse(proto);
  ASSERT_OK(schema.status());
  ASSERT_OK_AND_ASSIGN(auto encoder,
                       ProtobufEncoder::Make(*schema, indexes, batch->schema()));
  EXPECT_EQ(encoder->message_name(), f.plan->message_name());
  std::vector<std::string> bodies;
  ASSERT_OK(encoder->Encode(*batch, &bodies));
  ASSERT_EQ(bodies.size(), texts.size());
  for (size_t i = 0; i < bodies.size(); ++i) {
    ASSERT_OK(f.decoder->Append(bodies[i]));
    std::unique_ptr<google::protobuf::Message> want(f.reference->NewMessage());
    std::unique_ptr<google::protobuf::Message> got(f.reference->NewMessage());
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(texts[i], want.get()));
    ASSERT_TRUE(got->ParseFromString(bodies[i]));
    // Text and body agree field by field (maps of one entry: no order to differ in).
    EXPECT_EQ(got->DebugString(), want->DebugString()) << texts[i];
  }
  auto again = f.decoder->Finish().ValueOrDie();
  EXPECT_TRUE(again->Equals(*batch)) << "got\n"
                                     << again->ToString() << "expected\n"
                                     << batch->ToString();
}

TEST(ProtobufEncoderTest, ScalarsRoundTrip) {
  ExpectRoundTrip(
      kScalars, {},
      {"i32: -5 s32: -6 sf32: -7 i64: -8000000000 s64: -9 sf64: -10 u32: 4000000000 "
       "f32: 4000000001 u64: 18000000000000000000 f64: 18000000000000000001 fl: 1.5 "
       "db: -2.25 b: true s: 'héllo' by: '\\x00\\xff' opt: 0",
       "opt: 7", ""});
}

TEST(ProtobufEncoderTest, MessagesListsMapsOneofsAndWellKnownTypesRoundTrip) {
  ExpectRoundTrip(
      kRich, {1},
      {R"(color: BLUE colors: [GREEN, RED] inner { name: "a" n: 1 xs: [1, 2] }
          inners { name: "b" } inners { n: 3 }
          counts { key: "k" value: 7 } by_id { key: 4 value { name: "c" } }
          text: "t" at { seconds: 1700000000 nanos: 5 } took { seconds: -2 nanos: -1 }
          maybe_int { value: 0 } maybe_text { value: "w" }
          packed: [-1, 2, -3] fixed: [7, 8] names: ["x", "y"] maybe_bool {}
          attrs { fields { key: "a" value { number_value: 1.5 } } }
          any { string_value: "s" })",
       R"(number: 9 at { seconds: -1 nanos: 999999999 })", R"(sub { name: "s" })", ""});
}

TEST(ProtobufEncoderTest, ColumnsOfOtherTypesEncodeTheirFields) {
  constexpr std::string_view kProto = R"(
syntax = "proto3";
import "google/protobuf/timestamp.proto";
enum Color { RED = 0; GREEN = 1; }
message M {
  int32 small = 1; uint64 big = 2; double d = 3; Color c = 4; Color c2 = 5;
  google.protobuf.Timestamp at = 6; repeated string tags = 7;
}
)";
  ASSERT_OK_AND_ASSIGN(auto schema, ProtobufSchema::Parse(kProto));
  auto columns = arrow::schema(
      {arrow::field("small", arrow::int64()), arrow::field("big", arrow::int16()),
       arrow::field("d", arrow::int32()), arrow::field("c", arrow::utf8()),
       arrow::field("c2", arrow::int64()),
       arrow::field("at", arrow::timestamp(arrow::TimeUnit::MILLI)),
       arrow::field("tags", arrow::list(arrow::utf8()))});
  auto batch = arrow::RecordBatch::Make(
      columns, 2,
      {*arrow::json::ArrayFromJSONString(arrow::int64(), "[5, -3]"),
       *arrow::json::ArrayFromJSONString(arrow::int16(), "[7, null]"),
       *arrow::json::ArrayFromJSONString(arrow::int32(), "[2, 0]"),
       *arrow::json::ArrayFromJSONString(arrow::utf8(), R"(["GREEN", "9"])"),
       *arrow::json::ArrayFromJSONString(arrow::int64(), "[1, 0]"),
       *arrow::json::ArrayFromJSONString(arrow::timestamp(arrow::TimeUnit::MILLI),
                                         "[-1, 1500]"),
       *arrow::json::ArrayFromJSONString(arrow::list(arrow::utf8()),
                                         R"([["a"], null])")});
  ASSERT_OK_AND_ASSIGN(auto encoder, ProtobufEncoder::Make(schema, {}, columns));
  std::vector<std::string> bodies;
  ASSERT_OK(encoder->Encode(*batch, &bodies));
  ASSERT_EQ(bodies.size(), 2u);
  Fixture f = Make(kProto);
  ASSERT_OK(f.decoder->Append(bodies[0]));
  ASSERT_OK(f.decoder->Append(bodies[1]));
  auto got = f.decoder->Finish().ValueOrDie();
  ExpectColumn(*got, "small", "[5, -3]");
  ExpectColumn(*got, "big", "[7, 0]");
  ExpectColumn(*got, "d", "[2, 0]");
  // Enums land as indexes into the value names (RED, GREEN, then unknown numbers).
  auto c2 = std::static_pointer_cast<arrow::DictionaryArray>(got->GetColumnByName("c2"));
  EXPECT_EQ(c2->indices()->ToString(), "[\n  1,\n  0\n]");
  ExpectColumn(*got, "at", "[-1000000, 1500000000]");
  ExpectColumn(*got, "tags", R"([["a"], []])");
  auto c = got->GetColumnByName("c");
  auto dict = std::static_pointer_cast<arrow::DictionaryArray>(c);
  EXPECT_EQ(dict->dictionary()->ToString(),
            arrow::json::ArrayFromJSONString(arrow::utf8(), R"(["RED", "GREEN", "9"])")
                .ValueOrDie()
                ->ToString());
}

TEST(ProtobufEncoderTest, BadColumnsAndValuesAreNamed) {
  ASSERT_OK_AND_ASSIGN(auto schema, ProtobufSchema::Parse(kScalars));
  auto extra = ProtobufEncoder::Make(
      schema, {}, arrow::schema({arrow::field("nope", arrow::int32())}));
  EXPECT_EQ(extra.status().code(), StatusCode::kTypeError);
  EXPECT_EQ(extra.status().message(), "column 'nope': message S has no field 'nope'");
  auto wrong = ProtobufEncoder::Make(schema, {},
                                     arrow::schema({arrow::field("b", arrow::utf8())}));
  EXPECT_NE(wrong.status().message().find("column 'b' (string) cannot encode field S.b"),
            std::string::npos)
      << wrong.status().message();

  auto columns = arrow::schema({arrow::field("i32", arrow::int64())});
  ASSERT_OK_AND_ASSIGN(auto encoder, ProtobufEncoder::Make(schema, {}, columns));
  auto batch = arrow::RecordBatch::Make(
      columns, 2, {*arrow::json::ArrayFromJSONString(arrow::int64(), "[1, 3000000000]")});
  std::vector<std::string> bodies;
  Status st = encoder->Encode(*batch, &bodies);
  EXPECT_EQ(st.code(), StatusCode::kTypeError);
  EXPECT_EQ(st.message(),
            "column 'i32', row 1: 3000000000 is out of range for a 32-bit field "
            "(field S.i32)");
  EXPECT_EQ(bodies.size(), 1u);
}

}  // namespace
}  // namespace kelt
