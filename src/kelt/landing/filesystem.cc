// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/landing/filesystem.h"

#include <arrow/filesystem/localfs.h>
#include <arrow/filesystem/s3fs.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "kelt/common/arrow_status.h"

namespace kelt::internal {

std::string FileSystemRoot::Join(const std::string& rel) const {
  if (rel.empty()) return base;
  return base.empty() ? rel : base + "/" + rel;
}

namespace {

Status EnsureS3() {
  static std::once_flag once;
  static Status status;
  std::call_once(once, [] {
    if (arrow::fs::IsS3Initialized()) return;
    arrow::fs::S3GlobalOptions g;
    g.log_level = arrow::fs::S3LogLevel::Fatal;
    status = FromArrow(arrow::fs::InitializeS3(g));
  });
  return status;
}

}  // namespace

Result<FileSystemRoot> OpenFileSystemRoot(const std::string& location,
                                          const ObjectStoreOptions& o, bool create,
                                          const std::string& what) {
  FileSystemRoot root;
  if (location.rfind("s3://", 0) == 0) {
    KELT_RETURN_NOT_OK(EnsureS3());
    arrow::fs::S3Options s3 = o.access_key.empty() ? arrow::fs::S3Options::Defaults()
                                                   : arrow::fs::S3Options::FromAccessKey(
                                                         o.access_key, o.secret_key);
    if (!o.region.empty()) s3.region = o.region;
    if (!o.endpoint.empty()) {
      std::string ep = o.endpoint;
      if (ep.rfind("http://", 0) == 0) {
        s3.scheme = "http";
        ep = ep.substr(7);
      } else if (ep.rfind("https://", 0) == 0) {
        ep = ep.substr(8);
      }
      s3.endpoint_override = ep;
    }
    auto made = arrow::fs::S3FileSystem::Make(s3);
    if (!made.ok()) {
      return Status::IOError(what + ": opening object store for '" + location +
                             "': " + made.status().message());
    }
    // Finalize the AWS SDK at exit, as Arrow requires. Registered after the first client
    // exists: Arrow's function-local statics made while building it must outlive the
    // handler (exit handlers run in reverse order of registration).
    static std::once_flag exit_once;
    std::call_once(exit_once,
                   [] { std::atexit([] { (void)arrow::fs::EnsureS3Finalized(); }); });
    root.fs = *made;
    root.base = location.substr(5);
    while (!root.base.empty() && root.base.back() == '/') root.base.pop_back();
    if (root.base.empty()) {
      return Status::Invalid(what + ": location '" + location + "' has no bucket");
    }
    root.local = false;
    return root;
  }
  if (location.find("://") != std::string::npos) {
    return Status::NotImplemented(what + ": location '" + location +
                                  "': only local directories and s3:// are supported");
  }
  if (location.empty()) return Status::Invalid(what + ": the location must not be empty");
  if (create) {
    std::error_code ec;
    std::filesystem::create_directories(location, ec);
    if (ec) {
      return Status::IOError(what + ": creating '" + location + "': " + ec.message());
    }
  }
  root.fs = std::make_shared<arrow::fs::LocalFileSystem>();
  root.base = std::filesystem::absolute(location).lexically_normal().string();
  while (root.base.size() > 1 && root.base.back() == '/') root.base.pop_back();
  return root;
}

}  // namespace kelt::internal
