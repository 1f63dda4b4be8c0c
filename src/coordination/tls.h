// Optional mutual TLS for the coordination service (worker flags --tls_cert, --tls_key,
// --tls_ca). The server presents its certificate and requires and verifies a client
// certificate signed by the CA; each client verifies the server's against the same CA
// and presents its own. The cluster secret's proof is still required on top.
//
// The client checks the server certificate against the chief's host as written in
// TF_CONFIG: the certificate's subjectAltName must name it (DNS:chief.example or
// IP:10.0.0.1).
//
// Threading: plain values and pure functions.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include "common/status.h"

namespace ringtrain::coordination {

// PEM contents. All empty: plain TCP (no TLS).
struct TlsCredentials {
  std::string cert_pem;  // this task's certificate (chain)
  std::string key_pem;   // its private key
  std::string ca_pem;    // the CA that signs every task's certificate
  bool enabled() const { return !ca_pem.empty(); }
};

// Reads the three files. All three paths empty: TLS off (an empty TlsCredentials).
// INVALID_ARGUMENT when only some are given (names the missing flags), or when a file
// cannot be read or is not PEM (names the file; never prints a key).
StatusOr<TlsCredentials> LoadTlsCredentials(const std::string& cert_file, const std::string& key_file,
                                            const std::string& ca_file);

// gRPC credentials: insecure when TLS is off.
std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const TlsCredentials& tls);
std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const TlsCredentials& tls);
// A channel to a ringtrain service (the chief's coordination service, the chief's daemon)
// with these credentials and ringtrain's reconnect settings, message limits and no proxy
// (coordination_client.cc).
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address, const TlsCredentials& tls);

}  // namespace ringtrain::coordination
