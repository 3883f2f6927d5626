// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The pipeline JSON runner (RDP_COMPATIBILITY.md §6, RDP's `rdp_run_pipeline_json`): read
// source files into a table `df`, optionally transform it with SQL, and write it to sinks
// (src/kelt/transform/README.md, "Pipeline JSON"; docs/USER_GUIDE.md, "Transform").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kelt {

/// What one sink of a pipeline did.
struct PipelineSinkResult {
  /// The sink's `kind` as given ("parquet_file", "postgresql", "object_store",
  /// "duckdb", "kafka").
  std::string kind;
  bool ok = false;
  /// Where the data went, as (key, value) pairs in output order: parquet_file
  /// {"path"}, postgresql {"table"}, object_store {"uri"} (the object written),
  /// duckdb {"path","table"}, kafka {"topic"}. Never holds a secret.
  std::vector<std::pair<std::string, std::string>> target;
  /// Rows written (ok only).
  int64_t row_count = 0;
  /// Failure (not ok): a code of the error-code table, the stage ("sink" or
  /// "sink_sql") and the message.
  std::string error_code;
  std::string stage;
  std::string message;
};

/// The outcome of a pipeline run. `ok` is false only when the run stopped before its
/// sinks (parse, ingest or transform); a failing sink is reported in `sink_results`
/// and does not fail the run.
struct PipelineRunResult {
  bool ok = false;
  /// The call's failure (not ok): code, message and stage
  /// ("parse" | "ingest" | "transform").
  std::string error_code;
  std::string error_message;
  std::string error_stage;
  /// Rows read from the sources (before `transform.sql`).
  int64_t ingested_row_count = 0;
  std::vector<PipelineSinkResult> sink_results;
};

/// Run a pipeline JSON document. Never throws; every failure is in the result.
PipelineRunResult RunPipeline(std::string_view pipeline_json);

/// Parse and validate a pipeline JSON document without reading or writing anything:
/// `ok` with no sink results, or the parse-stage failure RunPipeline would report.
PipelineRunResult ValidatePipeline(std::string_view pipeline_json);

/// The JSON envelope of a result: `{"ok":true,"interchange":{"kind":"run_pipeline_json",
/// "ingested_row_count":N,"sink_results":[…]}}` or
/// `{"ok":false,"error":{"code":…,"message":…,"stage":…}}`.
std::string PipelineRunResultToJson(const PipelineRunResult& result);

/// RunPipeline then PipelineRunResultToJson: what `rdp_run_pipeline_json` returns.
std::string RunPipelineJson(std::string_view pipeline_json);

}  // namespace kelt
