// The server on loopback, with a real HTTP client (httplib's): what each path serves,
// read-only, and a port in use refused with one clear error (exit code 4).
#include "metrics/http_server.h"

#include <gtest/gtest.h>

#include <httplib.h>

#include "common/exit_policy.h"
#include "metrics/status_page.h"

namespace ringtrain::metrics {
namespace {

ServerOptions Options(bool chief) {
  ServerOptions o;
  o.metrics = [] { return std::string("# TYPE x gauge\nx 1\n"); };
  if (chief) {
    o.serve_page = true;
    o.status_json = [] { return std::string(R"({"job":{},"tasks":[]})"); };
    o.history_json = [] { return std::string(R"({"points":[]})"); };
  }
  return o;
}

TEST(HttpServerTest, ServesMetricsPageAndJsonReadOnly) {
  auto server = HttpServer::Start(Options(true));
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  httplib::Client cli("127.0.0.1", (*server)->port());
  cli.set_connection_timeout(10);
  cli.set_read_timeout(10);

  auto m = cli.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_EQ(m->body, "# TYPE x gauge\nx 1\n");
  EXPECT_EQ(m->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");

  auto page = cli.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->body, std::string(StatusPageHtml()));
  // Self-contained: no external scripts, styles or fonts.
  EXPECT_EQ(page->body.find("<script src"), std::string::npos);
  EXPECT_EQ(page->body.find("<link"), std::string::npos);
  EXPECT_NE(page->body.find("/status.json"), std::string::npos);

  auto status = cli.Get("/status.json");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->status, 200);
  EXPECT_EQ(status->get_header_value("Content-Type"), "application/json");
  auto history = cli.Get("/history.json");
  ASSERT_TRUE(history);
  EXPECT_EQ(history->body, R"({"points":[]})");

  auto post = cli.Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET, HEAD");
  auto del = cli.Delete("/");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 405);
  auto missing = cli.Get("/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  (*server)->Stop();
  (*server)->Stop();  // idempotent
}

TEST(HttpServerTest, NonChiefServesOnlyMetrics) {
  auto server = HttpServer::Start(Options(false));
  ASSERT_TRUE(server.ok());
  httplib::Client cli("127.0.0.1", (*server)->port());
  auto page = cli.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 404);
  auto status = cli.Get("/status.json");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->status, 404);
  auto m = cli.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
}

TEST(HttpServerTest, PortInUseIsOneClearErrorWithExitCode4) {
  auto first = HttpServer::Start(Options(false));
  ASSERT_TRUE(first.ok());
  ServerOptions o = Options(false);
  o.port = (*first)->port();
  o.what = "--metrics_port " + std::to_string(o.port);
  auto second = HttpServer::Start(o);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("already in use"), std::string::npos) << second.status().message();
  EXPECT_NE(second.status().message().find("--metrics_port"), std::string::npos);
  EXPECT_EQ(ExitCodeFor(second.status()), kExitRendezvous);
}

TEST(HttpServerTest, StopsAndRestartsOnTheSamePort) {
  auto first = HttpServer::Start(Options(false));
  ASSERT_TRUE(first.ok());
  const int port = (*first)->port();
  first->reset();  // the destructor stops and joins
  ServerOptions o = Options(false);
  o.port = port;
  auto again = HttpServer::Start(o);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  httplib::Client cli("127.0.0.1", port);
  auto m = cli.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
}

TEST(HttpServerTest, AnAddressNotOfThisMachineIsRefused) {
  ServerOptions o = Options(false);
  o.host = "192.0.2.1";  // TEST-NET-1: never local
  auto s = HttpServer::Start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(ExitCodeFor(s.status()), kExitRendezvous);
}

}  // namespace
}  // namespace ringtrain::metrics
