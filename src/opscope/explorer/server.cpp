#include "opscope/explorer/server.h"

#include "opscope/explorer/httplib.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string_view>

#include "opscope/core/error.h"
#include "opscope/explorer/api.h"
#include "opscope/explorer/assets.h"
#include "opscope/explorer/rate_limit.h"

namespace opscope::explorer {

using nlohmann::json;

namespace {

constexpr int kPortTries = 32;  // ports tried after the default one is taken

bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// The Host header's name part: "localhost:8642" → "localhost", "[::1]:80" → "::1".
std::string host_name(const std::string& header) {
  if (!header.empty() && header[0] == '[') {
    size_t close = header.find(']');
    return close == std::string::npos ? header : header.substr(1, close - 1);
  }
  return header.substr(0, header.find(':'));
}

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

// Whether an Accept-Encoding header takes gzip ("gzip", "gzip;q=0.8"; not "gzip;q=0").
bool accepts_gzip(std::string_view header) {
  while (!header.empty()) {
    size_t comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    size_t semi = item.find(';');
    std::string_view token = trim(item.substr(0, semi));
    std::string_view params = semi == item.npos ? "" : trim(item.substr(semi + 1));
    if (token != "gzip" && token != "*") continue;
    bool refused = params.rfind("q=", 0) == 0 && std::strtod(std::string(params.substr(2)).c_str(), nullptr) <= 0;
    if (!refused) return true;
  }
  return false;
}

// gzip at level 1: a few ms for a 0.5 MB timeline answer, under half its size.
bool gzip_fast(std::string_view in, std::string& out) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  out.resize(deflateBound(&z, uLong(in.size())));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = uInt(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END;
}

// Sends `body`, compressed here rather than by httplib: for a client that accepts Brotli
// (every browser) httplib 0.11 compresses at Brotli's slowest quality, which took 0.9 s
// for a whole-profile timeline answer against the explorer's 100 ms budget. A body set
// through a content provider of known length is sent as it is.
void send_body(const httplib::Request& req, httplib::Response& res, std::string body, const char* type) {
  res.set_header("Vary", "Accept-Encoding");
  if (body.empty()) {
    res.set_content(std::string(), type);
    return;
  }
  constexpr size_t kCompressFrom = 1024;
  if (body.size() >= kCompressFrom && accepts_gzip(req.get_header_value("Accept-Encoding"))) {
    std::string packed;
    if (gzip_fast(body, packed)) {
      body.swap(packed);
      res.set_header("Content-Encoding", "gzip");
    }
  }
  auto data = std::make_shared<const std::string>(std::move(body));
  res.set_content_provider(data->size(), type, [data](size_t offset, size_t length, httplib::DataSink& sink) {
    return sink.write(data->data() + offset, std::min(length, data->size() - offset));
  });
}

void send_json(const httplib::Request& req, httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  send_body(req, res, body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

// httplib 0.11 sets SO_REUSEPORT on its listening socket, which lets a second server bind
// a port another one listens on (the kernel then splits connections between them). Only
// SO_REUSEADDR: a restart reuses a port in TIME_WAIT, a live listener refuses the bind.
void listen_socket_options(socket_t sock) {
  int yes = 1;
  setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

// Why host:port cannot be bound, by binding it here the same way (httplib drops errno).
std::string bind_failure(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found)
    return fmt::format("cannot resolve {}", host);
  int err = 0;
  int sock = socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  if (sock < 0) {
    err = errno;
  } else {
    listen_socket_options(sock);
    if (::bind(sock, found->ai_addr, found->ai_addrlen) != 0 || ::listen(sock, 1) != 0) err = errno;
    ::close(sock);
  }
  freeaddrinfo(found);
  if (err == EADDRINUSE) return fmt::format("port {} is in use", port);
  return fmt::format("cannot listen on {}:{}: {}", host, port, err ? std::strerror(err) : "not available");
}

}  // namespace

struct ExplorerServer::Impl {
  Impl(std::vector<ProfilePtr> profiles, ExploreOptions opts)
      : api(std::move(profiles)), options(std::move(opts)),
        limiter(options.requests_per_second, options.burst) {}
  ExplorerApi api;
  ExploreOptions options;
  RateLimiter limiter;
  httplib::Server http;
  int port = -1;

  httplib::Server::HandlerResponse guard(const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET" && req.method != "HEAD") {
      res.set_header("Allow", "GET, HEAD");
      send_json(req, res, 405, {{"error", "only GET is served"}});
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.target.size() > options.max_target_bytes) {
      send_json(req, res, 414, {{"error", "request target too long"}});
      return httplib::Server::HandlerResponse::Handled;
    }
    if (is_loopback(options.host) && req.has_header("Host") &&
        !is_loopback(host_name(req.get_header_value("Host")))) {
      send_json(req, res, 403, {{"error", "this server answers only to localhost"}});
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!limiter.allow(req.remote_addr)) {
      res.set_header("Retry-After", "1");
      send_json(req, res, 429, {{"error", "too many requests"}});
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  }

  void handle(const httplib::Request& req, httplib::Response& res) {
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Referrer-Policy", "no-referrer");
    if (req.path.rfind("/api/", 0) == 0 || req.path == "/api") {
      ApiResponse r = api.get(req.path, req.params);
      send_json(req, res, r.status, r.body);
      return;
    }
    const std::string path = req.path == "/" ? "/index.html" : req.path;
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:");
    if (const opscope_ui_asset* a = find_ui_asset(path)) {
      send_body(req, res, std::string(reinterpret_cast<const char*>(a->data), a->size), a->content_type);
      return;
    }
    if (path == "/index.html") {
      send_body(req, res, std::string(ui_not_built_page()), "text/html; charset=utf-8");
      return;
    }
    res.status = 404;
    send_body(req, res, "not found\n", "text/plain");
  }
};

ExplorerServer::ExplorerServer(std::vector<ProfilePtr> profiles, ExploreOptions options)
    : impl_(std::make_unique<Impl>(std::move(profiles), std::move(options))) {
  auto& s = impl_->http;
  s.set_socket_options(listen_socket_options);
  s.set_payload_max_length(impl_->options.max_body_bytes);
  s.set_read_timeout(5, 0);
  s.set_write_timeout(10, 0);
  s.set_pre_routing_handler([this](const auto& req, auto& res) { return impl_->guard(req, res); });
  s.Get(".*", [this](const auto& req, auto& res) { impl_->handle(req, res); });
  s.set_exception_handler([](const auto& req, auto& res, std::exception_ptr) {
    send_json(req, res, 500, {{"error", "internal error"}});
  });
}

ExplorerServer::~ExplorerServer() { stop(); }

int ExplorerServer::bind() {
  const auto& o = impl_->options;
  if (o.port == 0) {
    int port = impl_->http.bind_to_any_port(o.host);
    if (port < 0) fail("explore", "{}", bind_failure(o.host, 0));
    return impl_->port = port;
  }
  // A port the user did not ask for may move on to the next free one; an asked-for one may not.
  int tries = o.next_free_port ? kPortTries : 1;
  for (int port = o.port; port < o.port + tries && port <= 65535; ++port)
    if (impl_->http.bind_to_port(o.host, port)) return impl_->port = port;
  if (tries == 1) fail("explore", "{}", bind_failure(o.host, o.port));
  fail("explore", "no free port in {}..{} on {} ({})", o.port, std::min(o.port + tries - 1, 65535), o.host,
       bind_failure(o.host, o.port));
}

void ExplorerServer::run() { impl_->http.listen_after_bind(); }

void ExplorerServer::stop() {
  if (impl_ && impl_->http.is_running()) impl_->http.stop();
}

std::string ExplorerServer::url() const {
  const std::string& h = impl_->options.host;
  std::string shown = h == "0.0.0.0" ? "127.0.0.1" : h.find(':') != std::string::npos ? "[" + h + "]" : h;
  return "http://" + shown + ":" + std::to_string(impl_->port) + "/";
}

}  // namespace opscope::explorer
