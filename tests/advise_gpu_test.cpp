// The advisor on a GPU trace as torch.profiler writes it (H100, aten ops with their
// shapes, cudaLaunchKernel, kernels on a stream): the aten elementwise chain and a
// matmul's bias + activation are found, priced with the H100's datasheet bandwidth and
// the trace's own gaps between the chain's kernels.
#include <gtest/gtest.h>

#include <algorithm>

#include "import_util.h"
#include "opscope/analysis/advisor/advise.h"

namespace opscope::test {
namespace {

// Three ProfilerSteps of: mm → add (bias) → relu_ → mul → add_ → tanh → mm, each op one
// kernel on stream 7, launched 5 µs apart while the device runs 3 µs behind the host.
json h100_chain_trace() {
  const std::string x = "(1024, 4096)";
  struct Op {
    const char* name;
    json dims;
    const char* kernel;
    double dur;  // µs
  };
  const Op ops[] = {
      {"aten::mm", {{1024, 4096}, {4096, 4096}}, "sm90_xmma_gemm_f32f32_tf32f32", 200},
      {"aten::add", {{1024, 4096}, {4096}}, "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>", 12},
      {"aten::relu_", {{1024, 4096}}, "vectorized_elementwise_kernel<4, relu>", 10},
      {"aten::mul", {{1024, 4096}, {1024, 4096}}, "vectorized_elementwise_kernel<4, MulFunctor<float>>", 20},
      {"aten::add_", {{1024, 4096}, {1024, 4096}}, "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>", 20},
      {"aten::tanh", {{1024, 4096}}, "vectorized_elementwise_kernel<4, tanh_kernel_cuda>", 12},
      {"aten::mm", {{1024, 4096}, {4096, 4096}}, "sm90_xmma_gemm_f32f32_tf32f32", 200},
  };
  json ev = json::array();
  int corr = 1;
  double device = 0;
  for (int step = 0; step < 3; ++step) {
    const double t = 1000.0 + step * 1000;
    ev.push_back(x_event("user_annotation", "ProfilerStep#" + std::to_string(step), 1, 1, t, 900));
    double host = t + 5;
    device = std::max(device, t + 20);
    for (const Op& o : ops) {
      json types = json::array();
      for (size_t i = 0; i < o.dims.size(); ++i) types.push_back("float");
      ev.push_back(x_event("cpu_op", o.name, 1, 1, host, 4,
                           {{"External id", corr}, {"Input Dims", o.dims}, {"Input type", types}}));
      ev.push_back(x_event("cuda_runtime", "cudaLaunchKernel", 1, 1, host + 1, 2,
                           {{"correlation", corr}, {"External id", corr}}));
      device = std::max(device, host + 3);
      ev.push_back(x_event("kernel", o.kernel, 0, 7, device, o.dur,
                           {{"correlation", corr}, {"External id", corr}, {"device", 0}, {"stream", 7}}));
      device += o.dur + 3;  // a 3 µs gap to the next kernel
      host += 5;
      ++corr;
    }
  }
  return {{"schemaVersion", 1}, {"deviceProperties", {h100()}}, {"traceEvents", ev}};
}

const advisor::Suggestion* with_pattern(const advisor::Advice& a, const std::string& pattern) {
  for (const advisor::Suggestion& s : a.suggestions)
    if (s.pattern == pattern) return &s;
  return nullptr;
}

TEST(AdviseGpu, FindsTheAtenChainAndTheMatmulEpiloguePricedWithTheTracesGpu) {
  TempDir dir("advise_gpu");
  prof::Trace t = importer::import_traces({dir.write("h100.json", h100_chain_trace())}).trace;
  advisor::Advice a = advisor::advise(t);

  const advisor::Suggestion* chain = with_pattern(a, "aten::mul → aten::add_ → aten::tanh");
  ASSERT_NE(chain, nullptr) << a.table(0);
  EXPECT_EQ(chain->occurrences, 3);
  EXPECT_EQ(chain->launches, 9);
  EXPECT_EQ(chain->device_ns, 3 * 52'000);
  EXPECT_EQ(chain->gaps_ns, 3 * 2 * 3'000);  // two 3 µs gaps a step, the trace's own
  // Bytes from the shapes (sizes, not tensor identities): mul's two inputs of one size
  // count once (as x * x reads x once), add_ reads the product and one input more, tanh
  // the sum, and the result is written once: 3 × 16 MiB a step.
  const int64_t mib16 = 1024 * 4096 * 4;
  EXPECT_EQ(chain->fused_bytes, 3 * 3 * mib16);
  // The kernels' own bytes from their ops' shapes: mul moved 3 × 16 MiB in 20 µs, the
  // slowest streaming op over the domain, under the H100 SXM datasheet's 3350 GB/s:
  // the fused kernel walks the domain no faster.
  EXPECT_NEAR(chain->bandwidth_gbps, 3.0 * mib16 / 20'000, 1.0);
  EXPECT_NE(chain->rate_from.find("the chain's mul reached"), std::string::npos) << chain->rate_from;
  bool datasheet = false;
  for (const std::string& w : a.warnings) datasheet = datasheet || w.find("H100 SXM datasheet's 3350 GB/s") != std::string::npos;
  EXPECT_TRUE(datasheet) << a.table(0);
  // tanh's math at the H100's f32 rate, not its eager kernel's time past its launch.
  EXPECT_NE(chain->math_from.find("GPU's f32 rate"), std::string::npos) << chain->math_from;
  EXPECT_GT(chain->compute_ns, 0);
  EXPECT_LT(chain->compute_ns, 3 * 2'000.0);  // 4M elements × 20 flops at ~67 TFLOP/s: ~1.3 µs a call
  const double streaming_ns = double(chain->fused_bytes) / chain->bandwidth_gbps;
  EXPECT_GE(chain->predicted_fused_ns() + 1, streaming_ns);
  EXPECT_GT(chain->predicted_saved_ns, 0);
  EXPECT_LT(chain->predicted_saved_ns, double(chain->device_ns + chain->gaps_ns) - streaming_ns + 1);

  // The bias add and relu_ after the matmul: its epilogue, saved whole with its gaps.
  const advisor::Suggestion* epi = with_pattern(a, "aten::mm → aten::add → aten::relu_");
  ASSERT_NE(epi, nullptr) << a.table(0);
  EXPECT_EQ(epi->kind, "epilogue");
  EXPECT_EQ(epi->occurrences, 3);
  EXPECT_EQ(epi->device_ns, 3 * 22'000);
  EXPECT_EQ(epi->gaps_ns, 3 * 2 * 3'000);
  EXPECT_DOUBLE_EQ(epi->predicted_saved_ns, 3 * (22'000 + 6'000));
  EXPECT_NE(epi->fix.find("epilogue"), std::string::npos);

  const std::string text = a.table(0);
  EXPECT_NE(text.find("Fuse aten::add and aten::relu_ into aten::mm's epilogue"), std::string::npos) << text;
  EXPECT_NE(text.find("launch gaps:      0.018 ms between its kernels"), std::string::npos) << text;
  EXPECT_NE(text.find("Compile 3 fusable ops in a row"), std::string::npos) << text;  // a step is no region
  for (const std::string& w : a.warnings) EXPECT_EQ(w.find("no input shapes"), std::string::npos) << w;
}

}  // namespace
}  // namespace opscope::test
