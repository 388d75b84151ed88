// The explorer's HTTP server (cpp-httplib, kept out of this header): GET only, serves the
// embedded UI assets by exact path and forwards /api/... to ExplorerApi. Guards: request
// target and body size limits, a per-client rate limit, and access.h's rules: on a
// loopback bind the Host header must name the loopback (no DNS rebinding); on any other
// address every API request carries the access token. Every answer carries nosniff and a
// Content-Security-Policy that runs no inline script.
#pragma once
#include <memory>
#include <string>
#include <string_view>
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
  // http://HOST:PORT/, with ?token=... when the server has an access token.
  std::string url() const;
  // The access token API requests must carry: options.token, or for a non-loopback host
  // without one a fresh random token; "" on a loopback host.
  const std::string& token() const;

  // Answers the HTTP request(s) in `request` as if read from a connection from
  // 127.0.0.1 (httplib's parsing, the guards, the handlers; no socket), returning the
  // bytes written back. For the fuzzer; with no bind() the served port is unknown, so
  // only a Host without a port is local.
  std::string answer(std::string_view request);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace opscope::explorer
