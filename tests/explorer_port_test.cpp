// `opscope explore`'s first minutes: a taken port is refused (an asked-for one) or passed
// over (the default one), never shared with the server already on it; with no loadable
// profile it exits 1 naming each folder instead of serving an empty UI.
#include "opscope/explorer/httplib.h"
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "cli_util.h"
#include "opscope/core/error.h"
#include "opscope/explorer/server.h"
#include "opscope/explorer/synthetic.h"
#include "opscope/profiler/store.h"

extern char** environ;

namespace fs = std::filesystem;
using nlohmann::json;
using namespace opscope::explorer;

namespace {

ProfilePtr named(const std::string& label) {
  return std::make_shared<Profile>(label, "synthetic", synthetic_rmsnorm("naive", 4, 256, 1, 2));
}

// A server on its own thread for the test's duration.
struct Serving {
  Serving(ExplorerServer& s) : server(s), thread([this] { server.run(); }) {}
  ~Serving() {
    server.stop();
    thread.join();
  }
  ExplorerServer& server;
  std::thread thread;
};

ExploreOptions on_port(int port, bool next_free = false) {
  ExploreOptions o;
  o.port = port;
  o.next_free_port = next_free;
  return o;
}

// An explorer serving a profile labelled "first" on a free loopback port.
struct FirstServer {
  FirstServer() : server({named("first")}, on_port(0)), port(server.bind()), serving(server) {}
  ExplorerServer server;
  int port;
  Serving serving;
};

// The label of the first profile the server on `port` serves.
std::string label_on(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(5);
  c.set_read_timeout(10);
  auto res = c.Get("/api/profiles");
  if (!res || res->status != 200) return "";
  return json::parse(res->body)["profiles"][0]["label"].get<std::string>();
}

// A plain listening socket on a free loopback port, or on `want` (not httplib: nothing
// shared). port stays 0 when the port could not be had (taken_by_another: it is in use).
struct HeldPort {
  explicit HeldPort(int want = 0) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(uint16_t(want));
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0 && ::listen(fd, 1) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
    else
      taken_by_another = errno == EADDRINUSE;
  }
  bool taken_by_another = false;
  ~HeldPort() { ::close(fd); }
  int fd = -1;
  int port = 0;
};

// `opscope explore ARGS...` running in the background, as a user starts it; its output is
// read line by line until a line holds `until` (or it exits). Stopped (SIGTERM) at the end.
struct BackgroundExplore {
  explicit BackgroundExplore(const std::vector<std::string>& args) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    std::string exe = opscope::testutil::opscope_binary();
    std::vector<std::string> words = {exe, "explore"};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    if (::posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ) != 0) pid = -1;
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[1]);
    out = ::fdopen(fds[0], "r");
  }
  ~BackgroundExplore() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
    if (out) std::fclose(out);
  }
  // Reads until a line containing `until`; what was read (all of it if the process ended).
  std::string read_until(const std::string& until) {
    std::string text;
    char line[4096];
    while (out && std::fgets(line, sizeof line, out)) {
      text += line;
      if (std::string(line).find(until) != std::string::npos) break;
    }
    return text;
  }
  pid_t pid = -1;
  FILE* out = nullptr;
};

// explore_main on a port held here: it loads the paths, cannot serve, and returns 1 (a
// version that went on to serve would fail to bind, not hang).
struct LoadOnly {
  int rc = -1, port = 0;
  std::string log;
};
LoadOnly explore_loading_only(const std::vector<std::string>& paths) {
  HeldPort held;
  ExploreOptions opts;
  opts.port = held.port;
  std::ostringstream log;
  opts.log = &log;
  LoadOnly r;
  r.rc = held.port > 0 ? explore_main(paths, opts) : -1;
  r.port = held.port;
  r.log = log.str();
  return r;
}

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("opscope_explore_port_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST(ExplorerPort, AskedForPortInUseIsRefusedNotShared) {
  FirstServer first;
  ExplorerServer second({named("second")}, on_port(first.port));
  try {
    second.bind();
    FAIL() << "a second server bound port " << first.port;
  } catch (const opscope::Error& e) {
    EXPECT_EQ(std::string(e.what()), "[explore] port " + std::to_string(first.port) + " is in use");
  }
  // Every connection still reaches the first server.
  for (int i = 0; i < 8; ++i) EXPECT_EQ(label_on(first.port), "first");
}

TEST(ExplorerPort, DefaultPortMovesOnToTheNextFreeOne) {
  FirstServer first;
  ExplorerServer second({named("second")}, on_port(first.port, /*next_free=*/true));
  int port = second.bind();
  EXPECT_GT(port, first.port);
  EXPECT_EQ(second.url(), "http://127.0.0.1:" + std::to_string(port) + "/");
  Serving serving_second(second);
  EXPECT_EQ(label_on(first.port), "first");
  EXPECT_EQ(label_on(port), "second");
}

TEST(ExplorerPort, NoLoadableProfileExitsOneNamingEachFolder) {
  fs::path dir = temp_dir("none");
  fs::create_directories(dir / "corrupt");
  std::ofstream(dir / "corrupt" / opscope::prof::kProfileDbFile) << "this is not a database";
  // The port is held, so a version that went on to serve would fail to bind, not hang.
  HeldPort held;
  ASSERT_GT(held.port, 0);
  ExploreOptions opts;
  opts.port = held.port;
  std::ostringstream log;
  opts.log = &log;
  std::string missing = (dir / "missing").string(), corrupt = (dir / "corrupt").string();
  EXPECT_EQ(explore_main({missing, corrupt}, opts), 1);
  std::string out = log.str();
  EXPECT_NE(out.find(missing + ": cannot load: "), std::string::npos) << out;
  EXPECT_NE(out.find(corrupt + ": cannot load: "), std::string::npos) << out;
  EXPECT_NE(out.find("no profile could be loaded (2 folders above)"), std::string::npos) << out;
  EXPECT_EQ(out.find("http://"), std::string::npos) << out;
  fs::remove_all(dir);
}

TEST(ExplorerPort, OneLoadableProfileIsServedAndTheOthersListed) {
  fs::path dir = temp_dir("some");
  opscope::prof::export_profile(synthetic_rmsnorm("naive", 4, 256, 1, 2), (dir / "good").string());
  std::string good = (dir / "good").string(), missing = (dir / "missing").string();
  LoadOnly r = explore_loading_only({good, missing});  // explicit port, taken: returns after loading
  EXPECT_EQ(r.rc, 1);
  std::string out = r.log;
  EXPECT_NE(out.find("1 of 2 profiles loaded; not loaded: " + missing), std::string::npos) << out;
  EXPECT_NE(out.find("[explore] port " + std::to_string(r.port) + " is in use"), std::string::npos) << out;
  fs::remove_all(dir);
}

// The CLI as a user runs it: exit status 1 and the reason.
TEST(ExplorerPort, CliExitsOneOnATakenPortAndOnNoProfile) {
  using opscope::testutil::run_opscope;
  fs::path dir = temp_dir("cli");
  opscope::prof::export_profile(synthetic_rmsnorm("naive", 4, 256, 1, 2), (dir / "good").string());
  HeldPort held;
  ASSERT_GT(held.port, 0);
  auto r = run_opscope({"explore", (dir / "good").string(), "--port", std::to_string(held.port)});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("port " + std::to_string(held.port) + " is in use"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("http://"), std::string::npos) << r.out;

  r = run_opscope({"explore", (dir / "nothing").string(), "--port", "0"});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find((dir / "nothing").string() + ": cannot load"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no profile could be loaded"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// The README: "a browser UI on http://127.0.0.1:8642/, or the next free port, which it
// prints". With 8642 held (here, or already by someone else), the CLI started as a user
// starts it says so and serves on the next free port, which answers.
TEST(ExplorerPort, TheCliServesOn8642OrTheNextFreePortAndPrintsIt) {
  EXPECT_EQ(ExploreOptions{}.port, 8642);
  EXPECT_EQ(ExploreOptions{}.host, "127.0.0.1");
  HeldPort held(8642);
  ASSERT_TRUE(held.port == 8642 || held.taken_by_another) << "8642 can be neither held nor found in use";
  fs::path dir = temp_dir("default");
  opscope::prof::export_profile(synthetic_rmsnorm("naive", 4, 256, 1, 2), (dir / "mine").string());
  BackgroundExplore explore({(dir / "mine").string()});
  ASSERT_GT(explore.pid, 0);
  std::string out = explore.read_until("opscope explore: http://");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(port 8642 is in use, serving on (\d+)\n)"))) << out;
  int port = std::stoi(m[1]);
  EXPECT_GT(port, 8642);
  EXPECT_NE(out.find("opscope explore: http://127.0.0.1:" + std::to_string(port) + "/"), std::string::npos) << out;
  EXPECT_EQ(label_on(port), "mine");
  fs::remove_all(dir);
}

// `opscope profile ... --out p` writes p/naive, p/builtin, p/compiled, as the main job
// writes opscope-profile/: `explore p` opens every profile in the folder.
TEST(ExplorerPort, AFolderOfProfilesOpensEachOfThem) {
  fs::path dir = temp_dir("folder");
  for (const char* name : {"naive", "builtin", "compiled"})
    opscope::prof::export_profile(synthetic_rmsnorm("naive", 4, 256, 1, 2), (dir / "p" / name).string());
  fs::create_directories(dir / "p" / "empty");  // not a profile: passed over
  std::ofstream(dir / "p" / "notes.txt") << "not a profile either";
  EXPECT_EQ(profiles_in((dir / "p").string()),
            (std::vector<std::string>{(dir / "p" / "builtin").string(), (dir / "p" / "compiled").string(),
                                      (dir / "p" / "naive").string()}));
  // A profile folder, a missing path and a folder with no profile stand for themselves.
  EXPECT_EQ(profiles_in((dir / "p" / "naive").string()), std::vector<std::string>{(dir / "p" / "naive").string()});
  EXPECT_EQ(profiles_in((dir / "nope").string()), std::vector<std::string>{(dir / "nope").string()});
  EXPECT_EQ(profiles_in((dir / "p" / "empty").string()), std::vector<std::string>{(dir / "p" / "empty").string()});
  // A distributed job's folder (rank-N profiles) is one profile, not one per rank.
  for (const char* rank : {"rank-0", "rank-1"})
    opscope::prof::export_profile(synthetic_rmsnorm("naive", 4, 256, 1, 2), (dir / "jobs" / "job" / rank).string());
  opscope::prof::export_profile(synthetic_rmsnorm("naive", 4, 256, 1, 2), (dir / "jobs" / "single").string());
  EXPECT_EQ(profiles_in((dir / "jobs" / "job").string()), std::vector<std::string>{(dir / "jobs" / "job").string()});
  EXPECT_EQ(profiles_in((dir / "jobs").string()),
            (std::vector<std::string>{(dir / "jobs" / "job").string(), (dir / "jobs" / "single").string()}));

  LoadOnly r = explore_loading_only({(dir / "p").string()});
  EXPECT_EQ(r.rc, 1);
  std::string out = r.log;
  EXPECT_NE(out.find((dir / "p").string() + ": 3 profiles in the folder"), std::string::npos) << out;
  for (const char* name : {"naive", "builtin", "compiled"})
    EXPECT_TRUE(std::regex_search(out, std::regex((dir / "p" / name).string() + ": \\d+ events"))) << out;
  EXPECT_EQ(out.find("cannot load"), std::string::npos) << out;
  EXPECT_NE(out.find("[explore] port " + std::to_string(r.port) + " is in use"), std::string::npos) << out;
  fs::remove_all(dir);
}

// The newcomer's path through the CLI: profile one implementation into p (p/builtin),
// then explore p.
TEST(ExplorerPort, TheCliOpensWhatOpscopeProfileWrote) {
  using opscope::testutil::run_opscope;
  fs::path dir = temp_dir("newcomer");
  std::ofstream(dir / "peaks.json") << R"({"stream_gbps": 20, "matmul_gflops": 50})";  // (no probe needed)
  auto made = run_opscope({"profile", "rmsnorm", "--impl", "builtin", "--shape", "8x64", "--iters", "1", "--peaks",
                           (dir / "peaks.json").string(), "--out", (dir / "p").string()});
  ASSERT_EQ(made.status, 0) << made.out;
  HeldPort held;
  ASSERT_GT(held.port, 0);
  auto r = run_opscope({"explore", (dir / "p").string(), "--port", std::to_string(held.port)});
  EXPECT_EQ(r.status, 1) << r.out;  // the port is held: it loaded, then could not serve
  EXPECT_TRUE(std::regex_search(r.out, std::regex((dir / "p" / "builtin").string() + ": \\d+ events"))) << r.out;
  EXPECT_EQ(r.out.find("no profile could be loaded"), std::string::npos) << r.out;
  fs::remove_all(dir);
}
