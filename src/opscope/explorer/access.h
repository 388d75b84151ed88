// Who may read the explorer. On a loopback address (the default) only a browser on this
// machine that names it as such: the Host header must be exactly 127.0.0.1, localhost or
// [::1] (with no port or the port served), so a web page cannot reach the server through
// DNS rebinding (`127.attacker.example`, `127.0.0.1.nip.io`). On any other address anyone
// on the network can connect, so, as Jupyter does, every API request must carry a random
// access token that the server prints in its URL.
#pragma once
#include <string>
#include <string_view>

namespace opscope::explorer {

// Whether binding `host` serves only this machine: 127.0.0.1, localhost or ::1 ([::1]).
// Any other address (0.0.0.0, a LAN address, another 127.x) needs a token.
bool is_loopback_bind(std::string_view host);

// Whether a Host header names this machine's loopback as a browser on it writes it:
// 127.0.0.1, localhost (any case) or [::1], then nothing or ":<port>" with the served port.
bool is_local_host_header(std::string_view host, int port);

// A fresh access token: 48 hex digits (192 bits) from the kernel's random source.
// Throws "[explore] ..." when the kernel gives no random bytes.
std::string new_access_token();

// The token a request carries, from its query parameter `token=` or its Authorization
// header ("token <t>", Jupyter's form, or "Bearer <t>"); "" when none. `query_token` is
// the parameter's value, `authorization` the header's.
std::string_view request_token(std::string_view query_token, std::string_view authorization);

// a == b in time that depends only on their lengths (no early exit an attacker can time).
bool token_equal(std::string_view a, std::string_view b);

}  // namespace opscope::explorer
