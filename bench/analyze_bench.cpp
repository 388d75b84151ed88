// The trace analyses at scale (issue #27): `opscope analyze DIR` on a folder of R ranks
// of N events each (default 8 × 100k; kineto_trace_gen.h, each step ending in an NCCL
// all-reduce, the last rank a straggler). Its budget: ≤ 5 s, and peak memory ≤ 2× the
// largest rank file, since the ranks are streamed one file at a time. In the same run,
// as yardsticks: reading the files, importing one rank, and importing all ranks merged
// (all held at once) before analysing them. Each phase runs in a child process
// (bench_child.h), so its peak RSS is its own; "over baseline" subtracts the RSS of the
// phase that only reads the files (the program itself).
//   analyze_bench [ranks] [events per rank] [folder]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_child.h"
#include "kineto_trace_gen.h"
#include "opscope/analysis/analyze.h"
#include "opscope/importer/analyze_traces.h"
#include "opscope/importer/import.h"

using namespace opscope;
namespace fs = std::filesystem;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int ranks = argc >= 2 ? std::atoi(argv[1]) : 8;
  const int64_t n = argc >= 3 ? std::atoll(argv[2]) : 100'000;
  fs::path dir = argc >= 4 ? fs::path(argv[3]) : fs::temp_directory_path() / "opscope_analyze_bench";
  if (ranks < 1 || n < 100) {
    std::fprintf(stderr, "[analyze_bench] needs at least 1 rank and 100 events (got %d, %lld)\n", ranks, (long long)n);
    return 2;
  }
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<std::string> files;
  double largest_mb = 0, all_mb = 0;
  for (int r = 0; r < ranks; ++r) {
    std::string f = (dir / fmt::format("rank{}.pt.trace.json", r)).string();
    bench::write_kineto_trace(f, n, r, ranks);
    double mb = double(fs::file_size(f)) / 1e6;
    largest_mb = std::max(largest_mb, mb);
    all_mb += mb;
    files.push_back(f);
  }
  fmt::print("{} ranks × {} events: {:.1f} MB of JSON, the largest rank file {:.1f} MB ({})\n", ranks, n, all_mb,
             largest_mb, dir.string());

  // Warm the page cache so every phase reads the files from memory alike; its RSS is the
  // program's own (the baseline).
  bench::Phase cat = bench::in_child([&] {
    static char buf[1 << 20];
    for (const std::string& f : files) {
      FILE* in = std::fopen(f.c_str(), "rb");
      while (std::fread(buf, 1, sizeof buf, in) > 0) {
      }
      std::fclose(in);
    }
  });
  bench::Phase one = bench::in_child([&] { importer::import_traces({files.back()}); });
  // The analyses alone on one imported rank: their share of the time.
  double analyses_s = 0;
  bench::in_child([&] {
    prof::Trace t = importer::import_traces({files.back()}).trace;
    auto t0 = std::chrono::steady_clock::now();
    analysis::AnalyzeOptions o;
    o.per_step = true;
    analysis::analyze(t, o);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::FILE* out = std::fopen((dir / "analyses_s").string().c_str(), "w");
    std::fprintf(out, "%.6f\n", s);
    std::fclose(out);
  });
  if (std::FILE* in = std::fopen((dir / "analyses_s").string().c_str(), "r")) {
    if (std::fscanf(in, "%lf", &analyses_s) != 1) analyses_s = 0;
    std::fclose(in);
  }
  fs::remove(dir / "analyses_s");

  // `opscope analyze DIR` (with --per-step), three times, alternating with the merged way.
  std::vector<bench::Phase> streamed, merged;
  analysis::AnalyzeOptions o;
  o.per_step = true;
  for (int rep = 0; rep < 3; ++rep) {
    streamed.push_back(bench::in_child([&] {
      importer::return_large_blocks_when_freed();  // as opscope analyze does
      analysis::TraceAnalysis a = importer::analyze_path(dir.string(), o);
      if (int(a.ranks.size()) != ranks) throw std::runtime_error("ranks missing");
    }));
    merged.push_back(bench::in_child([&] {
      analysis::TraceAnalysis a = analysis::analyze(importer::import_traces({dir.string()}).trace, o);
      if (int(a.ranks.size()) != ranks) throw std::runtime_error("ranks missing");
    }));
  }
  auto med = [](const std::vector<bench::Phase>& v, double bench::Phase::*m) {
    std::vector<double> x;
    for (const auto& p : v) x.push_back(p.*m);
    return median(x);
  };
  auto line = [&](const char* what, double wall, double cpu, double rss) {
    fmt::print("{:<44} {:7.3f} s wall {:7.3f} s CPU {:7.1f} MB peak RSS ({:6.1f} MB over baseline)\n", what, wall, cpu,
               rss, rss - cat.max_rss_mb);
  };
  line("read the files (page cache; baseline)", cat.wall_s, cat.cpu_s, cat.max_rss_mb);
  line("import the largest rank", one.wall_s, one.cpu_s, one.max_rss_mb);
  line("analyze DIR, ranks streamed (median of 3)", med(streamed, &bench::Phase::wall_s),
       med(streamed, &bench::Phase::cpu_s), med(streamed, &bench::Phase::max_rss_mb));
  line("import all ranks merged + analyze (median 3)", med(merged, &bench::Phase::wall_s),
       med(merged, &bench::Phase::cpu_s), med(merged, &bench::Phase::max_rss_mb));
  const double wall = med(streamed, &bench::Phase::wall_s);
  const double over = med(streamed, &bench::Phase::max_rss_mb) - cat.max_rss_mb;
  fmt::print("the analyses alone on one rank: {:.3f} s ({:.0f}% of importing it)\n", analyses_s,
             100 * analyses_s / one.cpu_s);
  fmt::print("analyze DIR: {:.2f} s wall against a 5 s budget ({}); memory over baseline {:.1f} MB = {:.2f}x the "
             "largest rank file (budget 2x: {})\n",
             wall, wall <= 5 ? "within" : "OVER", over, over / largest_mb, over <= 2 * largest_mb ? "within" : "OVER");
  fmt::print("ratios: streamed / merged: CPU {:.2f}x, memory over baseline {:.2f}x\n",
             med(streamed, &bench::Phase::cpu_s) / med(merged, &bench::Phase::cpu_s),
             over / (med(merged, &bench::Phase::max_rss_mb) - cat.max_rss_mb));
  if (argc < 4) fs::remove_all(dir);
  return 0;
}
