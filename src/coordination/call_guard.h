// The gate in front of every coordination handler: a call is served only if it carries
// proof of the cluster secret made for this very call (call_auth.h) and comes from one
// of the cluster's addresses (peer_filter.h). Two stages:
//   CheckCall, on the metadata alone, before a byte of the body is read: the proof
//     (secret, method, clock), the caller's address, then the nonce (a proof seen
//     before is a replay: replay_cache.h);
//   CheckRequest, once the body is read: its digest is the one the proof was made for,
//     and the task the request names (if it names one) is the task the proof names.
// Anything else is answered at once -- UNAUTHENTICATED for the proof, PERMISSION_DENIED
// for the address -- before any state is touched, and logged once per (caller address,
// reason): one WARNING line, then silence for that caller, for the first
// kMaxLoggedRefusals distinct ones (then one line saying that further refusals are not
// logged). Neither the secret nor any proof is ever logged.
//
// The secret is checked first: it is cheap, and so only a holder of the secret can make
// the address check look a name up again, or fill the replay cache.
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

#include "coordination/call_auth.h"
#include "coordination/peer_filter.h"
#include "coordination/replay_cache.h"
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
  // Nonces remembered for the replay check (about 100 bytes each): at 200 calls a
  // second (a hundred tasks) that covers the whole 10-minute window of the clock check.
  static constexpr size_t kReplayCacheEntries = size_t{1} << 18;

  explicit CallGuard(CallGuardOptions options);

  // The metadata stage: OK to read the call's body, else the status to finish it with
  // (without reading it). `method` is the handler's own full method name (call_auth.h's
  // method::k*). *auth receives what the proof names, for CheckRequest.
  grpc::Status CheckCall(const grpc::CallbackServerContext& ctx, std::string_view method, AuthCheck* auth);
  // The same on plain values, for tests: `peer_uri` as grpc::ServerContext::peer()
  // gives it, `token` the ringtrain-auth value (nullopt: absent).
  grpc::Status CheckCall(const std::string& peer_uri, const std::optional<std::string_view>& token,
                         std::string_view method, int64_t now_ms, AuthCheck* auth);
  grpc::Status Check(const std::string& peer_uri, const std::optional<std::string_view>& token,
                     std::string_view method, int64_t now_ms) {
    AuthCheck auth;
    return CheckCall(peer_uri, token, method, now_ms, &auth);
  }
  // The body stage: OK if `body` (the request's bytes as received) is what `auth` was
  // made for and `request_task` (the task the request names; nullopt for requests that
  // name none) is the proof's task.
  grpc::Status CheckRequest(const std::string& peer_uri, const AuthCheck& auth, std::string_view body,
                            const std::optional<std::string_view>& request_task);

 private:
  grpc::Status Refuse(const std::string& address, grpc::StatusCode code, const std::string& reason,
                      const std::string& message);
  grpc::Status RefuseProof(const std::string& peer_uri, const std::string& reason);

  const security::ClusterSecret secret_;
  const bool check_peer_address_;
  PeerFilter peers_;
  RefusalLog log_{kMaxLoggedRefusals};
  ReplayCache replays_{kReplayCacheEntries, kMaxClockSkew};
};

}  // namespace ringtrain::coordination
