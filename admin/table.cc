#include "admin/table.h"

#include <algorithm>
#include <cassert>

namespace paintlock::admin {

size_t DisplayWidth(std::string_view text) {
  size_t width = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++width;  // count lead bytes, not continuation bytes
  }
  return width;
}

namespace {

void PrintLine(std::ostream& out, std::string_view indent, const std::vector<std::string>& cells,
               const std::vector<size_t>& widths) {
  std::string line(indent);
  for (size_t i = 0; i < widths.size(); ++i) {
    const std::string cell = i < cells.size() && !cells[i].empty() ? cells[i] : "-";
    line += cell;
    if (i + 1 < widths.size()) line.append(widths[i] - DisplayWidth(cell) + 2, ' ');
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out << line << "\n";
}

}  // namespace

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void Table::AddRow(std::vector<std::string> cells) {
  assert(cells.size() <= headers_.size());
  rows_.push_back(std::move(cells));
}

void Table::Print(std::ostream& out, std::string_view indent) const {
  std::vector<size_t> widths;
  for (const auto& h : headers_) widths.push_back(DisplayWidth(h));
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].empty() ? size_t{1} : DisplayWidth(row[i]));
    }
  }
  PrintLine(out, indent, headers_, widths);
  for (const auto& row : rows_) PrintLine(out, indent, row, widths);
}

void PrintFields(std::ostream& out, const std::vector<std::pair<std::string, std::string>>& fields,
                 std::string_view indent) {
  size_t width = 0;
  for (const auto& [key, value] : fields) width = std::max(width, DisplayWidth(key));
  for (const auto& [key, value] : fields) {
    std::string line(indent);
    line += key;
    line.append(width - DisplayWidth(key) + 2, ' ');
    line += value.empty() ? "-" : value;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

}  // namespace paintlock::admin
