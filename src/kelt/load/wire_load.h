// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// What the loaders of schema-registry payloads (Avro: avro_load.cc, Protobuf:
// protobuf_load.cc) share: the wire format's header, the `_kafka_*` columns (column
// plan, value converter, rewindable writers, written before the body so that a body
// that fails rewinds them), tombstones as rows of nulls, the bad-record policy and the
// dead letters, and the segments that keep the window's row order while several
// decoders (one per writer schema) and tombstones take turns: the current run of rows
// is finished into a segment whenever the next record goes elsewhere, and Finish()
// joins the segments column by column. A topic with one writer schema and no tombstones
// has one segment: no copy. Internal header.
#pragma once

#include <arrow/type_fwd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/load/column_plan.h"
#include "kelt/load/column_writer.h"
#include "kelt/load/dead_letters.h"
#include "kelt/load/load_impl.h"
#include "kelt/load/record_error.h"
#include "kelt/load/value_converter.h"

namespace kelt::load {

/// `type` with every field below it nullable (map keys stay required, as Arrow wants):
/// a tombstone, a null record or a null union lands nulls in fields the reader schema
/// requires, and sinks refuse nulls in a non-nullable field.
std::shared_ptr<arrow::DataType> Relaxed(const std::shared_ptr<arrow::DataType>& type);

/// `schema`'s columns, each nullable and Relaxed: the landing's payload columns.
std::shared_ptr<arrow::Schema> RelaxedColumns(const arrow::Schema& schema);

/// True when `wider` has every column of `narrow` with the same type.
bool Contains(const arrow::Schema& wider, const arrow::Schema& narrow);
/// True when `wider` has every column of `narrow` with the same type, and more.
bool Grows(const arrow::Schema& narrow, const arrow::Schema& wider);

/// "schema id 7", or "the reader schema" for an id below 0.
std::string SchemaIdName(int32_t id);

/// Rows of one writer schema: a decoder's batches, and where each payload column of the
/// landing is in them.
class RowSource {
 public:
  virtual ~RowSource() = default;
  virtual int64_t num_rows() const = 0;
  virtual Status Reserve(int64_t records) = 0;
  virtual Result<std::shared_ptr<arrow::RecordBatch>> Finish() = 0;
  /// Payload column c of the landing is the batch's column projection[c] (-1: the
  /// writer lacks it, nulls); empty: the batch's columns are the landing's.
  std::shared_ptr<const std::vector<int>> projection;
};

/// A RowSource over a decoder (AvroDecoder, ProtobufDecoder).
template <typename Decoder>
class DecoderSource final : public RowSource {
 public:
  explicit DecoderSource(std::unique_ptr<Decoder> decoder)
      : decoder_(std::move(decoder)) {}
  Decoder& decoder() { return *decoder_; }
  int64_t num_rows() const override { return decoder_->num_rows(); }
  Status Reserve(int64_t records) override { return decoder_->Reserve(records); }
  Result<std::shared_ptr<arrow::RecordBatch>> Finish() override {
    return decoder_->Finish();
  }

 private:
  std::unique_ptr<Decoder> decoder_;
};

/// The Loader::Impl of payloads in a registry's wire format: the subclass decodes the
/// body after the header (AppendBody) into a RowSource of its own.
class WireFormatLoad : public Loader::Impl {
 public:
  WireFormatLoad(const WireFormatLoad&) = delete;
  WireFormatLoad& operator=(const WireFormatLoad&) = delete;

  Status Reserve(int64_t records, int64_t payload_bytes) final;
  Status Append(const RecordView& r) final;
  Result<LoadedWindow> Finish() final;
  bool needs_headers() const final { return plan_ && plan_->needs_headers(); }
  int32_t newer_writer_schema() const final { return newer_; }
  int64_t rows() const final { return stats_.rows; }
  const BadRecordNote* last_bad() const final { return &last_bad_; }
  const Schema& schema() const final { return metadata_; }
  const std::shared_ptr<arrow::Schema>& arrow_schema() const final {
    return arrow_schema_;
  }

 protected:
  /// `format` names the payloads in messages ("Avro", "Protobuf").
  WireFormatLoad(const LoadOptions& options, std::string format)
      : options_(options), format_(std::move(format)) {}

  /// Refuse landing columns other than `_kafka_*` ones (the payload columns are the
  /// reader schema's).
  static Status CheckMetadataOnly(const Schema& metadata, std::string_view format);

  /// Set the landing: `payload` (the reader schema's columns), then `metadata`'s.
  Status Plan(const Schema& metadata, std::shared_ptr<arrow::Schema> payload);

  /// Decode one record's body (after the 5-byte header) of writer schema `id`: call
  /// SwitchTo(source) and append, then return Landed(), Reject(…) or Abort(…).
  virtual Status AppendBody(const RecordView& r, int32_t id, std::string_view body) = 0;

  /// The next row comes from `source` (nullptr: a tombstone, or the window's end):
  /// close the run of rows before it when that came from elsewhere.
  Status SwitchTo(RowSource* source);
  /// The record landed a row.
  Status Landed() {
    ++stats_.rows;
    return Status::OK();
  }
  /// The record is bad: take back its metadata columns and apply the policy.
  Status Reject(const RecordView& r, std::string_view code, std::string_view field,
                const std::string& message);
  /// The window cannot go on (a registry that is down, a landing that grows): take the
  /// record back and return `st` naming it.
  Status Abort(const RecordView& r, const Status& st);
  /// A writer schema with columns the landing lacks stopped the window (Abort with
  /// kCancelled).
  void set_newer_writer_schema(int32_t id) { newer_ = id; }

  const LoadOptions& options() const { return options_; }
  /// The landing's payload columns (the reader schema's, nullable).
  const std::shared_ptr<arrow::Schema>& payload() const { return payload_; }

 private:
  // A run of consecutive rows: a source's batch, or `nulls` rows of nulls.
  struct Segment {
    std::shared_ptr<arrow::RecordBatch> batch;
    std::shared_ptr<const std::vector<int>> projection;
    int64_t nulls = 0;
  };

  Status EndNullRun();
  Result<std::shared_ptr<arrow::Array>> PayloadColumn(int c);
  void Rewind();

  LoadOptions options_;
  std::string format_;
  Schema metadata_;                              // the landing's _kafka_* columns
  std::shared_ptr<arrow::Schema> payload_;       // the reader schema's columns, nullable
  std::shared_ptr<arrow::Schema> arrow_schema_;  // payload, then metadata
  std::unique_ptr<ColumnPlan> plan_;             // of the metadata columns (none: null)
  std::vector<ColumnWriter> writers_;            // one per metadata column
  std::unique_ptr<ValueConverter> converter_;
  RecordError error_;
  RowSource* current_ = nullptr;   // the source of the run of rows being written
  int64_t null_run_ = 0;           // tombstones in the current run of rows
  std::vector<Segment> segments_;  // the window's finished runs, in order
  DeadLetterWriter dead_letters_;
  BadRecordNote last_bad_;  // why the last bad record was bad (KeyedLoad reads it)
  int64_t row_capacity_ = 0;
  int32_t newer_ =
      -1;  // a writer schema with columns the reader lacks stopped the window
  LoadStats stats_;
};

}  // namespace kelt::load
