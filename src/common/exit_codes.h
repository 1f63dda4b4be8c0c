// The process exit codes of `ringtrain`, documented in README.md ("Exit codes").
// Schedulers and the launcher act on them, so they never change meaning.
#pragma once

namespace ringtrain {

enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1,        // an unexpected error (a bug): please report it
  kExitBadConfig = 2,       // bad TF_CONFIG, job file or flags, or a job that differs from the chief's
  kExitBadData = 3,         // a data file is missing, unreadable or malformed
  kExitRendezvous = 4,      // the cluster did not assemble before the rendezvous timeout
  kExitPeerFailure = 5,     // a peer failed or hung during training (collective or heartbeat failure)
  kExitCheckpoint = 6,      // a model or backup file could not be written or read
  kExitPreempted = 7,       // stopped by SIGTERM/SIGINT at a step boundary after a backup: restart to resume
};

}  // namespace ringtrain
