// The one policy that turns a failure into the process's exit code, and what a
// supervisor does with exit codes. Every command (worker, evaluate, predict, bench,
// launch) uses it; tests/common/exit_policy_test.cc pins the whole table, and
// docs/reference/exit-codes.md is its documentation.
//
// The code follows from what the failure concerns (Status::subject(), set by the edge
// that knows) and, where nothing set that, from the status code alone:
//
//   subject    exit  except
//   kConfig    2
//   kData      3
//   kCluster   4     2 for a refusal (INVALID_ARGUMENT, PERMISSION_DENIED, UNIMPLEMENTED,
//                    FAILED_PRECONDITION, RESOURCE_EXHAUSTED): waiting or restarting
//                    cannot change it
//   kPeers     5
//   kStorage   6
//   kUnknown   by code: INVALID_ARGUMENT, UNIMPLEMENTED, PERMISSION_DENIED,
//              RESOURCE_EXHAUSTED -> 2; UNAVAILABLE, ABORTED, DEADLINE_EXCEEDED -> 5;
//              NOT_FOUND, DATA_LOSS, FAILED_PRECONDITION, INTERNAL -> 1
#pragma once

#include <vector>

#include "common/exit_codes.h"
#include "common/status.h"

namespace ringtrain {

// kExitOk for OK; otherwise the table above. (Exit 7, kExitPreempted, is no failure: the
// worker returns it when recovery::RunResult::preempted says it stopped on SIGTERM.)
int ExitCodeFor(const Status& status);

// Whether a failed generation may succeed if the tasks meet again (recovery in place):
// the failure came from another task or the network, not from this task's
// configuration, data or disk. Exactly the failures ExitCodeFor maps to 4 or 5.
bool IsTransient(const Status& status);

// Exit codes of a process killed by signal `sig` (the shell's convention, 128 + sig):
// 143 for SIGTERM, 137 for SIGKILL.
constexpr int ExitCodeOfSignal(int sig) { return 128 + sig; }

// Whether restarting a task that exited with `code` can help (launch --max_restarts,
// the shipped systemd and Kubernetes policies): killed by a signal (128+N), an internal
// error (1), a rendezvous timeout (4), a peer failure (5) or a preemption (7: it saved
// its step and asks to be restarted). Bad configuration (2), bad data (3) and storage
// errors (6) would only fail the same way again.
bool IsRestartableExit(int code);

// Of the non-zero exit codes of a cluster's tasks, in the order the tasks exited, the
// one that names the root cause: a permanent failure (2, 3, 6) before an internal error
// (1), before a rendezvous failure (4), before a signal or a preemption (7), before a peer failure (5),
// which is usually the others' reaction to the first. Within a class the earliest
// wins. Codes in `ignored` (e.g. the SIGTERM the launcher itself sent) rank last.
// 0 for an empty list.
int RootCauseExit(const std::vector<int>& codes_in_exit_order, const std::vector<int>& ignored = {});

// "bad configuration", "peer failure", "killed by signal 15 (SIGTERM)", ...
std::string ExitCodeMeaning(int code);

}  // namespace ringtrain
