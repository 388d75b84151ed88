// The explorer: the timeline index and its level-of-detail bound, the correlation chain,
// the summary's recommendations, the JSON API's answers and errors, and the HTTP server
// (bound to a free port on 127.0.0.1, queried with httplib::Client): traversal attempts,
// limits, a corrupt profile listed beside good ones.
#include "opscope/explorer/httplib.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <thread>

#include "opscope/analysis/advisor/advise.h"
#include "opscope/explorer/api.h"
#include "opscope/explorer/server.h"
#include "opscope/explorer/summary.h"
#include "opscope/explorer/synthetic.h"
#include "opscope/profiler/store.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace opscope::explorer;
namespace advisor = opscope::advisor;
using opscope::prof::EventKind;

namespace {

ProfilePtr rmsnorm(const char* impl, int64_t rows = 4, int64_t hidden = 4096) {
  return std::make_shared<Profile>(std::string("rmsnorm ") + impl, "synthetic",
                                   synthetic_rmsnorm(impl, rows, hidden, 3, 4));
}

ProfilePtr big(int64_t events) {
  SyntheticSpec s;
  s.events = events;
  s.threads = 2;
  return std::make_shared<Profile>("big", "synthetic", synthetic_trace(s));
}

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("opscope_explorer_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST(ExplorerIndex, LanesAreSortedAndNeverOverlap) {
  auto p = big(20000);
  const auto& tl = p->timeline();
  size_t placed = 0;
  for (const Lane& lane : tl.lanes()) {
    placed += lane.events.size();
    for (size_t i = 1; i < lane.t0.size(); ++i) {
      EXPECT_LE(lane.t0[i - 1], lane.t0[i]) << lane.name;
      EXPECT_LE(lane.t1[i - 1], lane.t0[i]) << lane.name << " overlaps at " << i;
    }
  }
  EXPECT_EQ(placed, p->trace().events.size());
  for (uint32_t e = 0; e < p->trace().events.size(); ++e) ASSERT_GE(tl.lane_of(e), 0);
}

TEST(ExplorerIndex, NestedOpsGoOneLaneDeeper) {
  auto p = big(5000);
  const auto& ev = p->trace().events;
  const auto& tl = p->timeline();
  int checked = 0;
  for (uint32_t e = 0; e < ev.size(); ++e) {
    if (ev[e].name != "matmul") continue;
    int64_t parent = p->correlation().op_by_id(ev[e].parent);
    ASSERT_GE(parent, 0);
    EXPECT_EQ(ev[parent].name, "linear");
    EXPECT_EQ(tl.lanes()[tl.lane_of(e)].depth, tl.lanes()[tl.lane_of(uint32_t(parent))].depth + 1);
    EXPECT_EQ(tl.lanes()[tl.lane_of(e)].layer, Layer::framework);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(ExplorerIndex, LevelOfDetailBoundsDrawablesAndKeepsCounts) {
  auto p = big(200000);
  const auto& tl = p->timeline();
  for (int px : {50, 400, 2000}) {
    for (size_t li = 0; li < tl.lanes().size(); ++li) {
      auto items = tl.query(int(li), tl.begin(), tl.end(), px);
      EXPECT_LE(items.size(), size_t(2 * px + 4)) << tl.lanes()[li].name << " px " << px;
      // Merged blocks account for every event in the window exactly once.
      size_t counted = 0;
      for (const auto& d : items) counted += d.count;
      EXPECT_EQ(counted, tl.lanes()[li].events.size());
    }
  }
  // Zoomed in to a few µs, nothing is merged.
  int64_t mid = (tl.begin() + tl.end()) / 2;
  for (size_t li = 0; li < tl.lanes().size(); ++li)
    for (const auto& d : tl.query(int(li), mid, mid + 5000, 2000)) EXPECT_EQ(d.count, 1u);
}

TEST(ExplorerCorrelation, NaiveRmsNormChainOpToLaunchesToKernels) {
  auto p = rmsnorm("naive");
  const auto& ev = p->trace().events;
  uint32_t range = 0;
  while (ev[range].kind != EventKind::range) ++range;
  Chain c = p->correlation().chain(range);
  ASSERT_EQ(c.launches.size(), 6u);  // pow, mean, add, rsqrt, mul, mul
  EXPECT_EQ(c.kernels.size(), 6u * 4);
  EXPECT_EQ(ev[c.launches[0]].name, "pow_f32");
  EXPECT_EQ(ev[c.launches[5]].name, "mul_f32");
  // From a kernel back up: its launch, the op, the enclosing range.
  Chain up = p->correlation().chain(c.kernels.back());
  ASSERT_EQ(up.launches.size(), 1u);
  EXPECT_EQ(up.launches[0], c.launches[5]);
  ASSERT_EQ(up.ops.size(), 2u);
  EXPECT_EQ(ev[up.ops[0]].kind, EventKind::range);
  EXPECT_EQ(ev[up.ops[1]].name, "mul");
  EXPECT_EQ(up.kernels.size(), 4u);  // its sibling slices on the other cores
}

// The summary's recommendations are the advisor's own findings (one engine): the same
// titles, named fixes and figures as `opscope advise`, with human labels.
TEST(ExplorerSummary, RecommendationsAreTheAdvisorsSuggestions) {
  auto naive = rmsnorm("naive", 4, 4096);
  json s = summarize(*naive);
  advisor::Advice a = advisor::advise(naive->trace());
  ASSERT_FALSE(a.suggestions.empty()) << a.table();
  const json* fuse = nullptr;
  for (const auto& r : s["recommendations"])
    if (r["kind"] == "fuse" && !fuse) fuse = &r;
  ASSERT_NE(fuse, nullptr) << s["recommendations"].dump(2);
  const advisor::Suggestion& top = a.suggestions[0];
  EXPECT_EQ((*fuse)["title"], "Replace the 6-op RMSNorm with one fused kernel");
  EXPECT_EQ((*fuse)["title"], top.title());
  EXPECT_EQ((*fuse)["detail"], top.fix);
  EXPECT_DOUBLE_EQ((*fuse)["impact_ns"].get<double>(), top.predicted_saved_ns);
  auto figures = a.figures(top);
  ASSERT_EQ((*fuse)["evidence"].size(), figures.size());
  for (size_t i = 0; i < figures.size(); ++i) {
    EXPECT_EQ((*fuse)["evidence"][i]["label"], figures[i].first);
    EXPECT_EQ((*fuse)["evidence"][i]["text"], figures[i].second);
    EXPECT_EQ(figures[i].first.find('_'), std::string::npos) << "a raw field name: " << figures[i].first;
  }
  EXPECT_NE((*fuse)["evidence"][2]["text"].get<std::string>().find("6 ops × 3 calls in rmsnorm naive"),
            std::string::npos)
      << (*fuse)["evidence"].dump();
  EXPECT_FALSE((*fuse)["events"].empty());
  EXPECT_EQ(s["cores"].size(), 4u);
  EXPECT_GT(s["device_ns"].get<int64_t>(), 0);
  EXPECT_GT(s["host_ns"].get<int64_t>(), 0);
  // The built-in is one kernel per call: nothing to fuse.
  json b = summarize(*rmsnorm("builtin", 4, 4096));
  for (const auto& r : b["recommendations"]) EXPECT_NE(r["kind"], "fuse");
}

TEST(ExplorerApi, AnswersEveryView) {
  ExplorerApi api({rmsnorm("naive"), rmsnorm("builtin"), rmsnorm("compiled")});
  auto ok = [&](const std::string& path, const Params& params = {}) {
    ApiResponse r = api.get(path, params);
    EXPECT_EQ(r.status, 200) << path << ": " << r.body.dump();
    return r.body;
  };
  json list = ok("/api/profiles");
  ASSERT_EQ(list["profiles"].size(), 3u);
  EXPECT_EQ(list["profiles"][0]["device"]["num_cores"], 4);
  EXPECT_EQ(list["profiles"][0]["totals"]["op"], 18);
  json tracks = ok("/api/profiles/0/tracks");
  EXPECT_GE(tracks["lanes"].size(), 6u);  // thread (2 depths), runtime, 4 cores
  json tl = ok("/api/profiles/0/timeline", {{"px", "800"}});
  EXPECT_FALSE(tl["flows"].empty());
  json ops = ok("/api/profiles/0/ops");
  bool has_pow = false;
  for (const auto& r : ops["rows"]) has_pow |= r["name"] == "pow";
  EXPECT_TRUE(has_pow);
  json found = ok("/api/profiles/0/search", {{"q", "RSQRT"}});
  EXPECT_EQ(found["total"], 3 + 3 + 12);  // op, launch, kernel slices
  json ev = ok("/api/profiles/0/event/" + std::to_string(found["events"][0]["e"].get<int>()));
  EXPECT_FALSE(ev["chain"]["kernels"].empty());
  json cmp = ok("/api/compare", {{"a", "0"}, {"b", "1"}});
  bool pow_only_in_a = false, rms_in_b = false;
  for (const auto& r : cmp["rows"]) {
    if (r["name"] == "pow" && r["kind"] == "op") pow_only_in_a = r["in_a"] && !r["in_b"];
    if (r["name"] == "rms_norm" && r["kind"] == "op") rms_in_b = r["in_b"];
  }
  EXPECT_TRUE(pow_only_in_a);
  EXPECT_TRUE(rms_in_b);
  json range = ok("/api/profiles/0/range", {{"t0", "0"}, {"t1", "100000000"}});
  EXPECT_GT(range["layers"]["device"]["events"].get<int>(), 0);
  // The compiled kernel carries its artifact.
  json cf = ok("/api/profiles/2/search", {{"q", "fused_"}});
  json kernel = ok("/api/profiles/2/event/" + std::to_string(cf["events"][0]["e"].get<int>()));
  ASSERT_TRUE(kernel["artifact"].is_object());
  EXPECT_NE(kernel["artifact"]["source"].get<std::string>().find("sqrtf"), std::string::npos);
}

TEST(ExplorerApi, ImportedTorchTraceShowsGpuStreamsAsDeviceLanes) {
  // A torch.profiler trace opened directly: its GPU streams are device lanes, and a
  // kernel's chain leads back to its launch and op.
  json ev = json::array();
  auto x = [&](const char* cat, const char* name, int pid, int tid, double ts, double dur, json args) {
    ev.push_back({{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", pid}, {"tid", tid}, {"ts", ts}, {"dur", dur},
                  {"args", args}});
  };
  x("cpu_op", "aten::add", 1, 1, 0, 20, {{"External id", 1}});
  x("cuda_runtime", "cudaLaunchKernel", 1, 1, 2, 5, {{"correlation", 9}, {"External id", 1}});
  x("kernel", "add_kernel", 0, 7, 10, 4, {{"correlation", 9}});
  x("cpu_op", "aten::mul", 1, 1, 30, 20, {{"External id", 2}});
  x("cuda_runtime", "cudaLaunchKernel", 1, 1, 32, 5, {{"correlation", 10}, {"External id", 2}});
  x("kernel", "mul_kernel", 0, 13, 40, 4, {{"correlation", 10}});
  x("cuda_runtime", "cudaMemcpyAsync", 1, 1, 60, 3, {{"correlation", 11}});
  x("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 0, 7, 64, 1,
    {{"correlation", 11}, {"bytes", 1048576}, {"memory bandwidth (GB/s)", 743.672}});
  fs::path dir = temp_dir("imported");
  std::string path = (dir / "run.pt.trace.json").string();
  std::ofstream(path) << json{{"traceEvents", ev}, {"baseTimeNanoseconds", 1}}.dump();
  ProfilePtr p = open_profile(path);
  ASSERT_TRUE(p->error().empty()) << p->error();
  ExplorerApi api({p});
  ApiResponse r = api.get("/api/profiles/0/tracks", {});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  std::vector<std::string> device_lanes;
  for (const auto& l : r.body["lanes"])
    if (l["layer"] == "device") device_lanes.push_back(l["name"]);
  EXPECT_EQ(device_lanes, (std::vector<std::string>{"cuda:0 stream 7", "cuda:0 stream 13"}));
  const auto& evs = p->trace().events;
  uint32_t kernel = 0;
  while (evs[kernel].name != "mul_kernel") ++kernel;
  Chain up = p->correlation().chain(kernel);
  ASSERT_EQ(up.launches.size(), 1u);
  EXPECT_EQ(evs[up.launches[0]].name, "cudaLaunchKernel");
  ASSERT_EQ(up.ops.size(), 1u);
  EXPECT_EQ(evs[up.ops[0]].name, "aten::mul");
  // Every view answers for an imported profile.
  for (const char* view : {"summary", "timeline", "range", "memory", "ops", "search"}) {
    Params q = std::string(view) == "search" ? Params{{"q", "kernel"}} : Params{};
    ApiResponse v = api.get(std::string("/api/profiles/0/") + view, q);
    EXPECT_EQ(v.status, 200) << view << ": " << v.body.dump();
  }
  EXPECT_EQ(api.get("/api/profiles/0/search", {{"q", "kernel"}}).body["total"], 4);  // 2 launches, 2 kernels
  // A memcpy's detail: the trace's bandwidth beside bytes / dur (its 1 µs is rounded).
  uint32_t copy = 0;
  while (evs[copy].name != "Memcpy HtoD (Pinned -> Device)") ++copy;
  ApiResponse d = api.get("/api/profiles/0/event/" + std::to_string(copy), {});
  ASSERT_EQ(d.status, 200) << d.body.dump();
  EXPECT_DOUBLE_EQ(d.body["args"]["trace_gbps"].get<double>(), 743.672);
  EXPECT_DOUBLE_EQ(d.body["args"]["gbps"].get<double>(), 1048.576);
  fs::remove_all(dir);
}

TEST(ExplorerApi, MalformedQueriesAre400WithAMessage) {
  ExplorerApi api({rmsnorm("naive")});
  struct Case { std::string path; Params params; };
  const Case cases[] = {
      {"/api/profiles/0/timeline", {{"t0", "abc"}}},
      {"/api/profiles/0/timeline", {{"t0", "10"}, {"t1", "5"}}},
      {"/api/profiles/0/timeline", {{"px", "0"}}},
      {"/api/profiles/0/timeline", {{"px", "999999"}}},
      {"/api/profiles/0/timeline", {{"t1", "1e9"}}},
      {"/api/profiles/0/timeline", {{"lanes", "0,x"}}},
      {"/api/profiles/0/search", {}},
      {"/api/profiles/0/search", {{"q", std::string(500, 'a')}}},
      {"/api/profiles/x/summary", {}},
      {"/api/profiles/-1/summary", {}},
      {"/api/compare", {{"a", "0"}}},
  };
  for (const auto& c : cases) {
    ApiResponse r = api.get(c.path, c.params);
    EXPECT_EQ(r.status, 400) << c.path << " " << (c.params.empty() ? "" : c.params.begin()->second);
    EXPECT_TRUE(r.body["error"].is_string());
    EXPECT_FALSE(r.body["error"].get<std::string>().empty());
  }
  EXPECT_EQ(api.get("/api/profiles/7/summary", {}).status, 404);
  EXPECT_EQ(api.get("/api/profiles/0/event/99999999", {}).status, 404);
  EXPECT_EQ(api.get("/api/nothing", {}).status, 404);
}

TEST(ExplorerProfile, StoreRoundTripAndCorruptProfileError) {
  fs::path dir = temp_dir("store");
  auto trace = synthetic_rmsnorm("naive", 4, 1024, 2, 4);
  opscope::prof::export_profile(trace, (dir / "naive").string());
  ProfilePtr good = open_profile((dir / "naive").string());
  ASSERT_TRUE(good->ok()) << good->error();
  EXPECT_EQ(good->label(), "naive");
  EXPECT_EQ(good->trace().events.size(), trace.events.size());

  fs::create_directories(dir / "corrupt");
  std::ofstream(dir / "corrupt" / opscope::prof::kProfileDbFile) << "this is not a database";
  ProfilePtr bad = open_profile((dir / "corrupt").string());
  EXPECT_FALSE(bad->ok());
  EXPECT_NE(bad->error().find("corrupt"), std::string::npos) << bad->error();
  ProfilePtr missing = open_profile((dir / "missing").string());
  EXPECT_FALSE(missing->ok());

  ExplorerApi api({good, bad});
  json list = api.get("/api/profiles", {}).body;
  EXPECT_TRUE(list["profiles"][0]["ok"]);
  EXPECT_FALSE(list["profiles"][1]["ok"]);
  EXPECT_FALSE(list["profiles"][1]["error"].get<std::string>().empty());
  EXPECT_EQ(api.get("/api/profiles/1/timeline", {}).status, 409);
  EXPECT_EQ(api.get("/api/profiles/0/timeline", {}).status, 200);
  fs::remove_all(dir);
}

namespace {

// A server on a free loopback port, serving in a thread for the test's duration.
struct RunningServer {
  explicit RunningServer(std::vector<ProfilePtr> profiles, ExploreOptions opts = {}) {
    opts.port = 0;
    server = std::make_unique<ExplorerServer>(std::move(profiles), opts);
    port = server->bind();
    thread = std::thread([this] { server->run(); });
  }
  ~RunningServer() {
    server->stop();
    thread.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(5);
    c.set_read_timeout(10);
    return c;
  }
  std::unique_ptr<ExplorerServer> server;
  int port = 0;
  std::thread thread;
};

}  // namespace

TEST(ExplorerServer, ServesApiWithLevelOfDetailOverHttp) {
  RunningServer rs({big(100000)});
  auto c = rs.client();
  auto res = c.Get("/api/profiles/0/timeline?px=300");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  json tl = json::parse(res->body);
  ASSERT_FALSE(tl["lanes"].empty());
  for (const auto& lane : tl["lanes"]) EXPECT_LE(lane["e"].size(), 2u * 300 + 4);

  res = c.Get("/api/profiles/0/timeline?t0=zzz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(json::parse(res->body)["error"].get<std::string>().find("t0"), std::string::npos);

  res = c.Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("<html"), std::string::npos);
}

// Answers are gzipped by the server itself, quickly, whatever else the client accepts:
// httplib would pick Brotli at its slowest setting for any browser (0.9 s for this answer).
TEST(ExplorerServer, CompressesWithGzipWhenAcceptedNeverBrotli) {
  RunningServer rs({big(100000)});
  auto c = rs.client();
  c.set_decompress(false);  // look at the bytes as sent
  auto plain = c.Get("/api/profiles/0/timeline?px=2000", {{"Accept-Encoding", "identity"}});
  ASSERT_TRUE(plain);
  ASSERT_EQ(plain->status, 200);
  EXPECT_FALSE(plain->has_header("Content-Encoding"));
  ASSERT_GT(plain->body.size(), 1024u);
  json expected = json::parse(plain->body);
  for (const char* accept : {"gzip, deflate, br, zstd", "br;q=1.0, gzip;q=0.5", "gzip"}) {
    auto res = c.Get("/api/profiles/0/timeline?px=2000", {{"Accept-Encoding", accept}});
    ASSERT_TRUE(res) << accept;
    EXPECT_EQ(res->get_header_value("Content-Encoding"), "gzip") << accept;
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
    EXPECT_LT(res->body.size(), plain->body.size() / 2) << accept;
    std::string unpacked;
    httplib::detail::gzip_decompressor d;
    ASSERT_TRUE(d.decompress(res->body.data(), res->body.size(), [&](const char* p, size_t n) {
      unpacked.append(p, n);
      return true;
    }));
    EXPECT_EQ(json::parse(unpacked), expected) << accept;
  }
  for (const char* accept : {"br", "gzip;q=0, br"}) {  // no gzip: sent as it is
    auto res = c.Get("/api/profiles/0/timeline?px=2000", {{"Accept-Encoding", accept}});
    ASSERT_TRUE(res) << accept;
    EXPECT_FALSE(res->has_header("Content-Encoding")) << accept;
    EXPECT_EQ(json::parse(res->body), expected) << accept;
  }
}

TEST(ExplorerServer, RejectsTraversalOtherMethodsAndForeignHosts) {
  RunningServer rs({rmsnorm("naive")});
  auto c = rs.client();
  for (const char* path : {"/../../../../etc/passwd", "/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
                           "/assets/..%2f..%2f..%2fetc%2fpasswd", "/api/profiles/..%2f..%2fetc%2fpasswd",
                           "/api/profiles/0/event/..%2f..%2fetc", "//etc/passwd", "/index.html/../../etc/passwd"}) {
    auto res = c.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_TRUE(res->status == 404 || res->status == 400) << path << " → " << res->status;
    EXPECT_EQ(res->body.find("root:"), std::string::npos) << path;
  }
  auto post = c.Post("/api/profiles", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  auto foreign = c.Get("/api/profiles", {{"Host", "attacker.example:8642"}});
  ASSERT_TRUE(foreign);
  EXPECT_EQ(foreign->status, 403);
  auto long_target = c.Get(("/api/profiles/0/search?q=" + std::string(5000, 'a')).c_str());
  ASSERT_TRUE(long_target);
  EXPECT_GE(long_target->status, 400);
}

TEST(ExplorerServer, RateLimitsAClient) {
  ExploreOptions opts;
  opts.requests_per_second = 0.5;
  opts.burst = 3;
  RunningServer rs({rmsnorm("builtin")}, opts);
  auto c = rs.client();
  int ok = 0, limited = 0;
  for (int i = 0; i < 6; ++i) {
    auto res = c.Get("/api/profiles");
    ASSERT_TRUE(res);
    (res->status == 429 ? limited : ok) += 1;
  }
  EXPECT_EQ(ok, 3);
  EXPECT_EQ(limited, 3);
}

TEST(ExplorerServer, ListsACorruptProfileAndServesTheOthers) {
  fs::path dir = temp_dir("server_corrupt");
  fs::create_directories(dir / "broken");
  std::ofstream(dir / "broken" / opscope::prof::kProfileDbFile) << std::string(4096, '\x7f');
  RunningServer rs({open_profile((dir / "broken").string()), rmsnorm("naive")});
  auto c = rs.client();
  auto res = c.Get("/api/profiles");
  ASSERT_TRUE(res);
  json list = json::parse(res->body)["profiles"];
  ASSERT_EQ(list.size(), 2u);
  EXPECT_FALSE(list[0]["ok"]);
  EXPECT_NE(list[0]["error"].get<std::string>().find("broken"), std::string::npos);
  auto failed = c.Get("/api/profiles/0/summary");
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, 409);
  auto good = c.Get("/api/profiles/1/summary");
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200);
  fs::remove_all(dir);
}
