#include "opscope/analysis/advisor/advise.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "opscope/analysis/advisor/op_kinds.h"
#include "opscope/analysis/advisor/patterns.h"
#include "opscope/analysis/advisor/pricing.h"
#include "opscope/analysis/advisor/region_kernels.h"
#include "opscope/analysis/roofline.h"
#include "opscope/core/error.h"

namespace opscope::advisor {

using prof::EventKind;
using prof::TraceEvent;

namespace {

struct Op {
  const TraceEvent* ev;
  int64_t device_ns = 0, bytes = 0, launches = 0, out_bytes = 0;
  int64_t fanned = 0;  // launches that ran on more than one core
  int64_t slices = 0;  // their slices: one per core a launch ran on
  uint64_t range = 0;  // the innermost enclosing range instance: a chain ends where it does
};

// An output of `p` bytes (from its allocation, rounded up to the caching allocator's
// 512 B or 2 MiB blocks) can be the input of `b` bytes.
bool same_block(int64_t p, int64_t b) {
  if (p == b) return true;
  int64_t slack = p <= (int64_t(1) << 20) ? 512 : (int64_t(2) << 20);
  return p > b && p - b < slack;
}

}  // namespace

Advice advise(const prof::Trace& trace, const AdviseOptions& options) {
  if (!options.pattern.empty() && options.pattern.size() < 2)
    fail("advise", "a pattern needs at least 2 ops (got {})", options.pattern.size());
  if (options.min_ops < 2) fail("advise", "min_ops must be at least 2 (got {})", options.min_ops);
  Advice adv;
  const analysis::Peaks peaks = options.peaks ? *options.peaks : analysis::profile_peaks(trace);
  analysis::Roofline roof = peaks.roofline();
  if (options.peak_gbps > 0) {
    roof.peak_gbps = options.peak_gbps;
    roof.levels.clear();
  }
  adv.peak_gbps = roof.peak_gbps;
  const std::map<std::string, double>& math_ns = peaks.fused_math_ns;

  // Framework scopes by id, launches as spans of their slices.
  std::unordered_map<uint64_t, const TraceEvent*> scopes;
  struct Launch {
    int64_t t0 = INT64_MAX, t1 = INT64_MIN, bytes = 0, slice_bytes = 0, submit = INT64_MIN, slices = 0, flops = 0;
    uint64_t op = 0;
    bool has_launch = false;
  };
  std::unordered_map<uint64_t, Launch> launches;
  std::unordered_map<uint64_t, int64_t> alloc_bytes;  // op id → bytes it allocated
  bool any_shapes = false;
  for (const TraceEvent& e : trace.events) {
    switch (e.kind) {
      case EventKind::op:
      case EventKind::range:
        scopes[e.id] = &e;
        any_shapes = any_shapes || (!e.shapes.empty() && e.kind == EventKind::op);
        break;
      case EventKind::launch: {
        Launch& l = launches[e.id];
        l.bytes = e.bytes;
        l.flops = e.flops;
        l.op = e.parent;
        l.has_launch = true;
        l.submit = e.t1;
        break;
      }
      case EventKind::kernel: {
        Launch& l = launches[e.id];
        l.t0 = std::min(l.t0, e.t0);
        l.t1 = std::max(l.t1, e.t1);
        l.slice_bytes += e.bytes;
        l.slices++;
        if (!l.op) l.op = e.parent;
        break;
      }
      case EventKind::alloc:
        if (e.parent) alloc_bytes[e.parent] += e.bytes;
        break;
      default: break;
    }
  }
  if (scopes.empty()) fail("advise", "the profile has no framework ops (was the framework layer recorded?)");

  // Each op's own launches, counted at its top-level op (an op not inside another op).
  auto top_op = [&](uint64_t id) -> uint64_t {
    uint64_t top = 0;
    for (int steps = 0; id && steps < 4096; ++steps) {
      auto it = scopes.find(id);
      if (it == scopes.end()) break;
      if (it->second->kind == EventKind::op) top = id;
      id = it->second->parent;
    }
    return top;
  };
  std::unordered_map<uint64_t, Op> ops;
  struct Sample { double span, bytes; bool fanned, streaming; };
  std::vector<Sample> small;  // launches, for the launch cost
  std::vector<const Launch*> ran;
  for (auto& [id, l] : launches) {
    if (l.t1 < l.t0) continue;  // no slice on a traced core
    int64_t span = l.t1 - l.t0, bytes = l.has_launch ? l.bytes : l.slice_bytes;
    adv.total_device_ns += span;
    adv.kernels++;
    ran.push_back(&l);
    small.push_back({double(span), double(bytes), l.slices > 1, l.flops <= bytes});
    uint64_t top = top_op(l.op);
    if (!top) continue;
    Op& o = ops[top];
    o.ev = scopes[top];
    o.device_ns += span;
    o.bytes += bytes;
    o.launches++;
    o.fanned += l.slices > 1;
    o.slices += l.slices;
  }
  if (adv.total_device_ns == 0 || adv.kernels == 0)
    fail("advise", "the profile has no device time (were the runtime and device layers recorded?)");
  if (adv.kernels == 1)
    fail("advise", "the profile has a single kernel launch: there is no sequence to fuse and no gap between kernels");
  for (auto& [id, o] : ops)
    if (auto it = alloc_bytes.find(id); it != alloc_bytes.end()) o.out_bytes = it->second;
  if (!any_shapes)
    adv.warnings.push_back("no input shapes (record_shapes off): the bytes of fused kernels are rough guesses");
  if (roof.peak_gbps <= 0)
    adv.warnings.push_back("the profile carries no device peaks: fused kernels are priced at the best rate their "
                           "own ops reached");
  else if (roof.spread > 0.15)
    adv.warnings.push_back(fmt::format("the device probe's repetitions differed by {:.0f}% (a busy machine): its "
                                       "rates, and the predictions priced with them, read low",
                                       100 * roof.spread));

  // The streaming rate of a kernel moving `ws` bytes (pricing.h): the probe's at that
  // size, else (no peaks) `fallback`.
  auto rate_at = [&](double ws, double fallback) { return roof.peak_gbps > 0 ? kernel_store_gbps(roof, ws) : fallback; };

  // Launch cost: the fixed part of a launch's device time. Each launch's span less its
  // bytes at the rate for their size leaves that part; the median over small launches
  // (under 256 KiB, where it dominates) is the estimate. A launch fanned out over several
  // cores pays more (waking and joining them): its own cost, from launches under 4 MiB.
  double best_seen = 0;
  for (const Sample& m : small)
    if (m.span > 0) best_seen = std::max(best_seen, m.bytes / m.span);
  auto fixed_part = [&](const Sample& m) {
    double bw = rate_at(m.bytes, best_seen);
    return std::max(0.0, m.span - (bw > 0 ? m.bytes / bw : 0));
  };
  std::string rate_text = roof.peak_gbps > 0 ? "the probe's rate for their size" : fmt::format("{:.1f} GB/s", best_seen);
  std::vector<double> fixed, fixed_fanned;
  for (const Sample& m : small) {
    if (!m.fanned && m.bytes < 256 * 1024) fixed.push_back(fixed_part(m));
    // Streaming launches only: a matmul's time past its bytes is its math.
    if (m.fanned && m.streaming && m.bytes < 4 * 1024 * 1024) fixed_fanned.push_back(fixed_part(m));
  }
  if (fixed.size() >= 8) {
    adv.launch_cost_ns = median(fixed);
    adv.launch_cost_from =
        fmt::format("median over {} one-core launches under 256 KiB of (device time − bytes at {})", fixed.size(),
                    rate_text);
  } else {
    std::vector<double> all;
    for (const Sample& m : small) all.push_back(fixed_part(m));
    std::sort(all.begin(), all.end());
    adv.launch_cost_ns = all.empty() ? 0 : all[all.size() / 10];
    adv.launch_cost_from = fmt::format(
        "10th percentile over {} launches of (device time − bytes at {}); few small launches to fit", all.size(),
        rate_text);
  }
  adv.fanout_cost_ns = adv.launch_cost_ns;
  if (fixed_fanned.size() >= 4) {
    adv.fanout_cost_ns = std::max(adv.launch_cost_ns, median(fixed_fanned));
    adv.launch_cost_from += fmt::format("; {:.0f} ns on several cores (median over {} streaming launches under 4 MiB)",
                                        adv.fanout_cost_ns, fixed_fanned.size());
  }
  const double c = adv.launch_cost_ns, cf = adv.fanout_cost_ns;
  auto fixed_of = [&](const Op* o) { return double(o->launches - o->fanned) * c + double(o->fanned) * cf; };

  // Idle time the host caused: a gap in which no kernel ran, ended by a launch the host
  // submitted after the gap began (the device had nothing queued).
  {
    std::sort(ran.begin(), ran.end(), [](const Launch* a, const Launch* b) { return a->t0 < b->t0; });
    HostWait& w = adv.host_wait;
    int64_t end = ran.front()->t1;
    w.span_ns = ran.back()->t1 - ran.front()->t0;
    for (size_t i = 1; i < ran.size(); ++i) {
      const Launch& l = *ran[i];
      if (l.t0 > end && l.submit > end) {
        w.idle_ns += l.t0 - end;
        w.gaps++;
      }
      end = std::max(end, l.t1);
      w.span_ns = std::max(w.span_ns, end - ran.front()->t0);
    }
  }

  // The ranges enclosing a scope, outermost first.
  auto context_of = [&](const TraceEvent* e) {
    std::vector<std::string_view> path;
    for (uint64_t id = e->parent; id && path.size() < 64;) {
      auto it = scopes.find(id);
      if (it == scopes.end()) break;
      if (it->second->kind == EventKind::range) path.push_back(it->second->name);
      id = it->second->parent;
    }
    std::reverse(path.begin(), path.end());
    return path;
  };
  auto innermost_range = [&](const TraceEvent* e) -> uint64_t {
    for (uint64_t id = e->parent; id;) {
      auto it = scopes.find(id);
      if (it == scopes.end()) break;
      if (it->second->kind == EventKind::range) return id;
      id = it->second->parent;
    }
    return 0;
  };

  // Top-level ops per host thread, in time order; chains of fusable launching ops (ops
  // without launches, such as views, are not in `ops` and do not break a chain).
  // With options.within, each op's innermost enclosing scope of that name (0: none).
  std::unordered_map<const Op*, uint64_t> region_of;
  auto region = [&](const Op& o) -> uint64_t {
    for (uint64_t id = o.ev->parent; id;) {
      auto it = scopes.find(id);
      if (it == scopes.end()) break;
      if (it->second->name == options.within) return id;
      id = it->second->parent;
    }
    return 0;
  };
  std::map<int32_t, std::vector<Op*>> by_track;
  for (auto& [id, o] : ops) {
    if (!options.within.empty()) {
      uint64_t r = region(o);
      if (!r) continue;
      region_of[&o] = r;
    }
    o.range = innermost_range(o.ev);
    by_track[o.ev->track].push_back(&o);
  }
  // A chain's suggestion: its pattern and the ranges enclosing all its ops.
  struct Key {
    std::string pattern, context, scope;
  };
  auto key_of = [&](const std::vector<const Op*>& chain) {
    std::vector<std::string_view> ctx = context_of(chain.front()->ev);
    for (const Op* o : chain) {
      std::vector<std::string_view> other = context_of(o->ev);
      size_t k = 0;
      while (k < ctx.size() && k < other.size() && ctx[k] == other[k]) ++k;
      ctx.resize(k);
    }
    Key key;
    for (auto s : ctx) key.context += (key.context.empty() ? "" : "/") + generalize(s);
    for (const Op* o : chain) key.pattern += (key.pattern.empty() ? "" : " → ") + o->ev->name;
    key.scope = ctx.empty() ? "" : std::string(ctx.back());
    return key;
  };
  // The fused kernel walks the chain's domain (its largest input) as the ops over that
  // domain did: an operand broadcast along rows makes a row loop, a transposed view a
  // strided one. So it streams no faster than those streaming ops moved their bytes
  // past their launch cost (a broadcast add ran at 75% of the probe's rate; the fused
  // scale-mask kernel, the same loop, ran at the add's). The rate of op i of a chain,
  // 0 for an op that does not count: one off the domain, a math op or a reduction (its
  // time is its math, or its sums along each row, not its loop's streaming: bounded by
  // an in-cache mean, RMSNorm 32x4096 realized 15-186% more than predicted), one
  // shorter than its launch cost (its rest is noise around that cost).
  auto domain_rate = [&](const std::vector<const Op*>& chain, size_t i) {
    int64_t domain = 0;
    for (const Op* o : chain) domain = std::max(domain, largest_input_numel(o->ev->shapes));
    const Op* o = chain[i];
    if (math_op(o->ev->name) || reduction(o->ev->name) || domain == 0 ||
        largest_input_numel(o->ev->shapes) != domain)
      return 0.0;
    double work = double(o->device_ns) - fixed_of(o);
    if (work < fixed_of(o) || work <= 0 || o->bytes <= 0) return 0.0;
    return double(o->bytes) / work;
  };
  std::map<std::pair<std::string, std::string>, Suggestion> groups;
  std::unordered_map<const Suggestion*, std::vector<double>> saved_of;  // per occurrence
  // One occurrence of a suggestion, priced; `bound`: the rate its ops over the domain
  // reached (0: none), `bound_op` the op that reached it.
  auto process = [&](const std::vector<const Op*>& chain, const std::string& next, double bound,
                     const std::string& bound_op) {
    std::vector<std::string> names;
    int64_t dev = 0, bytes = 0, n = 0;
    for (const Op* o : chain) {
      names.push_back(o->ev->name);
      dev += o->device_ns;
      bytes += o->bytes;
      n += o->launches;
    }
    const KnownOp* known = known_op(names, next);
    // What a fused kernel moves: inputs from outside the chain, and the last output. A
    // known norm or softmax streams its input once: an external input of a size read
    // before the chain's reduction, read again after it, is that row, still in cache.
    int64_t fused = 0;
    std::vector<std::pair<int64_t, bool>> produced;  // output bytes, read yet
    std::vector<int64_t> before_reduction;          // external inputs read before it
    bool reduced = false;
    for (const Op* o : chain) {
      std::vector<int64_t> in = input_bytes(o->ev->shapes);
      std::vector<int64_t> external;
      for (int64_t b : in) {
        auto it = std::find_if(produced.rbegin(), produced.rend(),
                               [&](auto& p) { return !p.second && same_block(p.first, b); });
        if (it != produced.rend()) {
          it->second = true;  // the chain's own intermediate
        } else if (std::find(external.begin(), external.end(), b) == external.end()) {
          external.push_back(b);  // x * x reads x once
          bool reread = known && known->row_reuse && reduced &&
                        std::find(before_reduction.begin(), before_reduction.end(), b) != before_reduction.end();
          if (!reread) fused += b;
          if (!reduced) before_reduction.push_back(b);
        }
      }
      // Elementwise results have the broadcast inputs' size; a reduction's is what it
      // allocated (rounded up to the allocator's block).
      int64_t out = 0;
      if (!in.empty() && !reduction(o->ev->name)) out = *std::max_element(in.begin(), in.end());
      else out = o->out_bytes ? o->out_bytes : o->bytes / 3;
      produced.emplace_back(out, false);
      reduced = reduced || reduction(o->ev->name);
    }
    fused += produced.back().first;
    if (!any_shapes) fused = std::max(fused, bytes / int64_t(chain.size()));
    // Without probe peaks: the best rate any op of the chain reached past its fixed cost.
    double best_op = 0;
    bool fans = false;
    for (const Op* o : chain) {
      fans = fans || o->fanned > 0;
      double work = std::max(double(o->device_ns) - fixed_of(o), 0.1 * double(o->device_ns));
      if (work > 0) best_op = std::max(best_op, double(o->bytes) / work);
    }
    // Each op took c + max(bytes / rate, compute) per launch, at the rate for its own
    // working set; a math op's rest past its bytes is compute. The fused kernel still
    // does the math, overlapped with its streaming:  fused = c + max(fused bytes / rate,
    // Σ compute). Its math is the generated code's (compiler/math_probe, carried by the
    // peaks) where measured: not the eager kernel's code, and not its time.
    double compute = 0;
    std::vector<std::string> generated;
    for (const Op* o : chain) {
      if (!math_op(o->ev->name)) continue;  // streaming ops: their time is their bytes
      const int64_t elems = largest_input_numel(o->ev->shapes);
      auto m = math_ns.find(std::string(base_op(o->ev->name)));
      if (m != math_ns.end() && elems > 0) {
        double cores = o->launches ? std::max(1.0, double(o->slices) / double(o->launches)) : 1.0;
        compute += double(elems) * m->second / cores;
        generated.push_back(fmt::format("{} {:.2f} ns", base_op(o->ev->name), m->second));
        continue;
      }
      double work = std::max(double(o->device_ns) - fixed_of(o), 0.0);
      double per_launch = o->launches ? double(o->bytes) / double(o->launches) : 0;
      double bw = rate_at(per_launch, best_op);
      compute += std::max(0.0, work - (bw > 0 ? double(o->bytes) / bw : 0));
    }
    double rate = rate_at(double(fused), best_op);
    const bool op_bound = bound > 0 && (rate <= 0 || bound < rate);
    if (op_bound) rate = bound;
    double fused_ns = (fans ? cf : c) + std::max(rate > 0 ? double(fused) / rate : 0, compute);
    double saved = std::clamp(double(dev) - fused_ns, 0.0, double(dev));

    const Key key = key_of(chain);
    Suggestion& g = groups[{key.pattern, key.context}];
    if (!g.occurrences) {
      g.ops = names;
      g.pattern = key.pattern;
      g.context = key.context;
      g.scope = key.scope;
      g.kind = classify(names);
      if (known) {
        g.known_op = known->name;
        g.fix = known->fix;
      } else {
        g.fix = g.scope.empty() ? "compile the function that runs these ops"
                                : fmt::format("compile the region '{}' (one generated kernel)", g.scope);
      }
      for (const Op* o : chain) g.example_ops.push_back(o->ev->id);
      if (op_bound)
        g.rate_from = fmt::format("the rate the chain's {} reached over the same domain (the kernel walks it alike)",
                                  bound_op);
      else if (roof.peak_gbps <= 0) g.rate_from = "the best rate its ops reached (no device peaks in the profile)";
      else if (double(fused) >= (roof.levels.empty() ? 0 : roof.levels.back().working_set))
        g.rate_from = fmt::format("the probe's streaming rate beyond the caches ({} working set)", format_bytes(double(fused)));
      else
        g.rate_from = fmt::format("the probe's streaming rate at a {} working set (in cache)", format_bytes(double(fused)));
      g.bandwidth_gbps = rate;
      if (!generated.empty())
        g.math_from = fmt::format("math at the generated code's cost per element and core ({})", fmt::join(generated, ", "));
    }
    g.occurrences++;
    g.compute_ns += compute;
    g.launches += n;
    g.device_ns += dev;
    g.bytes += bytes;
    g.fused_bytes += fused;
    saved_of[&g].push_back(saved);
  };
  // The chains found, by suggestion (pattern, context), with the op after each.
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<std::vector<const Op*>, std::string>>> found;
  auto collect = [&](const std::vector<const Op*>& chain, const std::string& next) {
    Key key = key_of(chain);
    found[{key.pattern, key.context}].emplace_back(chain, next);
  };
  // A chain, or with options.pattern each place the pattern occurs in it.
  auto close = [&](std::vector<const Op*>& chain, const std::string& next) {
    const auto& pat = options.pattern;
    if (pat.empty()) {
      if (int(chain.size()) >= options.min_ops) collect(chain, next);
    } else {
      for (size_t i = 0; i + pat.size() <= chain.size();) {
        bool match = true;
        for (size_t k = 0; k < pat.size() && match; ++k) match = base_op(chain[i + k]->ev->name) == pat[k];
        if (!match) {
          ++i;
          continue;
        }
        std::vector<const Op*> sub(chain.begin() + long(i), chain.begin() + long(i + pat.size()));
        collect(sub, i + pat.size() == chain.size() ? next : chain[i + pat.size()]->ev->name);
        i += pat.size();
      }
    }
    chain.clear();
  };
  for (auto& [track, list] : by_track) {
    std::sort(list.begin(), list.end(), [](const Op* a, const Op* b) { return a->ev->t0 < b->ev->t0; });
    std::vector<const Op*> chain;
    for (const Op* o : list) {
      // A chain ends at its range's end (each call, step, module) and at an op that
      // cannot fuse.
      if (!chain.empty() && (o->range != chain.front()->range ||
                             (!options.within.empty() && region_of[o] != region_of[chain.front()])))
        close(chain, "");
      if (fusable_op(o->ev->name)) chain.push_back(o);
      else close(chain, o->ev->name);
    }
    close(chain, "");
  }
  // Each suggestion's domain bound: per op, its fastest occurrence (a launch the OS
  // preempted for another process reads slower, never faster); the slowest such op.
  for (auto& [key, chains] : found) {
    double bound = 0;
    std::string bound_op;
    for (size_t i = 0; i < chains.front().first.size(); ++i) {
      double best = 0;
      for (auto& [chain, next] : chains) best = std::max(best, domain_rate(chain, i));
      if (best > 0 && (bound == 0 || best < bound)) {
        bound = best;
        bound_op = std::string(base_op(chains.front().first[i]->ev->name));
      }
    }
    for (auto& [chain, next] : chains) process(chain, next, bound, bound_op);
  }
  // Occurrences × the median occurrence's saving (a launch the OS preempted for another
  // process would otherwise add its wait to the prediction), at most their sum.
  for (auto& [key, g] : groups) {
    const std::vector<double>& saved = saved_of[&g];
    double sum = 0;
    for (double v : saved) sum += v;
    g.predicted_saved_ns = std::min(sum, double(g.occurrences) * median(saved));
    adv.suggestions.push_back(std::move(g));
  }
  std::sort(adv.suggestions.begin(), adv.suggestions.end(), [](const Suggestion& a, const Suggestion& b) {
    return a.predicted_saved_ns != b.predicted_saved_ns ? a.predicted_saved_ns > b.predicted_saved_ns
                                                        : a.pattern < b.pattern;
  });
  if (trace.dropped) adv.warnings.push_back(fmt::format("{} events were dropped: times undercount", trace.dropped));
  return adv;
}

}  // namespace opscope::advisor
