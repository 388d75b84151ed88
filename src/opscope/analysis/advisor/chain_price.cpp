#include "opscope/analysis/advisor/chain_price.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <unordered_map>

#include "opscope/analysis/advisor/op_kinds.h"
#include "opscope/analysis/advisor/patterns.h"
#include "opscope/analysis/advisor/pricing.h"
#include "opscope/analysis/advisor/region_kernels.h"

namespace opscope::advisor {

double stream_rate(const analysis::Roofline& roof, double ws, double fallback) {
  return roof.peak_gbps > 0 ? kernel_store_gbps(roof, ws) : fallback;
}

double PricingContext::fixed_of(const Op* o) const {
  return double(o->launches - o->fanned) * cost.one_core_ns + double(o->fanned) * cost.fanout_ns;
}

namespace {

// What one transcendental or division costs a GPU per element, in f32 flops (a few
// special-function or Newton steps).
constexpr double kGpuMathFlops = 20;

// An output of `p` bytes (from its allocation, rounded up to the caching allocator's
// 512 B or 2 MiB blocks) can be the input of `b` bytes.
bool same_block(int64_t p, int64_t b) {
  if (p == b) return true;
  int64_t slack = p <= (int64_t(1) << 20) ? 512 : (int64_t(2) << 20);
  return p > b && p - b < slack;
}

// The idle time between a chain's kernels on their streams, each gap up to `cap`
// (`first`: the kernel before the chain, for an epilogue).
int64_t kernel_gaps(const Chain& c, int64_t cap) {
  std::vector<const LaunchSpan*> k;
  if (c.epilogue_of && !c.epilogue_of->kernels.empty()) k.push_back(c.epilogue_of->kernels.back());
  for (const Op* o : c.ops) k.insert(k.end(), o->kernels.begin(), o->kernels.end());
  std::sort(k.begin(), k.end(), [](const LaunchSpan* a, const LaunchSpan* b) { return a->t0 < b->t0; });
  int64_t gaps = 0;
  for (size_t i = 1; i < k.size(); ++i)
    if (k[i]->stream >= 0 && k[i]->stream == k[i - 1]->stream) gaps += std::clamp(k[i]->t0 - k[i - 1]->t1, int64_t(0), cap);
  return gaps;
}

// The fused kernel walks the chain's domain (its largest input) as the ops over that
// domain did: an operand broadcast along rows makes a row loop, a transposed view a
// strided one. So it streams no faster than those streaming ops moved their bytes past
// their launch cost (a broadcast add ran at 75% of the probe's rate; the fused
// scale-mask kernel, the same loop, ran at the add's). The rate of op i of a chain, 0
// for an op that does not count: one off the domain, a math op or a reduction (its time
// is its math, or its sums along each row, not its loop's streaming: bounded by an
// in-cache mean, RMSNorm 32x4096 realized 15-186% more than predicted), one shorter
// than its launch cost (its rest is noise around that cost).
double domain_rate(const PricingContext& ctx, const std::vector<const Op*>& chain, size_t i) {
  int64_t domain = 0;
  for (const Op* o : chain) domain = std::max(domain, largest_input_numel(o->ev->shapes));
  const Op* o = chain[i];
  if (math_op(o->ev->name) || reduction(o->ev->name) || domain == 0 || largest_input_numel(o->ev->shapes) != domain)
    return 0.0;
  double work = double(o->device_ns) - ctx.fixed_of(o);
  if (work < ctx.fixed_of(o) || work <= 0 || o->bytes <= 0) return 0.0;
  return double(o->bytes) / work;
}

// What one place a chain runs costs now and fused.
struct Occurrence {
  std::vector<std::string> names;
  int64_t dev = 0, bytes = 0, launches = 0, fused = 0, gaps = 0;
  double compute = 0, rate = 0, saved = 0;
  bool op_bound = false;
  const KnownOp* known = nullptr;
  std::vector<std::string> generated;  // math ops priced with generated code
};

// What a fused kernel moves: inputs from outside the chain, and the last output. A
// known norm or softmax streams its input once: an external input of a size read
// before the chain's reduction, read again after it, is that row, still in cache. An
// input is the chain's own intermediate when an earlier op produced a tensor of that
// size not yet read (shapes, not tensor identities: needs record_shapes).
int64_t fused_bytes(const std::vector<const Op*>& chain, const KnownOp* known) {
  int64_t fused = 0;
  std::vector<std::pair<int64_t, bool>> produced;  // output bytes, read yet
  std::vector<int64_t> before_reduction;          // external inputs read before it
  bool reduced = false;
  for (const Op* o : chain) {
    std::vector<int64_t> in = input_bytes(o->ev->shapes);
    std::vector<int64_t> external;
    for (int64_t b : in) {
      auto it = std::find_if(produced.rbegin(), produced.rend(), [&](auto& p) { return !p.second && same_block(p.first, b); });
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
  return fused + produced.back().first;
}

Occurrence price(const PricingContext& ctx, const Chain& c, double bound) {
  const double cost = ctx.cost.one_core_ns, fan_cost = ctx.cost.fanout_ns;
  Occurrence x;
  for (const Op* o : c.ops) {
    x.names.push_back(o->ev->name);
    x.dev += o->device_ns;
    x.bytes += o->bytes;
    x.launches += o->launches;
  }
  if (ctx.ops.gpu) x.gaps = kernel_gaps(c, ctx.kernel_wait_ns);
  if (c.epilogue_of) {  // the epilogue's kernels and their gaps go away whole
    x.saved = double(x.dev + x.gaps);
    return x;
  }
  x.known = known_op(x.names, c.next);
  x.fused = fused_bytes(c.ops, x.known);
  if (!ctx.ops.any_shapes) x.fused = std::max(x.fused, x.bytes / int64_t(c.ops.size()));
  // Without peaks: the best rate any op of the chain reached past its fixed cost.
  double best_op = 0;
  bool fans = false;
  for (const Op* o : c.ops) {
    fans = fans || o->fanned > 0;
    double work = std::max(double(o->device_ns) - ctx.fixed_of(o), 0.1 * double(o->device_ns));
    if (work > 0) best_op = std::max(best_op, double(o->bytes) / work);
  }
  // Each op took c + max(bytes / rate, compute) per launch, at the rate for its own
  // working set; a math op's rest past its bytes is compute. The fused kernel still
  // does the math, overlapped with its streaming: fused = c + max(fused bytes / rate,
  // Σ compute). Its math is the generated code's (compiler/math_probe, carried by the
  // peaks) where measured: not the eager kernel's code, and not its time.
  for (const Op* o : c.ops) {
    if (!math_op(o->ev->name)) continue;  // streaming ops: their time is their bytes
    const int64_t elems = largest_input_numel(o->ev->shapes);
    auto m = ctx.peaks.fused_math_ns.find(std::string(base_op(o->ev->name)));
    if (m != ctx.peaks.fused_math_ns.end() && elems > 0) {
      double cores = o->launches ? std::max(1.0, double(o->slices) / double(o->launches)) : 1.0;
      x.compute += double(elems) * m->second / cores;
      x.generated.push_back(fmt::format("{} {:.2f} ns", base_op(o->ev->name), m->second));
      continue;
    }
    if (ctx.ops.gpu) {
      // A GPU's elementwise math runs at its f32 rate, far past its memory: an eager
      // kernel's time past its launch cost there is the small kernel's overhead, which a
      // fused kernel does not inherit.
      const double gflops = ctx.peaks.f32_gflops > 0 ? ctx.peaks.f32_gflops : ctx.peaks.compute_gflops;
      if (gflops > 0 && elems > 0) x.compute += double(elems) * kGpuMathFlops / gflops;
      continue;
    }
    double work = std::max(double(o->device_ns) - ctx.fixed_of(o), 0.0);
    double per_launch = o->launches ? double(o->bytes) / double(o->launches) : 0;
    double bw = ctx.rate_at(per_launch, best_op);
    x.compute += std::max(0.0, work - (bw > 0 ? double(o->bytes) / bw : 0));
  }
  x.rate = ctx.rate_at(double(x.fused), best_op);
  x.op_bound = bound > 0 && (x.rate <= 0 || bound < x.rate);
  if (x.op_bound) x.rate = bound;
  double fused_ns = (fans ? fan_cost : cost) + std::max(x.rate > 0 ? double(x.fused) / x.rate : 0, x.compute);
  x.saved = std::clamp(double(x.dev + x.gaps) - fused_ns, 0.0, double(x.dev + x.gaps));
  return x;
}

// Where a suggestion's rate came from.
std::string rate_from(const PricingContext& ctx, const Occurrence& x, const std::string& bound_op) {
  const analysis::Roofline& roof = ctx.roof;
  if (x.op_bound)
    return fmt::format("the rate the chain's {} reached over the same domain (the kernel walks it alike)", bound_op);
  if (roof.peak_gbps <= 0) return "the best rate its ops reached (no device peaks in the profile)";
  if (ctx.peaks.datasheet())
    return fmt::format("the {} datasheet bandwidth ({} working set)", ctx.peaks.model.empty() ? "GPU's" : ctx.peaks.model,
                       format_bytes(double(x.fused)));
  if (double(x.fused) >= (roof.levels.empty() ? 0 : roof.levels.back().working_set))
    return fmt::format("the probe's streaming rate beyond the caches ({} working set)", format_bytes(double(x.fused)));
  return fmt::format("the probe's streaming rate at a {} working set (in cache)", format_bytes(double(x.fused)));
}

}  // namespace

std::vector<Suggestion> price_chains(const FoundChains& found, const PricingContext& ctx) {
  std::vector<Suggestion> out;
  for (auto& [key, chains] : found) {
    // The domain bound: per op, its fastest occurrence (a launch the OS preempted for
    // another process reads slower, never faster); the slowest such op.
    double bound = 0;
    std::string bound_op;
    for (size_t i = 0; i < chains.front().ops.size() && !chains.front().epilogue_of; ++i) {
      double best = 0;
      for (const Chain& c : chains) best = std::max(best, domain_rate(ctx, c.ops, i));
      if (best > 0 && (bound == 0 || best < bound)) {
        bound = best;
        bound_op = std::string(base_op(chains.front().ops[i]->ev->name));
      }
    }
    Suggestion g;
    std::vector<double> saved;
    for (const Chain& c : chains) {
      Occurrence x = price(ctx, c, bound);
      if (!g.occurrences) {
        const ChainKey k = chain_key(ctx.ops, c);
        g.ops = x.names;
        if (c.epilogue_of) g.ops.insert(g.ops.begin(), c.epilogue_of->ev->name);
        g.pattern = k.pattern;
        g.context = k.context;
        g.scope = k.scope;
        g.kind = c.epilogue_of ? "epilogue" : classify(x.names);
        if (c.epilogue_of) {
          g.known_op = "matmul epilogue";
          g.fix = "fuse the bias and activation into the matmul's epilogue: torch.compile (Inductor's matmul templates), "
                  "cuBLASLt's epilogues, or nn.Linear with its bias";
          g.rate_from = "an epilogue moves nothing more: the matmul finishes its tile before writing it once";
        } else {
          if (x.known) {
            g.known_op = x.known->name;
            g.fix = x.known->fix;
          } else {
            g.fix = g.scope.empty() ? "compile the function that runs these ops"
                                    : fmt::format("compile the region '{}' (one generated kernel)", g.scope);
          }
          g.rate_from = rate_from(ctx, x, bound_op);
        }
        for (const Op* o : c.ops) g.example_ops.push_back(o->ev->id);
        g.bandwidth_gbps = x.rate;
        if (!x.generated.empty())
          g.math_from = fmt::format("math at the generated code's cost per element and core ({})", fmt::join(x.generated, ", "));
        else if (ctx.ops.gpu)
          g.math_from = fmt::format("math at the GPU's f32 rate, {:.0f} flops an element", kGpuMathFlops);
      }
      g.occurrences++;
      g.compute_ns += x.compute;
      g.launches += x.launches;
      g.device_ns += x.dev;
      g.gaps_ns += x.gaps;
      g.bytes += x.bytes;
      g.fused_bytes += x.fused;
      saved.push_back(x.saved);
    }
    double sum = 0;
    for (double v : saved) sum += v;
    g.predicted_saved_ns = std::min(sum, double(g.occurrences) * median(saved));
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace opscope::advisor
