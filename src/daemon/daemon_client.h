// Calls to the chief daemon's service (daemon_server.h): what `ringtrain submit / jobs /
// logs / cancel` and the daemons' poll loop send. Each call carries proof of the cluster
// secret made for it (coordination/call_auth.h) in the name of `caller` (the daemon's
// task for polls, which the server checks against the request; "client" otherwise), and
// has a deadline of `timeout`.
//
// Errors: UNAVAILABLE "cannot reach the chief's daemon at ADDR ..." (also for a
// deadline), PERMISSION_DENIED for a refused secret or address, and the service's own
// refusals (NOT_FOUND for an unknown job, FAILED_PRECONDITION for a job already over).
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "coordination/tls.h"
#include "daemon/job_board.h"
#include "security/cluster_secret.h"

namespace ringtrain::daemon {

struct DaemonClientOptions {
  std::string address;  // the chief daemon's "host:port"
  std::string caller = "client";
  security::ClusterSecret cluster_secret;
  coordination::TlsCredentials tls;
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
  // Whether a call waits, within `timeout`, for a daemon that is not listening yet
  // (gRPC's wait-for-ready), as a user's submit right after starting `serve` needs;
  // false: a refused connection fails the call at once, as a daemon's poll loop,
  // which reconnects by itself, wants.
  bool wait_for_ready = false;
};

struct LogChunk {
  std::string data;
  int64_t size = 0;   // the output's size so far
  std::string state;  // the job's state
};

class DaemonClient {
 public:
  explicit DaemonClient(const DaemonClientOptions& options);
  ~DaemonClient();

  StatusOr<int64_t> Submit(const std::string& name, const std::string& job_text);
  // {"jobs": [...]} as the service sends it.
  StatusOr<std::string> ListJobs();
  // The job's state after the call: "cancelled" or "running" (being stopped).
  StatusOr<std::string> Cancel(int64_t id);
  StatusOr<LogChunk> JobLog(int64_t id, int64_t offset);
  // The daemon `caller`'s poll. With `wait` > 0 an idle daemon's poll may be held that
  // long until there is work (PollRequest.wait_ms); the deadline grows by as much.
  StatusOr<Assignment> Poll(int64_t running_job, const std::vector<ChildOutcome>& outcomes,
                            std::chrono::milliseconds wait = std::chrono::milliseconds(0));
  // Drops the connection for a fresh one (after UNAVAILABLE: the next call does not wait
  // out gRPC's reconnect backoff).
  void Reconnect();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringtrain::daemon
