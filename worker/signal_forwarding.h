// What a supervisor of local tasks (`ringtrain launch`, RunLocalCluster) does with the
// SIGTERM/SIGINT it receives: it forwards them to its children, which stop at a step
// boundary after a backup and exit 7 (preempt/stop_signals.h), instead of dying itself.
//
//   - the first signal: each running child gets one SIGTERM; the supervisor waits for
//     them up to the grace period (RINGTRAIN_PREEMPT_GRACE_S plus a margin, so that a
//     child that runs out of its own grace ends first), then SIGKILLs what is left;
//   - a second signal: each running child gets a second SIGTERM, which ends it at once.
//
// Threading: InstallForwardedSignals from the main thread; the rest from the thread
// that supervises. The handler only stores to atomics (async-signal-safe).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <vector>

namespace ringtrain::cli {

// Catches SIGTERM and SIGINT for this process (replacing their default action).
void InstallForwardedSignals();
// The first signal received (SIGTERM or SIGINT), 0 if none.
int FirstForwardedSignal();

// Decides, at each turn of the supervisor's loop, what its running children get.
class SignalForwarder {
 public:
  explicit SignalForwarder(double grace_s) : grace_(grace_s) {}
  // Sends what is due to `running` (the pids of the children still running): a SIGTERM
  // per signal received, and SIGKILL once the grace period after the first has passed.
  // Never blocks.
  void Forward(const std::vector<pid_t>& running);
  bool term_sent() const { return terms_sent_ > 0; }
  bool kill_sent() const { return kill_sent_; }

 private:
  std::chrono::duration<double> grace_;
  int terms_sent_ = 0;
  bool kill_sent_ = false;
  std::chrono::steady_clock::time_point first_sent_at_{};
};

}  // namespace ringtrain::cli
