// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// A Schema Registry client and the Confluent wire format.
//
// The registry speaks Confluent's REST API: Confluent Schema Registry itself, Apicurio
// Registry under /apis/ccompat/v7, Redpanda, Karapace. A record in the wire format is a
// magic byte 0, the schema id as 4 big-endian bytes, then the body; a Protobuf body is
// preceded by the indexes of its message type in the schema's file.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/status.h"

namespace kelt {

/// The kind of a registered schema, as the registry names it in `schemaType`.
enum class SchemaFormat : uint8_t { kAvro, kProtobuf, kJson };

/// "AVRO", "PROTOBUF", "JSON".
std::string_view SchemaFormatName(SchemaFormat format);
/// The format of a SchemaFormatName (any case); nullopt for anything else.
std::optional<SchemaFormat> ParseSchemaFormat(std::string_view name);

/// A schema another one refers to (Protobuf imports, Avro named types): `name` is how
/// the referring schema names it, `subject` and `version` where it is registered.
struct SchemaReference {
  std::string name;
  std::string subject;
  int32_t version = -1;
};

/// A referenced schema: `name` as the referring schema spells it, `text` its schema.
struct ReferencedSchema {
  std::string name;
  std::string text;
};

/// A schema as the registry holds it. `subject` and `version` are known when it was
/// looked up by subject, -1/empty when it was looked up by id alone.
struct RegisteredSchema {
  int32_t id = -1;
  std::string subject;
  int32_t version = -1;
  SchemaFormat format = SchemaFormat::kAvro;
  std::string text;  ///< the schema: Avro JSON, .proto text (or base64 descriptor), JSON
  std::vector<SchemaReference> references;
};

/// How to reach the registry. Credentials are secrets: no message, log line or metric
/// shows them (nor a password written into the URL as user:password@).
struct RegistryOptions {
  /// Base URL: `http(s)://host:port`, with the API's path prefix if it has one
  /// (Apicurio: `/apis/ccompat/v7`).
  std::string url;
  /// HTTP basic authentication (Confluent Cloud: API key and secret).
  std::string username;
  std::string password;
  /// `Authorization: Bearer <token>` (OAuth); not together with username/password.
  std::string bearer_token;
  /// TLS: the CA bundle (PEM) that signs the registry's certificate (empty: the
  /// system's), and a client certificate and key (PEM) for mutual TLS.
  std::string ca_location;
  std::string certificate_location;
  std::string key_location;
  std::string key_password;
  /// Whether the certificate must name the host (keep true outside tests).
  bool verify_hostname = true;
  /// Each request's limit, connecting included.
  std::chrono::milliseconds timeout{10000};
  /// A request that fails to connect, times out or gets a 5xx/429 answer is tried again
  /// this many times, after retry_backoff, doubling.
  int retries = 3;
  std::chrono::milliseconds retry_backoff{200};
};

/// A registry client. Schemas looked up by id are cached for the client's life (an id
/// never changes its schema): a topic's records cost one request per schema id, not one
/// per record. Thread-safe; concurrent lookups of one id make one request.
class SchemaRegistry {
 public:
  /// Checks the options (a URL, no two kinds of credentials); makes no request.
  static Result<std::unique_ptr<SchemaRegistry>> Make(RegistryOptions options);
  ~SchemaRegistry();
  SchemaRegistry(const SchemaRegistry&) = delete;
  SchemaRegistry& operator=(const SchemaRegistry&) = delete;

  /// The schema with this id (cached). An unknown id is kNotFound naming it; a registry
  /// that does not answer (after the retries) is kUnavailable naming its URL.
  Result<std::shared_ptr<const RegisteredSchema>> ById(int32_t id);
  /// The subject's latest version (asked each time: a subject moves on).
  Result<std::shared_ptr<const RegisteredSchema>> Latest(const std::string& subject);
  /// One version of the subject (cached).
  Result<std::shared_ptr<const RegisteredSchema>> Version(const std::string& subject,
                                                          int32_t version);
  /// The schemas `references` name, fetched by subject and version (cached), then the
  /// ones those reference, depth first: each name once, 32 levels at most. A reference
  /// the registry lacks is an error naming it, its subject and version.
  Result<std::vector<ReferencedSchema>> ResolveReferences(
      const std::vector<SchemaReference>& references);
  /// Register `text` under `subject` (or find it there) and return its id. The
  /// registry refuses a schema its compatibility rule rejects: kInvalid with its words.
  Result<int32_t> Register(const std::string& subject, SchemaFormat format,
                           const std::string& text,
                           const std::vector<SchemaReference>& references = {});
  /// Whether `text` may follow the subject's latest version under its compatibility
  /// rule (true when the subject has no version yet).
  Result<bool> IsCompatible(const std::string& subject, SchemaFormat format,
                            const std::string& text,
                            const std::vector<SchemaReference>& references = {});

  /// The URL without credentials, for messages.
  const std::string& display_url() const;

 private:
  class Impl;
  explicit SchemaRegistry(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// A record's wire-format prefix: the schema id and where the body starts.
struct WireHeader {
  int32_t schema_id = -1;
  size_t body_offset = 0;
};

/// Read the magic byte and schema id. kInvalid when the payload is shorter than 5 bytes
/// or its first byte is not 0 (the message says which).
Result<WireHeader> ParseWireHeader(std::string_view payload);

/// The 5 bytes that start a record of schema `id`.
std::string WireHeaderBytes(int32_t id);

/// A Protobuf body's message indexes (a zigzag varint count, then that many zigzag
/// varint indexes; the count 0 alone means the file's first message, [0]). Sets
/// `*consumed` to the bytes they took. kInvalid on a truncated or absurd list.
Result<std::vector<int32_t>> ParseProtobufMessageIndexes(std::string_view body,
                                                         size_t* consumed);

/// The encoding of `indexes` (just a 0 byte for [0]).
std::string ProtobufMessageIndexesBytes(const std::vector<int32_t>& indexes);

}  // namespace kelt
