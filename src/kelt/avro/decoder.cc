// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The decoder: runs a plan's programs over a record body, appending to its own column
// buffers, which become Arrow arrays at Finish without a copy.
//
// Own buffers rather than arrow::ArrayBuilders because a record that fails half-way
// must leave no trace (the Load step's bad-record policies count or dead-letter it and
// go on): every column's length is saved before a record and restored after a failure,
// and each buffer's contents follow from its length (a binary column's data end is its
// last offset). Arrow's builders cannot take a value back.
//
// Hostile bodies: every length and block count is checked against the bytes left
// before it is used, nothing is allocated from a length (buffers grow as values are
// actually appended), recursion follows the schema's depth (never the data's), and a
// record may hold at most kMaxZeroByteItems items that take no bytes (an array of nulls
// could otherwise claim 2^62 of them in 10 bytes).
#include <arrow/api.h>
#include <arrow/util/basic_decimal.h>
#include <arrow/util/bit_util.h>
#include <simdjson.h>

#include <cstring>
#include <limits>

#include "kelt/avro.h"
#include "kelt/avro/plan.h"
#include "kelt/common/copy_small.h"
#include "kelt/common/memory_pool.h"

namespace kelt {

std::string_view AvroErrorKindName(AvroErrorKind kind) {
  switch (kind) {
    case AvroErrorKind::kTruncated:
      return "TRUNCATED";
    case AvroErrorKind::kVarintTooLong:
      return "VARINT_TOO_LONG";
    case AvroErrorKind::kIntOutOfRange:
      return "INT_OUT_OF_RANGE";
    case AvroErrorKind::kNegativeLength:
      return "NEGATIVE_LENGTH";
    case AvroErrorKind::kBadBlockCount:
      return "BAD_BLOCK_COUNT";
    case AvroErrorKind::kBadUnionIndex:
      return "BAD_UNION_INDEX";
    case AvroErrorKind::kBadEnumIndex:
      return "BAD_ENUM_INDEX";
    case AvroErrorKind::kBadBoolean:
      return "BAD_BOOLEAN";
    case AvroErrorKind::kInvalidUtf8:
      return "INVALID_UTF8";
    case AvroErrorKind::kDecimalOverflow:
      return "DECIMAL_OVERFLOW";
    case AvroErrorKind::kUnknownEnumSymbol:
      return "UNKNOWN_ENUM_SYMBOL";
    case AvroErrorKind::kUnionBranchMismatch:
      return "UNION_BRANCH_MISMATCH";
    case AvroErrorKind::kTrailingBytes:
      return "TRAILING_BYTES";
    case AvroErrorKind::kTooLarge:
      return "TOO_LARGE";
  }
  return "?";
}

namespace {

using avro::ColumnKind;
using avro::Instr;
using avro::OpCode;

constexpr int64_t kMaxZeroByteItems = int64_t{1} << 24;
constexpr int64_t kMaxOffset = std::numeric_limits<int32_t>::max();

// A growable buffer over an Arrow ResizableBuffer, handed to Arrow at Finish.
class Buffer {
 public:
  uint8_t* data() const { return data_; }
  int64_t capacity() const { return capacity_; }

  bool Grow(int64_t bytes) {
    if (bytes <= capacity_ && buffer_) return true;  // (a fixed(0) needs a buffer too)
    const int64_t want = std::max<int64_t>({bytes, capacity_ * 2, 64});
    if (!buffer_) {
      auto made = arrow::AllocateResizableBuffer(want, internal::WindowPool());
      if (!made.ok()) return false;
      buffer_ = std::shared_ptr<arrow::ResizableBuffer>(std::move(made).ValueUnsafe());
    } else if (!buffer_->Resize(want, false).ok()) {
      return false;
    }
    data_ = buffer_->mutable_data();
    capacity_ = want;
    return true;
  }

  // The first `size` bytes as an Arrow buffer; this buffer starts empty again.
  std::shared_ptr<arrow::Buffer> Take(int64_t size) {
    std::shared_ptr<arrow::ResizableBuffer> out = std::move(buffer_);
    if (out && !out->Resize(size, false).ok()) out.reset();
    data_ = nullptr;
    capacity_ = 0;
    return out;
  }

 private:
  std::shared_ptr<arrow::ResizableBuffer> buffer_;
  uint8_t* data_ = nullptr;
  int64_t capacity_ = 0;
};

struct Column {
  ColumnKind kind = ColumnKind::kNull;
  int32_t width = 0;
  int64_t capacity = 0;   // rows the buffers hold
  Buffer values;          // fixed-width values, bits, int32 offsets, union type ids
  Buffer union_offsets;   // dense unions: int32 offset into the child
  Buffer data;            // binary: the bytes
  Buffer validity;        // once the first null arrives
  int64_t data_size = 0;  // binary: bytes used (== the last offset)
  bool has_nulls = false;
  // The rows and bytes of the last batch: the next one starts at that size, so a steady
  // stream of windows does not grow (and copy) its buffers from scratch each time.
  int64_t rows_hint = 0;
  int64_t data_hint = 0;
};

using ::kelt::internal::CopySmall;

inline int64_t ZigZag(uint64_t v) {
  return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}

// ASCII is checked inline, 8 bytes at a time (the last word overlapping the one before);
// anything else goes to simdjson.
inline bool ValidUtf8(const uint8_t* s, size_t n) {
  uint64_t high = 0;
  if (n >= 8) {
    for (size_t i = 0; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, s + i, 8);
      high |= w;
    }
    uint64_t w;
    std::memcpy(&w, s + n - 8, 8);
    high |= w;
  } else if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, s, 4);
    std::memcpy(&b, s + n - 4, 4);
    high = a | b;
  } else {
    for (size_t i = 0; i < n; ++i) high |= s[i];
  }
  if ((high & 0x8080808080808080ULL) == 0) return true;
  return simdjson::validate_utf8(reinterpret_cast<const char*>(s), n);
}

// Big-endian two's complement of n bytes → `width` little-endian bytes; false when the
// value needs more than `width` bytes.
inline bool DecimalBytes(const uint8_t* s, int64_t n, int width, uint8_t* out) {
  if (n == 0) {
    std::memset(out, 0, width);
    return true;
  }
  const uint8_t sign = (s[0] & 0x80) ? 0xFF : 0x00;
  if (n > width) {
    for (int64_t i = 0; i < n - width; ++i) {
      if (s[i] != sign) return false;
    }
    if (((s[n - width] & 0x80) ? 0xFF : 0x00) != sign) return false;
    s += n - width;
    n = width;
  }
  std::memset(out, sign, width);
  for (int64_t i = 0; i < n; ++i) out[i] = s[n - 1 - i];
  return true;
}

}  // namespace

class AvroDecoder::Impl {
 public:
  Impl(std::shared_ptr<const AvroPlan> plan, const AvroPlan::Program& program,
       AvroDecoderOptions options)
      : plan_(std::move(plan)), p_(program), options_(options) {
    cols_.resize(p_.columns.size());
    for (size_t i = 0; i < cols_.size(); ++i) {
      cols_[i].kind = p_.columns[i].kind;
      cols_[i].width = p_.columns[i].width;
    }
    len_.assign(cols_.size(), 0);
    saved_.assign(cols_.size(), 0);
    // A top-level column has a row per record, so its length before a record is the
    // record count; only the columns below them need their lengths saved.
    std::vector<bool> top(cols_.size(), false);
    for (int32_t c : p_.columns[0].children) top[c] = true;
    for (size_t c = 1; c < cols_.size(); ++c) {
      if (!top[c]) nested_.push_back(static_cast<int32_t>(c));
    }
  }

  Status Reserve(int64_t records) {
    if (records < 0) return Status::Invalid("Reserve: negative record count");
    for (int32_t col : p_.columns[0].children) {
      if (!GrowRows(col, len_[col] + records)) {
        return Status::IOError("out of memory growing an Avro column");
      }
    }
    return Status::OK();
  }

  Status Append(std::string_view body) {
    base_ = reinterpret_cast<const uint8_t*>(body.data());
    pos_ = base_;
    end_ = base_ + body.size();
    const int64_t rows = len_[0];
    for (int32_t c : nested_) saved_[c] = len_[c];
    zero_byte_items_ = 0;
    out_of_memory_ = false;
    bool ok = Run(0);
    if (ok && pos_ != end_ && !options_.allow_trailing_bytes) {
      error_.kind = AvroErrorKind::kTrailingBytes;
      error_.field.clear();
      error_.offset = pos_ - base_;
      ok = false;
    }
    if (ok) return Status::OK();
    Rewind(0, rows);
    for (int32_t c : p_.columns[0].children) {
      if (len_[c] != rows) Rewind(c, rows);
    }
    for (int32_t c : nested_) {
      if (len_[c] != saved_[c]) Rewind(c, saved_[c]);
    }
    return ErrorStatus(body.size());
  }

  const AvroDecodeError& last_error() const { return error_; }
  int64_t num_rows() const { return len_[0]; }
  const std::shared_ptr<const AvroPlan>& plan() const { return plan_; }

  Result<std::shared_ptr<arrow::RecordBatch>> Finish() {
    const int64_t rows = len_[0];
    std::vector<std::shared_ptr<arrow::Array>> arrays;
    for (int32_t col : p_.columns[0].children) {
      std::shared_ptr<arrow::ArrayData> data;
      if (!BuildArray(col, &data))
        return Status::IOError("out of memory finishing an Avro column");
      arrays.push_back(arrow::MakeArray(data));
    }
    for (size_t c = 0; c < cols_.size(); ++c) {
      Column& col = cols_[c];
      col.rows_hint = len_[c];
      col.data_hint = col.data_size;
      col.values.Take(0);
      col.union_offsets.Take(0);
      col.data.Take(0);
      col.validity.Take(0);
      col.capacity = 0;
      col.data_size = 0;
      col.has_nulls = false;
      len_[c] = 0;
    }
    return arrow::RecordBatch::Make(p_.schema, rows, std::move(arrays));
  }

 private:
  // --- errors ---

  bool Fail(const Instr& in, AvroErrorKind kind, const uint8_t* at) {
    error_.kind = kind;
    error_.field = p_.paths[in.path];
    error_.offset = at - base_;
    return false;
  }

  bool OutOfMemory() {
    out_of_memory_ = true;
    return false;
  }

  Status ErrorStatus(size_t size) const {
    if (out_of_memory_) return Status::IOError("out of memory growing an Avro column");
    std::string msg = "Avro record: ";
    if (!error_.field.empty()) msg += "field '" + error_.field + "' ";
    msg += "at byte " + std::to_string(error_.offset) + ": ";
    switch (error_.kind) {
      case AvroErrorKind::kTruncated:
        msg += "truncated: the record ends inside a value (" + std::to_string(size) +
               " bytes in all)";
        break;
      case AvroErrorKind::kVarintTooLong:
        msg += "a varint longer than 10 bytes";
        break;
      case AvroErrorKind::kIntOutOfRange:
        msg += "an int outside 32 bits";
        break;
      case AvroErrorKind::kNegativeLength:
        msg += "a negative length";
        break;
      case AvroErrorKind::kBadBlockCount:
        msg += "an array or map block count larger than the bytes left can hold";
        break;
      case AvroErrorKind::kBadUnionIndex:
        msg += "a union branch index outside the writer's union";
        break;
      case AvroErrorKind::kBadEnumIndex:
        msg += "an enum index outside the writer's symbols";
        break;
      case AvroErrorKind::kBadBoolean:
        msg += "a boolean byte other than 0 or 1";
        break;
      case AvroErrorKind::kInvalidUtf8:
        msg += "a string that is not valid UTF-8";
        break;
      case AvroErrorKind::kDecimalOverflow:
        msg += "a decimal with more digits than its precision";
        break;
      case AvroErrorKind::kUnknownEnumSymbol:
        msg += "an enum symbol the reader's enum does not have, and it has no default";
        break;
      case AvroErrorKind::kUnionBranchMismatch:
        msg += "a union branch the reader's schema has no match for";
        break;
      case AvroErrorKind::kTrailingBytes:
        msg += std::to_string(size - static_cast<size_t>(error_.offset)) +
               " bytes after the end of the record";
        break;
      case AvroErrorKind::kTooLarge:
        msg += "too large: past 2^31 bytes or items in one column of the batch, or " +
               std::to_string(kMaxZeroByteItems) + " items that take no bytes";
        break;
    }
    const bool type_error = error_.kind == AvroErrorKind::kDecimalOverflow ||
                            error_.kind == AvroErrorKind::kUnknownEnumSymbol ||
                            error_.kind == AvroErrorKind::kUnionBranchMismatch;
    return type_error ? Status::TypeError(std::move(msg))
                      : Status::ParseError(std::move(msg));
  }

  // --- reading ---

  // A zigzag varint of at most 10 bytes; bits past the 64th are dropped, as Avro C and
  // Java do. One byte is the common case; up to 8 bytes are decoded from one word (the
  // 7-bit groups gathered by three shift-and-mask steps), the rest byte by byte.
  [[gnu::always_inline]] bool ReadLong(const Instr& in, int64_t* v) {
    const uint8_t* q = pos_;
    if (q < end_ && *q < 0x80) [[likely]] {
      pos_ = q + 1;
      *v = ZigZag(*q);
      return true;
    }
    if (end_ - q >= 8) {
      uint64_t w;
      std::memcpy(&w, q, 8);
      const uint64_t stops = ~w & 0x8080808080808080ULL;
      if (stops != 0) {
        const int bits = __builtin_ctzll(stops) + 1;  // through the last byte's top bit
        uint64_t x = bits == 64 ? w : w & ((uint64_t{1} << bits) - 1);
        x = ((x & 0x7f007f007f007f00ULL) >> 1) | (x & 0x007f007f007f007fULL);
        x = ((x & 0x3fff00003fff0000ULL) >> 2) | (x & 0x00003fff00003fffULL);
        x = ((x & 0x0fffffff00000000ULL) >> 4) | (x & 0x000000000fffffffULL);
        pos_ = q + bits / 8;
        *v = ZigZag(x);
        return true;
      }
    }
    return ReadLongBytewise(in, v);
  }

  // 9 and 10 byte varints, and varints within 8 bytes of the end.
  [[gnu::noinline]] bool ReadLongBytewise(const Instr& in, int64_t* v) {
    const uint8_t* q = pos_;
    const int64_t avail = std::min<int64_t>(end_ - q, 10);
    uint64_t r = 0;
    for (int64_t i = 0; i < avail; ++i) {
      const uint64_t b = q[i];
      r |= (b & 0x7f) << (7 * i);
      if (b < 0x80) {
        pos_ = q + i + 1;
        *v = ZigZag(r);
        return true;
      }
    }
    return Fail(
        in, avail == 10 ? AvroErrorKind::kVarintTooLong : AvroErrorKind::kTruncated, q);
  }

  // An int is a long that fits 32 bits (Avro C reads it so; Java reads at most 5 bytes).
  [[gnu::always_inline]] bool ReadInt(const Instr& in, int32_t* v) {
    const uint8_t* start = pos_;
    int64_t l = 0;
    if (!ReadLong(in, &l)) return false;
    if (l < std::numeric_limits<int32_t>::min() ||
        l > std::numeric_limits<int32_t>::max()) {
      return Fail(in, AvroErrorKind::kIntOutOfRange, start);
    }
    *v = static_cast<int32_t>(l);
    return true;
  }

  // A length (bytes, string) that the bytes left can hold.
  [[gnu::always_inline]] bool ReadLength(const Instr& in, int64_t* n) {
    const uint8_t* start = pos_;
    if (!ReadLong(in, n)) return false;
    if (*n < 0) return Fail(in, AvroErrorKind::kNegativeLength, start);
    if (*n > end_ - pos_) return Fail(in, AvroErrorKind::kTruncated, start);
    return true;
  }

  template <typename T>
  [[gnu::always_inline]] bool ReadRaw(const Instr& in, T* v) {
    if (end_ - pos_ < static_cast<int64_t>(sizeof(T))) {
      return Fail(in, AvroErrorKind::kTruncated, pos_);
    }
    std::memcpy(v, pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }

  // A block count of an array or map: its absolute value, after the block's byte size
  // when negative. `min_item` is the fewest bytes an item takes.
  bool ReadBlockCount(const Instr& in, int64_t min_item, int64_t* count, int64_t* bytes) {
    const uint8_t* start = pos_;
    if (!ReadLong(in, count)) return false;
    *bytes = -1;
    if (*count < 0) {
      if (*count == std::numeric_limits<int64_t>::min()) {
        return Fail(in, AvroErrorKind::kBadBlockCount, start);
      }
      *count = -*count;
      if (!ReadLong(in, bytes)) return false;
    }
    if (min_item > 0) {
      if (*count > (end_ - pos_) / min_item) {
        return Fail(in, AvroErrorKind::kBadBlockCount, start);
      }
    } else {
      zero_byte_items_ += *count;
      if (*count > kMaxZeroByteItems || zero_byte_items_ > kMaxZeroByteItems) {
        return Fail(in, AvroErrorKind::kTooLarge, start);
      }
    }
    return true;
  }

  // --- columns ---

  bool GrowRows(int32_t c, int64_t rows) {
    Column& col = cols_[c];
    if (rows <= col.capacity) return true;
    const bool first = col.capacity == 0;
    const int64_t cap =
        std::max<int64_t>({rows, col.capacity * 2, 64, first ? col.rows_hint : 0});
    bool ok = true;
    switch (col.kind) {
      case ColumnKind::kNull:
      case ColumnKind::kStruct:
        break;
      case ColumnKind::kBool:
        ok = col.values.Grow(arrow::bit_util::BytesForBits(cap));
        break;
      case ColumnKind::kFixedWidth:
        ok = col.values.Grow(cap * col.width);
        break;
      case ColumnKind::kBinary:
      case ColumnKind::kList:
        ok = col.values.Grow((cap + 1) * 4);
        if (ok && first) std::memset(col.values.data(), 0, 4);
        break;
      case ColumnKind::kDenseUnion:
        ok = col.values.Grow(cap) && col.union_offsets.Grow(cap * 4);
        break;
    }
    if (ok && col.has_nulls) ok = col.validity.Grow(arrow::bit_util::BytesForBits(cap));
    if (!ok) return false;
    col.capacity = cap;
    return true;
  }

  [[gnu::always_inline]] bool EnsureRow(int32_t c) {
    if (len_[c] < cols_[c].capacity) [[likely]]
      return true;
    return GrowRows(c, len_[c] + 1);
  }

  [[gnu::always_inline]] void MarkValid(Column& col, int64_t row) {
    if (col.has_nulls) arrow::bit_util::SetBit(col.validity.data(), row);
  }

  bool StartValidity(int32_t c) {
    Column& col = cols_[c];
    const int64_t rows = std::max<int64_t>(col.capacity, len_[c] + 1);
    if (!col.validity.Grow(arrow::bit_util::BytesForBits(rows))) return false;
    std::memset(col.validity.data(), 0xFF,
                static_cast<size_t>(arrow::bit_util::BytesForBits(len_[c] + 1)));
    col.has_nulls = true;
    return true;
  }

  template <typename T>
  [[gnu::always_inline]] bool AppendValue(int32_t c, T v) {
    if (!EnsureRow(c)) [[unlikely]]
      return OutOfMemory();
    Column& col = cols_[c];
    const int64_t row = len_[c]++;
    std::memcpy(col.values.data() + row * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
    MarkValid(col, row);
    return true;
  }

  [[gnu::always_inline]] bool AppendWidth(int32_t c, const uint8_t* v) {
    if (!EnsureRow(c)) [[unlikely]]
      return OutOfMemory();
    Column& col = cols_[c];
    const int64_t row = len_[c]++;
    std::memcpy(col.values.data() + row * col.width, v, col.width);
    MarkValid(col, row);
    return true;
  }

  [[gnu::always_inline]] bool AppendBool(int32_t c, bool v) {
    if (!EnsureRow(c)) [[unlikely]]
      return OutOfMemory();
    Column& col = cols_[c];
    const int64_t row = len_[c]++;
    arrow::bit_util::SetBitTo(col.values.data(), row, v);
    MarkValid(col, row);
    return true;
  }

  [[gnu::always_inline]] bool AppendBinary(const Instr& in, int32_t c, const uint8_t* s,
                                           int64_t n) {
    if (!EnsureRow(c)) [[unlikely]]
      return OutOfMemory();
    Column& col = cols_[c];
    if (col.data_size + n > col.data.capacity()) [[unlikely]] {
      if (col.data_size + n > kMaxOffset) return Fail(in, AvroErrorKind::kTooLarge, s);
      if (!col.data.Grow(std::max(col.data_size + n, col.data_hint)))
        return OutOfMemory();
    }
    CopySmall(col.data.data() + col.data_size, s, static_cast<size_t>(n));
    col.data_size += n;
    const int64_t row = len_[c]++;
    const auto end = static_cast<int32_t>(col.data_size);
    std::memcpy(col.values.data() + (row + 1) * 4, &end, 4);
    MarkValid(col, row);
    return true;
  }

  // A row of a struct (its children were or will be appended by their own operations).
  [[gnu::always_inline]] bool AppendStruct(int32_t c) {
    if (!EnsureRow(c)) [[unlikely]]
      return OutOfMemory();
    const int64_t row = len_[c]++;
    MarkValid(cols_[c], row);
    return true;
  }

  // A row of a list or map whose items are the child's rows appended since the last.
  bool EndList(const Instr& in, int32_t c, const uint8_t* start) {
    if (!EnsureRow(c)) return OutOfMemory();
    Column& col = cols_[c];
    const int64_t child_len = len_[p_.columns[c].children[0]];
    if (child_len > kMaxOffset) return Fail(in, AvroErrorKind::kTooLarge, start);
    const int64_t row = len_[c]++;
    const auto end = static_cast<int32_t>(child_len);
    std::memcpy(col.values.data() + (row + 1) * 4, &end, 4);
    MarkValid(col, row);
    return true;
  }

  // A null row; a struct's children get a null row each, a dense union's first child
  // takes the null (Arrow's unions have no validity of their own).
  bool AppendNull(int32_t c) {
    Column& col = cols_[c];
    const ColumnKind kind = col.kind;
    if (kind == ColumnKind::kNull) {
      ++len_[c];
      return true;
    }
    if (!EnsureRow(c)) return OutOfMemory();
    const int64_t row = len_[c];
    if (kind == ColumnKind::kDenseUnion) {
      const int32_t child = p_.columns[c].children[0];
      col.values.data()[row] = 0;
      const auto offset = static_cast<int32_t>(len_[child]);
      std::memcpy(col.union_offsets.data() + row * 4, &offset, 4);
      ++len_[c];
      return AppendNull(child);
    }
    if (!col.has_nulls && !StartValidity(c)) return OutOfMemory();
    arrow::bit_util::ClearBit(col.validity.data(), row);
    switch (kind) {
      case ColumnKind::kBool:
        arrow::bit_util::ClearBit(col.values.data(), row);
        break;
      case ColumnKind::kFixedWidth:
        std::memset(col.values.data() + row * col.width, 0, col.width);
        break;
      case ColumnKind::kBinary:
      case ColumnKind::kList:
        std::memcpy(col.values.data() + (row + 1) * 4, col.values.data() + row * 4, 4);
        break;
      case ColumnKind::kStruct:
        for (int32_t child : p_.columns[c].children) {
          if (!AppendNull(child)) return false;
        }
        break;
      default:
        break;
    }
    ++len_[c];
    return true;
  }

  void Rewind(int32_t c, int64_t rows) {
    len_[c] = rows;
    Column& col = cols_[c];
    if (col.kind == ColumnKind::kBinary && col.capacity > 0) {
      int32_t end = 0;
      std::memcpy(&end, col.values.data() + rows * 4, 4);
      col.data_size = end;
    }
  }

  // --- the interpreter ---

  bool Run(int32_t prog) {
    const Instr* in = p_.code.data() + p_.begins[prog];
    const Instr* const stop = p_.code.data() + p_.ends[prog];
    for (; in != stop; ++in) {
      if (!Step(*in)) return false;
    }
    return true;
  }

  [[gnu::always_inline]] bool Step(const Instr& in) {
    switch (in.code) {
      case OpCode::kNull:
        ++len_[in.col];
        return true;
      case OpCode::kNullInto:
        return AppendNull(in.col);
      case OpCode::kBool: {
        if (pos_ == end_) return Fail(in, AvroErrorKind::kTruncated, pos_);
        const uint8_t b = *pos_;
        if (b > 1) return Fail(in, AvroErrorKind::kBadBoolean, pos_);
        ++pos_;
        return AppendBool(in.col, b != 0);
      }
      case OpCode::kInt: {
        int32_t v = 0;
        return ReadInt(in, &v) && AppendValue<int32_t>(in.col, v);
      }
      case OpCode::kIntToLong: {
        int32_t v = 0;
        return ReadInt(in, &v) && AppendValue<int64_t>(in.col, v);
      }
      case OpCode::kIntToFloat: {
        int32_t v = 0;
        return ReadInt(in, &v) && AppendValue<float>(in.col, static_cast<float>(v));
      }
      case OpCode::kIntToDouble: {
        int32_t v = 0;
        return ReadInt(in, &v) && AppendValue<double>(in.col, v);
      }
      case OpCode::kLong: {
        int64_t v = 0;
        return ReadLong(in, &v) && AppendValue<int64_t>(in.col, v);
      }
      case OpCode::kLongToFloat: {
        int64_t v = 0;
        return ReadLong(in, &v) && AppendValue<float>(in.col, static_cast<float>(v));
      }
      case OpCode::kLongToDouble: {
        int64_t v = 0;
        return ReadLong(in, &v) && AppendValue<double>(in.col, static_cast<double>(v));
      }
      case OpCode::kFloat: {
        float v = 0;
        return ReadRaw(in, &v) && AppendValue<float>(in.col, v);
      }
      case OpCode::kFloatToDouble: {
        float v = 0;
        return ReadRaw(in, &v) && AppendValue<double>(in.col, v);
      }
      case OpCode::kDouble: {
        double v = 0;
        return ReadRaw(in, &v) && AppendValue<double>(in.col, v);
      }
      case OpCode::kString:
      case OpCode::kBytesToString: {
        const uint8_t* start = pos_;
        int64_t n = 0;
        if (!ReadLength(in, &n)) return false;
        const uint8_t* s = pos_;
        if (!ValidUtf8(s, static_cast<size_t>(n))) {
          return Fail(in, AvroErrorKind::kInvalidUtf8, start);
        }
        pos_ += n;
        return AppendBinary(in, in.col, s, n);
      }
      case OpCode::kBytes: {
        int64_t n = 0;
        if (!ReadLength(in, &n)) return false;
        const uint8_t* s = pos_;
        pos_ += n;
        return AppendBinary(in, in.col, s, n);
      }
      case OpCode::kFixed: {
        if (end_ - pos_ < in.a) return Fail(in, AvroErrorKind::kTruncated, pos_);
        const uint8_t* s = pos_;
        pos_ += in.a;
        return AppendWidth(in.col, s);
      }
      case OpCode::kDecimalBytes:
      case OpCode::kDecimalFixed: {
        const uint8_t* start = pos_;
        int64_t n = in.a;
        if (in.code == OpCode::kDecimalBytes) {
          if (!ReadLength(in, &n)) return false;
        } else if (end_ - pos_ < n) {
          return Fail(in, AvroErrorKind::kTruncated, pos_);
        }
        const uint8_t* s = pos_;
        pos_ += n;
        uint8_t le[32];
        bool fits = DecimalBytes(s, n, in.flags, le);
        if (fits) {
          fits = in.flags == 16 ? arrow::BasicDecimal128(le).FitsInPrecision(in.b)
                                : arrow::BasicDecimal256(le).FitsInPrecision(in.b);
        }
        if (!fits) return Fail(in, AvroErrorKind::kDecimalOverflow, start);
        return AppendWidth(in.col, le);
      }
      case OpCode::kEnum: {
        const uint8_t* start = pos_;
        int64_t index = 0;  // a long, as Avro C reads it: any value outside is bad
        if (!ReadLong(in, &index)) return false;
        if (index < 0 || index >= in.b) {
          return Fail(in, AvroErrorKind::kBadEnumIndex, start);
        }
        const int32_t mapped = p_.tables[in.a + index];
        if (mapped < 0) return Fail(in, AvroErrorKind::kUnknownEnumSymbol, start);
        return AppendValue<int32_t>(in.col, mapped);
      }
      case OpCode::kRecord:
        return AppendStruct(in.col);
      case OpCode::kArray:
      case OpCode::kMap:
        return RunBlocks(in);
      case OpCode::kUnionTag: {
        if (!EnsureRow(in.col)) return OutOfMemory();
        Column& col = cols_[in.col];
        const int64_t row = len_[in.col]++;
        const int32_t child = p_.columns[in.col].children[in.a];
        col.values.data()[row] = static_cast<uint8_t>(in.a);
        const auto offset = static_cast<int32_t>(len_[child]);
        std::memcpy(col.union_offsets.data() + row * 4, &offset, 4);
        return true;
      }
      case OpCode::kUnion: {
        const uint8_t* start = pos_;
        int64_t index = 0;
        if (!ReadLong(in, &index)) return false;
        if (index < 0 || index >= in.b)
          return Fail(in, AvroErrorKind::kBadUnionIndex, start);
        const uint8_t* before = pos_;
        if (Run(p_.tables[in.a + index])) return true;
        // A branch that cannot be read points at its union index.
        if (error_.kind == AvroErrorKind::kUnionBranchMismatch &&
            error_.offset == before - base_) {
          error_.offset = start - base_;
        }
        return false;
      }
      case OpCode::kDefault: {
        const uint8_t* saved_pos = pos_;
        const uint8_t* saved_end = end_;
        const uint8_t* saved_base = base_;
        base_ = pos_ = reinterpret_cast<const uint8_t*>(p_.constants.data()) + in.a;
        end_ = pos_ + in.b;
        const bool ok = Run(in.col);
        pos_ = saved_pos;
        end_ = saved_end;
        base_ = saved_base;
        return ok;
      }
      case OpCode::kFail:
        return Fail(in, AvroErrorKind::kUnionBranchMismatch, pos_);
      case OpCode::kSkip:
        if (end_ - pos_ < in.a) return Fail(in, AvroErrorKind::kTruncated, pos_);
        pos_ += in.a;
        return true;
      case OpCode::kSkipVarint: {
        int64_t v = 0;
        return ReadLong(in, &v);
      }
      case OpCode::kSkipBytes: {
        int64_t n = 0;
        if (!ReadLength(in, &n)) return false;
        pos_ += n;
        return true;
      }
      case OpCode::kSkipArray:
      case OpCode::kSkipMap:
        return SkipBlocks(in);
    }
    return false;
  }

  // An array or a map: blocks of items until a zero count.
  bool RunBlocks(const Instr& in) {
    const uint8_t* start = pos_;
    const bool map = in.code == OpCode::kMap;
    const int64_t min_item = map ? in.b + 1 : in.b;
    int32_t entries = -1, keys = -1;
    if (map) {
      entries = p_.columns[in.col].children[0];
      keys = p_.columns[entries].children[0];
    }
    while (true) {
      int64_t count = 0, bytes = 0;
      if (!ReadBlockCount(in, min_item, &count, &bytes)) return false;
      if (count == 0) break;
      for (int64_t i = 0; i < count; ++i) {
        if (map) {
          const uint8_t* key_start = pos_;
          int64_t n = 0;
          if (!ReadLength(in, &n)) return false;
          const uint8_t* s = pos_;
          if (!ValidUtf8(s, static_cast<size_t>(n))) {
            return Fail(in, AvroErrorKind::kInvalidUtf8, key_start);
          }
          pos_ += n;
          if (!AppendBinary(in, keys, s, n) || !AppendStruct(entries)) return false;
        }
        if (!Run(in.a)) return false;
      }
    }
    return EndList(in, in.col, start);
  }

  bool SkipBlocks(const Instr& in) {
    const bool map = in.code == OpCode::kSkipMap;
    const int64_t min_item = map ? in.b + 1 : in.b;
    const bool empty = p_.begins[in.a] == p_.ends[in.a];
    while (true) {
      const uint8_t* start = pos_;
      int64_t count = 0, bytes = 0;
      if (!ReadBlockCount(in, min_item, &count, &bytes)) return false;
      if (count == 0) return true;
      if (bytes >= 0) {  // the writer said how long the block is: jump over it
        if (bytes > end_ - pos_) return Fail(in, AvroErrorKind::kTruncated, start);
        pos_ += bytes;
        continue;
      }
      if (!map && empty) continue;  // items that take no bytes
      for (int64_t i = 0; i < count; ++i) {
        if (map) {
          int64_t n = 0;
          if (!ReadLength(in, &n)) return false;
          pos_ += n;
        }
        if (!Run(in.a)) return false;
      }
    }
  }

  // --- finishing ---

  bool BuildArray(int32_t c, std::shared_ptr<arrow::ArrayData>* out) {
    const avro::ColumnSpec& spec = p_.columns[c];
    Column& col = cols_[c];
    const int64_t n = len_[c];
    if (col.kind == ColumnKind::kNull) {
      *out = arrow::ArrayData::Make(arrow::null(), n, {nullptr}, n);
      return true;
    }
    // Arrow wants every buffer present, even for no rows or no string bytes.
    if (!GrowRows(c, std::max<int64_t>(n, 1))) return false;
    if (col.kind == ColumnKind::kBinary &&
        !col.data.Grow(std::max<int64_t>(col.data_size, 1))) {
      return false;
    }
    std::shared_ptr<arrow::Buffer> validity;
    if (col.has_nulls) {
      ClearTrailingBits(col.validity.data(), n);
      validity = col.validity.Take(arrow::bit_util::BytesForBits(n));
    }
    const int64_t null_count = col.has_nulls ? arrow::kUnknownNullCount : 0;
    std::vector<std::shared_ptr<arrow::ArrayData>> children;
    for (int32_t child : spec.children) {
      std::shared_ptr<arrow::ArrayData> data;
      if (!BuildArray(child, &data)) return false;
      children.push_back(std::move(data));
    }
    switch (col.kind) {
      case ColumnKind::kBool:
        ClearTrailingBits(col.values.data(), n);
        *out = arrow::ArrayData::Make(
            spec.type, n, {validity, col.values.Take(arrow::bit_util::BytesForBits(n))},
            null_count);
        break;
      case ColumnKind::kFixedWidth:
        *out = arrow::ArrayData::Make(
            spec.type, n, {validity, col.values.Take(n * col.width)}, null_count);
        if (spec.dictionary) (*out)->dictionary = spec.dictionary->data();
        break;
      case ColumnKind::kBinary:
        *out = arrow::ArrayData::Make(
            spec.type, n,
            {validity, col.values.Take((n + 1) * 4), col.data.Take(col.data_size)},
            null_count);
        break;
      case ColumnKind::kList:
        *out =
            arrow::ArrayData::Make(spec.type, n, {validity, col.values.Take((n + 1) * 4)},
                                   std::move(children), null_count);
        break;
      case ColumnKind::kStruct:
        *out = arrow::ArrayData::Make(spec.type, n, {validity}, std::move(children),
                                      null_count);
        break;
      case ColumnKind::kDenseUnion:
        *out = arrow::ArrayData::Make(
            spec.type, n, {nullptr, col.values.Take(n), col.union_offsets.Take(n * 4)},
            std::move(children), 0);
        break;
      case ColumnKind::kNull:
        break;
    }
    return *out != nullptr;
  }

  static void ClearTrailingBits(uint8_t* bits, int64_t n) {
    if (n % 8 != 0) bits[n / 8] &= static_cast<uint8_t>((1u << (n % 8)) - 1);
  }

  std::shared_ptr<const AvroPlan> plan_;
  const AvroPlan::Program& p_;
  AvroDecoderOptions options_;
  std::vector<Column> cols_;
  std::vector<int64_t> len_;     // rows of each column
  std::vector<int64_t> saved_;   // len_ of nested_ before the record being decoded
  std::vector<int32_t> nested_;  // the columns below the top-level ones
  const uint8_t* base_ = nullptr;
  const uint8_t* pos_ = nullptr;
  const uint8_t* end_ = nullptr;
  int64_t zero_byte_items_ = 0;
  bool out_of_memory_ = false;
  AvroDecodeError error_;
};

AvroDecoder::AvroDecoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AvroDecoder::~AvroDecoder() = default;

Result<std::unique_ptr<AvroDecoder>> AvroDecoder::Make(
    std::shared_ptr<const AvroPlan> plan, AvroDecoderOptions options) {
  if (!plan) return Status::Invalid("AvroDecoder::Make: no plan");
  const AvroPlan::Program& program = *plan->program_;
  return std::unique_ptr<AvroDecoder>(
      new AvroDecoder(std::make_unique<Impl>(std::move(plan), program, options)));
}

Status AvroDecoder::Reserve(int64_t records) { return impl_->Reserve(records); }
Status AvroDecoder::Append(std::string_view body) { return impl_->Append(body); }
const AvroDecodeError& AvroDecoder::last_error() const { return impl_->last_error(); }
int64_t AvroDecoder::num_rows() const { return impl_->num_rows(); }
Result<std::shared_ptr<arrow::RecordBatch>> AvroDecoder::Finish() {
  return impl_->Finish();
}
const std::shared_ptr<const AvroPlan>& AvroDecoder::plan() const { return impl_->plan(); }

}  // namespace kelt
