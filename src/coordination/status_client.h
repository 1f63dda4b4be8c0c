// One GetStatus call to the chief's coordination service: what `ringtrain status`
// shows. Authenticated as every coordination call is (call_auth.h: proof of the cluster
// secret when one is configured, mutual TLS when enabled); the chief also admits only
// its cluster's hosts.
//
// Blocking: up to `timeout`. Errors: UNAVAILABLE "cannot reach the chief's
// coordination service at ADDR ..." (also when it did not answer in time);
// UNAUTHENTICATED / PERMISSION_DENIED with the chief's reason. Thread-safe.
#pragma once

#include <chrono>
#include <string>

#include "common/status.h"
#include "coordination/tls.h"
#include "proto/coordination.pb.h"
#include "security/cluster_secret.h"

namespace ringtrain::coordination {

struct StatusClientOptions {
  std::string chief_address;  // "host:port"
  security::ClusterSecret cluster_secret;
  TlsCredentials tls;
  std::chrono::milliseconds timeout{std::chrono::seconds(5)};
  // Who the proof names (GetStatus names no task, so any name is accepted).
  std::string caller = "status";
};

StatusOr<GetStatusResponse> GetClusterStatus(const StatusClientOptions& options);

}  // namespace ringtrain::coordination
