// opscope-synth: writes a synthetic profile as a saved profile folder (trace.json +
// profile.db), for the explorer's scale test and demos.
//   opscope-synth --events 1000000 --out /tmp/big
//   opscope-synth --rmsnorm naive --shape 4x4096 --out /tmp/rms-naive
#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>

#include "opscope/explorer/synthetic.h"
#include "opscope/profiler/store.h"

int main(int argc, char** argv) {
  CLI::App app{"write a synthetic opscope profile"};
  opscope::explorer::SyntheticSpec spec;
  std::string out, rmsnorm, shape = "256x4096";
  app.add_option("--out", out, "profile folder to write")->required();
  app.add_option("--events", spec.events, "about this many events")->check(CLI::Range(int64_t(0), int64_t(1) << 32));
  app.add_option("--threads", spec.threads, "host threads")->check(CLI::Range(1, 64));
  app.add_option("--cores", spec.cores, "device cores")->check(CLI::Range(1, 256));
  app.add_option("--seed", spec.seed, "random seed");
  app.add_option("--rmsnorm", rmsnorm, "the RMSNorm case study instead: naive|builtin|compiled")
      ->check(CLI::IsMember({"naive", "builtin", "compiled"}));
  app.add_option("--shape", shape, "RMSNorm input shape RxH");
  CLI11_PARSE(app, argc, argv);
  try {
    auto start = std::chrono::steady_clock::now();
    opscope::prof::Trace trace;
    if (!rmsnorm.empty()) {
      size_t x = shape.find('x');
      if (x == std::string::npos) throw std::invalid_argument("--shape must be RxH, got " + shape);
      trace = opscope::explorer::synthetic_rmsnorm(rmsnorm, std::stoll(shape.substr(0, x)),
                                                   std::stoll(shape.substr(x + 1)), 3, spec.cores);
    } else {
      trace = opscope::explorer::synthetic_trace(spec);
    }
    opscope::prof::export_profile(trace, out);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "wrote " << trace.events.size() << " events to " << out << " in " << s << " s\n";
  } catch (const std::exception& e) {
    std::cerr << "opscope-synth: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
