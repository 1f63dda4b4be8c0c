#include "coordination/service_front.h"

#include <string>

#include "coordination/call_auth.h"
#include "coordination/generic_call.h"

namespace ringtrain::coordination {

grpc::ServerGenericBidiReactor* ServiceFront::CreateReactor(grpc::GenericCallbackServerContext* ctx) {
  using S = CoordinationServiceImpl;
  const std::string& m = ctx->method();
  if (m == method::kRegister) return MakeUnaryCall(ctx, method::kRegister, &guard_, service_, &S::Register);
  if (m == method::kKvSet) return MakeUnaryCall(ctx, method::kKvSet, &guard_, service_, &S::KvSet);
  if (m == method::kKvGet) return MakeUnaryCall(ctx, method::kKvGet, &guard_, service_, &S::KvGet);
  if (m == method::kBarrier) return MakeUnaryCall(ctx, method::kBarrier, &guard_, service_, &S::Barrier);
  if (m == method::kHeartbeat) return MakeUnaryCall(ctx, method::kHeartbeat, &guard_, service_, &S::Heartbeat);
  if (m == method::kShutdown) return MakeUnaryCall(ctx, method::kShutdown, &guard_, service_, &S::Shutdown);
  if (m == method::kRendezvous) return MakeUnaryCall(ctx, method::kRendezvous, &guard_, service_, &S::Rendezvous);
  if (m == method::kGetStatus) return MakeUnaryCall(ctx, method::kGetStatus, &guard_, service_, &S::GetStatus);
  if (m == kHealthCheckMethod) return AnswerServing();
  return new AnswerUnread(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "the chief serves no method " + m));
}

}  // namespace ringtrain::coordination
