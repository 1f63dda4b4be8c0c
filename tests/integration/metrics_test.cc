// Metrics and the live page for real: a two-worker `launch --metrics_port P` run; both
// tasks' /metrics pass `promtool check metrics`; a Prometheus server (Debian's
// `prometheus`, started here on loopback with its own storage) scrapes them and its
// query API returns the step counter; headless Chromium renders the chief's page with
// both tasks' rows and curves of more than one point. Each tool missing: that part is
// skipped with the reason. RINGTRAIN_SCREENSHOT_OUT=FILE keeps the page's screenshot
// (docs/status_page.png is made so).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <csignal>
#include <iostream>
#include <set>
#include <filesystem>
#include <regex>
#include <thread>

#include <httplib.h>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

using Clock = std::chrono::steady_clock;

// The path of `tool` on PATH, or "" (Process runs a path, not a name).
std::string Which(const std::string& tool) {
  std::string path;
  if (FILE* f = ::popen(("command -v " + tool + " 2>/dev/null").c_str(), "r")) {
    char buf[4096];
    while (std::fgets(buf, sizeof(buf), f) != nullptr) path += buf;
    ::pclose(f);
  }
  while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
  return path;
}

bool Have(const std::string& tool) { return !Which(tool).empty(); }

bool PortFree(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

// P such that P and P+1 are free (launch gives task i the port P+i).
int TwoFreePorts() {
  for (int tries = 0; tries < 50; ++tries) {
    int p = FreePorts(1)[0];
    if (p < 65000 && PortFree(p + 1)) return p;
  }
  return -1;
}

std::string Get(int port, const std::string& path) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(5);
  cli.set_read_timeout(10);
  auto r = cli.Get(path);
  return r && r->status == 200 ? r->body : std::string();
}

// The value of `metric` (first series) in a /metrics body; -1 if absent.
double Sample(const std::string& body, const std::string& metric) {
  std::smatch m;
  std::regex re("\n" + metric + "\\{[^}]*\\} ([-+0-9.eE]+)\n");
  return std::regex_search(body, m, re) ? std::stod(m[1]) : -1;
}

// Runs `command` through the shell; its exit code (output into *out when given).
int Shell(const std::string& command, double timeout_s, std::string* out = nullptr) {
  Process p("/bin/sh", {"-c", command});
  ProcessResult r = p.Wait(timeout_s);
  if (out) *out = r.output;
  return r.timed_out ? -1 : r.exit_code;
}

TEST(MetricsIntegrationTest, PrometheusScrapesTwoWorkersAndChromiumShowsThePage) {
  TempDir tmp;
  const std::string& dir = tmp.path();
  // Long enough to be scraped and rendered; stopped with SIGTERM once checked.
  auto job = RecoveryJob(dir, 20);
  job["epochs"] = 1000;
  job["metrics"] = {"accuracy"};
  WriteFile(dir + "/job.json", job.dump());
  const int port = TwoFreePorts();
  ASSERT_GT(port, 0);
  Process launch(RingtrainBinary(),
                 {"launch", "--workers", "2", "--job", dir + "/job.json", "--metrics_port", std::to_string(port)},
                 {{"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "120"}, {"RINGTRAIN_NUM_THREADS", "1"}});
  struct StopLaunch {  // SIGTERM: launch forwards it, so no worker outlives the test
    Process& p;
    ~StopLaunch() {
      p.Kill(SIGTERM);
      p.Wait(60);
    }
  } stop{launch};

  // Both tasks serve their metrics, with steps counted, and the chief a few history points.
  std::string chief, worker;
  const auto deadline = Clock::now() + std::chrono::seconds(150);
  while (Clock::now() < deadline) {
    chief = Get(port, "/metrics");
    worker = Get(port + 1, "/metrics");
    auto history = Get(port, "/history.json");
    if (Sample(chief, "ringtrain_steps_total") >= 5 && Sample(worker, "ringtrain_steps_total") >= 5 &&
        !history.empty() && nlohmann::json::parse(history)["points"].size() >= 5) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ASSERT_GE(Sample(chief, "ringtrain_steps_total"), 5) << chief << launch.Wait(0).output;
  ASSERT_GE(Sample(worker, "ringtrain_steps_total"), 5) << worker;
  EXPECT_NE(chief.find("ringtrain_steps_total{task=\"worker:0\"}"), std::string::npos);
  EXPECT_NE(worker.find("ringtrain_steps_total{task=\"worker:1\"}"), std::string::npos);
  EXPECT_GT(Sample(worker, "ringtrain_allreduce_bytes_total"), 0);
  EXPECT_EQ(Sample(chief, "ringtrain_generation"), 0);
  EXPECT_NE(worker.find("ringtrain_step_phase_seconds_bucket{phase=\"allreduce_wait\",task=\"worker:1\",le=\"+Inf\"}"),
            std::string::npos);
  // The non-chief serves no page; the chief's status names both tasks.
  EXPECT_EQ(Get(port + 1, "/"), "");
  // The chief's page shows the cluster-wide status (its own GetStatus): every task's row
  // fills in as its heartbeats bring its steps.
  nlohmann::json status;
  const auto status_deadline = Clock::now() + std::chrono::seconds(60);
  auto has_steps = [](const nlohmann::json& j) {
    if (!j.is_object() || j["tasks"].size() != 2 || !j["job"]["global_step"].is_number()) return false;
    for (const auto& t : j["tasks"]) {
      if (!t["step"].is_number() || t["step"].get<int64_t>() <= 0) return false;
    }
    return true;
  };
  do {
    status = nlohmann::json::parse(Get(port, "/status.json"), nullptr, /*allow_exceptions=*/false);
    if (has_steps(status)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (Clock::now() < status_deadline);
  ASSERT_TRUE(has_steps(status)) << status.dump();
  EXPECT_EQ(status["tasks"][0]["task"], "worker:0");
  EXPECT_EQ(status["tasks"][1]["task"], "worker:1");
  EXPECT_EQ(status["tasks"][1]["state"], "running");
  EXPECT_GT(status["job"]["global_step"].get<int>(), 0);

  if (!Have("promtool")) {
    std::cout << "[ SKIPPED  ] promtool check metrics: promtool missing (apt-get install prometheus)\n";
  } else {
    for (const auto& [name, body] : {std::pair{"chief", chief}, std::pair{"worker", worker}}) {
      WriteFile(dir + "/" + name + ".prom", body);
      std::string out;
      EXPECT_EQ(Shell("promtool check metrics < " + dir + "/" + name + ".prom", 60, &out), 0) << name << ": " << out;
    }
  }

  if (Have("prometheus")) {
    const int prom_port = FreePorts(1)[0];
    WriteFile(dir + "/prometheus.yml", "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                                       "scrape_configs:\n  - job_name: ringtrain\n    static_configs:\n"
                                       "      - targets: ['127.0.0.1:" + std::to_string(port) + "', '127.0.0.1:" +
                                       std::to_string(port + 1) + "']\n");
    Process prom(Which("prometheus"), {"--config.file=" + dir + "/prometheus.yml", "--storage.tsdb.path=" + dir + "/tsdb",
                                "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)});
    nlohmann::json result;
    const auto prom_deadline = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < prom_deadline) {
      auto body = Get(prom_port, "/api/v1/query?query=ringtrain_steps_total");
      if (!body.empty()) {
        auto j = nlohmann::json::parse(body);
        if (j["status"] == "success" && j["data"]["result"].size() == 2) {
          result = j["data"]["result"];
          break;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    ASSERT_EQ(result.size(), 2u) << "Prometheus did not return both tasks' ringtrain_steps_total; its targets: "
                                 << Get(prom_port, "/api/v1/targets");
    std::set<std::string> tasks;
    for (const auto& series : result) {
      tasks.insert(series["metric"]["task"].get<std::string>());
      EXPECT_GT(std::stod(series["value"][1].get<std::string>()), 0) << series.dump();
    }
    EXPECT_EQ(tasks, (std::set<std::string>{"worker:0", "worker:1"}));
  } else {
    std::cout << "[ SKIPPED  ] the Prometheus scrape: prometheus missing (apt-get install prometheus)\n";
  }

  if (!Have("chromium")) GTEST_SKIP() << "the page in a browser: chromium missing (apt-get install chromium)";
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/";
  const std::string chrome = "chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "
                             "--user-data-dir=" + dir + "/chrome --window-size=1200,900 --virtual-time-budget=5000 ";
  std::string dom;
  ASSERT_EQ(Shell(chrome + "--dump-dom " + url + " 2>/dev/null", 120, &dom), 0) << dom;
  EXPECT_NE(dom.find("<td class=\"l\">worker:0</td>"), std::string::npos) << dom;
  EXPECT_NE(dom.find("<td class=\"l\">worker:1</td>"), std::string::npos) << dom;
  EXPECT_NE(dom.find("<td class=\"l\">running</td>"), std::string::npos) << dom;  // the chief's own row
  // The curves: SVG paths of more than one point.
  std::regex path_re(R"re(<path d="M[^"]* L[^"]*"[^>]*data-points="(\d+)")re");
  int curves = 0;
  for (std::sregex_iterator it(dom.begin(), dom.end(), path_re), end; it != end; ++it) {
    EXPECT_GT(std::stoi((*it)[1]), 1);
    ++curves;
  }
  EXPECT_EQ(curves, 3) << dom;  // loss, accuracy, images/s

  const std::string png = dir + "/status_page.png";
  ASSERT_EQ(Shell(chrome + "--screenshot=" + png + " " + url + " >/dev/null 2>&1", 120), 0);
  ASSERT_TRUE(std::filesystem::exists(png));
  EXPECT_GT(std::filesystem::file_size(png), 10000u);  // a real rendering, not a blank page
  if (const char* keep = std::getenv("RINGTRAIN_SCREENSHOT_OUT")) {
    std::filesystem::copy_file(png, keep, std::filesystem::copy_options::overwrite_existing);
  }
}

// Watching changes nothing: the same job with and without metrics saves the same bytes.
TEST(MetricsIntegrationTest, MetricsChangeNoBits) {
  TempDir with, without;
  std::string models[2];
  for (int i = 0; i < 2; ++i) {
    const std::string& dir = i == 0 ? with.path() : without.path();
    WriteFile(dir + "/job.json", SmallSyntheticJob(dir).dump());
    std::vector<std::string> args = {"launch", "--workers", "2", "--job", dir + "/job.json"};
    if (i == 0) {
      args.push_back("--metrics_port");
      args.push_back(std::to_string(TwoFreePorts()));
    }
    Process p(RingtrainBinary(), args, {{"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"}, {"RINGTRAIN_NUM_THREADS", "1"}});
    ProcessResult r = p.Wait(180);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    models[i] = ReadFileOrEmpty(dir + "/model.safetensors");
  }
  ASSERT_FALSE(models[0].empty());
  EXPECT_EQ(models[0], models[1]);
}

// A port already in use: one clear line and exit 4, before any training; a bad value: exit 2.
TEST(MetricsIntegrationTest, PortInUseOrOutOfRangeIsOneClearLine) {
  TempDir tmp;
  WriteFile(tmp.path() + "/job.json", SmallSyntheticJob(tmp.path()).dump());
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string port = std::to_string(ntohs(a.sin_port));
  Process busy(RingtrainBinary(), {"worker", "--job", tmp.path() + "/job.json", "--metrics_port", port});
  ProcessResult r = busy.Wait(120);
  ::close(fd);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.output.find("error: cannot listen on 127.0.0.1:" + port + " for --metrics_port " + port), std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/model.safetensors"));

  Process bad(RingtrainBinary(), {"worker", "--job", tmp.path() + "/job.json"}, {{"RINGTRAIN_METRICS_PORT", "x"}});
  ProcessResult b = bad.Wait(60);
  EXPECT_EQ(b.exit_code, 2) << b.output;
  EXPECT_NE(b.output.find("RINGTRAIN_METRICS_PORT"), std::string::npos) << b.output;
}

}  // namespace
}  // namespace ringtrain::testing
