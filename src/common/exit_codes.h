// The process exit codes of `ringtrain`, documented in docs/reference/exit-codes.md
// (tests/common/exit_codes_doc_test.cc checks that its table lists exactly these).
// Schedulers and the launcher act on them, so they never change meaning.
#pragma once

namespace ringtrain {

// X(name, code): every exit code, once. The enum and kAllExitCodes both come from it.
#define RINGTRAIN_EXIT_CODES(X)                                                                     \
  X(kExitOk, 0)            /* success */                                                           \
  X(kExitInternal, 1)      /* an unexpected error (a bug): please report it */                     \
  X(kExitBadConfig, 2)     /* bad TF_CONFIG, job file or flags, or a job that differs from the chief's */ \
  X(kExitBadData, 3)       /* a data file is missing, unreadable or malformed */                   \
  X(kExitRendezvous, 4)    /* the cluster did not assemble before the rendezvous timeout */        \
  X(kExitPeerFailure, 5)   /* a peer failed or hung during training (collective or heartbeat) */   \
  X(kExitCheckpoint, 6)    /* a model or backup file could not be written or read */               \
  X(kExitPreempted, 7)     /* stopped by SIGTERM/SIGINT at a step boundary after a backup */

enum ExitCode : int {
#define RINGTRAIN_EXIT_ENUM(name, code) name = code,
  RINGTRAIN_EXIT_CODES(RINGTRAIN_EXIT_ENUM)
#undef RINGTRAIN_EXIT_ENUM
};

// Every code of the enum, in order. Besides these, a process killed by signal N exits
// 128 + N (exit_policy.h, ExitCodeOfSignal).
inline constexpr int kAllExitCodes[] = {
#define RINGTRAIN_EXIT_VALUE(name, code) code,
    RINGTRAIN_EXIT_CODES(RINGTRAIN_EXIT_VALUE)
#undef RINGTRAIN_EXIT_VALUE
};

}  // namespace ringtrain
