// diff_profiles on hand-built traces: matching rows by kind and name (and input shapes),
// added/removed/changed/same, exact deltas of calls, times and bytes, the totals, the
// warnings for profiles not like for like, sorting and filtering, the table, JSON, and
// the explorer's compare view giving the same numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "opscope/analysis/diff.h"
#include "opscope/analysis/key_averages.h"
#include "opscope/core/error.h"
#include "opscope/explorer/api.h"
#include "opscope/explorer/synthetic.h"
#include "opscope/profiler/config.h"

using namespace opscope;
using namespace opscope::prof;
using namespace opscope::analysis;
using nlohmann::json;

namespace {

// One op call: its CPU time, and one launch of `kernel` on the device.
struct Call {
  std::string op;
  std::string kernel;
  int64_t cpu_ns = 100;
  int64_t dev_ns = 100;
  int64_t bytes = 0;
  std::string shapes{};  // {}: the tests' brace lists may leave it out
};

// A range "step" per entry of `steps`, holding its calls one after another on the main
// thread; each launch runs on core 0 after the host is done, each kernel one slice.
Trace steps_trace(const std::vector<std::vector<Call>>& steps, bool record_shapes = false) {
  Trace t;
  ProfilerConfig cfg;
  cfg.record_shapes = record_shapes;
  t.config_json = cfg.to_json();
  t.devices.push_back({0, "cpu:0", "CPU device cpu:0 with 2 cores (worker threads, pinned to CPUs 0,1), 2 hardware threads", 2});
  t.tracks.push_back({Track::Kind::host_thread, "main thread", 1, -1, -1});
  t.tracks.push_back({Track::Kind::device_core, "cpu:0 core 0", 0, 0, 0});
  t.dropped_per_track = {0, 0};
  uint64_t id = 1, launch = 1000;
  int64_t now = 0, dev = 1'000'000;
  std::vector<TraceEvent> device;
  for (const auto& step : steps) {
    TraceEvent r;
    r.kind = EventKind::range, r.name = "step", r.id = id++, r.t0 = now;
    size_t at = t.events.size();
    t.events.push_back(r);
    for (const Call& c : step) {
      TraceEvent op;
      op.kind = EventKind::op, op.name = c.op, op.id = id++, op.parent = r.id, op.t0 = now, op.t1 = now + c.cpu_ns;
      op.shapes = c.shapes;
      TraceEvent l;
      l.kind = EventKind::launch, l.name = c.kernel, l.id = launch++, l.parent = op.id, l.t0 = now + 1, l.t1 = now + 2;
      l.bytes = c.bytes, l.flops = c.bytes / 2, l.device = 0, l.stream = 0;
      TraceEvent k = l;
      k.kind = EventKind::kernel, k.t0 = dev, k.t1 = dev + c.dev_ns, k.track = 1, k.stream = -1;
      t.events.push_back(op);
      t.events.push_back(l);
      device.push_back(k);
      now += c.cpu_ns;
      dev += c.dev_ns;
    }
    t.events[at].t1 = now;
    now += 10;
  }
  t.events.insert(t.events.end(), device.begin(), device.end());
  return t;
}

// A: step { mul, mul, pow }; B: step { mul, mul, mul, rms_norm }.
Trace trace_a() {
  return steps_trace({{{"mul", "mul_f32", 100, 100, 100}, {"mul", "mul_f32", 100, 100, 100},
                       {"pow", "pow_f32", 50, 300, 50}}});
}
Trace trace_b() {
  return steps_trace({{{"mul", "mul_f32", 80, 50, 200}, {"mul", "mul_f32", 80, 50, 200},
                       {"mul", "mul_f32", 80, 50, 200}, {"rms_norm", "rms_norm_f32", 40, 100, 80}}});
}

const DiffRow& find(const ProfileDiff& d, const std::string& name, EventKind kind) {
  for (const DiffRow& r : d.rows())
    if (r.name == name && r.kind == kind) return r;
  static DiffRow none;
  ADD_FAILURE() << "no row " << name;
  return none;
}

std::vector<std::string> names(const std::vector<DiffRow>& rows) {
  std::vector<std::string> n;
  for (const DiffRow& r : rows) n.push_back(r.name);
  return n;
}

bool has_warning(const ProfileDiff& d, const std::string& part) {
  for (const std::string& w : d.warnings())
    if (w.find(part) != std::string::npos) return true;
  return false;
}

TEST(Diff, IdenticalTracesAreAllSameWithZeroDeltas) {
  Trace a = trace_a();
  ProfileDiff d = diff_profiles(a, a);
  ASSERT_EQ(d.rows().size(), key_averages(a).rows().size());
  for (const DiffRow& r : d.rows()) {
    EXPECT_EQ(r.status, DiffStatus::same) << r.name;
    EXPECT_EQ(r.delta(), DiffSide{}) << r.name;
    EXPECT_TRUE(r.in_a() && r.in_b());
  }
  EXPECT_TRUE(d.warnings().empty()) << d.warnings().front();
  EXPECT_EQ(d.a().self_device_ns, d.b().self_device_ns);
  EXPECT_EQ(d.a().span_ns, d.b().span_ns);
  std::string table = d.table();
  EXPECT_EQ(table.find("Added in B"), std::string::npos);
  EXPECT_EQ(table.find("Removed from A"), std::string::npos);
}

TEST(Diff, RowsOnlyInBAreAddedOnlyInARemoved) {
  ProfileDiff d = diff_profiles(trace_a(), trace_b());
  EXPECT_EQ(find(d, "rms_norm", EventKind::op).status, DiffStatus::added);
  EXPECT_EQ(find(d, "rms_norm_f32", EventKind::kernel).status, DiffStatus::added);
  EXPECT_EQ(find(d, "pow", EventKind::op).status, DiffStatus::removed);
  EXPECT_EQ(find(d, "pow_f32", EventKind::kernel).status, DiffStatus::removed);
  EXPECT_EQ(find(d, "mul", EventKind::op).status, DiffStatus::changed);
  EXPECT_EQ(find(d, "step", EventKind::range).status, DiffStatus::changed);
  const DiffRow& added = find(d, "rms_norm", EventKind::op);
  EXPECT_FALSE(added.in_a());
  EXPECT_EQ(added.a, DiffSide{});
  EXPECT_EQ(added.b.count, 1);
  EXPECT_EQ(added.b.self_device_ns, 100);
  const DiffRow& removed = find(d, "pow", EventKind::op);
  EXPECT_FALSE(removed.in_b());
  EXPECT_EQ(removed.delta().self_device_ns, -300);
  // A's rows in their order, then B's new ones.
  std::vector<std::string> order = names(d.rows());
  EXPECT_LT(std::find(order.begin(), order.end(), "pow") - order.begin(),
            std::find(order.begin(), order.end(), "rms_norm") - order.begin());
}

TEST(Diff, CountsTimesAndBytesDeltasAreExact) {
  ProfileDiff d = diff_profiles(trace_a(), trace_b());
  const DiffRow& mul = find(d, "mul", EventKind::op);
  EXPECT_EQ(mul.a.count, 2);
  EXPECT_EQ(mul.b.count, 3);
  EXPECT_EQ(mul.delta().count, 1);
  EXPECT_EQ(mul.a.self_cpu_ns, 200);
  EXPECT_EQ(mul.b.self_cpu_ns, 240);
  EXPECT_EQ(mul.delta().self_cpu_ns, 40);
  EXPECT_EQ(mul.a.self_device_ns, 200);
  EXPECT_EQ(mul.b.self_device_ns, 150);
  EXPECT_EQ(mul.delta().self_device_ns, -50);
  EXPECT_EQ(mul.a.bytes, 200);
  EXPECT_EQ(mul.b.bytes, 600);
  EXPECT_EQ(mul.delta().bytes, 400);
  EXPECT_EQ(mul.delta().flops, 200);
  const DiffRow& kernel = find(d, "mul_f32", EventKind::kernel);
  EXPECT_EQ(kernel.delta().count, 1);  // launches
  EXPECT_EQ(kernel.delta().device_total_ns, -50);
  const DiffRow& step = find(d, "step", EventKind::range);
  EXPECT_EQ(step.a.device_total_ns, 500);
  EXPECT_EQ(step.b.device_total_ns, 250);
  EXPECT_EQ(step.b.bytes, 680);
  // Totals: key_averages' totals and the traces' spans.
  EXPECT_EQ(d.a().self_device_ns, 500);
  EXPECT_EQ(d.b().self_device_ns, 250);
  EXPECT_EQ(d.a().launches, 3);
  EXPECT_EQ(d.b().launches, 4);
  EXPECT_EQ(d.a().bytes, 250);
  EXPECT_EQ(d.b().bytes, 680);
  EXPECT_EQ(d.a().steps, 1);
  EXPECT_EQ(d.a().span_ns, 1'000'500);  // host from 0, device to 1 000 500
}

TEST(Diff, FiguresAreKeyAveragesOwn) {
  Trace a = trace_a(), b = trace_b();
  ProfileDiff d = diff_profiles(a, b);
  KeyAverages kb = key_averages(b);
  for (const KeyAverage& k : kb.rows()) {
    const DiffRow& r = find(d, k.name, k.kind);
    EXPECT_EQ(r.b.count, k.count);
    EXPECT_EQ(r.b.self_cpu_ns, k.self_cpu_ns);
    EXPECT_EQ(r.b.cpu_total_ns, k.cpu_total_ns);
    EXPECT_EQ(r.b.self_device_ns, k.self_device_ns);
    EXPECT_EQ(r.b.device_total_ns, k.device_total_ns);
    EXPECT_EQ(r.b.bytes, k.bytes);
    EXPECT_EQ(r.b.flops, k.flops);
  }
  EXPECT_EQ(d.b().self_cpu_ns, kb.self_cpu_time_total_ns());
}

TEST(Diff, GroupByShapeMatchesOpsByShapeToo) {
  Trace a = steps_trace({{{"mul", "mul_f32", 100, 100, 100, "[(4, 8) f32]"}}}, true);
  Trace b = steps_trace({{{"mul", "mul_f32", 100, 100, 100, "[(2, 2) f32]"}}}, true);
  ProfileDiff plain = diff_profiles(a, b);
  EXPECT_EQ(find(plain, "mul", EventKind::op).status, DiffStatus::same);
  DiffOptions o;
  o.group_by_input_shape = true;
  ProfileDiff grouped = diff_profiles(a, b, o);
  int added = 0, removed = 0;
  for (const DiffRow& r : grouped.rows()) {
    if (r.name != "mul") continue;
    if (r.status == DiffStatus::added) {
      ++added;
      EXPECT_EQ(r.input_shapes, "[(2, 2) f32]");
    }
    if (r.status == DiffStatus::removed) {
      ++removed;
      EXPECT_EQ(r.input_shapes, "[(4, 8) f32]");
    }
  }
  EXPECT_EQ(added, 1);
  EXPECT_EQ(removed, 1);
  EXPECT_TRUE(grouped.warnings().empty());
  EXPECT_NE(grouped.table(DiffView{}).find("mul [(2, 2) f32]"), std::string::npos);
  // Without record_shapes there is nothing to match by: said.
  ProfileDiff blind = diff_profiles(trace_a(), trace_b(), o);
  EXPECT_TRUE(has_warning(blind, "A was recorded without record_shapes")) << blind.table();
}

TEST(Diff, WarnsWhereProfilesAreNotLikeForLike) {
  Trace a = trace_a(), b = trace_b();
  EXPECT_TRUE(diff_profiles(a, b).warnings().empty());

  // Another core-to-CPU pinning on the same machine is not another device.
  Trace repinned = b;
  repinned.devices[0].description = "CPU device cpu:0 with 2 cores (worker threads, pinned to CPUs 1,0), 2 hardware threads";
  EXPECT_TRUE(diff_profiles(a, repinned).warnings().empty());

  Trace other = b;
  other.devices[0].description = "CPU device cpu:0 with 2 cores (worker threads), 64 hardware threads";
  ProfileDiff d = diff_profiles(a, other);
  ASSERT_EQ(d.warnings().size(), 1u);
  EXPECT_NE(d.warnings()[0].find("devices differ"), std::string::npos);
  EXPECT_NE(d.warnings()[0].find("64 hardware threads"), std::string::npos);
  EXPECT_NE(d.table().find("Warning: devices differ"), std::string::npos);

  Trace cores = b;
  cores.devices[0].num_cores = 8;
  EXPECT_TRUE(has_warning(diff_profiles(a, cores), "core counts differ"));

  Trace older = b;
  older.schema_version = 0;
  EXPECT_TRUE(has_warning(diff_profiles(a, older), "schema versions differ: A has 1, B has 0"));

  Trace dropped = b;
  dropped.dropped = 7;
  DiffOptions named;
  named.a_label = "runs/naive";
  named.b_label = "runs/fast";
  EXPECT_TRUE(has_warning(diff_profiles(a, dropped, named), "runs/fast dropped 7 events"));

  Trace layers = b;
  ProfilerConfig cfg;
  cfg.layers = kFramework;
  layers.config_json = cfg.to_json();
  EXPECT_TRUE(has_warning(diff_profiles(a, layers), "recorded layers differ"));

  Trace two_steps = steps_trace({{{"mul", "mul_f32"}}, {{"mul", "mul_f32"}}});
  EXPECT_TRUE(has_warning(diff_profiles(a, two_steps), "A has 1 steps (top-level ranges), B has 2"));
}

TEST(Diff, ANewerSchemaIsAnErrorNamingTheSide) {
  Trace newer = trace_b();
  newer.schema_version = kSchemaVersion + 1;
  DiffOptions o;
  o.b_label = "out/b";
  try {
    diff_profiles(trace_a(), newer, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[diff] out/b: schema version 2 is newer than this opscope reads (1)", 0), 0u)
        << e.what();
  }
}

TEST(Diff, SortsByTheLargestChange) {
  ProfileDiff d = diff_profiles(trace_a(), trace_b());
  DiffView v;
  v.kinds = kind_bit(EventKind::op);
  // |Δ self device|: pow 300, rms_norm 100, mul 50.
  EXPECT_EQ(names(d.select(v)), (std::vector<std::string>{"pow", "rms_norm", "mul"}));
  v.sort_by = "count";  // mul +1, pow −1, rms_norm +1: ties keep the larger count first
  EXPECT_EQ(names(d.select(v)), (std::vector<std::string>{"mul", "pow", "rms_norm"}));
  v.sort_by = "bytes";  // mul +400, rms_norm +80, pow −50
  EXPECT_EQ(names(d.select(v)), (std::vector<std::string>{"mul", "rms_norm", "pow"}));
  v.sort_by = "self_cpu_time_total";  // pow −50, mul +40, rms_norm +40 (ties: larger first)
  EXPECT_EQ(names(d.select(v)), (std::vector<std::string>{"pow", "mul", "rms_norm"}));
  v.sort_by = "name";
  EXPECT_EQ(names(d.select(v)), (std::vector<std::string>{"mul", "pow", "rms_norm"}));
  v.sort_by = "";
  EXPECT_EQ(names(d.select(v)), (std::vector<std::string>{"mul", "pow", "rms_norm"}));
}

TEST(Diff, UnknownSortKeyNamesTheKeyAndTheChoices) {
  ProfileDiff d = diff_profiles(trace_a(), trace_b());
  DiffView v;
  v.sort_by = "bogus";
  try {
    d.select(v);
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("[sort_by] unknown key 'bogus'", 0), 0u) << m;
    EXPECT_NE(m.find("self_device_time_total"), std::string::npos) << m;
    EXPECT_NE(m.find("bytes"), std::string::npos) << m;
  }
  EXPECT_THROW(d.table(v), Error);
  EXPECT_THROW(d.to_json(v), Error);
}

TEST(Diff, KindsAndMinDeltaFilterRows) {
  ProfileDiff d = diff_profiles(trace_a(), trace_b());
  DiffView v;
  v.kinds = parse_diff_kinds("kernel");
  for (const DiffRow& r : d.select(v)) EXPECT_EQ(r.kind, EventKind::kernel) << r.name;
  EXPECT_EQ(d.select(v).size(), 3u);
  EXPECT_EQ(parse_diff_kinds("op,range"), kind_bit(EventKind::op) | kind_bit(EventKind::range));
  EXPECT_EQ(parse_diff_kinds("all"), kAllDiffKinds);
  try {
    parse_diff_kinds("ops", "--kind");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[--kind] unknown kind 'ops' (expected op, range, kernel or all)");
  }
  // mul changes by 50 ns of self device and 40 of CPU: under 60 ns it is hidden, the
  // added and removed rows stay.
  v.kinds = kind_bit(EventKind::op);
  v.min_delta_ns = 60;
  EXPECT_EQ(names(d.select(v)), (std::vector<std::string>{"pow", "rms_norm"}));
  EXPECT_EQ(d.hidden(v), 1);
  EXPECT_NE(d.table(v).find("(1 rows with time changes under 0.060us hidden)"), std::string::npos) << d.table(v);
  v.min_delta_ns = 50;
  EXPECT_EQ(d.select(v).size(), 3u);
}

TEST(Diff, TableHasBothSidesSectionsAndTotals) {
  ProfileDiff d = diff_profiles(trace_a(), trace_b());
  std::string t = d.table();
  EXPECT_EQ(t.rfind("A: A\nB: B\n", 0), 0u) << t;
  EXPECT_NE(t.find("Added in B (2):"), std::string::npos) << t;
  EXPECT_NE(t.find("Removed from A (2):"), std::string::npos) << t;
  EXPECT_NE(t.find("Totals:"), std::string::npos);
  EXPECT_NE(t.find("Self Device time total"), std::string::npos);
  EXPECT_NE(t.find("B / A Self Device time per step: 0.50x (B 2.00x faster)"), std::string::npos) << t;
  // The mul row: calls 2 → 3, self device 0.200us → 0.150us, −0.050us (−25.0%).
  std::istringstream lines(t);
  std::string line, mul;
  while (std::getline(lines, line))
    if (line.rfind("mul ", 0) == 0) mul = line;
  EXPECT_NE(mul.find("-0.050us"), std::string::npos) << mul;
  EXPECT_NE(mul.find("-25.0%"), std::string::npos) << mul;
  EXPECT_NE(mul.find("200 B"), std::string::npos) << mul;
  EXPECT_NE(mul.find("600 B"), std::string::npos) << mul;
  // Every line of the main table is as wide as its rule ("Δ" is one column).
  std::istringstream again(t);
  std::vector<size_t> widths;
  auto columns = [](const std::string& s) {
    size_t n = 0;
    for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
  };
  bool in_table = false;
  size_t rule = 0;
  while (std::getline(again, line)) {
    if (line.rfind("----", 0) == 0 && !in_table) in_table = true, rule = columns(line);
    else if (in_table && line.empty()) break;
    else if (in_table && line.find("Δ Self Device") != std::string::npos) {
      EXPECT_EQ(columns(line), rule) << line;
    }
  }
  EXPECT_GT(rule, 0u);
  // Row limit: one row per section, the rest counted.
  DiffView one;
  one.row_limit = 1;
  EXPECT_NE(d.table(one).find("(1 more rows; --row-limit 0 shows all)"), std::string::npos) << d.table(one);
}

TEST(Diff, JsonRoundTripsEveryRowAndTotal) {
  Trace a = trace_a(), b = trace_b();
  b.events[1].name = "naïve \"mul\"\n";  // a name with quotes, a newline and UTF-8
  b.dropped = 3;
  ProfileDiff d = diff_profiles(a, b);
  json j = json::parse(d.to_json());
  ASSERT_EQ(j["rows"].size(), d.rows().size());
  for (const json& r : j["rows"]) {
    bool found = false;
    for (const DiffRow& x : d.rows()) {
      if (x.name != r["name"].get<std::string>() || kind_name(x.kind) != r["kind"].get<std::string>()) continue;
      found = true;
      EXPECT_EQ(r["status"], status_name(x.status));
      for (auto [side, s] : {std::pair{"a", &x.a}, std::pair{"b", &x.b}}) {
        EXPECT_EQ(r[side]["count"], s->count);
        EXPECT_EQ(r[side]["self_cpu_ns"], s->self_cpu_ns);
        EXPECT_EQ(r[side]["cpu_total_ns"], s->cpu_total_ns);
        EXPECT_EQ(r[side]["self_device_ns"], s->self_device_ns);
        EXPECT_EQ(r[side]["device_total_ns"], s->device_total_ns);
        EXPECT_EQ(r[side]["bytes"], s->bytes);
        EXPECT_EQ(r[side]["flops"], s->flops);
      }
      EXPECT_EQ(r["delta"]["bytes"], x.delta().bytes);
      EXPECT_EQ(r["delta"]["self_device_ns"], x.delta().self_device_ns);
    }
    EXPECT_TRUE(found) << r.dump();
  }
  bool weird = false;
  for (const json& r : j["rows"]) weird |= r["name"] == "naïve \"mul\"\n";
  EXPECT_TRUE(weird);
  EXPECT_EQ(j["a"]["self_device_total_ns"], d.a().self_device_ns);
  EXPECT_EQ(j["b"]["bytes"], d.b().bytes);
  EXPECT_EQ(j["b"]["dropped"], 3);
  EXPECT_EQ(j["delta"]["self_device_total_ns"], d.b().self_device_ns - d.a().self_device_ns);
  EXPECT_EQ(j["a"]["devices"][0]["num_cores"], 2);
  EXPECT_EQ(j["warnings"].size(), d.warnings().size());
  EXPECT_EQ(j["counts"]["added"], 3);  // the renamed op, rms_norm, rms_norm_f32
  EXPECT_EQ(j["counts"]["removed"], 2);
  EXPECT_EQ(j["sort_by"], "self_device_time_total");
}

TEST(Diff, ExplorerCompareViewShowsTheDiffsNumbers) {
  using namespace opscope::explorer;
  Trace ta = synthetic_rmsnorm("naive", 4, 4096, 3, 4), tb = synthetic_rmsnorm("builtin", 4, 4096, 3, 4);
  ExplorerApi api({std::make_shared<Profile>("naive", "synthetic", ta),
                   std::make_shared<Profile>("builtin", "synthetic", tb)});
  ApiResponse r = api.get("/api/compare", {{"a", "0"}, {"b", "1"}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  DiffOptions o;
  o.a_label = "naive";
  o.b_label = "builtin";
  ProfileDiff d = diff_profiles(ta, tb, o);
  ASSERT_EQ(r.body["rows"].size(), d.rows().size());
  int added = 0, removed = 0;
  for (const json& row : r.body["rows"]) {
    const DiffRow& x = find(d, row["name"].get<std::string>(), row["kind"] == "op"       ? EventKind::op
                                                                : row["kind"] == "range" ? EventKind::range
                                                                                         : EventKind::kernel);
    EXPECT_EQ(row["status"], status_name(x.status));
    EXPECT_EQ(row["in_a"], x.in_a());
    EXPECT_EQ(row["a_calls"], x.a.count);
    EXPECT_EQ(row["b_self_device_ns"], x.b.self_device_ns);
    EXPECT_EQ(row["a_bytes"], x.a.bytes);
    EXPECT_EQ(row["b_bytes"], x.b.bytes);
    EXPECT_EQ(row["delta_device_total_ns"], x.delta().device_total_ns);
    added += row["status"] == "added";
    removed += row["status"] == "removed";
  }
  EXPECT_GT(added, 0);
  EXPECT_GT(removed, 0);
  EXPECT_EQ(r.body["counts"]["added"], added);
  EXPECT_EQ(r.body["a"]["self_device_total_ns"], d.a().self_device_ns);
  EXPECT_EQ(r.body["b"]["bytes"], d.b().bytes);
  EXPECT_EQ(r.body["delta"]["bytes"], d.b().bytes - d.a().bytes);
  EXPECT_EQ(r.body["delta"]["self_device_total_ns"], d.b().self_device_ns - d.a().self_device_ns);
  EXPECT_TRUE(r.body["warnings"].is_array());
  EXPECT_EQ(r.body["warnings"].size(), d.warnings().size());
}

}  // namespace
