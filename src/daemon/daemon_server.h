// The chief daemon's gRPC service (proto/daemon.proto): the job queue for `ringtrain
// submit / jobs / logs / cancel` and the daemons' polls, over a JobBoard. Served at the
// chief daemon's TF_CONFIG address with the coordination service's gate: every call is
// judged on its metadata before its body is read (coordination/generic_call.h), and must
// carry proof of the cluster secret made for that call and come from a cluster address
// (coordination/call_guard.h), or mutual TLS when configured. Also answers
// grpc.health.v1.Health/Check.
//
// Threading: handlers run on gRPC's threads and answer at once (JobBoard is
// thread-safe). Destruction stops the server (bounded).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "coordination/tls.h"
#include "daemon/job_board.h"
#include "security/cluster_secret.h"

namespace ringtrain::daemon {

namespace method {
inline constexpr char kSubmit[] = "/ringtrain.daemonrpc.DaemonService/Submit";
inline constexpr char kListJobs[] = "/ringtrain.daemonrpc.DaemonService/ListJobs";
inline constexpr char kCancel[] = "/ringtrain.daemonrpc.DaemonService/Cancel";
inline constexpr char kJobLog[] = "/ringtrain.daemonrpc.DaemonService/JobLog";
inline constexpr char kPoll[] = "/ringtrain.daemonrpc.DaemonService/Poll";
}  // namespace method

// The most of a job's output one JobLog call returns.
inline constexpr int64_t kMaxLogChunk = 1 << 20;

struct DaemonServerOptions {
  std::string address;  // the chief daemon's TF_CONFIG "host:port"
  bool bind_all = false;
  security::ClusterSecret cluster_secret;
  std::vector<std::string> cluster_hosts;
  bool check_peer_address = true;
  coordination::TlsCredentials tls;
  JobBoard* board = nullptr;  // not owned; outlives the server
  // Where a job's chief output is: JobOutputPath(jobs_dir, id) (job_files.h).
  std::string jobs_dir;
};

class DaemonServer {
 public:
  static StatusOr<std::unique_ptr<DaemonServer>> Start(const DaemonServerOptions& options);
  ~DaemonServer();  // stops; never throws
  void Stop();
  int port() const;

 private:
  DaemonServer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringtrain::daemon
