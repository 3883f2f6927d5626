// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/sink/boundary_types.h"

#include <arrow/api.h>
#include <arrow/array/builder_base.h>
#include <arrow/util/decimal.h>

#include <string>
#include <utility>
#include <vector>

namespace kelt::internal {
namespace {

using arrow::ArrayData;
using arrow::DataType;

constexpr int32_t kMaxDecimal128Digits = 38;

// The child's name in the struct that replaces a union: the branch's field name, or
// "branch_<code>" for an unnamed branch.
std::string BranchName(const arrow::UnionType& type, int k) {
  const std::string& name = type.field(k)->name();
  return name.empty() ? "branch_" + std::to_string(type.type_codes()[k]) : name;
}

std::shared_ptr<DataType> Rewrite(const std::shared_ptr<DataType>& type,
                                  const BoundaryRules& rules);

// `fields` with their types rewritten, and whether any changed.
std::pair<arrow::FieldVector, bool> RewriteFields(const arrow::FieldVector& fields,
                                                  const BoundaryRules& rules) {
  arrow::FieldVector out;
  bool changed = false;
  out.reserve(fields.size());
  for (const auto& f : fields) {
    auto t = Rewrite(f->type(), rules);
    if (t != f->type()) {
      changed = true;
      out.push_back(f->WithType(t));
    } else {
      out.push_back(f);
    }
  }
  return {std::move(out), changed};
}

std::shared_ptr<DataType> Rewrite(const std::shared_ptr<DataType>& type,
                                  const BoundaryRules& rules) {
  switch (type->id()) {
    case arrow::Type::NA:
      return rules.null_as_utf8 ? arrow::utf8() : type;
    case arrow::Type::DECIMAL256: {
      if (!rules.narrow_decimal256) return type;
      const auto& d = static_cast<const arrow::Decimal256Type&>(*type);
      if (d.precision() > kMaxDecimal128Digits) return arrow::utf8();
      return arrow::decimal128(d.precision(), d.scale());
    }
    case arrow::Type::DENSE_UNION:
    case arrow::Type::SPARSE_UNION: {
      if (!rules.union_as_struct) {
        auto [fields, changed] = RewriteFields(type->fields(), rules);
        if (!changed) return type;
        const auto& u = static_cast<const arrow::UnionType&>(*type);
        return type->id() == arrow::Type::DENSE_UNION
                   ? arrow::dense_union(fields, u.type_codes())
                   : arrow::sparse_union(fields, u.type_codes());
      }
      const auto& u = static_cast<const arrow::UnionType&>(*type);
      arrow::FieldVector fields;
      for (int k = 0; k < u.num_fields(); ++k) {
        fields.push_back(arrow::field(BranchName(u, k),
                                      Rewrite(u.field(k)->type(), rules),
                                      /*nullable=*/true, u.field(k)->metadata()));
      }
      return arrow::struct_(std::move(fields));
    }
    case arrow::Type::STRUCT: {
      auto [fields, changed] = RewriteFields(type->fields(), rules);
      return changed ? arrow::struct_(std::move(fields)) : type;
    }
    case arrow::Type::LIST: {
      auto [fields, changed] = RewriteFields(type->fields(), rules);
      return changed ? arrow::list(fields[0]) : type;
    }
    case arrow::Type::LARGE_LIST: {
      auto [fields, changed] = RewriteFields(type->fields(), rules);
      return changed ? arrow::large_list(fields[0]) : type;
    }
    case arrow::Type::FIXED_SIZE_LIST: {
      auto [fields, changed] = RewriteFields(type->fields(), rules);
      const auto& l = static_cast<const arrow::FixedSizeListType&>(*type);
      return changed ? arrow::fixed_size_list(fields[0], l.list_size()) : type;
    }
    case arrow::Type::MAP: {
      const auto& m = static_cast<const arrow::MapType&>(*type);
      auto [fields, changed] = RewriteFields({m.key_field(), m.item_field()}, rules);
      if (!changed) return type;
      return std::make_shared<arrow::MapType>(fields[0], fields[1], m.keys_sorted());
    }
    default:
      return type;
  }
}

Result<std::shared_ptr<ArrayData>> Convert(const std::shared_ptr<ArrayData>& data,
                                           const std::shared_ptr<DataType>& to,
                                           const BoundaryRules& rules,
                                           const std::string& column);

// An ArrayData like `data` (same buffers, offset, nulls) of type `to` whose children
// are rewritten one by one.
Result<std::shared_ptr<ArrayData>> ConvertChildren(const std::shared_ptr<ArrayData>& data,
                                                   const std::shared_ptr<DataType>& to,
                                                   const BoundaryRules& rules,
                                                   const std::string& column) {
  auto out = data->Copy();
  out->type = to;
  // A map's child is its entries struct, whose type is not among the map's fields.
  const bool map = to->id() == arrow::Type::MAP;
  for (size_t i = 0; i < data->child_data.size(); ++i) {
    std::shared_ptr<DataType> child_type =
        map ? static_cast<const arrow::MapType&>(*to).value_type()
            : to->field(static_cast<int>(i))->type();
    KELT_ASSIGN_OR_RAISE(out->child_data[i],
                         Convert(data->child_data[i], child_type, rules, column));
  }
  return out;
}

Result<std::shared_ptr<ArrayData>> UnionToStruct(const std::shared_ptr<ArrayData>& data,
                                                 const std::shared_ptr<DataType>& to,
                                                 const BoundaryRules& rules,
                                                 const std::string& column) {
  const auto& u = static_cast<const arrow::UnionType&>(*data->type);
  const bool dense = u.id() == arrow::Type::DENSE_UNION;
  const int8_t* type_ids = data->GetValues<int8_t>(1);
  const int32_t* offsets = dense ? data->GetValues<int32_t>(2) : nullptr;
  const int64_t n = data->length;
  arrow::ArrayVector children;
  for (int k = 0; k < u.num_fields(); ++k) {
    const int8_t code = u.type_codes()[k];
    const auto& child_type = to->field(k)->type();
    KELT_ASSIGN_OR_RAISE(auto child,
                         Convert(data->child_data[k], child_type, rules, column));
    arrow::ArraySpan span(*child);
    std::unique_ptr<arrow::ArrayBuilder> builder;
    auto st = arrow::MakeBuilder(arrow::default_memory_pool(), child_type, &builder);
    if (st.ok()) st = builder->Reserve(n);
    // Runs of rows in the branch are appended as one slice (sparse children line up
    // with the union's rows; dense ones do within a run of consecutive offsets).
    int64_t row = 0;
    while (st.ok() && row < n) {
      if (type_ids[row] != code) {
        int64_t end = row + 1;
        while (end < n && type_ids[end] != code) ++end;
        st = builder->AppendNulls(end - row);
        row = end;
        continue;
      }
      int64_t first = dense ? offsets[row] : data->offset + row;
      int64_t end = row + 1;
      while (end < n && type_ids[end] == code &&
             (!dense || offsets[end] == offsets[end - 1] + 1)) {
        ++end;
      }
      // The span starts at the child's own offset; a sparse child is indexed from the
      // union's offset as well.
      st = builder->AppendArraySlice(span, first, end - row);
      row = end;
    }
    std::shared_ptr<arrow::Array> built;
    if (st.ok()) st = builder->Finish(&built);
    if (!st.ok()) {
      return Status::Internal("column '" + column + "': cannot rewrite union branch '" +
                              to->field(k)->name() +
                              "' as a struct field: " + st.ToString());
    }
    children.push_back(std::move(built));
  }
  auto result = arrow::StructArray::Make(children, to->fields());
  if (!result.ok()) {
    return Status::Internal("column '" + column + "': cannot build the union's struct: " +
                            result.status().ToString());
  }
  return (*result)->data();
}

// The decimal's text without an exponent ("0.0000000000", not Arrow's "0E-10").
std::string PlainDecimalText(const arrow::Decimal256& v, int32_t scale) {
  std::string digits = v.ToIntegerString();
  const bool negative = !digits.empty() && digits[0] == '-';
  if (negative) digits.erase(0, 1);
  if (scale <= 0) {
    digits.append(static_cast<size_t>(-scale), '0');
  } else {
    if (digits.size() <= static_cast<size_t>(scale)) {
      digits.insert(0, static_cast<size_t>(scale) + 1 - digits.size(), '0');
    }
    digits.insert(digits.size() - static_cast<size_t>(scale), 1, '.');
  }
  return negative ? "-" + digits : digits;
}

Result<std::shared_ptr<ArrayData>> NarrowDecimal(const std::shared_ptr<ArrayData>& data,
                                                 const std::shared_ptr<DataType>& to,
                                                 const std::string& column) {
  arrow::Decimal256Array values(data);
  const int32_t scale = static_cast<const arrow::Decimal256Type&>(*data->type).scale();
  std::unique_ptr<arrow::ArrayBuilder> builder;
  auto st = arrow::MakeBuilder(arrow::default_memory_pool(), to, &builder);
  if (st.ok()) st = builder->Reserve(values.length());
  for (int64_t i = 0; st.ok() && i < values.length(); ++i) {
    if (values.IsNull(i)) {
      st = builder->AppendNull();
      continue;
    }
    arrow::Decimal256 v(values.GetValue(i));
    if (to->id() == arrow::Type::STRING) {
      st =
          static_cast<arrow::StringBuilder&>(*builder).Append(PlainDecimalText(v, scale));
      continue;
    }
    // Little-endian words: the low two hold the value when it fits 128 bits, which a
    // value of at most 38 digits does.
    const auto& words = v.little_endian_array();
    arrow::Decimal128 narrow(static_cast<int64_t>(words[1]), words[0]);
    if (arrow::Decimal256(narrow) != v) {
      st = arrow::Status::Invalid("value ", v.ToString(scale), " does not fit ",
                                  to->ToString());
      break;
    }
    st = static_cast<arrow::Decimal128Builder&>(*builder).Append(narrow);
  }
  std::shared_ptr<arrow::Array> built;
  if (st.ok()) st = builder->Finish(&built);
  if (!st.ok()) {
    return Status::Invalid("column '" + column + "': cannot rewrite " +
                           data->type->ToString() + " as " + to->ToString() + ": " +
                           st.ToString());
  }
  return built->data();
}

Result<std::shared_ptr<ArrayData>> Convert(const std::shared_ptr<ArrayData>& data,
                                           const std::shared_ptr<DataType>& to,
                                           const BoundaryRules& rules,
                                           const std::string& column) {
  if (data->type == to || data->type->Equals(*to)) return data;
  switch (data->type->id()) {
    case arrow::Type::NA: {
      auto nulls = arrow::MakeArrayOfNull(to, data->length);
      if (!nulls.ok()) {
        return Status::Internal("column '" + column + "': " + nulls.status().ToString());
      }
      return (*nulls)->data();
    }
    case arrow::Type::DECIMAL256:
      return NarrowDecimal(data, to, column);
    case arrow::Type::DENSE_UNION:
    case arrow::Type::SPARSE_UNION:
      if (to->id() == arrow::Type::STRUCT) return UnionToStruct(data, to, rules, column);
      return ConvertChildren(data, to, rules, column);
    default:
      return ConvertChildren(data, to, rules, column);
  }
}

}  // namespace

std::shared_ptr<DataType> BoundaryType(const std::shared_ptr<DataType>& type,
                                       const BoundaryRules& rules) {
  return Rewrite(type, rules);
}

std::shared_ptr<arrow::Schema> BoundarySchema(
    const std::shared_ptr<arrow::Schema>& schema, const BoundaryRules& rules) {
  auto [fields, changed] = RewriteFields(schema->fields(), rules);
  if (!changed) return schema;
  return arrow::schema(std::move(fields), schema->metadata());
}

Result<std::shared_ptr<arrow::Array>> ToBoundary(
    const std::shared_ptr<arrow::Array>& array, const BoundaryRules& rules,
    const std::string& column) {
  auto to = Rewrite(array->type(), rules);
  if (to == array->type()) return array;
  KELT_ASSIGN_OR_RAISE(auto data, Convert(array->data(), to, rules, column));
  return arrow::MakeArray(data);
}

bool IsUnionNull(const arrow::Array& a, int64_t row) {
  const auto& u = static_cast<const arrow::UnionArray&>(a);
  const int child_id = u.child_id(row);
  const auto& child = *u.field(child_id);  // field() applies a sparse union's offset
  if (a.type_id() == arrow::Type::DENSE_UNION) {
    return child.IsNull(static_cast<const arrow::DenseUnionArray&>(a).value_offset(row));
  }
  return child.IsNull(row);
}

}  // namespace kelt::internal
