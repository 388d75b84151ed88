// The instructions layer in the explorer:
//   /kernel?name=K[&op=NAME]   the kernel view: kernel_profile's JSON (source lines, each
//                              instruction with its line, classes, cores) plus, per
//                              source file, the lines around its hot ones with their
//                              samples, so the UI lays source and assembly side by side;
//                              "static": its code analysed (kernel_static.h's JSON: a
//                              compiled kernel's artifact, a built-in kernel's sampled
//                              functions; null when the code is gone or rebuilt)
//   /samples?t0=&t1=[&max=]    the samples in a time window, for the timeline: each
//                              with its core's track, its op (an index into `ops`) and
//                              its function (into `functions`); at most `max`, evenly
//                              thinned, with the count kept
//   /lines[?limit=]            key averages per source line
#include <algorithm>
#include <map>

#include "opscope/analysis/kernel_profile.h"
#include "opscope/analysis/kernel_static.h"
#include "opscope/analysis/line_averages.h"
#include "opscope/core/error.h"
#include "opscope/debuginfo/source_text.h"
#include "opscope/explorer/api_views.h"

namespace opscope::explorer::api {

using nlohmann::json;

namespace {

// An analysis's "[where] what" error as a 404 (nothing to show) with its words.
template <class F>
auto or_404(F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    throw ApiError(404, e.what());
  }
}

constexpr int kContext = 4;      // lines shown around each hot line
constexpr int kMaxFileLines = 600;

// The kernel's code analysed; null where there is none to read.
json compiled_code(const Profile& p, const std::string& kernel) {
  try {
    return analysis::static_json(analysis::static_profile(p.trace(), kernel, p.label()));
  } catch (const Error&) {
    return nullptr;
  }
}

}  // namespace

json kernel_view(const Profile& p, const Params& params) {
  analysis::KernelQuery q;
  q.kernel = string_param(params, "name", 512);
  if (auto it = params.find("op"); it != params.end()) q.op = it->second.substr(0, 512);
  analysis::KernelProfile k = or_404([&] { return analysis::kernel_profile(p.trace(), q, p.label()); });
  json j = analysis::kernel_profile_json(k);
  // Per file: the lines to show (hot lines and the instructions' lines, with context).
  std::map<std::string, std::map<int, int64_t>> wanted;  // file -> line -> samples
  std::map<std::string, std::string> path_of;
  for (const analysis::HotLine& l : k.source) {
    wanted[l.file][l.line] += l.samples;
    if (!l.path.empty()) path_of[l.file] = l.path;
  }
  for (const analysis::KernelInstruction& in : k.instructions)
    if (!in.file.empty() && in.line > 0) wanted[in.file].try_emplace(in.line, 0);
  json files = json::array();
  for (auto& [file, lines] : wanted) {
    auto pit = path_of.find(file);
    std::string path = pit != path_of.end() ? pit->second : debuginfo::find_source(file, "");
    auto text = path.empty() ? nullptr : debuginfo::source_lines(path);
    std::vector<int> shown;
    for (auto& [line, n] : lines)
      for (int l = std::max(1, line - kContext); l <= line + kContext; ++l) shown.push_back(l);
    std::sort(shown.begin(), shown.end());
    shown.erase(std::unique(shown.begin(), shown.end()), shown.end());
    if (shown.size() > size_t(kMaxFileLines)) shown.resize(size_t(kMaxFileLines));
    json rows = json::array();
    for (int l : shown) {
      if (text && size_t(l) > text->size()) break;
      auto s = lines.find(l);
      rows.push_back({{"line", l}, {"text", text ? (*text)[size_t(l) - 1] : ""}, {"samples", s == lines.end() ? 0 : s->second}});
    }
    files.push_back({{"file", file}, {"found", text != nullptr}, {"lines", rows}});
  }
  j["files"] = files;
  j["static"] = compiled_code(p, q.kernel);
  return j;
}

json samples_view(const Profile& p, const Params& params) {
  const prof::Trace& t = p.trace();
  int64_t t0 = int_param(params, "t0", 0, INT64_MIN / 2, INT64_MAX / 2);
  int64_t t1 = int_param(params, "t1", INT64_MAX / 4, INT64_MIN / 2, INT64_MAX / 2);
  int64_t max = int_param(params, "max", 20000, 1, 200000);
  if (t1 < t0) throw ApiError(400, "t1 must not be before t0");
  analysis::SampleOwners owners(t);
  auto lo = std::lower_bound(t.samples.begin(), t.samples.end(), t0, [](const prof::Sample& s, int64_t x) { return s.t < x; });
  auto hi = std::upper_bound(lo, t.samples.end(), t1, [](int64_t x, const prof::Sample& s) { return x < s.t; });
  int64_t n = hi - lo;
  int64_t stride = std::max<int64_t>(1, (n + max - 1) / max);
  std::map<std::string, int> ops, fns;
  auto index = [](std::map<std::string, int>& m, const std::string& s) {
    return m.try_emplace(s, int(m.size())).first->second;
  };
  json ts = json::array(), tracks = json::array(), op = json::array(), fn = json::array();
  for (auto it = lo; it < hi; it += stride) {
    ts.push_back(it->t);
    tracks.push_back(it->track);
    op.push_back(index(ops, owners.op(it->launch)));
    fn.push_back(index(fns, t.code_sites[size_t(it->site)].function));
    if (hi - it <= stride) break;
  }
  auto names = [](const std::map<std::string, int>& m) {
    std::vector<std::string> v(m.size());
    for (auto& [s, i] : m) v[size_t(i)] = s;
    return v;
  };
  return {{"count", n}, {"stride", stride}, {"t", ts}, {"track", tracks}, {"op", op}, {"function", fn},
          {"ops", names(ops)}, {"functions", names(fns)}, {"sampling", analysis::sampling_summary(analysis::sampling_info(t))}};
}

json lines_view(const Profile& p, const Params& params) {
  int64_t limit = int_param(params, "limit", 50, 1, 10000);
  analysis::LineAverages l = or_404([&] { return analysis::line_averages(p.trace(), "lines", p.label()); });
  if (int64_t(l.rows.size()) > limit) l.rows.resize(size_t(limit));
  return l.json();
}

}  // namespace opscope::explorer::api
