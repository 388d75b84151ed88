#include "opscope/importer/kineto_reader.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "opscope/core/error.h"
#include "opscope/importer/json_splitter.h"
#include "opscope/importer/trace_file.h"

namespace opscope::importer {

namespace od = simdjson::ondemand;
using namespace std::literals;

uint32_t StringTable::intern(std::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  const std::string& kept = storage_.emplace_back(s);
  uint32_t id = uint32_t(strings_.size());
  strings_.push_back(&kept);
  ids_.emplace(std::string_view(kept), id);
  return id;
}

void Warnings::add(const std::string& what, int64_t index) {
  auto [it, fresh] = entries_.try_emplace(what);
  if (fresh) {
    order_.push_back(what);
    it->second.first = index;
  }
  it->second.count++;
}

int64_t Warnings::count(const std::string& what) const {
  auto it = entries_.find(what);
  return it == entries_.end() ? 0 : it->second.count;
}

std::vector<std::string> Warnings::lines() const {
  std::vector<std::string> out;
  for (const std::string& w : order_) {
    const Entry& e = entries_.at(w);
    out.push_back(e.first >= 0 ? fmt::format("{} {} (first: event {})", e.count, w, e.first)
                               : fmt::format("{} {}", e.count, w));
  }
  return out;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\r' || s.front() == '\t'))
    s.remove_prefix(1);
  return s;
}

// A value's JSON text without surrounding quotes or spaces: pid and tid compare as text
// (CPU tids can be numeric strings where flow and memory tids are numbers).
std::string_view token(od::value& v) {
  std::string_view s = trim(v.raw_json_token());
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

// An integer (or a number rounded to one); kNone when the value is no number.
int64_t integer(od::value& v) {
  od::number n;
  if (v.get_number().get(n) != simdjson::SUCCESS) {
    std::string_view s = token(v);  // a number written as a string ("Addr": "0x..." is not one)
    int64_t x = 0;
    if (s.empty()) return kNone;
    for (char c : s) {
      if (c < '0' || c > '9' || x > (std::numeric_limits<int64_t>::max() - 9) / 10) return kNone;
      x = x * 10 + (c - '0');
    }
    return x;
  }
  if (n.is_int64()) return n.get_int64();
  if (n.is_uint64()) return int64_t(n.get_uint64());  // same bits (addresses)
  double d = n.get_double();
  return std::isfinite(d) && std::abs(d) < 9e18 ? std::llround(d) : kNone;
}

// A number (integer or not); `none` when the value is no finite number.
double real(od::value& v, double none) {
  od::number n;
  if (v.get_number().get(n) != simdjson::SUCCESS) return none;
  double d = n.as_double();
  return std::isfinite(d) ? d : none;
}

// A time in µs as ns: integers exactly, floats rounded to the ns. False when no number
// or beyond ±4e15 µs (year 2096 since the epoch): sums of times stay inside int64.
constexpr int64_t kMaxMicros = 4'000'000'000'000'000;

// A time written as a string ("ts": "1700000000123456.789": writers that keep every digit
// of an epoch time, which a double would round to 256 ns; Perfetto reads them too): the
// whole µs exactly, the fraction rounded to the ns. Exponent forms go through a double.
bool micros_text(std::string_view s, int64_t& ns) {
  if (s.find_first_of("eE") != std::string_view::npos) {
    double d = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
    if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(d) || std::abs(d) > double(kMaxMicros))
      return false;
    ns = std::llround(d * 1000.0);
    return true;
  }
  const bool negative = !s.empty() && s[0] == '-';
  if (negative) s.remove_prefix(1);
  size_t dot = s.find('.');
  std::string_view whole = s.substr(0, dot), frac = dot == std::string_view::npos ? "" : s.substr(dot + 1);
  if (whole.empty() && frac.empty()) return false;
  int64_t us = 0;
  if (!whole.empty()) {
    auto [end, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), us);
    if (ec != std::errc() || end != whole.data() + whole.size() || us > kMaxMicros) return false;
  }
  int64_t part = 0;  // the fraction in ns, rounded half up on its fourth digit
  for (size_t i = 0; i < frac.size(); ++i) {
    if (frac[i] < '0' || frac[i] > '9') return false;
    if (i < 3) part = part * 10 + (frac[i] - '0');
    if (i == 3 && frac[i] >= '5') ++part;
  }
  for (size_t i = frac.size(); i < 3; ++i) part *= 10;
  ns = (us * 1000 + part) * (negative ? -1 : 1);
  return true;
}

bool micros(od::value& v, int64_t& ns) {
  od::number n;
  if (v.get_number().get(n) != simdjson::SUCCESS) {
    std::string_view s;
    return v.get_string().get(s) == simdjson::SUCCESS && micros_text(s, ns);
  }
  if (n.is_int64()) {
    int64_t us = n.get_int64();
    if (us > kMaxMicros || us < -kMaxMicros) return false;
    ns = us * 1000;
    return true;
  }
  double d = n.is_uint64() ? double(n.get_uint64()) : n.get_double();
  if (!std::isfinite(d) || std::abs(d) > double(kMaxMicros)) return false;
  ns = std::llround(d * 1000.0);
  return true;
}

// A field's key as written (torch writes no escapes in keys): compared as a string_view,
// each comparison is a length check and at most one memcmp.
std::string_view key_text(od::field& f) {
  const char* b = f.key().raw();
  const char* e = b;
  while (*e != '"') e += *e == '\\' ? 2 : 1;
  return std::string_view(b, size_t(e - b));
}

// k == lit, inlined (the key chains below run for every field of every event).
template <size_t N>
inline bool is(std::string_view k, const char (&lit)[N]) {
  return k.size() == N - 1 && __builtin_memcmp(k.data(), lit, N - 1) == 0;
}

// torch's scalar type names, as opscope writes dtypes.
std::string_view dtype_name(std::string_view t) {
  if (t == "float") return "f32";
  if (t == "double") return "f64";
  if (t == "c10::Half") return "f16";
  if (t == "c10::BFloat16") return "bf16";
  if (t == "long int" || t == "long") return "i64";
  if (t == "int") return "i32";
  if (t == "short int") return "i16";
  if (t == "signed char") return "i8";
  if (t == "unsigned char") return "u8";
  return t;
}

// Lists nested deeper than this in an event's args (torch writes two levels: a
// TensorList's dims) are an error, not a recursion as deep as the file is.
constexpr int kMaxListDepth = 32;
struct ListTooDeep {};
// An element of such a list that does not parse ("[2 3]"): an error, never the end of
// the list, since simdjson's iterator cannot go on past it and the events after this one
// would be lost.
struct BadListElement {
  simdjson::error_code error;
};

// A JSON list as text: "[4,4096]" → "(4, 4096)" with open '(' close ')' and ", ";
// nested lists (a TensorList's dims) likewise; scalars as written.
std::string list_text(od::value& v, char open, char close, const char* sep, int depth = 0) {
  od::array a;
  if (v.get_array().get(a) != simdjson::SUCCESS) return std::string(token(v));
  if (depth >= kMaxListDepth) throw ListTooDeep{};
  std::string out(1, open);
  bool first = true;
  for (auto er : a) {
    od::value x;
    if (auto e = std::move(er).get(x)) throw BadListElement{e};
    if (!first) out += sep;
    first = false;
    out += list_text(x, open, close, sep, depth + 1);
  }
  return out + close;
}

constexpr const char* kPhase = "events with phase \"{}\" skipped (opscope reads X, i, s, f, t, M, C)";

class Reader final : public TraceParts {
 public:
  explicit Reader(RawTrace& t) : t_(t) {}

  void root_is_array() override { t_.legacy_array = true; }

  void root_value(std::string_view key, std::string_view json) override {
    if (!is(key, "deviceProperties") && !is(key, "computeProperties") && !is(key, "distributedInfo") &&
        !is(key, "baseTimeNanoseconds") && !is(key, "schemaVersion") && !is(key, "traceName"))
      return;
    // Parsed on its own: {"v": <value>}.
    simdjson::padded_string text(std::string("{\"v\":").append(json).append("}"));
    od::parser parser;
    od::document doc;
    od::value v;
    if (auto e = parser.iterate(text).get(doc)) broken(e, key);
    if (auto e = doc["v"].get(v)) broken(e, key);
    if (is(key, "deviceProperties") || is(key, "computeProperties")) {
      device_properties(v);
    } else if (is(key, "distributedInfo")) {
      distributed_info(v);
    } else if (is(key, "baseTimeNanoseconds")) {
      // The epoch ns of ts 0, held to the range of a time (1970 to 2096): with a larger
      // one, base + ts would leave int64.
      int64_t b = integer(v);
      if (b != kNone && (b < 0 || b > kMaxMicros * 1000))
        fail("import", "{}: baseTimeNanoseconds {} is not a time from 1970 to 2096 (ns since the epoch)", t_.file, b);
      if (b != kNone) t_.has_base_time = true, t_.base_time_ns = b;
    } else if (is(key, "schemaVersion")) {
      t_.schema_version = std::string(token(v));
    } else if (is(key, "traceName")) {
      t_.trace_name = std::string(token(v));
    }
  }

  void events(const char* text, size_t len, size_t capacity, int64_t first,
              const std::vector<std::pair<uint32_t, uint32_t>>& spans) override {
    if (first + int64_t(spans.size()) > int64_t(UINT32_MAX)) fail("import", "{}: more than 2^32 events", t_.file);
    od::document doc;
    od::array events;
    simdjson::padded_string_view view(text, len, capacity);
    if (parser_.iterate(view).get(doc) != simdjson::SUCCESS || doc.get_array().get(events) != simdjson::SUCCESS)
      locate(text, capacity, first, spans);
    int64_t index = first;
    for (auto er : events) {
      od::value v;
      if (auto e = std::move(er).get(v)) {
        locate(text, capacity, first, spans);
        bad_event(index, e);
      }
      event(v, index);
      ++index;
    }
    // Every event the splitter found was read: an iterator that stopped early would lose
    // the rest of the batch without a word.
    if (index != first + int64_t(spans.size())) {
      locate(text, capacity, first, spans);
      fail("import", "{}: events {} to {} cannot be read: the JSON parser stopped early", t_.file, index,
           first + int64_t(spans.size()) - 1);
    }
  }

 private:
  [[noreturn]] void broken(simdjson::error_code e, std::string_view where) {
    fail("import", "{}: {} cannot be read: {}", t_.file, where, simdjson::error_message(e));
  }
  [[noreturn]] void bad_event(int64_t index, simdjson::error_code e) { broken(e, fmt::format("event {}", index)); }

  // The first event of a batch that does not parse on its own, named; the batch was
  // refused as a whole.
  void locate(const char* text, size_t capacity, int64_t first, const std::vector<std::pair<uint32_t, uint32_t>>& spans) {
    od::parser one;
    for (size_t k = 0; k < spans.size(); ++k) {
      od::document doc;
      simdjson::padded_string_view view(text + spans[k].first, spans[k].second - spans[k].first,
                                        capacity - spans[k].first);
      simdjson::error_code e = one.iterate(view).get(doc);
      std::string_view raw;
      if (!e) e = doc.raw_json().get(raw);
      if (e) bad_event(first + int64_t(k), e);
    }
  }

  uint32_t cached(std::string_view s, std::string_view& last, uint32_t& id) {
    if (id && s == last) return id;
    id = t_.strings.intern(s);
    last = t_.strings[id];
    return id;
  }

  void event(od::value& v, int64_t index) {
    od::object obj;
    if (auto e = v.get_object().get(obj)) {
      if (t_.legacy_array && index == 0)
        fail("import", "{}: not a torch.profiler trace: the array's first element is not an event object", t_.file);
      if (e != simdjson::INCORRECT_TYPE) bad_event(index, e);
      // A number, string, null or list among the events (a writer's stray value): no event.
      t_.warnings.add("values that are no event object skipped", index);
      return;
    }
    RawEvent r;
    r.index = uint32_t(index);
    bool has_ts = false, has_dur = false, dur_ok = true;
    std::string_view ph;
    uint32_t meta_name = 0;
    std::vector<std::string> dim_list, type_list;
    std::string grid, block, registers, shared, occupancy;
    std::string collective, msg_in, msg_out, msg_dtype, group;
    try {
      for (auto fr : obj) {
        od::field f;
        if (auto e = std::move(fr).get(f)) bad_event(index, e);
        std::string_view k = key_text(f);
        od::value val = f.value();
        if (is(k, "ph")) {
          ph = token(val);
        } else if (is(k, "ts")) {
          has_ts = micros(val, r.ts);
        } else if (is(k, "dur")) {
          has_dur = true;
          dur_ok = micros(val, r.dur);
        } else if (is(k, "name")) {
          std::string_view s;
          if (val.get_string().get(s) != simdjson::SUCCESS) s = token(val);
          r.name = t_.strings.intern(s);
        } else if (is(k, "cat")) {
          std::string_view s;
          if (val.get_string().get(s) != simdjson::SUCCESS) s = token(val);
          r.cat = cached(s, last_cat_, last_cat_id_);
        } else if (is(k, "pid")) {
          r.pid = cached(token(val), last_pid_, last_pid_id_);
        } else if (is(k, "tid")) {
          r.tid = cached(token(val), last_tid_, last_tid_id_);
        } else if (is(k, "id")) {
          r.flow_id = integer(val);
        } else if (is(k, "args")) {
          od::object args;
          if (val.get_object().get(args) != simdjson::SUCCESS) continue;
          for (auto ar : args) {
            od::field a;
            if (auto e = std::move(ar).get(a)) bad_event(index, e);
            std::string_view ak = key_text(a);
            od::value av = a.value();
            if (is(ak, "correlation")) r.correlation = integer(av);
            else if (is(ak, "External id")) r.external_id = integer(av);
            else if (is(ak, "external id")) r.external_id_lower = integer(av);
            else if (is(ak, "device")) r.device = integer(av);
            else if (is(ak, "stream")) r.stream = integer(av);
            else if (is(ak, "bytes")) r.bytes = integer(av);
            else if (is(ak, "Bytes")) r.bytes = integer(av);
            else if (is(ak, "memory bandwidth (GB/s)")) r.bandwidth_gbps = float(real(av, -1));
            else if (is(ak, "Addr")) r.addr = integer(av);
            else if (is(ak, "Total Allocated")) r.total_allocated = integer(av);
            else if (is(ak, "Device Type")) r.device_type = int32_t(integer(av));
            else if (is(ak, "Device Id")) r.device_id = int32_t(integer(av));
            else if (is(ak, "Input Dims")) {
              od::array dl;
              if (av.get_array().get(dl) == simdjson::SUCCESS)
                for (auto d : dl) {
                  od::value dv;
                  if (auto e = std::move(d).get(dv)) bad_event(index, e);
                  dim_list.push_back(list_text(dv, '(', ')', ", "));
                }
            } else if (is(ak, "Input type")) {
              od::array tl;
              if (av.get_array().get(tl) == simdjson::SUCCESS)
                for (auto d : tl) {
                  od::value tv;
                  if (auto e = std::move(d).get(tv)) bad_event(index, e);
                  std::string_view s;
                  if (tv.get_string().get(s) != simdjson::SUCCESS) s = token(tv);
                  type_list.emplace_back(dtype_name(s));
                }
            } else if (is(ak, "grid")) grid = "grid " + list_text(av, '[', ']', ",") + " ";
            else if (is(ak, "block")) block = "block " + list_text(av, '[', ']', ",") + " ";
            else if (is(ak, "registers per thread")) registers = std::string(token(av)) + " registers/thread ";
            else if (is(ak, "shared memory")) shared = std::string(token(av)) + " B shared ";
            else if (is(ak, "est. achieved occupancy %")) occupancy = std::string(token(av)) + "% occupancy";
            else if (is(ak, "Collective name")) collective = std::string(token(av));
            else if (is(ak, "In msg nelems")) msg_in = fmt::format(", in {} elements", token(av));
            else if (is(ak, "Out msg nelems")) msg_out = fmt::format(", out {} elements", token(av));
            else if (is(ak, "dtype")) msg_dtype = fmt::format(", {}", token(av));
            else if (is(ak, "Group size")) group = fmt::format(", group of {}", token(av));
            else if (is(ak, "name")) {
              std::string_view s;
              if (av.get_string().get(s) != simdjson::SUCCESS) s = token(av);
              meta_name = t_.strings.intern(s);
            }
          }
        }
      }
    } catch (const ListTooDeep&) {
      fail("import", "{}: event {}: its args hold lists nested deeper than {} levels", t_.file, index, kMaxListDepth);
    } catch (const BadListElement& bad) {
      bad_event(index, bad.error);
    }
    if (ph.size() != 1) {
      t_.warnings.add(ph.empty() ? "events with no phase (ph) skipped" : fmt::format(kPhase, ph), index);
      return;
    }
    r.ph = ph[0];
    if (r.ph == 'M') {
      ++t_.metadata_events;
      if (t_.strings[r.name] == "thread_name" && meta_name) t_.thread_names[{r.pid, r.tid}] = t_.strings[meta_name];
      return;
    }
    if (r.ph == 'C') return;  // counters: nothing opscope shows
    if (r.ph == 'I') r.ph = 'i';
    if (r.ph != 'X' && r.ph != 'i' && r.ph != 's' && r.ph != 'f' && r.ph != 't') {
      t_.warnings.add(fmt::format(kPhase, ph), index);
      return;
    }
    if (!has_ts) {
      t_.warnings.add("events with no usable ts (missing, no number, or past ±4e15 µs) skipped", index);
      return;
    }
    if (r.ph == 'X') {
      if (!dur_ok || r.dur < 0) {
        t_.warnings.add("events with dur < 0 (or no number, or past 4e15 µs) skipped", index);
        return;
      }
      if (!has_dur) t_.warnings.add("complete events with no dur read as instants", index);
    } else {
      r.dur = 0;
    }
    // Each category's name is matched once, then by its interned id.
    if (r.cat >= category_of_.size()) category_of_.resize(t_.strings.size(), -1);
    if (category_of_[r.cat] < 0) {
      bool old = false;
      category_of_[r.cat] = int16_t(category_of(t_.strings[r.cat], old));
      t_.old_names = t_.old_names || old;
    }
    r.category = Category(category_of_[r.cat]);
    if (r.category == Category::none && t_.strings[r.name] == "[memory]") r.category = Category::cpu_instant;
    if (!dim_list.empty() || !type_list.empty()) {
      std::string s = "[";
      for (size_t i = 0; i < std::max(dim_list.size(), type_list.size()); ++i) {
        if (i) s += ", ";
        s += i < dim_list.size() ? dim_list[i] : "()";
        if (i < type_list.size() && !type_list[i].empty()) s += " " + type_list[i];
      }
      r.detail = t_.strings.intern(s + "]");
    }
    std::string launch_config = grid + block + registers + shared + occupancy;
    if (!launch_config.empty()) r.detail = t_.strings.intern(trim(launch_config));
    if (!collective.empty())
      r.detail = t_.strings.intern("collective " + collective + msg_in + msg_out + msg_dtype + group);
    t_.events.push_back(r);
  }

  void device_properties(od::value& v) {
    od::array a;
    if (v.get_array().get(a) != simdjson::SUCCESS) return;
    for (auto gr : a) {
      od::value g;
      od::object o;
      if (auto e = std::move(gr).get(g)) broken(e, "deviceProperties");
      if (g.get_object().get(o) != simdjson::SUCCESS) continue;
      GpuProperties p;
      for (auto fr : o) {
        od::field f;
        if (auto e = std::move(fr).get(f)) broken(e, "deviceProperties");
        std::string_view k = key_text(f);
        od::value x = f.value();
        if (is(k, "id")) p.id = integer(x);
        else if (is(k, "name")) p.name = std::string(token(x));
        else if (is(k, "totalGlobalMem")) p.total_memory = integer(x);
        else if (is(k, "computeMajor")) p.compute_major = integer(x);
        else if (is(k, "computeMinor")) p.compute_minor = integer(x);
        else if (is(k, "numSms")) p.num_sms = integer(x);
      }
      t_.gpus.push_back(std::move(p));
    }
  }

  void distributed_info(od::value& v) {
    od::object o;
    if (v.get_object().get(o) != simdjson::SUCCESS) return;
    for (auto fr : o) {
      od::field f;
      if (auto e = std::move(fr).get(f)) broken(e, "distributedInfo");
      std::string_view k = key_text(f);
      od::value x = f.value();
      if (is(k, "rank")) t_.rank = integer(x);
      else if (is(k, "world_size")) t_.world_size = integer(x);
      else if (is(k, "backend")) t_.backend = std::string(token(x));
    }
  }

  RawTrace& t_;
  od::parser parser_;
  std::vector<int16_t> category_of_;  // by category string id; -1: not matched yet
  std::string_view last_cat_, last_pid_, last_tid_;
  uint32_t last_cat_id_ = 0, last_pid_id_ = 0, last_tid_id_ = 0;
};

}  // namespace

RawTrace read_kineto_from(ByteSource& in, size_t window) {
  RawTrace t;
  t.file = in.name();
  // torch writes 150-400 bytes per event; a generous guess costs only address space
  // (pages never touched are not resident), where growing would copy the events.
  t.events.reserve(in.size_hint() / 128);
  Reader reader(t);
  SplitResult r = split_trace(in, reader, simdjson::SIMDJSON_PADDING, window);
  t.legacy_array = r.legacy_array;
  return t;
}

RawTrace read_kineto(const std::string& path, size_t window) {
  TraceFile f(path);
  return read_kineto_from(f, window);
}

}  // namespace opscope::importer
