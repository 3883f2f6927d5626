// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Apache Avro C (Debian's libavro-dev) as the reference for the Avro decoder's tests,
// fuzz target and benchmark: RAII handles, and an encoder of values written as JSON.
// Header-only; for tests, fuzz/ and bench/ (link kelt::avro_c), never the library.
//
// Value JSON (Avro's JSON encoding, with unions spelled out):
//   record  {"field": value, ...}          map    {"key": value, ...}
//   array   [value, ...]                    enum   "SYMBOL"
//   union   null (its null branch) or {"<branch index or type name>": value}
//   bytes, fixed  a string whose code points 0-255 are the bytes ("\u00ff")
//   float, double a number, or "NaN", "Infinity", "-Infinity"
#pragma once

#include <avro.h>
#include <simdjson.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/status.h"

namespace kelt::avro::testing {

struct SchemaDeleter {
  void operator()(avro_obj_t* s) const { avro_schema_decref(s); }
};
using SchemaHandle = std::unique_ptr<avro_obj_t, SchemaDeleter>;

struct IfaceDeleter {
  void operator()(avro_value_iface_t* i) const { avro_value_iface_decref(i); }
};
using IfaceHandle = std::unique_ptr<avro_value_iface_t, IfaceDeleter>;

struct ReaderDeleter {
  void operator()(avro_reader_t_* r) const { avro_reader_free(r); }
};
using ReaderHandle = std::unique_ptr<avro_reader_t_, ReaderDeleter>;

struct WriterDeleter {
  void operator()(avro_writer_t_* w) const { avro_writer_free(w); }
};
using WriterHandle = std::unique_ptr<avro_writer_t_, WriterDeleter>;

/// A generic Avro C value of one schema (owns its schema, class and value).
class AvroCValue {
 public:
  static Result<std::unique_ptr<AvroCValue>> Make(std::string_view schema_json) {
    avro_schema_t schema = nullptr;
    if (avro_schema_from_json_length(schema_json.data(), schema_json.size(), &schema)) {
      return Status::Invalid(std::string("Avro C: ") + avro_strerror());
    }
    auto out = std::unique_ptr<AvroCValue>(new AvroCValue());
    out->schema_.reset(schema);
    out->iface_.reset(avro_generic_class_from_schema(schema));
    if (!out->iface_ || avro_generic_value_new(out->iface_.get(), &out->value_)) {
      return Status::Invalid(std::string("Avro C: ") + avro_strerror());
    }
    out->has_value_ = true;
    return out;
  }
  ~AvroCValue() {
    if (has_value_) avro_value_decref(&value_);
  }
  AvroCValue(const AvroCValue&) = delete;
  AvroCValue& operator=(const AvroCValue&) = delete;

  avro_value_t* value() { return &value_; }
  avro_schema_t schema() const { return schema_.get(); }

  /// Encode a value given as JSON (see the top of this file) to Avro binary.
  Result<std::string> Encode(std::string_view value_json) {
    simdjson::dom::parser parser;
    simdjson::dom::element e;
    if (parser.parse(value_json.data(), value_json.size()).get(e)) {
      return Status::Invalid("value JSON does not parse: " + std::string(value_json));
    }
    avro_value_reset(&value_);
    KELT_RETURN_NOT_OK(Fill(&value_, e, "value"));
    size_t size = 0;
    if (avro_value_sizeof(&value_, &size)) {
      return Status::Invalid(std::string("Avro C sizeof: ") + avro_strerror());
    }
    std::string out(size, '\0');
    WriterHandle writer(avro_writer_memory(out.data(), static_cast<int64_t>(size)));
    if (avro_value_write(writer.get(), &value_)) {
      return Status::Invalid(std::string("Avro C write: ") + avro_strerror());
    }
    return out;
  }

  /// Read `bytes` into the value with avro_value_read; the Avro C error text if it
  /// fails. `*trailing` tells whether bytes were left after the value.
  Status Read(std::string_view bytes, bool* trailing = nullptr) {
    ReaderHandle reader(
        avro_reader_memory(bytes.data(), static_cast<int64_t>(bytes.size())));
    avro_value_reset(&value_);
    if (avro_value_read(reader.get(), &value_)) {
      return Status::ParseError(std::string("Avro C: ") + avro_strerror());
    }
    if (trailing) {
      char b;
      *trailing = avro_read(reader.get(), &b, 1) == 0;
    }
    return Status::OK();
  }

 private:
  AvroCValue() = default;

  static bool Bytes(simdjson::dom::element e, std::string* out) {
    std::string_view s;
    if (e.get_string().get(s)) return false;
    out->clear();
    for (size_t i = 0; i < s.size();) {
      const auto c = static_cast<uint8_t>(s[i]);
      if (c < 0x80) {
        out->push_back(static_cast<char>(c));
        ++i;
      } else if ((c & 0xE0) == 0xC0 && i + 1 < s.size()) {
        const uint32_t cp = ((c & 0x1F) << 6) | (static_cast<uint8_t>(s[i + 1]) & 0x3F);
        if (cp > 255) return false;
        out->push_back(static_cast<char>(cp));
        i += 2;
      } else {
        return false;
      }
    }
    return true;
  }

  static bool Number(simdjson::dom::element e, double* out) {
    std::string_view s;
    if (!e.get_string().get(s)) {
      if (s == "NaN")
        *out = std::numeric_limits<double>::quiet_NaN();
      else if (s == "Infinity")
        *out = std::numeric_limits<double>::infinity();
      else if (s == "-Infinity")
        *out = -std::numeric_limits<double>::infinity();
      else
        return false;
      return true;
    }
    int64_t i;
    if (!e.get_int64().get(i)) {
      *out = static_cast<double>(i);
      return true;
    }
    return !e.get_double().get(*out);
  }

  static Status Fill(avro_value_t* v, simdjson::dom::element e,
                     const std::string& where) {
    auto bad = [&]() {
      return Status::Invalid(where + ": cannot encode " + simdjson::to_string(e));
    };
    avro_schema_t schema = avro_value_get_schema(v);
    switch (avro_value_get_type(v)) {
      case AVRO_NULL:
        return e.is_null() && !avro_value_set_null(v) ? Status::OK() : bad();
      case AVRO_BOOLEAN: {
        bool b;
        if (e.get_bool().get(b)) return bad();
        return avro_value_set_boolean(v, b) ? bad() : Status::OK();
      }
      case AVRO_INT32: {
        int64_t i;
        if (e.get_int64().get(i)) return bad();
        return avro_value_set_int(v, static_cast<int32_t>(i)) ? bad() : Status::OK();
      }
      case AVRO_INT64: {
        int64_t i;
        if (e.get_int64().get(i)) return bad();
        return avro_value_set_long(v, i) ? bad() : Status::OK();
      }
      case AVRO_FLOAT: {
        double d;
        if (!Number(e, &d)) return bad();
        return avro_value_set_float(v, static_cast<float>(d)) ? bad() : Status::OK();
      }
      case AVRO_DOUBLE: {
        double d;
        if (!Number(e, &d)) return bad();
        return avro_value_set_double(v, d) ? bad() : Status::OK();
      }
      case AVRO_STRING: {
        std::string_view s;
        if (e.get_string().get(s)) return bad();
        std::string copy(s);  // Avro C's string size counts a NUL terminator
        return avro_value_set_string_len(v, copy.c_str(), copy.size() + 1) ? bad()
                                                                           : Status::OK();
      }
      case AVRO_BYTES: {
        std::string b;
        if (!Bytes(e, &b)) return bad();
        return avro_value_set_bytes(v, b.data(), b.size()) ? bad() : Status::OK();
      }
      case AVRO_FIXED: {
        std::string b;
        if (!Bytes(e, &b)) return bad();
        return avro_value_set_fixed(v, b.data(), b.size()) ? bad() : Status::OK();
      }
      case AVRO_ENUM: {
        std::string_view s;
        if (e.get_string().get(s)) return bad();
        const int index = avro_schema_enum_get_by_name(schema, std::string(s).c_str());
        if (index < 0) return bad();
        return avro_value_set_enum(v, index) ? bad() : Status::OK();
      }
      case AVRO_ARRAY: {
        simdjson::dom::array arr;
        if (e.get_array().get(arr)) return bad();
        size_t i = 0;
        for (simdjson::dom::element item : arr) {
          avro_value_t child;
          if (avro_value_append(v, &child, nullptr)) return bad();
          KELT_RETURN_NOT_OK(Fill(&child, item, where + "[" + std::to_string(i++) + "]"));
        }
        return Status::OK();
      }
      case AVRO_MAP: {
        simdjson::dom::object obj;
        if (e.get_object().get(obj)) return bad();
        for (auto kv : obj) {
          avro_value_t child;
          if (avro_value_add(v, std::string(kv.key).c_str(), &child, nullptr, nullptr)) {
            return bad();
          }
          KELT_RETURN_NOT_OK(Fill(&child, kv.value, where + "." + std::string(kv.key)));
        }
        return Status::OK();
      }
      case AVRO_RECORD: {
        simdjson::dom::object obj;
        if (e.get_object().get(obj)) return bad();
        size_t n = 0;
        avro_value_get_size(v, &n);
        for (size_t i = 0; i < n; ++i) {
          avro_value_t child;
          const char* name = nullptr;
          avro_value_get_by_index(v, i, &child, &name);
          simdjson::dom::element fe;
          if (obj[name].get(fe)) return Status::Invalid(where + ": no field " + name);
          KELT_RETURN_NOT_OK(Fill(&child, fe, where + "." + name));
        }
        return Status::OK();
      }
      case AVRO_UNION: {
        int index = -1;
        simdjson::dom::element inner = e;
        if (e.is_null()) {
          avro_schema_union_branch_by_name(schema, &index, "null");
        } else {
          simdjson::dom::object obj;
          if (e.get_object().get(obj) || obj.size() != 1) return bad();
          for (auto kv : obj) {
            const std::string key(kv.key);
            if (!key.empty() &&
                key.find_first_not_of("0123456789") == std::string::npos) {
              index = std::stoi(key);
            } else {
              avro_schema_union_branch_by_name(schema, &index, key.c_str());
            }
            inner = kv.value;
          }
        }
        if (index < 0) return bad();
        avro_value_t branch;
        if (avro_value_set_branch(v, index, &branch)) return bad();
        return Fill(&branch, inner, where + "<" + std::to_string(index) + ">");
      }
      default:
        return bad();
    }
  }

  SchemaHandle schema_;
  IfaceHandle iface_;
  avro_value_t value_{};
  bool has_value_ = false;
};

/// Encode one value of `schema_json` given as JSON with Avro C.
inline Result<std::string> EncodeWithAvroC(std::string_view schema_json,
                                           std::string_view value_json) {
  auto value = AvroCValue::Make(schema_json);
  if (!value.ok()) return value.status();
  return (*value)->Encode(value_json);
}

}  // namespace kelt::avro::testing
