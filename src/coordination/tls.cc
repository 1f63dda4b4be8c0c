#include "coordination/tls.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <grpcpp/security/server_credentials.h>

namespace ringtrain::coordination {
namespace {

StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return InvalidArgumentError("--" + flag + " '" + path + "': cannot read it: " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  std::string pem = text.str();
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
