// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz the Avro decoder against Apache Avro C on the same bytes, for one schema with
// every kind of type: each input is one record body, read by avro_value_read and by
// kelt's AvroDecoder (appended after a known good record, so a failure must rewind).
//
// Invariants (a failure prints why and aborts):
//   - kelt accepts  ⇒ Avro C accepts, consumed every byte, and the values agree (floats
//     bit for bit; a map as Avro C holds it: keys up to their first NUL, the last value
//     of a repeated key in the place of its first);
//   - kelt rejects a malformed encoding (truncated, varint too long, int out of range,
//     negative length, impossible block count) ⇒ Avro C rejects;
//   - kelt rejects trailing bytes ⇒ Avro C accepted and left bytes unread;
//   - kelt rejects what Avro C does not check or cannot see (a boolean byte other than
//     0/1, a string or map key that is not UTF-8, an enum or union index outside the
//     writer's, which Avro C truncates to an int, a decimal beyond its precision) ⇒ the
//     bytes at the offset kelt reports hold that fault (decoded here independently);
//   - so Avro C accepting a record kelt rejects is only ever one of those faults;
//   - the batch is valid, and its first row is the good record, untouched.
#include <arrow/api.h>
#include <arrow/util/basic_decimal.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kelt/avro.h"
#include "kelt/avro/avro_c_testing.h"

namespace {

constexpr const char* kSchema = R"({"type": "record", "name": "Fz", "namespace": "fuzz",
  "fields": [
    {"name": "b", "type": "boolean"},
    {"name": "i", "type": "int"},
    {"name": "l", "type": "long"},
    {"name": "f", "type": "float"},
    {"name": "d", "type": "double"},
    {"name": "by", "type": "bytes"},
    {"name": "s", "type": "string"},
    {"name": "fx", "type": {"type": "fixed", "name": "F3", "size": 3}},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}},
    {"name": "sub", "type": {"type": "record", "name": "Sub", "fields": [
      {"name": "x", "type": "int"}, {"name": "tags", "type": {"type": "array", "items": "string"}}]}},
    {"name": "arr", "type": {"type": "array", "items": "long"}},
    {"name": "m", "type": {"type": "map", "values": "string"}},
    {"name": "opt", "type": ["null", "string"]},
    {"name": "u", "type": ["null", "int", "string", "Sub"]},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "nested", "type": {"type": "array", "items": {"type": "map", "values": ["null", "double"]}}}
  ]})";

constexpr const char* kGood =
    R"({"b": true, "i": 1, "l": 2, "f": 1.5, "d": 2.5, "by": "ab",
  "s": "s", "fx": "xyz", "e": "B", "sub": {"x": 3, "tags": ["t"]}, "arr": [1, 2],
  "m": {"k": "v"}, "opt": null, "u": {"int": 7}, "dec": "\u0001", "nested": [{"n": null}]})";

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "avro_fuzzer: %s\n", why.c_str());
  std::abort();
}

void Check(bool ok, const std::string& why) {
  if (!ok) Die(why);
}

// Avro C allocates a string's length before reading it, and leaks that buffer when the
// read then fails. So that a hostile length is an allocation failure (a rejection) and
// neither an out-of-memory crash nor a big leak per input, a new allocation may not be
// much larger than the input (16x, at least 4 KiB: Avro C's map tables outgrow their
// input); growing an existing one is bounded by what was actually read.
size_t g_new_allocation_limit = SIZE_MAX;

void* BoundedAllocator(void* /*user_data*/, void* ptr, size_t /*osize*/, size_t nsize) {
  if (nsize == 0) {
    std::free(ptr);  // NOLINT(cppcoreguidelines-no-malloc): Avro C's allocator contract
    return nullptr;
  }
  if (ptr == nullptr && nsize > g_new_allocation_limit) return nullptr;
  return std::realloc(ptr, nsize);  // NOLINT(cppcoreguidelines-no-malloc)
}

// The two's complement big-endian bytes fit 9 decimal digits.
bool DecimalFits(const uint8_t* s, size_t n) {
  if (n == 0) return true;
  const uint8_t sign = (s[0] & 0x80) ? 0xFF : 0x00;
  size_t start = 0;
  while (start + 8 < n) {  // leading sign bytes
    if (s[start] != sign) return false;
    ++start;
  }
  if (start > 0 && ((s[start] & 0x80) ? 0xFF : 0x00) != sign) return false;
  int64_t v = (sign == 0xFF) ? -1 : 0;
  for (size_t i = start; i < n; ++i)
    v = static_cast<int64_t>(static_cast<uint64_t>(v) << 8) | s[i];
  return v > -1000000000 && v < 1000000000;
}

bool ValidUtf8(const char* s, size_t n) { return simdjson::validate_utf8(s, n); }

// The zigzag varint at `*pos` (at most 10 bytes), independently of kelt's reader.
bool Varint(std::string_view body, size_t* pos, int64_t* out) {
  uint64_t v = 0;
  for (int k = 0; k < 10 && *pos < body.size(); ++k) {
    const auto b = static_cast<uint8_t>(body[(*pos)++]);
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * k);
    if (b < 0x80) {
      *out = static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
      return true;
    }
  }
  return false;
}

// The length-prefixed bytes at `offset`.
bool Blob(std::string_view body, size_t offset, std::string_view* out) {
  int64_t n = 0;
  if (!Varint(body, &offset, &n) || n < 0 ||
      static_cast<uint64_t>(n) > body.size() - offset) {
    return false;
  }
  *out = body.substr(offset, static_cast<size_t>(n));
  return true;
}

// What kelt refuses and Avro C does not check (or cannot see: it truncates enum and
// union indexes to an int, and keeps map keys up to their first NUL) is checked against
// the bytes at the offset kelt reports.
bool ViolationAt(const kelt::AvroDecodeError& e, std::string_view body) {
  using K = kelt::AvroErrorKind;
  size_t pos = static_cast<size_t>(e.offset);
  if (pos >= body.size()) return false;
  std::string_view blob;
  int64_t v = 0;
  switch (e.kind) {
    case K::kBadBoolean:
      return static_cast<uint8_t>(body[pos]) > 1;
    case K::kInvalidUtf8:
      return Blob(body, pos, &blob) && !ValidUtf8(blob.data(), blob.size());
    case K::kDecimalOverflow:
      return e.field == "dec" && Blob(body, pos, &blob) &&
             !DecimalFits(reinterpret_cast<const uint8_t*>(blob.data()), blob.size());
    case K::kBadEnumIndex:
      return e.field == "e" && Varint(body, &pos, &v) && (v < 0 || v > 2);
    case K::kBadUnionIndex: {
      const int64_t branches = e.field == "u" ? 4 : 2;  // opt, nested[]{}: [null, T]
      return Varint(body, &pos, &v) && (v < 0 || v >= branches);
    }
    default:
      return false;
  }
}

// Avro C's value equals element `i` of `a` (the same schema on both sides).
void Compare(avro_value_t* v, const arrow::Array& a, int64_t i, const std::string& path) {
  auto where = [&](const std::string& what) { return path + ": " + what; };
  switch (avro_value_get_type(v)) {
    case AVRO_NULL:
      Check(a.IsNull(i), where("null expected"));
      return;
    case AVRO_BOOLEAN: {
      int b = 0;
      avro_value_get_boolean(v, &b);
      Check(static_cast<const arrow::BooleanArray&>(a).Value(i) == (b != 0),
            where("bool"));
      return;
    }
    case AVRO_INT32: {
      int32_t x = 0;
      avro_value_get_int(v, &x);
      Check(static_cast<const arrow::Int32Array&>(a).Value(i) == x, where("int"));
      return;
    }
    case AVRO_INT64: {
      int64_t x = 0;
      avro_value_get_long(v, &x);
      Check(static_cast<const arrow::Int64Array&>(a).Value(i) == x, where("long"));
      return;
    }
    case AVRO_FLOAT: {
      float x = 0;
      avro_value_get_float(v, &x);
      const float y = static_cast<const arrow::FloatArray&>(a).Value(i);
      Check(std::memcmp(&x, &y, 4) == 0, where("float"));
      return;
    }
    case AVRO_DOUBLE: {
      double x = 0;
      avro_value_get_double(v, &x);
      const double y = static_cast<const arrow::DoubleArray&>(a).Value(i);
      Check(std::memcmp(&x, &y, 8) == 0, where("double"));
      return;
    }
    case AVRO_STRING: {
      const char* s = nullptr;
      size_t n = 0;
      avro_value_get_string(v, &s, &n);
      Check(static_cast<const arrow::StringArray&>(a).GetView(i) ==
                std::string_view(s, n - 1),
            where("string"));
      return;
    }
    case AVRO_BYTES: {
      const void* p = nullptr;
      size_t n = 0;
      avro_value_get_bytes(v, &p, &n);
      if (a.type_id() == arrow::Type::DECIMAL128) {
        const auto* s = static_cast<const uint8_t*>(p);
        uint8_t le[16];
        const uint8_t sign = n > 0 && (s[0] & 0x80) ? 0xFF : 0x00;
        std::memset(le, sign, 16);
        for (size_t k = 0; k < n && k < 16; ++k) le[k] = s[n - 1 - k];
        Check(std::memcmp(static_cast<const arrow::Decimal128Array&>(a).GetValue(i), le,
                          16) == 0,
              where("decimal"));
        return;
      }
      Check(static_cast<const arrow::BinaryArray&>(a).GetView(i) ==
                std::string_view(static_cast<const char*>(p), n),
            where("bytes"));
      return;
    }
    case AVRO_FIXED: {
      const void* p = nullptr;
      size_t n = 0;
      avro_value_get_fixed(v, &p, &n);
      Check(static_cast<const arrow::FixedSizeBinaryArray&>(a).GetView(i) ==
                std::string_view(static_cast<const char*>(p), n),
            where("fixed"));
      return;
    }
    case AVRO_ENUM: {
      int e = 0;
      avro_value_get_enum(v, &e);
      Check(static_cast<const arrow::DictionaryArray&>(a).GetValueIndex(i) == e,
            where("enum"));
      return;
    }
    case AVRO_RECORD: {
      const auto& s = static_cast<const arrow::StructArray&>(a);
      Check(s.IsValid(i), where("record is null"));
      size_t n = 0;
      avro_value_get_size(v, &n);
      Check(static_cast<int>(n) == s.num_fields(), where("field count"));
      for (size_t k = 0; k < n; ++k) {
        avro_value_t child;
        const char* name = nullptr;
        avro_value_get_by_index(v, k, &child, &name);
        Compare(&child, *s.field(static_cast<int>(k)), i, path + "." + name);
      }
      return;
    }
    case AVRO_ARRAY: {
      const auto& l = static_cast<const arrow::ListArray&>(a);
      size_t n = 0;
      avro_value_get_size(v, &n);
      Check(l.value_length(i) == static_cast<int64_t>(n), where("array length"));
      for (size_t k = 0; k < n; ++k) {
        avro_value_t child;
        avro_value_get_by_index(v, k, &child, nullptr);
        Compare(&child, *l.values(), l.value_offset(i) + static_cast<int64_t>(k),
                path + "[]");
      }
      return;
    }
    case AVRO_MAP: {
      // Avro C keeps a repeated key once (first place, last value) and a key up to its
      // first NUL (its keys are C strings).
      const auto& m = static_cast<const arrow::MapArray&>(a);
      const auto& keys = static_cast<const arrow::StringArray&>(*m.keys());
      std::vector<std::string> order;
      std::map<std::string, int64_t> last;
      for (int64_t k = m.value_offset(i); k < m.value_offset(i + 1); ++k) {
        std::string key(keys.GetView(k));
        key = key.substr(0, key.find('\0'));
        if (!last.count(key)) order.push_back(key);
        last[key] = k;
      }
      size_t n = 0;
      avro_value_get_size(v, &n);
      Check(n == order.size(), where("map size"));
      for (size_t k = 0; k < n; ++k) {
        avro_value_t child;
        const char* key = nullptr;
        avro_value_get_by_index(v, k, &child, &key);
        Check(order[k] == key, where("map key"));
        Compare(&child, *m.items(), last[order[k]], path + "{}");
      }
      return;
    }
    case AVRO_UNION: {
      int d = 0;
      avro_value_get_discriminant(v, &d);
      avro_value_t branch;
      avro_value_get_current_branch(v, &branch);
      if (a.type_id() == arrow::Type::DENSE_UNION) {
        const auto& u = static_cast<const arrow::DenseUnionArray&>(a);
        Check(u.type_code(i) == d, where("union branch"));
        Compare(&branch, *u.field(d), u.value_offset(i), path);
        return;
      }
      // [null, T] lands as a nullable T.
      if (d == 0) {
        Check(a.IsNull(i), where("null expected"));
      } else {
        Check(a.IsValid(i), where("value expected"));
        Compare(&branch, a, i, path);
      }
      return;
    }
    default:
      Die(where("unexpected Avro C type"));
  }
}

// Encodings Avro C refuses too (hostile lengths meet BoundedAllocator).
bool Malformed(kelt::AvroErrorKind k) {
  using K = kelt::AvroErrorKind;
  return k == K::kTruncated || k == K::kVarintTooLong || k == K::kIntOutOfRange ||
         k == K::kNegativeLength || k == K::kBadBlockCount;
}

struct State {
  std::shared_ptr<const kelt::AvroPlan> plan;
  std::unique_ptr<kelt::AvroDecoder> decoder;
  std::unique_ptr<kelt::avro::testing::AvroCValue> reference;
  std::string good;
  std::shared_ptr<arrow::RecordBatch> good_batch;
};

State& GetState() {
  static State* state = [] {
    avro_set_allocator(BoundedAllocator, nullptr);
    auto* s = new State();
    auto schema = kelt::AvroSchema::Parse(kSchema);
    Check(schema.ok(), "schema: " + schema.status().ToString());
    auto plan = kelt::AvroPlan::Compile(*schema, *schema);
    Check(plan.ok(), "plan: " + plan.status().ToString());
    s->plan = *plan;
    auto decoder = kelt::AvroDecoder::Make(s->plan);
    Check(decoder.ok(), "decoder");
    s->decoder = std::move(decoder).ValueOrDie();
    auto reference = kelt::avro::testing::AvroCValue::Make(kSchema);
    Check(reference.ok(), "Avro C schema: " + reference.status().ToString());
    s->reference = std::move(reference).ValueOrDie();
    auto good = s->reference->Encode(kGood);
    Check(good.ok(), "encode: " + good.status().ToString());
    s->good = *good;
    Check(s->decoder->Append(s->good).ok(), "the good record");
    auto batch = s->decoder->Finish();
    Check(batch.ok(), "finish");
    s->good_batch = *batch;
    return s;
  }();
  return *state;
}

}  // namespace

// Avro C 1.11 leaks on some inputs (a plain C program reading them into a fresh value
// leaks too); its leaks are not kelt's.
extern "C" const char* __lsan_default_suppressions() { return "leak:libavro.so\n"; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  State& st = GetState();
  const std::string_view body(reinterpret_cast<const char*>(data), size);

  bool trailing = false;
  g_new_allocation_limit = std::max<size_t>(4096, 16 * size);
  const kelt::Status ref = st.reference->Read(body, &trailing);
  g_new_allocation_limit = SIZE_MAX;
  Check(st.decoder->Append(st.good).ok(), "the good record");
  const kelt::Status got = st.decoder->Append(body);
  auto finished = st.decoder->Finish();
  Check(finished.ok(), "finish: " + finished.status().ToString());
  const std::shared_ptr<arrow::RecordBatch>& batch = *finished;
  Check(batch->ValidateFull().ok(), "invalid batch: " + batch->ValidateFull().ToString());
  Check(batch->num_rows() == (got.ok() ? 2 : 1), "rows after the record");
  Check(batch->Slice(0, 1)->Equals(*st.good_batch), "the good record changed");

  if (got.ok()) {
    Check(ref.ok(), "kelt accepted what Avro C rejects: " + ref.ToString());
    Check(!trailing, "kelt accepted a record Avro C left bytes of");
    for (int c = 0; c < batch->num_columns(); ++c) {
      avro_value_t field;
      const char* name = nullptr;
      avro_value_get_by_index(st.reference->value(), c, &field, &name);
      Compare(&field, *batch->column(c), 1, name);
    }
    return 0;
  }
  const kelt::AvroDecodeError& e = st.decoder->last_error();
  const std::string why = got.ToString();
  if (Malformed(e.kind)) {
    Check(!ref.ok(), "Avro C accepted what kelt rejects: " + why);
  } else if (e.kind == kelt::AvroErrorKind::kTrailingBytes) {
    Check(ref.ok() && trailing, "trailing bytes Avro C does not see: " + why);
  } else {
    Check(ViolationAt(e, body), "kelt rejects bytes that hold no such fault: " + why);
  }
  return 0;
}
