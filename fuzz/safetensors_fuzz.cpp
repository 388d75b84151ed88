// safetensors files (models/safetensors.h): the header's checks, then every tensor it
// lists read onto the CPU device, one by one and all at once.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "fuzz_util.h"
#include "opscope/models/safetensors.h"

using namespace opscope;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("OPSCOPE_CPU_CORES", "1", 1);  // one worker: the reads are what is fuzzed
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::Scratch scratch;
  const std::string path = scratch.write("model.safetensors", {reinterpret_cast<const char*>(data), size});
  fuzz::clear_errors_only("safetensors", [&] {
    models::SafetensorsFile f = models::SafetensorsFile::open(path);
    for (const models::SafetensorInfo& t : f.tensors()) {
      Tensor x = f.load(t.name);
      if (!(x.shape() == t.shape) || x.dtype() != t.dtype) fuzz::finding("tensor '" + t.name + "' loaded with another shape or dtype");
    }
    models::load_safetensors(path);
  });
  return 0;
}
