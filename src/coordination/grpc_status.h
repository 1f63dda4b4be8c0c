// Conversion between grpc::Status and ringtrain::Status: the edge where gRPC's error
// model stops. Server handlers return ToGrpcStatus(...); the client turns every
// grpc::Status into a ringtrain::Status that says which service could not be reached
// and what to check.
#pragma once

#include <string>

#include <grpcpp/support/status.h>

#include "common/status.h"

namespace ringtrain::coordination {

// A status produced by this service's own logic, for the wire. The message passes
// through unchanged; it is already written for the user.
grpc::Status ToGrpcStatus(const Status& status);

// The result of calling `rpc` ("Register") on the chief's service at `address`.
// UNAVAILABLE becomes kUnavailable "cannot reach the chief's coordination service at
// ADDR ..."; errors the service chose itself (INVALID_ARGUMENT, PERMISSION_DENIED, ...)
// keep their code and message; UNAUTHENTICATED (a cluster secret the chief does not
// accept) becomes kPermissionDenied naming the cluster secret.
// `service` names what was called ("the chief's daemon" for the daemons' service).
Status FromGrpcStatus(const grpc::Status& status, const std::string& address, const std::string& rpc,
                      const std::string& service = "the chief's coordination service");

}  // namespace ringtrain::coordination
