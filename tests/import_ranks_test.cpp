// Several ranks' traces of one run as one profile: each rank's threads and GPUs under
// "rank R", one timeline from the hosts' clocks, the across-rank table (slowest rank)
// with collectives marked.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "cli_util.h"
#include "import_util.h"
#include "opscope/core/error.h"
#include "opscope/importer/ranks.h"
#include "opscope/profiler/store.h"
#include "trace_util.h"

namespace opscope::test {
namespace {

using prof::EventKind;

// Rank r: one matmul (10 + r µs) and an all-reduce whose NCCL kernel takes 50 + 10 r µs;
// rank r's clock starts r ms later.
json rank_trace(int rank, int world) {
  json ev = json::array();
  ev.push_back(x_event("user_annotation", "ProfilerStep#3", 9, 9, 0, 500));
  ev.push_back(x_event("cpu_op", "aten::mm", 9, 9, 10, 30, {{"External id", 1}}));
  ev.push_back(x_event("cuda_runtime", "cudaLaunchKernel", 9, 9, 12, 4, {{"correlation", 7}, {"External id", 1}}));
  ev.push_back(x_event("kernel", "ampere_sgemm_128x64_nn", 0, 7, 20, 10 + rank, {{"correlation", 7}}));
  ev.push_back(x_event("cpu_op", "record_param_comms", 9, 9, 100, 40,
                       {{"External id", 2}, {"Collective name", "allreduce"}, {"In msg nelems", 1048576},
                        {"Out msg nelems", 1048576}, {"dtype", "Float"}, {"Group size", world}}));
  ev.push_back(x_event("cuda_runtime", "cudaLaunchKernel", 9, 9, 110, 5, {{"correlation", 8}, {"External id", 2}}));
  ev.push_back(x_event("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 20, 120, 50 + 10 * rank,
                       {{"correlation", 8}, {"Collective name", "allreduce"}, {"In msg nelems", 1048576},
                        {"Out msg nelems", 1048576}, {"dtype", "Float"}, {"Group size", world}}));
  json props = h100();
  return {{"deviceProperties", {props}},
          {"distributedInfo", {{"backend", "nccl"}, {"rank", rank}, {"world_size", world}}},
          {"traceEvents", ev},
          {"baseTimeNanoseconds", 1700000000000000000 + int64_t(rank) * 1000000}};
}

TEST(ImportRanks, TwoRanksOnOneTimelineWithAProcessEach) {
  TempDir dir("import_ranks2");
  // Named against their ranks: distributedInfo decides.
  std::string a = dir.write("b_worker.json", rank_trace(0, 2));
  std::string b = dir.write("a_worker.json", rank_trace(1, 2));
  importer::ImportResult r = importer::import_traces({a, b});
  const prof::Trace& t = r.trace;
  ASSERT_EQ(t.devices.size(), 2u);
  EXPECT_EQ(t.devices[0].name, "rank 0 cuda:0");
  EXPECT_EQ(t.devices[1].name, "rank 1 cuda:0");
  std::vector<std::string> names;
  for (const prof::Track& tr : t.tracks) names.push_back(tr.name);
  for (const char* want : {"rank 0 thread 9", "rank 0 cuda:0 stream 7", "rank 0 cuda:0 stream 20", "rank 1 thread 9",
                           "rank 1 cuda:0 stream 7", "rank 1 cuda:0 stream 20"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  // Aligned by the clocks: rank 1's step starts 1 ms after rank 0's.
  std::vector<int64_t> steps;
  for (const prof::TraceEvent& e : t.events)
    if (e.kind == EventKind::range) steps.push_back(e.t0);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1] - steps[0], 1000000);
  EXPECT_EQ(t.wall_time_ns, 1700000000000000000);
  // Each rank's kernels on its own ops: ids do not collide across ranks.
  analysis::KeyAverages ka = analysis::key_averages(t);
  EXPECT_EQ(row(ka, "aten::mm").self_device_ns, 10000 + 11000);
  EXPECT_EQ(row(ka, "record_param_comms").self_device_ns, 50000 + 60000);
  json c = config(t);
  EXPECT_EQ(c["imported_from"]["files"].size(), 2u);
  EXPECT_EQ(c["imported_from"]["ranks"][1]["rank"], 1);
  for (const prof::Track& tr : t.tracks) EXPECT_EQ(tr.rank, tr.name.rfind("rank 1 ", 0) == 0 ? 1 : 0) << tr.name;
}

// The process_name of every pid in a saved profile's trace.json, and the process of each
// slice's category ("op" -> names of the processes holding ops).
struct Processes {
  std::map<int64_t, std::string> names;
  std::map<std::string, std::set<std::string>> of_category;
  std::vector<std::string> in_order;  // by process_sort_index
};
Processes processes_of(const prof::Trace& t, const TempDir& dir) {
  std::string out = dir.file("profile");
  prof::export_profile(t, out);
  prof::Trace back = prof::load_profile(out);
  EXPECT_EQ(back.tracks.size(), t.tracks.size());
  for (size_t i = 0; i < back.tracks.size() && i < t.tracks.size(); ++i) EXPECT_EQ(back.tracks[i].rank, t.tracks[i].rank);
  std::ifstream f(out + "/trace.json");
  json doc = json::parse(f);
  Processes p;
  for (const json& e : doc.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "process_name") p.names[e.at("pid")] = e.at("args").at("name");
  std::map<int64_t, std::string> by_sort;
  for (const json& e : doc.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "process_sort_index") {
      EXPECT_TRUE(by_sort.emplace(e.at("args").at("sort_index"), p.names[e.at("pid")]).second) << e;
    }
  for (auto& [sort, name] : by_sort) p.in_order.push_back(name);
  for (const json& e : doc.at("traceEvents"))
    if (e.at("ph") == "X") p.of_category[e.at("cat")].insert(p.names[e.at("pid")]);
  return p;
}

TEST(ImportRanks, ExportedTraceHasAProcessPerRank) {
  TempDir dir("import_ranks_export");
  importer::ImportResult r = importer::import_traces({dir.write("r0.json", rank_trace(0, 2)), dir.write("r1.json", rank_trace(1, 2))});
  Processes p = processes_of(r.trace, dir);
  std::set<std::string> names;
  for (auto& [pid, name] : p.names) names.insert(name);
  EXPECT_EQ(names.size(), p.names.size()) << "two pids share a name";
  const std::string h100 = " (NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.2 GiB))";
  // Each rank, then its GPU, in the viewer's order.
  EXPECT_EQ(p.in_order, (std::vector<std::string>{"rank 0", "rank 0 cuda:0" + h100, "rank 1", "rank 1 cuda:0" + h100}));
  // Ops and launches in the ranks' processes, kernels in the devices'.
  EXPECT_EQ(p.of_category["op"], (std::set<std::string>{"rank 0", "rank 1"}));
  EXPECT_EQ(p.of_category["launch"], (std::set<std::string>{"rank 0", "rank 1"}));
  EXPECT_EQ(p.of_category["kernel"].size(), 2u);
  EXPECT_EQ(p.of_category["kernel"].count("rank 0") + p.of_category["kernel"].count("rank 1"), 0u);
}

TEST(ImportRanks, OneFileKeepsOneHostProcess) {
  TempDir dir("import_ranks_one");
  importer::ImportResult r = importer::import_traces({dir.write("r0.json", rank_trace(0, 2))});
  for (const prof::Track& tr : r.trace.tracks) EXPECT_EQ(tr.rank, -1) << tr.name;
  Processes p = processes_of(r.trace, dir);
  EXPECT_EQ(p.names.at(1), "host");
  EXPECT_EQ(p.names.size(), 2u);  // host and cuda:0
  EXPECT_EQ(p.of_category["op"], (std::set<std::string>{"host"}));
}

TEST(ImportRanks, RankTableShowsTheSlowestRankAndCollectives) {
  TempDir dir("import_ranks_table");
  importer::ImportResult r = importer::import_traces({dir.write("r0.json", rank_trace(0, 2)), dir.write("r1.json", rank_trace(1, 2))});
  importer::RankTable rt = importer::rank_table(r.trace);
  ASSERT_EQ(rt.ranks, (std::vector<int64_t>{0, 1}));
  const importer::RankRow* nccl = nullptr;
  const importer::RankRow* mm = nullptr;
  for (const importer::RankRow& row : rt.rows) {
    if (row.name == "ncclDevKernel_AllReduce_Sum_f32_RING_LL") nccl = &row;
    if (row.name == "aten::mm") mm = &row;
  }
  ASSERT_TRUE(nccl && mm);
  EXPECT_EQ(nccl->time_ns, (std::vector<int64_t>{50000, 60000}));
  EXPECT_EQ(nccl->slowest_rank, 1);
  EXPECT_TRUE(nccl->device);
  EXPECT_EQ(nccl->collective, "allreduce, in 1048576 elements, out 1048576 elements, Float, group of 2");
  EXPECT_EQ(mm->time_ns, (std::vector<int64_t>{10000, 11000}));
  EXPECT_EQ(rt.rows.front().name, "record_param_comms");  // device rows first, largest max first
  EXPECT_EQ(rt.rows.back().name, "ProfilerStep#3");      // host time only
  std::string text = rt.text();
  EXPECT_NE(text.find("rank 1 us"), std::string::npos) << text;
  EXPECT_NE(text.find("allreduce, in 1048576"), std::string::npos) << text;
  // A single trace has no ranks to compare.
  prof::Trace one = importer::import_traces({dir.file("r0.json")}).trace;
  EXPECT_THROW(importer::rank_table(one), Error);
}

TEST(ImportRanks, EightRanksFromAFolder) {
  TempDir dir("import_ranks8");
  for (int rank = 0; rank < 8; ++rank) dir.write("worker" + std::to_string(7 - rank) + ".pt.trace.json", rank_trace(rank, 8));
  testutil::CliResult cli = testutil::run_opscope({"table", dir.path().string(), "--by-rank"});
  ASSERT_EQ(cli.status, 0) << cli.out;
  EXPECT_NE(cli.out.find("rank 7 us"), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("rank 7  allreduce"), std::string::npos) << cli.out;
  importer::ImportResult r = importer::import_traces({dir.path().string()});
  EXPECT_EQ(r.trace.devices.size(), 8u);
  importer::RankTable rt = importer::rank_table(r.trace);
  EXPECT_EQ(rt.ranks.size(), 8u);
  EXPECT_EQ(rt.rows.front().slowest_rank, 7);
  EXPECT_EQ(rt.rows.front().max_ns - rt.rows.front().min_ns, 70000);
  // Every rank's step, 1 ms apart.
  std::vector<int64_t> steps;
  for (const prof::TraceEvent& e : r.trace.events)
    if (e.kind == EventKind::range) steps.push_back(e.t0);
  ASSERT_EQ(steps.size(), 8u);
  for (size_t i = 1; i < steps.size(); ++i) EXPECT_EQ(steps[i] - steps[i - 1], 1000000);
}

}  // namespace
}  // namespace opscope::test
