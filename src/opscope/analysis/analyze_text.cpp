// TraceAnalysis::text: each analysis as a table, one row per rank, then the spread
// across ranks (min, median, max, each with its rank) and the slowest rank.
#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "opscope/analysis/analyze.h"
#include "opscope/analysis/analyze_figures.h"
#include "opscope/analysis/text_out.h"

namespace opscope::analysis {

namespace {

// A table: the first column left-aligned, the others right-aligned.
class Table {
 public:
  explicit Table(std::vector<std::string> head) { rows_.push_back(std::move(head)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string str() const {
    std::vector<size_t> w;
    for (const auto& r : rows_)
      for (size_t c = 0; c < r.size(); ++c) {
        if (w.size() <= c) w.push_back(0);
        w[c] = std::max(w[c], width(r[c]));
      }
    std::string out;
    for (const auto& r : rows_) {
      std::string line;
      for (size_t c = 0; c < r.size(); ++c) {
        std::string pad(w[c] - width(r[c]), ' ');
        line += c == 0 ? r[c] + pad : "  " + pad + r[c];
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
    return out;
  }

 private:
  // Display width: UTF-8 continuation bytes take no column (µ, −).
  static size_t width(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  }
  std::vector<std::vector<std::string>> rows_;
};

std::string rank_name(int64_t r) { return r < 0 ? "all" : fmt::format("{}", r); }

using Row = std::function<std::vector<std::string>(const RankAnalysis&)>;

// Rows per rank, then min / median / max of the figures (ranks with 2 or more).
std::string ranks_table(const TraceAnalysis& a, bool device, std::vector<std::string> head, const Row& row,
                        const std::function<Figures(const RankAnalysis&)>& figs, const std::vector<std::string>& shown) {
  Table t(std::move(head));
  std::vector<std::pair<int64_t, Figures>> per;
  for (const RankAnalysis& r : a.ranks) {
    if (device && !r.has_device) continue;
    std::vector<std::string> cells = {rank_name(r.rank)};
    for (std::string& c : row(r)) cells.push_back(std::move(c));
    t.add(std::move(cells));
    per.emplace_back(r.rank, figs(r));
  }
  if (per.size() >= 2) {
    auto s = spread(per);
    for (const char* which : {"min", "median", "max"}) {
      std::vector<std::string> cells = {which};
      for (const std::string& key : shown) {
        auto it = std::find_if(s.begin(), s.end(), [&](auto& p) { return p.first == key; });
        if (it == s.end()) {
          cells.push_back("");
          continue;
        }
        const Spread& x = it->second;
        std::string w = which;
        int64_t v = w == "min" ? x.min : w == "median" ? x.median : x.max;
        std::string text = key.size() > 3 && key.compare(key.size() - 3, 3, "_ns") == 0 ? human_ns(v) : fmt::format("{}", v);
        if (w != "median") text += fmt::format(" (r{})", w == "min" ? x.min_rank : x.max_rank);
        cells.push_back(text);
      }
      t.add(std::move(cells));
    }
  }
  return t.str();
}

}  // namespace

std::string TraceAnalysis::text() const {
  const TraceAnalysis& a = *this;
  std::string out;
  std::vector<std::string> ranks;
  for (const RankAnalysis& r : a.ranks) ranks.push_back(rank_name(r.rank));
  out += fmt::format("opscope analyze {}: {} rank{}; each rank's span runs from its first to its last device event\n",
                     source, a.ranks.size(), a.ranks.size() == 1 ? "" : "s");
  for (const std::string& w : warnings) out += "warning: " + w + "\n";
  const bool device = has_device();
  if (device) {
    out += "\nTemporal breakdown (idle: no device work; compute: COMP work; non-compute: COMM and MEM work outside it)\n";
    out += ranks_table(
        a, true, {"rank", "span", "idle", "", "compute", "", "non-compute", ""},
        [](const RankAnalysis& r) -> std::vector<std::string> {
          const Temporal& t = r.temporal;
          return {human_ns(t.span_ns), human_ns(t.idle_ns), pct_text(t.idle_ns, t.span_ns), human_ns(t.compute_ns),
                  pct_text(t.compute_ns, t.span_ns), human_ns(t.non_compute_ns), pct_text(t.non_compute_ns, t.span_ns)};
        },
        [](const RankAnalysis& r) { return temporal_figures(r.temporal); },
        {"span_ns", "idle_ns", "", "compute_ns", "", "non_compute_ns", ""});
    if (const RankAnalysis* s = slowest()) {
      const int64_t med = median_work_ns();
      out += fmt::format("slowest rank: {} — {} on its own work (span − idle − exposed communication) against a median "
                         "of {} ({:+.1f}%)\n",
                         s->rank, human_ns(s->work_ns()), human_ns(med),
                         med > 0 ? 100.0 * double(s->work_ns() - med) / double(med) : 0.0);
    }

    out += fmt::format("\nIdle time (host wait: nothing queued; kernel wait: queued, gap under {}; other: waiting on "
                       "something else)\n",
                       human_ns(options.kernel_wait_ns));
    out += ranks_table(
        a, true, {"rank", "idle", "host wait", "", "kernel wait", "", "other", ""},
        [](const RankAnalysis& r) -> std::vector<std::string> {
          const IdleSplit& d = r.idle.device;
          const int64_t all = d.total_ns();
          return {human_ns(all), human_ns(d.of(IdleKind::host_wait)), pct_text(d.of(IdleKind::host_wait), all),
                  human_ns(d.of(IdleKind::kernel_wait)), pct_text(d.of(IdleKind::kernel_wait), all),
                  human_ns(d.of(IdleKind::other)), pct_text(d.of(IdleKind::other), all)};
        },
        [](const RankAnalysis& r) { return idle_figures(r.idle); },
        {"idle_ns", "host_wait_ns", "", "kernel_wait_ns", "", "other_ns", ""});

    out += "\nKernels by kind (device time summed over the work; COMM / COMP / MEM by name)\n";
    out += ranks_table(
        a, true, {"rank", "COMP", "", "COMM", "", "MEM", "", "kernels"},
        [](const RankAnalysis& r) -> std::vector<std::string> {
          const KernelBreakdown& k = r.kernels;
          const int64_t all = k.total_ns();
          int64_t n = k.kind_count[0] + k.kind_count[1] + k.kind_count[2];
          return {human_ns(k.of(KernelKind::comp)), pct_text(k.of(KernelKind::comp), all), human_ns(k.of(KernelKind::comm)),
                  pct_text(k.of(KernelKind::comm), all), human_ns(k.of(KernelKind::mem)), pct_text(k.of(KernelKind::mem), all),
                  fmt::format("{}", n)};
        },
        [](const RankAnalysis& r) { return kernel_figures(r.kernels); },
        {"comp_ns", "", "comm_ns", "", "mem_ns", "", ""});
    std::vector<const RankAnalysis*> with_device;
    for (const RankAnalysis& r : a.ranks)
      if (r.has_device) with_device.push_back(&r);
    auto cut = [](const std::string& s) { return s.size() > 70 ? s.substr(0, 67) + "..." : s; };
    if (with_device.size() == 1) {
      Table t({"top kernels", "kind", "count", "total", "mean", "min", "max"});
      const KernelBreakdown& k = with_device.front()->kernels;
      for (size_t i = 0; i < k.kernels.size() && int(i) < options.top_kernels; ++i) {
        const KernelStat& s = k.kernels[i];
        t.add({cut(s.name), kernel_kind_name(s.kind), fmt::format("{}", s.count), human_ns(s.total_ns),
               human_ns(s.mean_ns()), human_ns(s.min_ns), human_ns(s.max_ns)});
      }
      out += t.str();
    } else if (!with_device.empty()) {
      Table t({"top kernels (total per rank)", "kind", "min", "median", "max", "slowest"});
      for (const KernelSpread& s : kernel_spread(with_device, size_t(options.top_kernels)))
        t.add({cut(s.name), kernel_kind_name(s.kind), human_ns(s.total.min), human_ns(s.total.median),
               human_ns(s.total.max), fmt::format("rank {}", s.total.max_rank)});
      out += t.str();
    }

    out += "\nCommunication / computation overlap (overlap: COMM time with COMP running; exposed: the rest)\n";
    out += ranks_table(
        a, true, {"rank", "comm", "compute", "overlap", "ratio", "exposed"},
        [](const RankAnalysis& r) -> std::vector<std::string> {
          const Overlap& o = r.overlap;
          return {human_ns(o.comm_ns), human_ns(o.compute_ns), human_ns(o.overlap_ns),
                  o.comm_ns ? fmt::format("{:.1f}%", 100 * o.ratio()) : "-", human_ns(o.exposed_ns)};
        },
        [](const RankAnalysis& r) { return overlap_figures(r.overlap); },
        {"comm_ns", "compute_ns", "overlap_ns", "", "exposed_ns"});

    out += "\nLaunches (delay: the call's end to the work's start; shorter: work that ran shorter than its call)\n";
    out += ranks_table(
        a, true, {"rank", "launches", "delay p50", "p90", "p99", "max", "call p50", "work p50", "shorter", "outliers"},
        [](const RankAnalysis& r) -> std::vector<std::string> {
          const LaunchStats& l = r.launches;
          return {fmt::format("{}", l.launches), human_ns(l.delay_p50_ns), human_ns(l.delay_p90_ns),
                  human_ns(l.delay_p99_ns), human_ns(l.delay_max_ns), human_ns(l.cpu_p50_ns), human_ns(l.gpu_p50_ns),
                  fmt::format("{} ({})", l.shorter_than_launch, pct_text(l.shorter_than_launch, l.launches)),
                  fmt::format("{} call, {} delay", l.runtime_outliers, l.delay_outliers)};
        },
        [](const RankAnalysis& r) { return launch_figures(r.launches); },
        {"launches", "delay_p50_ns", "delay_p90_ns", "delay_p99_ns", "delay_max_ns", "cpu_p50_ns", "gpu_p50_ns",
         "shorter_than_launch", ""});

    out += "\nQueue length per stream (launched, not yet started)\n";
    Table q({"rank", "stream", "launches", "max", "mean", "at 1024"});
    for (const RankAnalysis& r : a.ranks)
      for (const StreamQueue& s : r.queue_lengths.streams)
        q.add({rank_name(r.rank), r.queues[size_t(s.queue)], fmt::format("{}", s.launches), fmt::format("{}", s.max_length),
               fmt::format("{:.1f}", s.mean_length), human_ns(s.full_ns)});
    out += q.str();

    out += "\nCritical path of one iteration (the median ProfilerStep)\n";
    out += ranks_table(
        a, true, {"rank", "iteration", "length", "bound", "compute", "comm", "memory", "cpu", "launch delay", "kernel gap", "sync+wait"},
        [](const RankAnalysis& r) -> std::vector<std::string> {
          const CriticalPath& c = r.critical_path;
          return {c.iteration ? c.step : "whole span (no ProfilerStep)", human_ns(c.length_ns), c.bound(),
                  human_ns(c.of(PathKind::compute)), human_ns(c.of(PathKind::communication)),
                  human_ns(c.of(PathKind::memory)), human_ns(c.of(PathKind::cpu)), human_ns(c.of(PathKind::launch_delay)),
                  human_ns(c.of(PathKind::kernel_gap)), human_ns(c.of(PathKind::sync) + c.of(PathKind::wait))};
        },
        [](const RankAnalysis& r) { return path_figures(r.critical_path); },
        {"", "length_ns", "", "compute_ns", "communication_ns", "memory_ns", "cpu_ns", "launch_delay_ns",
         "kernel_gap_ns", ""});
  }

  out += "\nHost (busy: the busiest host thread inside framework ops)\n";
  out += ranks_table(
      a, false, {"rank", "span", "busy", "", "idle", "launch calls", "in calls"},
      [](const RankAnalysis& r) -> std::vector<std::string> {
        const HostTime& h = r.host;
        return {human_ns(h.span_ns), human_ns(h.busy_ns), pct_text(h.busy_ns, h.span_ns), human_ns(h.idle_ns),
                fmt::format("{}", h.launch_calls), human_ns(h.launch_call_ns)};
      },
      [](const RankAnalysis& r) { return host_figures(r.host); }, {"span_ns", "busy_ns", "", "idle_ns", "launch_calls", "launch_call_ns"});

  if (options.per_step && device) {
    out += "\nPer step (the work each ProfilerStep launched)\n";
    Table t({"rank", "step", "span", "idle", "compute", "non-compute", "host wait", "exposed comm", "launches"});
    for (const RankAnalysis& r : a.ranks)
      for (const StepAnalysis& s : r.per_step)
        t.add({rank_name(r.rank), s.name, human_ns(s.temporal.span_ns), human_ns(s.temporal.idle_ns),
               human_ns(s.temporal.compute_ns), human_ns(s.temporal.non_compute_ns),
               human_ns(s.idle.device.of(IdleKind::host_wait)), human_ns(s.overlap.exposed_ns),
               fmt::format("{}", s.launches.launches)});
    out += t.str();
  }
  return out;
}

}  // namespace opscope::analysis
