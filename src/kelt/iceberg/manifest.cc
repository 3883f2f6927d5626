// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Avro C encodes every record and the container header; this file only frames them.
// Avro C's own file writer cannot be used: it writes the header's "avro.schema" from its
// parsed schema, which drops the "field-id" attributes Iceberg readers resolve fields
// by, and it has no way to add the header metadata Iceberg requires ("schema",
// "partition-spec", "format-version", "content", …). The framing is the spec's: the
// header record (org.apache.avro.file.Header, encoded by Avro C), then blocks of
// (count, size, records, sync marker), codec "null".

#include "kelt/iceberg/manifest.h"

#include <avro.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <random>

#include "kelt/common/text.h"

namespace kelt::iceberg {

using text::AppendInt64;
using text::AppendJsonString;
namespace {

// --- Avro C ownership ------------------------------------------------------------------

struct SchemaDeleter {
  void operator()(avro_obj_t* s) const { avro_schema_decref(s); }
};
using SchemaPtr = std::unique_ptr<avro_obj_t, SchemaDeleter>;
struct IfaceDeleter {
  void operator()(avro_value_iface_t* i) const { avro_value_iface_decref(i); }
};
using IfacePtr = std::unique_ptr<avro_value_iface_t, IfaceDeleter>;

// A generic value of a schema, released with it.
class Value {
 public:
  static Result<std::unique_ptr<Value>> Make(std::string_view schema_json) {
    avro_schema_t schema;
    if (avro_schema_from_json_length(schema_json.data(), schema_json.size(), &schema)) {
      return Status::Internal(std::string("Avro schema: ") + avro_strerror());
    }
    auto v = std::make_unique<Value>();
    v->schema_.reset(schema);
    v->iface_.reset(avro_generic_class_from_schema(schema));
    if (!v->iface_ || avro_generic_value_new(v->iface_.get(), &v->value_)) {
      return Status::Internal(std::string("Avro value: ") + avro_strerror());
    }
    v->has_value_ = true;
    return v;
  }
  Value() = default;
  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;
  ~Value() {
    if (has_value_) avro_value_decref(&value_);
  }
  avro_value_t* get() { return &value_; }

 private:
  SchemaPtr schema_;
  IfacePtr iface_;
  avro_value_t value_{};
  bool has_value_ = false;
};

Status AvroError(std::string_view what) {
  return Status::Internal(std::string(what) + ": " + avro_strerror());
}

#define KELT_AVRO(expr, what) \
  if ((expr) != 0) return AvroError(what)

avro_value_t Child(avro_value_t* record, const char* name) {
  avro_value_t c{};
  avro_value_get_by_name(record, name, &c, nullptr);
  return c;
}

Status SetNull(avro_value_t* u) {
  avro_value_t b;
  KELT_AVRO(avro_value_set_branch(u, 0, &b), "Avro union");
  KELT_AVRO(avro_value_set_null(&b), "Avro null");
  return Status::OK();
}

// Set branch 1 of a ["null", T] union and return it.
Result<avro_value_t> SetNonNull(avro_value_t* u) {
  avro_value_t b;
  KELT_AVRO(avro_value_set_branch(u, 1, &b), "Avro union");
  return b;
}

Result<std::string> Encode(avro_value_t* v) {
  size_t size = 0;
  KELT_AVRO(avro_value_sizeof(v, &size), "Avro size");
  std::string out(size, '\0');
  avro_writer_t w = avro_writer_memory(out.data(), static_cast<int64_t>(size));
  const int rc = avro_value_write(w, v);
  avro_writer_free(w);
  if (rc) return AvroError("Avro encode");
  return out;
}

void AppendZigZag(std::string* out, int64_t v) {
  uint64_t n = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (n >= 0x80) {
    out->push_back(static_cast<char>((n & 0x7F) | 0x80));
    n >>= 7;
  }
  out->push_back(static_cast<char>(n));
}

constexpr std::string_view kHeaderSchema =
    R"({"type":"record","name":"Header","namespace":"org.apache.avro.file","fields":[)"
    R"({"name":"magic","type":{"type":"fixed","name":"Magic","size":4}},)"
    R"({"name":"meta","type":{"type":"map","values":"bytes"}},)"
    R"({"name":"sync","type":{"type":"fixed","name":"Sync","size":16}}]})";

// The container: header (magic, metadata with "avro.schema" = `schema_json` verbatim,
// sync marker), one block of the encoded records.
Result<std::string> Container(std::string_view schema_json,
                              const std::map<std::string, std::string>& meta,
                              const std::vector<std::string>& records) {
  KELT_ASSIGN_OR_RAISE(auto header, Value::Make(kHeaderSchema));
  avro_value_t h = *header->get();
  char magic[4] = {'O', 'b', 'j', 1};
  avro_value_t f = Child(&h, "magic");
  KELT_AVRO(avro_value_set_fixed(&f, magic, 4), "Avro header");
  avro_value_t m = Child(&h, "meta");
  std::map<std::string, std::string> all = meta;
  all["avro.schema"] = std::string(schema_json);
  all["avro.codec"] = "null";
  for (auto& [k, v] : all) {
    avro_value_t e;
    KELT_AVRO(avro_value_add(&m, k.c_str(), &e, nullptr, nullptr), "Avro header");
    KELT_AVRO(avro_value_set_bytes(&e, v.data(), v.size()), "Avro header");
  }
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char sync[16];
  for (int i = 0; i < 16; i += 8) {
    const uint64_t r = rng();
    std::memcpy(sync + i, &r, 8);
  }
  f = Child(&h, "sync");
  KELT_AVRO(avro_value_set_fixed(&f, sync, 16), "Avro header");
  KELT_ASSIGN_OR_RAISE(std::string out, Encode(&h));
  if (!records.empty()) {
    size_t bytes = 0;
    for (const auto& r : records) bytes += r.size();
    AppendZigZag(&out, static_cast<int64_t>(records.size()));
    AppendZigZag(&out, static_cast<int64_t>(bytes));
    for (const auto& r : records) out += r;
    out.append(sync, 16);
  }
  return out;
}

}  // namespace

Status WriteLocalFile(const std::string& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError("create " + path + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      return Status::IOError("write " + path + ": " + std::strerror(e));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int e = errno;
    ::close(fd);
    return Status::IOError("fsync " + path + ": " + std::strerror(e));
  }
  if (::close(fd) != 0)
    return Status::IOError("close " + path + ": " + std::strerror(errno));
  return Status::OK();
}

namespace {

// ["null", array of {key: int, value: T}] with Iceberg's map ids.
std::string IntMapType(int key_id, int value_id, std::string_view value_type) {
  std::string out =
      R"(["null",{"type":"array","logicalType":"map","items":{"type":"record","name":"k)";
  out += std::to_string(key_id) + "_v" + std::to_string(value_id);
  out += R"(","fields":[{"name":"key","type":"int","field-id":)" + std::to_string(key_id);
  out += R"(},{"name":"value","type":")" + std::string(value_type) + R"(","field-id":)" +
         std::to_string(value_id) + "}]}}]";
  return out;
}

std::string PartitionAvroType(const std::string& type) {
  if (type == "date") return R"({"type":"int","logicalType":"date"})";
  if (type == "timestamp" || type == "timestamptz") {
    return std::string(
               R"({"type":"long","logicalType":"timestamp-micros","adjust-to-utc":)") +
           (type == "timestamptz" ? "true" : "false") + "}";
  }
  return "\"" + type + "\"";  // int, long, string
}

std::string ManifestEntrySchema(const std::vector<PartitionColumn>& partition) {
  std::string r102 = R"({"type":"record","name":"r102","fields":[)";
  for (size_t i = 0; i < partition.size(); ++i) {
    if (i) r102 += ',';
    r102 += R"({"name":)";
    AppendJsonString(&r102, partition[i].name);
    r102 += R"(,"type":["null",)" + PartitionAvroType(partition[i].type) +
            R"(],"default":null,"field-id":)" + std::to_string(partition[i].field_id) +
            "}";
  }
  r102 += "]}";
  std::string s =
      R"({"type":"record","name":"manifest_entry","fields":[)"
      R"({"name":"status","type":"int","field-id":0},)"
      R"({"name":"snapshot_id","type":["null","long"],"default":null,"field-id":1},)"
      R"({"name":"sequence_number","type":["null","long"],"default":null,"field-id":3},)"
      R"({"name":"file_sequence_number","type":["null","long"],"default":null,"field-id":4},)"
      R"({"name":"data_file","field-id":2,"type":{"type":"record","name":"r2","fields":[)"
      R"({"name":"content","type":"int","field-id":134},)"
      R"({"name":"file_path","type":"string","field-id":100},)"
      R"({"name":"file_format","type":"string","field-id":101},)";
  s += R"({"name":"partition","field-id":102,"type":)" + r102 + "},";
  s += R"({"name":"record_count","type":"long","field-id":103},)"
       R"({"name":"file_size_in_bytes","type":"long","field-id":104},)";
  s += R"({"name":"value_counts","default":null,"field-id":109,"type":)" +
       IntMapType(119, 120, "long") + "},";
  s += R"({"name":"null_value_counts","default":null,"field-id":110,"type":)" +
       IntMapType(121, 122, "long") + "},";
  s += R"({"name":"lower_bounds","default":null,"field-id":125,"type":)" +
       IntMapType(126, 127, "bytes") + "},";
  s += R"({"name":"upper_bounds","default":null,"field-id":128,"type":)" +
       IntMapType(129, 130, "bytes") + "}";
  s += "]}}]}";
  return s;
}

constexpr std::string_view kManifestListSchema =
    R"({"type":"record","name":"manifest_file","fields":[)"
    R"({"name":"manifest_path","type":"string","field-id":500},)"
    R"({"name":"manifest_length","type":"long","field-id":501},)"
    R"({"name":"partition_spec_id","type":"int","field-id":502},)"
    R"({"name":"content","type":"int","field-id":517},)"
    R"({"name":"sequence_number","type":"long","field-id":515},)"
    R"({"name":"min_sequence_number","type":"long","field-id":516},)"
    R"({"name":"added_snapshot_id","type":"long","field-id":503},)"
    R"({"name":"added_files_count","type":"int","field-id":504},)"
    R"({"name":"existing_files_count","type":"int","field-id":505},)"
    R"({"name":"deleted_files_count","type":"int","field-id":506},)"
    R"({"name":"added_rows_count","type":"long","field-id":512},)"
    R"({"name":"existing_rows_count","type":"long","field-id":513},)"
    R"({"name":"deleted_rows_count","type":"long","field-id":514},)"
    R"({"name":"partitions","default":null,"field-id":507,"type":["null",)"
    R"({"type":"array","element-id":508,"items":{"type":"record","name":"r508","fields":[)"
    R"({"name":"contains_null","type":"boolean","field-id":509},)"
    R"({"name":"contains_nan","type":["null","boolean"],"default":null,"field-id":518},)"
    R"({"name":"lower_bound","type":["null","bytes"],"default":null,"field-id":510},)"
    R"({"name":"upper_bound","type":["null","bytes"],"default":null,"field-id":511}]}}]}]})";

template <typename V>
Status SetIntMap(avro_value_t* record, const char* name, const std::map<int, V>& m) {
  avro_value_t u = Child(record, name);
  KELT_ASSIGN_OR_RAISE(avro_value_t arr, SetNonNull(&u));
  for (const auto& [k, v] : m) {
    avro_value_t e;
    KELT_AVRO(avro_value_append(&arr, &e, nullptr), "Avro map entry");
    avro_value_t key = Child(&e, "key");
    avro_value_t val = Child(&e, "value");
    KELT_AVRO(avro_value_set_int(&key, k), "Avro map key");
    if constexpr (std::is_same_v<V, int64_t>) {
      KELT_AVRO(avro_value_set_long(&val, v), "Avro map value");
    } else {
      KELT_AVRO(avro_value_set_bytes(&val, const_cast<char*>(v.data()), v.size()),
                "Avro map value");
    }
  }
  return Status::OK();
}

Status SetDatum(avro_value_t* u, const std::optional<PartitionDatum>& d) {
  if (!d) return SetNull(u);
  KELT_ASSIGN_OR_RAISE(avro_value_t b, SetNonNull(u));
  if (auto* i = std::get_if<int32_t>(&*d)) {
    KELT_AVRO(avro_value_set_int(&b, *i), "Avro partition");
  } else if (auto* l = std::get_if<int64_t>(&*d)) {
    KELT_AVRO(avro_value_set_long(&b, *l), "Avro partition");
  } else {
    KELT_AVRO(avro_value_set_string(&b, std::get<std::string>(*d).c_str()),
              "Avro partition");
  }
  return Status::OK();
}

bool Less(const PartitionDatum& a, const PartitionDatum& b) { return a < b; }

// --- reading ---------------------------------------------------------------------------

struct ReaderDeleter {
  void operator()(avro_file_reader_t r) const { avro_file_reader_close(r); }
};

// Each record of an Avro container file, decoded by Avro C with the writer's schema.
template <typename F>
Status ForEachRecord(const std::string& path, F&& f) {
  avro_file_reader_t raw;
  if (avro_file_reader(path.c_str(), &raw)) {
    return Status::IOError("read " + path + ": " + avro_strerror());
  }
  std::unique_ptr<std::remove_pointer_t<avro_file_reader_t>, ReaderDeleter> reader(raw);
  // The getter hands out a new reference (avro_schema_incref): ours to release.
  SchemaPtr schema(avro_file_reader_get_writer_schema(raw));
  IfacePtr iface(avro_generic_class_from_schema(schema.get()));
  avro_value_t v;
  if (!iface || avro_generic_value_new(iface.get(), &v)) return AvroError("Avro value");
  Status st;
  while (st.ok() && avro_file_reader_read_value(raw, &v) == 0) {
    st = f(&v);
    avro_value_reset(&v);
  }
  avro_value_decref(&v);
  return st;
}

Result<int64_t> GetLong(avro_value_t* rec, const char* name) {
  avro_value_t c;
  int64_t out;
  if (avro_value_get_by_name(rec, name, &c, nullptr) || avro_value_get_long(&c, &out)) {
    return Status::ParseError(std::string("Avro record has no long '") + name + "'");
  }
  return out;
}

Result<int32_t> GetInt(avro_value_t* rec, const char* name) {
  avro_value_t c;
  int32_t out;
  if (avro_value_get_by_name(rec, name, &c, nullptr) || avro_value_get_int(&c, &out)) {
    return Status::ParseError(std::string("Avro record has no int '") + name + "'");
  }
  return out;
}

Result<std::string> GetString(avro_value_t* rec, const char* name) {
  avro_value_t c;
  const char* s;
  size_t size;
  if (avro_value_get_by_name(rec, name, &c, nullptr) ||
      avro_value_get_string(&c, &s, &size)) {
    return Status::ParseError(std::string("Avro record has no string '") + name + "'");
  }
  return std::string(s, size > 0 ? size - 1 : 0);  // size counts the NUL
}

// The non-null branch of an optional union field, or nullopt.
std::optional<avro_value_t> Optional(avro_value_t* rec, const char* name) {
  avro_value_t u, b;
  if (avro_value_get_by_name(rec, name, &u, nullptr)) return std::nullopt;
  if (avro_value_get_type(&u) != AVRO_UNION) return u;
  if (avro_value_get_current_branch(&u, &b)) return std::nullopt;
  if (avro_value_get_type(&b) == AVRO_NULL) return std::nullopt;
  return b;
}

std::optional<std::string> OptionalBytes(avro_value_t* rec, const char* name) {
  auto b = Optional(rec, name);
  const void* p;
  size_t n;
  if (!b || avro_value_get_bytes(&*b, &p, &n)) return std::nullopt;
  return std::string(static_cast<const char*>(p), n);
}

}  // namespace

std::string SerializeDatum(const PartitionDatum& d) {
  if (auto* i = std::get_if<int32_t>(&d)) return SerializeInt32(*i);
  if (auto* l = std::get_if<int64_t>(&d)) return SerializeInt64(*l);
  return std::get<std::string>(d);
}

Result<ManifestFile> WriteManifest(const std::string& path, const ManifestContext& ctx,
                                   const std::vector<DataFile>& files) {
  std::vector<ManifestEntry> entries;
  entries.reserve(files.size());
  for (const DataFile& f : files) {
    entries.push_back(ManifestEntry{EntryStatus::kAdded, ctx.snapshot_id, std::nullopt,
                                    std::nullopt, f});
  }
  return WriteManifestEntries(path, ctx, entries);
}

Result<ManifestFile> WriteManifestEntries(const std::string& path,
                                          const ManifestContext& ctx,
                                          const std::vector<ManifestEntry>& entries) {
  const std::string schema = ManifestEntrySchema(ctx.partition);
  KELT_ASSIGN_OR_RAISE(auto entry, Value::Make(schema));
  std::vector<std::string> records;
  ManifestFile mf;
  mf.path = path;
  mf.partition_spec_id = ctx.spec.spec_id;
  mf.added_snapshot_id = ctx.snapshot_id;
  std::vector<FieldSummary> summaries(ctx.partition.size());
  std::vector<std::optional<PartitionDatum>> lo(ctx.partition.size()),
      hi(ctx.partition.size());
  auto set_optional_long = [&](avro_value_t* e, const char* name,
                               std::optional<int64_t> v) -> Status {
    avro_value_t c = Child(e, name);
    if (!v) return SetNull(&c);  // inherited
    KELT_ASSIGN_OR_RAISE(avro_value_t b, SetNonNull(&c));
    KELT_AVRO(avro_value_set_long(&b, *v), name);
    return Status::OK();
  };
  for (const ManifestEntry& me : entries) {
    const DataFile& f = me.file;
    if (f.partition.size() != ctx.partition.size()) {
      return Status::Invalid(
          "data file " + f.path + " has " + std::to_string(f.partition.size()) +
          " partition values, the spec " + std::to_string(ctx.partition.size()));
    }
    avro_value_t* e = entry->get();
    avro_value_reset(e);
    avro_value_t c = Child(e, "status");
    KELT_AVRO(avro_value_set_int(&c, static_cast<int32_t>(me.status)), "Avro status");
    KELT_RETURN_NOT_OK(
        set_optional_long(e, "snapshot_id", me.snapshot_id.value_or(ctx.snapshot_id)));
    KELT_RETURN_NOT_OK(set_optional_long(e, "sequence_number", me.sequence_number));
    KELT_RETURN_NOT_OK(
        set_optional_long(e, "file_sequence_number", me.file_sequence_number));
    avro_value_t df = Child(e, "data_file");
    c = Child(&df, "content");
    KELT_AVRO(avro_value_set_int(&c, 0), "Avro content");
    c = Child(&df, "file_path");
    KELT_AVRO(avro_value_set_string(&c, f.path.c_str()), "Avro file_path");
    c = Child(&df, "file_format");
    KELT_AVRO(avro_value_set_string(&c, "PARQUET"), "Avro file_format");
    avro_value_t part = Child(&df, "partition");
    for (size_t i = 0; i < f.partition.size(); ++i) {
      c = Child(&part, ctx.partition[i].name.c_str());
      KELT_RETURN_NOT_OK(SetDatum(&c, f.partition[i]));
      if (!f.partition[i]) {
        summaries[i].contains_null = true;
        continue;
      }
      if (!lo[i] || Less(*f.partition[i], *lo[i])) lo[i] = f.partition[i];
      if (!hi[i] || Less(*hi[i], *f.partition[i])) hi[i] = f.partition[i];
    }
    c = Child(&df, "record_count");
    KELT_AVRO(avro_value_set_long(&c, f.record_count), "Avro record_count");
    c = Child(&df, "file_size_in_bytes");
    KELT_AVRO(avro_value_set_long(&c, f.file_size), "Avro file_size_in_bytes");
    KELT_RETURN_NOT_OK(SetIntMap(&df, "value_counts", f.stats.value_counts));
    KELT_RETURN_NOT_OK(SetIntMap(&df, "null_value_counts", f.stats.null_counts));
    KELT_RETURN_NOT_OK(SetIntMap(&df, "lower_bounds", f.stats.lower_bounds));
    KELT_RETURN_NOT_OK(SetIntMap(&df, "upper_bounds", f.stats.upper_bounds));
    KELT_ASSIGN_OR_RAISE(std::string rec, Encode(e));
    records.push_back(std::move(rec));
    switch (me.status) {
      case EntryStatus::kAdded:
        mf.added_files_count += 1;
        mf.added_rows_count += f.record_count;
        break;
      case EntryStatus::kExisting:
        mf.existing_files_count += 1;
        mf.existing_rows_count += f.record_count;
        break;
      case EntryStatus::kDeleted:
        mf.deleted_files_count += 1;
        mf.deleted_rows_count += f.record_count;
        break;
    }
  }
  for (size_t i = 0; i < summaries.size(); ++i) {
    if (lo[i]) summaries[i].lower_bound = SerializeDatum(*lo[i]);
    if (hi[i]) summaries[i].upper_bound = SerializeDatum(*hi[i]);
  }
  mf.partitions = std::move(summaries);
  std::map<std::string, std::string> meta = {
      {"schema", SchemaJson(ctx.schema)},
      {"schema-id", std::to_string(ctx.schema.schema_id)},
      {"partition-spec", PartitionFieldsJson(ctx.spec)},
      {"partition-spec-id", std::to_string(ctx.spec.spec_id)},
      {"format-version", "2"},
      {"content", "data"},
  };
  KELT_ASSIGN_OR_RAISE(std::string bytes, Container(schema, meta, records));
  KELT_RETURN_NOT_OK(WriteLocalFile(path, bytes));
  mf.length = static_cast<int64_t>(bytes.size());
  return mf;
}

Status WriteManifestList(const std::string& path, int64_t snapshot_id,
                         std::optional<int64_t> parent_snapshot_id,
                         int64_t sequence_number,
                         const std::vector<ManifestFile>& files) {
  KELT_ASSIGN_OR_RAISE(auto entry, Value::Make(kManifestListSchema));
  std::vector<std::string> records;
  for (const ManifestFile& m : files) {
    avro_value_t* e = entry->get();
    avro_value_reset(e);
    avro_value_t c = Child(e, "manifest_path");
    KELT_AVRO(avro_value_set_string(&c, m.path.c_str()), "Avro manifest_path");
    const std::pair<const char*, int64_t> longs[] = {
        {"manifest_length", m.length},
        {"sequence_number", m.sequence_number},
        {"min_sequence_number", m.min_sequence_number},
        {"added_snapshot_id", m.added_snapshot_id},
        {"added_rows_count", m.added_rows_count},
        {"existing_rows_count", m.existing_rows_count},
        {"deleted_rows_count", m.deleted_rows_count}};
    for (const auto& [name, v] : longs) {
      c = Child(e, name);
      KELT_AVRO(avro_value_set_long(&c, v), name);
    }
    const std::pair<const char*, int32_t> ints[] = {
        {"partition_spec_id", m.partition_spec_id},
        {"content", m.content},
        {"added_files_count", m.added_files_count},
        {"existing_files_count", m.existing_files_count},
        {"deleted_files_count", m.deleted_files_count}};
    for (const auto& [name, v] : ints) {
      c = Child(e, name);
      KELT_AVRO(avro_value_set_int(&c, v), name);
    }
    c = Child(e, "partitions");
    if (!m.partitions) {
      KELT_RETURN_NOT_OK(SetNull(&c));
    } else {
      KELT_ASSIGN_OR_RAISE(avro_value_t arr, SetNonNull(&c));
      for (const FieldSummary& s : *m.partitions) {
        avro_value_t r, f;
        KELT_AVRO(avro_value_append(&arr, &r, nullptr), "Avro partitions");
        f = Child(&r, "contains_null");
        KELT_AVRO(avro_value_set_boolean(&f, s.contains_null), "Avro contains_null");
        f = Child(&r, "contains_nan");
        if (s.contains_nan) {
          KELT_ASSIGN_OR_RAISE(avro_value_t b, SetNonNull(&f));
          KELT_AVRO(avro_value_set_boolean(&b, *s.contains_nan), "Avro contains_nan");
        } else {
          KELT_RETURN_NOT_OK(SetNull(&f));
        }
        for (auto [name, bound] : {std::pair{"lower_bound", &s.lower_bound},
                                   std::pair{"upper_bound", &s.upper_bound}}) {
          f = Child(&r, name);
          if (*bound) {
            KELT_ASSIGN_OR_RAISE(avro_value_t b, SetNonNull(&f));
            KELT_AVRO(avro_value_set_bytes(&b, const_cast<char*>((*bound)->data()),
                                           (*bound)->size()),
                      name);
          } else {
            KELT_RETURN_NOT_OK(SetNull(&f));
          }
        }
      }
    }
    KELT_ASSIGN_OR_RAISE(std::string rec, Encode(e));
    records.push_back(std::move(rec));
  }
  std::map<std::string, std::string> meta = {
      {"snapshot-id", std::to_string(snapshot_id)},
      {"parent-snapshot-id",
       parent_snapshot_id ? std::to_string(*parent_snapshot_id) : "null"},
      {"sequence-number", std::to_string(sequence_number)},
      {"format-version", "2"},
  };
  KELT_ASSIGN_OR_RAISE(std::string bytes, Container(kManifestListSchema, meta, records));
  return WriteLocalFile(path, bytes);
}

Result<std::vector<ManifestFile>> ReadManifestList(const std::string& path) {
  std::vector<ManifestFile> out;
  KELT_RETURN_NOT_OK(ForEachRecord(path, [&](avro_value_t* r) -> Status {
    ManifestFile m;
    KELT_ASSIGN_OR_RAISE(m.path, GetString(r, "manifest_path"));
    KELT_ASSIGN_OR_RAISE(m.length, GetLong(r, "manifest_length"));
    KELT_ASSIGN_OR_RAISE(m.partition_spec_id, GetInt(r, "partition_spec_id"));
    KELT_ASSIGN_OR_RAISE(m.content, GetInt(r, "content"));
    KELT_ASSIGN_OR_RAISE(m.sequence_number, GetLong(r, "sequence_number"));
    KELT_ASSIGN_OR_RAISE(m.min_sequence_number, GetLong(r, "min_sequence_number"));
    KELT_ASSIGN_OR_RAISE(m.added_snapshot_id, GetLong(r, "added_snapshot_id"));
    KELT_ASSIGN_OR_RAISE(m.added_files_count, GetInt(r, "added_files_count"));
    KELT_ASSIGN_OR_RAISE(m.existing_files_count, GetInt(r, "existing_files_count"));
    KELT_ASSIGN_OR_RAISE(m.deleted_files_count, GetInt(r, "deleted_files_count"));
    KELT_ASSIGN_OR_RAISE(m.added_rows_count, GetLong(r, "added_rows_count"));
    KELT_ASSIGN_OR_RAISE(m.existing_rows_count, GetLong(r, "existing_rows_count"));
    KELT_ASSIGN_OR_RAISE(m.deleted_rows_count, GetLong(r, "deleted_rows_count"));
    if (auto arr = Optional(r, "partitions")) {
      size_t n = 0;
      avro_value_get_size(&*arr, &n);
      std::vector<FieldSummary> sums;
      for (size_t i = 0; i < n; ++i) {
        avro_value_t s, f;
        avro_value_get_by_index(&*arr, i, &s, nullptr);
        FieldSummary fs;
        int b = 0;
        if (!avro_value_get_by_name(&s, "contains_null", &f, nullptr)) {
          avro_value_get_boolean(&f, &b);
        }
        fs.contains_null = b != 0;
        if (auto nan = Optional(&s, "contains_nan")) {
          avro_value_get_boolean(&*nan, &b);
          fs.contains_nan = b != 0;
        }
        fs.lower_bound = OptionalBytes(&s, "lower_bound");
        fs.upper_bound = OptionalBytes(&s, "upper_bound");
        sums.push_back(std::move(fs));
      }
      m.partitions = std::move(sums);
    }
    out.push_back(std::move(m));
    return Status::OK();
  }));
  return out;
}

namespace {

// An int-keyed map field (array of {key, value} records) into `out`.
template <typename V>
void GetIntMap(avro_value_t* rec, const char* name, std::map<int, V>* out) {
  auto arr = Optional(rec, name);
  if (!arr) return;
  size_t n = 0;
  avro_value_get_size(&*arr, &n);
  for (size_t i = 0; i < n; ++i) {
    avro_value_t kv, k, v;
    if (avro_value_get_by_index(&*arr, i, &kv, nullptr) ||
        avro_value_get_by_name(&kv, "key", &k, nullptr) ||
        avro_value_get_by_name(&kv, "value", &v, nullptr)) {
      continue;
    }
    int32_t key = 0;
    if (avro_value_get_int(&k, &key)) continue;
    if constexpr (std::is_same_v<V, int64_t>) {
      int64_t x = 0;
      if (!avro_value_get_long(&v, &x)) (*out)[key] = x;
    } else {
      const void* p;
      size_t size;
      if (!avro_value_get_bytes(&v, &p, &size)) {
        (*out)[key] = std::string(static_cast<const char*>(p), size);
      }
    }
  }
}

std::optional<int64_t> OptionalLong(avro_value_t* rec, const char* name) {
  auto b = Optional(rec, name);
  int64_t v;
  if (!b || avro_value_get_long(&*b, &v)) return std::nullopt;
  return v;
}

}  // namespace

Result<std::vector<ManifestEntry>> ReadManifestEntries(const std::string& path) {
  std::vector<ManifestEntry> out;
  KELT_RETURN_NOT_OK(ForEachRecord(path, [&](avro_value_t* r) -> Status {
    ManifestEntry me;
    KELT_ASSIGN_OR_RAISE(int32_t status, GetInt(r, "status"));
    if (status < 0 || status > 2) {
      return Status::ParseError("manifest " + path + ": entry status " +
                                std::to_string(status));
    }
    me.status = static_cast<EntryStatus>(status);
    me.snapshot_id = OptionalLong(r, "snapshot_id");
    me.sequence_number = OptionalLong(r, "sequence_number");
    me.file_sequence_number = OptionalLong(r, "file_sequence_number");
    avro_value_t df;
    if (avro_value_get_by_name(r, "data_file", &df, nullptr)) {
      return Status::ParseError("manifest " + path + ": entry without data_file");
    }
    KELT_ASSIGN_OR_RAISE(int32_t content, GetInt(&df, "content"));
    if (content != 0) {
      return Status::NotImplemented("manifest " + path +
                                    " lists delete files, which kelt cannot apply yet");
    }
    KELT_ASSIGN_OR_RAISE(me.file.path, GetString(&df, "file_path"));
    KELT_ASSIGN_OR_RAISE(me.file.record_count, GetLong(&df, "record_count"));
    KELT_ASSIGN_OR_RAISE(me.file.file_size, GetLong(&df, "file_size_in_bytes"));
    avro_value_t part;
    if (!avro_value_get_by_name(&df, "partition", &part, nullptr)) {
      size_t n = 0;
      avro_value_get_size(&part, &n);
      for (size_t i = 0; i < n; ++i) {
        avro_value_t u, b;
        avro_value_get_by_index(&part, i, &u, nullptr);
        if (avro_value_get_type(&u) == AVRO_UNION) {
          if (avro_value_get_current_branch(&u, &b)) return AvroError("Avro partition");
        } else {
          b = u;
        }
        switch (avro_value_get_type(&b)) {
          case AVRO_NULL:
            me.file.partition.emplace_back(std::nullopt);
            break;
          case AVRO_INT32: {
            int32_t v = 0;
            avro_value_get_int(&b, &v);
            me.file.partition.emplace_back(PartitionDatum{v});
            break;
          }
          case AVRO_INT64: {
            int64_t v = 0;
            avro_value_get_long(&b, &v);
            me.file.partition.emplace_back(PartitionDatum{v});
            break;
          }
          case AVRO_STRING: {
            const char* s;
            size_t size;
            avro_value_get_string(&b, &s, &size);
            me.file.partition.emplace_back(
                PartitionDatum{std::string(s, size > 0 ? size - 1 : 0)});
            break;
          }
          default:
            return Status::NotImplemented("manifest " + path +
                                          ": a partition value of a type kelt does not "
                                          "write");
        }
      }
    }
    GetIntMap(&df, "value_counts", &me.file.stats.value_counts);
    GetIntMap(&df, "null_value_counts", &me.file.stats.null_counts);
    GetIntMap(&df, "lower_bounds", &me.file.stats.lower_bounds);
    GetIntMap(&df, "upper_bounds", &me.file.stats.upper_bounds);
    out.push_back(std::move(me));
    return Status::OK();
  }));
  return out;
}

Result<std::vector<std::string>> ReadManifestDataFiles(const std::string& path) {
  std::vector<std::string> out;
  KELT_RETURN_NOT_OK(ForEachRecord(path, [&](avro_value_t* r) -> Status {
    KELT_ASSIGN_OR_RAISE(int32_t status, GetInt(r, "status"));
    if (status == 2) return Status::OK();  // DELETED
    avro_value_t df;
    if (avro_value_get_by_name(r, "data_file", &df, nullptr)) {
      return Status::ParseError("manifest " + path + ": entry without data_file");
    }
    KELT_ASSIGN_OR_RAISE(std::string p, GetString(&df, "file_path"));
    out.push_back(std::move(p));
    return Status::OK();
  }));
  return out;
}

}  // namespace kelt::iceberg
