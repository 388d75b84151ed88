#include "opscope/profiler/samples.h"

#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "opscope/debuginfo/elf_module.h"

namespace opscope::prof::detail {

namespace {

constexpr uint64_t kKernelSpace = 0xffff800000000000ull;

// A loaded module's executable range and load bias, from the dynamic linker's list.
struct Loaded {
  std::string path;
  uint64_t bias = 0;
  uint64_t low = 0, high = 0;
};

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

std::vector<Loaded> loaded_modules() {
  std::vector<Loaded> out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* arg) {
        auto& v = *static_cast<std::vector<Loaded>*>(arg);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
          Loaded m;
          m.path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "";
          m.bias = info->dlpi_addr;
          m.low = info->dlpi_addr + ph.p_vaddr;
          m.high = m.low + ph.p_memsz;
          v.push_back(std::move(m));
        }
        return 0;
      },
      &out);
  std::string exe;
  for (Loaded& m : out)
    if (m.path.empty()) m.path = exe.empty() ? (exe = self_exe()) : exe;
  return out;
}

// Modules stay open for the process: libopscope and compiled artifacts are read again
// at every collection, and neither is unloaded.
std::shared_ptr<debuginfo::ElfModule> open_module(const std::string& path) {
  static std::mutex m;
  static std::map<std::string, std::shared_ptr<debuginfo::ElfModule>> cache;
  std::lock_guard<std::mutex> g(m);
  auto [it, fresh] = cache.try_emplace(path);
  if (fresh) it->second = debuginfo::ElfModule::open(path, nullptr);
  return it->second;
}

}  // namespace

void attach_samples(Trace& trace, SamplerReport&& report, int64_t base_ns) {
  if (!report.started) return;
  // Each core's kernel events in time order: [t0, t1] -> launch id.
  struct Slice {
    int64_t t0, t1;
    uint64_t launch;
  };
  std::unordered_map<int32_t, int32_t> track_of_key;
  for (size_t i = 0; i < trace.tracks.size(); ++i) {
    const Track& tr = trace.tracks[i];
    if (tr.kind == Track::Kind::device_core && tr.device >= 0)
      track_of_key[(tr.device << 16) | (tr.core & 0xffff)] = int32_t(i);
  }
  std::unordered_map<int32_t, std::vector<Slice>> slices;  // by track
  for (const TraceEvent& e : trace.events)
    if (e.kind == EventKind::kernel) slices[e.track].push_back({e.t0, e.t1, e.id});
  for (auto& [track, v] : slices)
    std::sort(v.begin(), v.end(), [](const Slice& a, const Slice& b) { return a.t0 < b.t0; });

  int64_t outside = 0;
  std::vector<std::pair<CoreSample, Sample>> kept;
  kept.reserve(report.samples.size());
  for (const CoreSample& cs : report.samples) {
    auto tk = track_of_key.find(cs.core_key);
    auto sl = tk == track_of_key.end() ? slices.end() : slices.find(tk->second);
    int64_t t = cs.t - base_ns;
    const Slice* in = nullptr;
    if (sl != slices.end()) {
      auto& v = sl->second;
      auto it = std::upper_bound(v.begin(), v.end(), t, [](int64_t x, const Slice& s) { return x < s.t0; });
      if (it != v.begin() && t <= std::prev(it)->t1) in = &*std::prev(it);
    }
    if (!in) {
      ++outside;
      continue;
    }
    kept.push_back({cs, Sample{t, tk->second, 0, in->launch}});
  }

  // Sites: one per distinct instruction pointer, resolved in its module.
  std::vector<Loaded> mods = loaded_modules();
  std::sort(mods.begin(), mods.end(), [](const Loaded& a, const Loaded& b) { return a.low < b.low; });
  std::map<std::string, int32_t> module_index;
  auto module_id = [&](const std::string& path, const std::string& build_id) {
    auto [it, fresh] = module_index.try_emplace(path, int32_t(trace.code_modules.size()));
    if (fresh) trace.code_modules.push_back({path, build_id});
    return it->second;
  };
  std::unordered_map<uint64_t, int32_t> site_of_ip;
  for (auto& [cs, s] : kept) {
    auto [it, fresh] = site_of_ip.try_emplace(cs.ip, int32_t(trace.code_sites.size()));
    s.site = it->second;
    if (!fresh) continue;
    CodeSite site;
    if (cs.ip >= kKernelSpace) {
      site.module = module_id("[kernel]", "");
      site.address = cs.ip;
      site.function = "[kernel]";
    } else {
      auto m = std::upper_bound(mods.begin(), mods.end(), cs.ip, [](uint64_t ip, const Loaded& l) { return ip < l.low; });
      if (m != mods.begin() && cs.ip < std::prev(m)->high) {
        const Loaded& l = *std::prev(m);
        std::shared_ptr<debuginfo::ElfModule> elf = open_module(l.path);
        site.module = module_id(l.path, elf ? elf->build_id() : "");
        site.address = cs.ip - l.bias;
        if (elf) {
          if (auto sym = elf->symbol_at(site.address)) site.function = sym->name;
          if (auto line = elf->line_at(site.address)) {
            site.file = line->file;
            site.line = line->line;
          }
        }
      } else {
        site.module = module_id("[unknown]", "");
        site.address = cs.ip;
      }
    }
    trace.code_sites.push_back(std::move(site));
  }
  trace.samples.reserve(kept.size());
  for (auto& [cs, s] : kept) trace.samples.push_back(s);
  std::sort(trace.samples.begin(), trace.samples.end(), [](const Sample& a, const Sample& b) { return a.t < b.t; });

  nlohmann::json j;
  j["event"] = report.event;
  j["hardware"] = report.hardware;
  j["kernel_ips"] = report.kernel_ips;
  j["rate_hz"] = report.rate_hz;
  j["rate_auto"] = report.rate_auto;
  if (report.sample_cost_ns) j["sample_cost_ns"] = report.sample_cost_ns;
  j["period_ns"] = report.period;
  j["threads"] = report.threads;
  j["samples"] = int64_t(trace.samples.size());
  j["outside_kernels"] = outside;
  j["lost"] = report.lost;
  j["dropped"] = report.dropped;
  if (!report.warning.empty()) j["warning"] = report.warning;
  trace.sampling_json = j.dump();
}

}  // namespace opscope::prof::detail
