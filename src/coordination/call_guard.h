// The gate in front of every coordination handler: a call is served only if it carries
// proof of the cluster secret (call_auth.h) and comes from one of the cluster's
// addresses (peer_filter.h). Anything else is answered at once -- UNAUTHENTICATED for
// the secret, PERMISSION_DENIED for the address -- before any state is touched, and
// logged once per (caller address, reason): one WARNING line, then silence for that
// caller, for the first kMaxLoggedRefusals distinct ones (then one line saying that
// further refusals are not logged). Neither the secret nor any proof is ever logged.
//
// The secret is checked first: it is cheap, and so only a holder of the secret can make
// the address check look a name up again.
//
// Threading: thread-safe; Check may block while the cluster's names are resolved again
// for an unknown address with a valid proof (bounded; see PeerFilter::Admits).
#pragma once

#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "coordination/peer_filter.h"
#include "security/cluster_secret.h"

namespace ringtrain::coordination {

// Remembers which (address, reason) refusals were logged, up to a bound.
class RefusalLog {
 public:
  explicit RefusalLog(size_t max_entries) : max_entries_(max_entries) {}
  // The line to log for this refusal, or "" if it was logged before (or the bound is
  // reached and that was said already).
  std::string LineFor(const std::string& address, const std::string& reason);

 private:
  const size_t max_entries_;
  std::mutex mu_;
  std::set<std::pair<std::string, std::string>> logged_;  // guarded by mu_
  bool said_full_ = false;                                // guarded by mu_
};

struct CallGuardOptions {
  security::ClusterSecret secret;  // not configured: no proof is asked for
  std::vector<std::string> cluster_hosts;  // empty: only loopback callers
  bool check_peer_address = true;  // false: any address (RINGTRAIN_CHECK_PEER_ADDRESS=0)
};

class CallGuard {
 public:
  static constexpr size_t kMaxLoggedRefusals = 100;

  explicit CallGuard(CallGuardOptions options);

  // OK to serve the call, else the status to finish it with. `method` is the handler's
  // own full method name (call_auth.h's method::k*).
  grpc::Status Check(const grpc::CallbackServerContext& ctx, std::string_view method);
  // The same on plain values, for tests: `peer_uri` as grpc::ServerContext::peer()
  // gives it, `token` the ringtrain-auth value (nullopt: absent).
  grpc::Status Check(const std::string& peer_uri, const std::optional<std::string_view>& token,
                     std::string_view method, int64_t now_ms);

 private:
  grpc::Status Refuse(const std::string& address, grpc::StatusCode code, const std::string& reason,
                      const std::string& message);

  const security::ClusterSecret secret_;
  const bool check_peer_address_;
  PeerFilter peers_;
  RefusalLog log_{kMaxLoggedRefusals};
};

}  // namespace ringtrain::coordination
