// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// arrow::Status / arrow::Result → kelt::Status at the boundary of kelt code that calls
// Arrow (STYLE rule 1: one error taxonomy inside kelt).
#pragma once

#include <arrow/result.h>
#include <arrow/status.h>

#include <string>

#include "kelt/status.h"

namespace kelt::internal {

/// Return the status's message with its detail: for an I/O error of Arrow's file system
/// the errno text ("[errno 28] No space left on device"), which message() leaves out.
inline std::string ArrowMessage(const arrow::Status& st) {
  std::string m = st.message();
  if (st.detail()) m += " (" + st.detail()->ToString() + ")";
  return m;
}

inline Status FromArrow(const arrow::Status& st) {
  if (st.ok()) return Status::OK();
  if (st.IsCapacityError() || st.IsInvalid() || st.IsTypeError()) {
    return Status::Invalid("arrow: " + st.message());
  }
  if (st.IsIOError()) return Status::IOError(ArrowMessage(st));
  return Status::Internal("arrow: " + st.ToString());
}

}  // namespace kelt::internal

#define KELT_ARROW_RETURN_NOT_OK(expr) \
  KELT_RETURN_NOT_OK(::kelt::internal::FromArrow((expr)))

#define KELT_ARROW_CONCAT_INNER(a, b) a##b
#define KELT_ARROW_CONCAT(a, b) KELT_ARROW_CONCAT_INNER(a, b)
#define KELT_ARROW_ASSIGN_OR_RAISE_IMPL(tmp, lhs, expr)            \
  auto tmp = (expr);                                               \
  if (!tmp.ok()) return ::kelt::internal::FromArrow(tmp.status()); \
  lhs = std::move(tmp).ValueUnsafe();

/// `lhs = value of expr` for an arrow::Result, or return its error as a kelt Status.
#define KELT_ARROW_ASSIGN_OR_RAISE(lhs, expr) \
  KELT_ARROW_ASSIGN_OR_RAISE_IMPL(KELT_ARROW_CONCAT(_kelt_ar_, __LINE__), lhs, expr)
