// `ringtrain serve [--tf_config FILE|JSON] [--work_dir DIR] [--max_restarts K]
// [--tls_cert F --tls_key F --tls_ca F] [--log_file F [--verbose]]`: a daemon of a
// standing cluster. Every daemon runs the daemon loop (daemon/daemon_loop.h);
// the chief's also keeps the job queue (<work dir>/queue.json) and serves it
// (daemon/daemon_server.h) at its TF_CONFIG address. SIGTERM/SIGINT: the running job's
// child is told to stop (it saves its step, exit 7), then the daemon leaves, exit 0.
// This file only wires.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cluster/cluster_session.h"
#include "commands.h"
#include "common/exit_codes.h"
#include "common/exit_policy.h"
#include "common/logging.h"
#include "config/settings.h"
#include "config/tf_config.h"
#include "console_setup.h"
#include "daemon/daemon_loop.h"
#include "daemon/daemon_server.h"
#include "daemon/job_board.h"
#include "env/env.h"
#include "flags.h"
#include "jobqueue/job_queue.h"
#include "local_cluster.h"
#include "security_setup.h"

namespace ringtrain::cli {
namespace {

std::atomic<bool> g_leave{false};

void OnStopSignal(int) { g_leave.store(true); }

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char buf[4096];
  if (::getcwd(buf, sizeof(buf)) == nullptr) return path;
  return std::string(buf) + "/" + path;
}

// One daemon per work directory: a second one is refused (it would run every job twice
// into the same files). The lock is the kernel's and goes with the process.
Status LockWorkDir(const std::string& dir) {
  const std::string path = dir + "/daemon.lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status(Code::kInternal, "cannot open " + path, Subject::kStorage);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return Status(Code::kInvalidArgument,
                  "another daemon uses the work directory " + dir + "; give each daemon its own --work_dir",
                  Subject::kConfig);
  }
  return Status::Ok();  // fd stays open: the lock lasts as long as this process
}

}  // namespace

int RunServe(const std::vector<std::string>& args, const std::string& self_path) {
  auto flags = Flags::Parse(args, {"tf_config", "work_dir", "max_restarts", "tls_cert", "tls_key", "tls_ca",
                                   kLogFileFlag},
                            {kVerboseFlag});
  if (!flags.ok()) return Fail(flags.status().About(Subject::kConfig));
  if (Status st = SetUpTaskLogging(*flags); !st.ok()) return Fail(st);
  auto settings = config::LoadSettings();
  if (!settings.ok()) return Fail(settings.status().About(Subject::kConfig));
  auto text = config::ReadTfConfigText(flags->get("tf_config"));
  if (!text.ok()) return Fail(text.status().About(Subject::kConfig));
  auto spec = config::ParseTfConfig(*text);
  if (!spec.ok()) return Fail(spec.status().About(Subject::kConfig));
  if (spec->is_evaluator()) {
    return Fail(InvalidArgumentError("serve runs the training tasks of a cluster; an evaluator task is not served "
                                     "(run `ringtrain worker` for it)")
                    .About(Subject::kConfig));
  }
  auto max_restarts = flags->get_int("max_restarts", 3, 0, 1000);
  if (!max_restarts.ok()) return Fail(max_restarts.status().About(Subject::kConfig));
  auto security = LoadSecurity(*settings, *spec, flags->get("tls_cert"), flags->get("tls_key"), flags->get("tls_ca"));
  if (!security.ok()) return Fail(security.status().About(Subject::kConfig));
  const std::string task = spec->task().ToString();
  SetLogTag(task);

  const std::string work_dir = Absolute(flags->get("work_dir", "ringtrain-serve"));
  env::Env* env = env::Default();
  if (Status st = env->CreateDirectories(work_dir); !st.ok()) return Fail(st.About(Subject::kStorage));
  if (Status st = LockWorkDir(work_dir); !st.ok()) return Fail(st);

  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);

  std::vector<std::string> tasks;
  for (const config::TaskId& t : spec->training_tasks()) tasks.push_back(t.ToString());
  std::vector<std::string> hosts;
  for (const auto& [job, addresses] : spec->jobs()) {
    for (const auto& a : addresses) hosts.push_back(a.host);
  }
  const std::string chief_address = spec->address(spec->chief()).ToString();

  // The chief's daemon keeps the queue and serves it.
  std::unique_ptr<daemon::JobBoard> board;
  std::unique_ptr<daemon::DaemonServer> server;
  const std::string jobs_dir = work_dir + "/jobs";
  if (spec->is_chief()) {
    auto queue = jobqueue::JobQueue::Open(env, work_dir + "/queue.json");
    if (!queue.ok()) return Fail(queue.status().About(Subject::kStorage));
    daemon::BoardOptions bopts;
    bopts.tasks = tasks;
    bopts.chief_task = spec->chief().ToString();
    bopts.daemon_timeout = std::chrono::milliseconds(settings->heartbeat_timeout_ms);
    auto made = daemon::JobBoard::Make(std::move(queue).value(), bopts, UnixNow());
    if (!made.ok()) return Fail(made.status().About(Subject::kStorage));
    board = std::move(made).value();
    daemon::DaemonServerOptions sopts;
    sopts.address = chief_address;
    sopts.bind_all = settings->bind_all;
    sopts.cluster_secret = security->cluster_secret;
    sopts.cluster_hosts = hosts;
    sopts.check_peer_address = settings->check_peer_address;
    sopts.tls = security->tls;
    sopts.board = board.get();
    sopts.jobs_dir = jobs_dir;
    auto started = daemon::DaemonServer::Start(sopts);
    if (!started.ok()) return Fail(started.status().About(Subject::kConfig));
    server = std::move(started).value();
  }

  daemon::DaemonLoopOptions lopts;
  lopts.task = task;
  lopts.chief_task = spec->chief().ToString();
  lopts.tf_config = *text;
  lopts.jobs_dir = jobs_dir;
  lopts.exe = ResolveExecutable(self_path);
  for (const char* f : {"tls_cert", "tls_key", "tls_ca"}) {
    if (flags->has(f)) lopts.worker_flags.insert(lopts.worker_flags.end(), {std::string("--") + f, Absolute(flags->get(f))});
  }
  int num_tasks = 0;
  for (const auto& [job, addresses] : spec->jobs()) num_tasks += static_cast<int>(addresses.size());
  lopts.port_stride = num_tasks;
  lopts.port_span = settings->job_port_span;
  lopts.max_restarts = *max_restarts;
  lopts.preempt_grace = std::chrono::milliseconds(static_cast<int64_t>(settings->preempt_grace_s * 1000));
  // Held polls count as the daemon's presence only when they return: well under the timeout.
  lopts.idle_poll_wait = std::min(std::chrono::milliseconds(1000),
                                  std::chrono::milliseconds(settings->heartbeat_timeout_ms / 4));
  lopts.client.address = chief_address;
  lopts.client.caller = task;
  lopts.client.cluster_secret = security->cluster_secret;
  lopts.client.tls = security->tls;
  lopts.client.timeout = std::chrono::seconds(5);
  RT_LOG(INFO) << "daemon " << task << " serving; work directory " << work_dir << ", the chief's daemon at "
               << chief_address;
  Status st = daemon::RunDaemonLoop(lopts, g_leave);
  if (server) server->Stop();
  if (!st.ok()) return Fail(st);
  RT_LOG(INFO) << "daemon " << task << " left";
  return kExitOk;
}

}  // namespace ringtrain::cli
