#include "opscope/importer/json_splitter.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>

#include "opscope/core/error.h"

namespace opscope::importer {

namespace {

constexpr size_t kBatch = size_t(4) << 20;

bool space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Whether `head` (the start of a file whose root is no object or array) is a JSON scalar.
bool json_scalar(std::string_view head) {
  simdjson::padded_string p(head);
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (parser.iterate(p).get(doc) != simdjson::SUCCESS) return false;
  simdjson::ondemand::json_type t;
  if (doc.type().get(t) != simdjson::SUCCESS) return false;
  switch (t) {
    case simdjson::ondemand::json_type::number: return doc.get_double().error() == simdjson::SUCCESS;
    case simdjson::ondemand::json_type::string: return doc.get_string().error() == simdjson::SUCCESS;
    case simdjson::ondemand::json_type::boolean: return doc.get_bool().error() == simdjson::SUCCESS;
    case simdjson::ondemand::json_type::null: return doc.is_null().value_unsafe();
    default: return false;
  }
}

class Splitter {
 public:
  // One spare byte past the padding: a batch may end at the window's last byte.
  Splitter(ByteSource& in, TraceParts& out, size_t padding, size_t window)
      : in_(in), out_(out), padding_(padding + 1), cap_(std::max<size_t>(window, 16)) {}

  SplitResult run() {
    buf_.reset(new char[cap_ + padding_]);
    fill();
    if (end_ == 0) fail("import", "{}: the file is empty", file());
    for (;;) {
      if (pos_ == end_) {
        if (!refill()) break;
        continue;
      }
      if (in_string_) {
        scan_string();
        continue;
      }
      if (elem_active_ && depth_ > events_depth_) {  // inside an event: only nesting and strings matter
        inside_event();
        continue;
      }
      step(buf_[pos_]);
      ++pos_;
    }
    finish();
    return result_;
  }

 private:
  enum class Root { unknown, object, array, done };
  enum class Phase { want_key, in_key, want_colon, want_value, in_value, in_events, want_comma };

  const std::string& file() const { return in_.name(); }
  [[noreturn]] void not_json(std::string_view what) {
    fail("import", "{}: not JSON ({} at byte {})", file(), what, consumed_ + pos_);
  }

  size_t fill() {
    size_t got = 0;
    while (end_ < cap_) {
      size_t n = in_.read(buf_.get() + end_, cap_ - end_);
      if (n == 0) break;
      end_ += n;
      got += n;
    }
    std::memset(buf_.get() + end_, 0, padding_);
    return got;
  }

  // Moves what is still needed to the front and reads more; false at the end of input.
  bool refill() {
    flush();
    size_t keep = pos_ > 0 ? pos_ - 1 : 0;  // one byte before the next event, for its '['
    if (elem_active_) keep = std::min(keep, elem_start_ - 1);
    if (phase_ == Phase::in_value || phase_ == Phase::want_value) keep = std::min(keep, value_start_);
    if (phase_ == Phase::in_key || in_key_string_) keep = std::min(keep, key_start_);
    if (keep == 0 && end_ == cap_) {  // one item fills the window: a larger one
      std::unique_ptr<char[]> bigger(new char[2 * cap_ + padding_]);
      std::memcpy(bigger.get(), buf_.get(), end_);
      buf_ = std::move(bigger);
      cap_ *= 2;
    } else if (keep > 0) {
      std::memmove(buf_.get(), buf_.get() + keep, end_ - keep);
      end_ -= keep;
      pos_ -= keep;
      consumed_ += keep;
      elem_start_ -= std::min(elem_start_, keep);
      value_start_ -= std::min(value_start_, keep);
      key_start_ -= std::min(key_start_, keep);
      string_start_ -= std::min(string_start_, keep);
    }
    return fill() > 0;
  }

  // The bulk of the bytes: inside an event, outside its strings.
  void inside_event() {
    static const auto kStructural = [] {
      std::array<bool, 256> t{};
      for (char c : std::string_view("\"{}[]")) t[uint8_t(c)] = true;
      return t;
    }();
    const char* b = buf_.get();
    size_t p = pos_, end = end_;  // locals: the loop keeps them in registers
    while (p < end && !kStructural[uint8_t(b[p])]) ++p;
    pos_ = p;
    if (p == end) return;
    char c = b[pos_];
    if (c == '"') {
      open_string();
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else {
      --depth_;
      if (depth_ == events_depth_) end_element(pos_ + 1);
    }
    ++pos_;
  }

  // Inside a string: to its closing quote (not escaped by an odd run of backslashes).
  void scan_string() {
    const char* b = buf_.get();
    while (pos_ < end_) {
      // Most strings are short keys: look a few bytes ahead before calling memchr.
      const size_t stop = std::min(end_, pos_ + 16);
      size_t ahead = pos_;
      while (ahead < stop && b[ahead] != '"') ++ahead;  // a local: stays in a register
      const void* q = ahead < stop ? b + ahead : std::memchr(b + pos_, '"', end_ - pos_);
      if (!q) {
        pos_ = end_;
        return;
      }
      size_t at = size_t(static_cast<const char*>(q) - b);
      size_t slashes = 0;
      while (at - slashes > string_start_ && b[at - slashes - 1] == '\\') ++slashes;
      pos_ = at + 1;
      if (slashes % 2 == 0) {
        in_string_ = false;
        if (in_key_string_) {
          in_key_string_ = false;
          key_.assign(b + key_start_ + 1, at - key_start_ - 1);
          phase_ = Phase::want_colon;
        }
        return;
      }
    }
  }

  void begin_element() {
    elem_active_ = true;
    elem_start_ = pos_;
  }
  void end_element(size_t end) {
    elem_active_ = false;
    want_comma_ = true;
    if (batch_.empty()) batch_first_ = result_.events;
    batch_.emplace_back(uint32_t(elem_start_), uint32_t(end));
    ++result_.events;
    if (end - batch_.front().first >= kBatch) flush();
  }
  // Hands the complete events to the parser as "[e,...,e]", written over the bytes
  // around them (restored after).
  void flush() {
    if (batch_.empty()) return;
    char* b = buf_.get();
    size_t first = batch_.front().first - 1, last = batch_.back().second;
    std::vector<std::pair<uint32_t, uint32_t>> spans;
    spans.reserve(batch_.size());
    for (auto [s, e] : batch_) spans.emplace_back(uint32_t(s - first), uint32_t(e - first));
    char before = b[first], after = b[last];
    b[first] = '[';
    b[last] = ']';
    try {
      out_.events(b + first, last + 1 - first, cap_ + padding_ - first, batch_first_, spans);
    } catch (...) {
      b[first] = before, b[last] = after;
      throw;
    }
    b[first] = before;
    b[last] = after;
    batch_.clear();
  }

  void step(char c) {
    if (space(c)) return;
    if (root_ == Root::unknown) {
      if (c == '{') root_ = Root::object, phase_ = Phase::want_key;
      else if (c == '[') root_ = Root::array, result_.legacy_array = true, events_depth_ = 1, out_.root_is_array();
      else root_scalar();
      depth_ = 1;
      return;
    }
    if (root_ == Root::done) not_json("text follows the end of the JSON value");
    const bool events_level = depth_ == events_depth_;
    if (events_level && !elem_active_) {
      if (c == ']') {
        close_events();
        return;
      }
      // Commas between events are checked here, not left to the parser: a batch may end
      // between two events, and the parser would never see what lies between them.
      if (c == ',') {
        if (!seen_element_) not_json("',' before the first event");
        if (!want_comma_) not_json("two ',' in a row between events");
        want_comma_ = false;
        return;
      }
      if (want_comma_) not_json("expected ',' or ']' after an event");
      seen_element_ = true;
      begin_element();
    }
    if (events_level && elem_active_ && (c == ',' || c == ']')) {  // a scalar element ends
      end_element(pos_);
      want_comma_ = false;
      if (c == ']') close_events();
      return;
    }
    if (depth_ == 1 && root_ == Root::object) {
      root_step(c);
      return;
    }
    if (c == '"') {
      open_string();
      return;
    }
    if (c == '{' || c == '[') {
      ++depth_;
      return;
    }
    if (c == '}' || c == ']') {
      --depth_;
      if (elem_active_ && depth_ == events_depth_) end_element(pos_ + 1);
      else if (depth_ == 1 && phase_ == Phase::in_value) end_value(pos_ + 1);
    }
  }

  void open_string() {
    in_string_ = true;
    string_start_ = pos_;
  }

  // The root object's own syntax: "key": value, ...
  void root_step(char c) {
    switch (phase_) {
      case Phase::want_key:
        if (c == '}' && !seen_key_) return finish_root();
        if (c != '"') not_json("expected a key in the top-level object");
        seen_key_ = true;
        key_start_ = pos_;
        in_key_string_ = true;
        phase_ = Phase::in_key;
        open_string();
        return;
      case Phase::want_colon:
        if (c != ':') not_json("expected ':' after a key");
        phase_ = Phase::want_value;
        value_start_ = pos_ + 1;
        return;
      case Phase::want_value:
        value_start_ = pos_;
        if (key_ == "traceEvents") {
          if (c != '[') fail("import", "{}: not a torch.profiler trace: traceEvents is not an array", file());
          saw_events_ = true;
          events_depth_ = 2;
          depth_ = 2;
          phase_ = Phase::in_events;
          return;
        }
        phase_ = Phase::in_value;
        if (c == '"') open_string();
        else if (c == '{' || c == '[') ++depth_;
        return;
      case Phase::in_value:  // a scalar value ends
        if (c == ',' || c == '}') {
          end_value(pos_);
          if (c == '}') finish_root();
          else phase_ = Phase::want_key;
        }
        return;
      case Phase::want_comma:
        if (c == ',') phase_ = Phase::want_key;
        else if (c == '}') finish_root();
        else not_json("expected ',' or '}' in the top-level object");
        return;
      case Phase::in_key:
      case Phase::in_events: return;
    }
  }

  void end_value(size_t end) {
    std::string_view v(buf_.get() + value_start_, end - value_start_);
    while (!v.empty() && space(v.back())) v.remove_suffix(1);
    out_.root_value(key_, v);
    phase_ = Phase::want_comma;
  }

  void close_events() {
    flush();
    events_depth_ = -1;
    --depth_;
    if (root_ == Root::array) root_ = Root::done, depth_ = 0;
    else phase_ = Phase::want_comma;
  }

  void finish_root() {
    root_ = Root::done;
    depth_ = 0;
  }

  void root_scalar() {
    std::string_view head(buf_.get() + pos_, std::min<size_t>(end_ - pos_, 1 << 20));
    if (!json_scalar(head)) not_json("the text is no JSON value");
    fail("import", "{}: not a torch.profiler trace: the JSON is neither an object with traceEvents nor an array of "
                   "events", file());
  }

  void finish() {
    if (root_ == Root::unknown) fail("import", "{}: not JSON (only white space)", file());
    if (root_ != Root::done) {
      if (events_depth_ > 0)
        fail("import", "{}: event {} cannot be read: the file ends inside it (a truncated file?)", file(), result_.events);
      fail("import", "{}: not JSON: the file ends inside the top-level {} (a truncated file?)", file(),
           root_ == Root::object ? "object" : "array");
    }
    if (root_ == Root::done && !result_.legacy_array && !saw_events_)
      fail("import", "{}: not a torch.profiler trace: the JSON object has no traceEvents array", file());
  }

  ByteSource& in_;
  TraceParts& out_;
  size_t padding_;
  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0, end_ = 0, pos_ = 0, consumed_ = 0;
  Root root_ = Root::unknown;
  Phase phase_ = Phase::want_key;
  int depth_ = 0, events_depth_ = -1;
  bool in_string_ = false, in_key_string_ = false, elem_active_ = false, seen_element_ = false, seen_key_ = false,
       saw_events_ = false, want_comma_ = false;
  size_t string_start_ = 0, key_start_ = 0, value_start_ = 0, elem_start_ = 0;
  std::string key_;
  std::vector<std::pair<size_t, size_t>> batch_;
  int64_t batch_first_ = 0;
  SplitResult result_;
};

}  // namespace

SplitResult split_trace(ByteSource& in, TraceParts& out, size_t padding, size_t window) {
  return Splitter(in, out, padding, window).run();
}

}  // namespace opscope::importer
