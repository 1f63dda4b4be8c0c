#include "coordination/grpc_status.h"

namespace ringtrain::coordination {

grpc::Status ToGrpcStatus(const Status& status) {
  grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
  switch (status.code()) {
    case Code::kOk: return grpc::Status::OK;
    case Code::kInvalidArgument: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case Code::kNotFound: code = grpc::StatusCode::NOT_FOUND; break;
    case Code::kDeadlineExceeded: code = grpc::StatusCode::DEADLINE_EXCEEDED; break;
    case Code::kUnavailable: code = grpc::StatusCode::UNAVAILABLE; break;
    case Code::kAborted: code = grpc::StatusCode::ABORTED; break;
    case Code::kFailedPrecondition: code = grpc::StatusCode::FAILED_PRECONDITION; break;
    case Code::kDataLoss: code = grpc::StatusCode::DATA_LOSS; break;
    case Code::kPermissionDenied: code = grpc::StatusCode::PERMISSION_DENIED; break;
    case Code::kUnimplemented: code = grpc::StatusCode::UNIMPLEMENTED; break;
    case Code::kResourceExhausted: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    case Code::kInternal: code = grpc::StatusCode::INTERNAL; break;
  }
  return grpc::Status(code, status.message());
}

Status FromGrpcStatus(const grpc::Status& status, const std::string& address, const std::string& rpc,
                      const std::string& service) {
  const std::string& detail = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
      return Status::Ok();
    case grpc::StatusCode::UNAVAILABLE:
      return UnavailableError("cannot reach " + service + " at " + address + " (" + rpc +
                              ": " + detail + "); check that it is running and that " + address +
                              " is the chief's address in TF_CONFIG");
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return DeadlineExceededError(service + " at " + address + " did not answer " + rpc +
                                   " before the call's deadline; the chief may be overloaded or hung");
    case grpc::StatusCode::CANCELLED:
      return AbortedError(rpc + " to " + service + " at " + address + " was cancelled");
    case grpc::StatusCode::UNIMPLEMENTED:
      return UnimplementedError("the service at " + address + " does not implement " + rpc +
                                "; is it a ringtrain chief of the same version? (" + detail + ")");
    // The chief did not accept this task's proof of the cluster secret: a refusal that
    // waiting will not change. The service's message says what to check.
    case grpc::StatusCode::UNAUTHENTICATED:
      return PermissionDeniedError(service + " at " + address + " refused " + rpc +
                                   " because of the cluster secret: " + detail);
    // gRPC's own limits (a message over the size limit) or the service's.
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return ResourceExhaustedError(rpc + " to " + service + " at " + address +
                                    " was refused for its size or the service's resources: " + detail);
    // Refusals the service decided itself: its message is already meant for the user.
    case grpc::StatusCode::INVALID_ARGUMENT: return InvalidArgumentError(detail);
    case grpc::StatusCode::NOT_FOUND: return NotFoundError(detail);
    case grpc::StatusCode::PERMISSION_DENIED: return PermissionDeniedError(detail);
    case grpc::StatusCode::FAILED_PRECONDITION: return FailedPreconditionError(detail);
    case grpc::StatusCode::ABORTED: return AbortedError(detail);
    case grpc::StatusCode::DATA_LOSS: return DataLossError(detail);
    default:
      return InternalError(rpc + " to " + service + " at " + address + " failed with gRPC code " +
                           std::to_string(static_cast<int>(status.error_code())) + ": " + detail);
  }
}

}  // namespace ringtrain::coordination
