#include "coordination/call_guard.h"

#include "common/logging.h"
#include "coordination/call_auth.h"

namespace ringtrain::coordination {

std::string RefusalLog::LineFor(const std::string& address, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_pair(address, reason);
  if (logged_.count(key) > 0) return std::string();
  if (logged_.size() >= max_entries_) {
    if (said_full_) return std::string();
    said_full_ = true;
    return "refused coordination calls from " + std::to_string(max_entries_) +
           " different callers; further refusals are not logged";
  }
  logged_.insert(std::move(key));
  return "refused a coordination call from " + address + ": " + reason +
         " (further refusals of it are not logged)";
}

CallGuard::CallGuard(CallGuardOptions options)
    : secret_(std::move(options.secret)),
      check_peer_address_(options.check_peer_address),
      peers_(std::move(options.cluster_hosts)) {}

grpc::Status CallGuard::Refuse(const std::string& address, grpc::StatusCode code, const std::string& reason,
                               const std::string& message) {
  std::string line = log_.LineFor(address, reason);
  if (!line.empty()) RT_LOG(WARNING) << line;
  return grpc::Status(code, message);
}

namespace {

// What the log names: the caller's IP, not its port (a stranger that reconnects comes
// from a new port each time and should still be logged once).
std::string LoggedAddress(const std::string& peer_uri) {
  std::optional<std::string> ip = PeerIp(peer_uri);
  return ip ? *ip : "an unknown address";
}

}  // namespace

grpc::Status CallGuard::RefuseProof(const std::string& peer_uri, const std::string& reason) {
  return Refuse(LoggedAddress(peer_uri), grpc::StatusCode::UNAUTHENTICATED, reason,
                "the chief's coordination service refused the call: " + reason +
                    ". Every task of a cluster needs the same cluster secret (RINGTRAIN_CLUSTER_SECRET or "
                    "RINGTRAIN_CLUSTER_SECRET_FILE; compare the fingerprints the tasks log) and a clock within " +
                    std::to_string(kMaxClockSkew.count() / 60000) + " minutes of the chief's");
}

grpc::Status CallGuard::CheckCall(const grpc::CallbackServerContext& ctx, std::string_view method, AuthCheck* auth) {
  std::optional<std::string_view> token;
  const auto& md = ctx.client_metadata();
  auto it = md.find(kAuthMetadataKey);
  if (it != md.end()) token = std::string_view(it->second.data(), it->second.size());
  return CheckCall(ctx.peer(), token, method, UnixMillisNow(), auth);
}

grpc::Status CallGuard::CheckCall(const std::string& peer_uri, const std::optional<std::string_view>& token,
                                  std::string_view method, int64_t now_ms, AuthCheck* auth) {
  std::optional<std::string> ip = PeerIp(peer_uri);
  const std::string address = LoggedAddress(peer_uri);

  *auth = CheckAuthToken(secret_, token, method, now_ms);
  if (!auth->ok) return RefuseProof(peer_uri, auth->reason);
  if (check_peer_address_ && !(ip && peers_.Admits(*ip))) {
    return Refuse(address, grpc::StatusCode::PERMISSION_DENIED, "address not in the cluster",
                  "the chief's coordination service admits only the cluster's own addresses (the hosts in "
                  "TF_CONFIG); " + address + " is not one of them. Use the host's TF_CONFIG address, or set "
                  "RINGTRAIN_CHECK_PEER_ADDRESS=0 on the chief when callers come through NAT");
  }
  // Last, so that only a member's valid proof from a member's address takes a place in it.
  if (secret_.configured() && !replays_.Admit(auth->nonce, auth->unix_ms, now_ms)) {
    auth->ok = false;
    auth->reason = "replayed call (its proof was used before)";
    return RefuseProof(peer_uri, auth->reason);
  }
  return grpc::Status::OK;
}

grpc::Status CallGuard::CheckRequest(const std::string& peer_uri, const AuthCheck& auth, std::string_view body,
                                     const std::optional<std::string_view>& request_task) {
  if (!secret_.configured()) return grpc::Status::OK;
  if (!BodyMatches(auth, body)) {
    return RefuseProof(peer_uri, "request body altered (it does not match its proof)");
  }
  if (request_task && *request_task != auth.task) {
    // Stable text (no task names): it is what the refusal is logged once under.
    return RefuseProof(peer_uri, "proof made for another task than the one the request names");
  }
  return grpc::Status::OK;
}

}  // namespace ringtrain::coordination
