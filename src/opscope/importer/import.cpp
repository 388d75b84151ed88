#include "opscope/importer/import.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "opscope/core/error.h"
#include "opscope/importer/convert.h"
#include "opscope/importer/gpu_peaks.h"
#include "opscope/importer/job.h"
#include "opscope/importer/kineto_reader.h"
#include "opscope/importer/trace_file.h"
#include "opscope/profiler/store.h"

namespace opscope::importer {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> trace_files_in(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file(ec) && is_trace_file_name(entry.path().filename().string()))
      files.push_back(entry.path().string());
  if (ec) fail("import", "{}: cannot list the folder ({})", dir, ec.message());
  std::sort(files.begin(), files.end());
  if (files.empty()) fail("import", "{}: no trace files (*.json, *.json.gz) in the folder", dir);
  return files;
}

}  // namespace

std::vector<std::string> trace_files(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (std::string& f : trace_files_in(p)) files.push_back(std::move(f));
    } else {
      files.push_back(p);
    }
  }
  if (files.empty()) fail("import", "no trace file given");
  return files;
}

std::string unmatched_flows_note(int64_t without_start, int64_t without_finish, int64_t in_files, int64_t of_files) {
  if (without_start <= 0 && without_finish <= 0) return "";
  std::string what;
  if (without_start > 0) what = fmt::format("{} flow end{} (ph f) whose start lies before the window", without_start, without_start == 1 ? "" : "s");
  if (without_finish > 0)
    what += fmt::format("{}{} flow start{} (ph s) whose end lies after it", what.empty() ? "" : " and ", without_finish,
                        without_finish == 1 ? "" : "s");
  std::string where = of_files > 1 ? fmt::format(", in {} of {} files", in_files, of_files) : "";
  return what + where + ": Kineto's normal edge of the recording window (ignored)";
}

namespace {

// The datasheet peaks of a GPU in gpu_peaks.h's table, as config JSON ("" if unknown).
std::string datasheet_peaks(const FileReport& r) {
  std::optional<GpuPeaks> known = gpu_peaks(r.gpu_name, r.gpu_memory, r.gpu_sms);
  if (!known) return "";
  std::string seen = r.gpu_memory > 0 ? fmt::format(", {:.1f} GiB", double(r.gpu_memory) / double(int64_t(1) << 30)) : "";
  if (r.gpu_sms > 0) seen += fmt::format(", {} SMs", r.gpu_sms);
  return peaks_json(*known, r.gpu_name,
                    fmt::format("datasheet figures for {} (opscope's GPU table, from deviceProperties: {}{}; "
                                "--peak-gbps / --peak-gflops override them)",
                                known->model, r.gpu_name, seen));
}

// Into (t0, kind) order, stably. Sorting small keys and moving each event once is
// several times faster than sorting the events themselves (four strings each).
void sort_events(std::vector<prof::TraceEvent>& events) {
  struct Key {
    int64_t t0;
    uint32_t kind, index;
  };
  std::vector<Key> keys(events.size());
  bool sorted = true;
  for (size_t i = 0; i < events.size(); ++i) {
    keys[i] = {events[i].t0, uint32_t(events[i].kind), uint32_t(i)};
    if (i && (keys[i].t0 < keys[i - 1].t0 || (keys[i].t0 == keys[i - 1].t0 && keys[i].kind < keys[i - 1].kind)))
      sorted = false;
  }
  if (sorted) return;
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.t0 != b.t0) return a.t0 < b.t0;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.index < b.index;
  });
  // Applied in place, one cycle at a time: no second vector of events at the peak.
  std::vector<uint32_t> where(events.size());  // where[i]: the event that goes to position i
  for (size_t i = 0; i < keys.size(); ++i) where[i] = keys[i].index;
  std::vector<Key>().swap(keys);
  for (size_t i = 0; i < where.size(); ++i) {
    if (where[i] == i) continue;
    prof::TraceEvent held = std::move(events[i]);
    size_t at = i;
    while (where[at] != i) {
      size_t from = where[at];
      events[at] = std::move(events[from]);
      where[at] = uint32_t(at);
      at = from;
    }
    events[at] = std::move(held);
    where[at] = uint32_t(at);
  }
}

}  // namespace

ImportResult import_traces(const std::vector<std::string>& paths, const ImportOptions& options) {
  std::vector<std::string> files = trace_files(paths);
  std::vector<RawTrace> raws;
  raws.reserve(files.size());
  for (const std::string& f : files)
    raws.push_back(options.read_window ? read_kineto(f, options.read_window) : read_kineto(f));

  ImportResult result;
  prof::Trace& trace = result.trace;
  int64_t base = INT64_MAX;
  for (const RawTrace& r : raws) base = std::min(base, first_time_ns(r));
  if (base == INT64_MAX) base = 0;
  trace.base_time_ns = base;
  trace.wall_time_ns = base;

  const bool many = raws.size() > 1;
  std::vector<int64_t> ranks(raws.size());
  for (size_t i = 0; i < raws.size(); ++i) {
    ranks[i] = many ? (raws[i].rank >= 0 ? raws[i].rank : int64_t(i)) : raws[i].rank;
    for (size_t j = 0; many && j < i; ++j)
      if (ranks[j] == ranks[i])
        fail("import", "{}: rank {} again ({} is rank {} too): give the ranks of one run", files[i], ranks[i],
             files[j], ranks[j]);
  }
  AppendContext ctx;
  std::vector<FileReport> reports;
  for (size_t i = 0; i < raws.size(); ++i) {
    ctx.prefix = many ? fmt::format("rank {} ", ranks[i]) : "";
    size_t before = trace.events.size();
    reports.push_back(append_trace(raws[i], trace, ctx, many ? ranks[i] : -1));
    reports.back().rank = ranks[i];  // a lone file's distributedInfo rank too (its tracks stay rank -1)
    raws[i] = RawTrace{};  // its events are in the trace now
    // JSON with nothing to show would open as an empty profile that looks like a working one.
    if (trace.events.size() == before)
      fail("import", "{}: no events{}: not a torch.profiler trace, or one that recorded nothing", files[i],
           reports.back().warnings.empty() ? "" : " (" + reports.back().warnings.front() + ")");
  }
  sort_events(trace.events);

  nlohmann::ordered_json from;
  from["files"] = files;
  from["format"] = reports.front().format;
  from["launch_rule"] = reports.front().launch_rule;
  nlohmann::ordered_json per = nlohmann::ordered_json::array();
  nlohmann::ordered_json warnings = nlohmann::ordered_json::array();
  for (const FileReport& r : reports) {
    per.push_back({{"file", r.file}, {"rank", r.rank}, {"world_size", r.world_size}, {"backend", r.backend},
                   {"format", r.format}, {"launch_rule", r.launch_rule}, {"gpu", r.gpu_name}, {"ops", r.ops},
                   {"launches", r.launches}, {"gpu_events", r.gpu_events},
                   {"gpu_events_without_launch", r.gpu_events_without_launch}, {"memory_events", r.memory_events}});
    for (const std::string& w : r.warnings) {
      result.warnings.push_back(fmt::format("{}: {}", r.file, w));
      warnings.push_back(result.warnings.back());
    }
    result.flows_without_start += r.flows_without_start;
    result.flows_without_finish += r.flows_without_finish;
    result.files_with_unmatched_flows += r.flows_without_start + r.flows_without_finish > 0;
  }
  result.files = int64_t(reports.size());
  std::string flows = unmatched_flows_note(result.flows_without_start, result.flows_without_finish,
                                           result.files_with_unmatched_flows, result.files);
  if (!flows.empty()) {
    result.warnings.push_back(reports.size() == 1 ? reports.front().file + ": " + flows : flows);
    warnings.push_back(result.warnings.back());
  }
  from["ranks"] = per;
  from["warnings"] = warnings;
  nlohmann::ordered_json cfg;
  cfg["imported_from"] = from;
  cfg["correlate_device_time"] = true;
  bool shapes = std::any_of(trace.events.begin(), trace.events.end(),
                            [](const prof::TraceEvent& e) { return e.kind == prof::EventKind::op && !e.shapes.empty(); });
  cfg["record_shapes"] = shapes;
  std::string peaks = datasheet_peaks(reports.front());
  if (!peaks.empty()) {
    auto p = nlohmann::ordered_json::parse(peaks);
    cfg["device_peaks"] = p;
    cfg["peak_gbps"] = p["copy_gbps"];
  }
  trace.config_json = cfg.dump();
  override_peaks(trace, options.peak_gbps, options.peak_gflops);
  result.format = reports.front().format;
  return result;
}

void override_peaks(prof::Trace& trace, double gbps, double gflops) {
  if (gbps <= 0 && gflops <= 0) return;
  auto cfg = trace.config_json.empty() ? nlohmann::ordered_json::object()
                                       : nlohmann::ordered_json::parse(trace.config_json, nullptr, false);
  if (!cfg.is_object()) cfg = nlohmann::ordered_json::object();
  nlohmann::ordered_json peaks = cfg.contains("device_peaks") && cfg["device_peaks"].is_object()
                                     ? cfg["device_peaks"]
                                     : nlohmann::ordered_json::object();
  if (gbps > 0) peaks["copy_gbps"] = gbps;
  if (gflops > 0) peaks["matmul_gflops"] = gflops;
  peaks["method"] = "given on the command line (--peak-gbps / --peak-gflops)";
  cfg["device_peaks"] = peaks;
  if (peaks.contains("copy_gbps")) cfg["peak_gbps"] = peaks["copy_gbps"];
  trace.config_json = cfg.dump();
}

bool is_trace_path(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (fs::exists(fs::path(path) / prof::kProfileDbFile, ec)) return false;
    for (const auto& entry : fs::directory_iterator(path, ec))
      if (entry.is_regular_file(ec) && is_trace_file_name(entry.path().filename().string())) return true;
    return false;
  }
  return is_trace_file_name(path);
}

prof::Trace load_profile_or_trace(const std::string& path, std::vector<std::string>* warnings) {
  if (is_job_dir(path)) return load_job(path, warnings);
  if (!is_trace_path(path)) return prof::load_profile(path);
  ImportResult r = import_traces({path});
  if (warnings) *warnings = std::move(r.warnings);
  return std::move(r.trace);
}

}  // namespace opscope::importer
