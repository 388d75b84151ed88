// The key_averages table as the main job prints it: on the case study's own profile it
// fits a 160-column terminal by default; --wide shows every column with torch's headers,
// --columns picks them (an unknown one is an error naming the valid ones).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.h"

namespace {

namespace fs = std::filesystem;
using opscope::testutil::CliResult;
using opscope::testutil::run_opscope;

size_t widest_line(const std::string& text) {
  std::istringstream in(text);
  size_t w = 0;
  for (std::string line; std::getline(in, line);) w = std::max(w, line.size());
  return w;
}

// The table's header line: the one after the first dashed rule.
std::string header_of(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("---", 0) == 0 && std::getline(in, line)) return line;
  return "";
}

class CliTableWidth : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("opscope_table_width_" + std::to_string(::getpid()));
    std::error_code ec;  // (no assertion here: GoogleTest would mark the suite's tests skipped)
    fs::remove_all(dir_, ec);
    profiled_ = run_opscope({"profile", "rmsnorm", "--impl", "all", "--shape", "256x4096", "--iters", "2", "--warmup",
                             "1", "--out", dir_.string()});
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static inline fs::path dir_;
  static inline CliResult profiled_;
};

TEST_F(CliTableWidth, MainJobAndTableFit160ColumnsByDefault) {
  ASSERT_EQ(profiled_.status, 0) << profiled_.out;
  EXPECT_LE(widest_line(profiled_.out), 160u) << profiled_.out;
  for (const char* impl : {"naive", "builtin", "compiled"}) {
    CliResult r = run_opscope({"table", (dir_ / impl).string()});
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_LE(widest_line(r.out), 160u) << r.out;
    std::string head = header_of(r.out);
    // What the case study is read for stays: device time, calls, memory, the roofline.
    for (const char* col : {"Name", "Self Dev", "Calls", "Dev Mem", "GB/s", "% Roof"})
      EXPECT_NE(head.find(col), std::string::npos) << col << " in\n" << r.out;
    EXPECT_NE(r.out.find("Columns not shown: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--wide shows all"), std::string::npos) << r.out;
  }
}

TEST_F(CliTableWidth, WideShowsEveryColumnWithTorchsHeaders) {
  ASSERT_EQ(profiled_.status, 0) << profiled_.out;
  CliResult r = run_opscope({"table", (dir_ / "naive").string(), "--wide"});
  ASSERT_EQ(r.status, 0) << r.out;
  std::string head = header_of(r.out);
  for (const char* col : {"Self CPU %", "CPU total %", "CPU time avg", "Self Device %", "Device total",
                          "Device time avg", "Device Mem", "Self Device Mem", "# of Calls", "GB/s", "% Roofline"})
    EXPECT_NE(head.find(col), std::string::npos) << col << " in\n" << head;
  EXPECT_GT(widest_line(r.out), 160u) << "the case study's full table is wider than a terminal";
  EXPECT_EQ(r.out.find("Columns not shown"), std::string::npos) << r.out;
}

TEST_F(CliTableWidth, ColumnsPicksThemInOrder) {
  ASSERT_EQ(profiled_.status, 0) << profiled_.out;
  CliResult r = run_opscope({"table", (dir_ / "naive").string(), "--columns", "calls,self_device,gbps"});
  ASSERT_EQ(r.status, 0) << r.out;
  std::string head = header_of(r.out);
  std::istringstream words(head);
  std::vector<std::string> cols;
  for (std::string w; words >> w;) cols.push_back(w);
  EXPECT_EQ(cols, (std::vector<std::string>{"Name", "Calls", "Self", "Dev", "GB/s"})) << head;

  r = run_opscope({"table", (dir_ / "naive").string(), "--columns", "self_device,bogus"});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("opscope: [--columns] unknown column 'bogus' (expected one of name, self_cpu_pct,"),
            std::string::npos)
      << r.out;
  r = run_opscope({"profile", "rmsnorm", "--shape", "4x64", "--columns", "nope", "--out", (dir_ / "x").string()});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("[--columns] unknown column 'nope'"), std::string::npos) << r.out;
}

}  // namespace
