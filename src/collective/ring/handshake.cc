// The acceptor's side of the ring handshake (see handshake.h for the exchange): one
// poll loop over the listener, every connection still proving itself, and our own
// outgoing handshake, so that no stranger and no peer can hold up the others.
#include "collective/ring/handshake.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <vector>

#include "common/logging.h"

namespace ringtrain::collective {
namespace ci = internal;
namespace {

// Connections that have not yet completed their part; beyond this the oldest is
// dropped, so a flood of silent connections cannot exhaust descriptors.
constexpr size_t kMaxPendingCandidates = 32;
// Refusals logged one by one per set-up; the rest are counted, so a flood of
// connections cannot flood the log.
constexpr int kMaxLoggedRefusals = 16;
// Bound on the small sends to a candidate (a challenge, an answer into an idle socket).
constexpr std::chrono::milliseconds kSmallSendTimeout{1000};

struct Candidate {
  Fd fd;
  std::string remote;
  Deadline expires = Deadline::After(kCandidateTimeout);
  std::string nonce_a;  // with a cluster secret: the challenge we sent it
  uint8_t buf[ci::kHelloBytes + ci::kNonceBytes + ci::kProofBytes] = {};
  size_t got = 0;
  bool hello_ok = false;
};

// Logs each refused connection once (up to kMaxLoggedRefusals) and remembers the last
// problem for the deadline error.
class RefusalLog {
 public:
  RefusalLog(int rank, int prev_rank, bool secured) : rank_(rank), prev_rank_(prev_rank), secured_(secured) {}
  ~RefusalLog() {
    if (unlogged_ > 0) {
      RT_LOG(WARNING) << "ring rank " << rank_ << ": refused " << unlogged_
                      << " more connections during set-up without logging each";
    }
  }
  // `waiting`: set-up goes on waiting for the real peer (else it has just arrived).
  void Refuse(const std::string& remote, const std::string& why, bool waiting = true) {
    last_ = (secured_ ? "refused a data-plane connection from " : "rejected a connection from ") + remote + ": " + why;
    Log(last_, waiting);
  }
  void Ignore(const std::string& what) {
    last_ = what;
    Log("ignoring " + what, true);
  }
  const std::string& last() const { return last_; }

 private:
  void Log(const std::string& line, bool waiting) {
    if (logged_ >= kMaxLoggedRefusals) {
      ++unlogged_;
      return;
    }
    ++logged_;
    RT_LOG(WARNING) << "ring rank " << rank_ << ": " << line
                    << (waiting ? "; still waiting for rank " + std::to_string(prev_rank_) : std::string());
  }
  int rank_, prev_rank_;
  bool secured_;
  int logged_ = 0, unlogged_ = 0;
  std::string last_;
};

// What the acceptor expects from a candidate in all.
size_t Expected(const Candidate& c, bool secured) {
  return c.hello_ok && secured ? ci::kHelloBytes + ci::kNonceBytes + ci::kProofBytes : ci::kHelloBytes;
}

// Sends our hello, followed (with a secret) by our proof -- or, for a refused
// connector, 32 zero bytes, which it reports as a cluster-secret mismatch.
Status Answer(const Candidate& c, int rank, int size, int prev_rank, const security::ClusterSecret& secret,
              bool refuse, Deadline deadline) {
  const bool secured = secret.configured();
  std::string answer(ci::kHelloBytes, '\0');
  ci::EncodeHello(secured ? ci::HelloKind::kSecured : ci::HelloKind::kPlain, kRingProtocolVersion, rank, size,
                  reinterpret_cast<uint8_t*>(answer.data()));
  if (secured && refuse) answer.append(ci::kProofBytes, '\0');
  if (secured && !refuse) {
    std::string_view nonce_c(reinterpret_cast<const char*>(c.buf) + ci::kHelloBytes, ci::kNonceBytes);
    answer += secret.Proof(ci::kDataPlaneContext, ci::ProofMessage("accept", c.nonce_a, nonce_c, prev_rank, rank, size));
  }
  return SendAll(c.fd.get(), answer.data(), answer.size(), deadline, -1,
                 "rank " + std::to_string(prev_rank) + " (" + c.remote + ")");
}

// Reads what has arrived on a candidate. Returns true when it completed the handshake
// as prev_rank (and has been answered); closes it when it failed.
StatusOr<bool> Advance(Candidate& c, int rank, int size, int prev_rank, const security::ClusterSecret& secret,
                       Deadline deadline, RefusalLog& log) {
  const bool secured = secret.configured();
  while (c.fd.valid()) {
    const size_t want = Expected(c, secured);
    ssize_t got = ::recv(c.fd.get(), c.buf + c.got, want - c.got, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (got <= 0) {
      log.Ignore("a connection from " + c.remote + " that closed before completing the handshake");
      c.fd.reset();
      return false;
    }
    c.got += static_cast<size_t>(got);
    if (c.got < want) continue;
    if (!c.hello_ok) {
      const ci::HelloKind kind = secured ? ci::HelloKind::kSecured : ci::HelloKind::kPlain;
      std::string why = ci::CheckHello(c.buf, kind, kRingProtocolVersion, size, prev_rank);
      if (!why.empty()) {
        log.Refuse(c.remote, why);
        c.fd.reset();
        return false;
      }
      c.hello_ok = true;
      if (secured) continue;  // its nonce and proof follow
    } else {
      std::string_view nonce_c(reinterpret_cast<const char*>(c.buf) + ci::kHelloBytes, ci::kNonceBytes);
      std::string_view proof(reinterpret_cast<const char*>(c.buf) + ci::kHelloBytes + ci::kNonceBytes,
                             ci::kProofBytes);
      if (!secret.Verify(ci::kDataPlaneContext, ci::ProofMessage("connect", c.nonce_a, nonce_c, prev_rank, rank, size),
                         proof)) {
        // Best effort: a stranger that does not read the refusal loses nothing.
        (void)Answer(c, rank, size, prev_rank, secret, /*refuse=*/true,
                     Deadline::Min(deadline, Deadline::After(kSmallSendTimeout)));
        log.Refuse(c.remote, "wrong or missing cluster secret");
        c.fd.reset();
        return false;
      }
    }
    RT_RETURN_IF_ERROR(Answer(c, rank, size, prev_rank, secret, /*refuse=*/false, deadline));
    return true;
  }
  return false;
}

// Accepts every pending connection; with a secret, sends each its challenge at once.
Status AcceptPending(int listen_fd, const security::ClusterSecret& secret, Deadline deadline,
                     std::vector<Candidate>& pending, RefusalLog& log) {
  while (true) {
    Candidate c;
    RT_ASSIGN_OR_RETURN(c.fd, AcceptTcp(listen_fd, &c.remote));
    if (!c.fd.valid()) return Status::Ok();
    c.expires = Deadline::Min(deadline, Deadline::After(kCandidateTimeout));
    if (secret.configured()) {
      RT_ASSIGN_OR_RETURN(c.nonce_a, security::RandomBytes(ci::kNonceBytes));
      Status sent = SendAll(c.fd.get(), c.nonce_a.data(), c.nonce_a.size(),
                            Deadline::Min(deadline, Deadline::After(kSmallSendTimeout)), -1, c.remote);
      if (!sent.ok()) {
        log.Ignore("a connection from " + c.remote + " that failed before the handshake (" + sent.message() + ")");
        continue;
      }
    }
    if (pending.size() >= kMaxPendingCandidates) {
      log.Refuse(pending.front().remote, "too many connections were still to complete the handshake; dropping "
                                         "the oldest");
      pending.erase(pending.begin());
    }
    pending.push_back(std::move(c));
  }
}

}  // namespace

StatusOr<Fd> AcceptFromPrev(int listen_fd, int rank, int size, int prev_rank, const security::ClusterSecret& secret,
                            Deadline deadline, OutgoingHandshake* next, std::string* remote) {
  std::vector<Candidate> pending;
  RefusalLog log(rank, prev_rank, secret.configured());
  const std::string slow = "it did not complete the handshake within " +
                           std::to_string(kCandidateTimeout.count() / 1000) + " s";
  while (true) {
    std::vector<pollfd> fds;
    fds.push_back({listen_fd, POLLIN, 0});
    Deadline wake = deadline;
    for (const Candidate& c : pending) {
      fds.push_back({c.fd.get(), POLLIN, 0});
      wake = Deadline::Min(wake, c.expires);
    }
    const bool watch_next = next != nullptr && next->needs_polling();
    if (watch_next) fds.push_back({next->fd(), POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), wake.remaining_ms_for_poll());
    if (n < 0 && errno != EINTR) return ErrnoError("poll() on the ring listener", errno);
    if (n < 0) continue;

    // The next rank may be waiting for our answer to its challenge before it can
    // accept anyone, or may have refused us: serve it first.
    if (watch_next && fds.back().revents != 0) RT_RETURN_IF_ERROR(next->Advance(deadline));

    // Oldest first, so that connections are judged in the order they arrived.
    for (size_t i = 0; i < pending.size(); ++i) {
      Candidate& c = pending[i];
      if (fds[i + 1].revents != 0) {
        RT_ASSIGN_OR_RETURN(bool done, Advance(c, rank, size, prev_rank, secret, deadline, log));
        if (done) {
          *remote = c.remote;
          Fd fd = std::move(c.fd);
          pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
          // The ones still proving themselves are closed as `pending` goes; say so.
          for (const Candidate& left : pending) {
            if (left.fd.valid()) {
              log.Refuse(left.remote, "it had not completed the handshake when rank " + std::to_string(prev_rank) +
                                          " connected", /*waiting=*/false);
            }
          }
          return fd;
        }
      }
      if (c.fd.valid() && c.expires.expired() && !deadline.expired()) {
        log.Refuse(c.remote, slow);
        c.fd.reset();
      }
    }
    std::erase_if(pending, [](const Candidate& c) { return !c.fd.valid(); });

    if (fds[0].revents != 0) RT_RETURN_IF_ERROR(AcceptPending(listen_fd, secret, deadline, pending, log));
    if (deadline.expired()) break;
  }
  std::string msg = "rank " + std::to_string(prev_rank) + " did not connect to rank " + std::to_string(rank) +
                    " before the deadline; check that it is running and can reach this host";
  if (!log.last().empty()) msg += " (last problem: " + log.last() + ")";
  return DeadlineExceededError(msg);
}

}  // namespace ringtrain::collective
