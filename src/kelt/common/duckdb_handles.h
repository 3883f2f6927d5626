// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// RAII over DuckDB's C API handles, shared by the DuckDB sink and the transform stage.
// Include only from .cc files that link kelt::duckdb.
#pragma once

#include <duckdb.h>

#include <cstring>
#include <memory>
#include <type_traits>

namespace kelt::internal::duckdb {

template <typename Handle, auto kDestroy>
struct HandleDeleter {
  void operator()(Handle h) const { kDestroy(&h); }
};
/// A C API handle destroyed by `kDestroy(&handle)`.
template <typename Handle, auto kDestroy>
using Owned =
    std::unique_ptr<std::remove_pointer_t<Handle>, HandleDeleter<Handle, kDestroy>>;

using DatabasePtr = Owned<duckdb_database, duckdb_close>;
using ConnectionPtr = Owned<duckdb_connection, duckdb_disconnect>;
using PreparedPtr = Owned<duckdb_prepared_statement, duckdb_destroy_prepare>;
using ChunkPtr = Owned<duckdb_data_chunk, duckdb_destroy_data_chunk>;
using ConvertedSchemaPtr =
    Owned<duckdb_arrow_converted_schema, duckdb_destroy_arrow_converted_schema>;
using ConfigPtr = Owned<duckdb_config, duckdb_destroy_config>;
using ErrorPtr = Owned<duckdb_error_data, duckdb_destroy_error_data>;
using LogicalTypePtr = Owned<duckdb_logical_type, duckdb_destroy_logical_type>;
using ValuePtr = Owned<duckdb_value, duckdb_destroy_value>;
using ArrowOptionsPtr = Owned<duckdb_arrow_options, duckdb_destroy_arrow_options>;
using TableFunctionPtr = Owned<duckdb_table_function, duckdb_destroy_table_function>;

/// A materialized query result, destroyed with its owner.
class QueryResult {
 public:
  QueryResult() { std::memset(&result_, 0, sizeof(result_)); }
  ~QueryResult() {
    if (used_) duckdb_destroy_result(&result_);
  }
  QueryResult(const QueryResult&) = delete;
  QueryResult& operator=(const QueryResult&) = delete;

  duckdb_result* out() {
    used_ = true;
    return &result_;
  }
  duckdb_result& get() { return result_; }

 private:
  duckdb_result result_;
  bool used_ = false;
};

}  // namespace kelt::internal::duckdb
