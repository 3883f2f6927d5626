// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// An append-only Arrow column that can be rewound: the Load step writes each record's
// values straight into its columns and, when a later column of the same record fails,
// rewinds every column to the row start. Arrow's builders cannot take a value back, so
// the loader would otherwise need a staging copy of every cell.
//
// The validity bitmap is created only when the first null arrives, so columns without
// nulls pay nothing for it. Internal header.
#pragma once

#include <arrow/api.h>
#include <arrow/util/bit_util.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string_view>

#include "kelt/common/copy_small.h"
#include "kelt/common/memory_pool.h"
#include "kelt/schema.h"
#include "kelt/status.h"

namespace kelt::load {

class ColumnWriter {
 public:
  explicit ColumnWriter(TypeId type) : type_(type) {}

  TypeId type() const { return type_; }
  int64_t length() const { return length_; }

  /// Make room for `rows` rows in total and `data_bytes` more bytes of string data.
  Status Reserve(int64_t rows, int64_t data_bytes) {
    arrow::Status st;
    if (IsBinary()) {
      st &= offsets_.Resize(std::max(offsets_.capacity(), (rows + 1) * 4), false);
      if (data_bytes > 0) st &= data_.Reserve(data_bytes);
    } else if (type_ == TypeId::kBool) {
      st &= values_.Resize(
          std::max(values_.capacity(), arrow::bit_util::BytesForBits(rows)), false);
    } else {
      st &= values_.Resize(std::max(values_.capacity(), rows * ValueWidth()), false);
    }
    if (has_nulls_) {
      st &= validity_.Resize(
          std::max(validity_.capacity(), arrow::bit_util::BytesForBits(rows)), false);
    }
    if (!st.ok())
      return Status::IOError("out of memory growing a landing column: " + st.message());
    row_capacity_ = rows;
    return Status::OK();
  }

  int64_t row_capacity() const { return row_capacity_; }

  // --- appends: the caller guarantees length() < row_capacity() -----------------------

  Status AppendNull() {
    if (!has_nulls_) KELT_RETURN_NOT_OK(StartValidity());
    arrow::bit_util::ClearBit(validity_.mutable_data(), length_);
    if (IsBinary()) {
      WriteOffset();
    } else if (type_ == TypeId::kBool) {
      arrow::bit_util::ClearBit(values_.mutable_data(), length_);
    } else {
      std::memset(values_.mutable_data() + length_ * ValueWidth(), 0,
                  static_cast<size_t>(ValueWidth()));
    }
    ++length_;
    return Status::OK();
  }

  [[gnu::always_inline]] void AppendInt64(int64_t v) {  // Int64, Timestamp
    MarkValid();
    std::memcpy(values_.mutable_data() + length_ * 8, &v, 8);
    ++length_;
  }
  [[gnu::always_inline]] void AppendDouble(double v) {
    MarkValid();
    std::memcpy(values_.mutable_data() + length_ * 8, &v, 8);
    ++length_;
  }
  [[gnu::always_inline]] void AppendDate(int32_t v) {
    MarkValid();
    std::memcpy(values_.mutable_data() + length_ * 4, &v, 4);
    ++length_;
  }
  [[gnu::always_inline]] void AppendBool(bool v) {
    MarkValid();
    arrow::bit_util::SetBitTo(values_.mutable_data(), length_, v);
    ++length_;
  }
  /// Utf8/Binary. Fails when the column would pass Arrow's 2 GiB offset limit.
  [[gnu::always_inline]] Status AppendBytes(std::string_view v) {
    const auto n = static_cast<int64_t>(v.size());
    // The reserved room bounds the data below the limit in the common case, so one
    // comparison decides; growing and the limit are checked out of line.
    if (data_.capacity() - data_.length() < n ||
        data_.capacity() > std::numeric_limits<int32_t>::max()) [[unlikely]] {
      KELT_RETURN_NOT_OK(GrowData(n));
    }
    internal::CopySmall(data_.mutable_data() + data_.length(), v.data(), v.size());
    data_.UnsafeAdvance(n);
    MarkValid();
    WriteOffset();
    ++length_;
    return Status::OK();
  }

  /// Drop every row from `rows` on (used to take back a partly written record).
  void Rewind(int64_t rows) {
    if (rows >= length_) return;
    length_ = rows;
    if (IsBinary()) {
      int32_t end = 0;
      if (rows > 0) std::memcpy(&end, offsets_.data() + rows * 4, 4);
      data_.Rewind(end);
    }
  }

  /// Return the column as an Arrow array of `type` and start an empty column.
  Result<std::shared_ptr<arrow::Array>> Finish(
      const std::shared_ptr<arrow::DataType>& type) {
    std::shared_ptr<arrow::Buffer> validity, values, offsets, data;
    arrow::Status st;
    if (has_nulls_) {
      validity_.UnsafeAdvance(arrow::bit_util::BytesForBits(length_) -
                              validity_.length());
      st &= validity_.Finish(&validity, false);
    }
    if (IsBinary()) {
      if (length_ == 0) {
        int32_t zero = 0;
        st &= offsets_.Resize(std::max<int64_t>(offsets_.capacity(), 4), false);
        std::memcpy(offsets_.mutable_data(), &zero, 4);
      }
      offsets_.UnsafeAdvance((length_ + 1) * 4 - offsets_.length());
      st &= offsets_.Finish(&offsets, false);
      // Shrink the string data to its length: Finish() zero-fills the unused room, and
      // Reserve() sized it from an estimate that is often several times too large;
      // filling it would touch every page of it. Shrinking costs at most one copy.
      st &= data_.Finish(&data, true);
    } else {
      int64_t bytes = type_ == TypeId::kBool ? arrow::bit_util::BytesForBits(length_)
                                             : length_ * ValueWidth();
      values_.UnsafeAdvance(bytes - values_.length());
      st &= values_.Finish(&values, false);
    }
    if (!st.ok()) return Status::IOError("finishing a landing column: " + st.message());
    std::shared_ptr<arrow::ArrayData> out =
        IsBinary() ? arrow::ArrayData::Make(type, length_, {validity, offsets, data},
                                            has_nulls_ ? arrow::kUnknownNullCount : 0)
                   : arrow::ArrayData::Make(type, length_, {validity, values},
                                            has_nulls_ ? arrow::kUnknownNullCount : 0);
    length_ = 0;
    row_capacity_ = 0;
    has_nulls_ = false;
    return arrow::MakeArray(out);
  }

 private:
  // Make room for `n` more bytes of string data, within Arrow's 2 GiB offset limit.
  [[gnu::noinline]] Status GrowData(int64_t n) {
    if (data_.length() + n > std::numeric_limits<int32_t>::max()) {
      return Status::Invalid(
          "more than 2 GiB of text in one landing column of one window");
    }
    if (data_.capacity() - data_.length() < n) {
      auto st = data_.Reserve(std::max(n, data_.length()));
      if (!st.ok()) return Status::IOError("out of memory growing a landing column");
    }
    return Status::OK();
  }

  bool IsBinary() const { return type_ == TypeId::kUtf8 || type_ == TypeId::kBinary; }
  int64_t ValueWidth() const { return type_ == TypeId::kDate ? 4 : 8; }

  void MarkValid() {
    if (has_nulls_) arrow::bit_util::SetBit(validity_.mutable_data(), length_);
  }

  // offsets_[0] is 0; offsets_[i + 1] is the end of row i in data_.
  void WriteOffset() {
    auto end = static_cast<int32_t>(data_.length());
    if (length_ == 0) {
      int32_t zero = 0;
      std::memcpy(offsets_.mutable_data(), &zero, 4);
    }
    std::memcpy(offsets_.mutable_data() + (length_ + 1) * 4, &end, 4);
  }

  // First null of the window: every earlier row was valid.
  Status StartValidity() {
    auto st = validity_.Resize(
        arrow::bit_util::BytesForBits(std::max(row_capacity_, length_ + 1)), false);
    if (!st.ok()) return Status::IOError("out of memory growing a landing column");
    std::memset(validity_.mutable_data(), 0xFF,
                static_cast<size_t>(arrow::bit_util::BytesForBits(length_ + 1)));
    has_nulls_ = true;
    return Status::OK();
  }

  TypeId type_;
  int64_t length_ = 0;
  int64_t row_capacity_ = 0;
  bool has_nulls_ = false;
  arrow::BufferBuilder values_{
      internal::WindowPool()};  // fixed-width values or value bits
  arrow::BufferBuilder offsets_{internal::WindowPool()};  // int32 offsets (Utf8/Binary)
  arrow::BufferBuilder data_{internal::WindowPool()};     // string bytes (Utf8/Binary)
  arrow::BufferBuilder validity_{
      internal::WindowPool()};  // bits, only once a null arrived
};

}  // namespace kelt::load
