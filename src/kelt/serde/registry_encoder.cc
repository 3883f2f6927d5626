// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Registry-backed PayloadEncoders: a writer schema (the subject's latest, or one derived
// from the rows and registered), one compiled AvroEncoder per Arrow schema, and the
// wire-format header in front of every body.
#include <arrow/api.h>
#include <simdjson.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kelt/avro.h"
#include "kelt/common/mutex.h"
#include "kelt/common/thread_annotations.h"
#include "kelt/serde.h"
#include "kelt/serde/record_encoders.h"

namespace kelt {

std::string_view ValueFormatName(ValueFormat format) {
  switch (format) {
    case ValueFormat::kJson:
      return "json";
    case ValueFormat::kAvro:
      return "avro";
    case ValueFormat::kProtobuf:
      return "protobuf";
    case ValueFormat::kJsonSchema:
      return "json-schema";
  }
  return "?";
}

Result<ValueFormat> ParseValueFormat(std::string_view text, std::string_view what) {
  for (ValueFormat f : {ValueFormat::kJson, ValueFormat::kAvro, ValueFormat::kProtobuf,
                        ValueFormat::kJsonSchema}) {
    if (text == ValueFormatName(f)) return f;
  }
  return Status::Invalid(std::string(what) + " must be json, avro, protobuf or " +
                         "json-schema, not '" + std::string(text) + "'");
}

namespace serde {

std::string RecordNameOf(const std::string& subject) {
  std::string name = subject.empty() ? "Record" : subject;
  for (char& c : name) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!ok) c = '_';
  }
  if (name[0] >= '0' && name[0] <= '9') name.insert(0, "_");
  return name;
}

std::string RecordNameFor(const RegistryEncoderOptions& options) {
  return options.record_name.empty() ? RecordNameOf(options.subject)
                                     : options.record_name;
}

Result<int32_t> RegisterRowsSchema(SchemaRegistry& registry,
                                   const RegistryEncoderOptions& options,
                                   SchemaFormat format, const std::string& what,
                                   const std::string& text) {
  Result<int32_t> id = registry.Register(options.subject, format, text);
  if (id.ok()) return id;
  return Status(id.status().code(),
                "registering the rows' " + what + " under subject '" + options.subject +
                    "' at " + registry.display_url() + ": " + id.status().message());
}

}  // namespace serde

namespace {

Status Refused(ValueFormat format) {
  if (format == ValueFormat::kJson) {
    return Status::Invalid("the json value format needs no registry encoder");
  }
  return Status::Invalid("unknown value format " +
                         std::to_string(static_cast<int>(format)));
}

class RegistryAvroEncoder final : public serde::RecordEncoder {
 public:
  RegistryAvroEncoder(std::unique_ptr<SchemaRegistry> registry,
                      RegistryEncoderOptions options)
      : registry_(std::move(registry)), options_(std::move(options)) {}

  // The subject's latest schema, once (not with auto_register).
  Status UseLatest(const RegisteredSchema& latest) KELT_EXCLUDES(mu_) {
    KELT_ASSIGN_OR_RAISE(AvroSchema schema, AvroSchema::Parse(latest.text));
    internal::MutexLock lock(&mu_);
    latest_ = std::move(schema);
    latest_header_ = WireHeaderBytes(latest.id);
    return Status::OK();
  }

  Status Encode(const arrow::RecordBatch& batch,
                std::vector<std::string>* payloads) const override KELT_EXCLUDES(mu_) {
    const Entry* entry = nullptr;
    {
      internal::MutexLock lock(&mu_);
      KELT_ASSIGN_OR_RAISE(entry, For(batch.schema()));
    }
    // Entries never move (EntriesBySchema): encoding runs unlocked.
    return entry->encoder->Encode(batch, payloads, entry->header);
  }

  Status Prepare(std::shared_ptr<arrow::Schema> schema) override KELT_EXCLUDES(mu_) {
    internal::MutexLock lock(&mu_);
    return For(schema).status();
  }

 private:
  struct Entry {
    std::unique_ptr<AvroEncoder> encoder;
    std::string header;
  };

  Result<Entry*> For(const std::shared_ptr<arrow::Schema>& schema) const
      KELT_REQUIRES(mu_) {
    if (Entry* known = entries_.Find(*schema)) return known;
    KELT_ASSIGN_OR_RAISE(std::unique_ptr<Entry> made, Make(schema));
    return entries_.Add(schema, std::move(made));
  }

  Result<std::unique_ptr<Entry>> Make(const std::shared_ptr<arrow::Schema>& schema) const
      KELT_REQUIRES(mu_) {
    auto entry = std::make_unique<Entry>();
    if (options_.auto_register) {
      AvroSchemaFromArrowOptions names;
      names.name = serde::RecordNameFor(options_);
      KELT_ASSIGN_OR_RAISE(std::string text, AvroSchemaFromArrow(*schema, names));
      KELT_ASSIGN_OR_RAISE(
          int32_t id, serde::RegisterRowsSchema(*registry_, options_, SchemaFormat::kAvro,
                                                "Avro schema", text));
      KELT_ASSIGN_OR_RAISE(AvroSchema parsed, AvroSchema::Parse(text));
      KELT_ASSIGN_OR_RAISE(entry->encoder, AvroEncoder::Make(schema, parsed));
      entry->header = WireHeaderBytes(id);
    } else {
      auto encoder = AvroEncoder::Make(schema, *latest_);
      if (!encoder.ok()) {
        return Status(encoder.status().code(),
                      "the rows do not fit the latest schema of subject '" +
                          options_.subject + "': " + encoder.status().message());
      }
      entry->encoder = std::move(*encoder);
      entry->header = latest_header_;
    }
    return entry;
  }

  std::unique_ptr<SchemaRegistry> registry_;
  const RegistryEncoderOptions options_;
  mutable internal::Mutex mu_;
  std::optional<AvroSchema> latest_ KELT_GUARDED_BY(mu_);
  std::string latest_header_ KELT_GUARDED_BY(mu_);
  mutable serde::EntriesBySchema<Entry> entries_ KELT_GUARDED_BY(mu_);
};

Status CheckFormat(ValueFormat format) {
  switch (format) {
    case ValueFormat::kAvro:
    case ValueFormat::kProtobuf:
    case ValueFormat::kJsonSchema:
      return Status::OK();
    case ValueFormat::kJson:
      return Refused(format);
  }
  return Refused(format);
}

SchemaFormat SchemaFormatOf(ValueFormat format) {
  return format == ValueFormat::kProtobuf     ? SchemaFormat::kProtobuf
         : format == ValueFormat::kJsonSchema ? SchemaFormat::kJson
                                              : SchemaFormat::kAvro;
}

// The subject's latest schema, which must be of `format`'s schema type.
Result<std::shared_ptr<const RegisteredSchema>> LatestOf(SchemaRegistry& client,
                                                         const std::string& subject,
                                                         ValueFormat format) {
  KELT_ASSIGN_OR_RAISE(auto latest, client.Latest(subject));
  if (latest->format != SchemaFormatOf(format)) {
    return Status::Invalid(
        "subject '" + subject + "' holds a " +
        std::string(SchemaFormatName(latest->format)) + " schema, not the " +
        std::string(SchemaFormatName(SchemaFormatOf(format))) + " schema value format " +
        std::string(ValueFormatName(format)) + " writes");
  }
  return latest;
}

}  // namespace

Result<WriterSchema> LatestWriterSchema(const RegistryOptions& registry,
                                        const std::string& subject, ValueFormat format,
                                        const std::string& message) {
  KELT_RETURN_NOT_OK(CheckFormat(format));
  if (subject.empty()) return Status::Invalid("a registry subject is required");
  if (!message.empty() && format != ValueFormat::kProtobuf) {
    return Status::Invalid("a message name is for value format protobuf");
  }
  KELT_ASSIGN_OR_RAISE(auto client, SchemaRegistry::Make(registry));
  KELT_ASSIGN_OR_RAISE(auto latest, LatestOf(*client, subject, format));
  WriterSchema out;
  out.id = latest->id;
  out.text = latest->text;
  if (format == ValueFormat::kAvro) {
    KELT_ASSIGN_OR_RAISE(AvroSchema schema, AvroSchema::Parse(latest->text));
    KELT_ASSIGN_OR_RAISE(out.arrow_schema, schema.ToArrowSchema());
  } else if (format == ValueFormat::kProtobuf) {
    auto columns = serde::ProtobufColumns(*client, *latest, message);
    if (!columns.ok()) return columns.status().WithPrefix("subject '" + subject + "': ");
    out.arrow_schema = std::move(*columns);
  }
  return out;
}

Result<std::shared_ptr<const PayloadEncoder>> MakeRegistryEncoder(
    const RegistryOptions& registry, const RegistryEncoderOptions& options,
    std::shared_ptr<arrow::Schema> arrow_schema) {
  KELT_RETURN_NOT_OK(CheckFormat(options.format));
  if (options.subject.empty()) return Status::Invalid("a registry subject is required");
  if (!options.message.empty() && options.format != ValueFormat::kProtobuf) {
    return Status::Invalid(
        "message names a Protobuf message: it needs value format "
        "protobuf");
  }
  if (!options.message.empty() && options.auto_register) {
    return Status::Invalid(
        "message picks a message of the subject's latest schema: "
        "not with auto_register (record_name names the derived one)");
  }
  KELT_ASSIGN_OR_RAISE(auto client, SchemaRegistry::Make(registry));
  std::shared_ptr<const RegisteredSchema> latest;
  if (!options.auto_register) {
    KELT_ASSIGN_OR_RAISE(latest, LatestOf(*client, options.subject, options.format));
  }
  std::shared_ptr<serde::RecordEncoder> encoder;
  if (options.format == ValueFormat::kProtobuf) {
    KELT_ASSIGN_OR_RAISE(encoder,
                         serde::MakeProtobufRecords(std::move(client), options, latest));
  } else if (options.format == ValueFormat::kJsonSchema) {
    KELT_ASSIGN_OR_RAISE(
        encoder, serde::MakeJsonSchemaRecords(std::move(client), options, latest));
  } else {
    auto avro = std::make_shared<RegistryAvroEncoder>(std::move(client), options);
    if (latest) KELT_RETURN_NOT_OK(avro->UseLatest(*latest));
    encoder = std::move(avro);
  }
  if (arrow_schema) KELT_RETURN_NOT_OK(encoder->Prepare(std::move(arrow_schema)));
  return std::shared_ptr<const PayloadEncoder>(std::move(encoder));
}

namespace {

namespace dom = simdjson::dom;

Status KeyError(std::string_view key, std::string_view what) {
  return Status::Invalid(std::string(key) + ": " + std::string(what));
}

Status GetString(dom::object obj, std::string_view key, std::string_view where,
                 std::string* out) {
  dom::element e;
  if (obj[key].get(e) != simdjson::SUCCESS || e.is_null()) return Status::OK();
  std::string_view v;
  if (e.get_string().get(v) != simdjson::SUCCESS) {
    return KeyError(std::string(where) + std::string(key), "must be a string");
  }
  *out = std::string(v);
  return Status::OK();
}

}  // namespace

Result<ValueFormatOptions> ParseValueFormatJson(std::string_view object_json) {
  // A parser of its own: callers may hold elements of the thread's shared one.
  dom::parser parser;
  dom::element root;
  if (parser.parse(object_json.data(), object_json.size()).get(root) !=
      simdjson::SUCCESS) {
    return Status::ParseError("the producer config is not JSON");
  }
  dom::object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS) {
    return Status::Invalid("the producer config must be a JSON object");
  }
  ValueFormatOptions out;
  out.encoder.format = ValueFormat::kJson;
  std::string format;
  KELT_RETURN_NOT_OK(GetString(obj, "value_format", "", &format));
  if (!format.empty()) {
    KELT_ASSIGN_OR_RAISE(out.encoder.format, ParseValueFormat(format, "value_format"));
  }
  KELT_RETURN_NOT_OK(GetString(obj, "subject", "", &out.encoder.subject));
  KELT_RETURN_NOT_OK(GetString(obj, "record_name", "", &out.encoder.record_name));
  KELT_RETURN_NOT_OK(GetString(obj, "message", "", &out.encoder.message));
  dom::element e;
  if (obj["auto_register"].get(e) == simdjson::SUCCESS && !e.is_null()) {
    if (e.get_bool().get(out.encoder.auto_register) != simdjson::SUCCESS) {
      return KeyError("auto_register", "must be true or false");
    }
  }
  if (obj["registry"].get(e) == simdjson::SUCCESS && !e.is_null()) {
    dom::object reg;
    if (e.get_object().get(reg) != simdjson::SUCCESS) {
      return KeyError("registry", "must be an object (url, username, password, …)");
    }
    RegistryOptions& r = out.registry;
    for (auto [key, value] : reg) {
      std::string* target = key == "url"                    ? &r.url
                            : key == "username"             ? &r.username
                            : key == "password"             ? &r.password
                            : key == "bearer_token"         ? &r.bearer_token
                            : key == "ca_location"          ? &r.ca_location
                            : key == "certificate_location" ? &r.certificate_location
                            : key == "key_location"         ? &r.key_location
                            : key == "key_password"         ? &r.key_password
                                                            : nullptr;
      if (key == "timeout_ms") {
        int64_t ms = 0;
        if (value.get_int64().get(ms) != simdjson::SUCCESS || ms <= 0) {
          return KeyError("registry.timeout_ms", "must be a positive integer");
        }
        r.timeout = std::chrono::milliseconds(ms);
        continue;
      }
      if (target == nullptr) {
        return KeyError("registry." + std::string(key),
                        "unknown key; expected url, username, password, bearer_token, "
                        "ca_location, certificate_location, key_location, key_password "
                        "or timeout_ms");
      }
      std::string_view v;
      if (value.get_string().get(v) != simdjson::SUCCESS) {
        return KeyError("registry." + std::string(key), "must be a string");
      }
      *target = std::string(v);
    }
  }
  if (out.encoder.format == ValueFormat::kJson) {
    if (!out.encoder.subject.empty() || out.encoder.auto_register ||
        !out.encoder.message.empty()) {
      return KeyError("subject", "needs value_format avro, protobuf or json-schema");
    }
    return out;
  }
  KELT_RETURN_NOT_OK(CheckFormat(out.encoder.format));
  if (out.encoder.subject.empty()) {
    return KeyError("subject", "value_format " + format + " needs a registry subject");
  }
  if (out.registry.url.empty()) {
    return KeyError("registry.url",
                    "value_format " + format + " needs the registry's URL");
  }
  if (!out.encoder.message.empty() && out.encoder.format != ValueFormat::kProtobuf) {
    return KeyError("message",
                    "names a Protobuf message: it needs value_format protobuf");
  }
  if (!out.encoder.message.empty() && out.encoder.auto_register) {
    return KeyError("message",
                    "picks a message of the subject's latest schema: not with "
                    "auto_register (record_name names the derived one)");
  }
  return out;
}

Result<std::shared_ptr<const PayloadEncoder>> MakeValueEncoder(
    const ValueFormatOptions& options, std::shared_ptr<arrow::Schema> arrow_schema) {
  if (options.encoder.format == ValueFormat::kJson) {
    return std::shared_ptr<const PayloadEncoder>();
  }
  return MakeRegistryEncoder(options.registry, options.encoder, std::move(arrow_schema));
}

}  // namespace kelt
