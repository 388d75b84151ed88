// Reading a torch.profiler trace file into memory: `.json` as it is, `.json.gz`
// (torch.profiler's `*.pt.trace.json.gz`) inflated with zlib. The JSON parser reads past
// the end of its input in 64-byte blocks, so the buffer keeps `padding` spare bytes.
#pragma once
#include <cstddef>
#include <string>

namespace opscope::importer {

// The bytes of the (inflated) file, with capacity() >= size() + padding. Errors
// ("[import] <path>: ..."): missing or unreadable file, a gzip stream that is corrupt or
// ends early (a truncated download), an empty file.
std::string read_trace_file(const std::string& path, size_t padding);

// Whether `path` names a trace file by its extension (.json, .json.gz).
bool is_trace_file_name(const std::string& path);

}  // namespace opscope::importer
