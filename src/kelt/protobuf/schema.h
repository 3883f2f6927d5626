// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The descriptor pool behind a ProtobufSchema (internal to protobuf/).
#pragma once

#include <google/protobuf/descriptor.h>

#include <memory>
#include <string>
#include <vector>

#include "kelt/protobuf.h"

namespace kelt {

struct ProtobufSchema::Pool {
  std::unique_ptr<google::protobuf::DescriptorPool> pool;
  const google::protobuf::FileDescriptor* file = nullptr;
  std::string file_name;
  std::string package;
};

namespace protobuf {

/// The message the Confluent message indexes select ({} = [0]); kInvalid naming the
/// index that is out of range.
Result<const google::protobuf::Descriptor*> FindMessage(
    const ProtobufSchema& schema, const std::vector<int32_t>& indexes);

}  // namespace protobuf
}  // namespace kelt
