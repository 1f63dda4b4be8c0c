#include "signal_forwarding.h"

#include <signal.h>

#include <atomic>

namespace ringtrain::cli {
namespace {

std::atomic<int> g_first{0};
std::atomic<int> g_count{0};

void OnSignal(int sig) {
  int none = 0;
  g_first.compare_exchange_strong(none, sig);
  g_count.fetch_add(1);
}

// A child's own grace period ends first; this margin covers its exit and our poll.
constexpr double kMarginS = 5;

}  // namespace

void InstallForwardedSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

int FirstForwardedSignal() { return g_first.load(); }

void SignalForwarder::Forward(const std::vector<pid_t>& running) {
  const int received = g_count.load();
  const auto now = std::chrono::steady_clock::now();
  // At most two SIGTERMs: the first asks to stop, the second ends the child at once.
  while (terms_sent_ < received && terms_sent_ < 2) {
    for (pid_t pid : running) ::kill(pid, SIGTERM);
    if (terms_sent_++ == 0) first_sent_at_ = now;
  }
  if (terms_sent_ > 0 && !kill_sent_ && now - first_sent_at_ > grace_ + std::chrono::duration<double>(kMarginS)) {
    for (pid_t pid : running) ::kill(pid, SIGKILL);
    kill_sent_ = true;
  }
}

}  // namespace ringtrain::cli
