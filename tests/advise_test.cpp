// The fusion advisor: chains found on hand-built traces (what breaks a chain, what does
// not, contexts, ranking) and on a real profile of the op-by-op RMSNorm, where the bytes
// a fused kernel would move are known exactly.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "opscope/analysis/advisor/advise.h"
#include "opscope/analysis/advisor/patterns.h"
#include "opscope/cases/rmsnorm.h"
#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/record_function.h"
#include "opscope/profiler/session.h"
#include "opscope/runtime/device.h"
#include "trace_util.h"

using namespace opscope;
using namespace opscope::prof;
using namespace opscope::analysis;

namespace {

struct Builder {
  Trace t;
  uint64_t next = 1;
  int64_t clock = 0;
  uint64_t scope(EventKind k, const std::string& name, uint64_t parent, const std::string& shapes = "") {
    TraceEvent e;
    e.kind = k;
    e.name = name;
    e.id = next++;
    e.parent = parent;
    e.t0 = clock;
    e.t1 = clock + 10;
    e.shapes = shapes;
    t.events.push_back(e);
    return e.id;
  }
  // An op with one launch of `ns` device time moving `bytes`, allocating `out` bytes.
  uint64_t op(const std::string& name, uint64_t parent, int64_t ns, int64_t bytes, const std::string& shapes,
              int64_t out) {
    clock += 20;
    uint64_t id = scope(EventKind::op, name, parent, shapes);
    TraceEvent a;
    a.kind = EventKind::alloc;
    a.parent = id;
    a.bytes = out;
    a.t0 = a.t1 = clock;
    t.events.push_back(a);
    TraceEvent l;
    l.kind = EventKind::launch;
    l.name = name + "_f32";
    l.id = 1000 + next;
    l.parent = id;
    l.bytes = bytes;
    t.events.push_back(l);
    TraceEvent k = l;
    k.kind = EventKind::kernel;
    k.t0 = 100000 + clock * 100;
    k.t1 = k.t0 + ns;
    k.track = 1;
    t.events.push_back(k);
    return id;
  }
  uint64_t view(const std::string& name, uint64_t parent) {
    clock += 20;
    return scope(EventKind::op, name, parent);
  }
};

}  // namespace

TEST(Advise, ChainsBreakAtOpsThatNeverFuseAndNotAtViews) {
  Builder b;
  b.t.tracks.resize(2);
  uint64_t layer0 = b.scope(EventKind::range, "layers.0", 0);
  uint64_t mlp = b.scope(EventKind::range, "mlp", layer0);
  b.op("matmul", mlp, 50000, 1 << 20, "[(8, 64) f32, (64, 128) f32]", 4096);
  b.op("silu", mlp, 2000, 8192, "[(8, 128) f32]", 4096);
  b.view("reshape", mlp);  // no launch: does not break the chain
  b.op("mul", mlp, 2000, 12288, "[(8, 128) f32, (8, 128) f32]", 4096);
  b.op("matmul", mlp, 50000, 1 << 20, "[(8, 128) f32, (128, 64) f32]", 2048);
  b.op("add", mlp, 1500, 6144, "[(8, 64) f32, (8, 64) f32]", 2048);  // alone: not a chain
  uint64_t layer1 = b.scope(EventKind::range, "layers.1", 0);
  uint64_t mlp1 = b.scope(EventKind::range, "mlp", layer1);
  b.op("matmul", mlp1, 50000, 1 << 20, "[(8, 64) f32, (64, 128) f32]", 4096);
  b.op("silu", mlp1, 2100, 8192, "[(8, 128) f32]", 4096);
  b.op("mul", mlp1, 1900, 12288, "[(8, 128) f32, (8, 128) f32]", 4096);
  for (int i = 0; i < 10; ++i) b.op("softmax", 0, 1000, 100, "[(5) f32]", 20);  // small launches fit the cost

  advisor::Advice a = advisor::advise(b.t);
  ASSERT_EQ(a.suggestions.size(), 1u) << a.table();
  const advisor::Suggestion& s = a.suggestions[0];
  EXPECT_EQ(s.pattern, "silu → mul");
  EXPECT_EQ(s.kind, "activation");
  EXPECT_EQ(s.context, "layers.N/mlp");  // both layers' chains grouped
  EXPECT_EQ(s.occurrences, 2);
  EXPECT_EQ(s.launches, 4);
  EXPECT_EQ(s.device_ns, 2000 + 2000 + 2100 + 1900);
  // Fused: silu's input (4096) + mul's other input (4096; the first is silu's output) + the output.
  EXPECT_EQ(s.fused_bytes, 2 * (4096 + 4096 + 4096));
  EXPECT_EQ(s.bytes, 2 * (8192 + 12288));
  EXPECT_GT(s.predicted_saved_ns, 0);
  EXPECT_LT(s.predicted_saved_ns, double(s.device_ns));
  // The fixed launch cost is fitted from the small launches: about their span.
  EXPECT_NEAR(a.launch_cost_ns, 1000, 50);
  // One launch is saved per occurrence at least.
  EXPECT_GE(s.predicted_saved_ns, 2 * a.launch_cost_ns - 1);
  EXPECT_NE(a.table().find("silu → mul"), std::string::npos) << a.table();
  EXPECT_NE(a.table().find("2 ops × 2 calls in layers.N/mlp"), std::string::npos) << a.table();
  EXPECT_EQ(s.known_op, "SiLU·mul (SwiGLU)");
  EXPECT_EQ(s.scope, "mlp");
  auto j = nlohmann::json::parse(a.to_json());
  EXPECT_EQ(j["suggestions"][0]["occurrences"], 2);
  EXPECT_EQ(j["suggestions"][0]["example_ops"].size(), 2u);
}

// The fused kernel is priced as a roofline: its streaming overlaps the compute its ops
// did. A compute-bound silu followed by a memory-bound mul: fusing saves the mul's
// time and silu's streaming, not silu's math.
TEST(Advise, FusedTimeIsARooflineOfStreamingAndCompute) {
  Builder b;
  b.t.tracks.resize(2);
  uint64_t mlp = b.scope(EventKind::range, "mlp", 0);
  // mul: 12288 B in 2000 ns, 1000 of them the launch cost → 12.288 GB/s, the chain's best.
  // silu: 8192 B in 11000 ns: 667 ns of streaming at that rate, 9333 ns of compute.
  b.op("silu", mlp, 11000, 8192, "[(8, 128) f32]", 4096);
  b.op("mul", mlp, 2000, 12288, "[(8, 128) f32, (8, 128) f32]", 4096);
  b.op("matmul", 0, 50000, 1 << 20, "[(8, 64) f32, (64, 128) f32]", 4096);
  for (int i = 0; i < 10; ++i) b.op("softmax", 0, 1000, 100, "[(5) f32]", 20);  // small launches fit the cost
  advisor::Advice a = advisor::advise(b.t);
  ASSERT_EQ(a.suggestions.size(), 1u) << a.table();
  const advisor::Suggestion& s = a.suggestions[0];
  ASSERT_NEAR(a.launch_cost_ns, 1000, 20);
  double c = a.launch_cost_ns, bw = 12288.0 / (2000 - c);
  double compute = (11000 - c) - 8192 / bw;
  // Fused: silu's input, mul's other input and the output stream in 12288 / bw ns,
  // overlapped with silu's compute, which is longer.
  ASSERT_EQ(s.fused_bytes, 12288);
  EXPECT_NEAR(s.predicted_saved_ns, 13000 - (c + compute), 1);
  EXPECT_GT(s.predicted_saved_ns, 2000);  // more than the mul alone: silu's streaming too
  EXPECT_LT(s.predicted_saved_ns, 3000);  // but none of silu's math
}

// `within` limits the advice to the ops inside scopes of one name (a compiled region's
// range) and ends a chain where its scope instance ends, even when the next op fuses.
TEST(Advise, WithinKeepsChainsInsideEachScopeInstance) {
  Builder b;
  b.t.tracks.resize(2);
  for (int i = 0; i < 2; ++i) {
    uint64_t r = b.scope(EventKind::range, "llama_swiglu", 0);
    b.op("silu", r, 3000, 8192, "[(8, 128) f32]", 4096);
    b.op("mul", r, 2000, 12288, "[(8, 128) f32, (8, 128) f32]", 4096);
  }
  b.op("add", 0, 2000, 12288, "[(8, 128) f32, (8, 128) f32]", 4096);  // outside: left out
  for (int i = 0; i < 10; ++i) b.op("softmax", 0, 1000, 100, "[(5) f32]", 20);
  advisor::Advice all = advisor::advise(b.t);
  ASSERT_EQ(all.suggestions.size(), 1u) << all.table();
  EXPECT_EQ(all.suggestions[0].pattern, "silu → mul");  // each range's own chain; the add outside is alone
  EXPECT_EQ(all.suggestions[0].occurrences, 2);
  advisor::AdviseOptions o;
  o.within = "llama_swiglu";
  advisor::Advice in = advisor::advise(b.t, o);
  ASSERT_EQ(in.suggestions.size(), 1u) << in.table();
  EXPECT_EQ(in.suggestions[0].pattern, "silu → mul");
  EXPECT_EQ(in.suggestions[0].occurrences, 2);
  EXPECT_EQ(in.suggestions[0].device_ns, 2 * 5000);
  o.within = "no_such_scope";
  EXPECT_TRUE(advisor::advise(b.t, o).suggestions.empty());
}

TEST(Advise, RefusesProfilesWithoutOpsOrDeviceTime) {
  auto msg = [](const Trace& t) {
    try {
      advisor::advise(t);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(msg(Trace{}).rfind("[advise] the profile has no framework ops", 0), 0u) << msg(Trace{});
  Builder b;
  b.scope(EventKind::op, "add", 0, "[(2) f32]");
  EXPECT_EQ(msg(b.t).rfind("[advise] the profile has no device time", 0), 0u) << msg(b.t);
  advisor::AdviseOptions o;
  o.min_ops = 1;
  EXPECT_THROW(advisor::advise(b.t, o), Error);
  Builder one;
  one.op("add", 0, 1000, 100, "[(5) f32, (5) f32]", 20);
  EXPECT_EQ(msg(one.t).rfind("[advise] the profile has a single kernel launch", 0), 0u) << msg(one.t);
}

TEST(Advise, FindsTheSixOpRmsNormInARealProfile) {
  const int64_t R = 64, H = 512;
  Tensor x = randn({R, H}, 0), w = rand({H}, 1);
  cases::naive_rms_norm(x, w);
  cpu().synchronize();
  ProfilerConfig cfg;
  cfg.record_shapes = true;
  Profiler p(cfg);
  p.start();
  for (int i = 0; i < 3; ++i) {
    RecordFunction r("rmsnorm naive");
    Tensor y = cases::naive_rms_norm(x, w);
    Tensor z = matmul(y, y.transpose(0, 1));  // ends the chain
  }
  cpu().synchronize();
  p.stop();
  advisor::Advice a = advisor::advise(p.trace());
  ASSERT_FALSE(a.suggestions.empty()) << a.table();
  const advisor::Suggestion& s = a.suggestions[0];
  EXPECT_EQ(s.pattern, "mul → mean → add → rsqrt → mul → mul") << a.table();
  EXPECT_EQ(s.kind, "norm");
  EXPECT_EQ(s.context, "rmsnorm naive");
  EXPECT_EQ(s.occurrences, 3);
  EXPECT_EQ(s.launches, 18);
  EXPECT_EQ(s.known_op, "RMSNorm");
  EXPECT_NE(s.fix.find("rms_norm"), std::string::npos) << s.fix;
  EXPECT_NE(s.fix.find("opscope.ops.rms_norm"), std::string::npos) << s.fix;
  // x once (the row x*r re-reads is still in cache), w and the output: 2·R·H + H floats per call.
  EXPECT_EQ(s.fused_bytes, 3 * 4 * (2 * R * H + H));
  EXPECT_GT(s.bytes, s.fused_bytes);
  EXPECT_GT(s.predicted_saved_ns, 0);
  for (const std::string& w : a.warnings) EXPECT_EQ(w.find("record_shapes"), std::string::npos) << w;
}

// A chain ends where its range does: five calls of the six ops, back to back with no
// other op between them, are five occurrences of one suggestion, not one 30-op chain.
TEST(Advise, ChainsEndAtRangeBoundariesAndRepeatsAreCounted) {
  Builder b;
  b.t.tracks.resize(2);
  const std::string x = "(64, 512) f32", r = "(64, 1) f32";
  for (int call = 0; call < 5; ++call) {
    uint64_t range = b.scope(EventKind::range, "rmsnorm naive", 0);
    b.op("mul", range, 20000, 3 * 131072, "[" + x + ", " + x + "]", 131072);
    b.op("mean", range, 8000, 131072, "[" + x + "]", 512);
    b.op("add", range, 1000, 512, "[" + r + "]", 512);
    b.op("rsqrt", range, 1000, 512, "[" + r + "]", 512);
    b.op("mul", range, 20000, 2 * 131072 + 256, "[" + x + ", " + r + "]", 131072);
    b.op("mul", range, 20000, 2 * 131072 + 2048, "[" + x + ", (512) f32]", 131072);
  }
  for (int i = 0; i < 10; ++i) b.op("softmax", 0, 1000, 100, "[(5) f32]", 20);
  advisor::Advice a = advisor::advise(b.t);
  ASSERT_EQ(a.suggestions.size(), 1u) << a.table();
  const advisor::Suggestion& s = a.suggestions[0];
  EXPECT_EQ(s.ops.size(), 6u);
  EXPECT_EQ(s.occurrences, 5);
  EXPECT_EQ(s.count_text(), "6 ops × 5 calls");
  EXPECT_EQ(s.known_op, "RMSNorm");
  EXPECT_EQ(s.title(), "Replace the 6-op RMSNorm with one fused kernel");
  EXPECT_EQ(s.scope, "rmsnorm naive");
  auto j = nlohmann::json::parse(a.to_json());
  EXPECT_EQ(j["suggestions"][0]["title"], s.title());
  EXPECT_EQ(j["suggestions"][0]["figures"][0]["label"], "fix");
}

// Chains that compute a known op name it; others name the region to compile.
TEST(Advise, NamesTheFusedOpAChainComputes) {
  using advisor::known_op;
  auto name = [](const std::vector<std::string>& ops, const std::string& next = "") {
    const advisor::KnownOp* k = known_op(ops, next);
    return k ? k->name : std::string("(none)");
  };
  EXPECT_EQ(name({"pow", "mean", "add", "rsqrt", "mul", "mul"}), "RMSNorm");
  EXPECT_EQ(name({"to", "mul", "mean", "add", "rsqrt", "mul", "to", "mul"}), "RMSNorm");
  EXPECT_EQ(name({"max", "sub", "exp", "sum", "div"}), "softmax");
  EXPECT_EQ(name({"mean", "sub", "pow", "mean", "add", "rsqrt", "mul", "mul", "add"}), "LayerNorm");
  EXPECT_EQ(name({"silu", "mul"}), "SiLU·mul (SwiGLU)");
  EXPECT_EQ(name({"pow", "mul", "add", "mul", "tanh", "add", "mul", "mul"}), "GELU (tanh)");
  EXPECT_EQ(name({"mul", "add"}, "softmax"), "attention scale-mask");
  // Compiling attention fuses its scale and mask; its softmax stays a kernel of its own.
  EXPECT_NE(known_op({"mul", "add"}, "softmax")->fix.find("softmax stays its own"), std::string::npos);
  EXPECT_EQ(known_op({"mul", "add"}), nullptr);  // x * a + b alone is no known op
  EXPECT_EQ(known_op({"add", "mul", "exp"}), nullptr);

  Builder b;
  b.t.tracks.resize(2);
  uint64_t blk = b.scope(EventKind::range, "block", 0);
  b.op("add", blk, 3000, 12288, "[(8, 128) f32, (8, 128) f32]", 4096);
  b.op("exp", blk, 3000, 8192, "[(8, 128) f32]", 4096);
  for (int i = 0; i < 10; ++i) b.op("softmax", 0, 1000, 100, "[(5) f32]", 20);
  advisor::Advice a = advisor::advise(b.t);
  ASSERT_EQ(a.suggestions.size(), 1u) << a.table();
  EXPECT_EQ(a.suggestions[0].known_op, "");
  EXPECT_EQ(a.suggestions[0].fix, "compile the region 'block' (one generated kernel)");
  EXPECT_EQ(a.suggestions[0].title(), "Compile 'block': 2 fusable ops in a row");
}

// With the probe's levels in the profile, a fused kernel is priced at the rate of the
// memory level its working set lives in: beyond the caches the DRAM rate, not the rate
// a small cache-resident op reached.
TEST(Advise, PricesTheFusedKernelAtItsMemoryLevel) {
  auto build = [](int64_t rows, int64_t op_gbps, int64_t mean_gbps) {
    Builder b;
    b.t.tracks.resize(2);
    b.t.config_json = R"({"device_peaks": {"stream_gbps": 30.0, "matmul_gflops": 100.0, "levels": [
        {"working_set_bytes": 1048576, "gbps": 200.0, "store_gbps": 150.0},
        {"working_set_bytes": 134217728, "gbps": 30.0, "store_gbps": 25.0}]}})";
    const int64_t n = rows * 4096 * 4;  // bytes of x
    const std::string x = fmt::format("({}, 4096) f32", rows), r = fmt::format("({}, 1) f32", rows);
    uint64_t range = b.scope(EventKind::range, "rmsnorm naive", 0);
    // Ops at `op_gbps`, the mean at `mean_gbps` (1 byte/ns = 1 GB/s), plus the 1000 ns
    // launch cost; the fused kernel streams no faster than the elementwise ones did.
    const int64_t g = op_gbps;
    b.op("mul", range, 1000 + 2 * n / g, 2 * n, "[" + x + ", " + x + "]", n);
    b.op("mean", range, 1000 + n / mean_gbps, n, "[" + x + "]", rows * 4);
    b.op("add", range, 1000, rows * 8, "[" + r + "]", rows * 4);
    b.op("rsqrt", range, 1000, rows * 8, "[" + r + "]", rows * 4);
    b.op("mul", range, 1000 + 2 * n / g, 2 * n, "[" + x + ", " + r + "]", n);
    b.op("mul", range, 1000 + 2 * n / g, 2 * n, "[" + x + ", (4096) f32]", n);
    for (int i = 0; i < 10; ++i) b.op("softmax", 0, 1000, 100, "[(5) f32]", 20);
    return advisor::advise(b.t);
  };
  advisor::Advice big = build(4096, 26, 26);  // 64 MiB x: 128 MiB working set; ops above the probe's rate
  ASSERT_EQ(big.suggestions.size(), 1u) << big.table();
  const advisor::Suggestion& s = big.suggestions[0];
  EXPECT_EQ(s.fused_bytes, 2 * int64_t(4096) * 4096 * 4 + 4096 * 4);
  EXPECT_NEAR(s.bandwidth_gbps, 25.0, 1e-9);  // the DRAM rate with ordinary stores
  EXPECT_NE(s.rate_from.find("beyond the caches"), std::string::npos) << s.rate_from;
  EXPECT_NEAR(s.predicted_fused_ns(), big.launch_cost_ns + double(s.fused_bytes) / 25.0, 2);
  advisor::Advice small = build(16, 160, 160);  // 256 KiB x: under the smallest level, its rate
  ASSERT_EQ(small.suggestions.size(), 1u) << small.table();
  EXPECT_NEAR(small.suggestions[0].bandwidth_gbps, 150.0, 1e-9);
  EXPECT_NE(small.suggestions[0].rate_from.find("in cache"), std::string::npos);
  // Ops over the domain that streamed at 20 GB/s: the fused kernel walks it as they did.
  advisor::Advice slow = build(4096, 20, 26);
  ASSERT_EQ(slow.suggestions.size(), 1u) << slow.table();
  EXPECT_NEAR(slow.suggestions[0].bandwidth_gbps, 20.0, 0.01);
  // A slow reduction does not: its time per byte is its sums along the rows.
  advisor::Advice slow_mean = build(4096, 26, 10);
  ASSERT_EQ(slow_mean.suggestions.size(), 1u) << slow_mean.table();
  EXPECT_NEAR(slow_mean.suggestions[0].bandwidth_gbps, 25.0, 1e-9);
}

// Attention's scale and mask: a flat scale at the probe's rate, then a mask broadcast
// over the heads, whose row loop streamed at half of it. The fused kernel runs the same
// row loop: it is priced at the add's rate, not the probe's. A per-row op the chain
// also runs (not over the whole domain) does not bound it, nor does an occurrence whose
// add the OS preempted: each op counts at its fastest occurrence.
TEST(Advise, TheFusedKernelStreamsNoFasterThanItsOpsOverTheSameDomain) {
  Builder b;
  b.t.tracks.resize(2);
  b.t.config_json = R"({"device_peaks": {"stream_gbps": 30.0, "matmul_gflops": 100.0, "levels": [
      {"working_set_bytes": 1048576, "gbps": 120.0, "store_gbps": 100.0},
      {"working_set_bytes": 134217728, "gbps": 30.0, "store_gbps": 25.0}]}})";
  const int64_t s = 32 * 128 * 128 * 4, m = 128 * 128 * 4;  // scores (32, 128, 128), mask (128, 128): f32 bytes
  for (int64_t preempted : {1000000, 0, 0}) {
    uint64_t attn = b.scope(EventKind::range, "llama_attention", 0);
    b.op("mul", attn, 1000 + 2 * s / 100, 2 * s, "[(32, 128, 128) f32]", s);  // 100 GB/s
    b.op("add", attn, 1000 + (2 * s + m) / 50 + preempted, 2 * s + m, "[(32, 128, 128) f32, (128, 128) f32]",
         s);                                                       // 50 GB/s
    b.op("mul", attn, 50000, 32768, "[(32, 128, 1) f32]", 16384);  // per row, and slow: not the domain's rate
    b.op("softmax", attn, 50000, 2 * s, "[(32, 128, 128) f32]", s);
  }
  for (int i = 0; i < 10; ++i) b.op("softmax", 0, 1000, 0, "[(5) f32]", 20);
  advisor::Advice a = advisor::advise(b.t);
  ASSERT_EQ(a.suggestions.size(), 1u) << a.table();
  const advisor::Suggestion& g = a.suggestions[0];
  ASSERT_NEAR(a.launch_cost_ns, 1000, 1);
  EXPECT_EQ(g.pattern, "mul → add → mul");
  EXPECT_EQ(g.occurrences, 3);
  EXPECT_NEAR(g.bandwidth_gbps, 50.0, 0.1) << g.rate_from;  // not the probe's (78 GB/s at 4 MiB)
  EXPECT_NE(g.rate_from.find("add"), std::string::npos) << g.rate_from;
  // Three times the saving of an occurrence the OS left alone.
  const double one = double(g.device_ns - 1000000) / 3;
  const double fused = a.launch_cost_ns + double(g.fused_bytes) / 3 / g.bandwidth_gbps;
  EXPECT_NEAR(g.predicted_saved_ns, 3 * (one - fused), 1);
}

// The fused kernel's math is what the generated code spends on it, as the profile's
// device peaks carry it (compiler/math_probe.h), not the eager kernel's time: here the
// eager silu spent 10 µs on 1024 elements, the generated code 2 ns per element.
TEST(Advise, PricesTheFusedKernelsMathAtTheGeneratedCodesCost) {
  auto build = [](const std::string& peaks) {
    Builder b;
    b.t.tracks.resize(2);
    b.t.config_json = peaks;
    uint64_t mlp = b.scope(EventKind::range, "mlp", 0);
    b.op("silu", mlp, 11000, 8192, "[(8, 128) f32]", 4096);
    b.op("mul", mlp, 2000, 12288, "[(8, 128) f32, (8, 128) f32]", 4096);
    b.op("matmul", 0, 50000, 1 << 20, "[(8, 64) f32, (64, 128) f32]", 4096);
    for (int i = 0; i < 10; ++i) b.op("softmax", 0, 1000, 100, "[(5) f32]", 20);
    return advisor::advise(b.t);
  };
  advisor::Advice eager = build("");
  advisor::Advice gen = build(R"({"device_peaks": {"fused_math": {"ns_per_element": {"silu": 2.0}}}})");
  ASSERT_EQ(gen.suggestions.size(), 1u) << gen.table();
  const advisor::Suggestion& s = gen.suggestions[0];
  // No memory roof in these peaks: the fused bytes (12288) stream at mul's rate, in
  // mul's own time past its launch.
  const double c = gen.launch_cost_ns, stream = 2000 - c;
  EXPECT_NEAR(s.compute_ns, 1024 * 2.0, 1e-6);  // one core: the launch had one slice
  EXPECT_NEAR(s.predicted_fused_ns(), c + std::max(stream, 1024 * 2.0), 1);
  EXPECT_NE(s.math_from.find("silu 2.00 ns"), std::string::npos) << s.math_from;
  EXPECT_NE(gen.table().find("math at the generated code's cost"), std::string::npos) << gen.table();
  // Without the measurement: the eager silu's own compute, so far less saved.
  ASSERT_EQ(eager.suggestions.size(), 1u);
  EXPECT_TRUE(eager.suggestions[0].math_from.empty());
  EXPECT_GT(eager.suggestions[0].compute_ns, 4 * s.compute_ns);
  EXPECT_GT(s.predicted_saved_ns, eager.suggestions[0].predicted_saved_ns + 5000);
}

// Gaps with no kernel running, ended by a launch the host submitted after the gap
// began, are idle time the host caused; a kernel queued ahead of time is not.
TEST(Advise, MeasuresTheDevicesWaitForTheHost) {
  Trace t;
  t.tracks.resize(2);
  uint64_t id = 1;
  auto add_op = [&](int64_t submit, int64_t k0, int64_t k1) {
    t.events.push_back(test::scope(EventKind::op, "add", id, 0, submit - 100, submit));
    TraceEvent l;
    l.kind = EventKind::launch;
    l.name = "add_f32";
    l.id = 1000 + id;
    l.parent = id;
    l.t0 = submit - 50;
    l.t1 = submit;
    l.bytes = 100;
    t.events.push_back(l);
    TraceEvent k = l;
    k.kind = EventKind::kernel;
    k.t0 = k0;
    k.t1 = k1;
    k.track = 1;
    t.events.push_back(k);
    ++id;
  };
  add_op(0, 10, 110);        // kernel 10..110
  add_op(300, 310, 410);     // submitted at 300, after the device went idle at 110: 200 idle
  add_op(350, 410, 510);     // queued while the previous ran: no gap
  add_op(800, 810, 910);     // 300 idle
  advisor::Advice a = advisor::advise(t);
  EXPECT_EQ(a.host_wait.idle_ns, 200 + 300);
  EXPECT_EQ(a.host_wait.gaps, 2);
  EXPECT_EQ(a.host_wait.span_ns, 900);
  EXPECT_TRUE(a.host_wait.significant());
  EXPECT_NE(a.table().find("Host-bound: the device waits for launches"), std::string::npos) << a.table();
  EXPECT_NE(a.host_wait_text().find("(56%), in 2 gaps"), std::string::npos) << a.host_wait_text();
  EXPECT_NE(a.host_wait_text().find("fuse or compile"), std::string::npos);
}
