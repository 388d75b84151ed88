// The device rates the advisor prices a fused kernel with, from the probe's peaks: the
// streaming rate its traffic moves at, and what its math costs in generated code.
#pragma once
#include <map>
#include <string>
#include <string_view>

#include "opscope/analysis/roofline.h"

namespace opscope::advisor {

// The streaming rate (GB/s) of an opscope kernel with a `ws`-byte working set: the
// probe's best with ordinary stores, even beyond the last-level cache where the probe's
// non-temporal stores go faster. The one place that choice is made:
//  - the launch cost is fitted at this rate from small eager launches (in cache, where
//    no kernel streams);
//  - every kernel (eager elementwise, rms_norm, generated ones) writes results of 8 MiB
//    or more with streaming stores (kernels/cpu/stream_store.h), yet on the RMSNorm case
//    study (4096x4096, 128 MiB moved) the fused kernels ran slower than the
//    ordinary-store rate, not at the non-temporal one.
// If the kernels come to reach the non-temporal rate beyond the cache, return
// roof.gbps_at(ws) there.
double kernel_store_gbps(const analysis::Roofline& roof, double ws);

// The generated kernels' math cost per element per core, by op ("silu" → ns), from a
// device peaks object (JSON) that carries compiler/math_probe's measurement; empty when
// it carries none (older profiles, imported traces, a probe without a compiler).
std::map<std::string, double> generated_math_ns(std::string_view peaks_json);

}  // namespace opscope::advisor
