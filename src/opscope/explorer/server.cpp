#include "opscope/explorer/server.h"

#include "opscope/explorer/httplib.h"

#include <stdexcept>

#include "opscope/explorer/api.h"
#include "opscope/explorer/assets.h"
#include "opscope/explorer/rate_limit.h"

namespace opscope::explorer {

using nlohmann::json;

namespace {

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

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
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
      send_json(res, 405, {{"error", "only GET is served"}});
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.target.size() > options.max_target_bytes) {
      send_json(res, 414, {{"error", "request target too long"}});
      return httplib::Server::HandlerResponse::Handled;
    }
    if (is_loopback(options.host) && req.has_header("Host") &&
        !is_loopback(host_name(req.get_header_value("Host")))) {
      send_json(res, 403, {{"error", "this server answers only to localhost"}});
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!limiter.allow(req.remote_addr)) {
      res.set_header("Retry-After", "1");
      send_json(res, 429, {{"error", "too many requests"}});
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  }

  void handle(const httplib::Request& req, httplib::Response& res) {
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Referrer-Policy", "no-referrer");
    if (req.path.rfind("/api/", 0) == 0 || req.path == "/api") {
      ApiResponse r = api.get(req.path, req.params);
      send_json(res, r.status, r.body);
      return;
    }
    const std::string path = req.path == "/" ? "/index.html" : req.path;
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:");
    if (const opscope_ui_asset* a = find_ui_asset(path)) {
      res.set_content(reinterpret_cast<const char*>(a->data), a->size, a->content_type);
      return;
    }
    if (path == "/index.html") {
      res.set_content(std::string(ui_not_built_page()), "text/html; charset=utf-8");
      return;
    }
    res.status = 404;
    res.set_content("not found\n", "text/plain");
  }
};

ExplorerServer::ExplorerServer(std::vector<ProfilePtr> profiles, ExploreOptions options)
    : impl_(std::make_unique<Impl>(std::move(profiles), std::move(options))) {
  auto& s = impl_->http;
  s.set_payload_max_length(impl_->options.max_body_bytes);
  s.set_read_timeout(5, 0);
  s.set_write_timeout(10, 0);
  s.set_pre_routing_handler([this](const auto& req, auto& res) { return impl_->guard(req, res); });
  s.Get(".*", [this](const auto& req, auto& res) { impl_->handle(req, res); });
  s.set_exception_handler([](const auto&, auto& res, std::exception_ptr) {
    send_json(res, 500, {{"error", "internal error"}});
  });
}

ExplorerServer::~ExplorerServer() { stop(); }

int ExplorerServer::bind() {
  const auto& o = impl_->options;
  int port = o.port == 0 ? impl_->http.bind_to_any_port(o.host)
                         : (impl_->http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port < 0)
    throw std::runtime_error("[explore] cannot listen on " + o.host + ":" + std::to_string(o.port) +
                             " (address in use or not available)");
  impl_->port = port;
  return port;
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
