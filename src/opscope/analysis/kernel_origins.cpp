#include "opscope/analysis/kernel_origins.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string_view>

namespace opscope::analysis {

namespace {

std::vector<std::string> strings(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& v : *it)
    if (v.is_string() && !v.get_ref<const std::string&>().empty()) out.push_back(v.get<std::string>());
  return out;
}

// "layers.3.ffn_norm" → "layers.N.ffn_norm": one kernel serves every layer alike.
std::string generalized(const std::string& path) {
  std::string out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = std::min(path.find('.', start), path.size());
    std::string_view part(path.data() + start, dot - start);
    bool number = !part.empty() && part.find_first_not_of("0123456789") == std::string_view::npos;
    out += number ? std::string_view("N") : part;
    if (dot < path.size()) out += '.';
    start = dot + 1;
  }
  return out;
}

}  // namespace

std::string KernelOrigins::text() const {
  std::string out = fmt::format("{}", fmt::join(ops, ", "));
  struct Where {
    std::string general, first;
    int count;
  };
  std::vector<Where> where;  // a module alone keeps its path; several alike read "layers.N.x (×4)"
  for (const std::string& m : modules) {
    std::string g = generalized(m);
    auto it = std::find_if(where.begin(), where.end(), [&](const Where& w) { return w.general == g; });
    if (it == where.end()) where.push_back({g, m, 1});
    else ++it->count;
  }
  for (size_t i = 0; i < where.size(); ++i)
    out += fmt::format("{}{}", i ? ", " : " in ",
                       where[i].count > 1 ? fmt::format("{} (×{})", where[i].general, where[i].count) : where[i].first);
  if (shared) out += " (shared by modules)";
  return out;
}

std::map<std::string, KernelOrigins> kernel_origins(const Trace& trace) {
  std::map<std::string, KernelOrigins> out;
  if (trace.config_json.find("kernel_origins") == std::string::npos) return out;  // the common case, unparsed
  nlohmann::json cfg = nlohmann::json::parse(trace.config_json, nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object()) return out;
  auto it = cfg.find("kernel_origins");
  if (it == cfg.end() || !it->is_object()) return out;
  for (auto& [kernel, o] : it->items()) {
    if (!o.is_object()) continue;
    KernelOrigins k{strings(o, "ops"), strings(o, "modules"), o.value("shared", false)};
    if (!k.ops.empty()) out.emplace(kernel, std::move(k));
  }
  return out;
}

}  // namespace opscope::analysis
