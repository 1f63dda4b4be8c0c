#include "security/cluster_secret.h"

#include <cstdlib>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "common/file.h"

namespace ringtrain::security {
namespace {

// A secret is a line of a few dozen bytes (`openssl rand -hex 32`).
constexpr uint64_t kMaxSecretFileBytes = uint64_t{64} << 10;

}  // namespace

std::string HmacSha256(std::string_view key, std::string_view message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string Sha256(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(out), len);
}

bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

StatusOr<std::string> RandomBytes(size_t n) {
  std::string out(n, '\0');
  if (n > 0 && RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    return InternalError("the system's random number generator failed (OpenSSL RAND_bytes)");
  }
  return out;
}

std::string Hex(std::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

StatusOr<ClusterSecret> ClusterSecret::FromValue(std::string value) {
  if (value.size() < kMinBytes) {
    return InvalidArgumentError("the cluster secret has " + std::to_string(value.size()) + " bytes; it needs at least " +
                                std::to_string(kMinBytes) + " (e.g. `openssl rand -hex 32`)");
  }
  return ClusterSecret(std::move(value));
}

StatusOr<ClusterSecret> ClusterSecret::FromSource(const std::optional<std::string>& value,
                                                  const std::optional<std::string>& file) {
  if (value && file) {
    return InvalidArgumentError("both RINGTRAIN_CLUSTER_SECRET and RINGTRAIN_CLUSTER_SECRET_FILE are set; set one");
  }
  if (value) {
    auto s = FromValue(*value);
    if (!s.ok()) return s.status().WithContext("RINGTRAIN_CLUSTER_SECRET");
    return s;
  }
  if (!file) return ClusterSecret();
  auto text = ReadFile(*file, kMaxSecretFileBytes, "a cluster secret file");
  if (!text.ok()) {
    return InvalidArgumentError(std::string("RINGTRAIN_CLUSTER_SECRET_FILE: cannot read it: ") +
                                text.status().message())
        .About(Subject::kConfig);
  }
  std::string secret = std::move(text).value();
  if (!secret.empty() && secret.back() == '\n') secret.pop_back();
  if (!secret.empty() && secret.back() == '\r') secret.pop_back();
  auto s = FromValue(std::move(secret));
  if (!s.ok()) return s.status().WithContext("RINGTRAIN_CLUSTER_SECRET_FILE '" + *file + "'");
  return s;
}

std::string ClusterSecret::Proof(std::string_view context, std::string_view message) const {
  if (!configured()) return std::string();
  std::string m(context);
  m += '\0';
  m.append(message.data(), message.size());
  return HmacSha256(key_, m);
}

bool ClusterSecret::Verify(std::string_view context, std::string_view message, std::string_view proof) const {
  return configured() && ConstantTimeEqual(Proof(context, message), proof);
}

std::string ClusterSecret::Fingerprint() const {
  if (!configured()) return "none";
  return Hex(HmacSha256(key_, "ringtrain fingerprint")).substr(0, 8);
}

}  // namespace ringtrain::security
