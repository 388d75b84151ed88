// `opscope explore`'s first minutes: a taken port is refused (an asked-for one) or passed
// over (the default one), never shared with the server already on it; with no loadable
// profile it exits 1 naming each folder instead of serving an empty UI.
#include "opscope/explorer/httplib.h"
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli_util.h"
#include "opscope/core/error.h"
#include "opscope/explorer/server.h"
#include "opscope/explorer/synthetic.h"
#include "opscope/profiler/store.h"

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

// A plain listening socket on a free loopback port (not httplib: nothing shared).
struct HeldPort {
  HeldPort() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0 && ::listen(fd, 1) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
  }
  ~HeldPort() { ::close(fd); }
  int fd = -1;
  int port = 0;
};

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
  HeldPort held;  // explicit and taken: explore_main returns after loading instead of serving
  ASSERT_GT(held.port, 0);
  ExploreOptions opts;
  opts.port = held.port;
  std::ostringstream log;
  opts.log = &log;
  std::string good = (dir / "good").string(), missing = (dir / "missing").string();
  EXPECT_EQ(explore_main({good, missing}, opts), 1);
  std::string out = log.str();
  EXPECT_NE(out.find("1 of 2 profiles loaded; not loaded: " + missing), std::string::npos) << out;
  EXPECT_NE(out.find("[explore] port " + std::to_string(held.port) + " is in use"), std::string::npos) << out;
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
