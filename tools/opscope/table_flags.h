// --columns and --wide, for every command that prints a key_averages table: by default the
// table fits a 160-column terminal (TableLayout in key_averages.h says how).
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "check_flag.h"
#include "opscope/analysis/key_averages.h"

namespace opscope::cli {

constexpr size_t kTableWidth = 160;

struct TableFlags {
  std::vector<std::string> columns;
  bool wide = false;

  void add_to(CLI::App* cmd) {
    cmd->add_option("--columns", columns, "Table columns, comma-separated: " + analysis::table_column_names())
        ->delimiter(',');
    cmd->add_flag("--wide", wide, "Every table column, torch's headers (default: fit 160 characters)");
  }
  // Checks the keys (as [--columns]) and gives the layout.
  analysis::TableLayout layout() const {
    check_flag("--columns", [&] { analysis::check_table_columns(columns); });
    analysis::TableLayout l;
    l.columns = columns;
    l.width = wide ? 0 : kTableWidth;
    return l;
  }
};

}  // namespace opscope::cli
