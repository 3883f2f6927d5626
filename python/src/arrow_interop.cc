// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "arrow_interop.h"

#include <arrow/api.h>
#include <arrow/c/abi.h>
#include <arrow/c/bridge.h>

#include <string>

#include "errors.h"

namespace nb = nanobind;

namespace kelt::python {
namespace {

constexpr const char* kStreamName = "arrow_array_stream";
constexpr const char* kSchemaName = "arrow_schema";

// Capsule destructors: release what the consumer did not take, then free the struct.
void DeleteStreamCapsule(PyObject* capsule) {
  auto* stream =
      static_cast<ArrowArrayStream*>(PyCapsule_GetPointer(capsule, kStreamName));
  if (stream == nullptr) {
    PyErr_Clear();
    return;
  }
  if (stream->release != nullptr) stream->release(stream);
  delete stream;
}

void DeleteSchemaCapsule(PyObject* capsule) {
  auto* schema = static_cast<ArrowSchema*>(PyCapsule_GetPointer(capsule, kSchemaName));
  if (schema == nullptr) {
    PyErr_Clear();
    return;
  }
  if (schema->release != nullptr) schema->release(schema);
  delete schema;
}

Status FromArrow(const arrow::Status& st, const char* what) {
  return Status::Invalid(std::string(what) + ": " + st.ToString());
}

}  // namespace

ArrowTable ArrowTable::FromBatch(const std::shared_ptr<arrow::RecordBatch>& batch) {
  return FromBatches(batch->schema(), {batch});
}

ArrowTable ArrowTable::FromBatches(
    const std::shared_ptr<arrow::Schema>& schema,
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches) {
  auto table = arrow::Table::FromRecordBatches(schema, batches);
  if (!table.ok()) throw StatusError(FromArrow(table.status(), "landed window"));
  return ArrowTable(table.MoveValueUnsafe());
}

int64_t ArrowTable::num_rows() const { return table_->num_rows(); }

nb::list ArrowTable::column_names() const {
  nb::list out;
  for (const auto& name : table_->ColumnNames())
    out.append(nb::str(name.c_str(), name.size()));
  return out;
}

nb::object ArrowTable::StreamCapsule(nb::handle requested_schema) const {
  // A requested schema is a hint the producer may ignore (the interface's rule): the
  // columns already have kelt's types.
  auto reader = std::make_shared<arrow::TableBatchReader>(table_);
  auto* stream = new ArrowArrayStream{};
  arrow::Status st = arrow::ExportRecordBatchReader(reader, stream);
  if (!st.ok()) {
    delete stream;
    throw StatusError(FromArrow(st, "arrow stream export"));
  }
  PyObject* capsule = PyCapsule_New(stream, kStreamName, &DeleteStreamCapsule);
  if (capsule == nullptr) {
    stream->release(stream);
    delete stream;
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

nb::object ArrowTable::SchemaCapsule() const {
  auto* schema = new ArrowSchema{};
  arrow::Status st = arrow::ExportSchema(*table_->schema(), schema);
  if (!st.ok()) {
    delete schema;
    throw StatusError(FromArrow(st, "arrow schema export"));
  }
  PyObject* capsule = PyCapsule_New(schema, kSchemaName, &DeleteSchemaCapsule);
  if (capsule == nullptr) {
    schema->release(schema);
    delete schema;
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

std::shared_ptr<arrow::Table> ImportArrow(nb::handle obj, const char* what) {
  nb::object capsule;
  if (PyCapsule_CheckExact(obj.ptr())) {
    capsule = nb::borrow(obj);
  } else if (nb::hasattr(obj, "__arrow_c_stream__")) {
    capsule = obj.attr("__arrow_c_stream__")();
  } else {
    throw StatusError(Status::Invalid(
        std::string(what) +
        ": expected Arrow data (an object with __arrow_c_stream__, e.g. a pyarrow "
        "Table, a polars DataFrame or a kelt window), got " +
        nb::type_name(obj.type()).c_str()));
  }
  auto* stream =
      static_cast<ArrowArrayStream*>(PyCapsule_GetPointer(capsule.ptr(), kStreamName));
  if (stream == nullptr) throw nb::python_error();
  // Import moves the stream out (its release becomes NULL): the capsule then only frees
  // the struct.
  auto reader = arrow::ImportRecordBatchReader(stream);
  if (!reader.ok()) throw StatusError(FromArrow(reader.status(), what));
  auto table = (*reader)->ToTable();
  if (!table.ok()) throw StatusError(FromArrow(table.status(), what));
  return table.MoveValueUnsafe();
}

}  // namespace kelt::python
