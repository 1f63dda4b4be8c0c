#include "daemon/job_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

extern char** environ;

namespace ringtrain::daemon {

StatusOr<std::unique_ptr<JobChild>> JobChild::Start(const ChildSpec& spec) {
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::map<std::string, std::string> env_map;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) env_map[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  for (const auto& [k, v] : spec.env) env_map[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env_map) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> arg_strings = {spec.exe};
  arg_strings.insert(arg_strings.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv;
  for (std::string& s : arg_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  const int out = ::open(spec.output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0) {
    return Status(Code::kInternal, "cannot open " + spec.output_path + ": " + std::strerror(errno), Subject::kStorage);
  }
  const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(out);
    if (in >= 0) ::close(in);
    return InternalError(std::string("cannot start the job's process: fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(137);  // the daemon died before prctl
    if (in >= 0) ::dup2(in, STDIN_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    if (::chdir(spec.cwd.c_str()) != 0) ::_exit(126);
    ::execve(spec.exe.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out);
  if (in >= 0) ::close(in);
  return std::unique_ptr<JobChild>(new JobChild(pid));
}

JobChild::~JobChild() {
  if (exit_code_) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

std::optional<int> JobChild::Poll() {
  if (exit_code_) return exit_code_;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
  }
  return exit_code_;
}

void JobChild::Signal(int sig) {
  if (!exit_code_) ::kill(pid_, sig);
}

std::string LastErrorLine(const std::string& output_path) {
  const int fd = ::open(output_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  const off_t size = ::lseek(fd, 0, SEEK_END);
  const off_t from = size > (64 << 10) ? size - (64 << 10) : 0;
  std::string text(static_cast<size_t>(size - from), '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), from);
  ::close(fd);
  if (n <= 0) return "";
  text.resize(static_cast<size_t>(n));
  std::string found;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    const size_t mark = line.find(": error: ");
    if (line.rfind("ringtrain", 0) == 0 && mark != std::string::npos) found = line.substr(mark + 9);
    start = end + 1;
  }
  return found;
}

}  // namespace ringtrain::daemon
