// Import speed: a generated torch.profiler trace of N events (default 1M, ~300 MB of
// JSON; kineto_trace_gen.h) imported as `opscope import` does (parse + links, then the
// profile folder written), beside opscope's own load_profile of the same events from
// that folder, in the same run. Each phase runs in a child process, so its peak RSS
// (ru_maxrss of the child) is its own.
//   import_bench [events] [folder]        (folder: where the trace and profile go)
//   import_bench --write PATH [events]    (only write the trace, e.g. for `opscope import`)
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "bench_child.h"
#include "kineto_trace_gen.h"
#include "opscope/importer/import.h"
#include "opscope/importer/kineto_reader.h"
#include "opscope/profiler/store.h"

using namespace opscope;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--write") {
    int64_t n = argc >= 4 ? std::atoll(argv[3]) : 1'000'000;
    int64_t wrote = bench::write_kineto_trace(argv[2], n);
    fmt::print("wrote {} events to {} ({:.1f} MB)\n", wrote, argv[2], double(fs::file_size(argv[2])) / 1e6);
    return 0;
  }
  int64_t n = argc >= 2 ? std::atoll(argv[1]) : 1'000'000;
  fs::path dir = argc >= 3 ? fs::path(argv[2]) : fs::temp_directory_path() / "opscope_import_bench";
  fs::create_directories(dir);
  std::string trace = (dir / "bench.pt.trace.json").string();
  std::string out = (dir / "profile").string();
  int64_t wrote = bench::write_kineto_trace(trace, n);
  double mb = double(fs::file_size(trace)) / 1e6;
  fmt::print("trace: {} events, {:.1f} MB of JSON ({})\n", wrote, mb, trace);

  // Warm the page cache so every phase reads the file from memory alike.
  bench::Phase cat = bench::in_child([&] {
    FILE* f = std::fopen(trace.c_str(), "rb");
    static char buf[1 << 20];
    while (std::fread(buf, 1, sizeof buf, f) > 0) {
    }
    std::fclose(f);
  });
  bench::Phase parse = bench::in_child([&] { importer::read_kineto(trace); });
  bench::Phase imported = bench::in_child([&] { importer::import_traces({trace}); });
  bench::Phase whole = bench::in_child([&] { prof::export_profile(importer::import_traces({trace}).trace, out); });
  bench::Phase load = bench::in_child([&] { prof::load_profile(out); });
  size_t events = prof::load_profile(out).events.size();

  auto line = [](const char* what, const bench::Phase& p) {
    fmt::print("{:<36} {:7.3f} s wall {:7.3f} s CPU {:7.1f} MB peak RSS\n", what, p.wall_s, p.cpu_s, p.max_rss_mb);
  };
  line("read the file (page cache)", cat);
  line("parse (stream + simdjson On-Demand)", parse);
  line("import (parse + links -> Trace)", imported);
  line("opscope import (+ export_profile)", whole);
  line("load_profile of the same events", load);
  fmt::print("{} events in the profile; parse {:.2f} GB/s of JSON (CPU)\n", events, mb / 1e3 / parse.cpu_s);
  fmt::print("ratios (CPU): import / load_profile {:.2f}x, opscope import / load_profile {:.2f}x; "
             "peak RSS: import / load_profile {:.2f}x, import / file size {:.2f}x\n",
             imported.cpu_s / load.cpu_s, whole.cpu_s / load.cpu_s, imported.max_rss_mb / load.max_rss_mb,
             imported.max_rss_mb / mb);
  fs::remove_all(dir);
  return 0;
}
