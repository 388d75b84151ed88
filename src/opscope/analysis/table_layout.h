// key_averages' table layout: which columns show and how wide, so the default table fits
// a terminal (TableLayout in key_averages.h says what a user asks for).
#pragma once
#include <string>
#include <vector>

#include "opscope/analysis/key_averages.h"

namespace opscope::analysis {

struct ColumnChoice {
  std::vector<size_t> shown;          // indexes into the full header list, in order
  std::vector<std::string> heads;     // their headers (short ones when fitted)
  std::vector<size_t> width;          // their widths
  std::vector<bool> left;             // left-aligned (text) columns
  std::string note;                   // what was left out and why; "" when nothing
};

// `heads`: every column's full header, as the table builds them; `cells`: rows of the
// same length. Throws "[columns] ..." on an unknown key in layout.columns.
ColumnChoice choose_columns(const std::vector<std::string>& heads, const std::vector<std::vector<std::string>>& cells,
                            const TableLayout& layout);

}  // namespace opscope::analysis
