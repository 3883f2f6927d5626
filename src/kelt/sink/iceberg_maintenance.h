// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The data file reader and writer Iceberg compaction runs with (iceberg_maintenance.cc).
#pragma once

#include "kelt/iceberg/maintenance.h"

namespace kelt {

/// Arrow's Parquet reader, and the sink's Parquet writer (WriteLandingParquetFile).
iceberg::DataFileCodec IcebergDataFileCodec();

}  // namespace kelt
