// TCP plumbing for the ring: an owning file descriptor, listen/connect/accept on
// non-blocking sockets, and whole-buffer send/receive bounded by a deadline and an
// optional abort descriptor (an eventfd that becomes readable when the owner aborts).
//
// Everything here converts system errors to a Status at the edge; nothing throws.
// Only the thread that owns a socket may send or receive on it. Blocking: every call
// that can wait takes a Deadline and returns by it.
#pragma once

#include <cstddef>
#include <string>

#include "common/deadline.h"
#include "common/status.h"

namespace ringtrain::collective {

// Owns one file descriptor; closes it on destruction. Move-only.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.release();
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset();  // closes; never blocks (no SO_LINGER is set)

 private:
  int fd_ = -1;
};

// Splits "host:port" at its last ':' ("[::1]:80" also accepted). False if malformed.
bool SplitHostPort(const std::string& address, std::string* host, int* port);

// A non-blocking listening socket on `host` at an ephemeral port (written to *port).
StatusOr<Fd> ListenTcp(const std::string& host, int* port);

// Connects to host:port, retrying with backoff while the peer refuses or is
// unreachable, until `deadline`. Returns a non-blocking socket with TCP_NODELAY.
// `peer` (e.g. "rank 2 (10.0.0.2:4000)") names the peer in errors.
StatusOr<Fd> ConnectTcp(const std::string& host, int port, Deadline deadline, const std::string& peer);

// Accepts one pending connection from a non-blocking listener, or returns an invalid
// Fd when none is pending. The accepted socket is non-blocking with TCP_NODELAY;
// *remote is set to its "ip:port".
StatusOr<Fd> AcceptTcp(int listen_fd, std::string* remote);

// "ip:port" of the remote end of a connected socket ("?" when unknown).
std::string RemoteAddress(int fd);

// Outcome of waiting on poll(2) with the abort descriptor in the set.
enum class WaitResult { kReady, kTimeout, kAborted };

// Waits until fd has any of `events` (POLLIN/POLLOUT; errors count as ready), the
// abort fd (-1 for none) is readable, or the deadline passes.
StatusOr<WaitResult> WaitFd(int fd, short events, int abort_fd, Deadline deadline);

// Sends / receives exactly len bytes on a non-blocking socket. Errors name `peer`:
// UNAVAILABLE when the connection closed or failed, DEADLINE_EXCEEDED on timeout,
// ABORTED when abort_fd became readable.
Status SendAll(int fd, const void* data, size_t len, Deadline deadline, int abort_fd, const std::string& peer);
Status RecvAll(int fd, void* data, size_t len, Deadline deadline, int abort_fd, const std::string& peer);

}  // namespace ringtrain::collective
