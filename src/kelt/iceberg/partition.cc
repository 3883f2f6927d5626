// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0

#include "kelt/iceberg/partition.h"

#include <arrow/api.h>

#include <chrono>

namespace kelt::iceberg {
namespace {

constexpr int64_t kMicrosPerHour = 3'600'000'000;
constexpr int64_t kMicrosPerDay = 24 * kMicrosPerHour;

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return std::string(s);
}

bool IsTimestamp(const std::string& t) { return t == "timestamp" || t == "timestamptz"; }

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Months and years since 1970-01 of a day number (days since 1970-01-01).
int32_t MonthsOfDay(int64_t days) {
  const std::chrono::year_month_day ymd{std::chrono::sys_days{std::chrono::days{days}}};
  return (static_cast<int>(ymd.year()) - 1970) * 12 +
         static_cast<int>(static_cast<unsigned>(ymd.month())) - 1;
}
int32_t YearsOfDay(int64_t days) {
  const std::chrono::year_month_day ymd{std::chrono::sys_days{std::chrono::days{days}}};
  return static_cast<int>(ymd.year()) - 1970;
}

// The N of "bucket[N]", 0 when `t` is not one.
int BucketCount(const std::string& t) {
  if (t.size() < 9 || t.rfind("bucket[", 0) != 0 || t.back() != ']') return 0;
  int n = 0;
  for (size_t i = 7; i + 1 < t.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(t[i])) || n > 100'000'000) return 0;
    n = n * 10 + (t[i] - '0');
  }
  return n;
}

uint32_t RotateLeft(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

}  // namespace

int32_t BucketHash(std::string_view bytes) {
  // MurmurHash3_x86_32 (Austin Appleby's reference algorithm), seed 0, which is what
  // Iceberg's spec names for bucket transforms.
  constexpr uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  uint32_t h = 0;
  const size_t blocks = n / 4;
  for (size_t i = 0; i < blocks; ++i) {
    uint32_t k = static_cast<uint32_t>(data[4 * i]) |
                 (static_cast<uint32_t>(data[4 * i + 1]) << 8) |
                 (static_cast<uint32_t>(data[4 * i + 2]) << 16) |
                 (static_cast<uint32_t>(data[4 * i + 3]) << 24);
    k *= c1;
    k = RotateLeft(k, 15);
    k *= c2;
    h ^= k;
    h = RotateLeft(h, 13);
    h = h * 5 + 0xe6546b64;
  }
  uint32_t k = 0;
  const unsigned char* tail = data + blocks * 4;
  switch (n & 3) {
    case 3:
      k ^= static_cast<uint32_t>(tail[2]) << 16;
      [[fallthrough]];
    case 2:
      k ^= static_cast<uint32_t>(tail[1]) << 8;
      [[fallthrough]];
    case 1:
      k ^= tail[0];
      k *= c1;
      k = RotateLeft(k, 15);
      k *= c2;
      h ^= k;
  }
  h ^= static_cast<uint32_t>(n);
  h ^= h >> 16;
  h *= 0x85ebca6b;
  h ^= h >> 13;
  h *= 0xc2b2ae35;
  h ^= h >> 16;
  return static_cast<int32_t>(h);
}

int32_t BucketHashLong(int64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i)
    b[i] = static_cast<unsigned char>(static_cast<uint64_t>(v) >> (8 * i));
  return BucketHash(std::string_view(reinterpret_cast<const char*>(b), 8));
}

Result<PartitionSpec> ParsePartitionSpec(std::string_view text, const Schema& schema) {
  PartitionSpec spec;
  int next_id = 1000;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string item = Trim(text.substr(start, comma - start));
    start = comma + 1;
    if (item.empty()) {
      if (comma == text.size()) break;
      return Status::Invalid("partition: an empty item in '" + std::string(text) + "'");
    }
    std::string transform = "identity", column = item;
    const size_t open = item.find('(');
    if (open != std::string::npos) {
      if (item.back() != ')') {
        return Status::Invalid("partition: '" + item + "' is not transform(column)");
      }
      transform = Trim(item.substr(0, open));
      column = Trim(item.substr(open + 1, item.size() - open - 2));
    }
    const Field* f = schema.Find(column);
    if (!f)
      return Status::Invalid("partition: '" + item + "': no column '" + column + "'");
    PartitionField pf{f->id, next_id++, column, transform};
    if (transform == "identity") {
      if (f->type != "int" && f->type != "long" && f->type != "string" &&
          f->type != "date" && !IsTimestamp(f->type)) {
        return Status::NotImplemented("partition: '" + item + "': identity of " +
                                      f->type + " is not supported yet");
      }
    } else if (transform == "year" || transform == "month" || transform == "day" ||
               transform == "hour") {
      if (!IsTimestamp(f->type) && !(f->type == "date" && transform != "hour")) {
        return Status::Invalid("partition: '" + item + "': " + transform +
                               " needs a timestamp" +
                               (transform == "hour" ? "" : " or date") + " column, '" +
                               column + "' is " + f->type);
      }
      pf.name = column + "_" + transform;
    } else if (BucketCount(transform) > 0) {
      if (f->type != "int" && f->type != "long" && f->type != "string" &&
          f->type != "date" && !IsTimestamp(f->type)) {
        return Status::NotImplemented("partition: '" + item + "': bucket of " + f->type +
                                      " is not supported yet");
      }
      pf.name = column + "_bucket";
    } else if (transform.rfind("bucket", 0) == 0) {
      return Status::Invalid("partition: '" + item + "': write bucket[N] with N > 0");
    } else if (transform.rfind("truncate", 0) == 0) {
      return Status::NotImplemented("partition: '" + item + "': " + transform +
                                    " is not supported yet (identity, year, month, day, "
                                    "hour, bucket[N] are)");
    } else {
      return Status::Invalid("partition: '" + item + "': unknown transform '" +
                             transform +
                             "' (identity, year, month, day, hour, bucket[N])");
    }
    // The name is an Avro field name in every manifest (the r102 record).
    bool avro_name =
        !pf.name.empty() && !std::isdigit(static_cast<unsigned char>(pf.name[0]));
    for (char c : pf.name) {
      avro_name = avro_name && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    }
    if (!avro_name) {
      return Status::NotImplemented("partition: '" + item +
                                    "': the partition field name '" + pf.name +
                                    "' is not an Avro name ([A-Za-z_][A-Za-z0-9_]*); "
                                    "Iceberg's name sanitizing is not done yet");
    }
    for (const auto& other : spec.fields) {
      if (other.name == pf.name) {
        return Status::Invalid("partition: '" + pf.name + "' appears twice");
      }
    }
    spec.fields.push_back(std::move(pf));
  }
  return spec;
}

Result<std::vector<PartitionColumn>> PartitionColumns(const PartitionSpec& spec,
                                                      const Schema& schema) {
  std::vector<PartitionColumn> out;
  for (const auto& pf : spec.fields) {
    const Field* source = nullptr;
    for (const auto& f : schema.fields) {
      if (f.id == pf.source_id) source = &f;
    }
    if (!source) {
      return Status::Invalid("partition field " + pf.name + ": no source column id " +
                             std::to_string(pf.source_id));
    }
    std::string type;
    if (pf.transform == "identity") {
      type = source->type;
    } else if (pf.transform == "day") {
      type = "date";
    } else if (pf.transform == "hour" || pf.transform == "month" ||
               pf.transform == "year" || BucketCount(pf.transform) > 0) {
      type = "int";
    } else {
      return Status::NotImplemented("partition field " + pf.name + ": transform " +
                                    pf.transform + " is not supported yet");
    }
    out.push_back({pf.field_id, pf.name, type});
  }
  return out;
}

Result<std::vector<std::vector<std::optional<PartitionDatum>>>> PartitionValues(
    const arrow::RecordBatch& batch, const PartitionSpec& spec, const Schema& schema) {
  std::vector<std::vector<std::optional<PartitionDatum>>> out;
  for (const auto& pf : spec.fields) {
    int index = -1;
    for (size_t i = 0; i < schema.fields.size(); ++i) {
      if (schema.fields[i].id == pf.source_id) index = static_cast<int>(i);
    }
    if (index < 0 || index >= batch.num_columns()) {
      return Status::Invalid("partition field " + pf.name +
                             ": source column not in batch");
    }
    const arrow::Array& a = *batch.column(index);
    std::vector<std::optional<PartitionDatum>> values(a.length());
    if (const int n = BucketCount(pf.transform); n > 0) {
      for (int64_t r = 0; r < a.length(); ++r) {
        if (a.IsNull(r)) continue;
        int32_t hash;
        switch (a.type_id()) {
          case arrow::Type::INT32:
            hash = BucketHashLong(static_cast<const arrow::Int32Array&>(a).Value(r));
            break;
          case arrow::Type::DATE32:
            hash = BucketHashLong(static_cast<const arrow::Date32Array&>(a).Value(r));
            break;
          case arrow::Type::INT64:
            hash = BucketHashLong(static_cast<const arrow::Int64Array&>(a).Value(r));
            break;
          case arrow::Type::TIMESTAMP:
            hash = BucketHashLong(static_cast<const arrow::TimestampArray&>(a).Value(r));
            break;
          case arrow::Type::STRING:
            hash = BucketHash(static_cast<const arrow::StringArray&>(a).GetView(r));
            break;
          default:
            return Status::NotImplemented("partition field " + pf.name + ": bucket of " +
                                          a.type()->ToString());
        }
        values[r] = static_cast<int32_t>((hash & 0x7fffffff) % n);
      }
      out.push_back(std::move(values));
      continue;
    }
    for (int64_t r = 0; r < a.length(); ++r) {
      if (a.IsNull(r)) continue;
      switch (a.type_id()) {
        case arrow::Type::INT32:
          values[r] = static_cast<const arrow::Int32Array&>(a).Value(r);
          break;
        case arrow::Type::INT64:
          values[r] = static_cast<const arrow::Int64Array&>(a).Value(r);
          break;
        case arrow::Type::STRING:
          values[r] = std::string(static_cast<const arrow::StringArray&>(a).GetView(r));
          break;
        case arrow::Type::DATE32: {
          const int32_t d = static_cast<const arrow::Date32Array&>(a).Value(r);
          if (pf.transform == "identity" || pf.transform == "day") {
            values[r] = d;
          } else if (pf.transform == "month") {
            values[r] = MonthsOfDay(d);
          } else {
            values[r] = YearsOfDay(d);
          }
          break;
        }
        case arrow::Type::TIMESTAMP: {
          const int64_t us = static_cast<const arrow::TimestampArray&>(a).Value(r);
          if (pf.transform == "identity") {
            values[r] = us;
          } else if (pf.transform == "hour") {
            values[r] = static_cast<int32_t>(FloorDiv(us, kMicrosPerHour));
          } else {
            const int64_t day = FloorDiv(us, kMicrosPerDay);
            if (pf.transform == "day") {
              values[r] = static_cast<int32_t>(day);
            } else if (pf.transform == "month") {
              values[r] = MonthsOfDay(day);
            } else {
              values[r] = YearsOfDay(day);
            }
          }
          break;
        }
        default:
          return Status::NotImplemented("partition field " + pf.name + ": column type " +
                                        a.type()->ToString());
      }
    }
    out.push_back(std::move(values));
  }
  return out;
}

}  // namespace kelt::iceberg
