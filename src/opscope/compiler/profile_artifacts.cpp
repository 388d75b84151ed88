// Profiles record the artifacts of the compiled kernels they ran (as Neuron's profiler
// keeps the NEFF beside the device trace): installed as a profiler trace annotator, so
// the profiler itself knows nothing of the compiler.
#include <fmt/format.h>

#include <algorithm>
#include <bitset>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "opscope/compiler/artifacts.h"
#include "opscope/compiler/cache.h"
#include "opscope/profiler/trace.h"

namespace opscope::compiler {

namespace {

using nlohmann::ordered_json;

// The generated source, cut at kMaxProfileSource bytes with a note saying so.
void add_source(ordered_json& entry, const std::string& path) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) {
    entry["source"] = nullptr;
    entry["source_error"] = fmt::format("cannot read {}", path);
    return;
  }
  std::string text(std::min<size_t>(size, kMaxProfileSource), '\0');
  in.read(text.data(), std::streamsize(text.size()));
  text.resize(size_t(in.gcount()));
  if (size > kMaxProfileSource) {
    text += fmt::format("\n// [opscope] source cut here: {} of {} bytes kept; the whole file is {}\n", text.size(),
                        size, path);
    entry["source_truncated"] = true;
  }
  entry["source"] = std::move(text);
  entry["source_bytes"] = int64_t(size);
}

ordered_json entry_for(const KernelArtifact& a, const std::vector<KernelArtifact>& all) {
  ordered_json e;
  e["hash"] = a.hash;
  e["dir"] = a.dir;
  e["symbol"] = a.symbol;
  std::string text, source_file = "kernels.cpp";
  if (read_file(a.manifest, text)) {
    ordered_json m = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (m.is_discarded()) {
      e["manifest"] = nullptr;
      e["manifest_error"] = fmt::format("{} is not valid JSON", a.manifest);
    } else {
      if (m.is_object() && m.contains("source") && m["source"].is_string()) source_file = m["source"];
      e["manifest"] = std::move(m);
    }
  } else {
    e["manifest"] = nullptr;
    e["manifest_error"] = fmt::format("cannot read {} (was the cache cleared?)", a.manifest);
  }
  add_source(e, a.dir + "/" + source_file);
  // Graphs of other shapes can make kernels of the same name: the entry is the latest
  // loaded; the others are named so that a reader knows.
  ordered_json others = ordered_json::array();
  for (const KernelArtifact& k : all)
    if (k.kernel == a.kernel && k.hash != a.hash) others.push_back(k.hash);
  if (!others.empty()) e["other_hashes"] = std::move(others);
  return e;
}

}  // namespace

void annotate_trace_artifacts(prof::Trace& trace) {
  std::vector<KernelArtifact> all = loaded_kernel_artifacts();
  if (all.empty()) return;
  // The kernel names to look for; a length filter keeps the scan over events cheap.
  std::unordered_map<std::string_view, bool> wanted;  // name -> seen
  std::bitset<256> lengths;
  for (const KernelArtifact& k : all) {
    wanted.emplace(k.kernel, false);
    lengths.set(std::min<size_t>(k.kernel.size(), 255));
  }
  size_t found = 0;
  const std::string* last = nullptr;
  for (const prof::TraceEvent& ev : trace.events) {
    if (ev.kind != prof::EventKind::launch && ev.kind != prof::EventKind::kernel) continue;
    if (!lengths.test(std::min<size_t>(ev.name.size(), 255))) continue;
    if (last && *last == ev.name) continue;
    last = &ev.name;
    auto it = wanted.find(ev.name);
    if (it != wanted.end() && !it->second) {
      it->second = true;
      if (++found == wanted.size()) break;
    }
  }
  if (!found) return;

  ordered_json cfg = trace.config_json.empty() ? ordered_json::object()
                                               : ordered_json::parse(trace.config_json, nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object()) return;  // not ours to rewrite
  ordered_json& arts = cfg["artifacts"];
  if (!arts.is_object()) arts = ordered_json::object();
  std::vector<std::string> names;
  for (auto& [name, seen] : wanted)
    if (seen) names.emplace_back(name);
  std::sort(names.begin(), names.end());  // the same profile, the same JSON
  for (const std::string& name : names)
    if (auto a = find_kernel_artifact(name)) arts[name] = entry_for(*a, all);
  trace.config_json = cfg.dump();
}

}  // namespace opscope::compiler
