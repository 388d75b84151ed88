// `opscope explore DIR...`: load the saved profiles and serve the explorer (the UI and
// the JSON API of api.h) on a local HTTP server until stopped.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace opscope::explorer {

struct ExploreOptions {
  std::string host = "127.0.0.1";  // loopback only unless the user opts in (--host)
  std::string token;               // required on /api/ requests when set; another host gets a random one
  int port = 8642;                 // 0: any free port
  bool next_free_port = false;     // port taken: try the next ones (the CLI's default port)
  double requests_per_second = 100;  // per client; <= 0 disables the limit
  double burst = 400;
  size_t max_body_bytes = 1024;    // the API is GET only
  size_t max_target_bytes = 4096;  // path + query
  std::ostream* log = nullptr;     // where the URL and load errors go (nullptr: stdout)
};

// Loads each folder (a failed one is listed with its error and served as such), prints the
// URL and serves until the process is stopped. Returns 1, having said why, when no folder
// loads or the address cannot be bound.
int explore_main(const std::vector<std::string>& dirs, const ExploreOptions& options);

}  // namespace opscope::explorer
