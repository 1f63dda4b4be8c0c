// The task's read-only HTTP endpoint (cpp-httplib, Debian's libcpp-httplib-dev): GET
// /metrics (Prometheus' text format) on every task; on the chief also GET / (the live
// page, status_page.h), /status.json and /history.json. Other methods are answered 405,
// unknown paths 404. Each connection has read and write timeouts, so a slow or stuck
// client holds one of the few handler threads for a bounded time only.
//
// Threading: Start and Stop from one thread (the owner); the body callbacks run on the
// server's handler threads, concurrently, and must be thread-safe and quick.
// Blocking: Start returns once the server accepts connections (bounded: a few seconds
// at most); Stop joins the server's threads (bounded by the timeouts).
// Errors: Start fails with UNAVAILABLE about Subject::kCluster (exit code 4, as the
// other listening sockets) when the address cannot be bound, e.g. a port in use.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"

namespace httplib {
class Server;
}

namespace ringtrain::metrics {

struct ServerOptions {
  std::string host = "127.0.0.1";  // the task's own TF_CONFIG host, or loopback
  int port = 0;                    // 0: a free port the kernel picks (tests)
  std::chrono::seconds read_timeout{5}, write_timeout{5};
  // The /metrics body; required.
  std::function<std::string()> metrics;
  // The chief's: / (the page) and the JSON it fetches. Null: those paths are 404.
  std::function<std::string()> status_json, history_json;
  bool serve_page = false;
  // Named in the bind error ("--metrics_port 9100").
  std::string what = "the metrics port";
};

class HttpServer {
 public:
  static StatusOr<std::unique_ptr<HttpServer>> Start(ServerOptions options);
  ~HttpServer();  // Stop(); never throws

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  const std::string& host() const { return options_.host; }
  // Stops accepting, finishes the requests in flight and joins. Idempotent.
  void Stop();

 private:
  explicit HttpServer(ServerOptions options);

  ServerOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> done_{false};  // the server loop has returned
  int port_ = 0;
};

}  // namespace ringtrain::metrics
