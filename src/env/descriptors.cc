#include "env/descriptors.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace ringtrain::env {
namespace {

struct Reserve {
  std::mutex mu;
  int target = 0;         // guarded by mu
  std::vector<int> fds;   // guarded by mu
};

Reserve& TheReserve() {
  static Reserve* const r = new Reserve;  // never destroyed: used until exit
  return *r;
}

uint64_t Limit(rlim_t v) { return v == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(v); }

std::string LimitText(uint64_t v) { return v == UINT64_MAX ? "unlimited" : std::to_string(v); }

// Opens /dev/null until the reserve holds its target; stops at the first failure.
void FillLocked(Reserve& r) {
  while (static_cast<int>(r.fds.size()) < r.target) {
    const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    r.fds.push_back(fd);
  }
}

bool OutOfDescriptors(int err) { return err == EMFILE || err == ENFILE; }

}  // namespace

OpenFileLimit RaiseOpenFileLimit() {
  OpenFileLimit out;
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) {
    out.error = std::string("getrlimit: ") + std::strerror(errno);
    return out;
  }
  out.soft_before = out.soft = Limit(lim.rlim_cur);
  out.hard = Limit(lim.rlim_max);
  if (lim.rlim_cur == lim.rlim_max) return out;
  rlimit raised = lim;
  raised.rlim_cur = lim.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &raised) != 0) {
    out.error = std::string("setrlimit: ") + std::strerror(errno);
    return out;
  }
  out.soft = out.hard;
  return out;
}

std::string Describe(const OpenFileLimit& limit) {
  std::string s = "open files: soft limit " + LimitText(limit.soft_before);
  if (limit.soft != limit.soft_before) {
    s += " raised to " + LimitText(limit.soft) + " (the hard limit)";
  } else {
    s += ", hard limit " + LimitText(limit.hard);
  }
  if (!limit.error.empty()) s += "; could not raise it: " + limit.error;
  return s;
}

int ReserveDescriptors(int count) {
  Reserve& r = TheReserve();
  std::lock_guard<std::mutex> lock(r.mu);
  r.target = std::max(0, count);
  while (static_cast<int>(r.fds.size()) > r.target) {
    ::close(r.fds.back());
    r.fds.pop_back();
  }
  FillLocked(r);
  return static_cast<int>(r.fds.size());
}

int ReservedDescriptors() {
  Reserve& r = TheReserve();
  std::lock_guard<std::mutex> lock(r.mu);
  return static_cast<int>(r.fds.size());
}

int OpenWithReserve(const std::function<int()>& open_fn) {
  int fd = open_fn();
  int err = fd < 0 ? errno : 0;
  if (fd >= 0 || !OutOfDescriptors(err)) return fd;
  Reserve& r = TheReserve();
  {
    // Held across close and open, so that no other caller of this function takes the
    // freed number in between.
    std::lock_guard<std::mutex> lock(r.mu);
    while (fd < 0 && OutOfDescriptors(err) && !r.fds.empty()) {
      ::close(r.fds.back());
      r.fds.pop_back();
      fd = open_fn();
      err = fd < 0 ? errno : 0;
    }
  }
  const auto give_up = std::chrono::steady_clock::now() + kOpenRetryBudget;
  auto pause = std::chrono::milliseconds(20);
  while (fd < 0 && OutOfDescriptors(err) && std::chrono::steady_clock::now() + pause < give_up) {
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
    fd = open_fn();
    err = fd < 0 ? errno : 0;
  }
  if (fd < 0) errno = err;
  return fd;
}

void RefillReserve() {
  Reserve& r = TheReserve();
  std::lock_guard<std::mutex> lock(r.mu);
  FillLocked(r);
}

}  // namespace ringtrain::env
