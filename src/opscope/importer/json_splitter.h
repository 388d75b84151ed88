// Streaming a trace file's JSON in bounded memory: a light scan (strings, nesting,
// commas) over a window of the file finds the top level — the root object's keys, or
// the legacy root array — and each event of traceEvents; complete events go to the
// JSON parser in batches of a few MB, in place. Memory: the window (32 MB, more only
// for an event larger than that) and the parser's batch, whatever the file's size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "opscope/importer/trace_file.h"

namespace opscope::importer {

class TraceParts {
 public:
  virtual ~TraceParts() = default;
  // The root is an array of events (the legacy form), before any of them.
  virtual void root_is_array() = 0;
  // A value of the root object other than traceEvents, whole: "[...]", "{...}", "123".
  virtual void root_value(std::string_view key, std::string_view json) = 0;
  // Events first .. first + spans.size() - 1 as one JSON array in text[0, len), with
  // capacity - len >= padding readable bytes after it; spans: each event's [begin, end)
  // in text (to find the one that does not parse).
  virtual void events(const char* text, size_t len, size_t capacity, int64_t first,
                      const std::vector<std::pair<uint32_t, uint32_t>>& spans) = 0;
};

struct SplitResult {
  bool legacy_array = false;  // the root is an array of events
  int64_t events = 0;
};

// Errors ("[import] <file>: ..."): an empty file, text that is no JSON (checked here for
// the structure; values are checked by the parser), a root that is no trace (a scalar,
// an object without traceEvents, traceEvents no array), a file that ends early ("event
// N cannot be read: the file ends inside it"), text after the root value.
// `window`: the bytes read at a time (tests make it tiny to cross every boundary).
constexpr size_t kDefaultWindow = size_t(32) << 20;
SplitResult split_trace(ByteSource& in, TraceParts& out, size_t padding, size_t window = kDefaultWindow);

}  // namespace opscope::importer
