// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz the DataSet/Schema/Value JSON parsers. Invariants: no crash/UB; whatever parses
// serializes, re-parses to an equal value (round trip), and converts to a valid Arrow
// batch and back.
#include <arrow/api.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "kelt/dataset.h"
#include "kelt/record.h"

namespace {
void Check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view json(reinterpret_cast<const char*>(data), size);

  for (auto dialect : {kelt::SchemaDialect::kStrict, kelt::SchemaDialect::kLenient}) {
    auto ds = kelt::ParseDataSetJson(json, dialect);
    if (ds.ok()) {
      std::string out = kelt::DataSetToJson(*ds);
      auto again = kelt::ParseDataSetJson(out);
      Check(again.ok());
      Check(kelt::DataSetToJson(*again) == out);
      auto batch = kelt::DataSetToRecordBatch(*ds);
      Check(batch.ok());
      Check((*batch)->ValidateFull().ok());
      auto back = kelt::RecordBatchToDataSet(**batch);
      Check(back.ok());
      Check(kelt::DataSetToJson(*back) == out);
    }
    auto schema = kelt::ParseSchemaJson(json, dialect);
    if (schema.ok()) {
      auto again = kelt::ParseSchemaJson(kelt::SchemaToJson(*schema));
      Check(again.ok());
      Check(*again == *schema);
    }
  }
  auto value = kelt::ParseValueJson(json);
  if (value.ok()) {
    std::string out = kelt::ValueToJson(*value);
    auto again = kelt::ParseValueJson(out);
    Check(again.ok());
    Check(kelt::ValueToJson(*again) == out);
  }
  auto records = kelt::ParseRecordsJson(json);
  if (records.ok()) {
    std::string out = kelt::RecordsToJson(*records);
    auto again = kelt::ParseRecordsJson(out);
    Check(again.ok());
    Check(kelt::RecordsToJson(*again) == out);
  }
  return 0;
}
