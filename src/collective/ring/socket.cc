#include "collective/ring/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>

namespace ringtrain::collective {
namespace {

struct AddrInfoDeleter {
  void operator()(addrinfo* ai) const { freeaddrinfo(ai); }
};
using AddrInfoPtr = std::unique_ptr<addrinfo, AddrInfoDeleter>;

StatusOr<AddrInfoPtr> Resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* result = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &result);
  if (rc != 0) {
    return UnavailableError("cannot resolve host '" + host + "': " + gai_strerror(rc) +
                            "; check the host name in the cluster configuration");
  }
  return AddrInfoPtr(result);
}

std::string FormatAddress(const sockaddr* sa) {
  char ip[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
    port = ntohs(in->sin_port);
    return std::string(ip) + ":" + std::to_string(port);
  }
  if (sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
    port = ntohs(in6->sin6_port);
    std::string out = "[";  // built piecewise: GCC 12 warns falsely (-Wrestrict) on "[" + std::string(ip)
    out.append(ip).append("]:").append(std::to_string(port));
    return out;
  }
  return "?";
}

// Latency matters more than batching for ring steps, so disable Nagle (the ring sends
// each message with one sendmsg, header and data together, so Nagle has nothing to
// coalesce). Buffer sizes are left to the kernel: setting SO_SNDBUF/SO_RCVBUF turns off
// Linux's autotuning and is capped by net.core.{w,r}mem_max, which is usually smaller;
// fixed 1 MiB and 4 MiB buffers measured no better than autotuning on loopback.
void SetNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

bool RetryableConnectError(int err) {
  return err == ECONNREFUSED || err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH ||
         err == ECONNRESET || err == EAGAIN || err == ECONNABORTED;
}

}  // namespace

void Fd::reset() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

bool SplitHostPort(const std::string& address, std::string* host, int* port) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= address.size()) return false;
  std::string h = address.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  int p = 0;
  for (size_t i = colon + 1; i < address.size(); ++i) {
    if (address[i] < '0' || address[i] > '9') return false;
    p = p * 10 + (address[i] - '0');
    if (p > 65535) return false;
  }
  if (p == 0 || h.empty()) return false;
  *host = h;
  *port = p;
  return true;
}

StatusOr<Fd> ListenTcp(const std::string& host, int* port) {
  RT_ASSIGN_OR_RETURN(AddrInfoPtr addrs, Resolve(host, 0, /*passive=*/true));
  Status last = InternalError("no address found for '" + host + "'");
  for (addrinfo* ai = addrs.get(); ai != nullptr; ai = ai->ai_next) {
    Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) {
      last = ErrnoError("socket() for listening on " + host, errno);
      continue;
    }
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      last = ErrnoError("cannot listen on host '" + host +
                            "' (bind failed; is it an address of this machine?)",
                        errno);
      continue;
    }
    if (::listen(fd.get(), 128) != 0) {
      last = ErrnoError("listen() on " + host, errno);
      continue;
    }
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      last = ErrnoError("getsockname() on " + host, errno);
      continue;
    }
    *port = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                       : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    return fd;
  }
  return last;
}

StatusOr<Fd> ConnectTcp(const std::string& host, int port, Deadline deadline, const std::string& peer) {
  auto backoff = std::chrono::milliseconds(10);
  std::string last_error = "no attempt was made";
  while (true) {
    auto addrs = Resolve(host, port, /*passive=*/false);
    if (!addrs.ok()) {
      last_error = addrs.status().message();
    } else {
      for (addrinfo* ai = addrs->get(); ai != nullptr; ai = ai->ai_next) {
        Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
        if (!fd.valid()) return ErrnoError("socket() to connect to " + peer, errno);
        int err = 0;
        if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
          err = errno;
          if (err == EINPROGRESS) {
            RT_ASSIGN_OR_RETURN(WaitResult w, WaitFd(fd.get(), POLLOUT, -1, deadline));
            if (w != WaitResult::kReady) break;  // deadline; reported below
            socklen_t len = sizeof(err);
            if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
          }
        }
        if (err == 0) {
          SetNoDelay(fd.get());
          return fd;
        }
        last_error = std::strerror(err);
        if (!RetryableConnectError(err)) {
          return ErrnoError("cannot connect to " + peer + " at " + host + ":" + std::to_string(port), err);
        }
      }
    }
    if (deadline.expired()) break;
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(backoff, deadline.remaining()));
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::seconds(1));
  }
  return DeadlineExceededError("could not connect to " + peer + " at " + host + ":" + std::to_string(port) +
                               " before the deadline (last error: " + last_error +
                               "); check that the peer is running and the address is reachable");
}

StatusOr<Fd> AcceptTcp(int listen_fd, std::string* remote) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    // A connection that was reset while queued is the client's problem, not ours.
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED) return Fd();
    return ErrnoError("accept() on the ring listener", err);
  }
  SetNoDelay(fd);
  *remote = FormatAddress(reinterpret_cast<sockaddr*>(&addr));
  return Fd(fd);
}

std::string RemoteAddress(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  return FormatAddress(reinterpret_cast<sockaddr*>(&addr));
}

StatusOr<WaitResult> WaitFd(int fd, short events, int abort_fd, Deadline deadline) {
  while (true) {
    pollfd fds[2] = {{fd, events, 0}, {abort_fd, POLLIN, 0}};
    int n = ::poll(fds, abort_fd >= 0 ? 2 : 1, deadline.remaining_ms_for_poll());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("poll()", errno);
    }
    if (abort_fd >= 0 && fds[1].revents != 0) return WaitResult::kAborted;
    if (fds[0].revents != 0) return WaitResult::kReady;
    if (deadline.expired()) return WaitResult::kTimeout;
  }
}

Status SendAll(int fd, const void* data, size_t len, Deadline deadline, int abort_fd, const std::string& peer) {
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::send(fd, p + done, len - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      return UnavailableError("connection to " + peer + " failed while sending: " + std::strerror(errno));
    }
    RT_ASSIGN_OR_RETURN(WaitResult w, WaitFd(fd, POLLOUT, abort_fd, deadline));
    if (w == WaitResult::kAborted) return AbortedError("aborted while sending to " + peer);
    if (w == WaitResult::kTimeout) return DeadlineExceededError("timed out sending to " + peer);
  }
  return Status::Ok();
}

Status RecvAll(int fd, void* data, size_t len, Deadline deadline, int abort_fd, const std::string& peer) {
  char* p = static_cast<char*>(data);
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::recv(fd, p + done, len - done, 0);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return UnavailableError("connection to " + peer + " closed");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return UnavailableError("connection to " + peer + " failed while receiving: " + std::strerror(errno));
    }
    RT_ASSIGN_OR_RETURN(WaitResult w, WaitFd(fd, POLLIN, abort_fd, deadline));
    if (w == WaitResult::kAborted) return AbortedError("aborted while receiving from " + peer);
    if (w == WaitResult::kTimeout) return DeadlineExceededError("timed out waiting for data from " + peer);
  }
  return Status::Ok();
}

}  // namespace ringtrain::collective
