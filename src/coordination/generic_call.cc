#include "coordination/generic_call.h"

#include <vector>

#include <grpcpp/health_check_service_interface.h>

#include "coordination/coordination_service.h"  // kMaxMessageBytes

namespace ringtrain::coordination {

namespace {

void AddConnectionBounds(grpc::ServerBuilder* builder) {
  // A connection that has not finished the HTTP/2 (and TLS) handshake after this is
  // closed (gRPC's default is 120 s): a flood of silent TCP connections holds
  // descriptors for seconds, not minutes.
  builder->AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 10'000);
  // A connection with no call in flight for this long is closed (a member always has a
  // heartbeat or a long poll in flight, and reconnects at once if closed).
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, 60'000);
  // Headers are what a call is judged on before its body is read: a few KB suffice
  // (the proof is under 250 bytes).
  builder->AddChannelArgument(GRPC_ARG_MAX_METADATA_SIZE, 16 << 10);
  // A member's client has a handful of calls in flight at once.
  builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 64);
  // Not used: a ResourceQuota (grpc::ServerBuilder::SetResourceQuota). Under its
  // pressure gRPC 1.51 closes connections ("destructive reclamation"), members' included,
  // and what strangers could make it buffer is already bounded by the front.
}

}  // namespace

ListeningServer StartGenericServer(const std::string& address, bool bind_all, const TlsCredentials& tls,
                                   grpc::CallbackGenericService* front) {
  ListeningServer out;
  // Only the given address unless asked: a server whose TF_CONFIG address names one
  // interface must not be reachable through the others.
  out.address = bind_all ? "[::]:" + address.substr(address.rfind(':') + 1) : address;
  // grpc.health.v1.Health/Check is answered by the front without reading its request;
  // gRPC's own health service would read any request in full.
  grpc::EnableDefaultHealthCheckService(false);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(out.address, MakeServerCredentials(tls), &out.port);
  // gRPC sets SO_REUSEPORT by default, which would let a second server bind the same
  // port silently; we want "address in use" instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  AddConnectionBounds(&builder);
  builder.RegisterCallbackGenericService(front);
  out.server = builder.BuildAndStart();
  if (!out.server || out.port == 0) {
    out.server.reset();
    return out;
  }
  out.address = out.address.substr(0, out.address.rfind(':')) + ":" + std::to_string(out.port);
  return out;
}

grpc::ServerGenericBidiReactor* AnswerServing() {
  // grpc.health.v1.HealthCheckResponse{status: SERVING}: field 1, varint 1.
  return new AnswerUnread(grpc::Status::OK, std::string("\x08\x01", 2));
}

std::string ByteBufferToString(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  out.reserve(buffer.Length());
  for (const grpc::Slice& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

AnswerUnread::AnswerUnread(grpc::Status status, std::optional<std::string> response) {
  if (response) {
    grpc::Slice slice(*response);
    out_ = grpc::ByteBuffer(&slice, 1);
    StartWriteAndFinish(&out_, grpc::WriteOptions(), status);
  } else {
    Finish(status);
  }
}

}  // namespace ringtrain::coordination
