// Inside one kernel: the instructions layer's samples of a kernel laid over its source
// lines and instructions, perf annotate's and Nsight Compute's Source page's shape.
//
//   samples of the kernel = samples whose launch's kernel is `kernel` (and, with `op`,
//                           whose launching framework op is `op`)
//   a line's samples      = samples at instructions the line table gives to that line
//                           (inlined code counts at the inlined line)
//   est. time             = share of samples × core time inside sampled kernels
//   classes / widths      = samples per instruction class and vector width, over the
//                           samples whose instruction was decoded
//   imbalance             = the busiest core's samples / the mean over cores with samples
//
// The source lines come from the profile (resolved at collection); instructions are
// decoded at read time from the module file, which must be the one profiled (same build
// id): a moved artifact is found with `module`; a rebuilt one is refused with a note.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "opscope/analysis/instruction_samples.h"
#include "opscope/analysis/trace.h"

namespace opscope::analysis {

struct KernelQuery {
  std::string kernel;  // the launch's kernel name, e.g. "softmax_f32"
  std::string op;      // only launches of this framework op ("" = any)
  std::string module;  // read the code from this file instead of the profiled path ("" = as profiled)
};

struct HotLine {
  std::string file;      // as the line table names it
  int line = 0;
  std::string function;  // the function its hottest instruction is in
  int64_t samples = 0;
  std::string text;      // the line's source text ("" when the file was not found)
  std::string path;      // where the text was read from
};

struct KernelInstruction {
  uint64_t address = 0;  // the module's own address
  std::string text;
  std::string cls;       // debuginfo::class_name
  std::string width;     // "512", "256", "128", "scalar"
  int64_t samples = 0;
  std::string file;
  int line = 0;
  std::string function;
};

struct CoreSamples {
  int32_t track = 0;
  std::string name;
  int64_t samples = 0;
};

struct KernelProfile {
  std::string kernel, op;
  SamplingInfo sampling;
  int64_t samples = 0;
  double est_ns = 0;
  std::vector<HotLine> source;                // hottest first
  std::vector<KernelInstruction> instructions;  // each function's in address order, hottest function first
  std::vector<std::pair<std::string, int64_t>> functions;  // hottest first
  std::map<std::string, int64_t> classes;     // samples per class
  std::map<std::string, int64_t> widths;      // samples per vector width
  int64_t classified = 0;                     // samples whose instruction was decoded
  std::vector<CoreSamples> cores;
  double imbalance = 0;
  std::vector<std::string> notes;             // why something is not shown
};

// Throws "[kernel] ..." when the trace has no samples (naming the layer to turn on), or
// none in `q.kernel` (listing the kernels that have some), or none under `q.op`.
KernelProfile kernel_profile(const Trace& trace, const KernelQuery& q, std::string_view source_name);

// The kernels with samples, hottest first.
std::vector<std::pair<std::string, int64_t>> sampled_kernels(const Trace& trace);

// perf annotate's listing: the `max_lines` hottest lines with `context` lines of code
// around each and the instructions under each, then the summary.
std::string kernel_profile_text(const KernelProfile& k, int max_lines = 10, int context = 2);
// {kernel, op, samples, sampling, source: [{file, line, samples, text, function}],
//  instructions: [{address, text, class, width, samples, file, line, function}],
//  classes: {class: samples}, widths: {width: samples}, cores: [{track, name, samples}],
//  imbalance, functions: [{name, samples}], notes: [...]}
nlohmann::json kernel_profile_json(const KernelProfile& k);

}  // namespace opscope::analysis
