#include "preempt/stop_signals.h"

#include <semaphore.h>
#include <signal.h>
#include <string.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "common/logging.h"

namespace ringtrain::preempt {
namespace {

StopFlag g_flag;
static_assert(std::atomic<bool>::is_always_lock_free, "the handler needs lock-free atomics");
std::atomic<int> g_signal{0};
sem_t g_wake;  // posted once by the first signal: wakes the watchdog
double g_grace_s = 25;

// Ends the process as `sig` would have by default: the supervisor sees 128 + sig.
// Async-signal-safe (signal(2) and raise(3) are).
void DieBy(int sig) {
  ::signal(sig, SIG_DFL);
  ::raise(sig);
  ::_exit(128 + sig);  // not reached: the default action of SIGTERM/SIGINT ends the process
}

void OnStopSignal(int sig) {
  int none = 0;
  if (!g_signal.compare_exchange_strong(none, sig)) DieBy(sig);  // the second one: at once
  if (!g_flag.listening.load()) DieBy(sig);  // no step boundary to stop at: nothing to save
  g_flag.requested.store(true);
  ::sem_post(&g_wake);
}

std::string Name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// Waits for the first signal, then gives the task grace_s to stop on its own.
void Watchdog() {
  while (::sem_wait(&g_wake) != 0) {
  }
  const int sig = g_signal.load();
  RT_LOG(WARNING) << Name(sig) << " received: stopping at the next step boundary after a backup (within "
                  << g_grace_s << " s, RINGTRAIN_PREEMPT_GRACE_S; a second " << Name(sig) << " stops at once)";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(g_grace_s);
  while (std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  RT_LOG(ERROR) << "the grace period of " << g_grace_s << " s after " << Name(sig)
                << " ran out before this task could stop at a step boundary; exiting now (raise "
                   "RINGTRAIN_PREEMPT_GRACE_S, and the scheduler's grace period with it, if saving takes longer)";
  DieBy(sig);
}

}  // namespace

StatusOr<StopFlag*> InstallStopSignals(double grace_s) {
  static std::once_flag once;
  static Status installed;
  std::call_once(once, [grace_s] {
    g_grace_s = grace_s;
    if (::sem_init(&g_wake, 0, 0) != 0) {
      installed = ErrnoError("sem_init for the stop signals", errno);
      return;
    }
    try {
      std::thread(Watchdog).detach();
    } catch (const std::system_error& e) {
      installed = InternalError(std::string("starting the preemption watchdog thread: ") + e.what());
      return;
    }
    struct sigaction sa {};
    sa.sa_handler = OnStopSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int sig : {SIGTERM, SIGINT}) {
      if (::sigaction(sig, &sa, nullptr) != 0) {
        installed = ErrnoError("installing the " + Name(sig) + " handler", errno);
        return;
      }
    }
  });
  if (!installed.ok()) return installed;
  return &g_flag;
}

int StopSignal() { return g_signal.load(); }

}  // namespace ringtrain::preempt
