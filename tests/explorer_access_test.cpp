// Who can read the explorer (access.h): on loopback only requests whose Host names the
// loopback exactly (DNS-rebinding names refused, a missing Host refused); on another
// address only requests carrying the printed access token; and on every answer, nosniff
// and a Content-Security-Policy with no inline script. Checked against the running server
// on a free port, with raw sockets where httplib's client would fix the request up.
#include "opscope/explorer/httplib.h"
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <set>
#include <thread>

#include "cli_util.h"
#include "opscope/explorer/access.h"
#include "opscope/explorer/server.h"
#include "opscope/explorer/synthetic.h"
#include "opscope/profiler/store.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace opscope::explorer;

namespace {

ProfilePtr naive() {
  return std::make_shared<Profile>("rmsnorm naive", "synthetic", synthetic_rmsnorm("naive", 4, 256, 1, 2));
}

// A server on a free port of `host`, serving on its own thread for the test's duration.
struct Running {
  explicit Running(ExploreOptions opts = {}) {
    opts.port = 0;
    server = std::make_unique<ExplorerServer>(std::vector<ProfilePtr>{naive()}, opts);
    port = server->bind();
    thread = std::thread([this] { server->run(); });
  }
  ~Running() {
    server->stop();
    thread.join();
  }
  std::unique_ptr<ExplorerServer> server;
  int port = 0;
  std::thread thread;
};

struct RawAnswer {
  int status = 0;  // 0: no HTTP answer
  std::string head, body;
  bool has(const std::string& header_line) const { return head.find("\r\n" + header_line + "\r\n") != std::string::npos; }
  std::string header(const std::string& name) const {
    size_t at = head.find("\r\n" + name + ": ");
    if (at == std::string::npos) return "";
    at += name.size() + 4;
    return head.substr(at, head.find("\r\n", at) - at);
  }
};

// Sends `request` as written (no Host added, none fixed) to ip:port and reads the answer
// until the server closes the connection.
RawAnswer raw_request(const std::string& ip, int port, const std::string& request) {
  RawAnswer a;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return a;
  }
  for (size_t sent = 0; sent < request.size();) {
    ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += size_t(n);
  }
  std::string all;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) all.append(buf, size_t(n));
  ::close(fd);
  size_t end = all.find("\r\n\r\n");
  if (all.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return a;
  a.status = std::stoi(all.substr(9, 3));
  a.head = all.substr(0, end + 2);
  a.body = all.substr(end + 4);
  return a;
}

RawAnswer get(int port, const std::string& target, const std::string& host_header,
              const std::string& extra = "", const std::string& ip = "127.0.0.1") {
  std::string req = "GET " + target + " HTTP/1.1\r\n";
  if (!host_header.empty()) req += "Host: " + host_header + "\r\n";
  return raw_request(ip, port, req + extra + "Connection: close\r\n\r\n");
}

void expect_security_headers(const RawAnswer& a, const std::string& what) {
  EXPECT_TRUE(a.has("X-Content-Type-Options: nosniff")) << what << "\n" << a.head;
  std::string csp = a.header("Content-Security-Policy");
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << what << ": " << csp;
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << what << ": " << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << what << ": " << csp;
  EXPECT_EQ(csp.find("unsafe-eval"), std::string::npos) << what << ": " << csp;
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << what << ": " << csp;
}

}  // namespace

TEST(ExplorerAccess, HostHeaderRules) {
  for (const char* ok : {"127.0.0.1", "127.0.0.1:8642", "localhost", "localhost:8642", "LocalHost:8642", "[::1]",
                         "[::1]:8642"})
    EXPECT_TRUE(is_local_host_header(ok, 8642)) << ok;
  for (const char* bad : {"", "127.attacker.example", "127.0.0.1.nip.io:8642", "127.0.0.1.nip.io", "127.0.0.2",
                          "127.1", "localhost.", "localhost.attacker.example", "::1", "[::1].evil", "[::1]x",
                          "127.0.0.1:8643", "127.0.0.1:08642", "127.0.0.1:", "localhost:8642:8642",
                          "localhost@attacker.example", "attacker.example:8642", "0.0.0.0:8642", " 127.0.0.1"})
    EXPECT_FALSE(is_local_host_header(bad, 8642)) << bad;
  // Before bind() no port is served: only the forms without one are local.
  EXPECT_TRUE(is_local_host_header("localhost", -1));
  EXPECT_FALSE(is_local_host_header("localhost:-1", -1));

  for (const char* lo : {"127.0.0.1", "localhost", "::1"}) EXPECT_TRUE(is_loopback_bind(lo)) << lo;
  for (const char* other : {"0.0.0.0", "::", "192.168.1.20", "127.0.0.2", "example.org"})
    EXPECT_FALSE(is_loopback_bind(other)) << other;
}

TEST(ExplorerAccess, TokensAreRandomAndReadFromTheQueryOrTheHeader) {
  std::set<std::string> seen;
  for (int i = 0; i < 8; ++i) {
    std::string t = new_access_token();
    EXPECT_TRUE(std::regex_match(t, std::regex("[0-9a-f]{48}"))) << t;
    seen.insert(t);
  }
  EXPECT_EQ(seen.size(), 8u);

  EXPECT_EQ(request_token("abc", ""), "abc");
  EXPECT_EQ(request_token("", "token abc"), "abc");
  EXPECT_EQ(request_token("", "Token  abc "), "abc");
  EXPECT_EQ(request_token("", "Bearer abc"), "abc");
  EXPECT_EQ(request_token("", "Basic abc"), "");
  EXPECT_EQ(request_token("q", "Basic abc"), "q");
  EXPECT_EQ(request_token("q", "token h"), "h");  // the header wins

  EXPECT_TRUE(token_equal("abc", "abc"));
  EXPECT_FALSE(token_equal("abc", "abd"));
  EXPECT_FALSE(token_equal("abc", "abcd"));
  EXPECT_FALSE(token_equal("", "abc"));
}

TEST(ExplorerAccess, LoopbackAnswersOnlyToLoopbackHostNames) {
  Running rs;
  const std::string p = std::to_string(rs.port);
  for (const std::string& host : std::vector<std::string>{"127.0.0.1", "127.0.0.1:" + p, "localhost", "localhost:" + p, "[::1]", "[::1]:" + p}) {
    RawAnswer a = get(rs.port, "/api/profiles", host);
    EXPECT_EQ(a.status, 200) << host << "\n" << a.head << a.body;
    if (a.status == 200) {
      EXPECT_EQ(json::parse(a.body)["profiles"][0]["label"], "rmsnorm naive") << host;
    }
  }
  // DNS-rebinding names resolve to 127.0.0.1 but are not this machine's name for itself.
  for (const std::string& host : std::vector<std::string>{"127.attacker.example", "127.0.0.1.nip.io:" + p, "127.0.0.1.nip.io", "attacker.example:" + p,
                           "127.0.0.1:" + std::to_string(rs.port + 1), "localhost.:" + p, "127.0.0.2:" + p}) {
    RawAnswer a = get(rs.port, "/api/profiles", host);
    EXPECT_EQ(a.status, 403) << host;
    EXPECT_EQ(a.body.find("rmsnorm"), std::string::npos) << host;
    EXPECT_NE(a.body.find("answers only to 127.0.0.1, localhost or [::1]"), std::string::npos) << a.body;
    // The UI's files too: the page a rebinding site would load first.
    EXPECT_EQ(get(rs.port, "/", host).status, 403) << host;
  }
  // No Host (an HTTP/1.0-style request) and two Hosts are refused, not waved through.
  RawAnswer none = get(rs.port, "/api/profiles", "");
  EXPECT_EQ(none.status, 400) << none.head;
  EXPECT_EQ(none.body.find("rmsnorm"), std::string::npos);
  RawAnswer old = raw_request("127.0.0.1", rs.port, "GET /api/profiles HTTP/1.0\r\n\r\n");
  EXPECT_EQ(old.status, 400) << old.head;
  RawAnswer two = get(rs.port, "/api/profiles", "localhost:" + p, "Host: attacker.example\r\n");
  EXPECT_EQ(two.status, 400) << two.head;
  // A loopback server wants no token.
  EXPECT_EQ(rs.server->token(), "");
  EXPECT_EQ(rs.server->url(), "http://127.0.0.1:" + p + "/");
}

TEST(ExplorerAccess, EveryAnswerCarriesNosniffAndAPolicyWithoutInlineScript) {
  Running rs;
  const std::string host = "127.0.0.1:" + std::to_string(rs.port);
  struct Case {
    std::string target, host, extra;
    int status;
  };
  for (const Case& c : std::vector<Case>{{"/api/profiles", host, "", 200},
                                         {"/", host, "", 200},
                                         {"/api/profiles/7/summary", host, "", 404},
                                         {"/api/profiles/0/timeline?t0=x", host, "", 400},
                                         {"/nothing-here", host, "", 404},
                                         {"/api/profiles", "127.attacker.example", "", 403},
                                         {"/api/profiles", "", "", 400}}) {
    RawAnswer a = get(rs.port, c.target, c.host, c.extra);
    EXPECT_EQ(a.status, c.status) << c.target << " Host " << c.host;
    expect_security_headers(a, c.target + " (" + std::to_string(a.status) + ")");
  }
  RawAnswer post = raw_request("127.0.0.1", rs.port,
                               "POST /api/profiles HTTP/1.1\r\nHost: " + host +
                                   "\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx");
  EXPECT_EQ(post.status, 405);
  expect_security_headers(post, "POST");

  // The page itself holds no inline script or style for the policy to block.
  RawAnswer page = get(rs.port, "/", host);
  ASSERT_EQ(page.status, 200);
  std::smatch m;
  const std::regex script_tag("<script[^>]*>");
  for (auto it = std::sregex_iterator(page.body.begin(), page.body.end(), script_tag);
       it != std::sregex_iterator(); ++it)
    EXPECT_NE(it->str().find(" src="), std::string::npos) << "inline script: " << it->str();
  EXPECT_FALSE(std::regex_search(page.body, m, std::regex("<style|\\sstyle=|\\son[a-z]+=", std::regex::icase)))
      << m.str();
}

TEST(ExplorerAccess, AnotherAddressNeedsTheAccessTokenOnEveryApiRequest) {
  // 127.0.0.2 is not one of the loopback names a browser uses, so it is served as any
  // network address would be; unlike 0.0.0.0 it reaches no other machine during the test.
  ExploreOptions opts;
  opts.host = "127.0.0.2";
  Running rs(opts);
  const std::string token = rs.server->token();
  ASSERT_TRUE(std::regex_match(token, std::regex("[0-9a-f]{48}"))) << token;
  EXPECT_EQ(rs.server->url(), "http://127.0.0.2:" + std::to_string(rs.port) + "/?token=" + token);
  const std::string host = "127.0.0.2:" + std::to_string(rs.port), ip = "127.0.0.2";

  RawAnswer none = get(rs.port, "/api/profiles", host, "", ip);
  EXPECT_EQ(none.status, 401);
  EXPECT_NE(none.body.find("access token"), std::string::npos) << none.body;
  EXPECT_EQ(none.body.find("rmsnorm"), std::string::npos);
  expect_security_headers(none, "401");
  for (const std::string& bad : std::vector<std::string>{"?token=", "?token=" + token.substr(1), "?token=" + token + "0", "?token=x"})
    EXPECT_EQ(get(rs.port, "/api/profiles" + bad, host, "", ip).status, 401) << bad;
  EXPECT_EQ(get(rs.port, "/api/profiles", host, "Authorization: token " + token.substr(0, 47) + "x\r\n", ip).status,
            401);
  EXPECT_EQ(get(rs.port, "/api/profiles/0/summary", host, "", ip).status, 401);

  // The printed URL's form, Jupyter's header and a bearer header all work; so does any
  // Host name the network gives the machine.
  EXPECT_EQ(get(rs.port, "/api/profiles?token=" + token, host, "", ip).status, 200);
  EXPECT_EQ(get(rs.port, "/api/profiles/0/ops?token=" + token, "workstation.lan:8642", "", ip).status, 200);
  EXPECT_EQ(get(rs.port, "/api/profiles", host, "Authorization: token " + token + "\r\n", ip).status, 200);
  EXPECT_EQ(get(rs.port, "/api/profiles/0/summary", host, "Authorization: Bearer " + token + "\r\n", ip).status, 200);
  // The UI's files hold no data: they load without it, and the UI passes the token on.
  EXPECT_EQ(get(rs.port, "/", host, "", ip).status, 200);
  // A Host is still needed.
  EXPECT_EQ(get(rs.port, "/api/profiles?token=" + token, "", "", ip).status, 400);
}

TEST(ExplorerAccess, AGivenTokenIsRequiredOnLoopbackToo) {
  ExploreOptions opts;
  opts.token = "s3cret";
  Running rs(opts);
  const std::string host = "localhost:" + std::to_string(rs.port);
  EXPECT_EQ(rs.server->token(), "s3cret");
  EXPECT_EQ(get(rs.port, "/api/profiles", host).status, 401);
  EXPECT_EQ(get(rs.port, "/api/profiles?token=s3cret", host).status, 200);
  // The Host rule still holds with the token.
  EXPECT_EQ(get(rs.port, "/api/profiles?token=s3cret", "127.attacker.example").status, 403);
}

// `opscope explore --host ADDR` as a user runs it: it prints the URL with its token, and
// the API answers that URL and refuses the bare one.
TEST(ExplorerAccess, CliPrintsTheTokenForANonLoopbackHost) {
  fs::path dir = fs::temp_directory_path() / ("opscope_explorer_access_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  opscope::prof::export_profile(synthetic_rmsnorm("naive", 4, 256, 1, 2), (dir / "good").string());
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  std::string bin = opscope::testutil::opscope_binary(), profile = (dir / "good").string();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::close(out[0]);
    ::execl(bin.c_str(), bin.c_str(), "explore", profile.c_str(), "--host", "127.0.0.2", "--port", "0", nullptr);
    ::_exit(127);
  }
  ::close(out[1]);
  // Read until the URL line (or the end, if it fails): the read itself waits for it.
  std::string text;
  std::smatch m;
  const std::regex url("http://127\\.0\\.0\\.2:(\\d+)/\\?token=([0-9a-f]{48})");
  char buf[1024];
  for (ssize_t n; !std::regex_search(text, m, url) && (n = ::read(out[0], buf, sizeof buf)) > 0;)
    text.append(buf, size_t(n));
  bool found = std::regex_search(text, m, url);
  int port = found ? std::stoi(m[1]) : 0;
  std::string token = found ? m[2].str() : "";
  int bare = 0, with = 0;
  if (found) {
    const std::string host = "127.0.0.2:" + std::to_string(port);
    bare = get(port, "/api/profiles", host, "", "127.0.0.2").status;
    with = get(port, "/api/profiles?token=" + token, host, "", "127.0.0.2").status;
  }
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
  ::close(out[0]);
  fs::remove_all(dir);
  ASSERT_TRUE(found) << text;
  EXPECT_NE(text.find("API requests need the access token"), std::string::npos) << text;
  EXPECT_EQ(bare, 401);
  EXPECT_EQ(with, 200);
}
