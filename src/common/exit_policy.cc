#include "common/exit_policy.h"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <string>

namespace ringtrain {
namespace {

// Answers that waiting or restarting cannot change (RESOURCE_EXHAUSTED: a message over
// the service's size limit).
bool IsRefusal(Code c) {
  return c == Code::kInvalidArgument || c == Code::kPermissionDenied || c == Code::kUnimplemented ||
         c == Code::kFailedPrecondition || c == Code::kResourceExhausted;
}

int ByCode(Code c) {
  switch (c) {
    case Code::kOk: return kExitOk;
    case Code::kInvalidArgument:
    case Code::kUnimplemented:
    case Code::kPermissionDenied:
    case Code::kResourceExhausted: return kExitBadConfig;
    case Code::kUnavailable:
    case Code::kAborted:
    case Code::kDeadlineExceeded: return kExitPeerFailure;
    case Code::kNotFound:
    case Code::kDataLoss:
    case Code::kFailedPrecondition:
    case Code::kInternal: return kExitInternal;
  }
  return kExitInternal;
}

// Lower ranks name the root cause better.
int Rank(int code, const std::vector<int>& ignored) {
  if (std::find(ignored.begin(), ignored.end(), code) != ignored.end()) return 6;
  switch (code) {
    case kExitBadConfig:
    case kExitBadData:
    case kExitCheckpoint: return 0;
    case kExitInternal: return 1;
    case kExitRendezvous: return 2;
    case kExitPeerFailure: return 4;
    case kExitPreempted: return 3;  // as a signal: the others' exits followed from it
  }
  return code > 128 ? 3 : 1;  // a signal; an unknown code is treated as internal
}

}  // namespace

int ExitCodeFor(const Status& status) {
  if (status.ok()) return kExitOk;
  switch (status.subject()) {
    case Subject::kConfig: return kExitBadConfig;
    case Subject::kData: return kExitBadData;
    case Subject::kCluster: return IsRefusal(status.code()) ? kExitBadConfig : kExitRendezvous;
    case Subject::kPeers: return kExitPeerFailure;
    case Subject::kStorage: return kExitCheckpoint;
    case Subject::kUnknown: break;
  }
  return ByCode(status.code());
}

bool IsTransient(const Status& status) {
  const int code = ExitCodeFor(status);
  return code == kExitRendezvous || code == kExitPeerFailure;
}

bool IsRestartableExit(int code) {
  return code > 128 || code == kExitInternal || code == kExitRendezvous || code == kExitPeerFailure ||
         code == kExitPreempted;
}

int RootCauseExit(const std::vector<int>& codes, const std::vector<int>& ignored) {
  int best = 0;
  for (int c : codes) {
    if (c == 0) continue;
    if (best == 0 || Rank(c, ignored) < Rank(best, ignored)) best = c;
  }
  return best;
}

std::string ExitCodeMeaning(int code) {
  switch (code) {
    case kExitOk: return "success";
    case kExitInternal: return "internal error";
    case kExitBadConfig: return "bad configuration";
    case kExitBadData: return "bad data";
    case kExitRendezvous: return "rendezvous failed";
    case kExitPeerFailure: return "peer failure";
    case kExitCheckpoint: return "storage error (model, backup, checkpoint or history file)";
    case kExitPreempted: return "preempted (stopped on SIGTERM/SIGINT after a backup; restart to resume)";
  }
  if (code > 128 && code < 128 + 65) {
    const int sig = code - 128;
    const char* abbrev = sigabbrev_np(sig);
    return "killed by signal " + std::to_string(sig) + (abbrev ? std::string(" (SIG") + abbrev + ")" : "");
  }
  return "exit code " + std::to_string(code);
}

}  // namespace ringtrain
