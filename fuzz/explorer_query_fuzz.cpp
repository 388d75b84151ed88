// The explorer's API with its query parameters, straight into ExplorerApi::get (what
// httplib hands it after decoding): the first line is the path, each further line a
// parameter "key=value" (a repeated key is kept twice, as httplib keeps it). Rule: the
// answer is 200, 400, 404 or 409 with an object body; 500 means an exception escaped a
// view (a parameter parsed loosely, an index unchecked).
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "opscope/explorer/synthetic.h"

using namespace opscope;
using namespace opscope::explorer;

namespace {

const ExplorerApi& api() {
  static const ExplorerApi* a = [] {
    SyntheticSpec big;
    big.events = 2000;
    big.threads = 2;
    return new ExplorerApi({std::make_shared<Profile>("naive", "s", synthetic_rmsnorm("naive", 4, 64, 2, 2)),
                            std::make_shared<Profile>("compiled", "s", synthetic_rmsnorm("compiled", 4, 64, 2, 2)),
                            std::make_shared<Profile>("steps", "s", synthetic_trace(big)),
                            Profile::failed("broken", "x", "[profile] x: corrupt")});
  }();
  return *a;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t nl = text.find('\n');
  std::string path(text.substr(0, nl));
  Params params;
  while (nl != std::string_view::npos) {
    text.remove_prefix(nl + 1);
    nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    size_t eq = line.find('=');
    params.emplace(std::string(line.substr(0, eq)), eq == std::string_view::npos ? "" : std::string(line.substr(eq + 1)));
  }
  ApiResponse r = api().get(path, params);
  if (r.status != 200 && r.status != 400 && r.status != 404 && r.status != 409)
    fuzz::finding(path + " answered " + std::to_string(r.status) + ": " + r.body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (!r.body.is_object()) fuzz::finding(path + " answered a body that is no object");
  return 0;
}
