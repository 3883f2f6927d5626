// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// simdjson DOM helpers shared by the model parsers (schema, dataset, records) and by
// callers that already hold a parsed element (e.g. the Load step). Internal header:
// simdjson types must not leak into include/kelt/.
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>

#include "kelt/dataset.h"
#include "kelt/schema.h"
#include "kelt/status.h"

namespace kelt::model {

/// Parse `json` with this thread's reusable DOM parser (no allocation once warm).
/// Malformed input is kParseError carrying simdjson's message. `*root` stays valid
/// until the next ParseDocument call on this thread, so do not hold it across calls
/// into other model parsing functions (ParseSchemaJson, ParseValueJson, …).
Status ParseDocument(std::string_view json, simdjson::dom::element* root);

/// Return a compact JSON excerpt of `e` for error messages, cut after about 60 bytes
/// (at a UTF-8 boundary, marked with "…"); it never serializes a whole large document.
std::string Excerpt(simdjson::dom::element e);

/// Return "<where>: <message>", or just the message when `where` is empty.
std::string Located(std::string_view where, std::string_view message);

/// Join a path to a key: ("", "fields") → "fields", ("schema", "fields") →
/// "schema.fields".
std::string JoinPath(std::string_view base, std::string_view key);

/// Read an integer element that fits i64 (JSON floats such as 1.0 are rejected).
bool GetInt64(simdjson::dom::element e, int64_t* out);

/// Parse a schema element; error messages are located under `path` (may be empty).
Status SchemaFromJson(simdjson::dom::element e, SchemaDialect dialect,
                      std::string_view path, Schema* out);

/// Parse one Value element. Error messages are not located (the caller prefixes the
/// place): kInvalid for a wrong shape or unknown tag, kTypeError for a payload that
/// does not fit its tag (e.g. {"Int64":1.0}).
Status ValueFromJson(simdjson::dom::element e, Value* out);

void AppendFieldJson(std::string* out, const Field& field);
void AppendSchemaJson(std::string* out, const Schema& schema);
void AppendValueJson(std::string* out, const Value& value);

}  // namespace kelt::model
