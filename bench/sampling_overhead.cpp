// The instructions layer's cost. The same workload (naive RMSNorm as six ops, then
// softmax, on 512x4096 f32) is profiled with the device layer only, and with the
// instructions layer at its default (auto) rate and at 100 Hz, 1, 10 and 50 kHz per core;
// the settings alternate inside each round and each figure is the median over rounds. Device time = the sum over launches
// of their span on the device (key_averages' device total): the sampling timer's
// interrupts land inside kernels, so what they cost shows there. Wall = the loop's time.
//   build/bench/sampling_overhead [rounds] [iters]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "opscope/opscope.h"
#include "opscope/profiler/config.h"
#include "opscope/profiler/session.h"

using namespace opscope;

namespace {

double device_ms(const prof::Trace& t) {
  std::map<uint64_t, std::pair<int64_t, int64_t>> span;
  for (const prof::TraceEvent& e : t.events) {
    if (e.kind != prof::EventKind::kernel) continue;
    auto [it, fresh] = span.try_emplace(e.id, e.t0, e.t1);
    if (!fresh) it->second = {std::min(it->second.first, e.t0), std::max(it->second.second, e.t1)};
  }
  int64_t ns = 0;
  for (auto& [id, s] : span) ns += s.second - s.first;
  return double(ns) / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Setting {
  std::string name;
  int64_t rate;  // -1: unsampled; 0: auto (ProfilerConfig::kAutoSampleRate)
  std::vector<double> device, wall;
  int64_t samples = 0, lost = 0, dropped = 0;
  std::string event;
};

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  int iters = argc > 2 ? std::atoi(argv[2]) : 10;
  Tensor x = randn({512, 4096}, 1), w = randn({4096}, 2);
  auto workload = [&] {
    for (int i = 0; i < iters; ++i) {
      Tensor y = mul(mul(x, rsqrt(add(mean(mul(x, x), {-1}, true), 1e-6))), w);
      Tensor s = softmax(y, -1);
    }
    cpu().synchronize();
  };
  workload();  // warm: the allocator's cache holds every block
  std::vector<Setting> settings;
  for (auto [name, rate] : {std::pair<const char*, int64_t>{"unsampled", -1}, {"auto", 0}, {"100 Hz", 100},
                            {"1 kHz", 1000}, {"10 kHz", 10000},
                            {"50 kHz", 50000}}) {
    settings.emplace_back();
    settings.back().name = name;
    settings.back().rate = rate;
  }
  for (int r = 0; r < rounds; ++r)
    for (size_t k = 0; k < settings.size(); ++k) {
      Setting& s = settings[(k + size_t(r)) % settings.size()];  // a rotating order
      prof::ProfilerConfig c;
      c.layers = prof::kFramework | prof::kRuntime | prof::kDevice | (s.rate >= 0 ? prof::kInstructions : 0u);
      if (s.rate >= 0) c.sample_rate_hz = s.rate;
      prof::Profiler p(c);
      auto t0 = std::chrono::steady_clock::now();
      p.start();
      workload();
      p.stop();
      s.wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      s.device.push_back(device_ms(p.trace()));
      if (!p.trace().sampling_json.empty()) {
        auto j = nlohmann::json::parse(p.trace().sampling_json);
        s.samples += j.value("samples", int64_t(0));
        s.lost += j.value("lost", int64_t(0));
        s.dropped += j.value("dropped", int64_t(0));
        s.event = j.value("event", "");
        if (j.value("rate_auto", false))
          s.event += fmt::format(" at {} Hz, a sample costs {:.1f} us", j.value("rate_hz", int64_t(0)),
                                 double(j.value("sample_cost_ns", int64_t(0))) / 1e3);
        if (j.contains("warning")) fmt::print("warning: {}\n", j["warning"].get<std::string>());
      }
    }
  fmt::print("{}\nworkload: naive RMSNorm (6 ops) + softmax on 512x4096 f32, {} iterations; {} rounds, median\n",
             cpu().description(), iters, rounds);
  double base_dev = median(settings[0].device), base_wall = median(settings[0].wall);
  fmt::print("{:<10} {:>11} {:>9} {:>10} {:>9} {:>14} {:>6} {:>8}\n", "setting", "device ms", "ratio", "wall ms",
             "ratio", "samples/round", "lost", "dropped");
  for (const Setting& s : settings)
    fmt::print("{:<10} {:>11.2f} {:>9.3f} {:>10.2f} {:>9.3f} {:>14} {:>6} {:>8}  {}\n", s.name, median(s.device),
               median(s.device) / base_dev, median(s.wall), median(s.wall) / base_wall, s.samples / rounds, s.lost,
               s.dropped, s.event);
  return 0;
}
