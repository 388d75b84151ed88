// Writing small torch.profiler traces for the importer's tests: events as torch writes
// them, into a temp folder that is removed with the fixture.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "opscope/analysis/key_averages.h"
#include "opscope/core/error.h"
#include "opscope/importer/import.h"
#include "opscope/importer/trace_file.h"
#include "opscope/profiler/trace.h"

namespace opscope::test {

using nlohmann::json;

// A complete (ph X) event.
inline json x_event(const std::string& cat, const std::string& name, json pid, json tid, double ts, double dur,
                    json args = json::object()) {
  json e = {{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", pid}, {"tid", tid}, {"ts", ts}, {"dur", dur}};
  if (!args.empty()) e["args"] = args;
  return e;
}

inline json flow(const std::string& ph, int64_t id, json pid, json tid, double ts) {
  json e = {{"ph", ph}, {"id", id}, {"pid", pid}, {"tid", tid}, {"ts", ts}, {"cat", "ac2g"}, {"name", "ac2g"}};
  if (ph == "f") e["bp"] = "e";
  return e;
}

inline json memory_event(json pid, json tid, double ts, int64_t addr, int64_t bytes, int64_t total, int device_type,
                         int device_id) {
  return {{"ph", "i"}, {"cat", "cpu_instant_event"}, {"s", "t"}, {"name", "[memory]"}, {"pid", pid}, {"tid", tid},
          {"ts", ts},
          {"args", {{"Addr", addr}, {"Bytes", bytes}, {"Total Allocated", total}, {"Total Reserved", 2 * total},
                    {"Device Type", device_type}, {"Device Id", device_id}}}};
}

inline json h100() {
  return {{"id", 0}, {"name", "NVIDIA H100 80GB HBM3"}, {"totalGlobalMem", 85045231616}, {"computeMajor", 9},
          {"computeMinor", 0}, {"numSms", 132}};
}

// OPSCOPE_TEST_TRACES_OUT=DIR: every trace file a test writes is also copied to DIR, named
// by the test (scripts/fuzz.sh seeds the importer's fuzz targets with the suite's traces).
inline void keep_for_fuzzing(const std::string& name, const std::string& text) {
  const char* out = std::getenv("OPSCOPE_TEST_TRACES_OUT");
  if (!out || !importer::is_trace_file_name(name)) return;
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string test = info ? std::string(info->test_suite_name()) + "." + info->name() : "setup";
  std::ofstream(std::filesystem::path(out) / (test + "-" + std::filesystem::path(name).filename().string()),
                std::ios::binary)
      << text;
}

class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() / ("opscope_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(file(name), std::ios::binary) << text;
    keep_for_fuzzing(name, text);
    return file(name);
  }
  std::string write(const std::string& name, const json& j) const { return write(name, j.dump()); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The only event of `kind` named `name` (a test failure when not exactly one).
inline const prof::TraceEvent& only(const prof::Trace& t, prof::EventKind kind, const std::string& name) {
  const prof::TraceEvent* found = nullptr;
  int n = 0;
  for (const prof::TraceEvent& e : t.events)
    if (e.kind == kind && e.name == name) found = &e, ++n;
  static prof::TraceEvent none;
  if (n != 1) ADD_FAILURE() << n << " " << prof::kind_name(kind) << " events named " << name;
  return n == 1 ? *found : none;
}

inline const prof::Track& track_of(const prof::Trace& t, const prof::TraceEvent& e) {
  static prof::Track none;
  if (e.track < 0 || size_t(e.track) >= t.tracks.size()) return none;
  return t.tracks[size_t(e.track)];
}

inline json config(const prof::Trace& t) { return json::parse(t.config_json); }

// The message of the Error that importing `path` throws ("" when none).
inline std::string import_error(const std::string& path) {
  try {
    importer::import_traces({path});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace opscope::test
