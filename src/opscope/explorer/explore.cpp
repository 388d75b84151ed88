#include "opscope/explorer/explore.h"

#include <chrono>
#include <iostream>

#include <fmt/format.h>

#include "opscope/explorer/server.h"

namespace opscope::explorer {

int explore_main(const std::vector<std::string>& dirs, const ExploreOptions& options) {
  std::ostream& log = options.log ? *options.log : std::cout;
  std::vector<ProfilePtr> profiles;
  for (const auto& dir : dirs) {
    auto start = std::chrono::steady_clock::now();
    ProfilePtr p = open_profile(dir);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (p->ok())
      log << fmt::format("  {}: {} events, opened in {:.2f} s\n", dir, p->trace().events.size(), s);
    else
      log << fmt::format("  {}: cannot load: {}\n", dir, p->error());
    profiles.push_back(std::move(p));
  }
  try {
    ExplorerServer server(std::move(profiles), options);
    server.bind();
    if (options.host != "127.0.0.1" && options.host != "localhost" && options.host != "::1")
      log << "opscope explore: listening on " << options.host
          << ": anyone who can reach this address can read these profiles\n";
    log << "opscope explore: " << server.url() << "  (Ctrl-C to stop)" << std::endl;
    server.run();
  } catch (const std::exception& e) {
    log << e.what() << std::endl;
    return 1;
  }
  return 0;
}

}  // namespace opscope::explorer
