#include "opscope/analysis/advisor/findings.h"

#include "opscope/analysis/analyze_figures.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

namespace opscope::advisor {

namespace {

using analysis::human_ns;
using analysis::IdleKind;
using analysis::RankAnalysis;
using analysis::TraceAnalysis;

std::string share(double part, double whole) { return whole > 0 ? fmt::format("{:.0f}%", 100 * part / whole) : "-"; }

// "rank 3" / "the device"; "rank 3's" / "the trace's" (a trace without ranks).
std::string rank_text(const RankAnalysis& r) { return r.rank < 0 ? "the device" : fmt::format("rank {}", r.rank); }
std::string owner(const RankAnalysis& r) { return r.rank < 0 ? "the trace's" : fmt::format("rank {}'s", r.rank); }
std::string capital(std::string s) {
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = char(s[0] - 'a' + 'A');
  return s;
}

// Evidence every finding carries: which rank and where to look.
void where(Finding& f, const RankAnalysis& r, int64_t t0, int64_t t1) {
  f.rank = r.rank;
  f.t0 = t0, f.t1 = t1;
  if (r.rank >= 0) f.evidence.insert(f.evidence.begin(), {"rank", fmt::format("{}", r.rank)});
  if (!r.source.empty()) f.evidence.push_back({"trace", r.source});
  f.evidence.push_back({"time", fmt::format("{} to {} in the trace", human_ns(t0), human_ns(t1))});
}

// The rank's iteration (its critical path's step) when there is one, else its span.
void where_iteration(Finding& f, const RankAnalysis& r) {
  const analysis::CriticalPath& c = r.critical_path;
  if (c.iteration) where(f, r, c.t0, c.t1);
  else where(f, r, r.temporal.t0, r.temporal.t1);
}

// The step where `of` is largest, as evidence ("ProfilerStep#4: 1.2 ms").
template <class F>
void worst_step(Finding& f, const RankAnalysis& r, F&& of, const char* label) {
  const analysis::StepAnalysis* worst = nullptr;
  for (const auto& s : r.per_step)
    if (!worst || of(s) > of(*worst)) worst = &s;
  if (worst && of(*worst) > 0) f.evidence.push_back({label, fmt::format("{}: {}", worst->name, human_ns(of(*worst)))});
}

// The rank with the largest `score` among those with device work, if it passes `keep`.
template <class S>
const RankAnalysis* pick(const TraceAnalysis& a, S&& score) {
  const RankAnalysis* best = nullptr;
  for (const RankAnalysis& r : a.ranks)
    if (r.has_device && (!best || score(r) > score(*best))) best = &r;
  return best;
}

double host_wait_share(const RankAnalysis& r) {
  return r.temporal.span_ns ? double(r.idle.device.of(IdleKind::host_wait)) / double(r.temporal.span_ns) : 0;
}

std::optional<Finding> host_bound(const TraceAnalysis& a) {
  const RankAnalysis* r = pick(a, host_wait_share);
  if (!r || r->idle.device.gaps[size_t(IdleKind::host_wait)] < 2 || host_wait_share(*r) < kSignificantShare) return {};
  const analysis::IdleSplit& d = r->idle.device;
  const int64_t wait = d.of(IdleKind::host_wait);
  Finding f;
  f.kind = "host_bound";
  f.title = "Host-bound: the device waits for launches";
  f.detail = fmt::format(
      "{} device waits on the host for {} of its {} span ({}), in {} gaps between kernels while the host is still "
      "launching the next one.",
      capital(owner(*r)), human_ns(wait), human_ns(r->temporal.span_ns), share(double(wait), double(r->temporal.span_ns)),
      d.gaps[size_t(IdleKind::host_wait)]);
  f.fix = r->gpu ? "replay the step as a CUDA graph (torch.compile(mode=\"reduce-overhead\"), torch.cuda.graphs) so "
                   "the host stops launching each kernel; fuse or compile the sequences above to launch fewer; a "
                   "larger batch gives each launch more work"
                 : "fewer launches cut it (fuse or compile the sequences above), and so do larger batches (more work "
                   "per launch)";
  f.impact_ns = double(wait);
  f.evidence.push_back({"host wait", fmt::format("{} in {} gaps ({} of the span)", human_ns(wait),
                                                 d.gaps[size_t(IdleKind::host_wait)],
                                                 share(double(wait), double(r->temporal.span_ns)))});
  // The stream that waits most often (a communication stream's few long waits between
  // steps are not where launches stall).
  const size_t hw = size_t(IdleKind::host_wait);
  const analysis::StreamIdle* s = nullptr;
  for (const auto& x : r->idle.streams)
    if (!s || x.split.gaps[hw] > s->split.gaps[hw]) s = &x;
  if (s) f.evidence.push_back({"stream", fmt::format("{}: {} waiting for the host in {} gaps", r->queues[size_t(s->queue)],
                                                     human_ns(s->split.of(IdleKind::host_wait)), s->split.gaps[hw])});
  worst_step(f, *r, [](const analysis::StepAnalysis& x) { return x.idle.device.of(IdleKind::host_wait); }, "step");
  const size_t k = size_t(IdleKind::host_wait);
  f.evidence.push_back({"longest gap", human_ns(d.longest_t1[k] - d.longest_t0[k])});
  where(f, *r, d.longest_t0[k], d.longest_t1[k]);
  return f;
}

double shorter_share(const RankAnalysis& r) {
  return r.launches.launches ? double(r.launches.shorter_than_launch) / double(r.launches.launches) : 0;
}

std::optional<Finding> launch_bound(const TraceAnalysis& a) {
  const RankAnalysis* r = pick(a, shorter_share);
  if (!r || r->launches.launches < 20 || shorter_share(*r) < 0.5) return {};
  const analysis::IdleSplit& d = r->idle.device;
  const int64_t overhead = d.of(IdleKind::host_wait) + d.of(IdleKind::kernel_wait);
  if (double(overhead) < kSignificantShare * double(r->temporal.span_ns)) return {};
  const analysis::LaunchStats& l = r->launches;
  Finding f;
  f.kind = "launch_bound";
  f.title = "Launch-bound: kernels run shorter than their launches";
  f.detail = fmt::format(
      "{} of {} {} kernels ({}) run shorter on the device than the call that launches them takes on the host "
      "(median call {}, median kernel {}); its device idles {} between kernels.",
      l.shorter_than_launch, owner(*r), l.launches, share(double(l.shorter_than_launch), double(l.launches)),
      human_ns(l.cpu_p50_ns), human_ns(l.gpu_p50_ns), human_ns(overhead));
  f.fix = r->gpu ? "launch the step at once as a CUDA graph (torch.compile(mode=\"reduce-overhead\")); fuse or compile "
                   "the small ops into fewer, longer kernels; a larger batch makes each kernel outlast its launch"
                 : "fuse or compile the small ops into fewer launches; a larger batch gives each launch more work";
  f.impact_ns = double(std::min(overhead, std::max<int64_t>(0, l.shorter_cpu_ns - l.shorter_gpu_ns)));
  f.evidence.push_back({"shorter than their launch", fmt::format("{} of {} kernels: {} on the device, {} in their calls",
                                                                 l.shorter_than_launch, l.launches,
                                                                 human_ns(l.shorter_gpu_ns), human_ns(l.shorter_cpu_ns))});
  f.evidence.push_back({"idle between kernels", fmt::format("{} host wait, {} kernel wait",
                                                            human_ns(d.of(IdleKind::host_wait)),
                                                            human_ns(d.of(IdleKind::kernel_wait)))});
  worst_step(f, *r, [](const analysis::StepAnalysis& x) { return x.launches.shorter_than_launch; }, "step (kernels)");
  where_iteration(f, *r);
  return f;
}

std::optional<Finding> comm_exposed(const TraceAnalysis& a) {
  const RankAnalysis* r = pick(a, [](const RankAnalysis& x) { return x.overlap.exposed_ns; });
  if (!r || r->overlap.comm_ns <= 0 || r->overlap.ratio() >= 0.5 ||
      double(r->overlap.exposed_ns) < kSignificantShare * double(r->temporal.span_ns))
    return {};
  const analysis::Overlap& o = r->overlap;
  Finding f;
  f.kind = "comm_exposed";
  f.title = "Communication exposed: collectives run with nothing to hide them";
  f.detail = fmt::format(
      "{} communicates for {}, of which only {} ({}) runs beside computation: {} ({} of the span) the step waits for "
      "its collectives in full.",
      capital(rank_text(*r)), human_ns(o.comm_ns), human_ns(o.overlap_ns), share(double(o.overlap_ns), double(o.comm_ns)),
      human_ns(o.exposed_ns), share(double(o.exposed_ns), double(r->temporal.span_ns)));
  f.fix = "overlap the collectives with computation: with DDP, a smaller bucket_cap_mb starts each all-reduce as soon "
          "as its gradients are ready; FSDP prefetches the next all-gather (forward_prefetch, backward_prefetch); in "
          "tensor-parallel inference, run the all-reduce on its own stream beside the next layer's matmul (async "
          "collectives) or as a fused GEMM + all-reduce";
  f.impact_ns = double(o.exposed_ns);
  f.evidence.push_back({"overlap", fmt::format("{} of {} communication ({})", human_ns(o.overlap_ns), human_ns(o.comm_ns),
                                               share(double(o.overlap_ns), double(o.comm_ns)))});
  f.evidence.push_back({"exposed", fmt::format("{}, the longest stretch {}", human_ns(o.exposed_ns),
                                               human_ns(o.exposed_t1 - o.exposed_t0))});
  worst_step(f, *r, [](const analysis::StepAnalysis& x) { return x.overlap.exposed_ns; }, "step");
  where(f, *r, o.exposed_t0, o.exposed_t1);
  return f;
}

std::optional<Finding> straggler(const TraceAnalysis& a) {
  const RankAnalysis* s = a.slowest();
  const int64_t median = a.median_work_ns();
  if (!s || median <= 0 || double(s->work_ns()) < 1.1 * double(median)) return {};
  Finding f;
  f.kind = "straggler";
  f.title = fmt::format("Straggler: rank {} does the most work; the others wait for it", s->rank);
  // The rank that waits longest in its collectives.
  const RankAnalysis* waits = pick(a, [&](const RankAnalysis& x) { return &x == s ? -1 : x.overlap.exposed_ns; });
  f.detail = fmt::format(
      "Rank {}'s device spends {} on its own work (its span less idle time and exposed communication) against a "
      "median of {} (+{:.0f}%); in a collective the other ranks wait for it{}.",
      s->rank, human_ns(s->work_ns()), human_ns(median), 100.0 * double(s->work_ns() - median) / double(median),
      waits && waits != s ? fmt::format(" (rank {} waits {} in communication)", waits->rank, human_ns(waits->overlap.exposed_ns))
                          : "");
  f.fix = "balance the ranks' work (uneven batches or sequence lengths; data loading or preprocessing on that rank's "
          "host), and check that rank's GPU (clocks, thermal throttling, another process on it)";
  f.impact_ns = double(s->work_ns() - median);
  f.evidence.push_back({"its own work", fmt::format("{} vs a median of {}", human_ns(s->work_ns()), human_ns(median))});
  // The kernel whose time on this rank stands out most from the median rank's.
  std::vector<const RankAnalysis*> with_device;
  for (const RankAnalysis& r : a.ranks)
    if (r.has_device) with_device.push_back(&r);
  const analysis::KernelSpread* worst = nullptr;
  std::vector<analysis::KernelSpread> spread = analysis::kernel_spread(with_device, 50);
  for (const auto& k : spread)
    if (k.total.max_rank == s->rank && (!worst || k.total.max - k.total.median > worst->total.max - worst->total.median))
      worst = &k;
  if (worst)
    f.evidence.push_back({"kernel", fmt::format("{}: {} on rank {}, median {}", worst->name, human_ns(worst->total.max),
                                                s->rank, human_ns(worst->total.median))});
  where_iteration(f, *s);
  return f;
}

std::optional<Finding> small_kernels(const TraceAnalysis& a) {
  struct Small {
    int64_t count = 0, all = 0, ns = 0, total_ns = 0;
    std::vector<const analysis::KernelStat*> names;
  };
  auto small_of = [](const RankAnalysis& r) {
    Small s;
    for (const analysis::KernelStat& k : r.kernels.kernels) {
      s.all += k.count;
      s.total_ns += k.total_ns;
      if (k.mean_ns() >= kSmallKernelNs) continue;
      s.count += k.count, s.ns += k.total_ns;
      s.names.push_back(&k);
    }
    return s;
  };
  const RankAnalysis* r = pick(a, [&](const RankAnalysis& x) {
    Small s = small_of(x);
    return s.all ? double(s.count) / double(s.all) : 0.0;
  });
  if (!r) return {};
  Small s = small_of(*r);
  if (s.count < 50 || double(s.count) < 0.5 * double(s.all)) return {};
  std::stable_sort(s.names.begin(), s.names.end(), [](auto* x, auto* y) { return x->count > y->count; });
  std::vector<std::string> top;
  for (size_t i = 0; i < s.names.size() && i < 3; ++i)
    top.push_back(fmt::format("{} ×{} (mean {})", s.names[i]->name.size() > 60 ? s.names[i]->name.substr(0, 57) + "..."
                                                                                 : s.names[i]->name,
                              s.names[i]->count, human_ns(s.names[i]->mean_ns())));
  Finding f;
  f.kind = "small_kernels";
  f.title = "Small kernels: most kernels do little work each";
  f.detail = fmt::format("{} of {} {} kernels ({}) average under {}; together they take {} ({} of its device time), "
                         "each paying a launch's fixed cost for little work.",
                         s.count, owner(*r), s.all, share(double(s.count), double(s.all)), human_ns(kSmallKernelNs),
                         human_ns(s.ns), share(double(s.ns), double(s.total_ns)));
  f.fix = r->gpu ? "a larger batch (more work per kernel); fuse or compile the elementwise ops into fewer kernels; CUDA "
                   "graphs remove what each launch costs the host"
                 : "a larger batch (more work per launch); fuse or compile the small ops into fewer kernels";
  f.impact_ns = double(std::min(s.ns, r->idle.device.of(IdleKind::host_wait) + r->idle.device.of(IdleKind::kernel_wait)));
  f.evidence.push_back({"small kernels", fmt::format("{} of {} under {} on average", s.count, s.all, human_ns(kSmallKernelNs))});
  f.evidence.push_back({"most launched", fmt::format("{}", fmt::join(top, "; "))});
  where(f, *r, r->temporal.t0, r->temporal.t1);
  return f;
}

using Rule = std::optional<Finding> (*)(const TraceAnalysis&);
constexpr Rule kRules[] = {host_bound, launch_bound, comm_exposed, straggler, small_kernels};

}  // namespace

std::vector<Finding> trace_findings(const TraceAnalysis& a) {
  std::vector<Finding> out;
  for (Rule rule : kRules)
    if (std::optional<Finding> f = rule(a)) out.push_back(std::move(*f));
  std::stable_sort(out.begin(), out.end(), [](const Finding& x, const Finding& y) { return x.impact_ns > y.impact_ns; });
  return out;
}

HostWait worst_host_wait(const TraceAnalysis& a) {
  HostWait w;
  const RankAnalysis* r = pick(a, host_wait_share);
  if (!r) return w;
  w.idle_ns = r->idle.device.of(IdleKind::host_wait);
  w.gaps = r->idle.device.gaps[size_t(IdleKind::host_wait)];
  w.span_ns = r->temporal.span_ns;
  return w;
}

}  // namespace opscope::advisor
