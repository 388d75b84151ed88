#include "opscope/analysis/instruction_samples.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <unordered_set>

#include "opscope/core/error.h"

namespace opscope::analysis {

SamplingInfo sampling_info(const Trace& trace) {
  SamplingInfo s;
  if (trace.sampling_json.empty()) return s;
  nlohmann::json j = nlohmann::json::parse(trace.sampling_json, nullptr, false);
  if (!j.is_object()) return s;
  s.asked = true;
  s.event = j.value("event", "");
  s.hardware = j.value("hardware", false);
  s.rate_hz = j.value("rate_hz", int64_t(0));
  s.rate_auto = j.value("rate_auto", false);
  s.sample_cost_ns = j.value("sample_cost_ns", int64_t(0));
  s.period_ns = j.value("period_ns", int64_t(0));
  s.samples = j.value("samples", int64_t(0));
  s.outside_kernels = j.value("outside_kernels", int64_t(0));
  s.lost = j.value("lost", int64_t(0));
  s.dropped = j.value("dropped", int64_t(0));
  s.warning = j.value("warning", "");
  return s;
}

std::string sampling_summary(const SamplingInfo& info) {
  if (!info.asked) return "no instruction samples";
  if (info.event.empty()) return "no instruction samples (" + info.warning + ")";
  std::string rate = info.rate_hz % 1000 == 0 ? fmt::format("{} kHz", info.rate_hz / 1000)
                                               : fmt::format("{} Hz", info.rate_hz);
  std::string out = fmt::format("{}{} at {} per core", info.event, info.hardware ? " (hardware)" : " (software timer)",
                                rate);
  if (info.rate_auto && info.sample_cost_ns)
    out += fmt::format(" (auto: a sample costs {:.1f} us here, {:.1f}% of a core at this rate; --sample-rate to "
                       "choose)",
                       double(info.sample_cost_ns) / 1e3, double(info.sample_cost_ns * info.rate_hz) / 1e7);
  if (info.lost || info.dropped)
    out += fmt::format("; {} samples lost (the OS's ring was full), {} dropped (per-core cap)", info.lost, info.dropped);
  return out;
}

void require_samples(const Trace& trace, std::string_view what, std::string_view source) {
  if (!trace.samples.empty()) return;
  SamplingInfo info = sampling_info(trace);
  if (!info.asked)
    fail(what,
         "{}: no instruction samples: the profile was taken without the instructions layer (profile with "
         "--layers framework,runtime,device,instructions, OPSCOPE_PROFILE_LAYERS=...,instructions or "
         "Config(layers=\"...,instructions\"))",
         source);
  if (!info.warning.empty()) fail(what, "{}: no instruction samples: sampling was refused ({})", source, info.warning);
  fail(what, "{}: no instruction samples: no sample fell inside a kernel ({} outside kernels; run longer kernels or "
       "raise the rate)", source, info.outside_kernels);
}

SampleOwners::SampleOwners(const Trace& trace) {
  std::unordered_map<uint64_t, const std::string*> ops;
  for (const TraceEvent& e : trace.events)
    if (e.kind == EventKind::op || e.kind == EventKind::range) ops.emplace(e.id, &e.name);
  std::unordered_set<int32_t> sampled;
  for (const prof::Sample& s : trace.samples) sampled.insert(s.track);
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::kernel) continue;
    if (sampled.count(e.track)) sampled_kernel_ns_ += e.t1 - e.t0;
    auto [it, fresh] = launches_.try_emplace(e.id);
    if (!fresh) continue;
    it->second.kernel = e.name;
    if (auto op = ops.find(e.parent); op != ops.end()) it->second.op = *op->second;
  }
}

const std::string& SampleOwners::kernel(uint64_t launch) const {
  auto it = launches_.find(launch);
  return it == launches_.end() ? none_ : it->second.kernel;
}

const std::string& SampleOwners::op(uint64_t launch) const {
  auto it = launches_.find(launch);
  return it == launches_.end() ? none_ : it->second.op;
}

}  // namespace opscope::analysis
