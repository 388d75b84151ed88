// opscope cache ls | show HASH | clear [--dir DIR]
// the compiler's artifact cache (one folder per compiled graph) from the command line.
// The folder is --dir, else $OPSCOPE_CACHE_DIR, else the user's cache directory.
#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "opscope/compiler/cache.h"
#include "opscope/compiler/cache_cli.h"
#include "opscope/core/error.h"
#include "print_text.h"

namespace opscope::cli {
namespace {

// A --dir the user typed must be a folder: a typo should not read as an empty cache.
// (The default folder may not exist yet; that is an empty cache.)
std::string checked_dir(const std::string& dir) {
  if (dir.empty()) return dir;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) fail("--dir", "no such folder '{}'", dir);
  if (!std::filesystem::is_directory(dir, ec)) fail("--dir", "'{}' is not a folder", dir);
  return dir;
}

}  // namespace

void add_cache_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto hash = std::make_shared<std::string>();
  CLI::App* cache = app.add_subcommand("cache", "list, show or clear the compiler's artifact cache");
  cache->require_subcommand(1);
  const char* dir_help = "cache folder (default: $OPSCOPE_CACHE_DIR, else the user's cache directory)";

  CLI::App* ls = cache->add_subcommand("ls", "one line per artifact: hash, function, kernels, size, status");
  ls->add_option("--dir", *dir, dir_help);
  ls->callback([dir] { print_text(compiler::cache_ls(checked_dir(*dir))); });

  CLI::App* show = cache->add_subcommand("show", "an artifact's files, kernels, graph and manifest");
  show->add_option("hash", *hash, "the artifact's hash, or a unique prefix of it")->required();
  show->add_option("--dir", *dir, dir_help);
  show->callback([dir, hash] {
    for (char c : *hash)
      if (!std::isxdigit(static_cast<unsigned char>(c)))
        fail("cache", "'{}' is not an artifact hash (hex digits, as `opscope cache ls` prints them)", *hash);
    print_text(compiler::cache_show(*hash, checked_dir(*dir)));
  });

  CLI::App* clear = cache->add_subcommand("clear", "remove every artifact (and failed builds, locks)");
  clear->add_option("--dir", *dir, dir_help);
  clear->callback([dir] { print_text(compiler::cache_clear(checked_dir(*dir))); });
}

}  // namespace opscope::cli
