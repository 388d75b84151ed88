// trace.json: a collected Trace in the Chrome trace event format, which Perfetto UI
// (ui.perfetto.dev) and chrome://tracing open.
//
// Layout: process "host" with one track per host thread (framework ops and ranges) and,
// beside each, a "runtime (<thread>)" track with that thread's launches, syncs, allocs
// and frees; one process per device with one track per core (kernel slices) and an
// "allocated bytes" counter. Flow arrows go op -> launch -> each kernel slice.
// Timestamps are microseconds with three decimals (exact ns) since Trace::base_time_ns,
// which "otherData" keeps with the schema version, config, devices and dropped counts.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "opscope/profiler/trace.h"

namespace opscope {
class StreamFile;
}

namespace opscope::prof {

// Streams `trace` as Chrome trace JSON to `out`. Throws Error on a malformed trace
// (an event's track out of range) or a failed write.
void write_chrome_trace(const Trace& trace, std::FILE* out);
// The same into a StreamFile (the fast path of save_chrome_trace and export_profile).
void write_chrome_trace(const Trace& trace, StreamFile& out);
// The same document as a string (tests, small traces).
std::string chrome_trace_json(const Trace& trace);
// Writes the document to `path` atomically (temp file + rename).
void save_chrome_trace(const Trace& trace, const std::string& path);

// Appends `s` as a JSON string literal, quotes included: `"` `\` and control characters
// escaped, valid UTF-8 passed through, each ill-formed UTF-8 subsequence -> U+FFFD.
void append_json_string(std::string& out, std::string_view s);
// Appends `ns` as microseconds with exactly three decimals: 1234567 -> "1234.567".
void append_us(std::string& out, int64_t ns);

}  // namespace opscope::prof
