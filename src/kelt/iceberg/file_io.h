// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Where a table's files live: local paths (`file://…` or absolute) or an S3-compatible
// object store (`s3://bucket/key`, through landing/'s Arrow S3 file system). Avro C and
// the Parquet writer work on local files, so a file for S3 is written to a local
// staging file and uploaded whole (an object appears complete or not at all), and one
// read from S3 is downloaded to a staging file first.
#pragma once

#include <arrow/io/interfaces.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kelt/landing/filesystem.h"
#include "kelt/status.h"

namespace arrow::fs {
class FileSystem;
}  // namespace arrow::fs

namespace kelt::iceberg {

class FileIO {
 public:
  /// Local locations only (an s3:// location is kNotImplemented).
  FileIO() = default;
  /// Local locations and s3:// ones, with these object store settings.
  explicit FileIO(internal::ObjectStoreOptions s3)
      : s3_(std::move(s3)), s3_enabled_(true) {}

  /// The one local-only FileIO.
  static const FileIO& Local();

  static bool IsS3(const std::string& location) {
    return location.rfind("s3://", 0) == 0;
  }

  /// The whole file.
  Result<std::string> Read(const std::string& location) const;
  /// Create the file (locally: it must not exist; fsynced) with `bytes`.
  Status Write(const std::string& location, std::string_view bytes) const;
  /// Produce the file by `write(local_path)` (a local path that does not exist yet):
  /// locally at its own path, for S3 at a staging path, then uploaded and the staging
  /// file removed.
  Status WriteVia(
      const std::string& location,
      const std::function<Status(const std::string& local_path)>& write) const;
  /// Run `read(local_path)` on the file: locally its own path, for S3 a downloaded copy.
  Status ReadVia(const std::string& location,
                 const std::function<Status(const std::string& local_path)>& read) const;
  /// Remove the file; a missing file or a failure is ignored (best effort).
  void Remove(const std::string& location) const;
  /// The names of the files directly under directory `location` (none if missing).
  Result<std::vector<std::string>> List(const std::string& location) const;
  /// Create directory `location` and its parents (nothing to do on S3).
  Status MakeDirs(const std::string& location) const;

 private:
  Result<std::shared_ptr<arrow::fs::FileSystem>> S3() const;
  /// Uploads the object `location` with `write`, aborting the upload on any failure.
  Status UploadS3(
      const std::string& location,
      const std::function<arrow::Status(arrow::io::OutputStream&)>& write) const;

  internal::ObjectStoreOptions s3_;
  bool s3_enabled_ = false;
  mutable std::mutex mu_;
  mutable std::shared_ptr<arrow::fs::FileSystem> fs_;
};

}  // namespace kelt::iceberg
