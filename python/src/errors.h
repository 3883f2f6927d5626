// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Python boundary for errors (STYLE rule 1): a non-OK kelt::Status becomes a
// StatusError here, and the module's translator raises the matching kelt exception
// (KeltError and its ValueError/OSError subclasses, docs/USER_GUIDE.md "Python").
#pragma once

#include <nanobind/nanobind.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "kelt/status.h"

namespace kelt::python {

/// A kelt::Status carried through C++ unwinding to the translator.
class StatusError : public std::exception {
 public:
  explicit StatusError(Status status) : status_(std::move(status)) {}
  const char* what() const noexcept override { return status_.message().c_str(); }
  const Status& status() const { return status_; }

 private:
  Status status_;
};

/// Throw StatusError unless `status` is OK.
inline void ThrowIfError(const Status& status) {
  if (!status.ok()) throw StatusError(status);
}

/// Return the value of `result` or throw its Status.
template <typename T>
T ValueOrThrow(Result<T>&& result) {
  if (!result.ok()) throw StatusError(std::move(result).status());
  return std::move(result).MoveValueUnsafe();
}

/// Create the exception classes on `m` and register the translator.
void RegisterErrors(nanobind::module_& m);

}  // namespace kelt::python
