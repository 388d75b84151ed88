#include "opscope/importer/job.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "opscope/core/error.h"
#include "opscope/profiler/store.h"

namespace opscope::importer {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

// "rank-12" -> 12; -1 for any other name.
int64_t rank_of_folder(const std::string& name) {
  if (name.rfind("rank-", 0) != 0 || name.size() == 5) return -1;
  int64_t r = -1;
  auto [end, ec] = std::from_chars(name.data() + 5, name.data() + name.size(), r);
  return ec == std::errc() && end == name.data() + name.size() ? r : -1;
}

// The rank-N subfolders that hold a saved profile, by rank.
std::map<int64_t, fs::path> rank_folders(const fs::path& dir) {
  std::map<int64_t, fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    int64_t r = rank_of_folder(entry.path().filename().string());
    if (r >= 0 && entry.is_directory(ec) && fs::exists(entry.path() / prof::kProfileDbFile, ec)) out.emplace(r, entry.path());
  }
  return out;
}

struct Part {
  int64_t rank = 0;
  fs::path folder;
  prof::Trace trace;
  json distributed;         // the rank's "distributed" metadata (null when none)
  int64_t offset_ns = 0;    // added to the rank's clock to read rank 0's
  std::string placed;       // how: "shared clock", "offset measured at init", "own clock"
};

json config_of(const prof::Trace& t) {
  json cfg = t.config_json.empty() ? json::object() : json::parse(t.config_json, nullptr, false);
  return cfg.is_object() ? cfg : json::object();
}

// Where the rank's clock stands against rank 0's (job.h), with a warning when unknown.
void place(Part& p, std::vector<std::string>& warnings) {
  const json& clock = p.distributed.is_object() && p.distributed.contains("clock") ? p.distributed["clock"] : json();
  if (!clock.is_object() || !clock.contains("offset_ns") || !clock["offset_ns"].is_number_integer()) {
    p.placed = "own clock";
    if (p.rank != 0)
      warnings.push_back(fmt::format("{}: no clock offset to rank 0 recorded: placed by its own clock", p.folder.string()));
    return;
  }
  p.offset_ns = clock["offset_ns"].get<int64_t>();
  p.placed = clock.value("shared", false) ? "shared clock" : "offset measured at init";
}

// Appends one rank's events, tracks and devices to `out`, ids moved past those already there.
void append(const Part& p, int64_t base, prof::Trace& out, uint64_t& op_off, uint64_t& launch_off) {
  const std::string prefix = fmt::format("rank {} ", p.rank);
  std::map<int32_t, int32_t> device;
  for (const prof::DeviceInfo& d : p.trace.devices) {
    prof::DeviceInfo n = d;
    n.index = int32_t(out.devices.size());
    n.name = prefix + d.name;
    device[d.index] = n.index;
    out.devices.push_back(std::move(n));
  }
  auto dev = [&](int32_t d) {
    auto it = device.find(d);
    return it == device.end() ? d : it->second;
  };
  const int32_t track_off = int32_t(out.tracks.size());
  for (const prof::Track& t : p.trace.tracks) {
    prof::Track n = t;
    n.name = prefix + t.name;
    n.rank = int32_t(p.rank);
    if (n.device >= 0) n.device = dev(n.device);
    out.tracks.push_back(std::move(n));
  }
  out.dropped_per_track.resize(size_t(track_off), 0);
  for (size_t i = 0; i < p.trace.tracks.size(); ++i)
    out.dropped_per_track.push_back(i < p.trace.dropped_per_track.size() ? p.trace.dropped_per_track[i] : 0);
  out.dropped += p.trace.dropped;

  const int64_t shift = p.trace.base_time_ns + p.offset_ns - base;
  uint64_t max_op = 0, max_launch = 0;
  for (const prof::TraceEvent& e : p.trace.events) {
    prof::TraceEvent n = e;
    n.t0 += shift;
    n.t1 += shift;
    n.track += track_off;
    if (n.device >= 0) n.device = dev(n.device);
    bool op = e.kind == prof::EventKind::op || e.kind == prof::EventKind::range;
    bool launch = e.kind == prof::EventKind::launch || e.kind == prof::EventKind::kernel;
    if (op) n.id += op_off, max_op = std::max(max_op, e.id);
    if (launch) n.id += launch_off, max_launch = std::max(max_launch, e.id);
    if (e.parent) n.parent += op_off, max_op = std::max(max_op, e.parent);
    out.events.push_back(std::move(n));
  }
  op_off += max_op;
  launch_off += max_launch;
}

}  // namespace

bool is_job_dir(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec) || fs::exists(fs::path(path) / prof::kProfileDbFile, ec)) return false;
  return !rank_folders(path).empty();
}

prof::Trace load_job(const std::string& dir, std::vector<std::string>* warnings_out) {
  std::vector<std::string> warnings;
  std::map<int64_t, fs::path> folders = rank_folders(dir);
  if (folders.empty()) fail("job", "{}: no rank-N folder with a saved profile (profile.db)", dir);
  std::vector<Part> parts;
  for (auto& [rank, folder] : folders) {
    Part p;
    p.rank = rank;
    p.folder = folder;
    try {
      p.trace = prof::load_profile(folder.string());
    } catch (const Error& e) {
      fail("job", "{}: rank {}'s profile cannot be read: {}", dir, rank, e.what());
    }
    json cfg = config_of(p.trace);
    if (cfg.contains("distributed") && cfg["distributed"].is_object()) p.distributed = cfg["distributed"];
    else warnings.push_back(fmt::format("{}: no distributed metadata (not profiled under torch.distributed)", folder.string()));
    if (p.distributed.is_object() && p.distributed.value("rank", rank) != rank)
      warnings.push_back(fmt::format("{}: the profile says rank {}", folder.string(), p.distributed.value("rank", rank)));
    place(p, warnings);
    parts.push_back(std::move(p));
  }
  // One job: the same world and the same job id in every rank's metadata.
  const json& first = parts.front().distributed;
  int64_t world = first.is_object() ? first.value("world_size", int64_t(0)) : 0;
  std::string job_id = first.is_object() ? first.value("job_id", std::string()) : "";
  for (const Part& p : parts) {
    if (!p.distributed.is_object()) continue;
    if (p.distributed.value("job_id", std::string()) != job_id)
      warnings.push_back(fmt::format("{}: from another run (job {}, rank {}'s is {})", p.folder.string(),
                                     p.distributed.value("job_id", std::string("?")), parts.front().rank, job_id));
  }
  for (int64_t r = 0; r < world; ++r)
    if (!folders.count(r)) warnings.push_back(fmt::format("{}: no profile of rank {} (rank-{}) in a job of {} ranks", dir, r, r, world));

  prof::Trace out;
  int64_t base = INT64_MAX;
  for (const Part& p : parts) base = std::min(base, p.trace.base_time_ns + p.offset_ns);
  out.base_time_ns = base;
  const Part& p0 = parts.front();
  out.wall_time_ns = p0.trace.wall_time_ns - (p0.trace.base_time_ns + p0.offset_ns - base);
  uint64_t op_off = 0, launch_off = 0;
  json ranks = json::array();
  for (const Part& p : parts) {
    append(p, base, out, op_off, launch_off);
    json r = {{"rank", p.rank}, {"folder", p.folder.filename().string()}, {"clock", p.placed}, {"offset_ns", p.offset_ns}};
    if (p.distributed.is_object()) {
      for (const char* k : {"hostname", "local_rank"})
        if (p.distributed.contains(k)) r[k] = p.distributed[k];
    }
    ranks.push_back(std::move(r));
  }
  std::stable_sort(out.events.begin(), out.events.end(), [](const prof::TraceEvent& a, const prof::TraceEvent& b) {
    return a.t0 != b.t0 ? a.t0 < b.t0 : a.kind < b.kind;
  });
  json cfg = config_of(p0.trace);
  cfg.erase("distributed");
  json job = {{"dir", dir}, {"ranks", ranks}};
  if (first.is_object()) {
    for (const char* k : {"backend", "world_size", "job_id"})
      if (first.contains(k)) job[k] = first[k];
  }
  cfg["job"] = job;
  out.config_json = cfg.dump();
  if (warnings_out) *warnings_out = std::move(warnings);
  return out;
}

}  // namespace opscope::importer
