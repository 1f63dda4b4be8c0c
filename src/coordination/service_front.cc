#include "coordination/service_front.h"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coordination/call_auth.h"

namespace ringtrain::coordination {
namespace {

// A call refused or answered without reading its request.
class AnswerUnread final : public grpc::ServerGenericBidiReactor {
 public:
  // Finishes with `status`; with `response` (OK only), sends it first.
  explicit AnswerUnread(grpc::Status status, std::optional<std::string> response = std::nullopt) {
    if (response) {
      grpc::Slice slice(*response);
      out_ = grpc::ByteBuffer(&slice, 1);
      StartWriteAndFinish(&out_, grpc::WriteOptions(), status);
    } else {
      Finish(status);
    }
  }
  void OnDone() override { delete this; }

 private:
  grpc::ByteBuffer out_;
};

std::string ToString(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  out.reserve(buffer.Length());
  for (const grpc::Slice& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

// The task a request names, for the requests that name one.
template <class Req>
std::optional<std::string_view> TaskOf(const Req& req) {
  if constexpr (requires { req.task(); }) {
    return std::string_view(req.task());
  } else {
    return std::nullopt;
  }
}

// One unary call of a coordination method: checked on its metadata, then read, checked
// on its body, parsed and handed to the handler, which answers it (PendingCall).
template <class Req, class Resp>
class UnaryCall final : public grpc::ServerGenericBidiReactor, public PendingCall {
 public:
  using Handler = void (CoordinationServiceImpl::*)(const Req&, Resp*, PendingCall*);

  UnaryCall(grpc::GenericCallbackServerContext* ctx, const char* method, CallGuard* guard,
            CoordinationServiceImpl* service, Handler handler)
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
    const std::string body = ToString(in_);
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
      Finish(grpc::Status(grpc::StatusCode::INTERNAL, "the chief could not serialize its answer"));
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
  CoordinationServiceImpl* const service_;
  const Handler handler_;
  AuthCheck auth_;
  grpc::ByteBuffer in_, out_;
  Req req_;
  Resp resp_;
};

template <class Req, class Resp>
grpc::ServerGenericBidiReactor* Make(grpc::GenericCallbackServerContext* ctx, const char* method, CallGuard* guard,
                                     CoordinationServiceImpl* service,
                                     void (CoordinationServiceImpl::*handler)(const Req&, Resp*, PendingCall*)) {
  return new UnaryCall<Req, Resp>(ctx, method, guard, service, handler);
}

}  // namespace

grpc::ServerGenericBidiReactor* ServiceFront::CreateReactor(grpc::GenericCallbackServerContext* ctx) {
  using S = CoordinationServiceImpl;
  const std::string& m = ctx->method();
  if (m == method::kRegister) return Make(ctx, method::kRegister, &guard_, service_, &S::Register);
  if (m == method::kKvSet) return Make(ctx, method::kKvSet, &guard_, service_, &S::KvSet);
  if (m == method::kKvGet) return Make(ctx, method::kKvGet, &guard_, service_, &S::KvGet);
  if (m == method::kBarrier) return Make(ctx, method::kBarrier, &guard_, service_, &S::Barrier);
  if (m == method::kHeartbeat) return Make(ctx, method::kHeartbeat, &guard_, service_, &S::Heartbeat);
  if (m == method::kShutdown) return Make(ctx, method::kShutdown, &guard_, service_, &S::Shutdown);
  if (m == method::kRendezvous) return Make(ctx, method::kRendezvous, &guard_, service_, &S::Rendezvous);
  if (m == method::kGetStatus) return Make(ctx, method::kGetStatus, &guard_, service_, &S::GetStatus);
  if (m == kHealthCheckMethod) {
    // grpc.health.v1.HealthCheckResponse{status: SERVING}: field 1, varint 1.
    return new AnswerUnread(grpc::Status::OK, std::string("\x08\x01", 2));
  }
  return new AnswerUnread(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "the chief serves no method " + m));
}

}  // namespace ringtrain::coordination
