// The coordination service as gRPC sees it: one generic callback service in front of
// every method, so that a call's caller is judged on its metadata before a byte of its
// body is read.
//
// Why generic: gRPC reads the whole request of a registered unary method (any size, up
// to the declared length, before the size limit is applied) before any handler,
// interceptor or guard runs, so a stranger's 1 GB message cost the chief 1 GB of memory
// even though it was refused. Here each call is a stream whose message is read only
// after CallGuard::CheckCall has passed; a refused call is finished at once and its body
// is never read (HTTP/2 flow control holds the sender to a small window).
//
// Served: the eight methods of proto/coordination.proto's CoordinationService (parsed
// into their request types, checked by CallGuard::CheckRequest, then handed to
// CoordinationServiceImpl), and grpc.health.v1.Health/Check, answered SERVING without
// reading its request (probes need no secret; a stranger's large request to it costs
// nothing either). Anything else is UNIMPLEMENTED.
//
// Threading: CreateReactor runs on gRPC's callback threads; CallGuard and
// CoordinationServiceImpl are thread-safe. Lifetime: must outlive the grpc::Server it
// is registered with; `service` must outlive it.
#pragma once

#include <grpcpp/generic/async_generic_service.h>

#include "coordination/call_guard.h"
#include "coordination/coordination_service.h"

namespace ringtrain::coordination {

class ServiceFront final : public grpc::CallbackGenericService {
 public:
  ServiceFront(CoordinationServiceImpl* service, CallGuardOptions guard)
      : service_(service), guard_(std::move(guard)) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override;

 private:
  CoordinationServiceImpl* const service_;
  CallGuard guard_;
};

}  // namespace ringtrain::coordination
