// A distributed job's per-rank profiles (DIR/rank-N) open as one: tracks and devices under
// "rank R", ids kept apart, ranks on one timeline by their clocks (shared, or moved by the
// offset measured at init); and what a communication kernel's description and bandwidths are.
#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "import_util.h"
#include "opscope/core/error.h"
#include "opscope/importer/job.h"
#include "opscope/importer/ranks.h"
#include "opscope/profiler/chrome_trace.h"
#include "opscope/profiler/collective.h"
#include "opscope/profiler/store.h"

using namespace opscope;
using opscope::test::TempDir;
using json = nlohmann::json;

namespace {

// One rank's profile: a matmul kernel and an all_reduce on the engine's stream track, each
// with its launch and op (ids 1..3 on every rank: they collide unless the merge moves them).
prof::Trace rank_trace(int rank, int world, int64_t base_ns, json clock, const std::string& job = "job-1") {
  prof::Trace t;
  t.base_time_ns = base_ns;
  t.wall_time_ns = 1'700'000'000'000'000'000 + base_ns;
  t.devices.push_back({0, "cpu:0", "CPU device cpu:0 with 2 cores", 2});
  prof::Track host;
  host.name = "main thread";
  host.os_tid = 100 + rank;
  prof::Track core;
  core.kind = prof::Track::Kind::device_core;
  core.name = "cpu:0 core 0";
  core.device = 0;
  core.core = 0;
  prof::Track comm = core;
  comm.name = "cpu:0 stream 1";
  comm.core = 1;
  t.tracks = {host, core, comm};
  t.dropped_per_track = {0, 0, 0};
  auto ev = [&](prof::EventKind k, std::string name, uint64_t id, uint64_t parent, int64_t t0, int64_t t1, int32_t track) {
    prof::TraceEvent e;
    e.kind = k;
    e.name = std::move(name);
    e.id = id;
    e.parent = parent;
    e.t0 = t0;
    e.t1 = t1;
    e.track = track;
    if (k != prof::EventKind::op) e.device = 0;
    return e;
  };
  t.events.push_back(ev(prof::EventKind::op, "aten::mm", 1, 0, 0, 10'000, 0));
  t.events.push_back(ev(prof::EventKind::launch, "matmul_f32", 1, 1, 1'000, 2'000, 0));
  t.events.push_back(ev(prof::EventKind::kernel, "matmul_f32", 1, 1, 2'000, 50'000, 1));
  t.events.push_back(ev(prof::EventKind::op, "c10d::allreduce_", 2, 0, 11'000, 12'000, 0));
  t.events.push_back(ev(prof::EventKind::launch, "all_reduce_f32", 2, 2, 11'100, 11'500, 0));
  prof::TraceEvent k = ev(prof::EventKind::kernel, "all_reduce_f32", 2, 2, 50'000, 50'000 + 1000 * (rank + 1), 2);
  k.bytes = 4'000'000;
  k.stream = 1;
  k.shapes = fmt::format("collective all_reduce, in 1000000 elements, out 1000000 elements, f32, group of {}, pg 0, seq 1",
                         world);
  t.events.push_back(k);
  json cfg = {{"layers", "framework,runtime,device"},
              {"distributed", {{"backend", "opscope"}, {"rank", rank}, {"world_size", world}, {"job_id", job},
                               {"hostname", "host" + std::to_string(rank)}, {"clock", clock}}}};
  t.config_json = cfg.dump();
  return t;
}

json shared_clock() { return {{"reference_rank", 0}, {"shared", true}, {"offset_ns", 0}}; }

const prof::TraceEvent& nth_kernel(const prof::Trace& t, const std::string& name, int32_t rank) {
  for (const prof::TraceEvent& e : t.events)
    if (e.kind == prof::EventKind::kernel && e.name == name && t.tracks[size_t(e.track)].rank == rank) return e;
  ADD_FAILURE() << "no kernel " << name << " of rank " << rank;
  return t.events.front();
}

}  // namespace

TEST(Job, RanksOfOneMachineShareTheClock) {
  TempDir dir("job_shared");
  prof::export_profile(rank_trace(0, 2, 5'000'000, shared_clock()), (dir.path() / "rank-0").string());
  prof::export_profile(rank_trace(1, 2, 5'100'000, shared_clock()), (dir.path() / "rank-1").string());
  ASSERT_TRUE(importer::is_job_dir(dir.path().string()));
  EXPECT_FALSE(importer::is_job_dir((dir.path() / "rank-0").string()));  // a profile of its own
  std::vector<std::string> warnings;
  prof::Trace t = importer::load_job(dir.path().string(), &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(t.base_time_ns, 5'000'000);
  ASSERT_EQ(t.tracks.size(), 6u);
  EXPECT_EQ(t.tracks[0].name, "rank 0 main thread");
  EXPECT_EQ(t.tracks[5].name, "rank 1 cpu:0 stream 1");
  EXPECT_EQ(t.tracks[5].rank, 1);
  ASSERT_EQ(t.devices.size(), 2u);
  EXPECT_EQ(t.devices[1].name, "rank 1 cpu:0");
  // Rank 1 started 100 us later on the same clock: its events move by that.
  EXPECT_EQ(nth_kernel(t, "matmul_f32", 1).t0, 102'000);
  EXPECT_EQ(nth_kernel(t, "matmul_f32", 0).t0, 2'000);
  EXPECT_EQ(nth_kernel(t, "matmul_f32", 1).device, 1);
  // Ids apart: each rank's kernel still names its own launch and op.
  const prof::TraceEvent& k0 = nth_kernel(t, "all_reduce_f32", 0);
  const prof::TraceEvent& k1 = nth_kernel(t, "all_reduce_f32", 1);
  EXPECT_NE(k0.id, k1.id);
  EXPECT_NE(k0.parent, k1.parent);
  int ops_named = 0;
  for (const prof::TraceEvent& e : t.events)
    if (e.kind == prof::EventKind::op && (e.id == k0.parent || e.id == k1.parent)) {
      EXPECT_EQ(e.name, "c10d::allreduce_");
      ++ops_named;
    }
  EXPECT_EQ(ops_named, 2);
  json cfg = json::parse(t.config_json);
  EXPECT_FALSE(cfg.contains("distributed"));
  EXPECT_EQ(cfg["job"]["world_size"], 2);
  EXPECT_EQ(cfg["job"]["ranks"][1]["clock"], "shared clock");
  // The rank table compares the ranks, the collective named.
  importer::RankTable rt = importer::rank_table(t);
  EXPECT_EQ(rt.ranks, (std::vector<int64_t>{0, 1}));
  bool found = false;
  for (const importer::RankRow& row : rt.rows)
    if (row.name == "all_reduce_f32" && row.kind == prof::EventKind::kernel) {
      found = true;
      EXPECT_EQ(row.time_ns, (std::vector<int64_t>{1000, 2000}));
      EXPECT_EQ(row.slowest_rank, 1);
      EXPECT_EQ(row.collective.rfind("all_reduce, in 1000000 elements", 0), 0u) << row.collective;
    }
  EXPECT_TRUE(found);
}

TEST(Job, ARankOfAnotherMachineMovesByItsMeasuredOffset) {
  TempDir dir("job_offset");
  prof::export_profile(rank_trace(0, 2, 5'000'000, shared_clock()), (dir.path() / "rank-0").string());
  // Another boot: its clock reads 3 ms less than rank 0's at the same instant.
  json other = {{"reference_rank", 0}, {"shared", false}, {"offset_ns", 3'000'000}, {"error_ns", 20'000}};
  prof::export_profile(rank_trace(1, 2, 2'050'000, other), (dir.path() / "rank-1").string());
  prof::Trace t = importer::load_job(dir.path().string());
  EXPECT_EQ(nth_kernel(t, "matmul_f32", 1).t0, 52'000);  // 2.05 ms + 3 ms - 5 ms = 50 us after rank 0
  EXPECT_EQ(json::parse(t.config_json)["job"]["ranks"][1]["clock"], "offset measured at init");
}

TEST(Job, MissingRanksAndOtherRunsAreWarnedAbout) {
  TempDir dir("job_warn");
  prof::export_profile(rank_trace(0, 3, 1'000, shared_clock()), (dir.path() / "rank-0").string());
  prof::export_profile(rank_trace(2, 3, 1'000, shared_clock(), "job-2"), (dir.path() / "rank-2").string());
  std::filesystem::create_directories(dir.path() / "rank-x");  // not a rank folder
  std::vector<std::string> warnings;
  prof::Trace t = importer::load_job(dir.path().string(), &warnings);
  std::string all;
  for (const std::string& w : warnings) all += w + "\n";
  EXPECT_NE(all.find("no profile of rank 1 (rank-1) in a job of 3 ranks"), std::string::npos) << all;
  EXPECT_NE(all.find("from another run (job job-2"), std::string::npos) << all;
  // The CLI opens it, with the warnings on stderr.
  testutil::CliResult cli = testutil::run_opscope({"table", dir.path().string(), "--by-rank"});
  ASSERT_EQ(cli.status, 0) << cli.out;
  EXPECT_NE(cli.out.find("rank 2 us"), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("no profile of rank 1"), std::string::npos) << cli.out;
}

TEST(Job, ARankFolderWithoutAReadableProfileIsAnError) {
  TempDir dir("job_bad");
  prof::export_profile(rank_trace(0, 2, 1'000, shared_clock()), (dir.path() / "rank-0").string());
  std::filesystem::create_directories(dir.path() / "rank-1");
  dir.write("rank-1/profile.db", std::string("not a database"));
  try {
    importer::load_job(dir.path().string());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[job] " + dir.path().string() + ": rank 1's profile cannot be read", 0), 0u)
        << e.what();
  }
  try {
    importer::load_job(dir.file("nothing-here"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no rank-N folder"), std::string::npos) << e.what();
  }
}

TEST(Collective, DescriptionAndBusBandwidthFactors) {
  auto c = prof::parse_collective("collective all_reduce, in 8 elements, out 8 elements, f32, group of 4, pg 3, seq 17");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, "all_reduce");
  EXPECT_EQ(c->group_size, 4);
  EXPECT_EQ(c->seq, 17);
  EXPECT_EQ(c->group, "3");
  auto imported = prof::parse_collective("collective allreduce, in 1048576 elements, out 1048576 elements, Float, group of 2");
  ASSERT_TRUE(imported);
  EXPECT_EQ(imported->group_size, 2);
  EXPECT_EQ(imported->seq, -1);
  EXPECT_FALSE(prof::parse_collective("[(4, 8) f32]"));
  // nccl-tests' factors.
  EXPECT_DOUBLE_EQ(prof::bus_factor("all_reduce", 4), 1.5);
  EXPECT_DOUBLE_EQ(prof::bus_factor("allreduce", 2), 1.0);
  EXPECT_DOUBLE_EQ(prof::bus_factor("_allgather_base", 4), 0.75);
  EXPECT_DOUBLE_EQ(prof::bus_factor("reduce_scatter", 8), 0.875);
  EXPECT_DOUBLE_EQ(prof::bus_factor("all_to_all", 2), 0.5);
  EXPECT_DOUBLE_EQ(prof::bus_factor("alltoall_base", 2), 0.5);
  EXPECT_DOUBLE_EQ(prof::bus_factor("broadcast", 8), 1.0);
  EXPECT_DOUBLE_EQ(prof::bus_factor("send", 2), 1.0);
  EXPECT_DOUBLE_EQ(prof::bus_factor("barrier", 2), 0.0);
  EXPECT_DOUBLE_EQ(prof::algbw_gbps(4'000'000, 1'000'000), 4.0);
}

TEST(Collective, TraceJsonCarriesBandwidthsAndDistributedInfo) {
  prof::Trace t = rank_trace(1, 4, 1'000, shared_clock());
  json doc = json::parse(prof::chrome_trace_json(t));
  EXPECT_EQ(doc["distributedInfo"], json({{"backend", "opscope"}, {"rank", 1}, {"world_size", 4}}));
  bool found = false;
  for (const json& e : doc["traceEvents"])
    if (e.value("name", "") == "all_reduce_f32" && e.value("cat", "") == "kernel") {
      found = true;
      // 4 MB in 2 us: algbw 2000 GB/s; all_reduce on 4 ranks: busbw = 1.5 x algbw.
      EXPECT_DOUBLE_EQ(e["args"]["algbw (GB/s)"].get<double>(), 2000.0);
      EXPECT_DOUBLE_EQ(e["args"]["busbw (GB/s)"].get<double>(), 3000.0);
      EXPECT_EQ(e["args"]["group size"], 4);
      EXPECT_EQ(e["args"]["collective"].get<std::string>().rfind("collective all_reduce", 0), 0u);
    }
  EXPECT_TRUE(found);
  // A profile of one process has no distributedInfo.
  prof::Trace one = t;
  one.config_json = "{}";
  EXPECT_FALSE(json::parse(prof::chrome_trace_json(one)).contains("distributedInfo"));
}
