#include "opscope/analysis/line_averages.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "opscope/analysis/text_out.h"
#include "opscope/debuginfo/source_text.h"

namespace opscope::analysis {

LineAverages line_averages(const Trace& trace, std::string_view what, std::string_view source) {
  require_samples(trace, what, source);
  SampleOwners owners(trace);
  LineAverages out;
  out.sampling = sampling_info(trace);
  out.total_samples = int64_t(trace.samples.size());
  // Key: file, line (or function when there is no line), kernel, op.
  std::map<std::tuple<std::string, int, std::string, std::string, std::string>, LineAverage> rows;
  for (const prof::Sample& s : trace.samples) {
    const prof::CodeSite& site = trace.code_sites[size_t(s.site)];
    std::string fn = site.function.empty() ? "[unknown]" : site.function;
    const std::string& kernel = owners.kernel(s.launch);
    const std::string& op = owners.op(s.launch);
    auto key = std::make_tuple(site.file, site.line, site.file.empty() ? fn : std::string(), kernel, op);
    LineAverage& r = rows[key];
    if (r.samples++ == 0) {
      r.file = site.file;
      r.line = site.line;
      r.function = fn;
      r.kernel = kernel;
      r.op = op;
      if (!site.file.empty()) {
        const std::string& mod = site.module >= 0 && size_t(site.module) < trace.code_modules.size()
                                     ? trace.code_modules[size_t(site.module)].path
                                     : std::string();
        std::string path = debuginfo::find_source(site.file, mod);
        if (!path.empty()) r.text = debuginfo::source_line(path, site.line);
      }
    }
  }
  double per_sample = out.total_samples ? double(owners.sampled_kernel_ns()) / double(out.total_samples) : 0;
  for (auto& [key, r] : rows) {
    r.share = double(r.samples) / double(out.total_samples);
    r.est_ns = double(r.samples) * per_sample;
    out.rows.push_back(std::move(r));
  }
  std::stable_sort(out.rows.begin(), out.rows.end(), [](auto& a, auto& b) { return a.samples > b.samples; });
  return out;
}

namespace {

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b);
}

std::string cut(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

// "file:line" within `width`: leading folders give way first (".../cpu/norm.cpp:120"), so
// the file's name and its line number always show.
std::string short_place(const LineAverage& r, size_t width) {
  if (r.file.empty()) return cut(r.function, width);
  std::string place = fmt::format("{}:{}", r.file, r.line);
  if (place.size() <= width) return place;
  for (size_t slash = place.find('/'); slash != std::string::npos; slash = place.find('/', slash + 1))
    if (place.size() - slash + 3 <= width) return "..." + place.substr(slash);
  return "..." + place.substr(place.size() - (width - 3));
}

}  // namespace

std::string LineAverages::table(int64_t row_limit) const {
  std::string out;
  put(out, "Hottest source lines: {} samples inside kernels ({})\n", total_samples, sampling_summary(sampling));
  put(out, "{:>7} {:>8} {:>10}  {:<40} {:<28} {:<18} {}\n", "Share", "Samples", "Est. time", "Line", "Kernel", "Op", "Source");
  int64_t n = 0;
  for (const LineAverage& r : rows) {
    if (row_limit > 0 && n++ >= row_limit) break;
    std::string t = r.est_ns >= 1e6 ? fmt::format("{:.2f}ms", r.est_ns / 1e6) : fmt::format("{:.1f}us", r.est_ns / 1e3);
    put(out, "{:>6.1f}% {:>8} {:>10}  {:<40} {:<28} {:<18} {}\n", 100 * r.share, r.samples, t, short_place(r, 40),
      cut(r.kernel, 28), cut(r.op.empty() ? "-" : r.op, 18), cut(trim(r.text), 60));
  }
  if (row_limit > 0 && int64_t(rows.size()) > row_limit) put(out, "({} more lines; --row-limit 0 shows all)\n", int64_t(rows.size()) - row_limit);
  return out;
}

nlohmann::json LineAverages::json() const {
  nlohmann::json j;
  j["sampling"] = {{"event", sampling.event}, {"rate_hz", sampling.rate_hz}, {"lost", sampling.lost},
                   {"dropped", sampling.dropped}, {"outside_kernels", sampling.outside_kernels}};
  j["total_samples"] = total_samples;
  j["rows"] = nlohmann::json::array();
  for (const LineAverage& r : rows)
    j["rows"].push_back({{"file", r.file}, {"line", r.line}, {"function", r.function}, {"kernel", r.kernel},
                         {"op", r.op}, {"samples", r.samples}, {"share", r.share}, {"est_ns", r.est_ns},
                         {"text", r.text}});
  return j;
}

}  // namespace opscope::analysis
