#include "opscope/profiler/config.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "opscope/core/error.h"

namespace opscope::prof {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parse_int(std::string_view s, int64_t& out) {
  s = trim(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Splits on ',' and trims each piece.
std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t comma = s.find(',', start);
    out.push_back(trim(s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

bool parse_bool(std::string_view s, bool& out) {
  std::string v(trim(s));
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (v == "1" || v == "true" || v == "yes" || v == "on") return out = true, true;
  if (v == "0" || v == "false" || v == "no" || v == "off" || v.empty()) return out = false, true;
  return false;
}

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

bool env_bool(const char* name, bool dflt) {
  const char* v = env(name);
  if (!v) return dflt;
  bool b;
  if (!parse_bool(v, b)) fail(name, "'{}' is not a boolean (expected 1/0, true/false, yes/no, on/off)", v);
  return b;
}

}  // namespace

// ---- cores ----

CoreSet CoreSet::parse(std::string_view spec, std::string_view what) {
  auto bad = [&](std::string_view why) {
    fail(what, "'{}' is not a core list ({}; expected e.g. \"0,1\", \"0-3\" or \"all\")", spec, why);
  };
  CoreSet set;
  std::string_view s = trim(spec);
  if (s == "all" || s == "*") return set;
  if (s.empty()) bad("it is empty");
  set.all_ = false;
  for (std::string_view part : split(s)) {
    if (part.empty()) bad("an empty item");
    size_t dash = part.find('-');
    int64_t lo, hi;
    if (dash == std::string_view::npos) {
      if (!parse_int(part, lo)) bad(fmt::format("'{}' is not a core number", part));
      hi = lo;
    } else {
      if (!parse_int(part.substr(0, dash), lo) || !parse_int(part.substr(dash + 1), hi))
        bad(fmt::format("'{}' is not a range a-b", part));
      if (lo > hi) bad(fmt::format("the range '{}' is reversed", part));
    }
    if (lo < 0 || hi > kMaxCore) bad(fmt::format("cores are numbered 0..{}", kMaxCore));
    for (int64_t c = lo; c <= hi; ++c) set.cores_.push_back(int(c));
  }
  std::sort(set.cores_.begin(), set.cores_.end());
  set.cores_.erase(std::unique(set.cores_.begin(), set.cores_.end()), set.cores_.end());
  return set;
}

bool CoreSet::contains(int core) const {
  return all_ || std::binary_search(cores_.begin(), cores_.end(), core);
}

std::string CoreSet::str() const {
  if (all_) return "all";
  std::string out;
  for (size_t i = 0; i < cores_.size();) {
    size_t j = i;
    while (j + 1 < cores_.size() && cores_[j + 1] == cores_[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j > i ? fmt::format("{}-{}", cores_[i], cores_[j]) : fmt::format("{}", cores_[i]);
    i = j + 1;
  }
  return out;
}

// ---- layers ----

uint32_t parse_layers(std::string_view spec, std::string_view what) {
  std::string_view s = trim(spec);
  if (s == "all") return kFramework | kRuntime | kDevice;
  uint32_t mask = 0;
  for (std::string_view part : split(s)) {
    if (part == "framework") mask |= kFramework;
    else if (part == "runtime") mask |= kRuntime;
    else if (part == "device") mask |= kDevice;
    else if (part == "instructions") mask |= kInstructions | kDevice;  // samples are placed by kernel events
    else
      fail(what,
           "'{}' is not a layer list: unknown layer '{}' (expected framework, runtime, device, instructions or all)",
           spec, part);
  }
  return mask;
}

std::string layers_str(uint32_t layers) {
  std::string out;
  for (auto [bit, name] : {std::pair{kFramework, "framework"}, {kRuntime, "runtime"}, {kDevice, "device"},
                                 {kInstructions, "instructions"}})
    if (layers & bit) out += out.empty() ? name : std::string(",") + name;
  return out;
}

// ---- config ----

void ProfilerConfig::validate() const {
  if (layers & ~uint32_t(kFramework | kRuntime | kDevice | kInstructions))
    fail("layers", "unknown layer bits {:#x}", layers);
  if ((layers & kInstructions) && !(layers & kDevice))
    fail("layers", "instructions needs the device layer: its kernel events give each sample its launch");
  if (sample_rate_hz != kAutoSampleRate &&
      (sample_rate_hz < kMinSampleRateHz || sample_rate_hz > kMaxSampleRateHz))
    fail("sample_rate", "{} Hz is out of range ({}..{} samples per second per core, or auto)", sample_rate_hz,
         kMinSampleRateHz, kMaxSampleRateHz);
  if (max_events < 1 || max_events > kMaxMaxEvents)
    fail("max_events", "{} is out of range (1..{})", max_events, kMaxMaxEvents);
  if (cupti_buffer_kb < 16 || cupti_buffer_kb > kMaxCuptiBufferKb)
    fail("profiler", "cupti_buffer_kb must be 16..{} (KiB per CUPTI activity buffer), not {}", kMaxCuptiBufferKb,
         cupti_buffer_kb);
  if (cupti_max_buffers < 1 || cupti_max_buffers > kMaxCuptiBuffers)
    fail("profiler", "cupti_max_buffers must be 1..{}, not {}", kMaxCuptiBuffers, cupti_max_buffers);
  if (schedule) schedule->validate();
}

std::string ProfilerConfig::to_json() const {
  nlohmann::json j;
  j["layers"] = layers_str(layers);
  j["cores"] = cores.str();
  j["output_dir"] = output_dir;
  j["max_events"] = max_events;
  j["record_shapes"] = record_shapes;
  j["with_stack"] = with_stack;
  j["correlate_device_time"] = correlate_device_time;
  j["cupti_buffer_kb"] = cupti_buffer_kb;
  j["cupti_max_buffers"] = cupti_max_buffers;
  if (sample_rate_hz == kAutoSampleRate)
    j["sample_rate_hz"] = "auto";
  else
    j["sample_rate_hz"] = sample_rate_hz;
  if (schedule)
    j["schedule"] = {{"skip_first", schedule->skip_first}, {"wait", schedule->wait}, {"warmup", schedule->warmup},
                     {"active", schedule->active}, {"repeat", schedule->repeat}};
  else
    j["schedule"] = nullptr;
  return j.dump();
}

int64_t parse_sample_rate(std::string_view text, std::string_view what) {
  if (trim(text) == "auto") return ProfilerConfig::kAutoSampleRate;
  int64_t n;
  if (!parse_int(text, n) || n < ProfilerConfig::kMinSampleRateHz || n > ProfilerConfig::kMaxSampleRateHz)
    fail(what, "'{}' is not a sample rate ({}..{} samples per second per core, or auto)", text,
         ProfilerConfig::kMinSampleRateHz, ProfilerConfig::kMaxSampleRateHz);
  return n;
}

bool ProfilerConfig::env_enabled() { return env_bool("OPSCOPE_PROFILE", false); }

ProfilerConfig ProfilerConfig::from_env() {
  env_enabled();  // a bad OPSCOPE_PROFILE is an error here too
  ProfilerConfig c;
  if (const char* v = env("OPSCOPE_PROFILE_DIR")) c.output_dir = v;
  if (const char* v = env("OPSCOPE_PROFILE_LAYERS")) c.layers = parse_layers(v, "OPSCOPE_PROFILE_LAYERS");
  if (const char* v = env("OPSCOPE_PROFILE_CORES")) c.cores = CoreSet::parse(v, "OPSCOPE_PROFILE_CORES");
  if (const char* v = env("OPSCOPE_PROFILE_MAX_EVENTS")) {
    int64_t n;
    if (!parse_int(v, n) || n < 1 || n > kMaxMaxEvents)
      fail("OPSCOPE_PROFILE_MAX_EVENTS", "'{}' is not an event count (1..{})", v, kMaxMaxEvents);
    c.max_events = n;
  }
  auto env_count = [](const char* name, int64_t lo, int64_t hi, int64_t& out) {
    if (const char* v = env(name)) {
      int64_t n;
      if (!parse_int(v, n) || n < lo || n > hi) fail(name, "'{}' is not a count ({}..{})", v, lo, hi);
      out = n;
    }
  };
  env_count("OPSCOPE_PROFILE_CUPTI_BUFFER_KB", 16, kMaxCuptiBufferKb, c.cupti_buffer_kb);
  env_count("OPSCOPE_PROFILE_CUPTI_MAX_BUFFERS", 1, kMaxCuptiBuffers, c.cupti_max_buffers);
  if (const char* v = env("OPSCOPE_PROFILE_SAMPLE_RATE"))
    c.sample_rate_hz = parse_sample_rate(v, "OPSCOPE_PROFILE_SAMPLE_RATE");
  c.record_shapes = env_bool("OPSCOPE_PROFILE_SHAPES", c.record_shapes);
  c.with_stack = env_bool("OPSCOPE_PROFILE_STACK", c.with_stack);
  return c;
}

}  // namespace opscope::prof
