// torch.profiler traces (.json) as `opscope import|table|explore` open them: the whole
// import (splitter, reader, links, conversion), then every explorer view of the result.
// The same bytes also go through the reader with a 64-byte window read 7 bytes at a
// time, which must find what the one-window read finds: a trace that fails one way and
// loads the other, or loads a different number of events, is a finding.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "opscope/importer/import.h"
#include "opscope/importer/json_splitter.h"
#include "opscope/importer/kineto_reader.h"
#include "opscope/importer/trace_file.h"

using namespace opscope;

namespace {

// Events read (or -1 on an error) with the given window and read size.
int64_t events_read(std::string_view bytes, size_t window, size_t max_read) {
  importer::MemorySource in("trace.json", bytes, max_read);
  int64_t n = -1;
  fuzz::clear_errors_only("kineto reader", [&] {
    importer::RawTrace raw = importer::read_kineto_from(in, window);
    n = int64_t(raw.events.size()) + raw.metadata_events;
  });
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::Scratch scratch;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  prof::Trace trace;
  bool ok = fuzz::clear_errors_only("import", [&] {
    trace = importer::import_traces({scratch.write("trace.json", bytes)}).trace;
  });
  if (ok) fuzz::serve_every_view(std::move(trace));

  int64_t whole = events_read(bytes, importer::kDefaultWindow, SIZE_MAX);
  int64_t pieces = events_read(bytes, 64, 7);
  if (whole != pieces)
    fuzz::finding("a 64-byte window read " + std::to_string(pieces) + " events where one window read " +
                  std::to_string(whole) + " (-1: an error)");
  return 0;
}
