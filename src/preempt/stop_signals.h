// SIGTERM and SIGINT as a request to stop at the next step boundary (Keras'
// BackupAndRestore save_before_preemption): Kubernetes, Slurm and systemd send SIGTERM
// some time before they kill a task, and that is the time to save its step.
//
// InstallStopSignals replaces the default action of SIGTERM and SIGINT for the process:
//   - the first one, while someone listens (StopFlag::listening: the trainer, while Fit
//     runs), only sets StopFlag::requested (the handler is async-signal-safe: atomic
//     loads and stores and sem_post), which the trainer polls between steps; while nobody
//     listens (starting up, waiting for a lost peer) there is no step to save, and it
//     ends the process at once, as before;
//   - a second one, or the grace period running out after the first, ends the process
//     at once as the signal itself would have (exit status 128 + signal), so that a
//     task stuck somewhere the flag is not seen (a rendezvous, a hung peer) still obeys.
// A watchdog thread, started by InstallStopSignals, logs the request and enforces the
// grace period; it only blocks on a semaphore and in timed sleeps, and is never joined
// (it lives as long as the process).
//
// Threading: call InstallStopSignals once, from the main thread, before other threads
// that should inherit the default mask start (later calls return the same flag and keep
// the first grace period). The returned flag may be read from any thread.
// Errors: sigaction or thread creation failing gives an INTERNAL status.
#pragma once

#include <atomic>

#include "common/status.h"

namespace ringtrain::preempt {

struct StopFlag {
  std::atomic<bool> requested{false};  // set by the first SIGTERM/SIGINT while listening
  std::atomic<bool> listening{false};  // set by the code that acts on `requested`
};

// The process's flag (static storage: it outlives everything).
StatusOr<StopFlag*> InstallStopSignals(double grace_s);

// The signal that set the flag (SIGTERM or SIGINT), 0 while none arrived.
int StopSignal();

}  // namespace ringtrain::preempt
