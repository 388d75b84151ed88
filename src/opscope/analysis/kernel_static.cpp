#include "opscope/analysis/kernel_static.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "opscope/analysis/instruction_samples.h"
#include "opscope/analysis/kernel_static_verdicts.h"
#include "opscope/core/dtype.h"
#include "opscope/core/error.h"
#include "opscope/debuginfo/elf_module.h"

namespace opscope::analysis {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read_manifest(const std::string& dir) {
  std::string path = dir + "/manifest.json";
  std::ifstream in(path);
  if (!in) fail("--static", "{}: no manifest.json: not an opscope artifact folder (opscope cache list shows them)", dir);
  std::stringstream text;
  text << in.rdbuf();
  json m = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded() || !m.is_object() || !m.contains("kernels") || !m["kernels"].is_array())
    fail("--static", "{}: not an opscope manifest (no \"kernels\" list)", path);
  for (size_t i = 0; i < m["kernels"].size(); ++i) {
    const json& e = m["kernels"][i];
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() ||
        (e.contains("symbol") && !e["symbol"].is_string()))
      fail("--static", "{}: kernels[{}] is not an object with a name and a symbol", path, i);
  }
  return m;
}

// The floating dtype a kernel's name ends in ("fused_add_silu_bf16"); f32 otherwise.
DType dtype_of(const std::string& kernel) {
  for (DType t : {DType::bf16, DType::f16, DType::f32})
    if (kernel.ends_with(fmt::format("_{}", dtype_name(t)))) return t;
  return DType::f32;
}

void set_dtype(StaticKernel& k) {
  DType t = dtype_of(k.kernel);
  k.dtype = std::string(dtype_name(t));
  k.elem_bytes = int(itemsize(t));
}

int64_t int_field(const json& e, const char* key) {
  return e.contains(key) && e[key].is_number_integer() ? e[key].get<int64_t>() : 0;
}

StaticKernel from_entry(const json& e, const std::string& dir) {
  StaticKernel k;
  k.kernel = e.value("name", "");
  k.symbol = e.value("symbol", k.kernel);
  k.library = dir + "/kernels.so";
  k.source = dir + "/kernels.cpp";
  set_dtype(k);
  if (e.contains("domain") && e["domain"].is_array())
    for (const json& d : e["domain"]) k.domain.push_back(d.is_number_integer() ? d.get<int64_t>() : 0);
  k.elements = k.domain.empty() ? 0 : 1;
  for (int64_t d : k.domain) k.elements *= d;
  if (e.contains("flat") && e["flat"].is_boolean() && !e["flat"].get<bool>()) k.cols = int_field(e, "cols");
  k.passes = int(int_field(e, "passes"));
  k.inputs = int(int_field(e, "inputs"));
  k.outputs = int(int_field(e, "outputs"));
  if (e.contains("ops") && e["ops"].is_array())
    for (const json& o : e["ops"]) k.ops.push_back(o.is_string() ? o.get<std::string>() : "?");
  return k;
}

// A loop's tails and peels: a narrower loop over the same source lines (a 256-bit
// epilogue, a scalar remainder), or over the same streams (as many loads per store: an
// alignment peel before the vector loop). The widest loop of each such set is its main one.
bool same_work(const debuginfo::LoopFacts& a, const debuginfo::LoopFacts& b) {
  bool lines = !a.file.empty() && a.file == b.file && a.first_line <= b.last_line && b.first_line <= a.last_line;
  bool streams = a.stores > 0 && b.stores > 0 && a.loads * b.stores == b.loads * a.stores;
  return lines || streams;
}

void mark_remainders(std::vector<StaticLoop>& loops) {
  auto rank = [](const debuginfo::LoopFacts& f) { return std::make_pair(int(f.widest), f.instructions); };
  for (StaticLoop& l : loops)
    for (const StaticLoop& o : loops)
      if (&l != &o && same_work(l.facts, o.facts) && rank(o.facts) > rank(l.facts)) l.remainder = true;
}

void per_element(StaticLoop& l, int elem_bytes) {
  const debuginfo::LoopFacts& f = l.facts;
  int64_t step = f.store_step > 0 ? f.store_step : f.load_step;
  if (step <= 0) return;
  l.elements = double(step) / elem_bytes;
  l.loads_per_element = f.loads / l.elements;
  l.stores_per_element = f.stores / l.elements;
  l.bytes_per_element = double(f.read_bytes + f.write_bytes) / l.elements;
}

std::vector<StaticLoop> kernel_loops(const debuginfo::ElfModule& elf, const debuginfo::Symbol& sym, StaticKernel& k) {
  if (sym.high - sym.low > debuginfo::kMaxListedBytes)
    k.notes.push_back(fmt::format("{}: {} bytes of code; the first {} analysed", k.symbol, sym.high - sym.low,
                                  debuginfo::kMaxListedBytes));
  std::vector<debuginfo::ListedInstruction> listing = debuginfo::list_code(elf, sym.low, sym.high);
  std::optional<debuginfo::SourceLine> start = elf.line_at(sym.low);
  int from_line = start ? start->line : 0;
  std::vector<StaticLoop> loops;
  for (const debuginfo::Loop& loop : debuginfo::find_loops(listing)) {
    if (!loop.innermost) continue;
    StaticLoop l;
    l.facts = debuginfo::loop_facts(listing, loop, from_line);
    if (l.facts.compute() == 0 && l.facts.loads + l.facts.stores == 0) continue;
    per_element(l, k.elem_bytes);
    loops.push_back(std::move(l));
  }
  std::sort(loops.begin(), loops.end(), [](auto& a, auto& b) { return a.facts.head < b.facts.head; });
  mark_remainders(loops);
  return loops;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return a == b || fs::equivalent(a, b, ec);
}

// The profile's side: the bytes its launches recorded, and its samples in each loop.
void add_profile(const Trace& trace, StaticKernel& k) {
  int64_t bytes = 0;
  for (const TraceEvent& e : trace.events)
    if (e.kind == EventKind::launch && e.name == k.kernel) {
      bytes += e.bytes;
      ++k.launches;
    }
  if (k.launches && k.elements > 0 && bytes > 0)
    k.recorded_bytes_per_element = double(bytes) / double(k.launches) / double(k.elements);
  if (trace.samples.empty()) return;
  std::vector<bool> ours(trace.code_modules.size());
  for (size_t i = 0; i < ours.size(); ++i) ours[i] = same_file(trace.code_modules[i].path, k.library);
  SampleOwners owners(trace);
  for (StaticLoop& l : k.loops) l.samples = 0;
  for (const prof::Sample& s : trace.samples) {
    if (owners.kernel(s.launch) != k.kernel) continue;
    const prof::CodeSite& site = trace.code_sites[size_t(s.site)];
    if (site.module < 0 || !ours[size_t(site.module)]) continue;
    for (StaticLoop& l : k.loops)
      if (site.address >= l.facts.head && site.address <= l.facts.latch) ++l.samples;
  }
  // Measured beats guessed: where the samples say which loops ran, a loop with under a
  // tenth of them is a tail, a fallback or a path this run did not take.
  int64_t sampled = 0;
  for (const StaticLoop& l : k.loops) sampled += l.samples;
  if (sampled > 0)
    for (StaticLoop& l : k.loops) l.remainder = l.samples * 10 < sampled;
}

// The kernel's figures and verdicts from its loops (and the profile's side, with a trace).
void finish(StaticKernel& k, const Trace* trace) {
  if (trace) add_profile(*trace, k);
  for (const StaticLoop& l : k.loops)
    if (!l.remainder && l.bytes_per_element >= 0)
      k.bytes_per_element = (k.bytes_per_element < 0 ? 0 : k.bytes_per_element) + l.bytes_per_element;
  k.verdicts = static_verdicts(k, native_vector_bits());
}

void analyse(StaticKernel& k, const debuginfo::ElfModule* elf, const Trace* trace) {
  if (elf) {
    if (std::optional<debuginfo::Symbol> sym = elf->find_symbol(k.symbol)) {
      k.loops = kernel_loops(*elf, *sym, k);
      if (!elf->has_lines()) k.notes.push_back(k.library + ": no line table: loops are not matched to source lines");
    } else {
      k.notes.push_back(fmt::format("{}: no symbol {} (stripped?): its code cannot be found", k.library, k.symbol));
    }
  }
  finish(k, trace);
}

std::vector<std::string> names_of(const json& kernels) {
  std::vector<std::string> out;
  for (const json& e : kernels) out.push_back(e.value("name", "?"));
  return out;
}

// A built-in kernel (no artifact, no manifest): the functions its samples fell in, each
// analysed as a kernel of its own, hottest first (those with >= kSampledShare of its
// samples). No domain, so no recorded bytes per element.
constexpr double kSampledShare = 0.05;

std::vector<StaticKernel> static_sampled(const Trace& trace, const std::string& kernel, std::string_view source_name) {
  SampleOwners owners(trace);
  std::map<std::pair<int32_t, std::string>, std::pair<int64_t, uint64_t>> fns;  // -> (samples, an address)
  int64_t total = 0;
  for (const prof::Sample& s : trace.samples) {
    if (owners.kernel(s.launch) != kernel) continue;
    ++total;
    const prof::CodeSite& site = trace.code_sites[size_t(s.site)];
    if (site.module < 0 || size_t(site.module) >= trace.code_modules.size() || site.function.empty()) continue;
    auto& f = fns[{site.module, site.function}];
    ++f.first;
    f.second = site.address;
  }
  std::vector<std::pair<int64_t, std::pair<int32_t, uint64_t>>> hot;
  for (auto& [key, f] : fns)
    if (double(f.first) >= kSampledShare * double(total)) hot.push_back({f.first, {key.first, f.second}});
  std::sort(hot.begin(), hot.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::vector<StaticKernel> out;
  std::string unreadable;
  for (auto& [n, where] : hot) {
    const prof::CodeModule& m = trace.code_modules[size_t(where.first)];
    std::string why;
    std::unique_ptr<debuginfo::ElfModule> elf = debuginfo::ElfModule::open(m.path, &why);
    if (!elf || (!m.build_id.empty() && elf->build_id() != m.build_id)) {
      unreadable = fmt::format("{}: {}", m.path, elf ? "rebuilt since the profile (another build id)" : why);
      continue;
    }
    std::optional<debuginfo::Symbol> sym = elf->symbol_at(where.second);
    if (!sym) continue;
    StaticKernel k;
    k.kernel = kernel;
    k.symbol = sym->name;
    k.library = m.path;
    set_dtype(k);
    k.loops = kernel_loops(*elf, *sym, k);
    finish(k, &trace);
    k.notes.push_back(fmt::format("a built-in kernel: {} of its {} samples in this function; no manifest, so no "
                                  "domain and no recorded bytes per element",
                                  n, total));
    out.push_back(std::move(k));
  }
  if (out.empty() && !unreadable.empty())
    fail("--static", "{}: kernel '{}': the code its samples fell in cannot be read: {}", source_name, kernel, unreadable);
  return out;
}

// The kernels `wanted` of the artifact in `dir` (all of them when empty), from one reading
// of its manifest and one opening of its library.
std::vector<StaticKernel> artifact_kernels(const std::string& dir, const std::vector<std::string>& wanted,
                                           const Trace* trace) {
  json m = read_manifest(dir);
  std::vector<std::string> names = names_of(m["kernels"]);
  for (const std::string& kernel : wanted)
    if (std::find(names.begin(), names.end(), kernel) == names.end())
      fail("--static", "{}: no kernel '{}' in this artifact (its kernels: {})", dir, kernel, fmt::join(names, ", "));
  std::string why;
  std::unique_ptr<debuginfo::ElfModule> elf = debuginfo::ElfModule::open(dir + "/kernels.so", &why);
  if (!elf) fail("--static", "{}/kernels.so: {}: the artifact's library is gone (rebuild it by running the model)", dir, why);
  std::vector<StaticKernel> out;
  for (const json& e : m["kernels"]) {
    std::string name = e.value("name", "");
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), name) == wanted.end()) continue;
    out.push_back(from_entry(e, dir));
    analyse(out.back(), elf.get(), trace);
  }
  return out;
}

}  // namespace

int native_vector_bits() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 512;
  if (__builtin_cpu_supports("avx")) return 256;
  return 128;
}

std::vector<StaticKernel> static_artifact(const std::string& dir, const std::string& kernel, const Trace* trace) {
  return artifact_kernels(dir, kernel.empty() ? std::vector<std::string>{} : std::vector<std::string>{kernel}, trace);
}

std::vector<StaticKernel> static_profile(const Trace& trace, const std::string& kernel, std::string_view source_name) {
  json cfg = json::parse(trace.config_json, nullptr, /*allow_exceptions=*/false);
  bool compiled = !cfg.is_discarded() && cfg.is_object() && cfg.contains("artifacts") && cfg["artifacts"].is_object() &&
                  !cfg["artifacts"].empty();
  if (!kernel.empty() && (!compiled || !cfg["artifacts"].contains(kernel))) {
    std::vector<StaticKernel> sampled = static_sampled(trace, kernel, source_name);
    if (!sampled.empty()) return sampled;
  }
  if (!compiled)
    fail("--static", "{}: ran no compiled kernels{} (--static reads the kernels opscope.compile generated, or a "
         "kernel's sampled functions with the instructions layer; or pass an artifact folder from opscope cache list)",
         source_name, kernel.empty() ? "" : fmt::format(", and kernel '{}' has no samples", kernel));
  std::vector<std::string> names;
  for (auto& [name, a] : cfg["artifacts"].items()) names.push_back(name);
  if (!kernel.empty() && !cfg["artifacts"].contains(kernel))
    fail("--static", "{}: kernel '{}' is not a compiled kernel of this profile and has no samples (its compiled "
         "kernels: {})", source_name, kernel, fmt::join(names, ", "));
  std::map<std::string, std::vector<std::string>> by_dir;  // the kernels of one artifact, read together
  for (const std::string& name : names) {
    if (!kernel.empty() && name != kernel) continue;
    const json& a = cfg["artifacts"][name];
    std::string dir = a.is_object() && a.contains("dir") && a["dir"].is_string() ? a["dir"].get<std::string>() : "";
    if (dir.empty() || !fs::exists(dir + "/manifest.json"))
      fail("--static", "{}: kernel '{}': its artifact {} is gone (deleted from the cache?)", source_name, name, dir);
    by_dir[dir].push_back(name);
  }
  std::vector<StaticKernel> out;
  for (auto& [dir, wanted] : by_dir)
    for (StaticKernel& k : artifact_kernels(dir, wanted, &trace)) out.push_back(std::move(k));
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.kernel < b.kernel; });
  return out;
}

}  // namespace opscope::analysis
