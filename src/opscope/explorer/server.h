// The explorer's HTTP server (cpp-httplib, kept out of this header): GET only, serves the
// embedded UI assets by exact path and forwards /api/... to ExplorerApi. Guards: request
// target and body size limits, a per-client rate limit, and a Host-header check on
// loopback binds so a web page cannot reach it through DNS rebinding.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "opscope/explorer/explore.h"
#include "opscope/explorer/profile.h"

namespace opscope::explorer {

class ExplorerServer {
 public:
  ExplorerServer(std::vector<ProfilePtr> profiles, ExploreOptions options);
  ~ExplorerServer();
  ExplorerServer(const ExplorerServer&) = delete;
  ExplorerServer& operator=(const ExplorerServer&) = delete;

  // Binds options.host:options.port (port 0: any free one; with next_free_port, the first
  // free one from port on). Returns the port; throws "[explore] port N is in use" or why not.
  int bind();
  void run();   // serves until stop(); call after bind()
  void stop();  // from any thread
  std::string url() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace opscope::explorer
