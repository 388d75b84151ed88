// torch.profiler's `*.pt.trace.json.gz`: input that starts with gzip's magic is written as
// it is (corrupt, truncated, concatenated or padded streams reach zlib's reader); any
// other input is gzipped first, so its JSON goes through the inflating reader.
#include <zlib.h>

#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "opscope/importer/import.h"

using namespace opscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::Scratch scratch;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::string path;
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
    path = scratch.write("trace.json.gz", bytes);
  } else {
    path = scratch.path("trace.json.gz");
    gzFile gz = gzopen(path.c_str(), "wb1");
    if (!gz) fuzz::finding("cannot write " + path);
    if (size) gzwrite(gz, data, unsigned(size));
    gzclose(gz);
  }
  prof::Trace trace;
  fuzz::clear_errors_only("import .json.gz", [&] { trace = importer::import_traces({path}).trace; });
  return 0;
}
