// The cluster secret, TLS files and the loopback rule for a task of a TF_CONFIG cluster.
#pragma once

#include <string>

#include "cluster/cluster_session.h"
#include "common/status.h"
#include "config/settings.h"
#include "config/tf_config.h"
#include "security/cluster_secret.h"

namespace ringtrain::cli {

// The cluster secret from RINGTRAIN_CLUSTER_SECRET(_FILE) (config::LoadClusterSecretSource);
// INVALID_ARGUMENT as security::ClusterSecret::FromSource says. What every command that
// talks to a cluster (worker, status, the job clients) proves itself with.
StatusOr<security::ClusterSecret> LoadClusterSecret();

// The secret from RINGTRAIN_CLUSTER_SECRET(_FILE) and the TLS files (all three paths or
// none). INVALID_ARGUMENT (exit 2) for a bad secret, incomplete or unreadable TLS files,
// or a cluster beyond loopback without a secret (unless RINGTRAIN_ALLOW_INSECURE=1).
// Never puts the secret in a message; logs only its fingerprint.
StatusOr<cluster::SessionSecurity> LoadSecurity(const config::Settings& settings, const config::ClusterSpec& spec,
                                                const std::string& tls_cert, const std::string& tls_key,
                                                const std::string& tls_ca);

}  // namespace ringtrain::cli
