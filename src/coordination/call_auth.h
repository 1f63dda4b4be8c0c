// Proof of the cluster secret on every coordination RPC.
//
// The client adds one metadata entry to each call:
//
//   ringtrain-auth: <unix_ms>.<task>.<hex proof>
//   proof = secret.Proof("grpc", "<unix_ms>.<task>.<method>")
//
// where <method> is the full gRPC method name ("/ringtrain.coordination.
// CoordinationService/Register"). The server recomputes the proof for the method of the
// handler it is in, so a proof for one method is useless for another, and refuses a
// timestamp more than kMaxClockSkew away from its own clock, so a captured header stops
// working after a few minutes (TLS keeps headers from being captured at all). The secret
// never travels; the proof is HMAC-SHA256 (security/cluster_secret.h).
//
// Pure functions of their inputs (the clock is a parameter): thread-safe, never block.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "security/cluster_secret.h"

namespace ringtrain::coordination {

inline constexpr char kAuthMetadataKey[] = "ringtrain-auth";
inline constexpr std::chrono::milliseconds kMaxClockSkew{std::chrono::minutes(5)};
// The context string of security::ClusterSecret::Proof for coordination calls.
inline constexpr char kAuthProofContext[] = "grpc";

// The full method names of proto/coordination.proto's service, as gRPC puts them on
// the wire. Each server handler checks the proof against its own.
namespace method {
inline constexpr char kRegister[] = "/ringtrain.coordination.CoordinationService/Register";
inline constexpr char kKvSet[] = "/ringtrain.coordination.CoordinationService/KvSet";
inline constexpr char kKvGet[] = "/ringtrain.coordination.CoordinationService/KvGet";
inline constexpr char kBarrier[] = "/ringtrain.coordination.CoordinationService/Barrier";
inline constexpr char kHeartbeat[] = "/ringtrain.coordination.CoordinationService/Heartbeat";
inline constexpr char kShutdown[] = "/ringtrain.coordination.CoordinationService/Shutdown";
inline constexpr char kRendezvous[] = "/ringtrain.coordination.CoordinationService/Rendezvous";
}  // namespace method

// Milliseconds since the Unix epoch, from the system clock (what the skew is measured on).
int64_t UnixMillisNow();

// The ringtrain-auth value for one call. Empty when the secret is not configured.
std::string MakeAuthToken(const security::ClusterSecret& secret, std::string_view task, std::string_view method,
                          int64_t unix_ms);

struct AuthCheck {
  bool ok = false;
  // Why it was refused, safe to log (never contains the token or the proof):
  // "missing cluster secret proof", "malformed cluster secret proof", "wrong cluster
  // secret", "clock more than 5 minutes behind the chief's ...".
  std::string reason;
  std::string task;  // the task the token names (when it parsed), for the log
};

// Whether `token` (nullopt: the header is absent) proves `secret` for `method` at
// `now_ms`. With no secret configured every call passes (the loopback rule in the
// worker decides whether that is allowed).
AuthCheck CheckAuthToken(const security::ClusterSecret& secret, const std::optional<std::string_view>& token,
                         std::string_view method, int64_t now_ms);

}  // namespace ringtrain::coordination
