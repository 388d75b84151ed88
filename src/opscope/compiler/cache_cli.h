// `opscope cache ls|show|clear`: the artifact cache seen from the command line. Each
// returns the text to print (the CLI wires them to subcommands).
#pragma once
#include <string>

namespace opscope::compiler {

// One line per artifact: hash, function, kernels, size, created, and whether it is whole.
std::string cache_ls(const std::string& root = "");
// An artifact's manifest and files; `hash` may be a unique prefix. Throws
// "[cache] ..." when no (or more than one) artifact matches.
std::string cache_show(const std::string& hash, const std::string& root = "");
// Removes every artifact, failed build and lock; says how many artifacts it removed.
std::string cache_clear(const std::string& root = "");

}  // namespace opscope::compiler
