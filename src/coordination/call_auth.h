// Proof of the cluster secret on every coordination RPC.
//
// The client adds one metadata entry to each call:
//
//   ringtrain-auth: <unix_ms>.<task>.<nonce>.<body>.<proof>
//   proof = secret.Proof("grpc", "<unix_ms>.<task>.<nonce>.<body>.<method>")
//
// <nonce> is 16 fresh random bytes (32 hex digits), <body> the SHA-256 of the request
// message's bytes as sent (64 hex digits), <method> the full gRPC method name
// ("/ringtrain.coordination.CoordinationService/Register"), <proof> HMAC-SHA256 in hex.
// So a proof is good for one call only: one method (the server recomputes it for the
// handler it is in), one body (a changed body no longer matches its digest), one task
// (the server compares it with the task the request names), once (the server keeps the
// nonces it has seen for the skew window: replay_cache.h), and within kMaxClockSkew of
// the server's clock. The secret never travels (security/cluster_secret.h).
//
// Everything but the body is checked on the metadata alone (CheckAuthToken), before the
// server reads a byte of the body; BodyMatches is the check once it has been read.
//
// Pure functions of their inputs (the clock and the nonce are parameters, or drawn from
// the system when left out): thread-safe, never block.
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
inline constexpr size_t kAuthNonceBytes = 16;

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
inline constexpr char kGetStatus[] = "/ringtrain.coordination.CoordinationService/GetStatus";
}  // namespace method

// Milliseconds since the Unix epoch, from the system clock (what the skew is measured on).
int64_t UnixMillisNow();

// The ringtrain-auth value for one call whose serialized request is `body`. Empty when
// the secret is not configured. `nonce_hex` empty: a fresh random nonce (tests pass
// their own, 32 hex digits).
std::string MakeAuthToken(const security::ClusterSecret& secret, std::string_view task, std::string_view method,
                          std::string_view body, int64_t unix_ms, std::string_view nonce_hex = {});

struct AuthCheck {
  bool ok = false;
  // Why it was refused, safe to log (never contains the token or the proof):
  // "missing cluster secret proof", "malformed cluster secret proof", "wrong cluster
  // secret", "clock more than 5 minutes behind the chief's ...".
  std::string reason;
  // What the token names once it parsed (for the server's further checks and the log).
  std::string task;
  std::string nonce;        // raw bytes (kAuthNonceBytes)
  std::string body_sha256;  // raw bytes (32)
  int64_t unix_ms = 0;
};

// Whether `token` (nullopt: the header is absent) proves `secret` for `method` at
// `now_ms` -- everything except the body, which the caller checks with BodyMatches once
// it has it, and the replay, which needs state (replay_cache.h). With no secret
// configured every call passes (the loopback rule in the worker decides whether that is
// allowed).
AuthCheck CheckAuthToken(const security::ClusterSecret& secret, const std::optional<std::string_view>& token,
                         std::string_view method, int64_t now_ms);

// Whether `body` is what a passed check's token was made for. True when no secret is
// configured (the check carries no digest).
bool BodyMatches(const AuthCheck& check, std::string_view body);

}  // namespace ringtrain::coordination
