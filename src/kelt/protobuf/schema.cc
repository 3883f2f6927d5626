// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// ProtobufSchema: .proto text (libprotoc's parser) or base64 FileDescriptorProtos, their
// imports and the well-known types, built into a DescriptorPool at run time.
#include "kelt/protobuf/schema.h"

#include <google/protobuf/compiler/parser.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include <set>
#include <string>
#include <string_view>

#include "kelt/common/text.h"

namespace kelt {

namespace gp = google::protobuf;

namespace {

// The first syntax error of a .proto text, as "file:line:column: message".
class SyntaxErrors : public gp::io::ErrorCollector {
 public:
  explicit SyntaxErrors(std::string file) : file_(std::move(file)) {}
  void AddError(int line, gp::io::ColumnNumber column,
                const std::string& message) override {
    if (first_.empty()) {
      first_ = file_ + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1) +
               ": " + message;
    }
  }
  const std::string& first() const { return first_; }

 private:
  std::string file_;
  std::string first_;
};

// The first error of building a file into the pool, as "file: element: message".
class BuildErrors : public gp::DescriptorPool::ErrorCollector {
 public:
  void AddError(const std::string& filename, const std::string& element_name,
                const gp::Message*, ErrorLocation, const std::string& message) override {
    if (first_.empty()) {
      first_ =
          filename + (element_name.empty() ? "" : ": " + element_name) + ": " + message;
    }
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

// A registry's base64 text has only the base64 alphabet; .proto text always has a
// space, a ';' or a '{' (an empty text is an empty .proto file).
bool LooksLikeBase64(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '=' || c == '\n' ||
              c == '\r';
    if (!ok) return false;
  }
  return true;
}

Status ToFileProto(std::string_view text, const std::string& name,
                   gp::FileDescriptorProto* proto) {
  std::string_view trimmed = text;
  while (!trimmed.empty() &&
         (trimmed.back() == '\n' || trimmed.back() == '\r' || trimmed.back() == ' ')) {
    trimmed.remove_suffix(1);
  }
  if (LooksLikeBase64(trimmed)) {
    std::string compact;
    for (char c : trimmed) {
      if (c != '\n' && c != '\r') compact.push_back(c);
    }
    std::optional<std::string> bytes = text::Base64Decode(compact);
    if (!bytes || !proto->ParseFromString(*bytes)) {
      return Status::ParseError(name +
                                ": neither .proto text nor a base64 FileDescriptorProto");
    }
    if (proto->name().empty()) proto->set_name(name);
    return Status::OK();
  }
  SyntaxErrors errors(name);
  // The parser logs a warning for a file without `syntax`; the library is silent.
  gp::LogSilencer silence;
  gp::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  gp::io::Tokenizer tokenizer(&input, &errors);
  gp::compiler::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.Parse(&tokenizer, proto) || !errors.first().empty()) {
    return Status::ParseError(errors.first().empty() ? name + ": does not parse"
                                                     : errors.first());
  }
  proto->set_name(name);
  return Status::OK();
}

class PoolBuilder {
 public:
  explicit PoolBuilder(const std::vector<ProtobufImport>& imports)
      : imports_(imports), pool_(std::make_unique<gp::DescriptorPool>()) {}

  // Build `proto` after the files it imports.
  Result<const gp::FileDescriptor*> Build(gp::FileDescriptorProto proto) {
    const std::string name = proto.name();
    if (const gp::FileDescriptor* done = pool_->FindFileByName(name)) return done;
    if (!in_progress_.insert(name).second) {
      return Status::Invalid(name + ": import cycle");
    }
    for (const std::string& dep : proto.dependency()) {
      KELT_RETURN_NOT_OK(Import(dep, name));
    }
    in_progress_.erase(name);
    BuildErrors errors;
    gp::LogSilencer silence;
    const gp::FileDescriptor* file = pool_->BuildFileCollectingErrors(proto, &errors);
    if (file == nullptr) {
      return Status::Invalid(errors.first().empty() ? name + ": does not build"
                                                    : errors.first());
    }
    return file;
  }

  std::unique_ptr<gp::DescriptorPool> Release() { return std::move(pool_); }

 private:
  Status Import(const std::string& dep, const std::string& importer) {
    if (pool_->FindFileByName(dep) != nullptr) return Status::OK();
    for (const ProtobufImport& import : imports_) {
      if (import.name != dep) continue;
      gp::FileDescriptorProto proto;
      KELT_RETURN_NOT_OK(ToFileProto(import.text, dep, &proto));
      proto.set_name(dep);  // the name the importer uses is the name that resolves
      return Build(std::move(proto)).status();
    }
    // The well-known types are compiled into libprotobuf.
    if (const gp::FileDescriptor* known =
            gp::DescriptorPool::generated_pool()->FindFileByName(dep)) {
      gp::FileDescriptorProto proto;
      known->CopyTo(&proto);
      return Build(std::move(proto)).status();
    }
    return Status::Invalid(importer + ": import \"" + dep +
                           "\" is neither a reference nor a well-known type");
  }

  const std::vector<ProtobufImport>& imports_;
  std::unique_ptr<gp::DescriptorPool> pool_;
  std::set<std::string> in_progress_;
};

}  // namespace

ProtobufSchema::ProtobufSchema(std::shared_ptr<const Pool> pool)
    : pool_(std::move(pool)) {}

Result<ProtobufSchema> ProtobufSchema::Parse(std::string_view text,
                                             const std::vector<ProtobufImport>& imports,
                                             std::string_view file_name) {
  gp::FileDescriptorProto proto;
  KELT_RETURN_NOT_OK(ToFileProto(text, std::string(file_name), &proto));
  PoolBuilder builder(imports);
  KELT_ASSIGN_OR_RAISE(const gp::FileDescriptor* file, builder.Build(std::move(proto)));
  auto pool = std::make_shared<Pool>();
  pool->file = file;
  pool->file_name = file->name();
  pool->package = file->package();
  pool->pool = builder.Release();
  return ProtobufSchema(std::move(pool));
}

const std::string& ProtobufSchema::file_name() const { return pool_->file_name; }
const std::string& ProtobufSchema::package() const { return pool_->package; }

Result<std::string> ProtobufSchema::MessageName(
    const std::vector<int32_t>& indexes) const {
  KELT_ASSIGN_OR_RAISE(const gp::Descriptor* message,
                       protobuf::FindMessage(*this, indexes));
  return message->full_name();
}

namespace {

// Depth first through the nested messages: true with `path` the indexes of `name`.
bool PathOf(const gp::Descriptor* message, std::string_view name,
            std::vector<int32_t>* path) {
  if (message->full_name() == name) return true;
  for (int i = 0; i < message->nested_type_count(); ++i) {
    path->push_back(i);
    if (PathOf(message->nested_type(i), name, path)) return true;
    path->pop_back();
  }
  return false;
}

}  // namespace

Result<std::vector<int32_t>> ProtobufSchema::MessageIndexes(
    std::string_view full_name) const {
  const gp::FileDescriptor* file = pool_->file;
  if (full_name.empty()) {
    if (file->message_type_count() == 0) {
      return Status::Invalid("the schema (" + file->name() + ") has no message");
    }
    return std::vector<int32_t>{0};
  }
  std::vector<int32_t> path;
  for (int i = 0; i < file->message_type_count(); ++i) {
    path.assign(1, i);
    if (PathOf(file->message_type(i), full_name, &path)) return path;
  }
  return Status::Invalid("the schema (" + file->name() + ") has no message " +
                         std::string(full_name));
}

namespace protobuf {

Result<const gp::Descriptor*> FindMessage(const ProtobufSchema& schema,
                                          const std::vector<int32_t>& indexes) {
  const gp::FileDescriptor* file = schema.pool()->file;
  std::vector<int32_t> path = indexes.empty() ? std::vector<int32_t>{0} : indexes;
  const gp::Descriptor* message = nullptr;
  std::string where = file->name();
  for (size_t i = 0; i < path.size(); ++i) {
    int count =
        message == nullptr ? file->message_type_count() : message->nested_type_count();
    if (path[i] < 0 || path[i] >= count) {
      return Status::Invalid("message index " + std::to_string(path[i]) + " (position " +
                             std::to_string(i) + " of the indexes): " + where + " has " +
                             std::to_string(count) + " message types");
    }
    message =
        message == nullptr ? file->message_type(path[i]) : message->nested_type(path[i]);
    where = message->full_name();
  }
  return message;
}

}  // namespace protobuf
}  // namespace kelt
