// Who a task admits and proves itself to: shared by `ringtrain worker` and `bench allreduce`.
#include "security_setup.h"

#include <chrono>
#include <optional>
#include <vector>

#include "common/logging.h"
#include "coordination/peer_filter.h"
#include "coordination/tls.h"

namespace ringtrain::cli {

StatusOr<security::ClusterSecret> LoadClusterSecret() {
  const config::ClusterSecretSource source = config::LoadClusterSecretSource();
  return security::ClusterSecret::FromSource(source.value, source.file);
}

// The cluster secret, TLS files and the loopback rule: who this task admits and proves
// itself to. INVALID_ARGUMENT (exit 2) for a bad secret, incomplete or unreadable TLS
// files, or a cluster beyond loopback without a secret (unless RINGTRAIN_ALLOW_INSECURE).
// Never puts the secret in a message; logs only its fingerprint.
StatusOr<cluster::SessionSecurity> LoadSecurity(const config::Settings& settings, const config::ClusterSpec& spec,
                                                const std::string& tls_cert, const std::string& tls_key,
                                                const std::string& tls_ca) {
  cluster::SessionSecurity out;
  RT_ASSIGN_OR_RETURN(out.cluster_secret, LoadClusterSecret());
  RT_ASSIGN_OR_RETURN(
      out.tls, coordination::LoadTlsCredentials(tls_cert, tls_key, tls_ca));
  if (out.cluster_secret.configured()) {
    RT_LOG(INFO) << "cluster secret: fingerprint " << out.cluster_secret.Fingerprint()
                 << " (every task must show the same)";
  } else {
    std::vector<std::string> hosts;
    for (const auto& [job, addresses] : spec.jobs()) {
      for (const auto& a : addresses) hosts.push_back(a.host);
    }
    std::optional<std::string> outside = coordination::FirstNonLoopbackHost(hosts, std::chrono::seconds(5));
    if (outside) {
      if (!settings.allow_insecure) {
        return InvalidArgumentError(
            "the cluster is not on loopback (" + *outside + ") and no cluster secret is set: set "
            "RINGTRAIN_CLUSTER_SECRET (or RINGTRAIN_CLUSTER_SECRET_FILE) to the same value on every task, e.g. from "
            "`openssl rand -hex 32`, or set RINGTRAIN_ALLOW_INSECURE=1 to run without one on a trusted network");
      }
      RT_LOG(WARNING) << "RINGTRAIN_ALLOW_INSECURE=1: no cluster secret on a cluster beyond loopback (" << *outside
                      << "); anyone who can reach its ports can join it or send it tensors";
    }
  }
  if (out.tls.enabled()) RT_LOG(INFO) << "coordination service: mutual TLS";
  return out;
}

}  // namespace ringtrain::cli
