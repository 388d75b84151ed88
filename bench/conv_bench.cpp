// Convolutions on the CPU device against the limits (issue #32: "convolutions >= 60% of
// the probe's matmul rate on resnet-sized layers"), every figure a ratio from this run:
//  - the probe: opscope's f32 matmul 1024^3 on the device's cores (`opscope probe`'s rate);
//  - conv2d f32 on ResNet-50's layer shapes and MobileNetV3's and EfficientNet-B0's stems
//    (batch 1): GFLOP/s and % of the probe;
//  - the same convolution in oneDNN's own conv primitive on as many OpenMP threads as the
//    device has cores (the library torch's CPU convolutions call), with NCHW tensors
//    reordered to its blocked layout and back in each call as torch does, the weights
//    reordered once: time ratio opscope / oneDNN, and the outputs' largest difference;
//  - depthwise convolutions on MobileNetV3's, EfficientNet-B0's and ConvNeXt-T's layer
//    shapes, and grouped ones on RegNet-Y-400MF's and ResNeXt-50's: GB/s (input and output
//    once) and the same ratio to oneDNN's;
//  - a 1x1 convolution with relu or hardswish fused against the convolution then the
//    activation as its own op: time ratio fused / apart.
// oneDNN's OpenMP threads wait passively here (OMP_WAIT_POLICY=PASSIVE, set by re-running
// this program): by default they spin after each call, and a spinning thread on a device
// core's CPU took a time slice from it, making the next opscope call 3-10x slower.
//   build/bench/conv_bench [--reps N]
#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

#include "opscope/opscope.h"

#include "device_timing.h"

extern "C" void omp_set_num_threads(int) noexcept;

using namespace opscope;

namespace {

using bench::best_of;

struct Layer {
  const char* name;
  int64_t c, hw, oc, k, stride, groups = 1;
};

// oneDNN's convolution of host copies of x, w, b: a primitive with blocked layouts chosen
// by the library, weights reordered once; run() reorders x in and y out.
struct DnnlConv {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream st{eng};
  dnnl::memory xm, wm, bm, ym, xs, ws, yd;
  dnnl::convolution_forward conv;
  bool rx = false, ry = false;

  DnnlConv(const Layer& l, int64_t oh, std::vector<float>& x, std::vector<float>& w, std::vector<float>& b,
           std::vector<float>& y) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const int64_t pad = l.k / 2;
    const int64_t g = l.groups;
    dnnl::memory::dims xd{1, l.c, l.hw, l.hw}, bd{l.oc}, yd_{1, l.oc, oh, oh};
    dnnl::memory::dims wd = g == 1 ? dnnl::memory::dims{l.oc, l.c, l.k, l.k}
                                   : dnnl::memory::dims{g, l.oc / g, l.c / g, l.k, l.k};
    xm = dnnl::memory({xd, dt::f32, tag::nchw}, eng, x.data());
    wm = dnnl::memory({wd, dt::f32, g == 1 ? tag::oihw : tag::goihw}, eng, w.data());
    bm = dnnl::memory({bd, dt::f32, tag::x}, eng, b.data());
    ym = dnnl::memory({yd_, dt::f32, tag::nchw}, eng, y.data());
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                      {xd, dt::f32, tag::any}, {wd, dt::f32, tag::any}, bm.get_desc(),
                                      {yd_, dt::f32, tag::any}, {l.stride, l.stride}, {pad, pad}, {pad, pad});
    dnnl::convolution_forward::primitive_desc pd(d, eng);
    conv = dnnl::convolution_forward(pd);
    ws = dnnl::memory(pd.weights_desc(), eng);
    dnnl::reorder(wm, ws).execute(st, wm, ws);
    rx = pd.src_desc() != xm.get_desc(), ry = pd.dst_desc() != ym.get_desc();
    xs = rx ? dnnl::memory(pd.src_desc(), eng) : xm;
    yd = ry ? dnnl::memory(pd.dst_desc(), eng) : ym;
    st.wait();
  }
  void run() {
    if (rx) dnnl::reorder(xm, xs).execute(st, xm, xs);
    conv.execute(st, {{DNNL_ARG_SRC, xs}, {DNNL_ARG_WEIGHTS, ws}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, yd}});
    if (ry) dnnl::reorder(yd, ym).execute(st, yd, ym);
    st.wait();
  }
};

// One layer, batch 1, f32, with its bias: the best of `reps` calls each side, alternated.
struct Measured {
  double ours, peer, diff, flops, bytes;
};
Measured measure(const Layer& l, int reps) {
  const int64_t pad = l.k / 2, oh = (l.hw + 2 * pad - l.k) / l.stride + 1;
  Tensor x = randn({1, l.c, l.hw, l.hw}, 3),
         w = randn({l.oc, l.c / l.groups, l.k, l.k}, 4, DType::f32, nullptr, 0, 0.05f), bias = randn({l.oc}, 5);
  auto conv = [&] { return conv2d(x, w, bias, {l.stride, l.stride}, {pad, pad}, {1, 1}, l.groups); };
  Tensor y = conv();
  std::vector<float> xv = x.to_vector<float>(), wv = w.to_vector<float>(), bv = bias.to_vector<float>(),
                     yv(size_t(l.oc * oh * oh)), ours = y.to_vector<float>();
  DnnlConv peer(l, oh, xv, wv, bv, yv);
  peer.run();
  float diff = 0, scale = 0;
  for (size_t i = 0; i < yv.size(); ++i) {
    diff = std::max(diff, std::abs(yv[i] - ours[i]));
    scale = std::max(scale, std::abs(yv[i]));
  }
  // Each side timed over a batch of calls queued back to back, as a model's layers run: a
  // single call and its synchronize would time the device's wake-up too (50-250 us on a
  // 2-vCPU VM, more than the small depthwise layers take).
  constexpr int kBatch = 10;
  double t_ours = 1e30, t_peer = 1e30;
  for (int r = 0; r < reps; ++r) {  // alternated
    t_ours = std::min(t_ours, best_of(1, [&] { for (int i = 0; i < kBatch; ++i) conv(); }) / kBatch);
    t_peer = std::min(t_peer, best_of(1, [&] { for (int i = 0; i < kBatch; ++i) peer.run(); }) / kBatch);
  }
  return {t_ours, t_peer, diff / std::max(scale, 1e-30f), 2.0 * l.oc * oh * oh * (l.c / l.groups) * l.k * l.k,
          double(x.nbytes() + y.nbytes())};
}

// A table of layers with few multiply-adds per element (depthwise, grouped): time, GB/s,
// GFLOP/s and the ratio to oneDNN's time, then its geometric mean.
template <size_t N> void memory_bound_table(const char* title, const Layer (&layers)[N], int reps) {
  fmt::print("\n{:<22} {:>9} {:>9} {:>9} {:>11} {:>9} {:>9}\n", title, "ms", "GB/s", "GFLOP/s", "oneDNN ms",
             "opscope/", "max diff");
  double log_sum = 0;
  for (const Layer& l : layers) {
    Measured m = measure(l, reps);
    fmt::print("{:<22} {:>9.3f} {:>9.1f} {:>9.1f} {:>11.3f} {:>9.2f} {:>9.1e}\n", l.name, m.ours * 1e3,
               m.bytes / m.ours / 1e9, m.flops / m.ours / 1e9, m.peer * 1e3, m.ours / m.peer, m.diff);
    log_sum += std::log(m.ours / m.peer);
  }
  fmt::print("\n{}: geometric mean of opscope / oneDNN time: {:.2f}\n", title, std::exp(log_sum / double(N)));
}

// A convolution with its activation fused (applied in the kernel's epilogue, the block in
// cache) against the convolution then the activation as its own op, each side ten calls
// queued back to back, best of reps, alternated: MobileNetV3's 1x1 layers with a bias.
void epilogue_table(int reps) {
  struct Case {
    const char* name;
    int64_t c, hw, oc;
  };
  const Case cases[] = {{"1x1 16->72 @56", 16, 56, 72}, {"1x1 96->576 @7", 96, 7, 576}};
  fmt::print("\n{:<22} {:<10} {:>11} {:>13} {:>9}\n", "fused epilogue", "act", "fused us", "conv + op us", "fused/");
  for (const Case& k : cases) {
    Tensor x = randn({1, k.c, k.hw, k.hw}, 6), w = randn({k.oc, k.c, 1, 1}, 7), b = randn({k.oc}, 8);
    for (Activation act : {Activation::relu, Activation::hardswish}) {
      constexpr int kBatch = 10;
      double fused = 1e30, apart = 1e30;
      for (int r = 0; r < reps; ++r) {
        fused = std::min(fused, best_of(1, [&] {
                                  for (int i = 0; i < kBatch; ++i) conv2d(x, w, b, {1, 1}, {0, 0}, {1, 1}, 1, act);
                                }) / kBatch);
        apart = std::min(apart, best_of(1, [&] {
                                  for (int i = 0; i < kBatch; ++i) activation(conv2d(x, w, b), act);
                                }) / kBatch);
      }
      fmt::print("{:<22} {:<10} {:>11.1f} {:>13.1f} {:>9.2f}\n", k.name, cpu_kernels::activation_name(act),
                 fused * 1e6, apart * 1e6, fused / apart);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (!std::getenv("OMP_WAIT_POLICY")) {  // libgomp reads it when it loads: run again with it
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    execv("/proc/self/exe", argv);
    fmt::print(stderr, "conv_bench: cannot re-run itself with OMP_WAIT_POLICY=PASSIVE; set it and run again\n");
    return 1;
  }
  int reps = 9;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
      if (reps < 1) {
        fmt::print(stderr, "conv_bench: --reps '{}' must be a positive count\n", argv[i]);
        return 64;
      }
    } else {
      fmt::print(stderr, "conv_bench: unknown argument '{}' (usage: conv_bench [--reps N])\n", a);
      return 64;
    }
  }
  fmt::print("{}\n", cpu().description());
  omp_set_num_threads(int(cpu().num_cores()));  // oneDNN's team: as many threads as the device's cores

  const int64_t m = 1024;
  Tensor a = randn({m, m}, 1), b = randn({m, m}, 2);
  matmul(a, b), cpu().synchronize();
  const double probe = 2.0 * m * m * m / best_of(reps, [&] { matmul(a, b); }) / 1e9;
  fmt::print("probe: f32 matmul {}^3 on the device {:.1f} GFLOP/s\n\n", m, probe);

  const Layer layers[] = {
      {"stem 7x7/2 3->64 @224", 3, 224, 64, 7, 2},    {"stem 3x3/2 3->16 @224", 3, 224, 16, 3, 2},
      {"stem 3x3/2 3->32 @224", 3, 224, 32, 3, 2},    {"3x3 64->64 @56", 64, 56, 64, 3, 1},
      {"1x1 64->256 @56", 64, 56, 256, 1, 1},         {"1x1 256->64 @56", 256, 56, 64, 1, 1},
      {"3x3 128->128 @28", 128, 28, 128, 3, 1},       {"3x3/2 128->128 @56", 128, 56, 128, 3, 2},
      {"3x3 256->256 @14", 256, 14, 256, 3, 1},       {"1x1 1024->256 @14", 1024, 14, 256, 1, 1},
      {"1x1 256->1024 @14", 256, 14, 1024, 1, 1},     {"3x3 512->512 @7", 512, 7, 512, 3, 1},
  };
  fmt::print("{:<22} {:>9} {:>9} {:>8} {:>11} {:>9} {:>9}\n", "layer", "ms", "GFLOP/s", "% probe", "oneDNN ms",
             "opscope/", "max diff");
  double log_sum = 0, frac_sum = 0;
  int count = 0;
  for (const Layer& l : layers) {
    Measured m = measure(l, reps);
    const double gflops = m.flops / m.ours / 1e9;
    fmt::print("{:<22} {:>9.3f} {:>9.1f} {:>7.0f}% {:>11.3f} {:>9.2f} {:>9.1e}\n", l.name, m.ours * 1e3, gflops,
               100 * gflops / probe, m.peer * 1e3, m.ours / m.peer, m.diff);
    log_sum += std::log(m.ours / m.peer), frac_sum += gflops / probe, ++count;
  }
  fmt::print("\nmean % of the probe: {:.0f}%; geometric mean of opscope / oneDNN time: {:.2f}\n",
             100 * frac_sum / count, std::exp(log_sum / count));

  // Depthwise: a few multiply-adds per element, bound by moving the planes, not by the FMAs.
  const Layer depthwise[] = {
      {"mnv3 16@112 3x3/2", 16, 112, 16, 3, 2, 16},      {"mnv3 72@56 3x3/2", 72, 56, 72, 3, 2, 72},
      {"mnv3 88@28 3x3", 88, 28, 88, 3, 1, 88},           {"mnv3 96@28 5x5/2", 96, 28, 96, 5, 2, 96},
      {"mnv3 240@14 5x5", 240, 14, 240, 5, 1, 240},       {"mnv3 576@7 5x5", 576, 7, 576, 5, 1, 576},
      {"effb0 32@112 3x3", 32, 112, 32, 3, 1, 32},        {"effb0 96@112 3x3/2", 96, 112, 96, 3, 2, 96},
      {"effb0 144@56 3x3", 144, 56, 144, 3, 1, 144},      {"effb0 240@28 5x5", 240, 28, 240, 5, 1, 240},
      {"effb0 672@14 5x5/2", 672, 14, 672, 5, 2, 672},   {"convnext 96@56 7x7", 96, 56, 96, 7, 1, 96},
      {"convnext 384@14 7x7", 384, 14, 384, 7, 1, 384},  {"convnext 768@7 7x7", 768, 7, 768, 7, 1, 768},
  };
  memory_bound_table("depthwise", depthwise, reps);

  // Grouped, a few channels a group: RegNet-Y-400MF's (8 a group) and ResNeXt-50 32x4d's.
  const Layer grouped[] = {
      {"regnet 48@112 /2 g6", 48, 112, 48, 3, 2, 6},     {"regnet 48@56 g6", 48, 56, 48, 3, 1, 6},
      {"regnet 104@28 g13", 104, 28, 104, 3, 1, 13},     {"regnet 208@14 g26", 208, 14, 208, 3, 1, 26},
      {"regnet 440@7 g55", 440, 7, 440, 3, 1, 55},       {"resnext 128@56 g32", 128, 56, 128, 3, 1, 32},
      {"resnext 256@56 /2 g32", 256, 56, 256, 3, 2, 32}, {"resnext 256@28 g32", 256, 28, 256, 3, 1, 32},
      {"resnext 512@14 g32", 512, 14, 512, 3, 1, 32},
  };
  memory_bound_table("grouped", grouped, reps);
  epilogue_table(reps);
  return 0;
}
