#include "opscope/explorer/access.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "opscope/core/error.h"

namespace opscope::explorer {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = char(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = char(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

}  // namespace

bool is_loopback_bind(std::string_view host) {
  return host == "127.0.0.1" || iequals(host, "localhost") || host == "::1" || host == "[::1]";
}

bool is_local_host_header(std::string_view host, int port) {
  std::string_view name = host, rest;
  if (host.rfind("[::1]", 0) == 0) {
    name = host.substr(0, 5), rest = host.substr(5);
  } else if (size_t colon = host.find(':'); colon != std::string_view::npos) {
    name = host.substr(0, colon), rest = host.substr(colon);
  }
  if (name != "127.0.0.1" && name != "[::1]" && !iequals(name, "localhost")) return false;
  // Exactly the served port when one is written: ":08642" or ":" alone are not it.
  if (rest.empty()) return true;
  return port > 0 && rest[0] == ':' && rest.substr(1) == std::to_string(port);
}

std::string new_access_token() {
  unsigned char bytes[24];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("explore", "cannot make an access token: getrandom failed: {}", std::strerror(errno));
    got += size_t(n);
  }
  static const char hex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) token += hex[b >> 4], token += hex[b & 15];
  return token;
}

std::string_view request_token(std::string_view query_token, std::string_view authorization) {
  for (std::string_view scheme : {"token ", "bearer "}) {
    if (authorization.size() > scheme.size() && iequals(authorization.substr(0, scheme.size()), scheme)) {
      std::string_view t = authorization.substr(scheme.size());
      while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
      while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
      return t;
    }
  }
  return query_token;
}

bool token_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace opscope::explorer
