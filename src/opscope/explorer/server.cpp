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
#include "opscope/explorer/access.h"
#include "opscope/explorer/api.h"
#include "opscope/explorer/assets.h"
#include "opscope/explorer/rate_limit.h"

namespace opscope::explorer {

using nlohmann::json;

namespace {

constexpr int kPortTries = 32;  // ports tried after the default one is taken

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

// What every answer carries, error pages included (httplib adds them to each response
// before routing): no MIME sniffing, no framing, no referrer (a token in the page's URL
// stays on this server), and a policy that runs only the UI's own script and styles, so
// a name in a profile that slipped into the page as HTML could still run nothing.
httplib::Headers security_headers() {
  return {{"X-Content-Type-Options", "nosniff"},
          {"X-Frame-Options", "DENY"},
          {"Referrer-Policy", "no-referrer"},
          {"Content-Security-Policy",
           "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
           "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"}};
}

bool is_api_path(const std::string& path) { return path.rfind("/api/", 0) == 0 || path == "/api"; }

// httplib's request parsing and routing, given one connection's bytes from memory.
class HttpServer : public httplib::Server {
 public:
  std::string answer(std::string_view bytes) {
    MemoryStream stream(bytes);
    bool closed = false;
    // Several requests on one connection, as keep-alive reads them, until it closes.
    for (int i = 0; i < 16 && !closed && stream.is_readable(); ++i)
      if (!process_request(stream, false, closed, nullptr)) break;
    return std::move(stream.out);
  }

 private:
  struct MemoryStream final : httplib::Stream {
    explicit MemoryStream(std::string_view in) : in(in) {}
    bool is_readable() const override { return at < in.size(); }
    bool is_writable() const override { return true; }
    ssize_t read(char* ptr, size_t size) override {
      size_t n = std::min(size, in.size() - at);
      std::memcpy(ptr, in.data() + at, n);
      at += n;
      return ssize_t(n);
    }
    ssize_t write(const char* ptr, size_t size) override {
      out.append(ptr, size);
      return ssize_t(size);
    }
    void get_remote_ip_and_port(std::string& ip, int& port) const override { ip = "127.0.0.1", port = 40000; }
    void get_local_ip_and_port(std::string& ip, int& port) const override { ip = "127.0.0.1", port = 8642; }
    socket_t socket() const override { return INVALID_SOCKET; }
    std::string_view in;
    size_t at = 0;
    std::string out;
  };
};

}  // namespace

struct ExplorerServer::Impl {
  Impl(std::vector<ProfilePtr> profiles, ExploreOptions opts)
      : api(std::move(profiles)), options(std::move(opts)),
        limiter(options.requests_per_second, options.burst) {
    if (options.token.empty() && !is_loopback_bind(options.host)) options.token = new_access_token();
  }
  ExplorerApi api;
  ExploreOptions options;
  RateLimiter limiter;
  HttpServer http;
  int port = -1;

  httplib::Server::HandlerResponse refuse(const httplib::Request& req, httplib::Response& res, int status,
                                          const std::string& why) {
    send_json(req, res, status, {{"error", why}});
    return httplib::Server::HandlerResponse::Handled;
  }

  httplib::Server::HandlerResponse guard(const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET" && req.method != "HEAD") {
      res.set_header("Allow", "GET, HEAD");
      return refuse(req, res, 405, "only GET is served");
    }
    if (req.target.size() > options.max_target_bytes) return refuse(req, res, 414, "request target too long");
    // HTTP/1.1 wants exactly one Host (RFC 9112 3.2); without one nothing says whom the
    // browser thought it was talking to.
    if (req.get_header_value_count("Host") != 1) return refuse(req, res, 400, "a request needs one Host header");
    if (is_loopback_bind(options.host) && !is_local_host_header(req.get_header_value("Host"), port))
      return refuse(req, res, 403, "this server answers only to 127.0.0.1, localhost or [::1]");
    if (!limiter.allow(req.remote_addr)) {
      res.set_header("Retry-After", "1");
      return refuse(req, res, 429, "too many requests");
    }
    if (!options.token.empty() && is_api_path(req.path) &&
        !token_equal(request_token(req.get_param_value("token"), req.get_header_value("Authorization")),
                     options.token)) {
      res.set_header("WWW-Authenticate", "token");
      return refuse(req, res, 401, "this explorer needs its access token: open the URL `opscope explore` printed "
                                   "(it ends in ?token=...)");
    }
    return httplib::Server::HandlerResponse::Unhandled;
  }

  void handle(const httplib::Request& req, httplib::Response& res) {
    if (is_api_path(req.path)) {
      ApiResponse r = api.get(req.path, req.params);
      send_json(req, res, r.status, r.body);
      return;
    }
    const std::string path = req.path == "/" ? "/index.html" : req.path;
    if (const opscope_ui_asset* a = find_ui_asset(path)) {
      send_body(req, res, std::string(reinterpret_cast<const char*>(a->data), a->size), a->content_type);
      return;
    }
    if (path == "/index.html") {
      send_body(req, res, std::string(ui_not_built_page()), "text/html; charset=utf-8");
      return;
    }
    if (path == kNotBuiltCss) {
      send_body(req, res, std::string(ui_not_built_css()), "text/css; charset=utf-8");
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
  s.set_default_headers(security_headers());
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
  std::string u = "http://" + shown + ":" + std::to_string(impl_->port) + "/";
  return impl_->options.token.empty() ? u : u + "?token=" + impl_->options.token;
}

const std::string& ExplorerServer::token() const { return impl_->options.token; }

std::string ExplorerServer::answer(std::string_view request) { return impl_->http.answer(request); }

}  // namespace opscope::explorer
