#include "opscope/explorer/explore.h"

#include <chrono>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opscope/explorer/server.h"

namespace opscope::explorer {

int explore_main(const std::vector<std::string>& dirs, const ExploreOptions& options) {
  std::ostream& log = options.log ? *options.log : std::cout;
  std::vector<ProfilePtr> profiles;
  std::vector<std::string> failed;
  std::vector<std::string> paths;  // a folder of profiles opens each of them
  for (const auto& dir : dirs) {
    std::vector<std::string> inside = profiles_in(dir);
    if (inside.size() > 1 || inside.front() != dir)
      log << fmt::format("  {}: {} profile{} in the folder\n", dir, inside.size(), inside.size() == 1 ? "" : "s");
    paths.insert(paths.end(), inside.begin(), inside.end());
  }
  for (const auto& dir : paths) {
    auto start = std::chrono::steady_clock::now();
    ProfilePtr p = open_profile(dir);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (p->ok()) {
      log << fmt::format("  {}: {} events, opened in {:.2f} s\n", dir, p->trace().events.size(), s);
    } else {
      log << fmt::format("  {}: cannot load: {}\n", dir, p->error());
      failed.push_back(dir);
    }
    profiles.push_back(std::move(p));
  }
  // An explorer with nothing to show would look like a working one with empty profiles.
  if (failed.size() == profiles.size()) {
    log << fmt::format("opscope explore: no profile could be loaded ({} folder{} above)", failed.size(),
                       failed.size() == 1 ? "" : "s")
        << std::endl;
    return 1;
  }
  if (!failed.empty())
    log << fmt::format("opscope explore: {} of {} profiles loaded; not loaded: {}\n", paths.size() - failed.size(),
                       paths.size(), fmt::join(failed, ", "));
  try {
    ExplorerServer server(std::move(profiles), options);
    int port = server.bind();
    if (port != options.port && options.port != 0)
      log << fmt::format("opscope explore: port {} is in use, serving on {}\n", options.port, port);
    if (!server.token().empty())
      log << "opscope explore: listening on " << options.host
          << ": API requests need the access token in the URL below (keep it private)\n";
    log << "opscope explore: " << server.url() << "  (Ctrl-C to stop)" << std::endl;
    server.run();
  } catch (const std::exception& e) {
    log << e.what() << std::endl;
    return 1;
  }
  return 0;
}

}  // namespace opscope::explorer
