// The instructions layer end to end: samples land in the right kernel, launch and op;
// lines of a built-in and of a generated kernel; the OS refusing; dropped samples; the
// saved profile; `opscope kernel`'s analysis, its errors and its JSON.
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "opscope/analysis/kernel_profile.h"
#include "opscope/analysis/line_averages.h"
#include "opscope/compiler/compile.h"
#include "opscope/analysis/kernel_static.h"
#include "opscope/explorer/api.h"
#include "opscope/ops/custom.h"
#include "opscope/ops/ops.h"
#include "opscope/profiler/record_function.h"
#include "opscope/analysis/instruction_samples.h"
#include "opscope/profiler/sample_cost.h"
#include "opscope/profiler/sampler.h"
#include "opscope/profiler/session.h"
#include "opscope/profiler/store.h"
#include "opscope/runtime/cpu_device.h"
#include "cli_util.h"
#include "test_util.h"

using namespace opscope;
using namespace opscope::prof;
using nlohmann::json;
using opscope::test_util::error_of;
namespace fs = std::filesystem;

// A kernel that spins in a function of a known name (not inlined, not folded away).
// noipa: no clone of it either (GCC would name a constant-propagated copy "....constprop.0").
extern "C" [[gnu::noipa]] double opscope_test_spin_in_known_function(int64_t n, double x) {
  for (int64_t i = 0; i < n; ++i) {
    x = x * 1.0000001 + 1e-9;
    asm volatile("" : "+x"(x));
  }
  return x;
}

namespace {

constexpr int64_t kSpinIters = 20'000'000;  // ~20-40 ms of one core: hundreds of samples at 20 kHz

CustomOp spin_op() {
  static CustomOp op = register_op({.name = "spin_probe",
                                    .infer = [](std::span<const Tensor> in) {
                                      return OutputSpec{in[0].shape(), in[0].dtype()};
                                    },
                                    .cpu = [](std::span<const KernelTensor> in, const KernelTensor& out, int64_t b,
                                              int64_t e) {
                                      for (int64_t r = b; r < e; ++r)
                                        out.ptr<float>()[r] = float(opscope_test_spin_in_known_function(kSpinIters, 1.0));
                                    }});
  return op;
}

ProfilerConfig sampled(int64_t rate = 20'000) {
  ProfilerConfig c;
  c.layers = parse_layers("framework,runtime,device,instructions");
  c.sample_rate_hz = rate;
  return c;
}

std::string warning_of(const Trace& t) {
  json j = json::parse(t.sampling_json.empty() ? "{}" : t.sampling_json);
  return j.value("warning", "");
}

// The trace of spin_probe on 2 rows (one per core) between two other ops. `refused` is the
// OS's reason where it refuses perf_event_open (an unprivileged container): the tests fail
// with it, since CI runs where sampling is permitted (as root).
struct SpinRun {
  Trace trace;
  uint64_t spin_launch = 0;
  std::string refused;
};

SpinRun run_spin() {
  SpinRun r;
  CpuDevice dev(2, true, 0, CpuSchedule::static_slices);
  CustomOp spin = spin_op();
  Tensor x = zeros({2, 1}, DType::f32, &dev);
  Tensor big = full({1 << 16}, 1.0, DType::f32, &dev);
  Profiler p(sampled());
  p.start();
  {
    OPSCOPE_RECORD_FUNCTION("spin_region");
    Tensor a = exp(big);
    Tensor y = spin({x});
    Tensor b = exp(a);
    dev.synchronize();
  }
  p.stop();
  r.trace = p.trace();
  r.refused = warning_of(r.trace);
  for (const TraceEvent& e : r.trace.events)
    if (e.kind == EventKind::launch && e.name == "spin_probe") r.spin_launch = e.id;
  return r;
}

const SpinRun& spin_run() {
  static SpinRun r = run_spin();
  return r;
}

}  // namespace

TEST(InstructionsConfig, LayerBringsTheDeviceLayerAndRatesAreChecked) {
  EXPECT_EQ(parse_layers("instructions"), uint32_t(kInstructions | kDevice));
  EXPECT_EQ(layers_str(parse_layers("framework,instructions")), "framework,device,instructions");
  EXPECT_EQ(parse_layers("all") & kInstructions, 0u) << "sampling costs: 'all' keeps the three layers";
  ProfilerConfig c;
  c.layers = kInstructions;
  EXPECT_EQ(error_of([&] { c.validate(); }).substr(0, 9), "[layers] ");
  c = sampled(50);
  EXPECT_NE(error_of([&] { c.validate(); }).find("[sample_rate] 50 Hz is out of range"), std::string::npos);
  c = sampled(200'000);
  EXPECT_NE(error_of([&] { c.validate(); }).find("out of range"), std::string::npos);
  EXPECT_EQ(json::parse(sampled().to_json()).at("sample_rate_hz"), 20000);
  ::setenv("OPSCOPE_PROFILE_SAMPLE_RATE", "fast", 1);
  EXPECT_NE(error_of([] { ProfilerConfig::from_env(); }).find("[OPSCOPE_PROFILE_SAMPLE_RATE] 'fast'"),
            std::string::npos);
  ::setenv("OPSCOPE_PROFILE_SAMPLE_RATE", "1000", 1);
  EXPECT_EQ(ProfilerConfig::from_env().sample_rate_hz, 1000);
  ::setenv("OPSCOPE_PROFILE_SAMPLE_RATE", "auto", 1);
  EXPECT_EQ(ProfilerConfig::from_env().sample_rate_hz, ProfilerConfig::kAutoSampleRate);
  ::unsetenv("OPSCOPE_PROFILE_SAMPLE_RATE");
  // The default leaves the rate to opscope, and says so.
  EXPECT_EQ(ProfilerConfig().sample_rate_hz, ProfilerConfig::kAutoSampleRate);
  EXPECT_EQ(json::parse(sampled(ProfilerConfig::kAutoSampleRate).to_json()).at("sample_rate_hz"), "auto");
  EXPECT_NO_THROW(sampled(ProfilerConfig::kAutoSampleRate).validate());
  EXPECT_EQ(parse_sample_rate(" auto ", "--sample-rate"), ProfilerConfig::kAutoSampleRate);
  EXPECT_EQ(parse_sample_rate("2500", "--sample-rate"), 2500);
  EXPECT_EQ(error_of([] { parse_sample_rate("99", "--sample-rate"); }),
            "[--sample-rate] '99' is not a sample rate (100..100000 samples per second per core, or auto)");
  EXPECT_NE(error_of([] { parse_sample_rate("10k", "--sample-rate"); }).find("'10k' is not a sample rate"),
            std::string::npos);
}

// The auto rate's arithmetic: the budget's share of a core over one sample's cost, in steps
// of 100 Hz, never above the cap or below 100 Hz.
TEST(InstructionsConfig, AutoRateKeepsSamplingWithinItsBudget) {
  using opscope::prof::detail::rate_within_budget;
  EXPECT_EQ(rate_within_budget(20'000, 0.02, 10'000), 1'000);  // 20 us a sample (a VM): 1 kHz is 2%
  EXPECT_EQ(rate_within_budget(20'900, 0.02, 10'000), 900);
  EXPECT_EQ(rate_within_budget(1'500, 0.02, 10'000), 10'000);  // bare metal: the cap
  EXPECT_EQ(rate_within_budget(1'000'000, 0.02, 10'000), 100); // 1 ms a sample: the floor
  EXPECT_EQ(rate_within_budget(0, 0.02, 10'000), 10'000);
}

// A profile left at the default rate measures the interrupt's cost, picks the rate from it,
// and the saved sampling summary says both.
TEST(InstructionsCapture, AutoRateIsMeasuredAndReported) {
  CpuDevice dev(2, true, 0, CpuSchedule::static_slices);
  Tensor big = full({1 << 20}, 0.5, DType::f32, &dev);
  Profiler p(sampled(ProfilerConfig::kAutoSampleRate));
  p.start();
  for (int i = 0; i < 4; ++i) big = exp(big);
  dev.synchronize();
  p.stop();
  ASSERT_EQ(warning_of(p.trace()), "") << "the OS refused sampling";
  json j = json::parse(p.trace().sampling_json);
  EXPECT_TRUE(j.at("rate_auto").get<bool>());
  int64_t cost = j.at("sample_cost_ns").get<int64_t>();
  EXPECT_GT(cost, 0);
  std::optional<int64_t> again = opscope::prof::detail::sample_cost_ns();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(cost, *again) << "measured once per process";
  EXPECT_EQ(j.at("rate_hz").get<int64_t>(),
            opscope::prof::detail::rate_within_budget(cost, ProfilerConfig::kSampleCostBudget,
                                                      ProfilerConfig::kMaxAutoSampleRateHz));
  std::string summary = analysis::sampling_summary(analysis::sampling_info(p.trace()));
  EXPECT_NE(summary.find("(auto: a sample costs "), std::string::npos) << summary;
}

TEST(InstructionsCapture, SamplesLandInTheRightKernelLaunchAndOp) {
  const SpinRun& r = spin_run();
  ASSERT_EQ(r.refused, "") << "the OS refused sampling";
  const Trace& t = r.trace;
  ASSERT_NE(r.spin_launch, 0u);
  json info = json::parse(t.sampling_json);
  EXPECT_TRUE(info.at("event") == "cpu-clock" || info.at("event") == "cycles") << info;
  ASSERT_GT(t.samples.size(), 50u) << t.sampling_json;
  EXPECT_EQ(info.at("samples"), int64_t(t.samples.size()));

  // Each sample lies inside a kernel event of its own core, of its own launch.
  std::multimap<uint64_t, const TraceEvent*> slices;
  for (const TraceEvent& e : t.events)
    if (e.kind == EventKind::kernel) slices.emplace(e.id, &e);
  analysis::SampleOwners owners(t);
  int64_t spin = 0, spin_in_fn = 0;
  std::set<int32_t> spin_tracks;
  for (const Sample& s : t.samples) {
    bool inside = false;
    auto [b, e] = slices.equal_range(s.launch);
    for (auto it = b; it != e; ++it) inside = inside || (it->second->track == s.track && it->second->t0 <= s.t && s.t <= it->second->t1);
    EXPECT_TRUE(inside) << "sample at " << s.t << " of launch " << s.launch;
    EXPECT_EQ(t.tracks[size_t(s.track)].kind, Track::Kind::device_core);
    if (s.launch != r.spin_launch) continue;
    ++spin;
    spin_tracks.insert(s.track);
    spin_in_fn += t.code_sites[size_t(s.site)].function.find("opscope_test_spin_in_known_function") != std::string::npos;
  }
  ASSERT_GT(spin, 40);
  EXPECT_GE(double(spin_in_fn), 0.9 * double(spin)) << spin_in_fn << " of " << spin;
  EXPECT_EQ(spin_tracks.size(), 2u) << "one row per core: both cores spun";
  EXPECT_EQ(owners.kernel(r.spin_launch), "spin_probe");
  EXPECT_EQ(owners.op(r.spin_launch), "spin_probe");
  // The spin dwarfs the exps: most samples are in it.
  EXPECT_GT(double(spin), 0.5 * double(t.samples.size()));

  analysis::KernelProfile k = analysis::kernel_profile(t, {"spin_probe", "", ""}, "test");
  ASSERT_FALSE(k.functions.empty());
  EXPECT_EQ(k.functions[0].first, "opscope_test_spin_in_known_function");
  EXPECT_EQ(k.samples, spin);
  EXPECT_EQ(k.cores.size(), 2u);
  EXPECT_GT(k.classified, 0);
  EXPECT_GT(k.est_ns, 0);
  int64_t listed = 0;
  for (const analysis::KernelInstruction& in : k.instructions) listed += in.samples;
  EXPECT_EQ(listed, k.classified);
}

TEST(InstructionsCapture, KernelViewErrorsNameWhatIsMissing) {
  const SpinRun& r = spin_run();
  ASSERT_EQ(r.refused, "") << "the OS refused sampling";
  std::string msg = error_of([&] { analysis::kernel_profile(r.trace, {"no_such_kernel", "", ""}, "prof"); });
  EXPECT_NE(msg.find("[kernel] prof: no samples in kernel 'no_such_kernel' (kernels with samples: spin_probe ("),
            std::string::npos)
      << msg;
  msg = error_of([&] { analysis::kernel_profile(r.trace, {"spin_probe", "exp", ""}, "prof"); });
  EXPECT_NE(msg.find("[--op] prof: kernel 'spin_probe' has no samples under op 'exp' (its ops: spin_probe ("),
            std::string::npos)
      << msg;
  Trace none;
  msg = error_of([&] { analysis::kernel_profile(none, {"spin_probe", "", ""}, "plain"); });
  EXPECT_NE(msg.find("[kernel] plain: no instruction samples: the profile was taken without the instructions layer"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("--layers framework,runtime,device,instructions"), std::string::npos);
}

TEST(InstructionsCapture, JsonHasTheIssuesShape) {
  const SpinRun& r = spin_run();
  ASSERT_EQ(r.refused, "") << "the OS refused sampling";
  json j = analysis::kernel_profile_json(analysis::kernel_profile(r.trace, {"spin_probe", "", ""}, "test"));
  EXPECT_EQ(j.at("kernel"), "spin_probe");
  EXPECT_TRUE(j.at("samples").is_number_integer());
  ASSERT_TRUE(j.at("source").is_array());
  for (const json& s : j["source"]) {
    for (const char* k : {"file", "text", "function"}) EXPECT_TRUE(s.at(k).is_string()) << k;
    EXPECT_TRUE(s.at("line").is_number_integer());
    EXPECT_TRUE(s.at("samples").is_number_integer());
  }
  ASSERT_TRUE(j.at("instructions").is_array());
  ASSERT_FALSE(j["instructions"].empty());
  int64_t sum = 0;
  for (const json& in : j["instructions"]) {
    EXPECT_EQ(in.at("address").get<std::string>().substr(0, 2), "0x");
    for (const char* k : {"text", "class", "width", "file"}) EXPECT_TRUE(in.at(k).is_string()) << k;
    EXPECT_TRUE(in.at("line").is_number_integer());
    sum += in.at("samples").get<int64_t>();
  }
  EXPECT_EQ(sum, j.at("classified").get<int64_t>());
  ASSERT_TRUE(j.at("classes").is_object());
  int64_t by_class = 0;
  for (auto& [c, n] : j["classes"].items()) by_class += n.get<int64_t>();
  EXPECT_EQ(by_class, sum);
  ASSERT_TRUE(j.at("cores").is_array());
  EXPECT_EQ(j["cores"].size(), 2u);
  EXPECT_TRUE(j["cores"][0].at("name").is_string());
  EXPECT_TRUE(j.at("notes").is_array());
}

TEST(InstructionsCapture, SavedProfileKeepsSamplesAndTheirCode) {
  const SpinRun& r = spin_run();
  ASSERT_EQ(r.refused, "") << "the OS refused sampling";
  std::string dir = ::testing::TempDir() + "opscope-samples-" + std::to_string(::getpid());
  export_profile(r.trace, dir);
  Trace back = load_profile(dir);
  ASSERT_EQ(back.samples.size(), r.trace.samples.size());
  for (size_t i = 0; i < back.samples.size(); ++i) {
    EXPECT_EQ(back.samples[i].t, r.trace.samples[i].t);
    EXPECT_EQ(back.samples[i].track, r.trace.samples[i].track);
    EXPECT_EQ(back.samples[i].site, r.trace.samples[i].site);
    EXPECT_EQ(back.samples[i].launch, r.trace.samples[i].launch);
  }
  ASSERT_EQ(back.code_sites.size(), r.trace.code_sites.size());
  for (size_t i = 0; i < back.code_sites.size(); ++i) {
    EXPECT_EQ(back.code_sites[i].address, r.trace.code_sites[i].address);
    EXPECT_EQ(back.code_sites[i].function, r.trace.code_sites[i].function);
    EXPECT_EQ(back.code_sites[i].file, r.trace.code_sites[i].file);
    EXPECT_EQ(back.code_sites[i].line, r.trace.code_sites[i].line);
  }
  ASSERT_EQ(back.code_modules.size(), r.trace.code_modules.size());
  EXPECT_EQ(back.code_modules[0].build_id, r.trace.code_modules[0].build_id);
  EXPECT_EQ(back.sampling_json, r.trace.sampling_json);
  // The same listing from the saved profile.
  auto k = analysis::kernel_profile(back, {"spin_probe", "", ""}, dir);
  EXPECT_EQ(k.functions[0].first, "opscope_test_spin_in_known_function");
  // trace.json: the samples are instants on the cores' tracks, and the sampling is said.
  std::ifstream in(dir + "/trace.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  json tj = json::parse(text);
  int64_t instants = 0;
  for (const json& e : tj.at("traceEvents")) instants += e.value("cat", "") == "sample";
  EXPECT_EQ(instants, int64_t(r.trace.samples.size()));
  EXPECT_EQ(tj.at("otherData").at("sampling").at("samples"), int64_t(r.trace.samples.size()));
  fs::remove_all(dir);
}

// A built-in kernel's samples resolve to its lines in libopscope (built with -g1).
TEST(InstructionsCapture, LineAttributionForABuiltInKernel) {
  CpuDevice dev(2);
  Tensor x = randn({1 << 20}, 3, DType::f32, &dev);
  Profiler p(sampled(50'000));
  p.start();
  for (int i = 0; i < 30; ++i) x = exp(x * 0.5f);
  dev.synchronize();
  p.stop();
  const Trace& t = p.trace();
  ASSERT_EQ(warning_of(t), "") << "the OS refused sampling";
  ASSERT_FALSE(t.samples.empty()) << t.sampling_json;
  auto kernels = analysis::sampled_kernels(t);
  std::string exp_kernel;
  for (auto& [name, n] : kernels)
    if (name.rfind("exp", 0) == 0) exp_kernel = name;
  ASSERT_FALSE(exp_kernel.empty()) << kernels.size();
  analysis::KernelProfile k = analysis::kernel_profile(t, {exp_kernel, "", ""}, "test");
  for (const std::string& n : k.notes)
    EXPECT_EQ(n.find("no debug information"), std::string::npos) << "libopscope is built with -g1: " << n;
  ASSERT_FALSE(k.source.empty()) << analysis::kernel_profile_text(k);
  const analysis::HotLine& hot = k.source[0];
  EXPECT_NE(hot.file.find("src/opscope/"), std::string::npos) << hot.file;
  EXPECT_GT(hot.line, 0);
  EXPECT_FALSE(hot.text.empty()) << "the source is in the tree: " << hot.file;
  EXPECT_EQ(k.op, "");
  // Per line across the profile: the exp kernel's hot line is a row, with its op.
  analysis::LineAverages lines = analysis::line_averages(t);
  ASSERT_FALSE(lines.rows.empty());
  bool found = false;
  for (const analysis::LineAverage& row : lines.rows)
    found = found || (row.file == hot.file && row.line == hot.line && row.kernel == exp_kernel && row.op == "exp");
  EXPECT_TRUE(found) << lines.table(10);
  EXPECT_NE(lines.table(5).find("exp"), std::string::npos);
}

// A compiled kernel's samples resolve to lines of its generated source in the cache.
TEST(InstructionsCapture, LineAttributionForAGeneratedKernel) {
  std::string cache = ::testing::TempDir() + "opscope-instr-cache-" + std::to_string(::getpid());
  CompileOptions opts;
  opts.cache_dir = cache;
  auto f = compile([](const Tensor& x) { return exp(x * 0.5f + 1.0f); }, "gen_lines", opts);
  Tensor x = randn({1 << 20}, 4);
  f(x);  // traces and builds
  cpu().synchronize();
  Profiler p(sampled(50'000));
  p.start();
  for (int i = 0; i < 30; ++i) f(x);
  cpu().synchronize();
  p.stop();
  const Trace& t = p.trace();
  ASSERT_EQ(warning_of(t), "") << "the OS refused sampling";
  CompileReport rep = f.report({x});
  ASSERT_EQ(rep.kernels.size(), 1u) << rep.str();
  analysis::KernelProfile k = analysis::kernel_profile(t, {rep.kernels[0], "", ""}, "test");
  ASSERT_FALSE(k.source.empty()) << analysis::kernel_profile_text(k);
  const analysis::HotLine& hot = k.source[0];
  EXPECT_EQ(fs::path(hot.file).filename(), "kernels.cpp") << hot.file;
  EXPECT_EQ(fs::path(hot.path).parent_path(), fs::path(rep.artifact_dir)) << "found beside kernels.so in the cache";
  EXPECT_FALSE(hot.text.empty());
  // Its function is among the sampled ones (not always the hottest: libm's exp and the OS's
  // page faults share the kernel's time, more so on a loaded machine).
  bool in_kernel_fn = false;
  for (auto& [fn, n] : k.functions) in_kernel_fn = in_kernel_fn || (fn.find(rep.symbols[0]) == 0 && n > 0);
  EXPECT_TRUE(in_kernel_fn) << analysis::kernel_profile_text(k);
  // The explorer's kernel view carries the compiled kernel's code analysed (kernel --static).
  {
    auto profile = std::make_shared<opscope::explorer::Profile>("gen", "test", t);
    opscope::explorer::ExplorerApi api({profile});
    auto v = api.get("/api/profiles/0/kernel", {{"name", rep.kernels[0]}});
    ASSERT_EQ(v.status, 200) << v.body.dump();
    ASSERT_TRUE(v.body.at("static").is_array()) << v.body.dump().substr(0, 400);
    ASSERT_EQ(v.body["static"].size(), 1u);
    EXPECT_EQ(v.body["static"][0].at("kernel"), rep.kernels[0]);
    EXPECT_FALSE(v.body["static"][0].at("loops").empty());
    EXPECT_FALSE(v.body["static"][0].at("verdicts").empty());
  }
  // --module: the artifact moved; the listing follows it, and says when it cannot.
  std::string moved = cache + "/moved";
  fs::create_directories(moved);
  fs::copy_file(rep.artifact_dir + "/kernels.so", moved + "/kernels.so");
  fs::copy_file(rep.artifact_dir + "/kernels.cpp", moved + "/kernels.cpp");
  fs::remove_all(rep.artifact_dir);
  // The kernel's own instructions (its samples in libm's exp keep theirs: libm is still there).
  auto own = [&](const analysis::KernelProfile& k) {
    int64_t n = 0;
    for (const analysis::KernelInstruction& in : k.instructions) n += in.function.find(rep.symbols[0]) == 0;
    return n;
  };
  ASSERT_GT(own(k), 0);
  analysis::KernelProfile gone = analysis::kernel_profile(t, {rep.kernels[0], "", ""}, "test");
  EXPECT_EQ(own(gone), 0);
  ASSERT_FALSE(gone.notes.empty());
  EXPECT_NE(gone.notes[0].find("moved or deleted since the profile"), std::string::npos) << gone.notes[0];
  analysis::KernelProfile found = analysis::kernel_profile(t, {rep.kernels[0], "", moved + "/kernels.so"}, "test");
  EXPECT_GT(own(found), 0) << (found.notes.empty() ? "" : found.notes[0]);
  EXPECT_FALSE(found.source[0].text.empty());
  // A different build of the same name is refused, not misread.
  fs::remove(moved + "/kernels.so");
  fs::copy_file("/proc/self/exe", moved + "/kernels.so");
  analysis::KernelProfile other = analysis::kernel_profile(t, {rep.kernels[0], "", moved + "/kernels.so"}, "test");
  EXPECT_EQ(own(other), 0);
  ASSERT_FALSE(other.notes.empty());
  EXPECT_NE(other.notes[0].find("not the file profiled"), std::string::npos) << other.notes[0];
  fs::remove_all(cache);
}

namespace {
long refuse(perf_event_attr*, int, int, int, unsigned long) {
  errno = EACCES;
  return -1;
}
}  // namespace

TEST(InstructionsCapture, RefusedSamplingWarnsAndTheProfileGoesOn) {
  prof::detail::set_perf_event_open_for_testing(refuse);
  CpuDevice dev(2);
  Tensor x = full({4096}, 1.0, DType::f32, &dev);
  ::testing::internal::CaptureStderr();
  Trace t;
  for (int window = 0; window < 2; ++window) {
    Profiler p(sampled());
    p.start();
    Tensor y = exp(x);
    dev.synchronize();
    p.stop();
    t = p.trace();
  }
  std::string err = ::testing::internal::GetCapturedStderr();
  prof::detail::set_perf_event_open_for_testing(nullptr);
  EXPECT_TRUE(t.samples.empty());
  std::string w = warning_of(t);
  EXPECT_NE(w.find("perf_event_open refused: Permission denied"), std::string::npos) << w;
  bool kernels = false;
  for (const TraceEvent& e : t.events) kernels = kernels || e.kind == EventKind::kernel;
  EXPECT_TRUE(kernels) << "the other layers still record";
  size_t first = err.find("opscope: no instruction samples: perf_event_open refused");
  EXPECT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find("opscope: no instruction samples", first + 1), std::string::npos) << "warned once: " << err;
  std::string msg = error_of([&] { analysis::kernel_profile(t, {"exp_f32", "", ""}, "denied"); });
  EXPECT_NE(msg.find("[kernel] denied: no instruction samples: sampling was refused (perf_event_open refused"),
            std::string::npos)
      << msg;
}

TEST(InstructionsCapture, SamplesOverTheCapAreDroppedAndCounted) {
  CpuDevice dev(1);
  CustomOp spin = spin_op();
  Tensor x = zeros({1, 1}, DType::f32, &dev);
  ProfilerConfig c = sampled(50'000);
  c.max_events = 8;  // per buffer: the core's kernel events fit, its samples do not
  Profiler p(c);
  p.start();
  Tensor y = spin({x});
  dev.synchronize();
  p.stop();
  const Trace& t = p.trace();
  ASSERT_EQ(warning_of(t), "") << "the OS refused sampling";
  json info = json::parse(t.sampling_json);
  EXPECT_GT(info.at("dropped").get<int64_t>(), 0) << info;
  EXPECT_LE(t.samples.size(), 8u);
  EXPECT_NE(analysis::sampling_summary(analysis::sampling_info(t)).find("dropped"), std::string::npos);
}

// `opscope kernel` as a user runs it, on the spin profile saved to disk: the list of
// sampled kernels, the listing, --json, and the errors for a missing kernel and for a
// profile taken without the layer.
TEST(InstructionsCli, KernelCommandListsAnnotatesAndErrs) {
  const SpinRun& r = spin_run();
  ASSERT_EQ(r.refused, "") << "the OS refused sampling";
  std::string dir = ::testing::TempDir() + "opscope-kernel-cli-" + std::to_string(::getpid());
  export_profile(r.trace, dir);
  testutil::CliResult list = testutil::run_opscope({"kernel", dir});
  ASSERT_EQ(list.status, 0) << list.out;
  EXPECT_NE(list.out.find("spin_probe"), std::string::npos) << list.out;

  testutil::CliResult text = testutil::run_opscope({"kernel", dir, "spin_probe"});
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_EQ(text.out.rfind("Kernel spin_probe: ", 0), 0u) << text.out;
  EXPECT_NE(text.out.find("Functions: opscope_test_spin_in_known_function"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Vector width: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Cores: "), std::string::npos) << text.out;

  std::string err;
  testutil::CliResult js = testutil::run_opscope_stdout({"kernel", dir, "spin_probe", "--json"}, err);
  ASSERT_EQ(js.status, 0) << err;
  json j = json::parse(js.out);
  EXPECT_EQ(j.at("kernel"), "spin_probe");
  int64_t in_spin = 0;
  for (const Sample& s : r.trace.samples) in_spin += s.launch == r.spin_launch;
  EXPECT_EQ(j.at("samples").get<int64_t>(), in_spin);
  EXPECT_EQ(j.at("cores").size(), 2u);
  EXPECT_FALSE(j.at("instructions").empty());

  // The hottest lines of the whole profile: the spin's, with its kernel and op.
  testutil::CliResult lines = testutil::run_opscope({"table", dir, "--group-by-line"});
  ASSERT_EQ(lines.status, 0) << lines.out;
  EXPECT_NE(lines.out.find("spin_probe"), std::string::npos) << lines.out;
  // A Release test binary has no line table, so the row is its function; a sanitizer build
  // (-g1) has one, so the row is the spin loop's line in this file.
  EXPECT_TRUE(lines.out.find("opscope_test_spin_in_known_function") != std::string::npos ||
              lines.out.find("instructions_test.cpp:") != std::string::npos)
      << lines.out;

  // The SQL view: each sample joined to its kernel and op.
  testutil::CliResult q = testutil::run_opscope_stdout(
      {"query", dir, "SELECT count(*) AS n FROM sample_chain WHERE kernel = 'spin_probe' AND op = 'spin_probe'", "--json"},
      err);
  ASSERT_EQ(q.status, 0) << err;
  EXPECT_EQ(json::parse(q.out).at(0).at("n").get<int64_t>(), in_spin) << q.out;

  testutil::CliResult missing = testutil::run_opscope({"kernel", dir, "no_such_kernel"});
  EXPECT_EQ(missing.status, 1) << missing.out;
  EXPECT_NE(missing.out.find("[kernel] " + dir + ": no samples in kernel 'no_such_kernel'"), std::string::npos)
      << missing.out;
  fs::remove_all(dir);

  // A profile without the layer: the error names the layer to turn on.
  CpuDevice dev(1);
  Tensor x = full({256}, 1.0, DType::f32, &dev);
  ProfilerConfig plain;
  plain.layers = parse_layers("framework,runtime,device");
  Profiler p(plain);
  p.start();
  Tensor y = exp(x);
  dev.synchronize();
  p.stop();
  std::string plain_dir = dir + "-plain";
  export_profile(p.trace(), plain_dir);
  testutil::CliResult none = testutil::run_opscope({"kernel", plain_dir, "exp_f32"});
  EXPECT_EQ(none.status, 1) << none.out;
  EXPECT_NE(none.out.find("the profile was taken without the instructions layer"), std::string::npos) << none.out;
  EXPECT_NE(none.out.find("--layers framework,runtime,device,instructions"), std::string::npos) << none.out;
  fs::remove_all(plain_dir);
}

TEST(InstructionsCli, SampleRateFlagTakesACountOrAuto) {
  testutil::CliResult bad = testutil::run_opscope(
      {"profile", "rmsnorm", "--layers", "framework,runtime,device,instructions", "--sample-rate", "fast"});
  EXPECT_NE(bad.status, 0) << bad.out;
  EXPECT_NE(bad.out.find("[--sample-rate] 'fast' is not a sample rate (100..100000 samples per second per core, "
                         "or auto)"),
            std::string::npos)
      << bad.out;
  testutil::CliResult help = testutil::run_opscope({"profile", "rmsnorm", "--help"});
  EXPECT_NE(help.out.find("--sample-rate TEXT=auto"), std::string::npos) << help.out;
}

// The line table's Line column keeps the file's name and line number whatever the path's
// length: leading folders give way first.
TEST(LineTable, LongPathsKeepTheFileNameAndLine) {
  analysis::LineAverages t;
  auto add = [&](std::string file, int64_t line, std::string function) {
    analysis::LineAverage r;
    r.file = std::move(file);
    r.line = line;
    r.function = std::move(function);
    r.kernel = "mul_f32";
    r.samples = 1;
    t.rows.push_back(r);
  };
  add("/work/src/opscope/kernels/cpu/elementwise_binary.cpp", 118, "run");
  add("/x/a_file_name_longer_than_the_whole_column_itself.cpp", 7, "f");
  add("../k.cpp", 9, "g");
  add("", 0, "opscope_test_spin_in_known_function");
  std::string text = t.table(0);
  EXPECT_NE(text.find(" .../cpu/elementwise_binary.cpp:118 "), std::string::npos) << text;
  EXPECT_NE(text.find(" ...er_than_the_whole_column_itself.cpp:7 "), std::string::npos) << text;
  EXPECT_NE(text.find(" ../k.cpp:9 "), std::string::npos) << text;
  EXPECT_NE(text.find(" opscope_test_spin_in_known_function "), std::string::npos) << text;
}

// `kernel --static` on a built-in kernel: the function its samples fell in, read from
// libopscope's test binary: its spin loop is found scalar (a chain of double FMAs), with the
// kernel's samples in it.
TEST(InstructionsCapture, StaticAnalysisOfABuiltInKernelReadsItsSampledFunction) {
  const SpinRun& r = spin_run();
  ASSERT_EQ(r.refused, "") << "the OS refused sampling";
  std::vector<analysis::StaticKernel> ks = analysis::static_profile(r.trace, "spin_probe", "spin");
  ASSERT_FALSE(ks.empty());
  const analysis::StaticKernel& k = ks[0];
  EXPECT_NE(k.symbol.find("opscope_test_spin_in_known_function"), std::string::npos) << k.symbol;
  ASSERT_FALSE(k.loops.empty()) << analysis::static_text(ks);
  int64_t in_loops = 0;
  for (const analysis::StaticLoop& l : k.loops) in_loops += l.samples;
  EXPECT_GT(in_loops, 0) << analysis::static_text(ks);
  EXPECT_TRUE(k.loops[0].facts.scalar()) << analysis::static_text(ks);
  EXPECT_EQ(k.verdicts[0].rule, "scalar_loop") << analysis::static_text(ks);
  EXPECT_NE(k.notes.back().find("a built-in kernel"), std::string::npos);
  // The code rebuilt since the profile (another build id): said, not analysed.
  prof::Trace rebuilt = r.trace;
  for (prof::CodeModule& m : rebuilt.code_modules) m.build_id = "0123456789abcdef";
  try {
    analysis::static_profile(rebuilt, "spin_probe", "spin");
    ADD_FAILURE() << "a rebuilt module was read";
  } catch (const opscope::Error& e) {
    EXPECT_NE(std::string(e.what()).find("rebuilt since the profile"), std::string::npos) << e.what();
  }
}

// The explorer's instructions views on the spin profile: the kernel view (source lines with
// their text, instructions), the samples of a time window with their ops, the line table;
// 404s that name what is missing.
TEST(InstructionsExplorer, KernelSamplesAndLinesViews) {
  const SpinRun& r = spin_run();
  ASSERT_EQ(r.refused, "") << "the OS refused sampling";
  using opscope::explorer::ExplorerApi;
  auto profile = std::make_shared<opscope::explorer::Profile>("spin", "test", r.trace);
  ExplorerApi api({profile});
  int64_t in_spin = 0;
  for (const Sample& s : r.trace.samples) in_spin += s.launch == r.spin_launch;

  auto k = api.get("/api/profiles/0/kernel", {{"name", "spin_probe"}});
  ASSERT_EQ(k.status, 200) << k.body.dump();
  EXPECT_EQ(k.body.at("kernel"), "spin_probe");
  EXPECT_EQ(k.body.at("samples").get<int64_t>(), in_spin);
  EXPECT_FALSE(k.body.at("instructions").empty());
  ASSERT_TRUE(k.body.contains("files"));
  // A built-in kernel's code analysed from the functions its samples fell in.
  ASSERT_TRUE(k.body.at("static").is_array()) << k.body.at("static").dump();
  ASSERT_FALSE(k.body["static"].empty());
  EXPECT_NE(k.body["static"][0].at("symbol").get<std::string>().find("opscope_test_spin_in_known_function"),
            std::string::npos)
      << k.body["static"][0].dump().substr(0, 300);

  auto all = api.get("/api/profiles/0/samples", {});
  ASSERT_EQ(all.status, 200) << all.body.dump();
  EXPECT_EQ(all.body.at("count").get<int64_t>(), int64_t(r.trace.samples.size()));
  const json& ops = all.body.at("ops");
  EXPECT_NE(std::find(ops.begin(), ops.end(), "spin_probe"), ops.end()) << ops;
  auto thinned = api.get("/api/profiles/0/samples", {{"max", "10"}});
  EXPECT_LE(thinned.body.at("t").size(), 10u);
  EXPECT_EQ(thinned.body.at("count"), all.body.at("count"));  // the count is kept when thinned
  EXPECT_EQ(api.get("/api/profiles/0/samples", {{"t0", "5"}, {"t1", "1"}}).status, 400);

  auto lines = api.get("/api/profiles/0/lines", {{"limit", "3"}});
  ASSERT_EQ(lines.status, 200);
  EXPECT_LE(lines.body.at("rows").size(), 3u);
  EXPECT_EQ(lines.body.at("rows").at(0).at("kernel"), "spin_probe");

  auto missing = api.get("/api/profiles/0/kernel", {{"name", "no_such_kernel"}});
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(missing.body.dump().find("no samples in kernel 'no_such_kernel'"), std::string::npos) << missing.body;

  Trace plain = r.trace;
  plain.samples.clear();
  plain.sampling_json.clear();
  ExplorerApi none({std::make_shared<opscope::explorer::Profile>("plain", "test", plain)});
  auto no_layer = none.get("/api/profiles/0/lines", {});
  EXPECT_EQ(no_layer.status, 404);
  EXPECT_NE(no_layer.body.dump().find("without the instructions layer"), std::string::npos) << no_layer.body;
}
