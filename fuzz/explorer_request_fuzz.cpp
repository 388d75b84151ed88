// The explorer's HTTP front: raw request bytes (one connection, keep-alive requests
// included) through httplib's parsing, the guards (method, target size, Host, rate
// limit, token) and the handlers, with no socket (ExplorerServer::answer). The first byte
// picks the server: loopback, or on a network address with an access token. Rules: an
// answer is HTTP; the networked server never shows a profile to input that lacks its
// token (literally, or percent-encoded: then the input holds a '%').
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fuzz_util.h"
#include "opscope/explorer/server.h"
#include "opscope/explorer/synthetic.h"

using namespace opscope;
using namespace opscope::explorer;

namespace {

constexpr const char* kLabel = "fuzz-label-7f3a";  // appears in answers only with the profile
constexpr const char* kToken = "c0ffee00c0ffee00c0ffee00";

ExplorerServer& server(bool networked) {
  auto make = [](bool net) {
    auto naive = std::make_shared<Profile>(kLabel, "synthetic", synthetic_rmsnorm("naive", 4, 64, 1, 2));
    auto compiled = std::make_shared<Profile>("compiled", "synthetic", synthetic_rmsnorm("compiled", 4, 64, 1, 2));
    ExploreOptions o;
    o.requests_per_second = 0;  // no limit: each input starts afresh
    if (net) o.host = "192.0.2.1", o.token = kToken;
    return new ExplorerServer({naive, compiled, Profile::failed("broken", "x", "[profile] x: corrupt")}, o);
  };
  static ExplorerServer* loopback = make(false);
  static ExplorerServer* networked_server = make(true);
  return networked ? *networked_server : *loopback;
}

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool networked = data[0] & 1;
  std::string_view request(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string answer = server(networked).answer(request);
  if (!answer.empty() && answer.rfind("HTTP/1.1 ", 0) != 0) fuzz::finding("an answer that is not HTTP: " + answer.substr(0, 80));
  if (networked && contains(answer, kLabel) && !contains(request, kToken) && !contains(request, "%"))
    fuzz::finding("the networked server showed a profile to a request without its token");
  return 0;
}
