// The connector's side of the ring handshake (see handshake.h for the exchange).
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "collective/ring/handshake.h"

namespace ringtrain::collective {
namespace ci = internal;

StatusOr<OutgoingHandshake> OutgoingHandshake::Start(const std::string& host, int port, int rank, int size,
                                                     int next_rank, const security::ClusterSecret& secret,
                                                     Deadline deadline) {
  OutgoingHandshake h;
  h.peer_ = "rank " + std::to_string(next_rank) + " (" + host + ":" + std::to_string(port) + ")";
  h.rank_ = rank;
  h.size_ = size;
  h.next_rank_ = next_rank;
  h.secret_ = secret;
  h.stage_ = h.secured() ? Stage::kChallenge : Stage::kAnswer;
  RT_ASSIGN_OR_RETURN(h.fd_, ConnectTcp(host, port, deadline, h.peer_));
  uint8_t hello[ci::kHelloBytes];
  ci::EncodeHello(h.secured() ? ci::HelloKind::kSecured : ci::HelloKind::kPlain, kRingProtocolVersion, rank, size,
                  hello);
  RT_RETURN_IF_ERROR(SendAll(h.fd_.get(), hello, sizeof(hello), deadline, -1, h.peer_));
  return h;
}

size_t OutgoingHandshake::want() const {
  if (stage_ == Stage::kChallenge) return ci::kNonceBytes;
  return ci::kHelloBytes + (secured() ? ci::kProofBytes : 0);
}

Status OutgoingHandshake::Closed(const std::string& how) const {
  if (!secured()) {
    return UnavailableError("connection to " + peer_ + " " + how +
                            " during the handshake: it rejected our hello (do all workers run the same "
                            "ringtrain build with the same cluster configuration and cluster secret? see that "
                            "rank's log)");
  }
  return UnavailableError("connection to " + peer_ + " " + how +
                          " during the handshake: it refused our hello or our proof of the cluster secret, or gave up "
                          "(every worker needs the same RINGTRAIN_CLUSTER_SECRET and the same ringtrain build; see "
                          "that rank's log)");
}

Status OutgoingHandshake::Answer(Deadline deadline) {
  auto nonce = security::RandomBytes(ci::kNonceBytes);
  if (!nonce.ok()) return nonce.status().WithContext("ring handshake with " + peer_ + ": making a challenge");
  nonce_c_ = std::move(nonce).value();
  std::string message = nonce_c_;
  message += secret_.Proof(ci::kDataPlaneContext,
                           ci::ProofMessage("connect", nonce_a_, nonce_c_, rank_, next_rank_, size_));
  // 64 bytes into a socket that has sent only a hello: it does not wait in practice.
  Status sent = SendAll(fd_.get(), message.data(), message.size(), deadline, -1, peer_);
  if (sent.code() == Code::kUnavailable) return Closed("failed (" + sent.message() + ")");
  return sent.WithContext("ring handshake: answering the challenge of " + peer_);
}

Status OutgoingHandshake::CheckAnswer() const {
  const ci::HelloKind kind = secured() ? ci::HelloKind::kSecured : ci::HelloKind::kPlain;
  std::string why = ci::CheckHello(buf_, kind, kRingProtocolVersion, size_, next_rank_);
  if (!why.empty() && !secured() && !ci::HasHelloMagic(buf_)) {
    // A member with a secret opens with its 32-byte challenge, which is what we read.
    why = "its answer is not a ringtrain hello; it probably requires a cluster secret, which this worker does not "
          "have (set the same RINGTRAIN_CLUSTER_SECRET on every worker)";
  }
  if (!why.empty()) return FailedPreconditionError("ring handshake with " + peer_ + " failed: " + why);
  if (!secured()) return Status::Ok();
  std::string_view proof(reinterpret_cast<const char*>(buf_) + ci::kHelloBytes, ci::kProofBytes);
  if (!secret_.Verify(ci::kDataPlaneContext,
                      ci::ProofMessage("accept", nonce_a_, nonce_c_, rank_, next_rank_, size_), proof)) {
    return PermissionDeniedError(peer_ +
                                 " is not a member of this cluster (cluster secret mismatch): it refused our proof "
                                 "of the cluster secret or could not prove it knows it; every worker needs the same "
                                 "RINGTRAIN_CLUSTER_SECRET (this worker's has fingerprint " +
                                 secret_.Fingerprint() + ")");
  }
  return Status::Ok();
}

Status OutgoingHandshake::Advance(Deadline deadline) {
  while (stage_ != Stage::kDone) {
    const size_t w = want();
    ssize_t n = ::recv(fd_.get(), buf_ + got_, w - got_, 0);
    if (n == 0) return Closed("closed");
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::Ok();
      // A reset is how a peer that refused us (or gave up) closes on unread data.
      return Closed(std::string("failed (") + std::strerror(errno) + ")");
    }
    got_ += static_cast<size_t>(n);
    if (got_ < w) continue;
    got_ = 0;
    if (stage_ == Stage::kChallenge) {
      nonce_a_.assign(reinterpret_cast<const char*>(buf_), ci::kNonceBytes);
      RT_RETURN_IF_ERROR(Answer(deadline));
      stage_ = Stage::kAnswer;
    } else {
      RT_RETURN_IF_ERROR(CheckAnswer());
      stage_ = Stage::kDone;
    }
  }
  return Status::Ok();
}

StatusOr<Fd> OutgoingHandshake::Finish(Deadline deadline) {
  while (true) {
    RT_RETURN_IF_ERROR(Advance(deadline));
    if (stage_ == Stage::kDone) return std::move(fd_);
    RT_ASSIGN_OR_RETURN(WaitResult w, WaitFd(fd_.get(), POLLIN, -1, deadline));
    if (w == WaitResult::kTimeout) {
      return DeadlineExceededError("ring handshake: timed out waiting for data from " + peer_);
    }
  }
}

}  // namespace ringtrain::collective
