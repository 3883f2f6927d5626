// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/sink/schema_evolution.h"

#include <arrow/type.h>

#include <string>

#include "kelt/sink.h"

namespace kelt {

Status Sink::Evolve(const std::shared_ptr<arrow::Schema>& /*landing*/) {
  return Status::NotImplemented(name() +
                                ": cannot evolve its landing schema (no new columns)");
}

namespace internal {

Result<std::vector<int>> AddedColumns(const arrow::Schema& current,
                                      const arrow::Schema& next, std::string_view sink) {
  const std::string prefix = std::string(sink) + ": evolving the landing schema: ";
  for (const auto& field : current.fields()) {
    const auto found = next.GetAllFieldIndices(field->name());
    if (found.empty()) {
      return Status::Invalid(prefix + "the new schema has no column '" + field->name() +
                             "' (columns can only be added)");
    }
    const auto& type = next.field(found.front())->type();
    if (!type->Equals(*field->type())) {
      return Status::Invalid(prefix + "column '" + field->name() + "' is " +
                             field->type()->ToString() + ", the new schema makes it " +
                             type->ToString() + " (a type cannot change)");
    }
  }
  std::vector<int> added;
  for (int i = 0; i < next.num_fields(); ++i) {
    const auto& field = next.field(i);
    if (next.GetAllFieldIndices(field->name()).size() > 1) {
      return Status::Invalid(prefix + "the new schema has column '" + field->name() +
                             "' twice");
    }
    if (current.GetFieldIndex(field->name()) >= 0) continue;
    if (!field->nullable()) {
      return Status::Invalid(prefix + "new column '" + field->name() +
                             "' must be nullable (rows already landed read it as null)");
    }
    added.push_back(i);
  }
  return added;
}

}  // namespace internal
}  // namespace kelt
