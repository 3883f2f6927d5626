// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// A JSON Schema (draft-07, 2019-09, 2020-12) as a landing Schema: what
// `schema: registry:<subject>` lands for a JSON Schema subject (issue #14). The payloads
// themselves are JSON and go through the JSON Load step (load.h), so the landing is a
// kelt Schema of flat columns whose `source` paths reach into nested objects.
#pragma once

#include <string>
#include <string_view>

#include "kelt/schema.h"
#include "kelt/status.h"

namespace arrow {
class Schema;
}  // namespace arrow

namespace kelt {

/// Map a JSON Schema whose root is an object with `properties` to landing columns, in
/// property order (docs/USER_GUIDE.md, "JSON Schema from a Schema Registry"):
///  - integer → Int64, number → Float64, boolean → Bool, string → Utf8; a string of
///    format date-time → Timestamp, of format date → Date (other formats: Utf8);
///  - an object with `properties` → one column per property, named
///    `<parent>_<child>`, its `source` the path of keys; an object without properties,
///    an array, a schema without a type (`{}`, `true`) and a union of unlike types →
///    Utf8, which lands the value's compact JSON text;
///  - `["T","null"]`, anyOf/oneOf with a null branch → T (every landing column is
///    nullable, so `null` and `required` change no column); integer with number →
///    Float64;
///  - `$ref` to a place in the same document (`#`, `#/$defs/…`, `#/definitions/…`;
///    beside other keywords its properties come first), `allOf` (its object branches'
///    properties merged, the first definition of a property kept); enum/const without
///    a type → the type of their values.
/// kInvalid names the JSON pointer of what cannot map: a root that is not an object with
/// properties, a `$ref` outside the document or into a cycle, a `false` schema, two
/// properties that land as one column name, allOf branches of unlike types. Malformed
/// JSON is kParseError.
Result<Schema> SchemaFromJsonSchema(std::string_view json_schema);

/// Return a JSON Schema (draft-07, which every JSON Schema validator and
/// confluent-kafka's JSONDeserializer accept) of the JSON objects kelt writes for rows of
/// `schema` (the produce side's auto_register; docs/USER_GUIDE.md, "JSON Schema
/// records"): an object whose properties are the columns in order, `title` `title`; bool
/// → boolean, integers → integer, floats and decimals → number, strings and dictionaries
/// of strings → string, binary → string with contentEncoding base64, timestamp → string
/// of format date-time, date → string of format date, struct → object with properties,
/// list → array with items, map with string keys → object with additionalProperties, the
/// null type → {} (anything). A nullable column's type also allows null; a non-nullable
/// one is `required`. kTypeError naming the column for other types (time, duration, …).
Result<std::string> JsonSchemaFromArrow(const arrow::Schema& schema,
                                        std::string_view title);

}  // namespace kelt
