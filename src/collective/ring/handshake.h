// Ring connection set-up. Rank r connects to rank (r+1)%n and accepts from (r-1)%n.
//
// Without a cluster secret (the original wire format): the connector sends a 16-byte
// hello (magic "RTRG", protocol version, its rank, the ring size); the acceptor
// validates it and answers with its own hello, which the connector validates in turn.
//
// With a cluster secret, the same connection carries a mutual challenge-response
// before any tensor byte (hellos use magic "RTRA"; P = ClusterSecret::Proof under the
// context "data-plane"; ranks/size are the connector's, the acceptor's, the ring's):
//   connector -> acceptor  hello                                    (at connect)
//   acceptor  -> connector nonce_a (32 random bytes)                (at accept)
//   connector -> acceptor  nonce_c (32 random bytes) + P("connect" nonce_a nonce_c ranks size)
//   acceptor  -> connector hello + P("accept" nonce_a nonce_c ranks size)
// The acceptor answers with its proof only after checking the connector's, so a
// stranger learns nothing; when the connector's proof is wrong the acceptor answers
// its hello and 32 zero bytes (a refusal the connector reports as PERMISSION_DENIED)
// and closes. Fresh nonces on both sides make every proof single-use.
//
// A connection whose hello or proof is wrong (a port scanner, a health check, a rank
// of another job, a process without the secret) or that does not finish its part of
// the handshake within kCandidateTimeout is logged once, closed, and the acceptor keeps
// waiting for the right peer within the same deadline.
//
// To avoid a cycle of waits, every rank makes the calls in this order:
// OutgoingHandshake::Start (connect + hello, no wait), AcceptFromPrev (accept, validate,
// answer; meanwhile it also answers the next rank's challenge on the outgoing
// connection, which that rank needs before it can accept us), OutgoingHandshake::Finish.
//
// Threading: all of it runs on the thread that creates the communicator. Blocking:
// every call returns by its deadline.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "collective/ring/handshake_wire.h"
#include "collective/ring/socket.h"
#include "common/deadline.h"
#include "common/status.h"
#include "security/cluster_secret.h"

namespace ringtrain::collective {

inline constexpr uint32_t kRingProtocolVersion = 1;
// How long an accepted connection may take to complete its part of the handshake. The
// real peer answers within milliseconds (it serves its outgoing handshake while it
// waits for its own predecessor); a silent stranger is dropped after this.
inline constexpr std::chrono::milliseconds kCandidateTimeout{5000};

// Our connection to the next rank while its handshake is in progress. Move-only.
class OutgoingHandshake {
 public:
  // Connects to next_rank at host:port (retrying until the deadline) and sends our
  // hello. `secret` may be unconfigured (the original protocol).
  static StatusOr<OutgoingHandshake> Start(const std::string& host, int port, int rank, int size, int next_rank,
                                           const security::ClusterSecret& secret, Deadline deadline);

  int fd() const { return fd_.get(); }
  const std::string& peer() const { return peer_; }
  // Whether the accept loop must watch fd() for input and call Advance when readable:
  // true with a cluster secret until the next rank's answer has been checked.
  bool needs_polling() const { return secured() && stage_ != Stage::kDone; }
  // Never blocks on input: consumes what has arrived, answers the challenge once it is
  // whole (a 64-byte send into an idle socket), checks the answer once it is whole.
  // PERMISSION_DENIED when the next rank fails the cluster-secret check.
  Status Advance(Deadline deadline);
  // Blocks until the exchange is complete and checked, then hands over the connection.
  StatusOr<Fd> Finish(Deadline deadline);

 private:
  enum class Stage { kChallenge, kAnswer, kDone };
  OutgoingHandshake() = default;
  bool secured() const { return secret_.configured(); }
  size_t want() const;
  Status Closed(const std::string& how) const;  // how: "closed", "failed (why)"
  Status Answer(Deadline deadline);
  Status CheckAnswer() const;

  Fd fd_;
  std::string peer_;  // "rank 2 (10.0.0.2:4000)"
  int rank_ = 0, size_ = 0, next_rank_ = 0;
  security::ClusterSecret secret_;
  Stage stage_ = Stage::kAnswer;
  uint8_t buf_[internal::kHelloBytes + internal::kProofBytes] = {};
  size_t got_ = 0;
  std::string nonce_a_, nonce_c_;
};

// Accepts connections on listen_fd until one completes the handshake as prev_rank,
// answers it, and returns it. *remote is set to that connection's "ip:port". While it
// waits it also advances `next` (if needs_polling()), failing at once if that fails.
StatusOr<Fd> AcceptFromPrev(int listen_fd, int rank, int size, int prev_rank, const security::ClusterSecret& secret,
                            Deadline deadline, OutgoingHandshake* next, std::string* remote);

}  // namespace ringtrain::collective
