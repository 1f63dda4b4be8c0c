// The pieces of a generic callback gRPC service that judges each call on its metadata
// before reading a byte of its body (service_front.h says why): a call answered without
// reading it, and one unary call checked by CallGuard, parsed and handed to a handler of
// any service class. The coordination service's front and the daemon's front
// (daemon/daemon_server.h) are both built from them, with the same connection bounds.
//
// Threading: reactors run on gRPC's callback threads; the guard and the service must be
// thread-safe and outlive the calls.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include "coordination/call_auth.h"
#include "coordination/call_guard.h"
#include "coordination/tls.h"

namespace ringtrain::coordination {

// Answered SERVING without reading its request (probes need no secret).
inline constexpr char kHealthCheckMethod[] = "/grpc.health.v1.Health/Check";

// A handler's way to answer its call, at once or later (long polls).
class PendingCall {
 public:
  virtual void Answer(grpc::Status status) = 0;

 protected:
  ~PendingCall() = default;
};

// A gRPC server for one generic callback service `front`, listening on `address`
// ("host:port"; with bind_all, every interface at that port) with the settings both
// fronts share: SO_REUSEPORT off (a second server on the port gets "address in use"),
// gRPC's own health service off (the front answers kHealthCheckMethod unread), the
// message limits and the bounds on connections that are not (yet) members. `server` is
// null when it cannot listen; `address` is then what it tried, else the address with the
// real port (port 0 asks the kernel for one).
struct ListeningServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::string address;
};
ListeningServer StartGenericServer(const std::string& address, bool bind_all, const TlsCredentials& tls,
                                   grpc::CallbackGenericService* front);

// grpc.health.v1.Health/Check answered SERVING, its request unread.
grpc::ServerGenericBidiReactor* AnswerServing();

// The bytes of a received message.
std::string ByteBufferToString(const grpc::ByteBuffer& buffer);

// A call refused or answered without reading its request.
class AnswerUnread final : public grpc::ServerGenericBidiReactor {
 public:
  // Finishes with `status`; with `response` (OK only), sends it first.
  explicit AnswerUnread(grpc::Status status, std::optional<std::string> response = std::nullopt);
  void OnDone() override { delete this; }

 private:
  grpc::ByteBuffer out_;
};

// The task a request names, for the requests that name one.
template <class Req>
std::optional<std::string_view> TaskOf(const Req& req) {
  if constexpr (requires { req.task(); }) {
    return std::string_view(req.task());
  } else {
    return std::nullopt;
  }
}

// One unary call of a method of `Service`: checked on its metadata, then read, checked on
// its body, parsed and handed to the handler, which answers it (PendingCall).
template <class Service, class Req, class Resp>
class UnaryCall final : public grpc::ServerGenericBidiReactor, public PendingCall {
 public:
  using Handler = void (Service::*)(const Req&, Resp*, PendingCall*);

  UnaryCall(grpc::GenericCallbackServerContext* ctx, const char* method, CallGuard* guard, Service* service,
            Handler handler)
      : peer_(ctx->peer()), guard_(guard), service_(service), handler_(handler) {
    grpc::Status admitted = guard_->CheckCall(*ctx, method, &auth_);
    if (!admitted.ok()) {
      Finish(admitted);  // the body is never read
      return;
    }
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the call ended before its request arrived"));
      return;
    }
    const std::string body = ByteBufferToString(in_);
    in_.Clear();
    if (!req_.ParseFromString(body)) {
      // Checked after the proof would be wasted: a member's client never sends this.
      grpc::Status refusal = guard_->CheckRequest(peer_, auth_, body, std::nullopt);
      Finish(refusal.ok() ? grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the request does not parse")
                          : refusal);
      return;
    }
    grpc::Status checked = guard_->CheckRequest(peer_, auth_, body, TaskOf(req_));
    if (!checked.ok()) {
      Finish(checked);
      return;
    }
    (service_->*handler_)(req_, &resp_, this);
  }

  void Answer(grpc::Status status) override {
    if (!status.ok()) {
      Finish(status);
      return;
    }
    std::string bytes;
    if (!resp_.SerializeToString(&bytes)) {
      Finish(grpc::Status(grpc::StatusCode::INTERNAL, "the server could not serialize its answer"));
      return;
    }
    grpc::Slice slice(bytes);
    out_ = grpc::ByteBuffer(&slice, 1);
    StartWriteAndFinish(&out_, grpc::WriteOptions(), grpc::Status::OK);
  }

  void OnDone() override { delete this; }

 private:
  const std::string peer_;
  CallGuard* const guard_;
  Service* const service_;
  const Handler handler_;
  AuthCheck auth_;
  grpc::ByteBuffer in_, out_;
  Req req_;
  Resp resp_;
};

template <class Service, class Req, class Resp>
grpc::ServerGenericBidiReactor* MakeUnaryCall(grpc::GenericCallbackServerContext* ctx, const char* method,
                                              CallGuard* guard, Service* service,
                                              void (Service::*handler)(const Req&, Resp*, PendingCall*)) {
  return new UnaryCall<Service, Req, Resp>(ctx, method, guard, service, handler);
}

}  // namespace ringtrain::coordination
