#include "opscope/profiler/chrome_trace.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <vector>

#include "opscope/core/error.h"
#include "opscope/profiler/collective.h"
#include "opscope/profiler/stream_file.h"

namespace opscope::prof {
namespace {

constexpr int kHostPid = 1;
int device_pid(int device) { return device >= 0 ? 2 + device : kHostPid; }

// Length of the UTF-8 sequence at p: of a well-formed character (valid = true), or of
// its maximal ill-formed prefix, at least one byte (valid = false). Unicode Table 3-7.
size_t utf8_sequence(const unsigned char* p, const unsigned char* end, bool& valid) {
  unsigned char c = p[0], lo = 0x80, hi = 0xBF;
  size_t need;
  if (c >= 0xC2 && c <= 0xDF) need = 1;
  else if (c == 0xE0) need = 2, lo = 0xA0;
  else if (c == 0xED) need = 2, hi = 0x9F;  // no UTF-16 surrogates
  else if (c >= 0xE1 && c <= 0xEF) need = 2;
  else if (c == 0xF0) need = 3, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) need = 3;
  else if (c == 0xF4) need = 3, hi = 0x8F;  // nothing above U+10FFFF
  else {
    valid = false;
    return 1;
  }
  for (size_t i = 1; i <= need; ++i) {
    if (p + i >= end || p[i] < lo || p[i] > hi) {
      valid = false;
      return i;
    }
    lo = 0x80, hi = 0xBF;
  }
  valid = true;
  return need + 1;
}

// Room a string needs at most once escaped: 6 bytes per byte (\u00XX), plus quotes.
size_t escaped_bound(std::string_view s) { return 6 * s.size() + 2; }

// Writes `s` as a JSON string literal at `w`; returns the end. Needs escaped_bound(s).
char* put_json_string(char* w, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  auto p = reinterpret_cast<const unsigned char*>(s.data());
  auto end = p + s.size();
  *w++ = '"';
  while (p < end) {
    unsigned char c = *p;
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {  // the common case
      *w++ = char(c);
      ++p;
      continue;
    }
    if (c < 0x80) {
      ++p;
      *w++ = '\\';
      switch (c) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '\b': *w++ = 'b'; break;
        case '\f': *w++ = 'f'; break;
        case '\n': *w++ = 'n'; break;
        case '\r': *w++ = 'r'; break;
        case '\t': *w++ = 't'; break;
        default: w[0] = 'u', w[1] = '0', w[2] = '0', w[3] = kHex[c >> 4], w[4] = kHex[c & 15], w += 5;
      }
      continue;
    }
    bool valid;
    size_t n = utf8_sequence(p, end, valid);
    if (valid) {
      std::memcpy(w, p, n);
      w += n;
    } else {
      std::memcpy(w, "\xEF\xBF\xBD", 3);  // U+FFFD REPLACEMENT CHARACTER
      w += 3;
    }
    p += n;
  }
  *w++ = '"';
  return w;
}

// Decimal digits of v at w (room for 20), two at a time from a table, inlined: through
// std::to_chars, which the compiler kept out of line, numbers took half of the
// formatter's time (a kernel slice and its flow arrow carry 17 of them).
constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

inline int decimal_digits(uint64_t v) {
  int n = 1;
  for (;;) {
    if (v < 10) return n;
    if (v < 100) return n + 1;
    if (v < 1000) return n + 2;
    if (v < 10000) return n + 3;
    v /= 10000;
    n += 4;
  }
}

inline char* put_u64(char* w, uint64_t v) {
  char* end = w + decimal_digits(v);
  char* p = end;
  while (v >= 100) {
    p -= 2;
    std::memcpy(p, kDigitPairs + 2 * (v % 100), 2);
    v /= 100;
  }
  if (v >= 10)
    std::memcpy(p - 2, kDigitPairs + 2 * v, 2);
  else
    p[-1] = char('0' + v);
  return end;
}

char* put_us(char* w, int64_t ns) {
  uint64_t mag = ns < 0 ? 0 - uint64_t(ns) : uint64_t(ns);
  if (ns < 0) *w++ = '-';
  w = put_u64(w, mag / 1000);
  unsigned frac = unsigned(mag % 1000);
  w[0] = '.', w[1] = char('0' + frac / 100), w[2] = char('0' + frac / 10 % 10), w[3] = char('0' + frac % 10);
  return w + 4;
}

// The document is formatted into a fixed buffer (no bounds check per byte: each event
// first reserves its worst case) and handed to the file, or a string, in large chunks;
// or formatted straight into a StreamFile's buffers.
class Sink {
 public:
  Sink(std::FILE* file, std::string* str) : file_(file), str_(str), buf_(new char[cap_]) {}
  explicit Sink(StreamFile& stream) : stream_(&stream), cap_(0) {}

  // Makes room for `n` more bytes and returns where to write them; commit(end) after.
  char* reserve(size_t n) {
    if (stream_) return stream_->reserve(n);
    if (pos_ + n > cap_) {
      flush();
      if (n > cap_) {
        cap_ = n;
        buf_.reset(new char[cap_]);
      }
    }
    return buf_.get() + pos_;
  }
  void commit(char* end) {
    if (stream_)
      stream_->advance(end);
    else
      pos_ = size_t(end - buf_.get());
  }

  void flush() {
    if (pos_ == 0) return;
    if (str_) {
      str_->append(buf_.get(), pos_);
    } else {
      if (std::fwrite(buf_.get(), 1, pos_, file_) != pos_)
        fail("trace.json", "write failed ({})", std::strerror(errno));
      // Start the disk writing the part done while the rest is formatted, so the final
      // fsync of the atomic write has little left to wait for. Fails harmlessly on pipes.
      std::fflush(file_);
      int fd = fileno(file_);
      ::sync_file_range(fd, written_, off_t(pos_), SYNC_FILE_RANGE_WRITE);
      written_ += off_t(pos_);
    }
    pos_ = 0;
  }

 private:
  std::FILE* file_ = nullptr;
  std::string* str_ = nullptr;
  StreamFile* stream_ = nullptr;
  size_t cap_ = size_t(4) << 20;
  size_t pos_ = 0;
  off_t written_ = 0;
  std::unique_ptr<char[]> buf_;
};

// Appends literal text: lit("...").
template <size_t N>
char* lit(char* w, const char (&s)[N]) {
  std::memcpy(w, s, N - 1);
  return w + N - 1;
}
char* put(char* w, std::string_view s) {
  std::memcpy(w, s.data(), s.size());
  return w + s.size();
}
char* put_uint(char* w, uint64_t v) { return put_u64(w, v); }
char* put_int(char* w, int64_t v) {
  if (v < 0) {
    *w++ = '-';
    return put_u64(w, 0 - uint64_t(v));
  }
  return put_u64(w, uint64_t(v));
}

struct Place {
  int pid = kHostPid;
  int64_t tid = 0;
};

char* put_place(char* w, Place p) {
  w = lit(w, ",\"pid\":");
  w = put_int(w, p.pid);
  w = lit(w, ",\"tid\":");
  return put_int(w, p.tid);
}

int64_t mid(const TraceEvent& e) { return e.t0 + (std::max(e.t1, e.t0) - e.t0) / 2; }

// Fixed part of any one event line (keys, numbers, a flow pair), names excluded.
constexpr size_t kEventBound = 1024;

class Writer {
 public:
  Writer(const Trace& t, Sink& sink) : t_(t), s_(sink) {}

  void run() {
    prepare();
    char* w = s_.reserve(32);
    s_.commit(lit(w, "{\"traceEvents\":["));
    metadata();
    for (const TraceEvent& e : t_.events) event(e);
    for (const Sample& smp : t_.samples) sample(smp);
    other_data();
    s_.flush();
  }

 private:
  const Trace& t_;
  Sink& s_;
  bool first_ = true;
  uint64_t next_flow_ = 1;
  std::vector<Place> fw_, rt_;     // per track: framework/device place, runtime place
  std::vector<char> has_runtime_;  // host tracks with runtime events
  std::map<int, std::string> device_names_;
  // A profile of several ranks: each rank's host threads in a process of its own ("rank R"),
  // numbered after the devices' pids; a device's rank (from its tracks) orders it after its host.
  std::map<int, int> rank_pid_;     // rank -> pid
  std::map<int, int> device_rank_;  // device -> rank
  std::unordered_map<uint64_t, uint32_t> launch_of_, op_of_;  // id -> event index

  void prepare() {
    const size_t n = t_.tracks.size();
    fw_.resize(n);
    rt_.resize(n);
    has_runtime_.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      const Track& tr = t_.tracks[i];
      if (tr.kind == Track::Kind::host_thread) {
        if (tr.rank >= 0) rank_pid_[tr.rank] = 0;
      } else {
        fw_[i] = rt_[i] = {device_pid(tr.device), int64_t(i) + 1};
        add_device(tr.device);
        if (tr.rank >= 0 && tr.device >= 0) device_rank_.emplace(tr.device, tr.rank);
      }
    }
    for (const DeviceInfo& d : t_.devices) device_names_[d.index] = d.name;
    size_t launches = 0, ops = 0;
    for (size_t i = 0; i < t_.events.size(); ++i) {
      const TraceEvent& e = t_.events[i];
      if (e.track < 0 || size_t(e.track) >= n)
        fail("trace.json", "event {} ({} '{}') has track {} but the trace has {} tracks", i,
             kind_name(e.kind), e.name, e.track, n);
      launches += e.kind == EventKind::launch;
      ops += e.kind == EventKind::op || e.kind == EventKind::range;
    }
    launch_of_.reserve(launches);
    op_of_.reserve(ops);
    for (size_t i = 0; i < t_.events.size(); ++i) {
      const TraceEvent& e = t_.events[i];
      switch (e.kind) {
        case EventKind::op:
        case EventKind::range: op_of_.emplace(e.id, uint32_t(i)); break;
        case EventKind::launch: launch_of_.emplace(e.id, uint32_t(i)); [[fallthrough]];
        case EventKind::alloc:
        case EventKind::free:
        case EventKind::sync:
        case EventKind::api:
          has_runtime_[e.track] = 1;
          if (e.kind != EventKind::sync && e.kind != EventKind::api) add_device(e.device);
          // A device with no track of its own (host memory): the rank of who allocates on it.
          if (!rank_pid_.empty() && e.kind != EventKind::launch && e.device >= 0 && t_.tracks[e.track].rank >= 0)
            device_rank_.emplace(e.device, t_.tracks[e.track].rank);
          break;
        case EventKind::kernel: break;
      }
    }
    int next_pid = device_names_.empty() ? 2 : device_pid(device_names_.rbegin()->first) + 1;
    for (auto& [rank, pid] : rank_pid_) pid = next_pid++;
    for (size_t i = 0; i < n; ++i) {
      const Track& tr = t_.tracks[i];
      if (tr.kind != Track::Kind::host_thread) continue;
      int pid = tr.rank >= 0 ? rank_pid_[tr.rank] : kHostPid;
      fw_[i] = {pid, int64_t(i) + 1};
      rt_[i] = {pid, int64_t(n + i) + 1};
    }
  }

  void add_device(int device) {
    if (device >= 0 && !device_names_.count(device))
      device_names_[device] = "device " + std::to_string(device);
  }

  // Starts an event object: `{"ph":"X"` after the separator.
  char* begin(char* w, char ph) {
    if (!first_) *w++ = ',';
    first_ = false;
    w = lit(w, "\n{\"ph\":\"");
    *w++ = ph;
    *w++ = '"';
    return w;
  }

  void meta(const char* what, Place p, std::string_view name, int64_t sort) {
    char* w = s_.reserve(kEventBound + escaped_bound(name));
    for (int part = 0; part < 2; ++part) {
      w = begin(w, 'M');
      w = put_place(w, p);
      w = lit(w, ",\"name\":\"");
      w = put(w, what);
      if (part == 0) {
        w = lit(w, "_name\",\"args\":{\"name\":");
        w = put_json_string(w, name);
      } else {
        w = lit(w, "_sort_index\",\"args\":{\"sort_index\":");
        w = put_int(w, sort);
      }
      w = lit(w, "}}");
    }
    s_.commit(w);
  }

  void metadata() {
    // One process: "host", then the devices in index order. Several ranks: each rank's
    // process, then its devices; devices of no rank last.
    bool one_host = rank_pid_.empty();
    for (const Track& tr : t_.tracks) one_host = one_host || (tr.kind == Track::Kind::host_thread && tr.rank < 0);
    if (one_host) meta("process", {kHostPid, 0}, "host", 0);
    int64_t sort = 1;
    auto device_meta = [&](int dev, const std::string& name) {
      std::string label = name;  // "cpu:0 (<description>)", or the description if it names it
      for (const DeviceInfo& d : t_.devices)
        if (d.index == dev && !d.description.empty())
          label = d.description.find(name) != std::string::npos ? d.description
                                                                 : name + " (" + d.description + ")";
      meta("process", {device_pid(dev), 0}, label, rank_pid_.empty() ? 1 + dev : sort++);
    };
    for (auto& [rank, pid] : rank_pid_) {
      meta("process", {pid, 0}, "rank " + std::to_string(rank), sort++);
      for (auto& [dev, name] : device_names_) {
        auto r = device_rank_.find(dev);
        if (r != device_rank_.end() && r->second == rank) device_meta(dev, name);
      }
    }
    for (auto& [dev, name] : device_names_) {
      auto r = device_rank_.find(dev);
      if (rank_pid_.empty() || r == device_rank_.end() || !rank_pid_.count(r->second)) device_meta(dev, name);
    }
    for (size_t i = 0; i < t_.tracks.size(); ++i) {
      const Track& tr = t_.tracks[i];
      std::string name = tr.name;
      int64_t dropped = i < t_.dropped_per_track.size() ? t_.dropped_per_track[i] : 0;
      if (dropped > 0) name += " (" + std::to_string(dropped) + " events dropped)";
      if (tr.kind == Track::Kind::host_thread) {
        meta("thread", fw_[i], name, 2 * int64_t(i));
        if (has_runtime_[i]) meta("thread", rt_[i], "runtime (" + tr.name + ")", 2 * int64_t(i) + 1);
      } else {
        meta("thread", fw_[i], name, tr.core >= 0 ? tr.core : int64_t(i));
      }
    }
  }

  // `{"ph":..,"ts":..,("dur":..,)"pid":..,"tid":..,"cat":..,"name":..` of an event.
  char* head(char* w, char ph, const TraceEvent& e, Place p) {
    w = begin(w, ph);
    w = lit(w, ",\"ts\":");
    w = put_us(w, e.t0);
    if (ph == 'X') {
      w = lit(w, ",\"dur\":");
      w = put_us(w, std::max<int64_t>(e.t1 - e.t0, 0));
    }
    w = put_place(w, p);
    w = lit(w, ",\"cat\":\"");
    w = put(w, kind_name(e.kind));
    w = lit(w, "\",\"name\":");
    if (e.name.empty() && (e.kind == EventKind::alloc || e.kind == EventKind::free))
      return put_json_string(w, kind_name(e.kind));
    return put_json_string(w, e.name);
  }

  // One arg: `,"key":` or, first, `,"args":{"key":`.
  template <size_t N>
  static char* arg(char* w, const char (&key)[N], bool first = false) {
    w = first ? lit(w, ",\"args\":{\"") : lit(w, ",\"");
    w = put(w, std::string_view(key, N - 1));
    return lit(w, "\":");
  }

  // A flow arrow from the slice enclosing (from, t_from) to the one enclosing (to, t_to).
  template <size_t N>
  char* flow(char* w, const char (&name)[N], Place from, int64_t t_from, Place to, int64_t t_to) {
    uint64_t id = next_flow_++;
    for (int end = 0; end < 2; ++end) {
      w = begin(w, end ? 'f' : 's');
      w = lit(w, ",\"ts\":");
      w = put_us(w, end ? t_to : t_from);
      if (end) w = lit(w, ",\"bp\":\"e\"");
      w = put_place(w, end ? to : from);
      w = lit(w, ",\"cat\":\"flow\",\"name\":\"");
      w = put(w, std::string_view(name, N - 1));
      w = lit(w, "\",\"id\":");
      w = put_uint(w, id);
      *w++ = '}';
    }
    return w;
  }

  // A communication kernel's description and its bandwidths as nccl-tests defines them
  // (collective.h), in GB/s with three decimals.
  static char* collective_args(char* w, const TraceEvent& e, const CollectiveInfo& c) {
    w = put_json_string(arg(w, "collective"), e.shapes);
    if (c.group_size > 0) w = put_int(arg(w, "group size"), c.group_size);
    double algbw = algbw_gbps(e.bytes, e.t1 - e.t0);
    w = put_us(arg(w, "algbw (GB/s)"), int64_t(algbw * 1e3 + 0.5));
    if (double f = bus_factor(c.kind, c.group_size); f > 0) w = put_us(arg(w, "busbw (GB/s)"), int64_t(algbw * f * 1e3 + 0.5));
    return w;
  }

  void event(const TraceEvent& e) {
    char* w = s_.reserve(kEventBound + escaped_bound(e.name) + escaped_bound(e.shapes) +
                         escaped_bound(e.source));
    switch (e.kind) {
      case EventKind::op:
      case EventKind::range:
        w = head(w, 'X', e, fw_[e.track]);
        w = put_uint(arg(w, "correlation_id", true), e.id);
        if (e.parent) w = put_uint(arg(w, "parent_id"), e.parent);
        if (e.kind == EventKind::op && e.value >= 0) w = put_int(arg(w, "sequence_nr"), e.value);
        if (!e.shapes.empty()) w = put_json_string(arg(w, "input_shapes"), e.shapes);
        if (!e.source.empty()) w = put_json_string(arg(w, "source"), e.source);
        w = lit(w, "}}");
        break;
      case EventKind::launch: {
        w = head(w, 'X', e, rt_[e.track]);
        w = put_uint(arg(w, "launch_id", true), e.id);
        w = put_uint(arg(w, "correlation_id"), e.parent);
        w = put_int(arg(w, "device"), e.device);
        w = put_int(arg(w, "stream"), e.stream);
        w = put_int(arg(w, "bytes"), e.bytes);
        w = put_int(arg(w, "flops"), e.flops);
        w = lit(w, "}}");
        auto op = e.parent ? op_of_.find(e.parent) : op_of_.end();
        if (op != op_of_.end()) {
          const TraceEvent& o = t_.events[op->second];
          int64_t from = std::clamp(mid(e), o.t0, std::max(o.t0, o.t1));
          w = flow(w, "op-launch", fw_[o.track], from, rt_[e.track], mid(e));
        }
        break;
      }
      case EventKind::api:  // a CUDA runtime call; launch_id when it enqueued one of ours
        w = head(w, 'X', e, rt_[e.track]);
        w = put_uint(arg(w, "launch_id", true), e.id);
        w = put_uint(arg(w, "correlation_id"), e.parent);
        w = lit(w, "}}");
        break;
      case EventKind::sync:
        w = head(w, 'X', e, rt_[e.track]);
        w = put_int(arg(w, "device", true), e.device);
        w = put_int(arg(w, "stream"), e.stream);
        if (e.parent) w = put_uint(arg(w, "correlation_id"), e.parent);
        w = lit(w, "}}");
        break;
      case EventKind::alloc:
      case EventKind::free:
        w = head(w, 'i', e, rt_[e.track]);
        w = lit(w, ",\"s\":\"t\"");
        w = lit(arg(w, "address", true), "\"0x");
        w = std::to_chars(w, w + 16, e.id, 16).ptr;
        *w++ = '"';
        w = put_int(arg(w, "bytes"), e.bytes);
        w = put_int(arg(w, "allocated"), e.value);
        w = put_int(arg(w, "device"), e.device);
        if (e.parent) w = put_uint(arg(w, "correlation_id"), e.parent);
        w = lit(w, "}}");
        // The device's "allocated bytes" counter track.
        w = begin(w, 'C');
        w = lit(w, ",\"ts\":");
        w = put_us(w, e.t0);
        w = lit(w, ",\"pid\":");
        w = put_int(w, device_pid(e.device));
        w = lit(w, ",\"name\":\"allocated bytes\"");
        w = put_int(arg(w, "bytes", true), e.value);
        w = lit(w, "}}");
        break;
      case EventKind::kernel: {
        w = head(w, 'X', e, fw_[e.track]);
        w = put_uint(arg(w, "launch_id", true), e.id);
        w = put_uint(arg(w, "correlation_id"), e.parent);
        w = put_int(arg(w, "core"), t_.tracks[e.track].core);
        if (e.stream >= 0) w = put_int(arg(w, "stream"), e.stream);  // a GPU's (CUPTI)
        w = put_int(arg(w, "bytes"), e.bytes);
        w = put_int(arg(w, "flops"), e.flops);
        if (e.value > 0) w = put_us(arg(w, "memory bandwidth (GB/s)"), e.value);  // MB/s as GB/s, exactly
        if (std::optional<CollectiveInfo> c = parse_collective(e.shapes)) w = collective_args(w, e, *c);
        w = lit(w, "}}");
        auto l = launch_of_.find(e.id);
        if (l != launch_of_.end()) {
          const TraceEvent& le = t_.events[l->second];
          w = flow(w, "launch-kernel", rt_[le.track], mid(le), fw_[e.track], mid(e));
        }
        break;
      }
    }
    s_.commit(w);
  }

  // A rank of a distributed job (the config's "distributed", written by the opscope c10d
  // backend): Kineto's top-level distributedInfo, which HTA and opscope's importer read.
  void distributed_info(std::string& o) const {
    if (t_.config_json.empty()) return;
    auto cfg = nlohmann::json::parse(t_.config_json, nullptr, false);
    if (!cfg.is_object() || !cfg.contains("distributed") || !cfg["distributed"].is_object()) return;
    const nlohmann::json& d = cfg["distributed"];
    nlohmann::json info = nlohmann::json::object();
    for (const char* k : {"backend", "rank", "world_size"})
      if (d.contains(k)) info[k] = d[k];
    o += ",\n\"distributedInfo\":";
    o += info.dump();
  }

  // An instruction sample: an instant on its core's track, named by its function.
  void sample(const Sample& smp) {
    if (smp.track < 0 || size_t(smp.track) >= t_.tracks.size() || smp.site < 0 ||
        size_t(smp.site) >= t_.code_sites.size())
      return;
    const CodeSite& site = t_.code_sites[size_t(smp.site)];
    char* w = s_.reserve(kEventBound + escaped_bound(site.function) + escaped_bound(site.file));
    w = begin(w, 'i');
    w = lit(w, ",\"s\":\"t\",\"ts\":");
    w = put_us(w, smp.t);
    w = put_place(w, fw_[size_t(smp.track)]);
    w = lit(w, ",\"cat\":\"sample\",\"name\":");
    w = put_json_string(w, site.function.empty() ? std::string_view("[unknown]") : std::string_view(site.function));
    w = put_uint(arg(w, "launch_id", true), smp.launch);
    if (!site.file.empty()) {
      w = put_json_string(arg(w, "file"), site.file);
      w = put_int(arg(w, "line"), site.line);
    }
    w = lit(w, "}}");
    s_.commit(w);
  }

  void other_data() {
    std::string o = "\n],\n\"otherData\":{\"producer\":\"opscope\",\"schema_version\":";
    o += std::to_string(t_.schema_version);
    o += ",\"time_unit\":\"ts and dur: microseconds since base_time_ns\",\"base_time_ns\":";
    o += std::to_string(t_.base_time_ns);
    o += ",\"wall_time_ns\":";
    o += std::to_string(t_.wall_time_ns);
    o += ",\"config\":";
    if (t_.config_json.empty())
      o += "null";
    else if (nlohmann::json::accept(t_.config_json))
      o += t_.config_json;  // already JSON: keep it readable as an object
    else
      append_json_string(o, t_.config_json);
    o += ",\"devices\":[";
    for (size_t i = 0; i < t_.devices.size(); ++i) {
      const DeviceInfo& d = t_.devices[i];
      o += i ? ",{\"index\":" : "{\"index\":";
      o += std::to_string(d.index);
      o += ",\"name\":";
      append_json_string(o, d.name);
      o += ",\"description\":";
      append_json_string(o, d.description);
      o += ",\"num_cores\":";
      o += std::to_string(d.num_cores);
      o += '}';
    }
    o += ']';
    if (!t_.device_tracing_json.empty() && nlohmann::json::accept(t_.device_tracing_json)) {
      o += ",\"device_tracing\":";
      o += t_.device_tracing_json;
    }
    if (!t_.sampling_json.empty() && nlohmann::json::accept(t_.sampling_json)) {
      o += ",\"sampling\":";
      o += t_.sampling_json;
    }
    o += ",\"event_count\":";
    o += std::to_string(t_.events.size());
    o += ",\"dropped\":";
    o += std::to_string(t_.dropped);
    o += ",\"dropped_per_track\":[";
    bool first = true;
    for (size_t i = 0; i < t_.dropped_per_track.size() && i < t_.tracks.size(); ++i) {
      if (t_.dropped_per_track[i] == 0) continue;
      o += first ? "{\"track\":" : ",{\"track\":";
      first = false;
      o += std::to_string(i);
      o += ",\"name\":";
      append_json_string(o, t_.tracks[i].name);
      o += ",\"dropped\":";
      o += std::to_string(t_.dropped_per_track[i]);
      o += '}';
    }
    o += "]}";
    distributed_info(o);
    o += "}\n";
    s_.commit(put(s_.reserve(o.size()), o));
  }
};

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  size_t at = out.size();
  out.resize(at + escaped_bound(s));
  char* end = put_json_string(out.data() + at, s);
  out.resize(size_t(end - out.data()));
}

void append_us(std::string& out, int64_t ns) {
  char b[32];
  out.append(b, put_us(b, ns));
}

void write_chrome_trace(const Trace& trace, std::FILE* out) {
  Sink sink(out, nullptr);
  Writer(trace, sink).run();
}

std::string chrome_trace_json(const Trace& trace) {
  std::string out;
  out.reserve(1024 + trace.events.size() * 360);
  Sink sink(nullptr, &out);
  Writer(trace, sink).run();
  return out;
}

void write_chrome_trace(const Trace& trace, StreamFile& out) {
  Sink sink(out);
  Writer(trace, sink).run();
}

void save_chrome_trace(const Trace& trace, const std::string& path) {
  StreamFile f(path, "trace.json");
  write_chrome_trace(trace, f);
  f.commit();
}

}  // namespace opscope::prof
