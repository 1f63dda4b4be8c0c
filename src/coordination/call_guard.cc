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

grpc::Status CallGuard::Check(const grpc::CallbackServerContext& ctx, std::string_view method) {
  std::optional<std::string_view> token;
  const auto& md = ctx.client_metadata();
  auto it = md.find(kAuthMetadataKey);
  if (it != md.end()) token = std::string_view(it->second.data(), it->second.size());
  return Check(ctx.peer(), token, method, UnixMillisNow());
}

grpc::Status CallGuard::Check(const std::string& peer_uri, const std::optional<std::string_view>& token,
                              std::string_view method, int64_t now_ms) {
  std::optional<std::string> ip = PeerIp(peer_uri);
  // What the log names: the caller's IP, not its port (a stranger that reconnects
  // comes from a new port each time and should still be logged once).
  const std::string address = ip ? *ip : "an unknown address";

  AuthCheck auth = CheckAuthToken(secret_, token, method, now_ms);
  if (!auth.ok) {
    return Refuse(address, grpc::StatusCode::UNAUTHENTICATED, auth.reason,
                  "the chief's coordination service refused the call: " + auth.reason +
                      ". Every task of a cluster needs the same cluster secret (RINGTRAIN_CLUSTER_SECRET or "
                      "RINGTRAIN_CLUSTER_SECRET_FILE; compare the fingerprints the tasks log) and a clock within " +
                      std::to_string(kMaxClockSkew.count() / 60000) + " minutes of the chief's");
  }
  if (check_peer_address_ && !(ip && peers_.Admits(*ip))) {
    return Refuse(address, grpc::StatusCode::PERMISSION_DENIED, "address not in the cluster",
                  "the chief's coordination service admits only the cluster's own addresses (the hosts in "
                  "TF_CONFIG); " + address + " is not one of them. Use the host's TF_CONFIG address, or set "
                  "RINGTRAIN_CHECK_PEER_ADDRESS=0 on the chief when callers come through NAT");
  }
  return grpc::Status::OK;
}

}  // namespace ringtrain::coordination
