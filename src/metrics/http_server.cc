#include "metrics/http_server.h"

#include <sys/socket.h>

#include <httplib.h>

#include "common/logging.h"
#include "metrics/status_page.h"

namespace ringtrain::metrics {
namespace {

constexpr char kMetricsType[] = "text/plain; version=0.0.4; charset=utf-8";
constexpr int kHandlerThreads = 4;

void ServeBody(httplib::Response& res, const std::function<std::string()>& body, const char* type) {
  res.set_header("Cache-Control", "no-store");
  res.set_content(body(), type);
}

}  // namespace

HttpServer::HttpServer(ServerOptions options)
    : options_(std::move(options)), server_(std::make_unique<httplib::Server>()) {}

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(ServerOptions options) {
  if (!options.metrics) return InvalidArgumentError("metrics server: no /metrics body");
  std::unique_ptr<HttpServer> self(new HttpServer(std::move(options)));
  httplib::Server& s = *self->server_;
  const ServerOptions& o = self->options_;
  s.new_task_queue = [] { return new httplib::ThreadPool(kHandlerThreads); };
  s.set_read_timeout(o.read_timeout);
  s.set_write_timeout(o.write_timeout);
  s.set_keep_alive_timeout(5);
  s.set_payload_max_length(64 << 10);
  // httplib's default sets SO_REUSEPORT, which would let a second process bind the same
  // port and steal half the scrapes; SO_REUSEADDR alone still allows a quick restart.
  s.set_socket_options([](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });

  auto metrics = o.metrics;
  s.Get("/metrics", [metrics](const httplib::Request&, httplib::Response& res) {
    ServeBody(res, metrics, kMetricsType);
  });
  if (o.status_json) {
    auto body = o.status_json;
    s.Get("/status.json", [body](const httplib::Request&, httplib::Response& res) {
      ServeBody(res, body, "application/json");
    });
  }
  if (o.history_json) {
    auto body = o.history_json;
    s.Get("/history.json", [body](const httplib::Request&, httplib::Response& res) {
      ServeBody(res, body, "application/json");
    });
  }
  if (o.serve_page) {
    s.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(StatusPageHtml()), "text/html; charset=utf-8");
    });
  }
  // Read-only: every other method on every path is refused.
  auto refuse = [](const httplib::Request&, httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
    res.set_content("method not allowed: this endpoint is read-only (GET)\n", "text/plain");
  };
  s.Post(".*", refuse).Put(".*", refuse).Patch(".*", refuse).Delete(".*", refuse).Options(".*", refuse);

  int port = o.port;
  bool bound = false;
  if (port == 0) {
    port = s.bind_to_any_port(o.host);
    bound = port > 0;
  } else {
    bound = s.bind_to_port(o.host, port);
  }
  if (!bound) {
    return Status(Code::kUnavailable,
                  "cannot listen on " + o.host + ":" + std::to_string(o.port) + " for " + o.what +
                      " (is the port already in use, or the address not one of this machine's?); choose another "
                      "port, or leave it off",
                  Subject::kCluster);
  }
  self->port_ = port;
  httplib::Server* raw = self->server_.get();
  std::atomic<bool>* done = &self->done_;
  self->thread_ = std::thread([raw, done] {
    raw->listen_after_bind();
    done->store(true);
  });
  // Stop() before the loop has started would be lost (httplib stops only a running
  // server): return once it runs.
  for (int i = 0; i < 5000 && !raw->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!raw->is_running()) {
    self->Stop();
    return Status(Code::kUnavailable, "the HTTP server on " + o.host + ":" + std::to_string(port) + " did not start",
                  Subject::kCluster);
  }
  return self;
}

void HttpServer::Stop() {
  if (!thread_.joinable()) return;
  // httplib's stop() does nothing to a loop that has not started yet: ask until it ends
  // (Start waited for it to run, so this is one call but in that corner case).
  for (int i = 0; i < 10000 && !done_.load(); ++i) {
    server_->stop();
    if (!done_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  thread_.join();
}

HttpServer::~HttpServer() {
  try {
    Stop();
  } catch (...) {
    // A destructor never throws; join's system_error cannot happen on a joinable thread.
  }
}

}  // namespace ringtrain::metrics
