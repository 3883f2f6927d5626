// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "table_printer.h"

#include <arrow/api.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

namespace kelt::cli {
namespace {

constexpr size_t kMaxCell = 40;

// Width in terminal columns, counting each UTF-8 code point as one.
size_t DisplayWidth(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string Cut(std::string s) {
  if (DisplayWidth(s) <= kMaxCell) return s;
  size_t cps = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && ++cps > kMaxCell - 1) break;
  }
  return s.substr(0, i) + "…";
}

std::string Cell(const arrow::Array& array, int64_t row) {
  if (array.IsNull(row)) return "null";
  auto scalar = array.GetScalar(row);
  if (!scalar.ok()) return "?";
  std::string s = (*scalar)->ToString();
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return Cut(std::move(s));
}

}  // namespace

void PrintTable(const arrow::RecordBatch& batch, std::ostream& out) {
  const int ncols = batch.num_columns();
  std::vector<std::vector<std::string>> cells(static_cast<size_t>(ncols));
  std::vector<size_t> width(static_cast<size_t>(ncols));
  for (int c = 0; c < ncols; ++c) {
    auto& col = cells[static_cast<size_t>(c)];
    col.push_back(batch.schema()->field(c)->name());
    for (int64_t r = 0; r < batch.num_rows(); ++r)
      col.push_back(Cell(*batch.column(c), r));
    for (const auto& s : col)
      width[static_cast<size_t>(c)] =
          std::max(width[static_cast<size_t>(c)], DisplayWidth(s));
  }
  auto rule = [&] {
    out << '+';
    for (int c = 0; c < ncols; ++c)
      out << std::string(width[static_cast<size_t>(c)] + 2, '-') << '+';
    out << '\n';
  };
  auto line = [&](size_t r) {
    out << '|';
    for (int c = 0; c < ncols; ++c) {
      const std::string& s = cells[static_cast<size_t>(c)][r];
      out << ' ' << s << std::string(width[static_cast<size_t>(c)] - DisplayWidth(s), ' ')
          << " |";
    }
    out << '\n';
  };
  rule();
  line(0);
  rule();
  for (int64_t r = 0; r < batch.num_rows(); ++r) line(static_cast<size_t>(r) + 1);
  if (batch.num_rows() > 0) rule();
  out << batch.num_rows() << (batch.num_rows() == 1 ? " row" : " rows") << '\n';
}

}  // namespace kelt::cli
