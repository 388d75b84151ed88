// Key averages per source line: the instructions layer's samples summed per (source
// line, kernel, framework op) across the whole profile, hottest first. The table that
// says which line of which kernel costs the most in a model (torch's key_averages with
// group_by="line").
//
//   a row's samples = samples at instructions of that line, in launches of that kernel
//                     launched by that op (code without a line table: one row per function)
//   share           = samples / all samples kept (inside kernels)
//   est. time       = share × core time inside kernel events on the sampled cores
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "opscope/analysis/instruction_samples.h"
#include "opscope/analysis/trace.h"

namespace opscope::analysis {

struct LineAverage {
  std::string file;      // "" for code without a line table
  int line = 0;
  std::string function;  // the function of its first sample
  std::string kernel;
  std::string op;        // "" when the launching op was not recorded
  int64_t samples = 0;
  double share = 0;      // of all samples
  double est_ns = 0;
  std::string text;      // the line's source (when the file is found)
};

struct LineAverages {
  SamplingInfo sampling;
  int64_t total_samples = 0;
  std::vector<LineAverage> rows;  // hottest first

  // The `row_limit` hottest rows (0: all) as a fixed-width table.
  std::string table(int64_t row_limit = 20) const;
  nlohmann::json json() const;  // {sampling, total_samples, rows: [{file, line, function, kernel, op, samples, share, est_ns, text}]}
};

// Throws "[what] ..." naming the layer to turn on when the trace has no samples.
LineAverages line_averages(const Trace& trace, std::string_view what = "key_averages", std::string_view source = "profile");

}  // namespace opscope::analysis
