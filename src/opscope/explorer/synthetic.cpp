#include "opscope/explorer/synthetic.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace opscope::explorer {

using prof::EventKind;
using prof::TraceEvent;

namespace {

struct SplitMix {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int64_t jitter(int64_t base, int pct) {  // base ± pct%
    int64_t span = std::max<int64_t>(1, base * pct / 100);
    return base - span + int64_t(next() % uint64_t(2 * span + 1));
  }
};

constexpr double kCoreGBps = 12.0;   // bytes/ns per core, memory bound
constexpr double kCoreGFlops = 40.0;  // flops/ns per core, compute bound

// Simulates host threads issuing ops to a device of `cores` cores, recording every layer.
class Sim {
 public:
  Sim(int threads, int cores, uint64_t seed) : rng_{seed}, cores_(cores) {
    trace_.base_time_ns = 1'000'000'000;
    trace_.wall_time_ns = 1'700'000'000'000'000'000;
    for (int t = 0; t < threads; ++t)
      trace_.tracks.push_back({prof::Track::Kind::host_thread,
                               t == 0 ? "main thread" : fmt::format("thread {}", t + 1), 4242 + t, -1, -1});
    for (int c = 0; c < cores; ++c)
      trace_.tracks.push_back({prof::Track::Kind::device_core, fmt::format("cpu:0 core {}", c), 0, 0, c});
    trace_.devices.push_back({0, "cpu:0",
                              fmt::format("CPU device, {} cores, peak {:.1f} GB/s", cores, kCoreGBps * cores * 1.1),
                              cores});
    clock_.assign(threads, 0);
    stack_.resize(threads);
    core_free_.assign(cores, 0);
  }

  int64_t now(int t) const { return clock_[t]; }
  void advance(int t, int64_t ns) { clock_[t] += ns; }

  uint64_t begin(int t, EventKind kind, std::string name, std::string shapes = {}, std::string source = {}) {
    TraceEvent e;
    e.kind = kind;
    e.t0 = clock_[t];
    e.id = ++next_corr_;
    e.parent = stack_[t].empty() ? 0 : trace_.events[stack_[t].back()].id;
    e.name = std::move(name);
    e.track = t;
    e.value = kind == EventKind::op ? int64_t(++seq_) : 0;
    e.shapes = std::move(shapes);
    e.source = std::move(source);
    stack_[t].push_back(trace_.events.size());
    trace_.events.push_back(std::move(e));
    advance(t, rng_.jitter(400, 50));
    return trace_.events.back().id;
  }

  void end(int t) {
    advance(t, rng_.jitter(300, 50));
    trace_.events[stack_[t].back()].t1 = clock_[t];
    stack_[t].pop_back();
  }

  // A kernel launch from the op open on thread t: allocation, launch, slices on the cores.
  void launch(int t, const std::string& kernel, int64_t bytes, int64_t flops) {
    int64_t op_id = stack_[t].empty() ? 0 : trace_.events[stack_[t].back()].id;
    TraceEvent a;
    a.kind = EventKind::alloc;
    a.t0 = a.t1 = clock_[t];
    a.id = 0x7f0000000000ull + (rng_.next() % 4096) * 4096;
    a.bytes = bytes / 3 + 64;
    allocated_ += a.bytes;
    a.value = allocated_;
    a.name = "alloc";
    a.track = t;
    a.device = 0;
    trace_.events.push_back(a);
    advance(t, rng_.jitter(150, 30));

    TraceEvent l;
    l.kind = EventKind::launch;
    l.t0 = clock_[t];
    advance(t, rng_.jitter(900, 30));
    l.t1 = clock_[t];
    l.id = ++next_launch_;
    l.parent = op_id;
    l.bytes = bytes;
    l.flops = flops;
    l.name = kernel;
    l.track = t;
    l.device = 0;
    l.stream = t;
    trace_.events.push_back(l);

    // The device runs launches in order: this one starts when the previous is done.
    int64_t work_ns = std::max<int64_t>(
        800, int64_t(std::max(double(bytes) / kCoreGBps, double(flops) / kCoreGFlops)) / cores_);
    int64_t start = std::max(l.t1 + rng_.jitter(2500, 40), stream_done_);
    int64_t done = start;
    for (int c = 0; c < cores_; ++c) {
      TraceEvent k;
      k.kind = EventKind::kernel;
      k.t0 = std::max(start, core_free_[c]) + rng_.jitter(300, 50);
      k.t1 = k.t0 + rng_.jitter(work_ns, 8);
      k.id = l.id;
      k.parent = op_id;
      k.bytes = bytes / cores_;
      k.flops = flops / cores_;
      k.name = kernel;
      k.track = int32_t(clock_.size()) + c;
      k.device = 0;
      k.stream = t;
      core_free_[c] = k.t1;
      done = std::max(done, k.t1);
      trace_.events.push_back(std::move(k));
    }
    stream_done_ = done;
  }

  void sync(int t) {
    TraceEvent s;
    s.kind = EventKind::sync;
    s.t0 = clock_[t];
    s.t1 = std::max(clock_[t] + 200, stream_done_ + 500);
    s.name = "device";
    s.track = t;
    s.device = 0;
    clock_[t] = s.t1;
    trace_.events.push_back(std::move(s));
  }

  void free_all(int t) {
    TraceEvent f;
    f.kind = EventKind::free;
    f.t0 = f.t1 = clock_[t];
    f.bytes = allocated_;
    allocated_ = 0;
    f.name = "free";
    f.track = t;
    f.device = 0;
    trace_.events.push_back(std::move(f));
  }

  size_t size() const { return trace_.events.size(); }

  prof::Trace finish(std::string config_json) {
    trace_.config_json = std::move(config_json);
    trace_.dropped_per_track.assign(trace_.tracks.size(), 0);
    std::stable_sort(trace_.events.begin(), trace_.events.end(), [](const TraceEvent& a, const TraceEvent& b) {
      return a.t0 != b.t0 ? a.t0 < b.t0 : a.kind < b.kind;
    });
    return std::move(trace_);
  }

  SplitMix rng_;

 private:
  int cores_;
  prof::Trace trace_;
  std::vector<int64_t> clock_, core_free_;
  std::vector<std::vector<size_t>> stack_;
  uint64_t next_corr_ = 0, next_launch_ = 0, seq_ = 0;
  int64_t stream_done_ = 0, allocated_ = 0;
};

// One op with one kernel: elementwise over n f32 elements reading `inputs` tensors.
void simple_op(Sim& s, int t, const std::string& op, int64_t n, int inputs, int flops_per_elem,
               const std::string& shapes) {
  s.begin(t, EventKind::op, op, shapes, "examples/model.cpp:" + std::to_string(40 + op.size()));
  s.launch(t, op + "_f32", n * 4 * (inputs + 1), n * flops_per_elem);
  s.end(t);
}

void layer(Sim& s, int t, int64_t tokens, int64_t hidden) {
  const int64_t n = tokens * hidden;
  const std::string act = fmt::format("[({}, {}) f32]", tokens, hidden);
  // linear → matmul + add
  s.begin(t, EventKind::op, "linear", fmt::format("[({}, {}) f32, ({}, {}) f32]", tokens, hidden, hidden, hidden));
  s.begin(t, EventKind::op, "matmul");
  s.launch(t, "matmul_f32", (n * 2 + hidden * hidden) * 4, 2 * tokens * hidden * hidden);
  s.end(t);
  simple_op(s, t, "add", n, 2, 1, act);
  s.end(t);
  simple_op(s, t, "gelu", n, 1, 8, act);
  // layer_norm → mean, sub, pow, mean, add, rsqrt, mul
  s.begin(t, EventKind::op, "layer_norm", act, "examples/model.cpp:88");
  for (const char* op : {"mean", "sub", "pow", "mean", "add", "rsqrt", "mul"})
    simple_op(s, t, op, n, 1, 1, act);
  s.end(t);
}

}  // namespace

prof::Trace synthetic_trace(const SyntheticSpec& spec) {
  if (spec.threads < 1 || spec.cores < 1 || spec.events < 0)
    throw std::invalid_argument("[synthetic] threads and cores must be >= 1, events >= 0");
  Sim s(spec.threads, spec.cores, spec.seed);
  int64_t step = 0;
  while (int64_t(s.size()) < spec.events) {
    for (int t = 0; t < spec.threads && int64_t(s.size()) < spec.events; ++t) {
      s.begin(t, EventKind::range, fmt::format("step {}", step));
      s.begin(t, EventKind::range, "forward");
      int layers = 4 + int(s.rng_.next() % 4);
      for (int l = 0; l < layers; ++l) layer(s, t, 16 << (s.rng_.next() % 4), 1024);
      s.end(t);
      s.sync(t);
      s.free_all(t);
      s.end(t);
      s.advance(t, s.rng_.jitter(20'000, 50));  // the program between steps
    }
    ++step;
  }
  return s.finish(fmt::format(
      R"({{"activities":["framework","runtime","device"],"record_shapes":true,"with_stack":true,"synthetic":{{"events":{},"threads":{},"cores":{},"seed":{}}}}})",
      spec.events, spec.threads, spec.cores, spec.seed));
}

prof::Trace synthetic_rmsnorm(std::string_view impl, int64_t rows, int64_t hidden, int iterations, int cores) {
  if (impl != "naive" && impl != "builtin" && impl != "compiled")
    throw std::invalid_argument("[synthetic] impl must be naive, builtin or compiled");
  Sim s(1, cores, 7);
  const int64_t n = rows * hidden;
  const std::string x = fmt::format("({}, {}) f32", rows, hidden);
  const std::string r = fmt::format("({}, 1) f32", rows);
  const std::string w = fmt::format("({}) f32", hidden);
  const std::string fused = "fused_pow_mean_add_rsqrt_mul_mul_f32";
  for (int it = 0; it < iterations; ++it) {
    s.begin(0, EventKind::range, fmt::format("rmsnorm {}", impl));
    if (impl == "naive") {
      struct Step { const char* op; int64_t bytes, flops; std::string shapes; };
      const Step steps[] = {
          {"pow", n * 8, n, "[" + x + "]"},
          {"mean", n * 4 + rows * 4, n, "[" + x + "]"},
          {"add", rows * 8, rows, "[" + r + "]"},
          {"rsqrt", rows * 8, rows, "[" + r + "]"},
          {"mul", n * 8 + rows * 4, n, "[" + x + ", " + r + "]"},
          {"mul", n * 8 + hidden * 4, n, "[" + x + ", " + w + "]"},
      };
      int line = 12;
      for (const auto& st : steps) {
        s.begin(0, EventKind::op, st.op, st.shapes, fmt::format("examples/rmsnorm.cpp:{} (naive_rms_norm)", line++));
        s.launch(0, std::string(st.op) + "_f32", st.bytes, st.flops);
        s.end(0);
      }
    } else {
      s.begin(0, EventKind::op, "rms_norm", "[" + x + ", " + w + "]",
              impl == "builtin" ? "examples/rmsnorm.cpp:30 (builtin_rms_norm)"
                                : "examples/rmsnorm.cpp:36 (compiled_rms_norm)");
      s.launch(0, impl == "builtin" ? "rms_norm_f32" : fused, n * 8 + hidden * 4, n * 4);
      s.end(0);
    }
    s.sync(0);
    s.free_all(0);
    s.end(0);
    s.advance(0, 30'000);
  }
  std::string config = fmt::format(
      R"({{"activities":["framework","runtime","device"],"record_shapes":true,"with_stack":true,"case":"rmsnorm","impl":"{}","shape":[{},{}])",
      impl, rows, hidden);
  if (impl == "compiled") {
    config += fmt::format(
        R"(,"artifacts":{{"{}":{{"manifest":{{"kernel":"{}","graph":"pow → mean → add → rsqrt → mul → mul","dtype":"f32","cache_key":"3f9a1c2e"}},"source":"// generated by opscope compile\nvoid {}(const float* x, const float* w, float* out, long rows, long h, float eps) {{\n  for (long r = 0; r < rows; ++r) {{\n    float acc = 0;\n    for (long i = 0; i < h; ++i) acc += x[r*h+i] * x[r*h+i];\n    float inv = 1.0f / __builtin_sqrtf(acc / h + eps);\n    for (long i = 0; i < h; ++i) out[r*h+i] = x[r*h+i] * inv * w[i];\n  }}\n}}\n"}}}})",
        fused, fused, fused);
  }
  config += "}";
  return s.finish(config);
}

}  // namespace opscope::explorer
