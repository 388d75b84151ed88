// `opscope diff A B`, run as a user would: on real profiles of the RMSNorm case study
// saved by `opscope profile` (naive vs builtin), and on hand-built saved profiles for
// the warnings and errors.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "cli_util.h"
#include "opscope/profiler/store.h"
#include "opscope/profiler/trace.h"

namespace opscope::prof {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testutil::CliResult;

CliResult run(const std::vector<std::string>& args) { return testutil::run_opscope(args); }

// The text after `from` up to `to` (or the end).
std::string section(const std::string& s, const std::string& from, const std::string& to) {
  size_t a = s.find(from);
  if (a == std::string::npos) return "";
  size_t b = s.find(to, a);
  return s.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

class CliDiff : public ::testing::Test {
 protected:
  static fs::path root() { return fs::temp_directory_path() / ("opscope_cli_diff_" + std::to_string(::getpid())); }
  static std::string naive() { return (root() / "naive").string(); }
  static std::string builtin() { return (root() / "builtin").string(); }

  // Two real profiles, made once for the suite. A failed run is kept for each test's SetUp
  // to fail on (asserting here would make GoogleTest mark every test skipped).
  static inline std::vector<CliResult> made;
  static void SetUpTestSuite() {
    fs::remove_all(root());
    made.clear();
    for (const char* impl : {"naive", "builtin"})
      made.push_back(run({"profile", "rmsnorm", "--impl", impl, "--shape", "8x64", "--iters", "2", "--warmup", "1",
                          "--out", root().string()}));
  }
  static void TearDownTestSuite() { fs::remove_all(root()); }
  void SetUp() override {
    ASSERT_TRUE(fs::exists(testutil::opscope_binary())) << testutil::opscope_binary() << " is missing";
    for (const CliResult& r : made) ASSERT_EQ(r.status, 0) << "opscope profile for the suite failed:\n" << r.out;
    ASSERT_TRUE(fs::exists(root() / "naive" / "profile.db"));
  }
};

TEST_F(CliDiff, NaiveVsBuiltinShowsTheNaiveOpsRemovedAndRmsNormAdded) {
  CliResult r = run({"diff", naive(), builtin()});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("A: " + naive() + "\nB: " + builtin() + "\n", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find("Warning:"), std::string::npos) << r.out;  // same machine, same settings
  std::string added = section(r.out, "Added in B", "Removed from A");
  std::string removed = section(r.out, "Removed from A", "Totals:");
  EXPECT_NE(added.find("\nrms_norm "), std::string::npos) << r.out;
  EXPECT_NE(added.find("\nrms_norm_f32 "), std::string::npos) << r.out;
  for (const char* op : {"\nmean ", "\nrsqrt ", "\nmul ", "\nmean_rows_f32 ", "\nrsqrt_f32 "})
    EXPECT_NE(removed.find(op), std::string::npos) << op << " not removed:\n" << r.out;
  EXPECT_EQ(removed.find("rms_norm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Self Device time total"), std::string::npos);
  EXPECT_NE(r.out.find("Bytes moved"), std::string::npos);
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\nSteps \(top-level ranges\) +2 +2 +0 )"))) << r.out;
}

TEST_F(CliDiff, JsonParsesAndCarriesStatusAndTotals) {
  CliResult r = run({"diff", naive(), builtin() + "/profile.db", "--json"});
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);  // stdout alone: no warnings on stderr here
  EXPECT_EQ(j["a"]["label"], naive());
  EXPECT_EQ(j["b"]["steps"], 2);
  EXPECT_GT(j["a"]["launches"].get<int64_t>(), j["b"]["launches"].get<int64_t>());
  EXPECT_EQ(j["delta"]["launches"], j["b"]["launches"].get<int64_t>() - j["a"]["launches"].get<int64_t>());
  std::map<std::string, std::string> status;
  for (const json& row : j["rows"]) status[row["kind"].get<std::string>() + " " + row["name"].get<std::string>()] = row["status"];
  EXPECT_EQ(status["op rms_norm"], "added");
  EXPECT_EQ(status["op mean"], "removed");
  EXPECT_EQ(status["kernel rsqrt_f32"], "removed");
  EXPECT_EQ(j["counts"]["added"].get<int>() + j["counts"]["removed"].get<int>() + j["counts"]["changed"].get<int>() +
                j["counts"]["same"].get<int>(),
            int(j["rows"].size()));
  EXPECT_TRUE(j["warnings"].empty());
}

TEST_F(CliDiff, AProfileAgainstItselfIsAllSame) {
  CliResult r = run({"diff", naive(), naive() + "/profile.db", "--json"});
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  ASSERT_FALSE(j["rows"].empty());
  EXPECT_EQ(j["counts"]["same"], j["rows"].size());
  for (const json& row : j["rows"]) EXPECT_EQ(row["delta"]["self_device_ns"], 0) << row.dump();
  EXPECT_EQ(j["delta"]["self_device_total_ns"], 0);
  // Every row changes by less than a microsecond: all hidden.
  json hidden = json::parse(run({"diff", naive(), naive(), "--json", "--min-delta-us", "1"}).out);
  EXPECT_TRUE(hidden["rows"].empty());
  EXPECT_EQ(hidden["hidden"], j["rows"].size());
}

TEST_F(CliDiff, KindAndSortByChooseTheRows) {
  CliResult r = run({"diff", naive(), builtin(), "--json", "--kind", "kernel", "--sort-by", "name"});
  ASSERT_EQ(r.status, 0) << r.out;
  json j = json::parse(r.out);
  ASSERT_FALSE(j["rows"].empty());
  std::string last;
  for (const json& row : j["rows"]) {
    EXPECT_EQ(row["kind"], "kernel");
    EXPECT_LE(last, row["name"].get<std::string>());
    last = row["name"];
  }
  CliResult t = run({"diff", naive(), builtin(), "--kind", "op", "--row-limit", "1"});
  EXPECT_EQ(t.status, 0) << t.out;
  EXPECT_NE(t.out.find("more rows; --row-limit 0 shows all"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("_f32"), std::string::npos) << t.out;
}

TEST_F(CliDiff, BadFlagsAreNamed) {
  CliResult r = run({"diff", naive(), builtin(), "--sort-by", "bogus"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out.rfind("opscope: [--sort-by] unknown key 'bogus' (expected one of", 0), 0u) << r.out;
  r = run({"diff", naive(), builtin(), "--kind", "ops"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "opscope: [--kind] unknown kind 'ops' (expected op, range, kernel or all)\n");
  r = run({"diff", naive(), builtin(), "--min-delta-us", "-2"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out.rfind("opscope: [--min-delta-us]", 0), 0u) << r.out;
  r = run({"diff", naive()});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("b is required"), std::string::npos) << r.out;
}

TEST_F(CliDiff, AMissingOrNewerProfileIsNamed) {
  std::string missing = (root() / "no-such-profile").string();
  CliResult r = run({"diff", naive(), missing});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "opscope: [profile] " + missing + ": no such file or folder\n");
  r = run({"diff", missing, naive()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find(missing), std::string::npos) << r.out;

  // A profile written by a newer opscope: refused, naming the file.
  fs::path newer = root() / "newer";
  fs::create_directories(newer);
  fs::copy_file(root() / "builtin" / "profile.db", newer / "profile.db", fs::copy_options::overwrite_existing);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((newer / "profile.db").string().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET value = '2' WHERE key = 'schema_version'", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  r = run({"diff", naive(), newer.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("schema version 2 is newer than this opscope reads (1)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(newer.string()), std::string::npos) << r.out;
}

// A one-op profile on a device described as `description`.
Trace tiny(const std::string& description, int cores) {
  Trace t;
  t.devices.push_back({0, "cpu:0", description, cores});
  t.tracks.push_back({Track::Kind::host_thread, "main thread", 1, -1, -1});
  t.tracks.push_back({Track::Kind::device_core, "cpu:0 core 0", 0, 0, 0});
  TraceEvent op;
  op.kind = EventKind::op, op.name = "add", op.id = 1, op.t0 = 0, op.t1 = 100;
  TraceEvent k;
  k.kind = EventKind::kernel, k.name = "add_f32", k.id = 10, k.parent = 1, k.t0 = 200, k.t1 = 300, k.track = 1;
  k.device = 0, k.bytes = 96;
  t.events = {op, k};
  return t;
}

TEST_F(CliDiff, DifferentDevicesAreAWarning) {
  fs::path a = root() / "dev-a", b = root() / "dev-b";
  export_profile(tiny("CPU device cpu:0 with 2 cores, 2 hardware threads", 2), a.string());
  export_profile(tiny("CPU device cpu:0 with 8 cores, 16 hardware threads", 8), b.string());
  CliResult r = run({"diff", a.string(), b.string()});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Warning: devices differ: " + a.string() + " ran on cpu:0 'CPU device cpu:0 with 2 cores"),
            std::string::npos)
      << r.out;
  // With --json the warnings are in the JSON, and said on stderr too.
  r = run({"diff", a.string(), b.string(), "--json"});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("opscope: warning: devices differ"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"warnings\": [\n    \"devices differ"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace opscope::prof
