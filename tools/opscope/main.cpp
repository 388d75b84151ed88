// opscope: the command-line tool. Each subcommand lives in <name>_cmd.cpp and defines
// add_<name>_command(app), which adds the subcommand and its callback to the app;
// registering one is one line below (plus its declaration).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "opscope/core/error.h"

namespace opscope::cli {
void add_table_command(CLI::App& app);
void add_diff_command(CLI::App& app);
void add_query_command(CLI::App& app);
void add_profile_command(CLI::App& app);
void add_explore_command(CLI::App& app);
void add_cache_command(CLI::App& app);
void add_compile_command(CLI::App& app);
void add_advise_command(CLI::App& app);
void add_import_command(CLI::App& app);
void add_probe_command(CLI::App& app);
void add_analyze_command(CLI::App& app);
void add_kernel_command(CLI::App& app);
}  // namespace opscope::cli

int main(int argc, char** argv) {
  using namespace opscope::cli;
  CLI::App app{"opscope: where time goes in ops, on the framework, runtime and device layers"};
  app.require_subcommand(0, 1);  // none: print the help; an unknown word: named as unexpected
  add_table_command(app);
  add_diff_command(app);
  add_query_command(app);
  add_profile_command(app);
  add_explore_command(app);
  add_cache_command(app);
  add_compile_command(app);
  add_advise_command(app);
  add_import_command(app);
  add_probe_command(app);
  add_analyze_command(app);
  add_kernel_command(app);

  // Subcommands run in their callbacks during parse(); their errors are opscope::Error
  // ("[flag or file] what is wrong") and end the program with status 1.
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const opscope::Error& e) {
    std::fprintf(stderr, "opscope: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "opscope: internal error: %s\n", e.what());
    return 2;
  }
  if (app.get_subcommands().empty()) {
    std::fputs(app.help().c_str(), stderr);
    return 1;
  }
  return 0;
}
