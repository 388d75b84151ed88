// Where a compiled graph's launches belong in a profile (compiler/origins.h): a kernel
// whose origins lie on one module path runs in the innermost module's range; one whose
// origins diverge runs in a range naming each, inside their common ancestor, flagged
// shared; and the origins survive the passes that merge nodes.
#include <gtest/gtest.h>

#include "compiler_test_util.h"
#include "opscope/compiler/origins.h"
#include "opscope/compiler/passes.h"

using namespace opscope;
using namespace opscope::compiler;
using namespace opscope::compiler::testing;

namespace {
Origin at(std::string op, std::vector<std::string> modules) { return Origin{std::move(op), std::move(modules)}; }
}  // namespace

TEST(CompilerOrigins, OnePathGoesToTheInnermostModuleWithoutTheOutermost) {
  Origin add = at("aten::add", {"Llama", "layers.0"});
  Origin mm = at("aten::mm", {"Llama", "layers.0", "layers.0.feed_forward", "layers.0.feed_forward.w2"});
  LaunchScope s = launch_scope({&add, &mm});
  EXPECT_EQ(s.ranges, (std::vector<std::string>{"layers.0", "layers.0.feed_forward", "layers.0.feed_forward.w2"}));
  EXPECT_FALSE(s.shared);
}

TEST(CompilerOrigins, DivergingModulesAreSharedNeverGivenToOne) {
  Origin add = at("aten::add", {"Llama", "layers.0"});
  Origin pow = at("aten::pow", {"Llama", "layers.1", "layers.1.attention_norm"});
  Origin mean = at("aten::mean", {"Llama", "layers.1", "layers.1.attention_norm"});
  LaunchScope s = launch_scope({&add, &pow, &mean});
  EXPECT_EQ(s.ranges, (std::vector<std::string>{"layers.0 + layers.1.attention_norm"}));
  EXPECT_TRUE(s.shared);

  Origin q = at("aten::mm", {"Llama", "layers.1", "layers.1.attention", "layers.1.attention.wq"});
  Origin k = at("aten::mm", {"Llama", "layers.1", "layers.1.attention", "layers.1.attention.wk"});
  s = launch_scope({&q, &k});
  EXPECT_EQ(s.ranges, (std::vector<std::string>{"layers.1", "layers.1.attention",
                                                "layers.1.attention.wq + layers.1.attention.wk"}));
  EXPECT_TRUE(s.shared);
}

TEST(CompilerOrigins, NoModulesNoRanges) {
  Origin op = at("rms_norm", {});
  LaunchScope s = launch_scope({&op});
  EXPECT_TRUE(s.ranges.empty());
  EXPECT_FALSE(s.shared);
  EXPECT_TRUE(launch_scope({}).ranges.empty());
}

TEST(CompilerOrigins, FusionKeepsEveryNodesOrigin) {
  // rsqrt(mean(x * x) + eps) * x: five ops from two modules become one kernel with all five.
  Graph g;
  int x = input(g, {4, 32});
  const char* ops[] = {"aten::mul", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul"};
  int sq = binary(g, OpKind::mul, x, x);
  int m = reduce_last(g, OpKind::mean, sq, true);
  int e = scalar_op(g, OpKind::add, m, 1e-6);
  int r = unary(g, OpKind::rsqrt, e);
  g.outputs = {binary(g, OpKind::mul, r, x)};
  int i = 0;
  for (Node& n : g.nodes) {
    if (n.kind == OpKind::input || n.kind == OpKind::constant) continue;
    std::vector<std::string> mods = {"M", i < 2 ? "M.a" : "M.b"};
    n.origins = {g.origin_index(at(ops[i++], mods))};
  }
  ASSERT_EQ(i, 5);
  run_passes(g, PassOptions{}, nullptr);
  int fused = 0;
  for (const Node& n : g.nodes) {
    if (n.kind != OpKind::fused) continue;
    ++fused;
    std::vector<std::string> got;
    for (const Origin* o : g.origins_of(n)) got.push_back(o->op + "@" + o->module());
    EXPECT_EQ(got.size(), 5u) << ::testing::PrintToString(got);  // the muls of M.a and M.b are two origins
    LaunchScope s = launch_scope(g.origins_of(n));
    EXPECT_TRUE(s.shared);
    EXPECT_EQ(s.ranges, (std::vector<std::string>{"M.a + M.b"}));
  }
  EXPECT_EQ(fused, 1) << g.str();
}
