// The cluster secret: what admits a process into a ringtrain cluster. Every gRPC call
// to the coordination service carries proof of it, and every data-plane connection
// starts with a challenge-response on it, so a process that does not know it cannot
// join, read the key-value store or send tensors. The secret itself never travels,
// and is never logged or printed: ClusterSecret has no accessor for its bytes; it only
// computes proofs.
//
// Where it comes from: RINGTRAIN_CLUSTER_SECRET (the value), or
// RINGTRAIN_CLUSTER_SECRET_FILE (a file holding it; one trailing newline is dropped,
// as `echo` or a Kubernetes Secret volume leaves), both read by
// config::LoadClusterSecretSource. Every task of a cluster must have
// the same one.
//
// Threading: a ClusterSecret is immutable; every method may be called from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ringtrain::security {

// HMAC-SHA256 (RFC 2104) of `message` under `key`: 32 raw bytes.
std::string HmacSha256(std::string_view key, std::string_view message);
// SHA-256 of `data`: 32 raw bytes (the digest of a request body a proof covers).
std::string Sha256(std::string_view data);
// Equality in time independent of where the strings differ (for proofs).
bool ConstantTimeEqual(std::string_view a, std::string_view b);
// n cryptographically random bytes (OpenSSL's RAND_bytes), for challenges.
StatusOr<std::string> RandomBytes(size_t n);
// Lower-case hex of raw bytes.
std::string Hex(std::string_view bytes);

class ClusterSecret {
 public:
  ClusterSecret() = default;  // none configured
  // INVALID_ARGUMENT if shorter than kMinBytes (says how to make a good one).
  static StatusOr<ClusterSecret> FromValue(std::string value);

  // The secret from RINGTRAIN_CLUSTER_SECRET's `value` or RINGTRAIN_CLUSTER_SECRET_FILE's
  // `file` (see above; each absent when its variable is unset). An empty ClusterSecret
  // when neither is given. INVALID_ARGUMENT when both are, the file cannot be read (names
  // the path and the errno text, never the contents; only a regular file of at most
  // 64 KiB is read, never a FIFO or device) or the secret is too short.
  static StatusOr<ClusterSecret> FromSource(const std::optional<std::string>& value,
                                            const std::optional<std::string>& file);

  static constexpr size_t kMinBytes = 16;

  bool configured() const { return !key_.empty(); }
  // HMAC-SHA256(secret, context + '\0' + message): a proof bound to what it is for
  // ("grpc", "data-plane", ...), so a proof for one purpose is useless for another.
  // Empty when not configured.
  std::string Proof(std::string_view context, std::string_view message) const;
  // Whether `proof` is Proof(context, message), in constant time. False when not configured.
  bool Verify(std::string_view context, std::string_view message, std::string_view proof) const;
  // A fingerprint safe to log (the first 8 hex digits of HMAC(secret, "fingerprint")),
  // so operators can see whether two tasks have the same secret without showing it.
  std::string Fingerprint() const;

 private:
  explicit ClusterSecret(std::string key) : key_(std::move(key)) {}
  std::string key_;
};

}  // namespace ringtrain::security
