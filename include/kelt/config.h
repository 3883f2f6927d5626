// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The ELT service's configuration: one YAML document (JSON is accepted: it is a subset
// of YAML) → EltOptions + the sinks. Shared by the `kelt` command, the C ABI and the
// Python package so a config file means the same everywhere. Every key can also be set
// by an override ("window.max_records" = "5000"), which is how flags and environment
// variables reach it: precedence flag > environment > file > default.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/elt.h"
#include "kelt/log.h"
#include "kelt/registry.h"
#include "kelt/sink.h"
#include "kelt/status.h"

namespace kelt {

/// One configured sink: exactly one of the option structs is in use, per `kind`.
struct SinkConfig {
  enum class Kind { kParquet, kDuckDb, kPostgres, kIceberg };
  Kind kind = Kind::kParquet;
  ParquetSinkOptions parquet;
  DuckDbSinkOptions duckdb;
  PostgresSinkOptions postgres;
  IcebergSinkOptions iceberg;
};

/// "parquet", "duckdb", "postgres" or "iceberg".
std::string_view SinkKindName(SinkConfig::Kind kind);
/// The kind of a sink name: SinkKindName's, and "postgresql" (the Python package's
/// older name) for kPostgres.
std::optional<SinkConfig::Kind> ParseSinkKind(std::string_view name);

/// What `kelt run` shows while it runs: a bar on a terminal and lines otherwise
/// (kAuto), always a bar, periodic lines, or nothing.
enum class ProgressMode : uint8_t { kAuto, kBar, kLines, kNone };

/// "auto", "bar", "lines", "none".
std::string_view ProgressModeName(ProgressMode mode);

/// How record keys land: raw (the landing's `_kafka_key` column takes them as text or
/// bytes), or decoded by a Schema Registry subject's schema into the `_kafka_key` column
/// (`key.format: registry`, LoadOptions::key).
enum class KeyFormat : uint8_t { kRaw, kRegistry };

/// "raw", "registry".
std::string_view KeyFormatName(KeyFormat format);

/// Everything `kelt run` needs. `elt.should_stop` is left empty (the caller's).
struct EltConfig {
  EltOptions elt;
  std::vector<SinkConfig> sinks;
  /// Where the landing schema came from: a file path (resolved), "inline", or
  /// "registry <url> subject <s> version <v> (id <i>)".
  std::string schema_origin;
  /// The Schema Registry (`registry.*`): payloads in its wire format, and the subject
  /// whose latest schema is the landing's (`schema: registry:<subject>`; empty: none).
  /// With a subject, `elt.load.avro` or `elt.load.protobuf` reads the payloads and
  /// `elt.landing` holds the `_kafka_*` columns only. `schema_message`: a Protobuf
  /// subject's message to land (`schema.registry.message`; empty: the file's first).
  RegistryOptions registry;
  std::string schema_subject;
  std::string schema_message;
  /// Record keys (`key.*`): with kRegistry, the subject `key_subject` (default
  /// `<topic>-key` for a single topic) decodes them; `elt.load.key` is then set.
  KeyFormat key_format = KeyFormat::kRaw;
  std::string key_subject;
  /// Prometheus endpoint: port 0 means off.
  int metrics_port = 0;
  std::string metrics_host = "127.0.0.1";
  /// Structured log lines on stderr, and the lowest level logged.
  LogFormat log_format = LogFormat::kText;
  LogLevel log_level = LogLevel::kInfo;
  /// Progress output, and the interval of plain lines.
  ProgressMode progress = ProgressMode::kAuto;
  int64_t progress_interval_ms = 2000;
};

/// A value for one key, from outside the file. `origin` names it in error messages
/// ("--set", "env KELT_GROUP"); the value of a secret key is never echoed.
///
/// Keys are the dotted paths of the file ("group", "window.max_records",
/// "sinks[1].parquet.root", "properties.sasl.password"). "parquet.<key>",
/// "duckdb.<key>" and "postgres.<key>" address the one sink of that kind (created when
/// the file has none; an error when it has several). List keys ("topics") take a
/// comma-separated value.
struct ConfigOverride {
  std::string key;
  std::string value;
  std::string origin;
};

/// Parse one YAML (or JSON) document, apply `overrides` in order (later wins), check
/// every key and value, and read the schema file (a relative `schema` path is relative
/// to `base_dir`). All problems are reported at once, one per line, each naming its key
/// path and line: `sinks[1].parquet.rotate_records: expected an integer, got "abc"
/// (line 12)`. Unknown keys are errors. Secrets are never echoed. `${NAME}` in a value
/// is replaced by the environment variable. `built_by_program`: the document was built
/// from a program's values (the Python package's keyword arguments), so values are
/// taken as they are (no `${NAME}`) and messages name no line.
Result<EltConfig> ParseEltConfig(std::string_view text,
                                 const std::filesystem::path& base_dir,
                                 const std::vector<ConfigOverride>& overrides = {},
                                 bool built_by_program = false);

/// The consumer's keys of the key table alone (brokers, group, topics,
/// auto_offset_reset, group_protocol, instance_id, session_timeout_ms, properties), in a
/// document built by a program (the Python package's kelt.Consumer): the same names,
/// checks and defaults as `kelt run`; any other key is an error.
Result<ConsumerOptions> ParseConsumerConfig(std::string_view text);

/// The landing of a registry subject for a program's window consumer (the C ABI's
/// kelt_consumer_new, Java's KeltConsumer): what `schema: registry:<subject>` and
/// `key.format: registry` resolve to in a config, asked of the registry now. `topics`
/// gives the key subject's default (`<topic>-key`, for one topic); `load` carries the
/// caller's bad-record policy. Errors name the key (`schema`, `key.subject`) as
/// ParseEltConfig's do; secrets are never shown.
struct RegistryLandingRequest {
  RegistryOptions registry;
  std::string subject;
  std::string message;  ///< a Protobuf subject's message (empty: the file's first)
  KeyFormat key_format = KeyFormat::kRaw;
  std::string key_subject;
  std::vector<std::string> topics;
  LoadOptions load;
};
struct RegistryLanding {
  Schema landing;    ///< the `_kafka_*` columns (the payload's come from `load`)
  LoadOptions load;  ///< with avro, protobuf or registry_json (and key) set
  std::string origin;
};
Result<RegistryLanding> ResolveRegistryLanding(const RegistryLandingRequest& request);

/// Read `path` and parse it (base directory: the file's); errors are prefixed with the
/// path. An empty `path` parses an empty document (overrides only).
Result<EltConfig> LoadEltConfig(const std::filesystem::path& path,
                                const std::vector<ConfigOverride>& overrides = {});

/// Make the configured sinks, in order (nothing is opened yet: EltLoop::Make opens them).
Result<std::vector<std::unique_ptr<Sink>>> MakeSinks(const EltConfig& config);

/// What a key is, for documentation, flags, environment variables and the Python
/// package. One row of the key table (config.cc), which is also what the parser reads:
/// the table holds each key's setter, and its default is read from the
/// default-constructed options, so none of this is restated anywhere.
struct ConfigKeyInfo {
  std::string key;   ///< dotted path; sink keys as "parquet.root"
  std::string type;  ///< "string", "integer", "boolean", "list", "map", "a|b|c", …
  std::string default_value;
  std::string env;     ///< environment variable, empty when none
  std::string flag;    ///< `kelt run` flag, empty when only --set
  std::string python;  ///< kelt.EltLoop's keyword argument; sink keys: the field name
  std::string help;
  bool secret = false;
  bool consumer = false;  ///< also a key of ParseConsumerConfig (kelt.Consumer)
};

/// Every key, in documentation order.
const std::vector<ConfigKeyInfo>& EltConfigKeys();

/// The overrides the environment holds: each key's variable (KELT_GROUP,
/// KELT_WINDOW_MAX_RECORDS, KELT_PARQUET_ROOT, …) and KELT_PROPERTY_<NAME> for
/// librdkafka properties (`_` → `.`, lower case). `getenv` defaults to std::getenv;
/// `environ_names` lists the variables present (for the KELT_PROPERTY_ prefix).
std::vector<ConfigOverride> ConfigOverridesFromEnv(
    const std::vector<std::string>& environ_names,
    const std::function<const char*(const char*)>& getenv = {});

/// True when a key's value must never be shown (passwords, keys, conninfo).
bool IsSecretConfigKey(std::string_view key);

}  // namespace kelt
