#include "coordination/status_client.h"

#include "coordination/call_auth.h"
#include "coordination/client_impl.h"
#include "coordination/grpc_status.h"

namespace ringtrain::coordination {

StatusOr<GetStatusResponse> GetClusterStatus(const StatusClientOptions& options) {
  auto stub = CoordinationService::NewStub(MakeChannel(options.chief_address, options.tls));
  GetStatusRequest req;
  GetStatusResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(client_internal::ToSystemDeadline(Deadline::After(options.timeout)));
  if (options.cluster_secret.configured()) {
    ctx.AddMetadata(kAuthMetadataKey, MakeAuthToken(options.cluster_secret, options.caller, method::kGetStatus,
                                                    req.SerializeAsString(), UnixMillisNow()));
  }
  grpc::Status s = stub->GetStatus(&ctx, req, &resp);
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return UnavailableError("cannot reach the chief's coordination service at " + options.chief_address +
                            ": no answer within " + std::to_string(options.timeout.count()) + " ms");
  }
  RT_RETURN_IF_ERROR(FromGrpcStatus(s, options.chief_address, "GetStatus"));
  return resp;
}

}  // namespace ringtrain::coordination
