// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0

#include "kelt/iceberg/file_io.h"

#include <arrow/buffer.h>
#include <arrow/filesystem/filesystem.h>
#include <arrow/io/interfaces.h>
#include <arrow/result.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "kelt/iceberg/manifest.h"
#include "kelt/iceberg/metadata.h"
#include "kelt/iceberg/table.h"

namespace kelt::iceberg {
namespace {

// "s3://bucket/key" → "bucket/key", the path inside Arrow's S3 file system.
std::string S3Path(const std::string& location) { return location.substr(5); }

Status FromArrowStatus(const arrow::Status& st, const std::string& what) {
  if (st.ok()) return Status::OK();
  return Status::IOError(what + ": " + st.message(), /*retriable=*/true);
}

// A staging file name that does not exist yet (the caller creates it).
std::string StagingPath() {
  std::error_code ec;
  auto dir = std::filesystem::temp_directory_path(ec);
  if (ec) dir = "/tmp";
  return (dir / ("kelt-iceberg-" + RandomUuid() + ".tmp")).string();
}

struct StagingFile {
  std::string path = StagingPath();
  ~StagingFile() { std::remove(path.c_str()); }
};

}  // namespace

const FileIO& FileIO::Local() {
  static const FileIO local;
  return local;
}

Result<std::shared_ptr<arrow::fs::FileSystem>> FileIO::S3() const {
  if (!s3_enabled_) {
    return Status::NotImplemented(
        "s3:// locations need the object store settings (a warehouse on S3)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!fs_) {
    // Any bucket: Arrow's S3 file system takes "bucket/key" paths.
    KELT_ASSIGN_OR_RAISE(auto root, internal::OpenFileSystemRoot("s3://any", s3_, false,
                                                                 "iceberg warehouse"));
    fs_ = root.fs;
  }
  return fs_;
}

Result<std::string> FileIO::Read(const std::string& location) const {
  if (!IsS3(location)) {
    KELT_ASSIGN_OR_RAISE(std::string path, LocalPath(location));
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::IOError("read " + path + ": cannot open");
    std::stringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return Status::IOError("read " + path + ": failed");
    return ss.str();
  }
  KELT_ASSIGN_OR_RAISE(auto fs, S3());
  auto in = fs->OpenInputFile(S3Path(location));
  if (!in.ok()) return FromArrowStatus(in.status(), "read " + location);
  auto size = (*in)->GetSize();
  if (!size.ok()) return FromArrowStatus(size.status(), "read " + location);
  auto buf = (*in)->ReadAt(0, *size);
  if (!buf.ok()) return FromArrowStatus(buf.status(), "read " + location);
  return (*buf)->ToString();
}

Status FileIO::Write(const std::string& location, std::string_view bytes) const {
  if (!IsS3(location)) {
    KELT_ASSIGN_OR_RAISE(std::string path, LocalPath(location));
    return WriteLocalFile(path, bytes);
  }
  return UploadS3(location, [&](arrow::io::OutputStream& out) {
    return out.Write(bytes.data(), static_cast<int64_t>(bytes.size()));
  });
}

Status FileIO::UploadS3(
    const std::string& location,
    const std::function<arrow::Status(arrow::io::OutputStream&)>& write) const {
  KELT_ASSIGN_OR_RAISE(auto fs, S3());
  auto out = fs->OpenOutputStream(S3Path(location));
  if (!out.ok()) return FromArrowStatus(out.status(), "write " + location);
  // The object exists only once Close() completed the upload; on any failure the
  // upload is aborted, so that no truncated object appears at the key (closing the
  // stream as it is destroyed would complete it).
  arrow::Status st = write(**out);
  if (st.ok()) st = (*out)->Close();
  if (!st.ok()) {
    (void)(*out)->Abort();
    return FromArrowStatus(st, "write " + location);
  }
  return Status::OK();
}

Status FileIO::WriteVia(
    const std::string& location,
    const std::function<Status(const std::string& local_path)>& write) const {
  if (!IsS3(location)) {
    KELT_ASSIGN_OR_RAISE(std::string path, LocalPath(location));
    return write(path);
  }
  StagingFile staging;
  KELT_RETURN_NOT_OK(write(staging.path));
  // Streamed in 8 MiB pieces, not held in memory whole.
  std::ifstream in(staging.path, std::ios::binary);
  if (!in) return Status::IOError("read staging file " + staging.path);
  return UploadS3(location, [&](arrow::io::OutputStream& out) {
    std::vector<char> piece(8 << 20);
    while (in) {
      in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
      if (in.gcount() > 0) ARROW_RETURN_NOT_OK(out.Write(piece.data(), in.gcount()));
    }
    if (in.bad()) return arrow::Status::IOError("read staging file " + staging.path);
    return arrow::Status::OK();
  });
}

Status FileIO::ReadVia(
    const std::string& location,
    const std::function<Status(const std::string& local_path)>& read) const {
  if (!IsS3(location)) {
    KELT_ASSIGN_OR_RAISE(std::string path, LocalPath(location));
    return read(path);
  }
  KELT_ASSIGN_OR_RAISE(std::string bytes, Read(location));
  StagingFile staging;
  KELT_RETURN_NOT_OK(WriteLocalFile(staging.path, bytes));
  return read(staging.path);
}

void FileIO::Remove(const std::string& location) const {
  if (!IsS3(location)) {
    auto path = LocalPath(location);
    if (path.ok()) std::remove(path->c_str());
    return;
  }
  auto fs = S3();
  if (fs.ok()) (void)(*fs)->DeleteFile(S3Path(location));
}

Result<std::vector<std::string>> FileIO::List(const std::string& location) const {
  std::vector<std::string> out;
  if (!IsS3(location)) {
    KELT_ASSIGN_OR_RAISE(std::string dir, LocalPath(location));
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      out.push_back(e.path().filename().string());
    }
    if (ec && ec != std::errc::no_such_file_or_directory) {
      return Status::IOError("list " + dir + ": " + ec.message());
    }
    return out;
  }
  KELT_ASSIGN_OR_RAISE(auto fs, S3());
  arrow::fs::FileSelector sel;
  sel.base_dir = S3Path(location);
  sel.allow_not_found = true;
  auto infos = fs->GetFileInfo(sel);
  if (!infos.ok()) return FromArrowStatus(infos.status(), "list " + location);
  for (const auto& i : *infos) {
    if (i.IsFile()) out.push_back(i.base_name());
  }
  return out;
}

Status FileIO::MakeDirs(const std::string& location) const {
  if (IsS3(location)) return Status::OK();  // no directories in an object store
  KELT_ASSIGN_OR_RAISE(std::string dir, LocalPath(location));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError("create " + dir + ": " + ec.message());
  return Status::OK();
}

}  // namespace kelt::iceberg
