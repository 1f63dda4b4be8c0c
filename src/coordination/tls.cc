#include "coordination/tls.h"

#include "common/file.h"

#include <vector>

#include <grpcpp/security/server_credentials.h>

namespace ringtrain::coordination {
namespace {

// Certificates, keys and CA bundles are a few KiB; a system CA bundle is about 200 KiB.
constexpr uint64_t kMaxPemFileBytes = uint64_t{1} << 20;

StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path) {
  auto text = ReadFile(path, kMaxPemFileBytes, "a PEM file");
  if (!text.ok()) {
    return InvalidArgumentError("--" + flag + ": cannot read it: " + text.status().message()).About(Subject::kConfig);
  }
  std::string pem = std::move(text).value();
  if (pem.find("-----BEGIN ") == std::string::npos) {
    return InvalidArgumentError("--" + flag + " '" + path + "' is not a PEM file (no -----BEGIN line)");
  }
  return pem;
}

}  // namespace

StatusOr<TlsCredentials> LoadTlsCredentials(const std::string& cert_file, const std::string& key_file,
                                            const std::string& ca_file) {
  std::vector<std::string> missing;
  if (cert_file.empty()) missing.push_back("--tls_cert");
  if (key_file.empty()) missing.push_back("--tls_key");
  if (ca_file.empty()) missing.push_back("--tls_ca");
  if (missing.size() == 3) return TlsCredentials{};
  if (!missing.empty()) {
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
    return InvalidArgumentError("TLS needs --tls_cert, --tls_key and --tls_ca together; missing " + names);
  }
  TlsCredentials tls;
  RT_ASSIGN_OR_RETURN(tls.cert_pem, ReadPem("tls_cert", cert_file));
  RT_ASSIGN_OR_RETURN(tls.key_pem, ReadPem("tls_key", key_file));
  RT_ASSIGN_OR_RETURN(tls.ca_pem, ReadPem("tls_ca", ca_file));
  return tls;
}

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const TlsCredentials& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions opts(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  opts.pem_root_certs = tls.ca_pem;
  opts.pem_key_cert_pairs.push_back({tls.key_pem, tls.cert_pem});
  return grpc::SslServerCredentials(opts);
}

std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const TlsCredentials& tls) {
  if (!tls.enabled()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions opts;
  opts.pem_root_certs = tls.ca_pem;
  opts.pem_private_key = tls.key_pem;
  opts.pem_cert_chain = tls.cert_pem;
  return grpc::SslCredentials(opts);
}

}  // namespace ringtrain::coordination
