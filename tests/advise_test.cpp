// The fusion advisor: chains found on hand-built traces (what breaks a chain, what does
// not, contexts, ranking) and on a real profile of the op-by-op RMSNorm, where the bytes
// a fused kernel would move are known exactly.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "opscope/advisor/advise.h"
#include "opscope/cases/rmsnorm.h"
#include "opscope/core/error.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/record_function.h"
#include "opscope/profiler/session.h"
#include "opscope/runtime/device.h"

using namespace opscope;
using namespace opscope::prof;

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
  EXPECT_NE(a.table().find("silu → mul (layers.N/mlp)"), std::string::npos) << a.table();
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
  EXPECT_EQ(all.suggestions[0].pattern, "silu → mul → silu → mul → add");  // one chain across both
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
  // x (read by x*x and by x*r), w and the output: 3·R·H + H floats per call.
  EXPECT_EQ(s.fused_bytes, 3 * 4 * (3 * R * H + H));
  EXPECT_GT(s.bytes, s.fused_bytes);
  EXPECT_GT(s.predicted_saved_ns, 0);
  EXPECT_TRUE(a.warnings.empty()) << a.warnings[0];
}
