// A compiled kernel analysed without running it (the NEFF analysed, as Neuron's
// profiler does): `opscope kernel --static`. For each generated kernel of an artifact
// (its manifest.json names the kernels, their symbols and domains; kernels.so holds the
// code, built with line tables), each innermost loop's instruction mix and vector width,
// and per element of the kernel's domain:
//
//   elements / iteration = the step of its widest written stream (bytes) / element size;
//                          a loop that writes nothing: of its widest read stream
//   loads, stores        = data-stream instructions / elements per iteration
//   bytes / element      = bytes read and written through data streams / elements per
//                          iteration (constants and the stack excluded), summed over the
//                          vector loops (a two-pass kernel reads its input twice)
//   recorded             = with a profile: the launches' bytes / (launches × domain elements)
//
// and verdicts an advisor can use (Verdict::rule): scalar_loop, spills, gathers,
// narrow_vectors, passes, extra_bytes, scalar_remainder; "vectorized" when none applies.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "opscope/analysis/trace.h"
#include "opscope/debuginfo/loop_facts.h"

namespace opscope::analysis {

struct StaticLoop {
  debuginfo::LoopFacts facts;
  double elements = 0;               // per iteration; 0 when no stream's step is known
  double loads_per_element = -1;     // -1 when elements is unknown
  double stores_per_element = -1;
  double bytes_per_element = -1;
  bool remainder = false;            // a scalar loop over the lines a vector loop covers: its tail
  int64_t samples = -1;              // with a sampled profile; -1 without
};

struct Verdict {
  std::string rule;      // "scalar_loop", "spills", ..., "vectorized"
  std::string severity;  // "warn" (costs time), "info"
  std::string message;
};

struct StaticKernel {
  std::string kernel, symbol;
  std::string library;   // the artifact's kernels.so
  std::string source;    // its kernels.cpp
  std::string dtype;     // "f32", "bf16", "f16" (from the kernel's name)
  int elem_bytes = 4;
  std::vector<int64_t> domain;
  int64_t elements = 0;  // the domain's product: elements per launch
  int64_t cols = 0;      // a row's length, for row kernels (0: flat)
  int passes = 0, inputs = 0, outputs = 0;
  std::vector<std::string> ops;
  std::vector<StaticLoop> loops;  // innermost loops that compute or move data, in address order
  double bytes_per_element = -1;           // over the vector loops
  double recorded_bytes_per_element = -1;  // from the profile's launches
  int64_t launches = 0;
  std::vector<Verdict> verdicts;  // warn first
  std::vector<std::string> notes;
};

// The kernels of the artifact in `dir` (or only `kernel`); with `trace`, the bytes its
// launches recorded and the samples in each loop. Throws "[--static] ..." when `dir` is
// no artifact, its library is gone, or it has no kernel of that name (listing them).
std::vector<StaticKernel> static_artifact(const std::string& dir, const std::string& kernel, const Trace* trace);

// The compiled kernels a profile ran (its config's "artifacts"), or only `kernel`; a
// kernel that is not compiled but has instruction samples (a built-in one): the functions
// its samples fell in, each with >= 5% of them. Throws "[--static] <source>: ..." when it
// ran none, or not that one and it has no samples (listing the compiled ones).
std::vector<StaticKernel> static_profile(const Trace& trace, const std::string& kernel, std::string_view source_name);

// The vector width this CPU's widest registers have (512, 256, 128): what -march=native
// code can use here.
int native_vector_bits();

std::string static_text(const std::vector<StaticKernel>& kernels);
// [{kernel, symbol, library, source, dtype, domain, elements, passes, ops, loops: [{head,
//   latch, lines: [first, last], instructions, classes: {..}, widths: {scalar, 128, 256,
//   512}, widest, elements, loads_per_element, stores_per_element, bytes_per_element,
//   stack_accesses, gathers, calls, remainder, samples}], bytes_per_element,
//   recorded_bytes_per_element, launches, verdicts: [{rule, severity, message}], notes}]
nlohmann::json static_json(const std::vector<StaticKernel>& kernels);

}  // namespace opscope::analysis
