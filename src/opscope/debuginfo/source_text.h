// Source text for listings: the lines of a file named by a line table. A compiled
// kernel's line table names the folder it was built in (a temp folder renamed into the
// cache), so a file that is not where the table says is looked for beside the module
// (the artifact's kernels.cpp beside its kernels.so).
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace opscope::debuginfo {

// The file's path as found: `file` (normalized) if it exists; else, when relative, that
// path from `module_path`'s folder (the build folder beside libopscope.so); else the file
// of that name in `module_path`'s folder; "" when none exists.
std::string find_source(const std::string& file, const std::string& module_path);

// The file's lines (cached for the process); null when it cannot be read.
std::shared_ptr<const std::vector<std::string>> source_lines(const std::string& path);

// Line `line` (from 1) of `path`, or "" when there is none.
std::string source_line(const std::string& path, int line);

}  // namespace opscope::debuginfo
