// The `opscope` tool, run as a user would: the built binary (../tools/opscope beside the
// tests folder of the build) on a profile saved by export_profile.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_util.h"
#include "opscope/profiler/store.h"
#include "opscope/profiler/trace.h"

namespace opscope::prof {
namespace {

namespace fs = std::filesystem;

using testutil::CliResult;
using testutil::opscope_binary;

CliResult run(const std::vector<std::string>& args) { return testutil::run_opscope(args); }

Trace cli_trace() {
  Trace t;
  t.devices.push_back({0, "cpu:0", "2 cores", 2});
  t.tracks.push_back({Track::Kind::host_thread, "main thread", 1, -1, -1});
  t.tracks.push_back({Track::Kind::device_core, "cpu:0 core 0", 0, 0, 0});
  t.tracks.push_back({Track::Kind::device_core, "cpu:0 core 1", 0, 0, 1});
  auto add = [&](EventKind k, int64_t t0, int64_t t1, uint64_t id, uint64_t parent,
                 std::string name, int track) {
    TraceEvent e;
    e.kind = k, e.t0 = t0, e.t1 = t1, e.id = id, e.parent = parent, e.name = std::move(name);
    e.track = track;
    e.device = k == EventKind::op ? -1 : 0;
    t.events.push_back(e);
  };
  add(EventKind::op, 0, 1000, 1, 0, "rms_norm", 0);
  add(EventKind::launch, 100, 200, 10, 1, "rms_norm_f32", 0);
  add(EventKind::kernel, 300, 800, 10, 1, "rms_norm_f32", 1);
  add(EventKind::kernel, 310, 900, 10, 1, "rms_norm_f32", 2);
  add(EventKind::op, 2000, 2500, 2, 0, "naïve \"op\"\nx", 0);
  return t;
}

class Cli : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() /
                 ("opscope_cli_" + std::to_string(::getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
  void SetUp() override {
    ASSERT_TRUE(fs::exists(opscope_binary()))
        << opscope_binary() << " is missing: build the opscope_cli target";
    export_profile(cli_trace(), dir.string());
  }
  void TearDown() override { fs::remove_all(dir); }
};

TEST_F(Cli, QueryPrintsAnAlignedTable) {
  CliResult r = run({"query", dir.string(),
               "SELECT kind, count(*) AS n, sum(t1 - t0) AS total FROM events GROUP BY kind ORDER BY kind"});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out,
            "kind    n  total\n"
            "------  -  -----\n"
            "kernel  2   1090\n"
            "launch  1    100\n"
            "op      2   1500\n"
            "(3 rows)\n");
}

TEST_F(Cli, QueryEscapesControlCharactersInTheTable) {
  CliResult r = run({"query", dir.string(), "SELECT name FROM events WHERE event = 4"});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "name\n-------------\nnaïve \"op\"\\nx\n(1 row)\n");
}

TEST_F(Cli, QueryAsJsonKeepsTypesAndNames) {
  CliResult r = run({"query", dir.string(),
               "SELECT kernel_event, core, op, launch_id, NULL AS missing, 0.5 AS half "
               "FROM kernel_chain ORDER BY kernel_event",
               "--json"});
  ASSERT_EQ(r.status, 0) << r.out;
  nlohmann::json rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["kernel_event"], 2);
  EXPECT_EQ(rows[1]["core"], 1);
  EXPECT_EQ(rows[1]["op"], "rms_norm");
  EXPECT_EQ(rows[0]["launch_id"], 10);
  EXPECT_TRUE(rows[0]["missing"].is_null());
  EXPECT_EQ(rows[0]["half"], 0.5);
  r = run({"query", dir.string(), "SELECT name FROM events WHERE event = 4", "--json"});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)[0]["name"], "naïve \"op\"\nx");
}

TEST_F(Cli, QueryIsReadOnly) {
  CliResult r = run({"query", dir.string(), "DELETE FROM events"});
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_LT(r.status, 128) << "crashed: " << r.out;
  EXPECT_NE(r.out.find("[query]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("readonly"), std::string::npos) << r.out;
  EXPECT_EQ(load_profile(dir.string()).events.size(), 5u);
  r = run({"query", dir.string(), "ATTACH '" + (dir / "new.db").string() + "' AS x"});
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_FALSE(fs::exists(dir / "new.db"));
}

TEST_F(Cli, BadSqlNamesTheProblem) {
  CliResult r = run({"query", dir.string(), "SELECT nope FROM events"});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(r.out, "opscope: [query] no such column: nope\n");
  r = run({"query", dir.string(), "SELECT 1; SELECT 2"});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("one SQL statement at a time"), std::string::npos) << r.out;
}

TEST_F(Cli, UnknownFlagIsNamed) {
  CliResult r = run({"query", dir.string(), "SELECT 1", "--bogus"});
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_LT(r.status, 128) << "crashed: " << r.out;
  EXPECT_NE(r.out.find("--bogus"), std::string::npos) << r.out;
  r = run({"table", dir.string(), "--sort-by"});  // flag without its value
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("--sort-by"), std::string::npos) << r.out;
  r = run({"bogus"});  // no such subcommand
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("bogus"), std::string::npos) << r.out;
  r = run({});  // no subcommand: the help, and a failure status
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_LT(r.status, 128) << "crashed: " << r.out;
}

TEST_F(Cli, MissingOrCorruptProfileIsNamed) {
  std::string missing = (dir / "nope").string();
  CliResult r = run({"query", missing, "SELECT 1"});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(r.out, "opscope: [profile] " + missing + ": no such file or folder\n");
  r = run({"table", missing});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("[profile] " + missing), std::string::npos) << r.out;

  fs::resize_file(dir / "profile.db", fs::file_size(dir / "profile.db") / 2);
  for (const char* cmd : {"query", "table"}) {
    r = cmd == std::string("query") ? run({cmd, dir.string(), "SELECT 1"}) : run({cmd, dir.string()});
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("[profile] " + (dir / "profile.db").string() + ": truncated"), std::string::npos)
        << r.out;
  }
}

TEST_F(Cli, TablePrintsKeyAveragesOfTheSavedProfile) {
  CliResult r = run({"table", dir.string(), "--time-unit", "ns"});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Self CPU time total"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Self Device time total"), std::string::npos) << r.out;
  // The two kernel slices of launch 10 span 300..900 ns on the device: rms_norm's device time.
  std::string row = r.out.substr(r.out.find("rms_norm "));
  row = row.substr(0, row.find('\n'));
  EXPECT_NE(row.find("600"), std::string::npos) << r.out;
  EXPECT_EQ(r.out, run({"table", (dir / "profile.db").string(), "--time-unit", "ns"}).out);
}

TEST_F(Cli, TableRejectsUnknownSortKeyAndTimeUnitNamingTheFlag) {
  CliResult r = run({"table", dir.string(), "--sort-by", "speed"});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(r.out.rfind("opscope: [--sort-by] unknown key 'speed'", 0), 0u) << r.out;
  r = run({"table", dir.string(), "--time-unit", "hours"});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(r.out.rfind("opscope: [--time-unit] unknown unit 'hours'", 0), 0u) << r.out;
  r = run({"table", dir.string(), "--row-limit", "many"});
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_LT(r.status, 128) << "crashed: " << r.out;
  EXPECT_NE(r.out.find("--row-limit"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace opscope::prof
