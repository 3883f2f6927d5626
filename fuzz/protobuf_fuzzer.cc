// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz the Protobuf decoder against libprotobuf on the same bytes, for one schema with
// every kind of field: each input is one message body, parsed into a DynamicMessage
// (ParsePartial) whose reflection appends it into the same Arrow columns
// (protobuf/reflection_testing.h), and appended by kelt's ProtobufDecoder (after a known
// good message, so a failure must leave no trace).
//
// Invariants (a failure prints why and aborts):
//   - kelt accepts ⇒ libprotobuf accepts, and the rows are equal (floats bit for bit,
//     enums' unknown numbers as their text);
//   - libprotobuf rejects ⇒ kelt rejects;
//   - kelt rejects what libprotobuf accepts only for what kelt checks and libprotobuf
//     does not: a known field with a wire type it cannot have (libprotobuf keeps it as an
//     unknown field), a Timestamp/Duration beyond int64 nanoseconds, a group deeper than
//     kelt's limit, a tag beyond 32 bits (libprotobuf truncates it to a field number),
//     Struct/Value nesting beyond 100 (libprotobuf counts its depth otherwise);
//   - the batch is valid, and its first row is the good message, untouched.
// Maps are left out: libprotobuf keeps a map's last duplicate key in hash order, kelt
// every entry in wire order (README.md), so rows would differ by design.
#include <arrow/api.h>
#include <google/protobuf/text_format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "kelt/protobuf.h"
#include "kelt/protobuf/reflection_testing.h"

namespace {

constexpr const char* kSchema = R"(
syntax = "proto3";
package fuzz;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
enum E { A = 0; B = 1; C = 5; }
message Sub { int32 x = 1; repeated string tags = 2; optional bytes raw = 3; }
message Fz {
  int32 i32 = 1; sint32 s32 = 2; sfixed32 sf32 = 3; int64 i64 = 4; sint64 s64 = 5;
  sfixed64 sf64 = 6; uint32 u32 = 7; fixed32 f32 = 8; uint64 u64 = 9; fixed64 f64 = 10;
  float fl = 11; double db = 12; bool b = 13; string s = 14; bytes by = 15;
  optional int32 opt = 16; E e = 17; repeated E es = 18; Sub sub = 19;
  repeated Sub subs = 20; repeated int64 packed = 21; repeated double ds = 22;
  oneof pick { string ps = 23; Sub psub = 24; int32 pi = 25; }
  google.protobuf.Timestamp at = 26; google.protobuf.Duration took = 27;
  google.protobuf.Int64Value wi = 28; google.protobuf.StringValue ws = 29;
  google.protobuf.Struct st = 30; repeated google.protobuf.Value vs = 31;
}
)";

constexpr const char* kGood = R"(i32: 1 s: "good" e: C es: [A, B] sub { x: 2 tags: ["t"] }
  packed: [1, 2] ps: "p" at { seconds: 5 } wi { value: 3 })";

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "protobuf_fuzzer: %s\n", why.c_str());
  std::abort();
}

void Check(bool ok, const std::string& why) {
  if (!ok) Die(why);
}

struct Target {
  std::shared_ptr<const kelt::ProtobufPlan> plan;
  std::string good;
};

const Target& GetTarget() {
  static const Target target = [] {
    Target t;
    google::protobuf::SetLogHandler(nullptr);  // the reference's UTF-8 complaints
    auto schema = kelt::ProtobufSchema::Parse(kSchema);
    Check(schema.ok(), "schema: " + schema.status().ToString());
    auto plan = kelt::ProtobufPlan::Compile(*schema, {1});
    Check(plan.ok(), "plan: " + plan.status().ToString());
    t.plan = *plan;
    kelt::protobuf::ReflectionReference reference(t.plan);
    std::unique_ptr<google::protobuf::Message> m(reference.NewMessage());
    Check(google::protobuf::TextFormat::ParseFromString(kGood, m.get()), "good message");
    t.good = m->SerializeAsString();
    return t;
  }();
  return target;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Target& target = GetTarget();
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto decoder = kelt::ProtobufDecoder::Make(target.plan).ValueOrDie();
  kelt::protobuf::ReflectionReference reference(target.plan);
  Check(decoder->Append(target.good).ok(), "the good message fails");
  Check(reference.Append(target.good), "libprotobuf rejects the good message");
  kelt::Status st = decoder->Append(body);
  std::unique_ptr<google::protobuf::Message> probe(reference.NewMessage());
  const bool libprotobuf_ok = probe->ParsePartialFromArray(data, static_cast<int>(size));
  if (st.ok()) {
    Check(libprotobuf_ok, "kelt accepts what libprotobuf rejects");
    Check(reference.Append(body), "reference");
  } else {
    kelt::ProtobufErrorKind kind = decoder->last_error().kind;
    if (libprotobuf_ok) {
      Check(kind == kelt::ProtobufErrorKind::kWrongWireType ||
                kind == kelt::ProtobufErrorKind::kOutOfRange ||
                kind == kelt::ProtobufErrorKind::kBadGroup ||
                kind == kelt::ProtobufErrorKind::kBadFieldNumber ||
                kind == kelt::ProtobufErrorKind::kTooDeep,
            "kelt rejects what libprotobuf accepts: " + st.ToString());
    }
  }
  auto batch = decoder->Finish();
  Check(batch.ok(), "Finish: " + batch.status().ToString());
  Check((*batch)->ValidateFull().ok(),
        "invalid batch: " + (*batch)->ValidateFull().ToString());
  auto expected = reference.Finish();
  Check((*batch)->Equals(*expected, arrow::EqualOptions().nans_equal(true)),
        "rows differ:\n" + (*batch)->ToString() + "expected\n" + expected->ToString());
  return 0;
}
