// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Where landed files live: a local directory or an S3-compatible object store, opened
// the same way by the sinks and the transform stage (one AWS SDK set-up per process).
#pragma once

#include <memory>
#include <string>

#include "kelt/status.h"

namespace arrow::fs {
class FileSystem;
}  // namespace arrow::fs

namespace kelt::internal {

/// S3 settings: endpoint override (`http://127.0.0.1:9000`), region, credentials.
/// Empty: the AWS defaults and environment.
struct ObjectStoreOptions {
  std::string endpoint;
  std::string region;
  std::string access_key;
  std::string secret_key;
};

struct FileSystemRoot {
  std::shared_ptr<arrow::fs::FileSystem> fs;
  std::string base;  ///< path of the root inside `fs`: "/abs/dir" or "bucket/prefix"
  bool local = true;

  /// `base/rel` (or `base` when `rel` is empty).
  std::string Join(const std::string& rel) const;
};

/// Open `location` (a directory, created when `create` is set, or `s3://bucket/prefix`).
/// `what` names the caller in messages ("parquet sink", "transform").
Result<FileSystemRoot> OpenFileSystemRoot(const std::string& location,
                                          const ObjectStoreOptions& s3, bool create,
                                          const std::string& what);

}  // namespace kelt::internal
