// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The C ABI (capi/include/kelt.h): a shim over the public C++ API. Every entry point
// catches everything (bad_alloc included) and turns it into an envelope or a kelt_error;
// nothing here re-implements a stage.
#include "kelt.h"  // first: its Arrow C structs are the ones arrow/c/abi.h then skips

#include <arrow/c/bridge.h>
#include <arrow/record_batch.h>
#include <simdjson.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kelt/common/text.h"
#include "kelt/config.h"
#include "kelt/dataset.h"
#include "kelt/elt.h"
#include "kelt/kafka.h"
#include "kelt/load.h"
#include "kelt/mock_cluster.h"
#include "kelt/pipeline_json.h"
#include "kelt/poll_load.h"
#include "kelt/rdp.h"
#include "kelt/record.h"
#include "kelt/schema.h"
#include "kelt/serde.h"
#include "kelt/status.h"
#include "kelt/version.h"

namespace {

using kelt::Result;
using kelt::Status;

// ---- RDP envelopes -------------------------------------------------------------------

// Hand `json` to the caller as a slice. The bytes are malloc'ed so that freeing cannot
// depend on which C++ runtime allocated them; cap records the allocation size.
void EmitSlice(RdpJsonSlice* out, std::string_view json) noexcept {
  if (out == nullptr) return;
  out->ptr = nullptr;
  out->len = 0;
  out->cap = 0;
  void* p = std::malloc(json.size() == 0 ? 1 : json.size());
  if (p == nullptr) return;  // nothing left to report with: a NULL slice
  if (!json.empty()) std::memcpy(p, json.data(), json.size());
  out->ptr = static_cast<uint8_t*>(p);
  out->len = json.size();
  out->cap = json.size() == 0 ? 1 : json.size();
}

std::string ErrorEnvelope(std::string_view message) {
  std::string out = "{\"ok\":false,\"error\":";
  kelt::text::AppendJsonString(&out, message);
  out += '}';
  return out;
}

// A static envelope for when even building the error text fails.
constexpr std::string_view kOutOfMemoryEnvelope =
    "{\"ok\":false,\"error\":\"out of memory\"}";

std::string OkEnvelope(std::string_view interchange) {
  std::string out;
  out.reserve(interchange.size() + 32);
  out += "{\"ok\":true,\"interchange\":";
  out += interchange;
  out += '}';
  return out;
}

// Check one C string argument: NULL and invalid UTF-8 get the contract's messages.
Result<std::string_view> Arg(const char* arg, std::string_view name) {
  if (arg == nullptr) return Status::Invalid(std::string(name) + ": null pointer");
  std::string_view s(arg);
  size_t bad = kelt::text::FirstInvalidUtf8(s);
  if (bad != std::string_view::npos) {
    return Status::Invalid(std::string(name) +
                           ": invalid UTF-8: invalid byte sequence at byte offset " +
                           std::to_string(bad));
  }
  return s;
}

// Run `body` (returning Result<std::string> with the interchange JSON) and write the
// envelope; nothing escapes.
template <typename Body>
void RunEnvelope(RdpJsonSlice* out, Body&& body) noexcept {
  try {
    Result<std::string> r = body();
    if (r.ok()) {
      EmitSlice(out, OkEnvelope(*r));
    } else {
      EmitSlice(out, ErrorEnvelope(r.status().message()));
    }
  } catch (const std::bad_alloc&) {
    EmitSlice(out, kOutOfMemoryEnvelope);
  } catch (const std::exception& e) {
    try {
      EmitSlice(out, ErrorEnvelope(std::string("internal error: ") + e.what()));
    } catch (...) {
      EmitSlice(out, kOutOfMemoryEnvelope);
    }
  } catch (...) {
    EmitSlice(out, "{\"ok\":false,\"error\":\"internal error: unknown exception\"}");
  }
}

Result<kelt::Schema> ParseSchemaArg(std::string_view json) {
  auto schema = kelt::ParseSchemaJson(json, kelt::SchemaDialect::kStrict);
  if (!schema.ok()) return schema.status().WithPrefix("schema JSON: ");
  return schema;
}

// A landing schema argument of the form "registry:<subject>" (spaces around allowed).
bool IsRegistrySchema(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\n'))
    text.remove_prefix(1);
  return text.rfind("registry:", 0) == 0;
}

// The consumer config's registry keys (`registry` {url, username, …} as the producer
// config has them, `key_format` raw|registry, `key_subject`, `message`) and the subject
// of `schema_text` ("registry:<subject>"), resolved by the registry now.
Result<kelt::RegistryLanding> RegistryLanding(std::string_view config,
                                              std::string_view schema_text,
                                              const std::vector<std::string>& topics,
                                              const kelt::LoadOptions& load) {
  kelt::RegistryLandingRequest request;
  KELT_ASSIGN_OR_RAISE(kelt::ValueFormatOptions format,
                       kelt::ParseValueFormatJson(config));
  request.registry = std::move(format.registry);
  std::string_view subject = schema_text.substr(schema_text.find(':') + 1);
  while (!subject.empty() && (subject.back() == ' ' || subject.back() == '\n')) {
    subject.remove_suffix(1);
  }
  request.subject = std::string(subject);
  request.topics = topics;
  request.load = load;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(config.data(), config.size()).get(root) != simdjson::SUCCESS) {
    return Status::ParseError("config JSON: not JSON");
  }
  auto text = [&](const char* key, std::string* out) -> Status {
    auto v = root[key];
    if (v.error() != simdjson::SUCCESS || v.is_null()) return Status::OK();
    std::string_view s;
    if (v.get_string().get(s) != simdjson::SUCCESS) {
      return Status::Invalid(std::string(key) + ": expected a string");
    }
    *out = std::string(s);
    return Status::OK();
  };
  KELT_RETURN_NOT_OK(text("message", &request.message));
  KELT_RETURN_NOT_OK(text("key_subject", &request.key_subject));
  std::string key_format;
  KELT_RETURN_NOT_OK(text("key_format", &key_format));
  if (key_format == "registry") {
    request.key_format = kelt::KeyFormat::kRegistry;
  } else if (!key_format.empty() && key_format != "raw") {
    return Status::Invalid("key_format: expected \"raw\" or \"registry\", got \"" +
                           key_format + "\"");
  }
  return kelt::ResolveRegistryLanding(request);
}

// Prefix a config error with "config JSON: " unless the parser already did.
Status ConfigStatus(const Status& st) {
  if (st.message().rfind("config JSON: ", 0) == 0) return st;
  return st.WithPrefix("config JSON: ");
}

Result<std::string> LoadedDataSetJson(const kelt::LoadedWindow& landed) {
  KELT_ASSIGN_OR_RAISE(kelt::DataSet ds, kelt::RecordBatchToDataSet(*landed.batch));
  return kelt::DataSetToJson(ds);
}

// ---- kelt_* errors -------------------------------------------------------------------

kelt_status ToCStatus(kelt::StatusCode code) {
  switch (code) {
    case kelt::StatusCode::kOk:
      return KELT_OK;
    case kelt::StatusCode::kInvalid:
      return KELT_INVALID;
    case kelt::StatusCode::kParseError:
      return KELT_PARSE_ERROR;
    case kelt::StatusCode::kTypeError:
      return KELT_TYPE_ERROR;
    case kelt::StatusCode::kIOError:
      return KELT_IO_ERROR;
    case kelt::StatusCode::kKafka:
      return KELT_KAFKA;
    case kelt::StatusCode::kUnavailable:
      return KELT_UNAVAILABLE;
    case kelt::StatusCode::kNotFound:
      return KELT_NOT_FOUND;
    case kelt::StatusCode::kCancelled:
      return KELT_CANCELLED;
    case kelt::StatusCode::kNotImplemented:
      return KELT_NOT_IMPLEMENTED;
    case kelt::StatusCode::kInternal:
      return KELT_INTERNAL;
  }
  return KELT_INTERNAL;
}

const char* CodeName(kelt_status code) {
  switch (code) {
    case KELT_OK:
      return "OK";
    case KELT_INVALID:
      return "INVALID";
    case KELT_PARSE_ERROR:
      return "PARSE_ERROR";
    case KELT_TYPE_ERROR:
      return "TYPE_ERROR";
    case KELT_IO_ERROR:
      return "IO_ERROR";
    case KELT_KAFKA:
      return "KAFKA";
    case KELT_UNAVAILABLE:
      return "UNAVAILABLE";
    case KELT_NOT_FOUND:
      return "NOT_FOUND";
    case KELT_CANCELLED:
      return "CANCELLED";
    case KELT_NOT_IMPLEMENTED:
      return "NOT_IMPLEMENTED";
    case KELT_INTERNAL:
      return "INTERNAL";
    case KELT_OUT_OF_MEMORY:
      return "OUT_OF_MEMORY";
  }
  return "INTERNAL";
}

}  // namespace

struct kelt_error {
  kelt_status code;
  bool retriable;
  std::string message;
};

// A statically allocated error for when allocating one fails: kelt_error_free never
// frees it.
static kelt_error g_out_of_memory{KELT_OUT_OF_MEMORY, false, {}};

namespace {

kelt_status Fail(kelt_error** err, kelt_status code, std::string message,
                 bool retriable) noexcept {
  if (err == nullptr) return code;
  try {
    *err = new kelt_error{code, retriable, std::move(message)};
  } catch (...) {
    *err = &g_out_of_memory;
  }
  return code;
}

kelt_status Fail(kelt_error** err, const Status& st) noexcept {
  return Fail(err, ToCStatus(st.code()), st.message(), st.retriable());
}

// Run `body` (returning Status) with every exception turned into an error.
template <typename Body>
kelt_status Guard(kelt_error** err, Body&& body) noexcept {
  try {
    Status st = body();
    if (st.ok()) return KELT_OK;
    return Fail(err, st);
  } catch (const std::bad_alloc&) {
    return Fail(err, KELT_OUT_OF_MEMORY, "out of memory", false);
  } catch (const std::exception& e) {
    return Fail(err, KELT_INTERNAL, std::string("internal error: ") + e.what(), false);
  } catch (...) {
    return Fail(err, KELT_INTERNAL, "internal error: unknown exception", false);
  }
}

Status NullArg(std::string_view name) {
  return Status::Invalid(std::string(name) + ": null pointer");
}

// A NUL-terminated copy owned by the caller (kelt_string_free).
Status EmitString(char** out, std::string_view s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p == nullptr) throw std::bad_alloc();
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  *out = p;
  return Status::OK();
}

void AppendKeyString(std::string* out, std::string_view key, std::string_view value) {
  kelt::text::AppendJsonString(out, key);
  *out += ':';
  kelt::text::AppendJsonString(out, value);
}

void AppendKeyInt(std::string* out, std::string_view key, int64_t value) {
  kelt::text::AppendJsonString(out, key);
  *out += ':';
  kelt::text::AppendInt64(out, value);
}

Status ExportBatch(const std::shared_ptr<arrow::RecordBatch>& batch,
                   struct ArrowArrayStream* out) {
  if (batch == nullptr) return Status::Internal("window: no batch");
  auto reader = arrow::RecordBatchReader::Make({batch}, batch->schema());
  if (!reader.ok()) return Status::Internal(reader.status().ToString());
  arrow::Status st = arrow::ExportRecordBatchReader(*reader, out);
  if (!st.ok()) return Status::Internal("Arrow C stream export: " + st.ToString());
  return Status::OK();
}

}  // namespace

// A consumer handle: the consumer, the loader of its landing schema, the window bounds.
struct kelt_consumer {
  std::unique_ptr<kelt::Consumer> consumer;
  std::unique_ptr<kelt::Loader> loader;
  kelt::Schema landing;    // what the loader was made of: a registry landing grows
  kelt::LoadOptions load;  // (kelt_consumer_poll)
  kelt::WindowOptions window;
  bool closed = false;
};

// A loaded window. It keeps only what commit needs (the spans), not librdkafka's
// messages, so that it may outlive its consumer.
struct kelt_window {
  kelt::LoadedWindow landed;
  std::vector<kelt::PartitionSpan> spans;
  kelt::WindowEnd end = kelt::WindowEnd::kDeadline;
  int64_t records = 0;
  int64_t bytes = 0;
};

// An ELT loop handle.
struct kelt_pipeline {
  std::unique_ptr<kelt::EltLoop> loop;
  bool closed = false;
};

// A mock cluster handle.
struct kelt_mock_cluster {
  std::unique_ptr<kelt::MockCluster> cluster;
};

extern "C" {

// ---- RDP calls
// -------------------------------------------------------------------------

uint32_t rdp_ffi_abi_version(void) { return 406; }

void rdp_json_slice_free(RdpJsonSlice s) { std::free(s.ptr); }

void rdp_kafka_elt_load_records_json(RdpJsonSlice* out, const char* records_json,
                                     const char* schema_json) {
  RunEnvelope(out, [&]() -> Result<std::string> {
    KELT_ASSIGN_OR_RAISE(std::string_view records, Arg(records_json, "records_json"));
    KELT_ASSIGN_OR_RAISE(std::string_view schema_text, Arg(schema_json, "schema_json"));
    KELT_ASSIGN_OR_RAISE(kelt::Schema schema, ParseSchemaArg(schema_text));
    KELT_ASSIGN_OR_RAISE(kelt::LoadedWindow landed,
                         kelt::LoadRecordsJson(records, schema));
    KELT_ASSIGN_OR_RAISE(std::string dataset, LoadedDataSetJson(landed));
    return "{\"kind\":\"kafka_elt_load\",\"dataset\":" + dataset + "}";
  });
}

void rdp_kafka_poll_window_json(RdpJsonSlice* out, const char* consumer_config_json) {
  RunEnvelope(out, [&]() -> Result<std::string> {
    KELT_ASSIGN_OR_RAISE(std::string_view config,
                         Arg(consumer_config_json, "consumer_config_json"));
    auto call = kelt::rdp::ParseConsumerConfigJson(config);
    if (!call.ok()) return ConfigStatus(call.status());
    KELT_ASSIGN_OR_RAISE(std::vector<kelt::StreamRecord> records,
                         kelt::rdp::PollKafkaWindow(*call));
    std::string json = "{\"kind\":\"kafka_poll_window\",\"records\":[";
    for (size_t i = 0; i < records.size(); ++i) {
      if (i > 0) json += ',';
      json += kelt::RecordToJson(records[i]);
    }
    json += "]}";
    return json;
  });
}

void rdp_kafka_poll_window_loaded_json(RdpJsonSlice* out,
                                       const char* consumer_config_json,
                                       const char* schema_json) {
  RunEnvelope(out, [&]() -> Result<std::string> {
    KELT_ASSIGN_OR_RAISE(std::string_view config,
                         Arg(consumer_config_json, "consumer_config_json"));
    KELT_ASSIGN_OR_RAISE(std::string_view schema_text, Arg(schema_json, "schema_json"));
    auto call = kelt::rdp::ParseConsumerConfigJson(config);
    if (!call.ok()) return ConfigStatus(call.status());
    KELT_ASSIGN_OR_RAISE(kelt::Schema schema, ParseSchemaArg(schema_text));
    KELT_ASSIGN_OR_RAISE(kelt::LoadedWindow landed,
                         kelt::rdp::PollKafkaWindowLoaded(*call, schema));
    KELT_ASSIGN_OR_RAISE(std::string dataset, LoadedDataSetJson(landed));
    return "{\"kind\":\"kafka_poll_window_loaded\",\"dataset\":" + dataset + "}";
  });
}

void rdp_kafka_export_dataset_json(RdpJsonSlice* out, const char* producer_config_json,
                                   const char* dataset_json) {
  RunEnvelope(out, [&]() -> Result<std::string> {
    KELT_ASSIGN_OR_RAISE(std::string_view config,
                         Arg(producer_config_json, "producer_config_json"));
    KELT_ASSIGN_OR_RAISE(std::string_view data, Arg(dataset_json, "dataset_json"));
    auto options = kelt::rdp::ParseProducerConfigJson(config);
    if (!options.ok()) return ConfigStatus(options.status());
    // value_format, subject, registry{…}: Avro in the Confluent wire format (serde.h).
    auto format = kelt::ParseValueFormatJson(config);
    if (!format.ok()) return ConfigStatus(format.status());
    KELT_ASSIGN_OR_RAISE(options->value_encoder, kelt::MakeValueEncoder(*format));
    auto dataset = kelt::ParseDataSetJson(data, kelt::SchemaDialect::kStrict);
    if (!dataset.ok()) return dataset.status().WithPrefix("dataset JSON: ");
    KELT_ASSIGN_OR_RAISE(int64_t sent, kelt::ExportDataSetToKafka(*options, *dataset));
    std::string json = "{\"kind\":\"kafka_export\",";
    AppendKeyString(&json, "topic", options->topic);
    json += ',';
    AppendKeyInt(&json, "row_count", sent);
    json += '}';
    return json;
  });
}

void rdp_run_pipeline_json(RdpJsonSlice* out, const char* pipeline_json) {
  // Argument errors use §5's string envelope like every rdp_* call; the runner's own
  // failures are §6's {"code","message","stage"} object.
  try {
    auto arg = Arg(pipeline_json, "pipeline_json");
    if (!arg.ok()) {
      EmitSlice(out, ErrorEnvelope(arg.status().message()));
      return;
    }
    EmitSlice(out, kelt::RunPipelineJson(*arg));
  } catch (const std::bad_alloc&) {
    EmitSlice(out, kOutOfMemoryEnvelope);
  } catch (...) {
    EmitSlice(out, "{\"ok\":false,\"error\":\"internal error: unknown exception\"}");
  }
}

// ---- kelt_*
// ------------------------------------------------------------------------------

uint32_t kelt_abi_version(void) { return KELT_ABI_VERSION; }
uint32_t kelt_c_api_version(void) { return KELT_ABI_VERSION; }
const char* kelt_version(void) { return KELT_VERSION_STRING; }

kelt_status kelt_error_code(const kelt_error* err) {
  return err == nullptr ? KELT_OK : err->code;
}
const char* kelt_error_code_name(const kelt_error* err) {
  return CodeName(err == nullptr ? KELT_OK : err->code);
}
const char* kelt_error_message(const kelt_error* err) {
  if (err == nullptr) return "";
  if (err == &g_out_of_memory) return "out of memory";
  return err->message.c_str();
}
int kelt_error_retriable(const kelt_error* err) {
  return err != nullptr && err->retriable ? 1 : 0;
}
void kelt_error_free(kelt_error* err) {
  if (err != &g_out_of_memory) delete err;
}

void kelt_string_free(char* s) { std::free(s); }

kelt_status kelt_consumer_new(const char* config_json, const char* landing_schema_json,
                              kelt_consumer** out, kelt_error** err) {
  return Guard(err, [&]() -> Status {
    if (out == nullptr) return NullArg("out");
    *out = nullptr;
    KELT_ASSIGN_OR_RAISE(std::string_view config, Arg(config_json, "config_json"));
    KELT_ASSIGN_OR_RAISE(std::string_view schema_text,
                         Arg(landing_schema_json, "landing_schema_json"));
    auto call = kelt::rdp::ParseConsumerConfigJson(config);
    if (!call.ok()) return ConfigStatus(call.status());
    // kelt's key beyond the RDP poll config: the bad-record policy.
    kelt::LoadOptions load;
    {
      simdjson::dom::parser parser;
      simdjson::dom::element root;
      std::string_view policy;
      if (parser.parse(config.data(), config.size()).get(root) == simdjson::SUCCESS) {
        auto v = root["on_bad_record"];
        if (v.error() == simdjson::SUCCESS && !v.is_null()) {
          if (v.get_string().get(policy) != simdjson::SUCCESS) {
            return Status::Invalid(
                "config JSON: on_bad_record: expected \"fail\", \"skip\" or "
                "\"dead_letter\"");
          }
          auto p = kelt::ParseBadRecordPolicy(policy);
          if (!p) {
            return Status::Invalid(
                "config JSON: on_bad_record: expected \"fail\", \"skip\" or "
                "\"dead_letter\", got \"" +
                std::string(policy) + "\"");
          }
          load.on_bad_record = *p;
        }
      }
    }
    kelt::Schema schema;
    if (IsRegistrySchema(schema_text)) {
      // "registry:<subject>": the subject's latest schema, asked of the registry now.
      auto landing = RegistryLanding(config, schema_text, call->consumer.topics, load);
      if (!landing.ok()) return ConfigStatus(landing.status());
      schema = std::move(landing->landing);
      load = std::move(landing->load);
    } else {
      KELT_ASSIGN_OR_RAISE(schema, ParseSchemaArg(schema_text));
    }
    auto handle = std::make_unique<kelt_consumer>();
    KELT_ASSIGN_OR_RAISE(handle->loader, kelt::Loader::Make(schema, load));
    handle->landing = std::move(schema);
    handle->load = std::move(load);
    KELT_ASSIGN_OR_RAISE(handle->consumer, kelt::Consumer::Make(call->consumer));
    handle->window = call->window;
    *out = handle.release();
    return Status::OK();
  });
}

kelt_status kelt_consumer_poll(kelt_consumer* consumer, kelt_window** out,
                               kelt_error** err) {
  return Guard(err, [&]() -> Status {
    if (consumer == nullptr) return NullArg("consumer");
    if (out == nullptr) return NullArg("out");
    *out = nullptr;
    if (consumer->closed) return Status::Invalid("consumer: already closed");
    auto poll = [&] {
      return kelt::PollLoaded(*consumer->consumer, *consumer->loader, consumer->window);
    };
    auto loaded = poll();
    // A registry record of a newer schema version with more columns stopped the load
    // (the window was given back): the landing grows to it and the window loads again.
    for (int growth = 0; !loaded.ok() && growth < 16 &&
                         loaded.status().code() == kelt::StatusCode::kCancelled &&
                         consumer->loader->newer_writer_schema() >= 0;
         ++growth) {
      auto grown =
          kelt::GrownLoadOptions(consumer->load, consumer->loader->newer_writer_schema());
      if (!grown.ok()) return grown.status().WithPrefix("growing the landing schema: ");
      KELT_ASSIGN_OR_RAISE(consumer->loader,
                           kelt::Loader::Make(consumer->landing, *grown));
      consumer->load = std::move(*grown);
      loaded = poll();
    }
    KELT_ASSIGN_OR_RAISE(kelt::LoadedPoll polled, std::move(loaded));
    const kelt::Window& w = polled.window;
    auto handle = std::make_unique<kelt_window>();
    handle->landed = std::move(polled.loaded);
    handle->spans = w.spans();
    handle->end = w.end_reason();
    handle->records = static_cast<int64_t>(w.size());
    handle->bytes = w.bytes();
    *out = handle.release();
    return Status::OK();
  });
}

kelt_status kelt_consumer_commit(kelt_consumer* consumer, const kelt_window* window,
                                 kelt_error** err) {
  return Guard(err, [&]() -> Status {
    if (consumer == nullptr) return NullArg("consumer");
    if (window == nullptr) return NullArg("window");
    if (consumer->closed) return Status::Invalid("consumer: already closed");
    std::map<kelt::TopicPartition, int64_t> next;
    for (const kelt::PartitionSpan& span : window->spans) {
      if (span.count > 0) next[span.tp] = span.last_offset + 1;
    }
    if (next.empty()) return Status::OK();
    return consumer->consumer->CommitOffsets(next);
  });
}

kelt_status kelt_consumer_lag_json(kelt_consumer* consumer, int32_t timeout_ms,
                                   char** out, kelt_error** err) {
  return Guard(err, [&]() -> Status {
    if (consumer == nullptr) return NullArg("consumer");
    if (out == nullptr) return NullArg("out");
    *out = nullptr;
    if (consumer->closed) return Status::Invalid("consumer: already closed");
    if (timeout_ms < 0) return Status::Invalid("timeout_ms: must not be negative");
    KELT_ASSIGN_OR_RAISE(std::vector<kelt::PartitionLag> lags,
                         consumer->consumer->Lag(std::chrono::milliseconds(timeout_ms)));
    std::string json = "{\"partitions\":[";
    int64_t total = 0;
    for (size_t i = 0; i < lags.size(); ++i) {
      const kelt::PartitionLag& l = lags[i];
      if (i > 0) json += ',';
      json += '{';
      AppendKeyString(&json, "topic", l.tp.topic);
      json += ',';
      AppendKeyInt(&json, "partition", l.tp.partition);
      json += ',';
      AppendKeyInt(&json, "position", l.position);
      json += ',';
      AppendKeyInt(&json, "high_watermark", l.high_watermark);
      json += ',';
      AppendKeyInt(&json, "lag", l.lag);
      json += '}';
      if (l.lag > 0) total += l.lag;
    }
    json += "],";
    AppendKeyInt(&json, "total_lag", total);
    json += '}';
    return EmitString(out, json);
  });
}

kelt_status kelt_consumer_close(kelt_consumer* consumer, kelt_error** err) {
  return Guard(err, [&]() -> Status {
    if (consumer == nullptr) return NullArg("consumer");
    if (consumer->closed) return Status::OK();
    consumer->closed = true;
    return consumer->consumer->Close();
  });
}

void kelt_consumer_free(kelt_consumer* consumer) {
  if (consumer == nullptr) return;
  try {
    if (!consumer->closed) (void)consumer->consumer->Close();
  } catch (...) {
  }
  delete consumer;
}

int64_t kelt_window_num_rows(const kelt_window* window) {
  if (window == nullptr || window->landed.batch == nullptr) return 0;
  return window->landed.batch->num_rows();
}

int64_t kelt_window_num_records(const kelt_window* window) {
  return window == nullptr ? 0 : window->records;
}

kelt_status kelt_window_to_arrow_stream(const kelt_window* window,
                                        struct ArrowArrayStream* out, kelt_error** err) {
  return Guard(err, [&]() -> Status {
    if (window == nullptr) return NullArg("window");
    if (out == nullptr) return NullArg("out");
    return ExportBatch(window->landed.batch, out);
  });
}

kelt_status kelt_window_dead_letters_to_arrow_stream(const kelt_window* window,
                                                     struct ArrowArrayStream* out,
                                                     kelt_error** err) {
  return Guard(err, [&]() -> Status {
    if (window == nullptr) return NullArg("window");
    if (out == nullptr) return NullArg("out");
    return ExportBatch(window->landed.dead_letters, out);
  });
}

kelt_status kelt_window_to_dataset_json(const kelt_window* window, char** out,
                                        kelt_error** err) {
  return Guard(err, [&]() -> Status {
    if (window == nullptr) return NullArg("window");
    if (out == nullptr) return NullArg("out");
    *out = nullptr;
    KELT_ASSIGN_OR_RAISE(std::string json, LoadedDataSetJson(window->landed));
    return EmitString(out, json);
  });
}

kelt_status kelt_window_info_json(const kelt_window* window, char** out,
                                  kelt_error** err) {
  return Guard(err, [&]() -> Status {
    if (window == nullptr) return NullArg("window");
    if (out == nullptr) return NullArg("out");
    *out = nullptr;
    const kelt::LoadStats& s = window->landed.stats;
    std::string json = "{";
    AppendKeyInt(&json, "records", window->records);
    json += ',';
    AppendKeyInt(&json, "rows", kelt_window_num_rows(window));
    json += ',';
    AppendKeyInt(&json, "bad_records", s.bad_records);
    json += ',';
    AppendKeyInt(&json, "skipped", s.skipped);
    json += ',';
    AppendKeyInt(&json, "dead_lettered", s.dead_lettered);
    json += ',';
    AppendKeyInt(&json, "tombstones", s.tombstones);
    json += ',';
    AppendKeyInt(&json, "bytes", window->bytes);
    json += ',';
    AppendKeyString(&json, "end", kelt::WindowEndName(window->end));
    json += ",\"spans\":[";
    for (size_t i = 0; i < window->spans.size(); ++i) {
      const kelt::PartitionSpan& sp = window->spans[i];
      if (i > 0) json += ',';
      json += '{';
      AppendKeyString(&json, "topic", sp.tp.topic);
      json += ',';
      AppendKeyInt(&json, "partition", sp.tp.partition);
      json += ',';
      AppendKeyInt(&json, "first_offset", sp.first_offset);
      json += ',';
      AppendKeyInt(&json, "last_offset", sp.last_offset);
      json += ',';
      AppendKeyInt(&json, "count", sp.count);
      json += '}';
    }
    json += "]}";
    return EmitString(out, json);
  });
}

void kelt_window_free(kelt_window* window) { delete window; }

// ---- pipeline
// ----------------------------------------------------------------------------

kelt_status kelt_pipeline_new(const char* config, const char* base_dir,
                              kelt_pipeline** out, kelt_error** err) {
  return Guard(err, [&]() -> Status {
    if (out == nullptr) return NullArg("out");
    *out = nullptr;
    KELT_ASSIGN_OR_RAISE(std::string_view text, Arg(config, "config"));
    std::filesystem::path dir = std::filesystem::current_path();
    if (base_dir != nullptr) {
      KELT_ASSIGN_OR_RAISE(std::string_view d, Arg(base_dir, "base_dir"));
      dir = std::filesystem::path(std::string(d));
    }
    auto parsed = kelt::ParseEltConfig(text, dir);
    if (!parsed.ok()) return parsed.status().WithPrefix("config: ");
    KELT_ASSIGN_OR_RAISE(std::vector<std::unique_ptr<kelt::Sink>> sinks,
                         kelt::MakeSinks(*parsed));
    auto handle = std::make_unique<kelt_pipeline>();
    KELT_ASSIGN_OR_RAISE(handle->loop,
                         kelt::EltLoop::Make(std::move(parsed->elt), std::move(sinks)));
    *out = handle.release();
    return Status::OK();
  });
}

kelt_status kelt_pipeline_step(kelt_pipeline* pipeline, int* more, kelt_error** err) {
  return Guard(err, [&]() -> Status {
    if (pipeline == nullptr) return NullArg("pipeline");
    if (pipeline->closed) return Status::Invalid("pipeline: already closed");
    KELT_ASSIGN_OR_RAISE(bool go_on, pipeline->loop->Step());
    if (more != nullptr) *more = go_on ? 1 : 0;
    return Status::OK();
  });
}

kelt_status kelt_pipeline_run(kelt_pipeline* pipeline, kelt_error** err) {
  return Guard(err, [&]() -> Status {
    if (pipeline == nullptr) return NullArg("pipeline");
    if (pipeline->closed) return Status::Invalid("pipeline: already closed");
    // Run() flushes, commits and leaves the group at the end: the loop is closed after.
    pipeline->closed = true;
    return pipeline->loop->Run().status();
  });
}

kelt_status kelt_pipeline_stats_json(const kelt_pipeline* pipeline, char** out,
                                     kelt_error** err) {
  return Guard(err, [&]() -> Status {
    if (pipeline == nullptr) return NullArg("pipeline");
    if (out == nullptr) return NullArg("out");
    *out = nullptr;
    const kelt::EltStats& s = pipeline->loop->stats();
    std::string json = "{";
    AppendKeyInt(&json, "windows", s.windows);
    json += ',';
    AppendKeyInt(&json, "records", s.records);
    json += ',';
    AppendKeyInt(&json, "bytes", s.bytes);
    json += ',';
    AppendKeyInt(&json, "rows", s.rows);
    json += ',';
    AppendKeyInt(&json, "bad_records", s.bad_records);
    json += ',';
    AppendKeyInt(&json, "dead_lettered", s.dead_lettered);
    json += ',';
    AppendKeyInt(&json, "sink_errors", s.sink_errors);
    json += s.caught_up ? ",\"caught_up\":true" : ",\"caught_up\":false";
    json += ",\"committed\":[";
    bool first = true;
    for (const auto& [tp, next] : s.committed) {
      if (!first) json += ',';
      first = false;
      json += '{';
      AppendKeyString(&json, "topic", tp.topic);
      json += ',';
      AppendKeyInt(&json, "partition", tp.partition);
      json += ',';
      AppendKeyInt(&json, "next_offset", next);
      json += '}';
    }
    json += "]}";
    return EmitString(out, json);
  });
}

kelt_status kelt_pipeline_close(kelt_pipeline* pipeline, kelt_error** err) {
  return Guard(err, [&]() -> Status {
    if (pipeline == nullptr) return NullArg("pipeline");
    if (pipeline->closed) return Status::OK();
    pipeline->closed = true;
    return pipeline->loop->Close();
  });
}

void kelt_pipeline_free(kelt_pipeline* pipeline) {
  if (pipeline == nullptr) return;
  try {
    if (!pipeline->closed) (void)pipeline->loop->Close();
  } catch (...) {
  }
  delete pipeline;
}

// ---- mock cluster
// ------------------------------------------------------------------------

kelt_status kelt_mock_cluster_new(int32_t brokers, kelt_mock_cluster** out,
                                  kelt_error** err) {
  return Guard(err, [&]() -> Status {
    if (out == nullptr) return NullArg("out");
    *out = nullptr;
    auto handle = std::make_unique<kelt_mock_cluster>();
    KELT_ASSIGN_OR_RAISE(handle->cluster, kelt::MockCluster::Make(brokers));
    *out = handle.release();
    return Status::OK();
  });
}

const char* kelt_mock_cluster_bootstraps(const kelt_mock_cluster* cluster) {
  if (cluster == nullptr) return "";
  return cluster->cluster->bootstraps().c_str();
}

kelt_status kelt_mock_cluster_create_topic(kelt_mock_cluster* cluster, const char* name,
                                           int32_t partitions, int32_t replication_factor,
                                           kelt_error** err) {
  return Guard(err, [&]() -> Status {
    if (cluster == nullptr) return NullArg("cluster");
    KELT_ASSIGN_OR_RAISE(std::string_view topic, Arg(name, "name"));
    if (replication_factor > INT16_MAX) {
      return Status::Invalid("mock cluster: replication factor " +
                             std::to_string(replication_factor) + " is out of range");
    }
    return cluster->cluster->CreateTopic(std::string(topic), partitions,
                                         static_cast<int16_t>(replication_factor));
  });
}

void kelt_mock_cluster_free(kelt_mock_cluster* cluster) { delete cluster; }

}  // extern "C"
