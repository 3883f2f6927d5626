// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Protobuf records in the Confluent wire format: the header (magic byte, schema id), the
// message indexes of the message written, then the body ProtobufEncoder writes.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kelt/common/mutex.h"
#include "kelt/common/thread_annotations.h"
#include "kelt/protobuf.h"
#include "kelt/serde/record_encoders.h"

namespace kelt::serde {
namespace {

Result<ProtobufSchema> ParseRegistered(SchemaRegistry& registry,
                                       const RegisteredSchema& schema) {
  KELT_ASSIGN_OR_RAISE(auto referenced, registry.ResolveReferences(schema.references));
  std::vector<ProtobufImport> imports;
  for (auto& r : referenced) imports.push_back({std::move(r.name), std::move(r.text)});
  return ProtobufSchema::Parse(schema.text, imports);
}

class ProtobufRecords final : public RecordEncoder {
 public:
  ProtobufRecords(std::unique_ptr<SchemaRegistry> registry,
                  RegistryEncoderOptions options)
      : registry_(std::move(registry)), options_(std::move(options)) {}

  Status UseLatest(const RegisteredSchema& latest) KELT_EXCLUDES(mu_) {
    KELT_ASSIGN_OR_RAISE(ProtobufSchema schema, ParseRegistered(*registry_, latest));
    KELT_ASSIGN_OR_RAISE(std::vector<int32_t> indexes,
                         schema.MessageIndexes(options_.message));
    internal::MutexLock lock(&mu_);
    latest_header_ = WireHeaderBytes(latest.id) + ProtobufMessageIndexesBytes(indexes);
    latest_indexes_ = std::move(indexes);
    latest_.emplace(std::move(schema));
    return Status::OK();
  }

  // ProtobufEncoder (a DynamicMessage) is not thread-safe: one batch at a time per
  // encoder. Producing is not the hot path (bench/README.md has the figure).
  Status Encode(const arrow::RecordBatch& batch,
                std::vector<std::string>* payloads) const override KELT_EXCLUDES(mu_) {
    internal::MutexLock lock(&mu_);
    KELT_ASSIGN_OR_RAISE(Entry * entry, For(batch.schema()));
    bodies_.clear();
    KELT_RETURN_NOT_OK(entry->encoder->Encode(batch, &bodies_));
    payloads->reserve(payloads->size() + bodies_.size());
    for (const std::string& body : bodies_) {
      std::string payload;
      payload.reserve(entry->header.size() + body.size());
      payload += entry->header;
      payload += body;
      payloads->push_back(std::move(payload));
    }
    return Status::OK();
  }

  Status Prepare(std::shared_ptr<arrow::Schema> schema) override KELT_EXCLUDES(mu_) {
    internal::MutexLock lock(&mu_);
    return For(std::move(schema)).status();
  }

 private:
  struct Entry {
    std::unique_ptr<ProtobufEncoder> encoder;
    std::string header;  // magic byte, schema id, message indexes
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
      ProtobufSchemaFromArrowOptions names;
      names.message_name = RecordNameFor(options_);
      KELT_ASSIGN_OR_RAISE(std::string text, ProtobufSchemaFromArrow(*schema, names));
      KELT_ASSIGN_OR_RAISE(ProtobufSchema parsed, ProtobufSchema::Parse(text));
      KELT_ASSIGN_OR_RAISE(entry->encoder, ProtobufEncoder::Make(parsed, {0}, schema));
      KELT_ASSIGN_OR_RAISE(
          int32_t id, RegisterRowsSchema(*registry_, options_, SchemaFormat::kProtobuf,
                                         "Protobuf schema", text));
      entry->header = WireHeaderBytes(id) + ProtobufMessageIndexesBytes({0});
    } else {
      auto encoder = ProtobufEncoder::Make(*latest_, latest_indexes_, schema);
      if (!encoder.ok()) {
        auto name = latest_->MessageName(latest_indexes_);
        return Status(encoder.status().code(), "the rows do not fit message " +
                                                   (name.ok() ? *name : "?") +
                                                   " of subject '" + options_.subject +
                                                   "': " + encoder.status().message());
      }
      entry->encoder = std::move(*encoder);
      entry->header = latest_header_;
    }
    return entry;
  }

  std::unique_ptr<SchemaRegistry> registry_;
  const RegistryEncoderOptions options_;
  mutable internal::Mutex mu_;
  std::optional<ProtobufSchema> latest_ KELT_GUARDED_BY(mu_);
  std::vector<int32_t> latest_indexes_ KELT_GUARDED_BY(mu_);
  std::string latest_header_ KELT_GUARDED_BY(mu_);
  mutable EntriesBySchema<Entry> entries_ KELT_GUARDED_BY(mu_);
  mutable std::vector<std::string> bodies_ KELT_GUARDED_BY(mu_);
};

}  // namespace

Result<std::shared_ptr<RecordEncoder>> MakeProtobufRecords(
    std::unique_ptr<SchemaRegistry> registry, const RegistryEncoderOptions& options,
    std::shared_ptr<const RegisteredSchema> latest) {
  auto encoder = std::make_shared<ProtobufRecords>(std::move(registry), options);
  if (latest) {
    Status st = encoder->UseLatest(*latest);
    if (!st.ok()) return st.WithPrefix("subject '" + options.subject + "': ");
  }
  return std::shared_ptr<RecordEncoder>(std::move(encoder));
}

Result<std::shared_ptr<arrow::Schema>> ProtobufColumns(SchemaRegistry& registry,
                                                       const RegisteredSchema& schema,
                                                       const std::string& message) {
  KELT_ASSIGN_OR_RAISE(ProtobufSchema parsed, ParseRegistered(registry, schema));
  KELT_ASSIGN_OR_RAISE(std::vector<int32_t> indexes, parsed.MessageIndexes(message));
  KELT_ASSIGN_OR_RAISE(auto plan, ProtobufPlan::Compile(parsed, indexes));
  return plan->arrow_schema();
}

}  // namespace kelt::serde
