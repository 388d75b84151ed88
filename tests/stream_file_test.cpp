// StreamFile, the writer behind trace.json: bytes come back exactly across its buffer
// and O_DIRECT block boundaries, on filesystems with and without O_DIRECT; abandoned or
// failed writes leave no temp file and the old file in place; errors name the file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "opscope/core/error.h"
#include "opscope/profiler/chrome_trace.h"
#include "opscope/profiler/stream_file.h"

namespace opscope {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// Bytes that differ at every position, so a misplaced block shows.
std::string pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (char& c : s) c = char(rng());
  return s;
}

class StreamFileTest : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() /
                 ("opscope_stream_" + std::to_string(::getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
  std::vector<std::string> entries(const fs::path& d) const {
    std::vector<std::string> v;
    for (auto& e : fs::directory_iterator(d)) v.push_back(e.path().filename().string());
    std::sort(v.begin(), v.end());
    return v;
  }

  // Writes pieces of many sizes (1 byte to 3 MiB, and one of 20 MiB: larger than a
  // buffer), with reserve/advance and write(), and checks the file byte for byte.
  void round_trip(const fs::path& folder, bool allow_direct = true) {
    const std::string path = (folder / "out.bin").string();
    std::string expected;
    {
      StreamFile f(path, "test", allow_direct);
      if (!allow_direct) {
        EXPECT_FALSE(f.direct());
      }
      std::mt19937 rng(7);
      uint32_t seed = 0;
      for (int i = 0; i < 60; ++i) {
        size_t n = i == 30 ? (size_t(20) << 20) + 3 : size_t(rng() % (i % 7 == 0 ? 3u << 20 : 5000u)) + 1;
        std::string piece = pattern(n, ++seed);
        if (i % 2) {
          f.write(piece);
        } else {
          char* w = f.reserve(n);
          std::memcpy(w, piece.data(), n);
          f.advance(w + n);
        }
        expected += piece;
      }
      ASSERT_NE(expected.size() % 4096, 0u);  // a partial last block
      f.sync();
      f.commit();
    }
    std::string got = read_all(path);
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_TRUE(got == expected) << "contents differ";
    EXPECT_EQ(entries(folder), std::vector<std::string>{"out.bin"});
  }
};

TEST_F(StreamFileTest, WritesEveryByteAcrossBuffersAndBlocks) { round_trip(dir); }

// Through the page cache, as where the filesystem refuses O_DIRECT (tmpfs before Linux 6.6).
TEST_F(StreamFileTest, WritesEveryByteWithoutODirect) { round_trip(dir, false); }

TEST_F(StreamFileTest, WritesEveryByteOnTmpfs) {
  fs::path shm = "/dev/shm";
  if (!fs::is_directory(shm) || ::access(shm.c_str(), W_OK) != 0) GTEST_SKIP() << "no /dev/shm";
  fs::path d = shm / ("opscope_stream_" + std::to_string(::getpid()));
  fs::create_directories(d);
  round_trip(d);
  fs::remove_all(d);
}

TEST_F(StreamFileTest, EmptyFile) {
  std::string path = (dir / "empty").string();
  StreamFile(path).commit();
  EXPECT_TRUE(fs::exists(path));
  EXPECT_EQ(fs::file_size(path), 0u);
}

TEST_F(StreamFileTest, AbandonedWriteLeavesTheOldFileAndNoTempFile) {
  std::string path = (dir / "out.bin").string();
  { std::ofstream(path) << "old"; }
  {
    StreamFile f(path);
    f.write(pattern(size_t(30) << 20, 1));  // some of it already queued or written
  }
  EXPECT_EQ(read_all(path), "old");
  EXPECT_EQ(entries(dir), std::vector<std::string>{"out.bin"});
}

TEST_F(StreamFileTest, FailedWriteNamesTheFileAndRemovesTheTempFile) {
  // A file size limit makes writes past 1 MiB fail (EFBIG), as a full disk would.
  std::string path = (dir / "out.bin").string();
  { std::ofstream(path) << "old"; }
  rlimit old_limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old_limit;
  small.rlim_cur = 1 << 20;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string error;
  try {
    StreamFile f(path, "trace.json");
    for (int i = 0; i < 8; ++i) f.write(pattern(size_t(4) << 20, uint32_t(i)));
    f.commit();
  } catch (const Error& e) {
    error = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(error.rfind("[trace.json] " + path + ": write failed (", 0), 0u) << error;
  EXPECT_EQ(read_all(path), "old");
  EXPECT_EQ(entries(dir), std::vector<std::string>{"out.bin"});
}

TEST_F(StreamFileTest, MissingFolderIsAnErrorNamingIt) {
  std::string path = (dir / "no" / "such" / "out.bin").string();
  try {
    StreamFile f(path, "trace.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "no" / "such").string()), std::string::npos) << e.what();
  }
}

// A trace.json of ~25 MB saved through StreamFile is the very document
// chrome_trace_json makes: events cross buffer and block boundaries anywhere.
TEST_F(StreamFileTest, SavedTraceJsonMatchesTheDocument) {
  prof::Trace t;
  t.devices.push_back({0, "cpu:0", "2 cores", 2});
  t.tracks.push_back({prof::Track::Kind::host_thread, "main thread", 1, -1, -1});
  t.tracks.push_back({prof::Track::Kind::device_core, "cpu:0 core 0", 0, 0, 0});
  t.dropped_per_track = {0, 0};
  for (int i = 0; i < 60000; ++i) {
    prof::TraceEvent e;
    e.kind = i % 3 == 0 ? prof::EventKind::op : i % 3 == 1 ? prof::EventKind::launch : prof::EventKind::kernel;
    e.t0 = int64_t(i) * 1000 + i % 7;
    e.t1 = e.t0 + 500 + i % 11;
    e.id = e.kind == prof::EventKind::op ? uint64_t(i / 3 + 1) : uint64_t(i / 3 + 100000);
    e.parent = e.kind == prof::EventKind::op ? 0 : uint64_t(i / 3 + 1);
    e.name = std::string(size_t(i % 300), char('a' + i % 26)) + "\"\\\n✓";
    e.track = e.kind == prof::EventKind::kernel ? 1 : 0;
    e.device = e.kind == prof::EventKind::op ? -1 : 0;
    t.events.push_back(e);
  }
  std::string path = (dir / "trace.json").string();
  prof::save_chrome_trace(t, path);
  std::string expected = prof::chrome_trace_json(t);
  ASSERT_GT(expected.size(), size_t(20) << 20);
  std::string got = read_all(path);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected) << "contents differ";
}

}  // namespace
}  // namespace opscope
