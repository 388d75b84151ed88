// The system trace (profile.db): save, load and compare every field; the kernel_chain
// view; the errors for missing, damaged and newer files; atomic writes.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <grp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <string>

#include "opscope/core/error.h"
#include "opscope/profiler/store.h"
#include "opscope/profiler/trace.h"
#include "child_process.h"

namespace opscope::prof {
namespace {

namespace fs = std::filesystem;

// Every field set to a distinct value, strings with awkward bytes, ids above 2^63.
Trace full_trace() {
  Trace t;
  t.base_time_ns = 1'700'000'000'123'456'789;
  t.wall_time_ns = -5;
  t.config_json = R"({"activities":["framework"],"name":"q'uote\"d"})";
  t.devices.push_back({0, "cpu:0", "16-core CPU, AVX2", 16});
  t.devices.push_back({3, "cpu:3", "", 1});
  t.tracks.push_back({Track::Kind::host_thread, "main thread", 123456, -1, -1});
  t.tracks.push_back({Track::Kind::device_core, "cpu:0 core 15", 0, 0, 15});
  t.tracks.push_back({Track::Kind::host_thread, "thread\n\"2\" ✓", 7, -1, -1});
  t.tracks[1].rank = 0;  // a profile of several ranks (imported)
  t.tracks[2].rank = 3;
  t.dropped_per_track = {1, 0, 41};
  t.dropped = 42;
  for (int i = 0; i < 7 * 3; ++i) {
    TraceEvent e;
    e.kind = EventKind(i % 7);
    e.t0 = 1000 * i + i;
    e.t1 = e.t0 + (e.kind == EventKind::alloc || e.kind == EventKind::free ? 0 : 333 + i);
    e.id = i == 5 ? ~uint64_t(0) - 1 : uint64_t(100 + i);
    e.parent = i == 6 ? (uint64_t(1) << 63) + 9 : uint64_t(i / 2);
    e.bytes = int64_t(1) << (i % 40);
    e.flops = -i;
    e.value = i * 7;
    e.name = i == 4 ? std::string("nul\0inside", 10) : i == 8 ? "bad\xff utf8" : "ev" + std::to_string(i);
    e.track = i % 3;
    e.device = i % 2 ? 0 : -1;
    e.stream = i % 4 - 1;
    if (i % 3 == 0) e.shapes = "[(4, 4096) f32]";
    if (i % 5 == 0) e.source = "examples/x.cpp:" + std::to_string(i);
    t.events.push_back(e);
  }
  return t;
}

// A little correlated profile: op 1 -> launch 10 -> kernels on two cores.
Trace chain_trace() {
  Trace t;
  t.devices.push_back({0, "cpu:0", "2 cores", 2});
  t.tracks.push_back({Track::Kind::host_thread, "main thread", 1, -1, -1});
  t.tracks.push_back({Track::Kind::device_core, "cpu:0 core 0", 0, 0, 0});
  t.tracks.push_back({Track::Kind::device_core, "cpu:0 core 1", 0, 0, 1});
  t.dropped_per_track = {0, 0, 0};  // loaded profiles carry one count per track
  auto add = [&](EventKind k, int64_t t0, int64_t t1, uint64_t id, uint64_t parent, const char* name,
                 int track) {
    TraceEvent e;
    e.kind = k, e.t0 = t0, e.t1 = t1, e.id = id, e.parent = parent, e.name = name, e.track = track;
    e.device = k == EventKind::op ? -1 : 0;
    e.stream = k == EventKind::launch ? 2 : -1;
    t.events.push_back(e);
  };
  add(EventKind::op, 0, 100, 1, 0, "add", 0);
  add(EventKind::launch, 10, 20, 10, 1, "add_f32", 0);
  add(EventKind::kernel, 30, 60, 10, 1, "add_f32", 1);
  add(EventKind::kernel, 31, 70, 10, 1, "add_f32", 2);
  add(EventKind::kernel, 80, 90, 99, 0, "orphan", 1);  // its launch was dropped
  return t;
}

void expect_same(const Trace& a, const Trace& b) {
  EXPECT_EQ(a.schema_version, b.schema_version);
  EXPECT_EQ(a.base_time_ns, b.base_time_ns);
  EXPECT_EQ(a.wall_time_ns, b.wall_time_ns);
  EXPECT_EQ(a.config_json, b.config_json);
  EXPECT_EQ(a.dropped, b.dropped);
  EXPECT_EQ(a.dropped_per_track, b.dropped_per_track);
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (size_t i = 0; i < a.devices.size(); ++i) {
    EXPECT_EQ(a.devices[i].index, b.devices[i].index);
    EXPECT_EQ(a.devices[i].name, b.devices[i].name);
    EXPECT_EQ(a.devices[i].description, b.devices[i].description);
    EXPECT_EQ(a.devices[i].num_cores, b.devices[i].num_cores);
  }
  ASSERT_EQ(a.tracks.size(), b.tracks.size());
  for (size_t i = 0; i < a.tracks.size(); ++i) {
    EXPECT_EQ(a.tracks[i].kind, b.tracks[i].kind);
    EXPECT_EQ(a.tracks[i].name, b.tracks[i].name);
    EXPECT_EQ(a.tracks[i].os_tid, b.tracks[i].os_tid);
    EXPECT_EQ(a.tracks[i].device, b.tracks[i].device);
    EXPECT_EQ(a.tracks[i].core, b.tracks[i].core);
    EXPECT_EQ(a.tracks[i].rank, b.tracks[i].rank);
  }
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    const TraceEvent &x = a.events[i], &y = b.events[i];
    SCOPED_TRACE("event " + std::to_string(i));
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.t0, y.t0);
    EXPECT_EQ(x.t1, y.t1);
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.parent, y.parent);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.flops, y.flops);
    EXPECT_EQ(x.value, y.value);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.track, y.track);
    EXPECT_EQ(x.device, y.device);
    EXPECT_EQ(x.stream, y.stream);
    EXPECT_EQ(x.shapes, y.shapes);
    EXPECT_EQ(x.source, y.source);
  }
}

class Store : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() /
                 ("opscope_store_" + std::to_string(::getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::string db() const { return (dir / "profile.db").string(); }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir, ec);
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> v;
    for (auto& e : fs::directory_iterator(dir)) v.push_back(e.path().filename().string());
    std::sort(v.begin(), v.end());
    return v;
  }
  // Runs SQL on the saved db (read-write), to damage it on purpose.
  void sql(const std::string& statement) const {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(db().c_str(), &h), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(h, statement.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
    sqlite3_close(h);
  }
  // The error message load_profile(path) gives; fails the test when it loads.
  static std::string load_error(const std::string& path) {
    try {
      load_profile(path);
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "loaded without error: " << path;
    return "";
  }
};

TEST_F(Store, RoundTripKeepsEveryField) {
  Trace t = full_trace();
  export_profile(t, dir.string());
  expect_same(t, load_profile(dir.string()));  // the folder
  expect_same(t, load_profile(db()));          // or the file itself
}

// Profiles saved before tracks had a rank (same schema version) load, each track at -1.
TEST_F(Store, ProfileWithoutTheRankColumnLoadsWithOneProcess) {
  Trace t = full_trace();
  export_profile(t, dir.string());
  sql("ALTER TABLE tracks DROP COLUMN rank");
  for (Track& tr : t.tracks) tr.rank = -1;
  expect_same(t, load_profile(dir.string()));
}

TEST_F(Store, EmptyTraceRoundTrips) {
  Trace t;
  export_profile(t, dir.string());
  expect_same(t, load_profile(dir.string()));
}

TEST_F(Store, KernelChainLinksKernelLaunchAndOp) {
  export_profile(chain_trace(), dir.string());
  ProfileDb pdb(dir.string());
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(pdb.handle(),
                               "SELECT kernel_event, core, launch_event, stream, op_event, op, dur "
                               "FROM kernel_chain ORDER BY kernel_event",
                               -1, &s, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(pdb.handle());
  std::vector<std::string> rows;
  while (sqlite3_step(s) == SQLITE_ROW) {
    std::string r;
    for (int c = 0; c < 7; ++c) {
      auto p = sqlite3_column_text(s, c);
      r += (p ? reinterpret_cast<const char*>(p) : "NULL") + std::string(c < 6 ? "," : "");
    }
    rows.push_back(r);
  }
  sqlite3_finalize(s);
  EXPECT_EQ(rows, (std::vector<std::string>{"2,0,1,2,0,add,30", "3,1,1,2,0,add,39",
                                            "4,0,NULL,NULL,NULL,NULL,10"}));
}

TEST_F(Store, ExportLeavesExactlyTheTwoFilesAndReplacesOldOnes) {
  export_profile(full_trace(), dir.string());
  export_profile(chain_trace(), dir.string());
  EXPECT_EQ(entries(), (std::vector<std::string>{"profile.db", "trace.json"}));
  EXPECT_EQ(load_profile(dir.string()).events.size(), chain_trace().events.size());
}

TEST_F(Store, FailedExportLeavesTheOldProfileAndNoTempFiles) {
  export_profile(chain_trace(), dir.string());
  Trace bad = full_trace();
  bad.events[3].track = 77;  // malformed: no such track
  EXPECT_THROW(export_profile(bad, dir.string()), Error);
  EXPECT_EQ(entries(), (std::vector<std::string>{"profile.db", "trace.json"}));
  expect_same(chain_trace(), load_profile(dir.string()));
}

TEST_F(Store, MalformedTraceIsNotSaved) {
  fs::create_directories(dir);
  Trace bad = chain_trace();
  bad.events[2].track = 3;
  try {
    save_profile_db(bad, db());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[profile] " + db() + ": event 2 (kernel 'add_f32') has track 3 but the trace has 3 tracks");
  }
  EXPECT_TRUE(entries().empty());
}

TEST_F(Store, MalformedFirstOrLastEventIsNamed) {
  fs::create_directories(dir);
  for (size_t bad : {size_t(0), size_t(4)}) {
    Trace t = chain_trace();
    t.events[bad].track = -1;
    try {
      save_profile_db(t, db());
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "[profile] " + db() + ": event " + std::to_string(bad) + " (" +
                                           kind_name(t.events[bad].kind) + " '" + t.events[bad].name +
                                           "') has track -1 but the trace has 3 tracks");
    }
    EXPECT_TRUE(entries().empty());
  }
}

TEST_F(Store, ExportCreatesMissingFolders) {
  fs::path nested = dir / "a" / "b";
  export_profile(chain_trace(), nested.string());
  EXPECT_TRUE(fs::exists(nested / "trace.json"));
  EXPECT_TRUE(fs::exists(nested / "profile.db"));
}

TEST_F(Store, UncreatableFolderIsAnErrorNamingIt) {
  fs::create_directories(dir);
  { std::ofstream(dir / "file") << "x"; }
  std::string target = (dir / "file" / "out").string();  // a folder under a regular file
  try {
    export_profile(chain_trace(), target);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[profile] " + target + ":", 0), 0u) << e.what();
  }
  EXPECT_EQ(entries(), std::vector<std::string>{"file"});
}

// Saves into OPSCOPE_TEST_FOLDER, which its owner cannot write; prints the error. Root
// writes anywhere, so as root (CI runs as root) it first becomes the user "nobody".
OPSCOPE_CHILD_ENTRY(store_unwritable_folder) {
  if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0)) {
    std::printf("cannot leave root for the user nobody (65534): %s\n", std::strerror(errno));
    return 3;
  }
  try {
    export_profile(chain_trace(), std::getenv("OPSCOPE_TEST_FOLDER"));
    std::printf("no error\n");
    return 1;
  } catch (const Error& e) {
    std::printf("error: %s\n", e.what());
    return 0;
  }
}

TEST_F(Store, UnwritableFolderIsAnErrorNamingIt) {
  fs::create_directories(dir);
  // Readable and searchable by everyone (the user nobody included), writable by no one.
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                           fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  testutil::ChildResult r = testutil::run_child("store_unwritable_folder", {"OPSCOPE_TEST_FOLDER=" + dir.string()});
  ASSERT_EQ(r.status, 0) << r.log;
  EXPECT_EQ(r.log.rfind("error: [profile] " + dir.string(), 0), 0u) << r.log;
  EXPECT_TRUE(fs::is_empty(dir)) << "no temp file left behind";
}

TEST_F(Store, MissingFolderOrFile) {
  std::string missing = (dir / "nope").string();
  std::string e = load_error(missing);
  EXPECT_EQ(e.rfind("[profile] " + missing + ": no such file or folder", 0), 0u) << e;
  fs::create_directories(dir);
  e = load_error(dir.string());  // a folder without profile.db
  EXPECT_EQ(e.rfind("[profile] " + db() + ": no such file", 0), 0u) << e;
}

TEST_F(Store, NotADatabase) {
  fs::create_directories(dir);
  { std::ofstream(db()) << "{\"traceEvents\": []} this is JSON, not SQLite, and long enough to pass 100 bytes ....................."; }
  std::string e = load_error(dir.string());
  EXPECT_EQ(e.rfind("[profile] " + db() + ": not a SQLite database", 0), 0u) << e;
  { std::ofstream(db(), std::ios::trunc); }
  e = load_error(dir.string());
  EXPECT_EQ(e.rfind("[profile] " + db() + ": empty file", 0), 0u) << e;
}

TEST_F(Store, TruncatedDatabase) {
  export_profile(full_trace(), dir.string());
  auto size = fs::file_size(db());
  fs::resize_file(db(), size / 2);
  std::string e = load_error(dir.string());
  EXPECT_EQ(e.rfind("[profile] " + db() + ": truncated", 0), 0u) << e;
  fs::resize_file(db(), 50);  // not even a whole header
  e = load_error(dir.string());
  EXPECT_EQ(e.rfind("[profile] " + db() + ": truncated", 0), 0u) << e;
}

TEST_F(Store, CorruptDatabase) {
  export_profile(full_trace(), dir.string());
  {  // keep the header (page 1 starts with it), scribble over every later page
    std::fstream f(db(), std::ios::in | std::ios::out | std::ios::binary);
    auto size = fs::file_size(db());
    f.seekp(100);
    std::string junk(size - 100, '\xA5');
    f.write(junk.data(), std::streamsize(junk.size()));
  }
  std::string e = load_error(dir.string());
  EXPECT_EQ(e.rfind("[profile] " + db() + ": ", 0), 0u) << e;
  EXPECT_NE(e.find("corrupt"), std::string::npos) << e;
}

TEST_F(Store, MissingTable) {
  export_profile(chain_trace(), dir.string());
  sql("DROP VIEW kernel_chain; DROP TABLE events;");
  std::string e = load_error(dir.string());
  EXPECT_EQ(e, "[profile] " + db() + ": missing table 'events'");
  sql("DROP TABLE meta;");
  e = load_error(dir.string());
  EXPECT_EQ(e.rfind("[profile] " + db() + ": not an opscope profile", 0), 0u) << e;
}

TEST_F(Store, NewerSchemaVersionIsRejected) {
  export_profile(chain_trace(), dir.string());
  sql("UPDATE meta SET value = '" + std::to_string(kSchemaVersion + 1) + "' WHERE key = 'schema_version'");
  std::string e = load_error(dir.string());
  EXPECT_EQ(e.rfind("[profile] " + db() + ": schema version " + std::to_string(kSchemaVersion + 1) +
                        " is newer than this opscope reads",
                    0),
            0u)
      << e;
}

TEST_F(Store, LostRowsAreReportedAsTruncated) {
  export_profile(chain_trace(), dir.string());
  sql("DELETE FROM events WHERE event >= 3");
  std::string e = load_error(dir.string());
  EXPECT_EQ(e, "[profile] " + db() + ": truncated: 3 events, its meta says 5");
}

// A profile large enough that load_profile reads its events in chunks on parallel
// connections: every kind, strings of every length, ids above 2^63, shapes and sources.
Trace large_trace(size_t n = 100'000) {
  Trace t = full_trace();
  t.events.clear();
  for (size_t i = 0; i < n; ++i) {
    TraceEvent e;
    e.kind = EventKind(i % 7);
    e.t0 = int64_t(i) * 100;
    e.t1 = e.t0 + int64_t(i % 90);
    e.id = i % 1000 == 5 ? ~uint64_t(0) - i : uint64_t(i / 3);
    e.parent = uint64_t(i / 7);
    e.bytes = int64_t(i) << 20;
    e.flops = -int64_t(i);
    e.value = int64_t(i % 13);
    e.name = "event_" + std::string(i % 40, 'x') + std::to_string(i);
    e.track = int32_t(i % 3);
    e.device = int32_t(i % 2) - 1;
    e.stream = int32_t(i % 5) - 1;
    if (i % 4 == 0) e.shapes = "[(" + std::to_string(i) + ", 4096) f32]";
    if (i % 6 == 0) e.source = "examples/x.cpp:" + std::to_string(i % 1000);
    t.events.push_back(std::move(e));
  }
  return t;
}

TEST_F(Store, LargeProfileRoundTripsThroughParallelReads) {
  Trace t = large_trace();
  export_profile(t, dir.string());
  expect_same(t, load_profile(dir.string()));
}

TEST_F(Store, LargeProfileWithRowsRenumberedLoadsInOrder) {
  Trace t = large_trace();
  export_profile(t, dir.string());
  sql("UPDATE events SET event = event + 1000000");  // same order, not 0..n-1
  expect_same(t, load_profile(dir.string()));
}

TEST_F(Store, LargeProfileWithALostRowIsTruncated) {
  export_profile(large_trace(), dir.string());
  sql("DELETE FROM events WHERE event = 70000");
  EXPECT_EQ(load_error(dir.string()), "[profile] " + db() + ": truncated: 99999 events, its meta says 100000");
}

TEST_F(Store, LargeProfileNamesItsFirstBadEvent) {
  export_profile(large_trace(), dir.string());
  sql("UPDATE events SET kind = 'bogus' WHERE event = 90000");
  EXPECT_EQ(load_error(dir.string()), "[profile] " + db() + ": event 90000 has an unknown kind 'bogus'");
  sql("UPDATE events SET track = 9 WHERE event = 20000");  // earlier: reported first
  EXPECT_EQ(load_error(dir.string()),
            "[profile] " + db() + ": corrupt: event 20000 has track 9 but there are 3 tracks");
}

TEST_F(Store, LargeCorruptDatabaseIsNamed) {
  export_profile(large_trace(), dir.string());
  {  // junk over the middle third of the file: table pages of every reader's chunk
    std::fstream f(db(), std::ios::in | std::ios::out | std::ios::binary);
    auto size = fs::file_size(db());
    f.seekp(std::streamoff(size / 3));
    std::string junk(size / 3, '\xA5');
    f.write(junk.data(), std::streamsize(junk.size()));
  }
  std::string e = load_error(dir.string());
  EXPECT_EQ(e.rfind("[profile] " + db() + ": ", 0), 0u) << e;
  EXPECT_NE(e.find("corrupt"), std::string::npos) << e;
}

TEST_F(Store, ProfileDbIsReadOnly) {
  export_profile(chain_trace(), dir.string());
  ProfileDb pdb(dir.string());
  EXPECT_EQ(pdb.schema_version(), kSchemaVersion);
  EXPECT_NE(sqlite3_exec(pdb.handle(), "DELETE FROM events", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(load_profile(dir.string()).events.size(), 5u);
}

}  // namespace
}  // namespace opscope::prof
