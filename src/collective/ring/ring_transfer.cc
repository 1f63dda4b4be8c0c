// RingCommunicator's transfer engine: the operation header, the one loop that moves
// an operation's send and receive streams, abort, and the errors that name peers.
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "collective/reduce.h"
#include "collective/ring/ring_communicator.h"

namespace ringtrain::collective {
namespace {

// iovecs per sendmsg/recvmsg: enough for a header plus a few small pieces.
constexpr int kMaxIov = 8;
// Floor of the bytes moved per system call, so that tiny chunk sizes (tests) do not
// mean tiny system calls.
constexpr size_t kMinIoBytes = 64 << 10;

const char* OpName(uint32_t kind) {
  switch (kind) {
    case 1: return "AllReduce";
    case 2: return "Broadcast";
    case 3: return "AllGather";
    case 4: return "Barrier";
  }
  return "an unknown operation";
}

// Header words: kind | type << 8 | reduction << 16 | root << 32, count, sequence
// number. Native-endian: every rank runs the same build (the handshake checks the
// protocol version).
uint64_t HeaderWord(uint32_t kind, DataType type, ReduceOp op, uint32_t root) {
  return kind | static_cast<uint64_t>(type) << 8 | static_cast<uint64_t>(op) << 16 | static_cast<uint64_t>(root) << 32;
}

std::string Describe(const uint64_t h[3]) {
  const auto kind = static_cast<uint32_t>(h[0] & 0xff);
  const auto type = static_cast<DataType>((h[0] >> 8) & 0xff);
  const auto op = static_cast<ReduceOp>((h[0] >> 16) & 0xff);
  std::string s = std::string(OpName(kind)) + "(";
  if (kind != 4) {
    s += "count=" + std::to_string(h[1]) + ", ";
    s += IsKnownDataType(type) ? DataTypeName(type) : "data type " + std::to_string(static_cast<int>(type));
  }
  if (kind == 1) s += std::string(", ") + ReduceOpName(op);
  if (kind == 2) s += ", root=" + std::to_string(h[0] >> 32);
  return s + ") as operation #" + std::to_string(h[2]);
}

}  // namespace

RingCommunicator::RingCommunicator(int rank, int size, const CommunicatorOptions& options, Peer next, Peer prev,
                                   Fd abort_fd)
    : CommunicatorBase(rank, size),
      timeout_(options.timeout),
      chunk_option_(options.chunk_bytes),
      io_bytes_(std::max(std::max<size_t>(sizeof(float), options.chunk_bytes / sizeof(float) * sizeof(float)),
                         kMinIoBytes)),
      next_(std::move(next)),
      prev_(std::move(prev)),
      abort_fd_(std::move(abort_fd)),
      // The largest chunk of any type: chunk_bytes rounded down to whole elements, at
      // least one element (8 bytes at most).
      scratch_((std::max(options.chunk_bytes, sizeof(uint64_t)) + sizeof(uint64_t) - 1) / sizeof(uint64_t)) {}

RingCommunicator::~RingCommunicator() = default;  // Fd members close; close(2) without SO_LINGER does not block

void RingCommunicator::OnAbort() {
  uint64_t one = 1;
  ssize_t ignored = ::write(abort_fd_.get(), &one, sizeof(one));
  (void)ignored;
  // shutdown(2), unlike close(2), leaves the descriptors valid for the thread that may
  // be polling them, and sends FIN so neighbours see the failure now.
  ::shutdown(next_.fd.get(), SHUT_RDWR);
  ::shutdown(prev_.fd.get(), SHUT_RDWR);
}

void RingCommunicator::OnBroken(const Status& first) {
  ::shutdown(next_.fd.get(), SHUT_RDWR);
  ::shutdown(prev_.fd.get(), SHUT_RDWR);
}

Status RingCommunicator::PeerError(const Peer& peer, OpKind kind, const std::string& what, size_t done,
                                   size_t total) const {
  return UnavailableError("connection to " + peer.name + " " + what + " during " +
                          OpName(static_cast<uint32_t>(kind)) + " (" + std::to_string(done) + " of " +
                          std::to_string(total) + " bytes of the operation transferred) on rank " +
                          std::to_string(rank()) + "; that rank probably exited, crashed or aborted -- see its log");
}

Status RingCommunicator::TimeoutError(const Peer& peer, OpKind kind, const std::string& what, size_t done,
                                      size_t total) const {
  return DeadlineExceededError(std::string(OpName(static_cast<uint32_t>(kind))) + " on rank " +
                               std::to_string(rank()) + " timed out after " + std::to_string(timeout_.count()) +
                               " ms " + what + " " + peer.name + " (" + std::to_string(done) + " of " +
                               std::to_string(total) + " bytes of the operation transferred); that rank may be "
                               "hung, overloaded or not calling the same collective -- check its log, or raise the "
                               "collective timeout");
}

void RingCommunicator::BeginOp(OpKind kind, DataType type, ReduceOp op, uint64_t count, uint32_t root) {
  const size_t elem = DataTypeSize(type);
  type_ = type;
  chunk_bytes_ = std::max(elem, chunk_option_ / elem * elem);
  header_[0] = HeaderWord(static_cast<uint32_t>(kind), type, op, root);
  header_[1] = count;
  header_[2] = next_seq_++;
  send_.clear();
  recv_.clear();
  // The header goes first on both streams; it shares a system call with the first data.
  send_.push_back({reinterpret_cast<const char*>(header_), sizeof(header_), -1});
  recv_.push_back({reinterpret_cast<char*>(peer_header_), sizeof(peer_header_), false, 0});
}

Status RingCommunicator::CheckHeader() {
  if (std::memcmp(header_, peer_header_, sizeof(header_)) == 0) return Status::Ok();
  return FailedPreconditionError("collective mismatch: " + prev_.name + " issued " + Describe(peer_header_) +
                                 ", but rank " + std::to_string(rank()) + " issued " + Describe(header_) +
                                 "; every rank must issue the same collectives with the same sizes in the same order");
}

Status RingCommunicator::Transfer(OpKind kind, Deadline deadline) {
  const size_t ns = send_.size();
  const size_t nr = recv_.size();
  recv_done_.assign(nr, 0);
  size_t send_total = 0, recv_total = 0;
  for (const SendPiece& p : send_) send_total += p.len;
  for (const RecvPiece& p : recv_) recv_total += p.len;
  size_t si = 0, soff = 0, sent = 0;      // send position: piece, offset in it, stream total
  size_t ri = 0, roff = 0, received = 0;  // receive position, likewise
  char* scratch = reinterpret_cast<char*>(scratch_.data());
  iovec iov[kMaxIov];
  msghdr msg{};
  msg.msg_iov = iov;

  // Advances past `n` sent bytes and any empty pieces.
  auto advance_send = [&](size_t n) {
    sent += n;
    while (si < ns) {
      size_t take = std::min(n, send_[si].len - soff);
      soff += take;
      n -= take;
      if (soff < send_[si].len) break;
      ++si;
      soff = 0;
    }
  };
  // Advances past `n` received bytes and any empty pieces: validates the header once
  // it is complete and reduces each scratch chunk once it is full.
  auto advance_recv = [&](size_t n) -> Status {
    received += n;
    while (ri < nr) {
      RecvPiece& p = recv_[ri];
      size_t take = std::min(n, p.len - roff);
      if (p.reduce) {
        size_t chunk_start = roff - roff % chunk_bytes_;
        roff += take;
        if (take > 0 && (roff % chunk_bytes_ == 0 || roff == p.len)) {
          char* dst = p.data + chunk_start;
          const void* sources[2] = {dst, scratch_.data()};
          internal::ReduceInOrder(type_, sources, 2, (roff - chunk_start) / DataTypeSize(type_), p.divide_by, dst,
                                  nullptr);
          recv_done_[ri] = roff;
        }
      } else {
        roff += take;
        recv_done_[ri] = roff;
      }
      n -= take;
      if (roff < p.len) break;
      if (ri == 0) RT_RETURN_IF_ERROR(CheckHeader());  // before any data is reduced or forwarded
      ++ri;
      roff = 0;
    }
    return Status::Ok();
  };

  // One non-blocking sendmsg of what may go out now (gated pieces up to what has
  // arrived). Returns the bytes sent, 0 when nothing may go out yet, -1 when the socket is full.
  auto try_send = [&]() -> StatusOr<ssize_t> {
    int cnt = 0;
    size_t bytes = 0;
    for (size_t i = si, off = soff; i < ns && cnt < kMaxIov && bytes < io_bytes_; ++i, off = 0) {
      const SendPiece& p = send_[i];
      size_t avail = p.gate < 0 ? p.len : std::min(p.len, recv_done_[p.gate]);
      if (avail > off) {
        size_t len = std::min(avail - off, io_bytes_ - bytes);
        iov[cnt++] = {const_cast<char*>(p.data + off), len};
        bytes += len;
      }
      if (avail < p.len) break;
    }
    if (cnt == 0) return ssize_t{0};
    msg.msg_iovlen = static_cast<size_t>(cnt);
    ssize_t n;
    do {
      n = ::sendmsg(next_.fd.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n >= 0) return n;
    int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) return ssize_t{-1};
    std::string what = err == EPIPE || err == ECONNRESET ? "closed" : std::string("failed (") + std::strerror(err) + ")";
    return PeerError(next_, kind, what, sent, send_total);
  };
  // One non-blocking recvmsg into the current pieces (a reduce piece: into its scratch
  // chunk, which must be reduced before more lands in it). Returns the bytes received,
  // or -1 when nothing is waiting.
  auto try_recv = [&]() -> StatusOr<ssize_t> {
    int cnt = 0;
    size_t bytes = 0;
    for (size_t i = ri, off = roff; i < nr && cnt < kMaxIov && bytes < io_bytes_; ++i, off = 0) {
      const RecvPiece& p = recv_[i];
      if (p.len == off) continue;
      if (p.reduce) {
        size_t in_chunk = off % chunk_bytes_;
        iov[cnt++] = {scratch + in_chunk, std::min({chunk_bytes_ - in_chunk, p.len - off, io_bytes_ - bytes})};
        break;
      }
      size_t len = std::min(p.len - off, io_bytes_ - bytes);
      iov[cnt++] = {p.data + off, len};
      bytes += len;
    }
    msg.msg_iovlen = static_cast<size_t>(cnt);
    ssize_t n;
    do {
      n = ::recvmsg(prev_.fd.get(), &msg, MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n > 0) return n;
    if (n == 0) return PeerError(prev_, kind, "closed", received, recv_total);
    int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) return ssize_t{-1};
    std::string what = err == ECONNRESET ? "closed (reset by peer)" : std::string("failed (") + std::strerror(err) + ")";
    return PeerError(prev_, kind, what, received, recv_total);
  };

  advance_send(0);
  RT_RETURN_IF_ERROR(advance_recv(0));
  while (si < ns || ri < nr) {
    if (aborted()) return AbortStatus();
    bool progress = false;
    bool send_blocked = false;
    bool recv_blocked = false;
    // Send first: our data leaves as early as possible, and a gated forward of what the
    // last iteration received goes out before this rank waits again. (Measured: receiving
    // first costs a system call and a wake-up per small operation, and helps nothing.)
    if (si < ns) {
      StatusOr<ssize_t> sent_now = try_send();
      if (!sent_now.ok()) {
        // The next rank went away. If it did so because it saw a mismatch, the previous
        // rank's header may be waiting here too: report the mismatch, the root cause.
        if (ri == 0) {
          StatusOr<ssize_t> got = try_recv();
          if (got.ok() && *got > 0) RT_RETURN_IF_ERROR(advance_recv(static_cast<size_t>(*got)));
        }
        return sent_now.status();
      }
      ssize_t n = *sent_now;
      if (n > 0) advance_send(static_cast<size_t>(n));
      progress = n > 0;
      send_blocked = n < 0;
    }
    if (ri < nr) {
      RT_ASSIGN_OR_RETURN(ssize_t n, try_recv());
      if (n > 0) RT_RETURN_IF_ERROR(advance_recv(static_cast<size_t>(n)));
      progress = progress || n > 0;
      recv_blocked = n < 0;
    }
    if (si >= ns && ri >= nr) break;
    if (deadline.expired()) {
      return ri < nr ? TimeoutError(prev_, kind, "waiting for data from", received, recv_total)
                     : TimeoutError(next_, kind, "waiting to send to", sent, send_total);
    }
    if (progress) continue;
    // Nothing moved: the receive (if any is left) found nothing waiting, and the send is
    // either blocked on a full socket or gated on that receive. Sleep until a socket is
    // ready, Abort() fires, or the deadline. (Spinning instead was measured to be much
    // worse on shared or oversubscribed cores.)
    //
    // The next rank never sends on our connection to it, so anything readable there
    // means it shut the connection down (it failed or aborted). A sender blocked on a
    // full socket watches for that, or it would wait for the deadline on bytes the next
    // rank will never read. (Only then: a rank waiting to receive reports its own
    // timeout or its previous rank's failure, which names the culprit better.)
    pollfd fds[3];
    nfds_t nfds = 0;
    fds[nfds++] = {abort_fd_.get(), POLLIN, 0};
    if (recv_blocked) fds[nfds++] = {prev_.fd.get(), POLLIN, 0};
    const nfds_t next_index = nfds;
    if (send_blocked) fds[nfds++] = {next_.fd.get(), POLLOUT | POLLRDHUP, 0};
    int rc = ::poll(fds, nfds, deadline.remaining_ms_for_poll());
    if (rc < 0 && errno != EINTR) return ErrnoError("poll() in a ring transfer", errno);
    if (rc > 0 && next_index < nfds && (fds[next_index].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
      if (ri == 0) {  // as above: prefer reporting a mismatch that made it leave
        StatusOr<ssize_t> got = try_recv();
        if (got.ok() && *got > 0) RT_RETURN_IF_ERROR(advance_recv(static_cast<size_t>(*got)));
      }
      return PeerError(next_, kind, "closed", sent, send_total);
    }
  }
  return Status::Ok();
}

}  // namespace ringtrain::collective
