// opscope-explore: the explorer on saved profiles and/or synthetic ones, for trying the UI
// and for its end-to-end tests (`opscope explore` is the same server on saved profiles).
//   opscope-explore DIR... [--port N] [--host ADDR] [--synthetic SPEC]...
//   SPEC: rmsnorm:naive | rmsnorm:builtin | rmsnorm:compiled [@RxH] | events:N
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <charconv>
#include <iostream>

#include "opscope/explorer/explore.h"
#include "opscope/explorer/server.h"
#include "opscope/explorer/synthetic.h"

using namespace opscope::explorer;

namespace {

int64_t to_int(std::string_view s, const std::string& spec) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v <= 0)
    throw CLI::ValidationError("--synthetic", "bad number in '" + spec + "'");
  return v;
}

ProfilePtr synthetic_profile(const std::string& spec) {
  if (spec.rfind("events:", 0) == 0) {
    SyntheticSpec s;
    s.events = to_int(spec.substr(7), spec);
    return std::make_shared<Profile>(fmt::format("synthetic {} events", s.events), spec, synthetic_trace(s));
  }
  if (spec.rfind("rmsnorm:", 0) == 0) {
    std::string impl = spec.substr(8);
    int64_t rows = 256, hidden = 4096;
    if (size_t at = impl.find('@'); at != std::string::npos) {
      std::string shape = impl.substr(at + 1);
      impl = impl.substr(0, at);
      size_t x = shape.find('x');
      if (x == std::string::npos) throw CLI::ValidationError("--synthetic", "shape must be RxH in '" + spec + "'");
      rows = to_int(shape.substr(0, x), spec), hidden = to_int(shape.substr(x + 1), spec);
    }
    return std::make_shared<Profile>("rmsnorm " + impl, spec, synthetic_rmsnorm(impl, rows, hidden));
  }
  throw CLI::ValidationError("--synthetic", "unknown spec '" + spec + "' (rmsnorm:IMPL[@RxH] or events:N)");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"opscope explorer: a browser UI over saved profiles"};
  std::vector<std::string> dirs, synthetic;
  ExploreOptions opts;
  app.add_option("dirs", dirs, "saved profile folders");
  app.add_option("--synthetic", synthetic, "add a synthetic profile: rmsnorm:naive|builtin|compiled[@RxH], events:N");
  app.add_option("--port", opts.port, "port (0: any free one)")->check(CLI::Range(0, 65535));
  app.add_option("--host", opts.host, "address to listen on (default 127.0.0.1: this machine only)");
  app.add_option("--rate", opts.requests_per_second, "requests per second per client (0: no limit)");
  CLI11_PARSE(app, argc, argv);
  if (dirs.empty() && synthetic.empty()) {
    std::cerr << "opscope-explore: name at least one profile folder or --synthetic spec\n";
    return 2;
  }
  try {
    std::vector<ProfilePtr> profiles;
    for (const auto& d : dirs) {
      profiles.push_back(open_profile(d));
      if (!profiles.back()->ok()) std::cout << "  " << d << ": cannot load: " << profiles.back()->error() << "\n";
    }
    for (const auto& s : synthetic) profiles.push_back(synthetic_profile(s));
    ExplorerServer server(std::move(profiles), opts);
    server.bind();
    std::cout << "opscope explore: " << server.url() << "  (Ctrl-C to stop)" << std::endl;
    server.run();
  } catch (const CLI::Error& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
