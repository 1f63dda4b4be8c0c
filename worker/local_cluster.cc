#include "local_cluster.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <optional>

#include <nlohmann/json.hpp>

#include "common/child_env.h"
#include "common/exit_policy.h"
#include "signal_forwarding.h"

namespace ringtrain::cli {
namespace {

// A kept stream holds at most this much (its tail): enough for any error report.
constexpr size_t kMaxKept = 256 << 10;

// One of a child's output pipes and what becomes of what it reads.
struct Stream {
  int fd = -1;
  enum Mode { kEcho, kDrop, kKeep } mode = kEcho;
  int source = -1;   // kEcho: its source on the console
  std::string kept;  // kKeep: everything read (its tail)
};

struct Child {
  std::string name;
  pid_t pid = -1;
  Stream out, err;  // err.fd is -1 when stderr shares out's pipe
  bool exited = false;
  int code = 0;
  bool signaled = false;  // code is 128 + the signal that killed it
  // What a restart needs to start the same task again.
  int index = 0;    // its (first) task
  int hosted = 1;   // how many tasks it hosts
  std::string tf_config;
  Echo echo = Echo::kPrefixed;
  std::vector<int> cpus;  // its CPU share (empty: not bound)
  int restarts = 0;
};

using Clock = std::chrono::steady_clock;

// Ports the kernel reports free on 127.0.0.1 (all held open together so they differ).
StatusOr<std::vector<int>> FreePorts(int n) {
  std::vector<int> fds, ports;
  Status st;
  for (int i = 0; i < n && st.ok(); ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      st = ErrnoError("finding a free loopback port", errno);
    } else {
      ports.push_back(ntohs(a.sin_port));
    }
    if (fd >= 0) fds.push_back(fd);
  }
  for (int fd : fds) ::close(fd);
  if (!st.ok()) return st;
  return ports;
}

// The console echoed lines go to, and where this function's own lines go.
struct Output {
  console::LineMux* console;
  FILE* report;
};

void WriteAll(FILE* f, const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), f);
  std::fflush(f);
}

// One of this function's own lines (or a failed child's kept output: whole lines).
void Report(const Output& out, const std::string& lines) {
  if (out.report != stdout) return WriteAll(out.report, lines);
  size_t start = 0, nl;
  while ((nl = lines.find('\n', start)) != std::string::npos) {
    out.console->WriteLine(std::string_view(lines).substr(start, nl - start));
    start = nl + 1;
  }
  if (start < lines.size()) out.console->WriteLine(std::string_view(lines).substr(start));
}

// Each complete line of `text` (and the rest too when `flush`) prefixed with "[name] ".
std::string Prefixed(const std::string& name, std::string& text, bool flush) {
  std::string lines;
  size_t start = 0, nl;
  while ((nl = text.find('\n', start)) != std::string::npos) {
    lines += "[" + name + "] " + text.substr(start, nl - start) + "\n";
    start = nl + 1;
  }
  text.erase(0, start);
  if (flush && !text.empty()) {
    lines += "[" + name + "] " + text + "\n";
    text.clear();
  }
  return lines;
}

void Consume(const Output& out, Stream& s, const char* data, size_t len, bool flush) {
  switch (s.mode) {
    case Stream::kEcho:
      out.console->Feed(s.source, std::string_view(data, len));
      if (flush) out.console->Close(s.source);
      break;
    case Stream::kDrop:
      break;
    case Stream::kKeep:
      s.kept.append(data, len);
      if (s.kept.size() > kMaxKept) s.kept.erase(0, s.kept.size() - kMaxKept);
      break;
  }
}

// Reads what is there (or, with `to_eof`, everything until the child's end closes).
void Drain(const Output& out, Stream& s, bool to_eof) {
  if (s.fd < 0) return;
  char buf[65536];
  ssize_t r = ::read(s.fd, buf, sizeof(buf));
  while (r > 0) {
    Consume(out, s, buf, static_cast<size_t>(r), false);
    if (!to_eof) return;
    r = ::read(s.fd, buf, sizeof(buf));
  }
  if (r < 0 && (errno == EINTR || errno == EAGAIN)) return;
  Consume(out, s, "", 0, true);
  ::close(s.fd);
  s.fd = -1;
}

// Reads an exited child's stream to its end, but not past `deadline`: a grandchild
// that inherited the pipe could keep it open forever.
void DrainExited(const Output& out, Stream& s, Clock::time_point deadline) {
  while (s.fd >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      Consume(out, s, "", 0, true);
      ::close(s.fd);
      s.fd = -1;
      return;
    }
    pollfd p{s.fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) > 0) Drain(out, s, false);
  }
}

// Writes to the report what a failed child's kept streams hold, prefixed with its task.
void ReportKept(const Output& out, Child& c) {
  for (Stream* s : {&c.out, &c.err}) {
    if (s->mode == Stream::kKeep) Report(out, Prefixed(c.name, s->kept, true));
  }
}

StatusOr<Child> Spawn(const LocalClusterOptions& o, const Output& output, int index, int hosted,
                      const std::string& tf_config, Echo echo, const std::vector<int>& cpus) {
  std::string name = "worker:" + std::to_string(index);
  if (hosted > 1) name += "..worker:" + std::to_string(index + hosted - 1);
  const std::string& exe = o.exe;
  std::vector<std::string> args = o.args;
  if (hosted > 1) {
    args.push_back("--host_tasks");
    args.push_back(std::to_string(hosted));
  }
  if (o.task_args) {
    for (auto& a : o.task_args(index)) args.push_back(std::move(a));
  }
  std::vector<std::pair<std::string, std::string>> env;
  if (o.task_env) env = o.task_env(index);
  for (auto& kv : WorkerAllocatorEnv()) env.insert(env.begin(), std::move(kv));  // the task's own may override
  const bool split = echo == Echo::kStdout || echo == Echo::kConsole || echo == Echo::kStderrOnly;
  cpu_set_t cpu_set;
  CPU_ZERO(&cpu_set);
  for (int cpu : cpus) CPU_SET(cpu, &cpu_set);
  int out[2], err[2] = {-1, -1};
  if (::pipe2(out, O_CLOEXEC) != 0) return ErrnoError("creating a pipe", errno);
  if (split && ::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return ErrnoError("creating a pipe", errno);
  }
  pid_t pid = ::fork();
  if (pid < 0) return ErrnoError("starting a worker", errno);
  if (pid == 0) {
    // Its own process group: Ctrl-C at the terminal reaches launch alone, which forwards
    // one SIGTERM (signal_forwarding.h); a SIGINT straight from the terminal on top of it
    // would count as a second signal and end the child without saving.
    ::setpgid(0, 0);
    // Where it cannot be bound (a CPU taken offline since), it runs unbound.
    if (!cpus.empty()) (void)::sched_setaffinity(0, sizeof(cpu_set), &cpu_set);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1] >= 0 ? err[1] : out[1], STDERR_FILENO);
    ::setenv("TF_CONFIG", tf_config.c_str(), 1);
    for (const auto& [key, value] : env) ::setenv(key.c_str(), value.c_str(), 1);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(exe.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    std::fprintf(stderr, "cannot run %s: %s\n", exe.c_str(), std::strerror(errno));
    ::_exit(kExitInternal);
  }
  ::close(out[1]);
  if (err[1] >= 0) ::close(err[1]);
  Child c;
  c.name = name;
  c.pid = pid;
  c.index = index;
  c.hosted = hosted;
  c.tf_config = tf_config;
  c.echo = echo;
  c.cpus = cpus;
  c.out.fd = out[0];
  c.err.fd = err[0];
  const std::string prefix = "[" + name + "] ";
  auto echoed = [&](Stream& s, const std::string& p) {
    s.mode = Stream::kEcho;
    s.source = output.console->AddSource(p);
  };
  switch (echo) {
    case Echo::kPrefixed: echoed(c.out, prefix); break;
    case Echo::kStdout: echoed(c.out, ""); c.err.mode = Stream::kKeep; break;
    case Echo::kOnFailure: c.out.mode = Stream::kKeep; break;
    case Echo::kConsole: echoed(c.out, ""); echoed(c.err, prefix); break;
    case Echo::kStderrOnly: c.out.mode = Stream::kDrop; echoed(c.err, prefix); break;
  }
  return c;
}

// Starts the failed child `c` again as the same task (same arguments, TF_CONFIG and
// echo mode), after flushing what the old process left in its pipes. False (and a
// line on the report) if it could not be started; `c` then still holds the failure.
bool Restart(const LocalClusterOptions& o, const Output& out, Child& c) {
  auto deadline = Clock::now() + std::chrono::seconds(2);
  DrainExited(out, c.out, deadline);
  DrainExited(out, c.err, deadline);
  ReportKept(out, c);
  std::string how = c.signaled ? " (killed by signal " + std::to_string(c.code - 128) + ")" : "";
  Report(out, o.label + ": " + c.name + " exited with code " + std::to_string(c.code) + how +
                         "; restarting it (restart " + std::to_string(c.restarts + 1) + " of " +
                         std::to_string(o.max_restarts) + ")\n");
  auto fresh = Spawn(o, out, c.index, c.hosted, c.tf_config, c.echo, c.cpus);
  if (!fresh.ok()) {
    Report(out, o.label + ": could not restart " + c.name + ": " + fresh.status().message() + "\n");
    return false;
  }
  fresh->restarts = c.restarts + 1;
  c = std::move(fresh).value();
  return true;
}

}  // namespace

std::string ResolveExecutable(const std::string& self_path) {
  char buf[PATH_MAX];
  ssize_t len = ::readlink(self_path.c_str(), buf, sizeof(buf) - 1);
  return len > 0 ? std::string(buf, static_cast<size_t>(len)) : self_path;
}

StatusOr<int> RunLocalCluster(const LocalClusterOptions& o) {
  std::vector<int> ports;
  if (o.base_port > 0) {
    for (int i = 0; i < o.workers; ++i) ports.push_back(o.base_port + i);
  } else {
    RT_ASSIGN_OR_RETURN(ports, FreePorts(o.workers));
  }
  nlohmann::json cluster = {{"worker", nlohmann::json::array()}};
  for (int p : ports) cluster["worker"].push_back("127.0.0.1:" + std::to_string(p));
  if (o.on_cluster) o.on_cluster(nlohmann::json{{"cluster", cluster}}.dump());

  std::optional<console::LineMux> own_console;
  if (o.console == nullptr) own_console.emplace(stdout, /*terminal=*/false);
  const Output out{o.console != nullptr ? o.console : &*own_console, o.report};

  InstallForwardedSignals();  // SIGTERM/SIGINT go to the children (signal_forwarding.h)
  SignalForwarder forwarder(o.preempt_grace_s);

  // Process i hosts tasks [first[i], first[i+1]).
  const int processes = o.processes > 0 ? std::min(o.processes, o.workers) : o.workers;
  std::vector<int> first;
  for (int i = 0; i <= processes; ++i) first.push_back(i * o.workers / processes);

  // Each process's CPU share, decided once: a restarted process gets its share again.
  const std::vector<int> allowed = o.bind == CpuBinding::kCore ? AllowedCpus() : std::vector<int>{};
  std::vector<std::vector<int>> shares(static_cast<size_t>(processes));
  for (int i = 0; i < processes; ++i) shares[static_cast<size_t>(i)] = CpuShare(allowed, processes, i);

  std::vector<Child> children;
  for (int i = 0; i < processes; ++i) {
    const int task = first[static_cast<size_t>(i)];
    const int hosted = first[static_cast<size_t>(i) + 1] - task;
    nlohmann::json tf = {{"cluster", cluster}, {"task", {{"type", "worker"}, {"index", task}}}};
    auto c = Spawn(o, out, task, hosted, tf.dump(), o.echo(task), shares[static_cast<size_t>(i)]);
    if (!c.ok()) {
      for (auto& ch : children) ::kill(ch.pid, SIGTERM);
      for (auto& ch : children) ::waitpid(ch.pid, nullptr, 0);
      return c.status();
    }
    children.push_back(std::move(c).value());
  }
  if (o.announce) {
    // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "literal" + std::to_string(...).
    std::string line = "launched ";
    line += std::to_string(o.workers);
    line += o.workers == 1 ? " worker" : " workers";
    if (processes < o.workers) {
      line += " in ";
      line += std::to_string(processes);
      line += processes == 1 ? " process" : " processes";
    }
    line += o.workers == 1 ? " on 127.0.0.1 port" : " on 127.0.0.1 ports";
    for (int p : ports) {
      line += ' ';
      line += std::to_string(p);
    }
    if (o.bind == CpuBinding::kCore) {
      if (shares[0].empty()) {
        line += ", not bound to CPUs (more ";
        line += processes < o.workers ? "processes" : "workers";
        line += " than the ";
        line += std::to_string(allowed.size());
        line += " CPUs usable)";
      } else {
        line += ", on CPUs";
        for (int i = 0; i < processes; ++i) {
          line += i == 0 ? " " : " | ";
          line += DescribeCpus(shares[static_cast<size_t>(i)]);
        }
      }
    }
    line += '\n';
    Report(out, line);
  }

  int first_failure = 0;
  std::vector<int> failures;  // final exit codes, in the order the children exited
  std::vector<int> stopped;   // those of children this function stopped with SIGTERM/SIGKILL
  std::vector<int> lost;      // elastic: those of children the others went on without
  int succeeded = 0;
  Clock::time_point failed_at{}, term_sent_at{};
  bool term_sent = false, kill_sent = false;
  size_t running = children.size();
  while (running > 0) {
    std::vector<pollfd> pfds;
    for (auto& c : children) {
      for (Stream* s : {&c.out, &c.err}) {
        if (s->fd >= 0) pfds.push_back({s->fd, POLLIN, 0});
      }
    }
    ::poll(pfds.data(), pfds.size(), 100);
    for (auto& c : children) {
      for (Stream* s : {&c.out, &c.err}) {
        for (const auto& p : pfds) {
          if (s->fd >= 0 && p.fd == s->fd && (p.revents & (POLLIN | POLLHUP | POLLERR))) Drain(out, *s, false);
        }
      }
    }
    for (auto& c : children) {
      if (c.exited) continue;
      int status = 0;
      if (::waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
      c.exited = true;
      --running;
      c.signaled = WIFSIGNALED(status);
      c.code = c.signaled ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
      if (c.code == 0) {
        ++succeeded;
        continue;
      }
      // Once the cluster is ending (a final failure, or our own SIGINT/SIGTERM),
      // children exit because of it: restarting them would fight the shutdown.
      bool ending = first_failure != 0 || term_sent || FirstForwardedSignal() != 0;
      bool restartable = o.max_restarts > 0 && !ending && IsRestartableExit(c.code);
      if (restartable && c.restarts < o.max_restarts && Restart(o, out, c)) {
        ++running;
        continue;
      }
      if (o.elastic && !ending && IsRestartableExit(c.code)) {
        lost.push_back(c.code);
        Report(out, o.label + ": " + c.name + " exited with code " + std::to_string(c.code) +
                        "; the job is elastic: the others go on and host its tasks\n");
        continue;
      }
      Report(out, o.label + ": " + c.name + " exited with code " + std::to_string(c.code) + "\n");
      const bool stopped_by_us = ((term_sent || forwarder.term_sent()) && c.code == ExitCodeOfSignal(SIGTERM)) ||
                                 ((kill_sent || forwarder.kill_sent()) && c.code == ExitCodeOfSignal(SIGKILL));
      (stopped_by_us ? stopped : failures).push_back(c.code);
      if (restartable && c.restarts >= o.max_restarts) {
        Report(out, o.label + ": " + c.name + " failed again after " + std::to_string(c.restarts) +
                               " restart(s); giving up (--max_restarts " + std::to_string(o.max_restarts) +
                               ")\n");
      }
      if (first_failure == 0) {
        first_failure = c.code;
        failed_at = Clock::now();
      }
    }
    // After a failure the others should fail on their own (heartbeats, collective
    // deadlines); if they have not within the grace period, stop them.
    bool stop = first_failure != 0 && Clock::now() - failed_at > std::chrono::seconds(o.grace_s);
    if (stop && !term_sent && !forwarder.term_sent()) {  // never while forwarded signals are being obeyed
      for (auto& c : children) {
        if (!c.exited) ::kill(c.pid, SIGTERM);
      }
      term_sent = true;
      term_sent_at = Clock::now();
    }
    if (term_sent && !kill_sent && Clock::now() - term_sent_at > std::chrono::seconds(5)) {
      for (auto& c : children) {
        if (!c.exited) ::kill(c.pid, SIGKILL);
      }
      kill_sent = true;
    }
    std::vector<pid_t> live;
    for (auto& c : children) {
      if (!c.exited) live.push_back(c.pid);
    }
    forwarder.Forward(live);
  }
  // Drain what the exited children left in their pipes (their write ends are closed,
  // so each read ends at EOF), then show what a failed child kept back.
  for (auto& c : children) {
    Drain(out, c.out, true);
    Drain(out, c.err, true);
  }
  for (auto& c : children) {
    if (c.code != 0) ReportKept(out, c);
  }
  out.console->ClearBar();
  if (FirstForwardedSignal() != 0 && first_failure == 0) return ExitCodeOfSignal(FirstForwardedSignal());
  // Elastic: the job went on without the lost ones; it did not if nobody finished it.
  if (failures.empty() && succeeded == 0 && !lost.empty()) return RootCauseExit(lost);
  return failures.empty() ? RootCauseExit(stopped) : RootCauseExit(failures);
}

}  // namespace ringtrain::cli
