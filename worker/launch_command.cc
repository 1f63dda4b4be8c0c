// `ringtrain launch`: starts N local workers on free loopback ports with their
// TF_CONFIG set, prefixes each line of their output with the task ("[worker:1] "),
// and exits non-zero if any worker fails (with the first failing worker's code).
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "common/exit_codes.h"
#include "flags.h"

namespace ringtrain::cli {
namespace {

std::atomic<int> g_signal{0};
void OnSignal(int sig) { g_signal.store(sig); }

struct Child {
  std::string name;
  pid_t pid = -1;
  int fd = -1;         // read end of its stdout+stderr
  std::string partial; // an unfinished line
  bool exited = false;
  int code = 0;
};

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

void Emit(Child& c, const char* data, size_t len, bool flush) {
  c.partial.append(data, len);
  size_t start = 0, nl;
  while ((nl = c.partial.find('\n', start)) != std::string::npos) {
    std::string line = "[" + c.name + "] " + c.partial.substr(start, nl - start) + "\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
    start = nl + 1;
  }
  c.partial.erase(0, start);
  if (flush && !c.partial.empty()) {
    std::string line = "[" + c.name + "] " + c.partial + "\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
    c.partial.clear();
  }
  std::fflush(stdout);
}

StatusOr<Child> Spawn(const std::string& exe, const std::string& name, const std::string& tf_config,
                      const std::vector<std::string>& worker_args) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return ErrnoError("creating a pipe", errno);
  pid_t pid = ::fork();
  if (pid < 0) return ErrnoError("starting a worker", errno);
  if (pid == 0) {
    ::dup2(p[1], STDOUT_FILENO);
    ::dup2(p[1], STDERR_FILENO);
    ::setenv("TF_CONFIG", tf_config.c_str(), 1);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(exe.c_str()));
    for (const auto& a : worker_args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    std::fprintf(stderr, "cannot run %s: %s\n", exe.c_str(), std::strerror(errno));
    ::_exit(kExitInternal);
  }
  ::close(p[1]);
  Child c;
  c.name = name;
  c.pid = pid;
  c.fd = p[0];
  return c;
}

}  // namespace

int RunLaunch(const std::vector<std::string>& args, const std::string& self_path) {
  auto flags = Flags::Parse(args, {"workers", "job", "base_port", "grace_s"});
  if (!flags.ok()) {
    PrintError(flags.status().message());
    return kExitBadConfig;
  }
  auto n = flags->get_int("workers", 2, 1, 64);
  auto base_port = flags->get_int("base_port", 0, 0, 65535 - 64);
  auto grace_s = flags->get_int("grace_s", 30, 1, 3600);
  for (const Status& s : {n.status(), base_port.status(), grace_s.status()}) {
    if (!s.ok()) {
      PrintError(s.message());
      return kExitBadConfig;
    }
  }
  if (!flags->has("job")) {
    PrintError("--job JOB.json is required");
    return kExitBadConfig;
  }
  std::vector<int> ports;
  if (*base_port > 0) {
    for (int i = 0; i < *n; ++i) ports.push_back(*base_port + i);
  } else {
    auto free_ports = FreePorts(*n);
    if (!free_ports.ok()) {
      PrintError(free_ports.status().message());
      return kExitInternal;
    }
    ports = *free_ports;
  }
  char exe_buf[PATH_MAX];
  ssize_t len = ::readlink(self_path.c_str(), exe_buf, sizeof(exe_buf) - 1);
  std::string exe = len > 0 ? std::string(exe_buf, static_cast<size_t>(len)) : self_path;

  nlohmann::json cluster = {{"worker", nlohmann::json::array()}};
  for (int p : ports) cluster["worker"].push_back("127.0.0.1:" + std::to_string(p));
  std::vector<std::string> worker_args = {"worker", "--job", flags->get("job")};
  worker_args.insert(worker_args.end(), flags->rest().begin(), flags->rest().end());

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  std::vector<Child> children;
  for (int i = 0; i < *n; ++i) {
    nlohmann::json tf = {{"cluster", cluster}, {"task", {{"type", "worker"}, {"index", i}}}};
    auto c = Spawn(exe, "worker:" + std::to_string(i), tf.dump(), worker_args);
    if (!c.ok()) {
      PrintError(c.status().message());
      for (auto& ch : children) ::kill(ch.pid, SIGTERM);
      for (auto& ch : children) ::waitpid(ch.pid, nullptr, 0);
      return kExitInternal;
    }
    children.push_back(std::move(c).value());
  }
  std::fprintf(stdout, "launched %d workers on 127.0.0.1 ports", *n);
  for (int p : ports) std::fprintf(stdout, " %d", p);
  std::fprintf(stdout, "\n");
  std::fflush(stdout);

  using Clock = std::chrono::steady_clock;
  int first_failure = 0;
  Clock::time_point failed_at{}, term_sent_at{};
  bool term_sent = false, kill_sent = false;
  size_t running = children.size();
  while (running > 0) {
    std::vector<pollfd> pfds;
    for (auto& c : children) {
      if (c.fd >= 0) pfds.push_back({c.fd, POLLIN, 0});
    }
    ::poll(pfds.data(), pfds.size(), 100);
    char buf[65536];
    for (auto& c : children) {
      if (c.fd < 0) continue;
      for (const auto& p : pfds) {
        if (p.fd != c.fd || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t r = ::read(c.fd, buf, sizeof(buf));
        if (r > 0) {
          Emit(c, buf, static_cast<size_t>(r), false);
        } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
          Emit(c, "", 0, true);
          ::close(c.fd);
          c.fd = -1;
        }
      }
    }
    for (auto& c : children) {
      if (c.exited) continue;
      int status = 0;
      if (::waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
      c.exited = true;
      --running;
      c.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (c.code != 0) {
        std::fprintf(stdout, "launch: %s exited with code %d\n", c.name.c_str(), c.code);
        if (first_failure == 0) {
          first_failure = c.code;
          failed_at = Clock::now();
        }
      }
    }
    // After a failure the others should fail on their own (heartbeats, collective
    // deadlines); if they have not within the grace period, stop them.
    bool stop = g_signal.load() != 0 ||
                (first_failure != 0 && Clock::now() - failed_at > std::chrono::seconds(*grace_s));
    if (stop && !term_sent) {
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
  }
  // Drain what the exited workers left in their pipes (their write ends are closed,
  // so each read ends at EOF).
  char buf[65536];
  for (auto& c : children) {
    if (c.fd < 0) continue;
    ssize_t r;
    while ((r = ::read(c.fd, buf, sizeof(buf))) > 0) Emit(c, buf, static_cast<size_t>(r), false);
    Emit(c, "", 0, true);
    ::close(c.fd);
  }
  if (g_signal.load() != 0 && first_failure == 0) return 128 + g_signal.load();
  return first_failure;
}

}  // namespace ringtrain::cli
