// Human-readable output of paintlockctl: aligned tables and "key  value"
// blocks. Cells are measured in UTF-8 characters, so titles with accents
// line up. Not thread-safe (one per output).
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace paintlock::admin {

// Width of `text` in a terminal, counting each UTF-8 character as one column.
size_t DisplayWidth(std::string_view text);

class Table {
 public:
  explicit Table(std::vector<std::string> headers);

  // A row has one cell per header (missing cells are blank, extra ones an
  // error caught in tests). An empty cell prints as "-".
  void AddRow(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }

  // Header and rows, columns padded to their widest cell and two spaces
  // apart, each line prefixed by `indent`; no trailing spaces.
  void Print(std::ostream& out, std::string_view indent = "") const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// "key   value" lines with the values aligned, each prefixed by `indent`.
void PrintFields(std::ostream& out, const std::vector<std::pair<std::string, std::string>>& fields,
                 std::string_view indent = "  ");

}  // namespace paintlock::admin
