#include "collective/handshake.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/logging.h"

namespace ringtrain {
namespace {

constexpr size_t kHelloBytes = 16;
constexpr char kMagic[4] = {'R', 'T', 'R', 'G'};
// Connections that have not yet sent a full hello; beyond this the oldest is dropped,
// so a flood of silent connections cannot exhaust descriptors.
constexpr size_t kMaxPendingCandidates = 32;

struct Hello {
  uint32_t version = 0;
  uint32_t rank = 0;
  uint32_t size = 0;
};

void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));  // little-endian on the wire
}
uint32_t GetU32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

void EncodeHello(int rank, int size, uint8_t* out) {
  std::memcpy(out, kMagic, 4);
  PutU32(out + 4, kRingProtocolVersion);
  PutU32(out + 8, static_cast<uint32_t>(rank));
  PutU32(out + 12, static_cast<uint32_t>(size));
}

// Returns an empty string if `bytes` is a valid hello from expected_rank of a ring of
// `size`, else why it is not.
std::string CheckHello(const uint8_t* bytes, int size, int expected_rank) {
  if (std::memcmp(bytes, kMagic, 4) != 0) return "it is not a ringtrain peer (bad magic)";
  Hello h{GetU32(bytes + 4), GetU32(bytes + 8), GetU32(bytes + 12)};
  if (h.version != kRingProtocolVersion) {
    return "it speaks ring protocol version " + std::to_string(h.version) + ", this build speaks " +
           std::to_string(kRingProtocolVersion) + " (are all workers running the same ringtrain build?)";
  }
  if (h.size != static_cast<uint32_t>(size)) {
    return "it belongs to a ring of " + std::to_string(h.size) + " ranks, this ring has " + std::to_string(size) +
           " (do all workers use the same cluster configuration?)";
  }
  if (h.rank != static_cast<uint32_t>(expected_rank)) {
    return "it says it is rank " + std::to_string(h.rank) + ", expected rank " + std::to_string(expected_rank);
  }
  return "";
}

struct Candidate {
  Fd fd;
  std::string remote;
  uint8_t hello[kHelloBytes] = {};
  size_t got = 0;
};

}  // namespace

StatusOr<Fd> ConnectToNext(const std::string& host, int port, int rank, int size, int next_rank,
                           Deadline deadline) {
  std::string peer = "rank " + std::to_string(next_rank) + " (" + host + ":" + std::to_string(port) + ")";
  RT_ASSIGN_OR_RETURN(Fd fd, ConnectTcp(host, port, deadline, peer));
  uint8_t hello[kHelloBytes];
  EncodeHello(rank, size, hello);
  RT_RETURN_IF_ERROR(SendAll(fd.get(), hello, sizeof(hello), deadline, -1, peer));
  return fd;
}

StatusOr<Fd> AcceptFromPrev(int listen_fd, int rank, int size, int prev_rank, Deadline deadline,
                            std::string* remote) {
  std::vector<Candidate> pending;
  std::string last_rejection;
  while (true) {
    std::vector<pollfd> fds;
    fds.push_back({listen_fd, POLLIN, 0});
    for (const Candidate& c : pending) fds.push_back({c.fd.get(), POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), deadline.remaining_ms_for_poll());
    if (n < 0 && errno != EINTR) return ErrnoError("poll() on the ring listener", errno);
    if (n == 0 && deadline.expired()) break;

    // Oldest first, so that connections are judged in the order they arrived.
    for (size_t i = 0; i < pending.size(); ++i) {
      if (fds[i + 1].revents == 0) continue;
      Candidate& c = pending[i];
      ssize_t got = ::recv(c.fd.get(), c.hello + c.got, kHelloBytes - c.got, 0);
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      if (got <= 0) {
        last_rejection = "a connection from " + c.remote + " closed before sending a complete hello";
        RT_LOG(WARNING) << "ring rank " << rank << ": ignoring " << last_rejection;
        c.fd.reset();
        continue;
      }
      c.got += static_cast<size_t>(got);
      if (c.got < kHelloBytes) continue;
      std::string why = CheckHello(c.hello, size, prev_rank);
      if (!why.empty()) {
        last_rejection = "rejected a connection from " + c.remote + ": " + why;
        RT_LOG(WARNING) << "ring rank " << rank << ": " << last_rejection << "; still waiting for rank "
                        << prev_rank;
        c.fd.reset();
        continue;
      }
      uint8_t reply[kHelloBytes];
      EncodeHello(rank, size, reply);
      std::string peer = "rank " + std::to_string(prev_rank) + " (" + c.remote + ")";
      RT_RETURN_IF_ERROR(SendAll(c.fd.get(), reply, sizeof(reply), deadline, -1, peer));
      *remote = c.remote;
      return std::move(c.fd);
    }
    std::erase_if(pending, [](const Candidate& c) { return !c.fd.valid(); });

    if (fds[0].revents != 0) {
      while (true) {
        std::string from;
        RT_ASSIGN_OR_RETURN(Fd fd, AcceptTcp(listen_fd, &from));
        if (!fd.valid()) break;
        if (pending.size() >= kMaxPendingCandidates) {
          RT_LOG(WARNING) << "ring rank " << rank << ": too many silent connections; dropping the one from "
                          << pending.front().remote;
          pending.erase(pending.begin());
        }
        pending.push_back(Candidate{std::move(fd), from});
      }
    }
    if (deadline.expired()) break;
  }
  std::string msg = "rank " + std::to_string(prev_rank) + " did not connect to rank " + std::to_string(rank) +
                    " before the deadline; check that it is running and can reach this host";
  if (!last_rejection.empty()) msg += " (last problem: " + last_rejection + ")";
  return DeadlineExceededError(msg);
}

Status AwaitNextReply(int fd, int size, int next_rank, Deadline deadline, const std::string& peer) {
  uint8_t reply[kHelloBytes];
  Status s = RecvAll(fd, reply, sizeof(reply), deadline, -1, peer);
  if (s.code() == Code::kUnavailable) {
    return UnavailableError(s.message() +
                            " during the handshake: it rejected our hello (do all workers run the same ringtrain "
                            "build with the same cluster configuration? see that rank's log)");
  }
  if (!s.ok()) return s.WithContext("ring handshake");
  std::string why = CheckHello(reply, size, next_rank);
  if (!why.empty()) return FailedPreconditionError("ring handshake with " + peer + " failed: " + why);
  return Status::Ok();
}

}  // namespace ringtrain
