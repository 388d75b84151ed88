// `opscope explore DIR...`: the browser explorer over saved profiles.
#include <CLI/CLI.hpp>

#include "opscope/explorer/explore.h"

namespace opscope::cli {

void add_explore_command(CLI::App& app) {
  auto dirs = std::make_shared<std::vector<std::string>>();
  auto opt = std::make_shared<explorer::ExploreOptions>();
  CLI::App* sub = app.add_subcommand("explore", "serve the explorer UI over saved profiles");
  sub->add_option("dirs", *dirs, "profile folders, or torch.profiler traces (.json, .json.gz)")->required();
  CLI::Option* port = sub->add_option("--port", opt->port, "port (0: any free port; default: 8642 or the next free one)")
                          ->capture_default_str()
                          ->check(CLI::Range(0, 65535));
  sub->add_option("--host", opt->host,
                  "address to bind; another than 127.0.0.1, localhost or ::1 serves the API only to requests "
                  "carrying the access token printed in the URL")
      ->capture_default_str();
  sub->callback([dirs, opt, port] {
    // An asked-for port that is taken is an error; the default one moves on to a free one.
    opt->next_free_port = port->count() == 0;
    int rc = explorer::explore_main(*dirs, *opt);
    if (rc) throw CLI::RuntimeError(rc);
  });
}

}  // namespace opscope::cli
