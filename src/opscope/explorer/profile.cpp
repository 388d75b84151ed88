#include "opscope/explorer/profile.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <thread>

#include "opscope/importer/import.h"
#include "opscope/importer/job.h"
#include "opscope/profiler/store.h"

namespace opscope::explorer {

Profile::Profile(std::string label, std::string source, prof::Trace trace)
    : label_(std::move(label)), source_(std::move(source)), trace_(std::move(trace)) {
  // The two indexes only read the trace: built side by side when it is large.
  if (trace_.events.size() < (size_t(1) << 16)) {
    timeline_ = std::make_unique<TimelineIndex>(trace_);
    corr_ = std::make_unique<CorrelationIndex>(trace_);
    return;
  }
  std::exception_ptr error;
  std::thread side([&] {
    try {
      corr_ = std::make_unique<CorrelationIndex>(trace_);
    } catch (...) {
      error = std::current_exception();
    }
  });
  try {
    timeline_ = std::make_unique<TimelineIndex>(trace_);
  } catch (...) {
    side.join();
    throw;
  }
  side.join();
  if (error) std::rethrow_exception(error);
}

std::shared_ptr<Profile> Profile::failed(std::string label, std::string source, std::string error) {
  std::shared_ptr<Profile> p(new Profile());
  p->label_ = std::move(label);
  p->source_ = std::move(source);
  p->error_ = error.empty() ? "unknown error" : std::move(error);
  return p;
}

const analysis::KeyAverages& Profile::key_averages() const {
  std::call_once(ops_once_, [&] { ops_ = analysis::key_averages(trace_); });
  return *ops_;
}

const std::vector<MemoryTrack>& Profile::memory() const {
  std::call_once(memory_once_, [&] { memory_ = memory_tracks(trace_); });
  return memory_;
}

ProfilePtr open_profile(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p(path);
  std::string label = p.filename().string();
  if (label.empty()) label = p.parent_path().filename().string();
  if (label == prof::kProfileDbFile) label = p.parent_path().filename().string();
  if (label.empty()) label = path;
  try {
    return std::make_shared<Profile>(label, path, importer::load_profile_or_trace(path));
  } catch (const std::exception& e) {
    return Profile::failed(label, path, e.what());
  }
}

namespace {
bool is_profile(const std::filesystem::path& p) {
  std::error_code ec;
  if (!std::filesystem::is_directory(p, ec)) return std::filesystem::exists(p, ec);
  return std::filesystem::exists(p / prof::kProfileDbFile, ec) || importer::is_trace_path(p.string()) ||
         importer::is_job_dir(p.string());  // DIR/rank-N: one job, opened as one
}
}  // namespace

std::vector<std::string> profiles_in(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (is_profile(path) || !fs::is_directory(path, ec)) return {path};
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(path, ec))
    if (entry.is_directory(ec) && is_profile(entry.path())) found.push_back(entry.path().string());
  if (found.empty()) return {path};
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace opscope::explorer
