#include "opscope/analysis/kernel_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>
#include <unordered_map>

#include "opscope/analysis/text_out.h"
#include "opscope/core/error.h"
#include "opscope/debuginfo/listing.h"
#include "opscope/debuginfo/source_text.h"

namespace opscope::analysis {

namespace {

namespace fs = std::filesystem;
using debuginfo::ElfModule;

std::string short_id(const std::string& id) { return id.size() > 12 ? id.substr(0, 12) : id; }

// The file to read a profiled module's code from: `override` when it names the same
// file (by name), else the profiled path. Notes why nothing can be read.
std::unique_ptr<ElfModule> open_profiled(const prof::CodeModule& m, const std::string& override,
                                         std::vector<std::string>& notes, std::string& used_path) {
  used_path = m.path;
  if (!override.empty() && fs::path(override).filename() == fs::path(m.path).filename()) used_path = override;
  if (m.path == "[kernel]" || m.path == "[unknown]") return nullptr;
  std::string why;
  std::unique_ptr<ElfModule> elf = ElfModule::open(used_path, &why);
  if (!elf) {
    notes.push_back(fmt::format("{}: {}: moved or deleted since the profile? Its instructions are not shown; pass "
                                "--module with where it is now",
                                used_path, why));
    return nullptr;
  }
  if (!m.build_id.empty() && elf->build_id() != m.build_id) {
    notes.push_back(fmt::format("{}: not the file profiled (build id {} here, {} in the profile): rebuilt or "
                                "replaced; its instructions are not shown",
                                used_path, short_id(elf->build_id()), short_id(m.build_id)));
    return nullptr;
  }
  if (!elf->has_lines())
    notes.push_back(fmt::format("{}: no debug information (no line table): shown as assembly only", used_path));
  return elf;
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> sampled_kernels(const Trace& trace) {
  SampleOwners owners(trace);
  std::map<std::string, int64_t> n;
  for (const prof::Sample& s : trace.samples) ++n[owners.kernel(s.launch)];
  std::vector<std::pair<std::string, int64_t>> out(n.begin(), n.end());
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.second > b.second; });
  return out;
}

KernelProfile kernel_profile(const Trace& trace, const KernelQuery& q, std::string_view source_name) {
  require_samples(trace, "kernel", source_name);
  SampleOwners owners(trace);
  KernelProfile k;
  k.kernel = q.kernel;
  k.op = q.op;
  k.sampling = sampling_info(trace);

  std::unordered_map<int32_t, int64_t> per_site, per_track;
  std::map<std::string, int64_t> ops_of_kernel;
  for (const prof::Sample& s : trace.samples) {
    if (owners.kernel(s.launch) != q.kernel) continue;
    ++ops_of_kernel[owners.op(s.launch)];
    if (!q.op.empty() && owners.op(s.launch) != q.op) continue;
    ++per_site[s.site];
    ++per_track[s.track];
    ++k.samples;
  }
  if (ops_of_kernel.empty()) {
    std::string list;
    int shown = 0;
    for (auto& [name, n] : sampled_kernels(trace))
      if (shown++ < 12) list += fmt::format("{}{} ({})", list.empty() ? "" : ", ", name, n);
    fail("kernel", "{}: no samples in kernel '{}' (kernels with samples: {})", source_name, q.kernel, list);
  }
  if (k.samples == 0) {
    std::string list;
    for (auto& [op, n] : ops_of_kernel) list += fmt::format("{}{} ({})", list.empty() ? "" : ", ", op.empty() ? "(no op)" : op, n);
    fail("--op", "{}: kernel '{}' has no samples under op '{}' (its ops: {})", source_name, q.kernel, q.op, list);
  }
  int64_t total = int64_t(trace.samples.size());
  k.est_ns = total ? double(owners.sampled_kernel_ns()) * double(k.samples) / double(total) : 0;

  // Cores.
  for (auto& [track, n] : per_track)
    k.cores.push_back({track, size_t(track) < trace.tracks.size() ? trace.tracks[size_t(track)].name : "?", n});
  std::sort(k.cores.begin(), k.cores.end(), [](auto& a, auto& b) { return a.track < b.track; });
  int64_t busiest = 0;
  for (auto& c : k.cores) busiest = std::max(busiest, c.samples);
  k.imbalance = k.cores.empty() ? 0 : double(busiest) * double(k.cores.size()) / double(k.samples);

  // Functions (module, name) with their sampled addresses.
  struct Fn {
    int32_t module = -1;
    std::string name;
    int64_t samples = 0;
    std::map<uint64_t, int64_t> at;  // address -> samples
  };
  std::map<std::pair<int32_t, std::string>, Fn> fns;
  std::map<std::pair<std::string, int>, HotLine> lines;
  for (auto& [site_i, n] : per_site) {
    const prof::CodeSite& site = trace.code_sites[size_t(site_i)];
    std::string fname = site.function.empty() ? "[unknown]" : site.function;
    Fn& f = fns[{site.module, fname}];
    f.module = site.module;
    f.name = fname;
    f.samples += n;
    f.at[site.address] += n;
    if (!site.file.empty()) {
      HotLine& l = lines[{site.file, site.line}];
      l.file = site.file;
      l.line = site.line;
      l.samples += n;
      if (l.function.empty()) l.function = fname;
    }
  }
  std::vector<Fn*> order;
  for (auto& [key, f] : fns) order.push_back(&f);
  std::stable_sort(order.begin(), order.end(), [](Fn* a, Fn* b) { return a->samples > b->samples; });

  // Instructions, decoded from each module file.
  std::map<int32_t, std::unique_ptr<ElfModule>> elves;
  std::map<int32_t, std::string> used_paths;
  std::set<int32_t> opened;
  for (Fn* f : order) {
    k.functions.push_back({f->name, f->samples});
    if (f->module < 0 || size_t(f->module) >= trace.code_modules.size()) continue;
    if (opened.insert(f->module).second)
      elves[f->module] = open_profiled(trace.code_modules[size_t(f->module)], q.module, k.notes, used_paths[f->module]);
    ElfModule* elf = elves[f->module].get();
    if (!elf) continue;
    std::vector<uint64_t> addrs;
    for (auto& [a, n] : f->at) addrs.push_back(a);
    uint64_t low = addrs.front(), high = addrs.back() + 16;
    if (auto sym = elf->symbol_at(addrs.front()); sym && sym->high > addrs.back()) {
      low = sym->low;
      high = sym->high;
    } else {
      low = low > 64 ? low - 64 : 0;  // no symbol: a window around the samples (decoding may start mid-instruction)
      high += 64;
      k.notes.push_back(fmt::format("{}: no symbol around {:#x}: instructions shown around the samples only",
                                    used_paths[f->module], addrs.front()));
    }
    for (debuginfo::ListedInstruction& li : debuginfo::list_code(*elf, low, high, addrs)) {
      KernelInstruction in;
      in.address = li.insn.address;
      in.text = li.insn.text;
      in.cls = debuginfo::class_name(li.insn.cls);
      in.width = debuginfo::width_name(li.insn.width);
      auto it = f->at.find(in.address);
      in.samples = it == f->at.end() ? 0 : it->second;
      in.file = li.file;
      in.line = li.line;
      in.function = f->name;
      if (in.samples) {
        k.classes[in.cls] += in.samples;
        k.widths[in.width] += in.samples;
        k.classified += in.samples;
      }
      k.instructions.push_back(std::move(in));
    }
  }
  if (lines.empty())
    k.notes.push_back("no source lines: the sampled code has no line table (built without -g1, or stripped)");

  for (auto& [key, l] : lines) {
    int32_t module = -1;
    for (Fn* f : order)
      if (f->name == l.function) module = f->module;
    std::string mod_path = module >= 0 ? used_paths[module] : std::string();
    if (mod_path.empty() && module >= 0 && size_t(module) < trace.code_modules.size())
      mod_path = trace.code_modules[size_t(module)].path;
    l.path = debuginfo::find_source(l.file, mod_path);
    l.text = l.path.empty() ? "" : debuginfo::source_line(l.path, l.line);
    k.source.push_back(l);
  }
  std::stable_sort(k.source.begin(), k.source.end(), [](auto& a, auto& b) { return a.samples > b.samples; });
  return k;
}

namespace {

std::string ms(double ns) { return ns >= 1e6 ? fmt::format("{:.2f} ms", ns / 1e6) : fmt::format("{:.1f} us", ns / 1e3); }

}  // namespace

std::string kernel_profile_text(const KernelProfile& k, int max_lines, int context) {
  std::string out;
  put(out, "Kernel {}{}: {} samples, ≈ {} of core time ({})\n", k.kernel, k.op.empty() ? "" : " under op " + k.op, k.samples,
    ms(k.est_ns), sampling_summary(k.sampling));
  put(out, "\nSource lines, hottest first\n");
  int shown = 0;
  for (const HotLine& l : k.source) {
    if (shown++ >= max_lines) break;
    put(out, "\n{:>7} {:>7}  {}:{}  ({})\n", pct_text(l.samples, k.samples), l.samples, l.file, l.line, l.function);
    if (!l.path.empty()) {
      for (int n = std::max(1, l.line - context); n <= l.line + context; ++n) {
        std::string text = debuginfo::source_line(l.path, n);
        if (text.empty() && n > l.line) break;
        put(out, "        {} {:>6} | {}\n", n == l.line ? ">" : " ", n, text);
      }
    } else {
      put(out, "          (source not found)\n");
    }
    std::vector<const KernelInstruction*> under;
    for (const KernelInstruction& in : k.instructions)
      if (in.line == l.line && in.file == l.file && in.function == l.function) under.push_back(&in);
    bool all = under.size() <= 12;
    for (const KernelInstruction* in : under)
      if (all || in->samples > 0)
        put(out, "          {:>7} {:>6}  {:#8x}  {:<48} {} {}\n", in->samples ? pct_text(in->samples, k.samples) : "", in->samples,
          in->address, in->text, in->cls, in->width);
  }
  if (k.source.empty()) {
    put(out, "  (none: see the notes)\n\nInstructions with samples\n");
    for (const KernelInstruction& in : k.instructions)
      if (in.samples > 0)
        put(out, "  {:>7} {:>6}  {:#8x}  {:<48} {} {}  ({})\n", pct_text(in.samples, k.samples), in.samples, in.address, in.text,
          in.cls, in.width, in.function);
  }
  put(out, "\nFunctions: ");
  for (size_t i = 0; i < k.functions.size() && i < 6; ++i)
    put(out, "{}{} {}", i ? ", " : "", k.functions[i].first, pct_text(k.functions[i].second, k.samples));
  put(out, "\n");
  if (k.classified) {
    auto share = [&](const char* width) {
      auto it = k.widths.find(width);
      return pct_text(it == k.widths.end() ? 0 : it->second, k.classified);
    };
    auto cls = [&](const char* c) {
      auto it = k.classes.find(c);
      return it == k.classes.end() ? int64_t(0) : it->second;
    };
    put(out, "Vector width: 512-bit {}, 256-bit {}, 128-bit {}, scalar {} (tails and scalar code); converts {}\n", share("512"),
      share("256"), share("128"), share("scalar"), pct_text(cls("convert"), k.classified));
    put(out, "Classes:");
    for (const char* c : {"fma", "arith", "load", "store", "stream_store", "convert", "shuffle", "branch", "other"})
      if (cls(c)) put(out, " {} {}", c, pct_text(cls(c), k.classified));
    put(out, "  (of {} decoded samples)\n", k.classified);
  }
  put(out, "Cores:");
  for (const CoreSamples& c : k.cores) put(out, " {} {} ({})", c.name, c.samples, pct_text(c.samples, k.samples));
  put(out, "; imbalance {:.2f} (busiest / mean)\n", k.imbalance);
  for (const std::string& n : k.notes) put(out, "note: {}\n", n);
  return out;
}

nlohmann::json kernel_profile_json(const KernelProfile& k) {
  nlohmann::json j;
  j["kernel"] = k.kernel;
  j["op"] = k.op;
  j["samples"] = k.samples;
  j["est_ns"] = k.est_ns;
  j["sampling"] = {{"event", k.sampling.event}, {"hardware", k.sampling.hardware}, {"rate_hz", k.sampling.rate_hz},
                   {"period_ns", k.sampling.period_ns}, {"lost", k.sampling.lost}, {"dropped", k.sampling.dropped}};
  j["source"] = nlohmann::json::array();
  for (const HotLine& l : k.source)
    j["source"].push_back({{"file", l.file}, {"line", l.line}, {"samples", l.samples}, {"text", l.text},
                           {"function", l.function}});
  j["instructions"] = nlohmann::json::array();
  for (const KernelInstruction& in : k.instructions)
    j["instructions"].push_back({{"address", fmt::format("{:#x}", in.address)}, {"text", in.text}, {"class", in.cls},
                                 {"width", in.width}, {"samples", in.samples}, {"file", in.file}, {"line", in.line},
                                 {"function", in.function}});
  j["classes"] = k.classes;
  j["widths"] = k.widths;
  j["classified"] = k.classified;
  j["cores"] = nlohmann::json::array();
  for (const CoreSamples& c : k.cores) j["cores"].push_back({{"track", c.track}, {"name", c.name}, {"samples", c.samples}});
  j["imbalance"] = k.imbalance;
  j["functions"] = nlohmann::json::array();
  for (auto& [name, n] : k.functions) j["functions"].push_back({{"name", name}, {"samples", n}});
  j["notes"] = k.notes;
  return j;
}

}  // namespace opscope::analysis
