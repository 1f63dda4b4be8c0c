#include "process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace ringtrain::testing {

Process::Process(const std::string& binary, const std::vector<std::string>& args,
                 const std::map<std::string, std::string>& env) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return;
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(p[1], STDOUT_FILENO);
    ::dup2(p[1], STDERR_FILENO);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(p[1]);
  fd_ = p[0];
}

Process::~Process() {
  if (pid_ > 0 && !done_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (fd_ >= 0) ::close(fd_);
}

void Process::Kill(int sig) {
  if (pid_ > 0 && !done_) ::kill(pid_, sig);
}

bool Process::WaitForOutput(const std::string& text, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[65536];
  while (fd_ >= 0 && output_.find(text) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd pfd{fd_, POLLIN, 0};
    ::poll(&pfd, 1, 50);
    if (!pfd.revents) continue;
    ssize_t r = ::read(fd_, buf, sizeof(buf));
    if (r <= 0) break;  // the child closed its output; Wait() collects the exit
    output_.append(buf, static_cast<size_t>(r));
  }
  return output_.find(text) != std::string::npos;
}

ProcessResult Process::Wait(double timeout_s) {
  if (done_) return result_;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[65536];
  bool eof = fd_ < 0;
  int status = 0;
  bool exited = false;
  while (!exited || !eof) {
    if (std::chrono::steady_clock::now() > deadline && !exited) {
      result_.timed_out = true;
      ::kill(pid_, SIGKILL);
    }
    if (!eof) {
      pollfd pfd{fd_, POLLIN, 0};
      ::poll(&pfd, 1, 50);
      if (pfd.revents) {
        ssize_t r = ::read(fd_, buf, sizeof(buf));
        if (r > 0) output_.append(buf, static_cast<size_t>(r));
        else eof = true;
      }
    } else {
      ::usleep(20000);
    }
    if (!exited && ::waitpid(pid_, &status, WNOHANG) == pid_) exited = true;
  }
  done_ = true;
  result_.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result_.output = output_;
  return result_;
}

std::string RingtrainBinary() {
  const char* b = std::getenv("RINGTRAIN_BINARY");
  return b ? b : RINGTRAIN_TEST_BINARY;
}

std::string SourceDir() {
  const char* s = std::getenv("RINGTRAIN_SOURCE_DIR");
  return s ? s : RINGTRAIN_TEST_SOURCE_DIR;
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::vector<nlohmann::json> ReadJsonLines(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(ReadFileOrEmpty(path));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

std::vector<int> FreePorts(int n) {
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ports.push_back(ntohs(a.sin_port));
    fds.push_back(fd);
  }
  for (int fd : fds) ::close(fd);
  return ports;
}

pid_t FindLaunchedTask(pid_t launcher, int index, double timeout_s) {
  const std::string needle = "\"index\":" + std::to_string(index) + ",";  // nlohmann sorts the keys
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    std::istringstream in(ReadFileOrEmpty("/proc/" + std::to_string(launcher) + "/task/" +
                                          std::to_string(launcher) + "/children"));
    for (pid_t c; in >> c;) {
      std::string env = ReadFileOrEmpty("/proc/" + std::to_string(c) + "/environ");
      if (env.find("TF_CONFIG=") != std::string::npos && env.find(needle) != std::string::npos) return c;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

}  // namespace ringtrain::testing
