#include "multihost/net_hosts.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "integration/process.h"

namespace ringtrain::testing {
namespace {

constexpr double kIpTimeoutS = 10;

std::string FindIp() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string d; std::getline(ss, d, ':');) dirs.push_back(d);
  }
  for (const char* d : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) dirs.push_back(d);
  for (const auto& d : dirs) {
    std::string p = d + "/ip";
    if (!d.empty() && ::access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

std::string Join(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += " " + a;
  return s;
}

// A TCP socket that belongs to namespace `ns`. A socket keeps the namespace it was
// created in, so a short-lived thread enters the namespace (network namespaces are per
// thread) just to create it; the rest of the process stays where it was.
StatusOr<int> SocketIn(const std::string& ns) {
  Status st;
  int fd = -1;
  std::thread t([&] {
    int nsfd = ::open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (nsfd < 0) {
      st = ErrnoError("opening /var/run/netns/" + ns, errno);
      return;
    }
    if (::setns(nsfd, CLONE_NEWNET) != 0) {
      st = ErrnoError("entering network namespace " + ns, errno);
    } else {
      fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) st = ErrnoError("socket() in namespace " + ns, errno);
    }
    ::close(nsfd);
  });
  t.join();
  if (!st.ok()) return st;
  return fd;
}

sockaddr_in Address(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

// One non-blocking connect attempt, bounded by timeout_ms.
Status ConnectOnce(int fd, const sockaddr_in& to, int timeout_ms) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) == 0) return Status();
  if (errno != EINPROGRESS) return ErrnoError("connect", errno);
  pollfd pfd{fd, POLLOUT, 0};
  if (::poll(&pfd, 1, timeout_ms) <= 0) return DeadlineExceededError("connect timed out");
  int err = 0;
  socklen_t len = sizeof(err);
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  return err == 0 ? Status() : ErrnoError("connect", err);
}

}  // namespace

StatusOr<std::unique_ptr<NetHosts>> NetHosts::Create(int n) {
  if (::geteuid() != 0) {
    return FailedPreconditionError("not running as root: creating network namespaces needs root (CAP_SYS_ADMIN, "
                                   "CAP_NET_ADMIN); run this test as root to exercise it");
  }
  std::unique_ptr<NetHosts> hosts(new NetHosts());
  hosts->ip_ = FindIp();
  if (hosts->ip_.empty()) {
    return FailedPreconditionError("the `ip` command (iproute2) is not in PATH, /usr/sbin or /sbin; install iproute2");
  }
  const std::string prefix = "rt" + std::to_string(::getpid());
  hosts->subnet_ = "10.213." + std::to_string(::getpid() % 250) + ".";
  hosts->bridge_ns_ = prefix + "br";
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back(prefix + static_cast<char>('a' + i));
  names.push_back(hosts->bridge_ns_);
  for (const auto& name : names) {
    Status st = hosts->Ip({"netns", "add", name});
    if (!st.ok() && st.message().find("exists") != std::string::npos) {
      // Left by an earlier process with our pid that died before its teardown; if the
      // delete fails, the add below says why.
      static_cast<void>(hosts->Ip({"netns", "del", name}));
      st = hosts->Ip({"netns", "add", name});
    }
    if (!st.ok()) return FailedPreconditionError("this machine does not allow network namespaces: " + st.message());
    hosts->created_.push_back(name);
    if (name != hosts->bridge_ns_) hosts->namespaces_.push_back(name);
  }
  const std::string& br = hosts->bridge_ns_;
  if (Status st = hosts->Ip({"-n", br, "link", "add", "br0", "type", "bridge"}); !st.ok()) {
    return FailedPreconditionError("this machine does not allow bridges in a namespace: " + st.message());
  }
  RT_RETURN_IF_ERROR(hosts->Ip({"-n", br, "link", "set", "br0", "up"}));
  for (int i = 0; i < n; ++i) {
    const std::string ns = hosts->namespaces_[i];
    const std::string veth = std::string("v").append(std::to_string(i));
    if (Status st = hosts->Ip({"-n", br, "link", "add", veth, "type", "veth", "peer", "name", device(), "netns", ns});
        !st.ok()) {
      return FailedPreconditionError("this machine does not allow veth pairs: " + st.message());
    }
    RT_RETURN_IF_ERROR(hosts->Ip({"-n", br, "link", "set", veth, "master", "br0"}));
    RT_RETURN_IF_ERROR(hosts->Ip({"-n", br, "link", "set", veth, "up"}));
    RT_RETURN_IF_ERROR(hosts->Ip({"-n", ns, "addr", "add", hosts->address(i) + "/24", "dev", device()}));
    RT_RETURN_IF_ERROR(hosts->Ip({"-n", ns, "link", "set", device(), "up"}));
    RT_RETURN_IF_ERROR(hosts->Ip({"-n", ns, "link", "set", "lo", "up"}));
  }
  return hosts;
}

NetHosts::~NetHosts() {
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    try {
      Status st = Ip({"netns", "del", *it});
      if (!st.ok()) std::fprintf(stderr, "warning: %s\n", st.message().c_str());
    } catch (...) {
      std::fprintf(stderr, "warning: could not delete network namespace %s\n", it->c_str());
    }
  }
}

std::string NetHosts::address(int i) const { return subnet_ + std::to_string(i + 1); }

Status NetHosts::SetLink(int i, bool up) {
  return Ip({"-n", namespaces_[i], "link", "set", device(), up ? "up" : "down"});
}

std::vector<std::string> NetHosts::ExecPrefix(int i) const { return {ip_, "netns", "exec", namespaces_[i]}; }

Status NetHosts::CheckTcp(int from, int to, double timeout_s) {
  RT_ASSIGN_OR_RETURN(int listener, SocketIn(namespaces_[to]));
  sockaddr_in at = Address(address(to), 0);
  socklen_t len = sizeof(at);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&at), sizeof(at)) != 0 || ::listen(listener, 4) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&at), &len) != 0) {
    Status st = ErrnoError("listening on " + address(to) + " in " + namespaces_[to], errno);
    ::close(listener);
    return st;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  Status st;
  do {
    auto client = SocketIn(namespaces_[from]);
    if (!client.ok()) {
      st = client.status();
      break;
    }
    st = ConnectOnce(*client, at, 1000);
    ::close(*client);
    if (st.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (std::chrono::steady_clock::now() < deadline);
  ::close(listener);
  if (!st.ok()) {
    return st.WithContext("no TCP connection from " + namespaces_[from] + " (" + address(from) + ") to " +
                          address(to) + ":" + std::to_string(ntohs(at.sin_port)) + " in " + namespaces_[to]);
  }
  return st;
}

Status NetHosts::Ip(const std::vector<std::string>& args) const {
  Process p(ip_, args);
  ProcessResult r = p.Wait(kIpTimeoutS);
  if (r.timed_out) return DeadlineExceededError("`ip" + Join(args) + "` did not finish in 10 s");
  if (r.exit_code != 0) {
    return InternalError("`ip" + Join(args) + "` failed with exit code " + std::to_string(r.exit_code) + ": " +
                         r.output);
  }
  return Status();
}

}  // namespace ringtrain::testing
