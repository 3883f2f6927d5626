// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Test hooks of the Load step (tests, fuzz targets and benchmarks only).
#pragma once

#include "kelt/load.h"

namespace kelt {

struct LoaderTesting {
  /// Skip the On-Demand fast path so that every record takes the DOM path; used to
  /// check that both paths land exactly the same batches.
  static void ForceDomPath(Loader* loader, bool force);
};

}  // namespace kelt
