// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The compiled form of an AvroPlan: output columns laid out once from the reader's
// schema, and programs of flat operations (Instr) that read the writer's encoding and
// append to those columns by index. The decoder (decoder.cc) runs them with one switch
// per value: no virtual call, no name or map lookup per record. Internal header.
#pragma once

#include <arrow/type_fwd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/avro.h"

namespace kelt::avro {

/// How an output column stores its values (the decoder's side of an Arrow type).
enum class ColumnKind : uint8_t {
  kNull,        // Arrow null: a length only
  kBool,        // bits
  kFixedWidth,  // `width` bytes a value: ints, floats, dates, times, decimals,
                // dictionary indices, fixed_size_binary
  kBinary,      // int32 offsets + data: utf8, binary
  kList,        // int32 offsets + children[0]: list, map (its child is the entries)
  kStruct,      // children, one row each per row
  kDenseUnion,  // int8 type ids + int32 offsets + children (type id = child index)
};

struct ColumnSpec {
  ColumnKind kind = ColumnKind::kNull;
  int32_t width = 0;  // kFixedWidth: bytes a value
  std::shared_ptr<arrow::DataType> type;
  std::shared_ptr<arrow::Array> dictionary;  // enums: the reader's symbols
  std::vector<int32_t> children;
  // The reader's node whose values the column holds (for a nullable union [null, T],
  // the node of T) and whether it came from such a union.
  const AvroNode* node = nullptr;
  const AvroNode* nullable_union = nullptr;
  int32_t null_branch = -1;  // nullable_union's null branch
};

enum class OpCode : uint8_t {
  // Values into column `col`.
  kNull,      // a null of an Arrow null column (reads nothing)
  kNullInto,  // writer null into a nullable column (reads nothing)
  kBool,
  kInt,        // int → int32 storage
  kIntToLong,  // int → int64 storage
  kIntToFloat,
  kIntToDouble,
  kLong,
  kLongToFloat,
  kLongToDouble,
  kFloat,
  kFloatToDouble,
  kDouble,
  kString,         // string (UTF-8 checked) → utf8
  kBytesToString,  // bytes (UTF-8 checked) → utf8
  kBytes,          // bytes or string → binary
  kFixed,          // a = size → fixed_size_binary
  kDecimalBytes,   // bytes → decimal; flags = 16|32 (width), b = precision
  kDecimalFixed,   // fixed of a bytes → decimal; flags = width, b = precision
  kEnum,           // a = table offset (writer index → reader index or -1), b = symbols
  kRecord,         // a valid row of struct column `col` (its fields follow)
  kArray,          // list `col`; a = item program, b = minimum bytes an item takes
  kMap,            // map `col`; a = value program, b = minimum bytes a value takes
  kUnionTag,       // dense union `col`: the next value goes to child a (type id a)
  kUnion,          // writer union: a = table offset of branch programs, b = branches
  kDefault,        // a = offset in constants, b = length, col = program reading them
  kFail,           // a writer union branch the reader has no match for
  // Skipped writer values (fields the reader does not have).
  kSkip,  // a = bytes
  kSkipVarint,
  kSkipBytes,  // bytes or string
  kSkipArray,  // a = item program, b = minimum bytes an item takes
  kSkipMap,    // a = value program, b = minimum bytes a value takes
};

std::string_view OpCodeName(OpCode code);

/// One operation. `path` indexes Program::paths (for error messages).
struct Instr {
  OpCode code;
  uint8_t flags = 0;
  int32_t path = 0;
  int32_t col = -1;
  int32_t a = 0;
  int32_t b = 0;
};

}  // namespace kelt::avro

namespace kelt {

struct AvroPlan::Program {
  std::vector<avro::Instr> code;
  /// Program i is code[begins[i], ends[i]); 0 is the top-level record's.
  std::vector<int32_t> begins;
  std::vector<int32_t> ends;
  /// Enum maps and union branch tables.
  std::vector<int32_t> tables;
  /// Defaults, Avro-encoded in the reader's schema.
  std::string constants;
  std::vector<std::string> paths;
  /// Column 0 is the top-level struct: its children are the batch's columns.
  std::vector<avro::ColumnSpec> columns;
  std::shared_ptr<arrow::Schema> schema;
  /// The writer's and the reader's schema: they own the nodes the columns point to.
  std::vector<AvroSchema> schemas;
};

}  // namespace kelt

namespace kelt::avro {

/// The Arrow schema of reading with `root` (AvroSchema::ToArrowSchema).
Result<std::shared_ptr<arrow::Schema>> ReaderArrowSchema(const AvroNode& root);

/// Append `v` as Avro writes an int or a long: zigzag, then a varint of 7 bits a byte.
void PutLong(std::string* out, int64_t v);

/// Append the Avro encoding of the default `json` (a field's default_json) of type
/// `node`; kInvalid naming `where` when it does not fit the type.
Status EncodeDefaultJson(const AvroNode& node, std::string_view json,
                         const std::string& where, std::string* out);

}  // namespace kelt::avro
