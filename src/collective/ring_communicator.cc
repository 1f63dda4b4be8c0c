#include "collective/ring_communicator.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ringtrain {
namespace {

// Written native-endian: every rank runs the same build (checked in the handshake).
struct OpHeader {
  uint32_t kind = 0;
  uint32_t root = 0;
  uint64_t count = 0;
  uint64_t seq = 0;
};
static_assert(sizeof(OpHeader) == 24);

const char* OpName(uint32_t kind) {
  switch (kind) {
    case 1: return "AllReduce";
    case 2: return "Broadcast";
    case 3: return "AllGather";
    case 4: return "Barrier";
  }
  return "an unknown operation";
}

std::string Describe(const OpHeader& h) {
  std::string s = std::string(OpName(h.kind)) + "(count=" + std::to_string(h.count);
  if (h.kind == 2) s += ", root=" + std::to_string(h.root);
  return s + ") as operation #" + std::to_string(h.seq);
}

// dst[i] += src[i]. The restrict qualifiers let the compiler vectorise; the order of
// additions per element is fixed, so the result is deterministic.
void AddInto(float* __restrict dst, const float* __restrict src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] += src[i];
}

void DivideBy(float* data, size_t n, float divisor) {
  for (size_t i = 0; i < n; ++i) data[i] /= divisor;
}

}  // namespace

RingCommunicator::RingCommunicator(int rank, int size, const CommunicatorOptions& options, Peer next, Peer prev,
                                   Fd abort_fd)
    : rank_(rank),
      size_(size),
      timeout_(options.timeout),
      chunk_bytes_(std::max<size_t>(sizeof(float), options.chunk_bytes / sizeof(float) * sizeof(float))),
      next_(std::move(next)),
      prev_(std::move(prev)),
      abort_fd_(std::move(abort_fd)),
      scratch_(chunk_bytes_ / sizeof(float)) {}

RingCommunicator::~RingCommunicator() = default;  // Fd members close; close(2) without SO_LINGER does not block

void RingCommunicator::Abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(abort_mu_);
    if (aborted_.load()) return;
    abort_reason_ = reason.empty() ? "the communicator was aborted" : reason;
    aborted_.store(true);
  }
  uint64_t one = 1;
  ssize_t ignored = ::write(abort_fd_.get(), &one, sizeof(one));
  (void)ignored;
  // shutdown(2), unlike close(2), leaves the descriptors valid for the thread that may
  // be polling them, and sends FIN so neighbours see the failure now.
  ::shutdown(next_.fd.get(), SHUT_RDWR);
  ::shutdown(prev_.fd.get(), SHUT_RDWR);
}

Status RingCommunicator::AbortStatus() const {
  std::lock_guard<std::mutex> lock(abort_mu_);
  return AbortedError(abort_reason_);
}

Status RingCommunicator::Fail(const Status& status) {
  broken_ = aborted_.load() ? AbortStatus() : status;
  // The ring is unusable now. Shutting both connections down makes the neighbours'
  // in-flight operations fail at once (and theirs, theirs) instead of each rank
  // waiting out its timeout.
  ::shutdown(next_.fd.get(), SHUT_RDWR);
  ::shutdown(prev_.fd.get(), SHUT_RDWR);
  return broken_;
}

Status RingCommunicator::PeerError(const Peer& peer, OpKind kind, const std::string& what, size_t done,
                                   size_t total) const {
  return UnavailableError("connection to " + peer.name + " " + what + " during " +
                          OpName(static_cast<uint32_t>(kind)) + " (" + std::to_string(done) + " of " +
                          std::to_string(total) + " bytes of a ring step transferred) on rank " +
                          std::to_string(rank_) + "; that rank probably exited, crashed or aborted -- see its log");
}

Status RingCommunicator::TimeoutError(const Peer& peer, OpKind kind, const std::string& what, size_t done,
                                      size_t total) const {
  return DeadlineExceededError(std::string(OpName(static_cast<uint32_t>(kind))) + " on rank " +
                               std::to_string(rank_) + " timed out after " + std::to_string(timeout_.count()) +
                               " ms " + what + " " + peer.name + " (" + std::to_string(done) + " of " +
                               std::to_string(total) + " bytes of a ring step transferred); that rank may be hung, "
                               "overloaded or not calling the same collective -- check its log, or raise the "
                               "collective timeout");
}

Status RingCommunicator::RunStep(const Step& step, OpKind kind, Deadline deadline) {
  size_t sent = 0;
  size_t received = 0;
  char* scratch = reinterpret_cast<char*>(scratch_.data());
  while (sent < step.send_len || received < step.recv_len) {
    if (aborted_.load(std::memory_order_relaxed)) return AbortStatus();
    bool progress = false;

    if (received < step.recv_len) {
      size_t in_chunk = received % chunk_bytes_;
      size_t want = std::min(chunk_bytes_ - in_chunk, step.recv_len - received);
      char* dst = step.reduce ? scratch + in_chunk : step.recv + received;
      ssize_t n = ::recv(prev_.fd.get(), dst, want, 0);
      if (n > 0) {
        received += static_cast<size_t>(n);
        progress = true;
        if (step.reduce && (received % chunk_bytes_ == 0 || received == step.recv_len)) {
          size_t chunk_start = received - (in_chunk + static_cast<size_t>(n));
          AddInto(reinterpret_cast<float*>(step.recv + chunk_start), scratch_.data(),
                  (received - chunk_start) / sizeof(float));
        }
      } else if (n == 0) {
        return PeerError(prev_, kind, "closed", received, step.recv_len);
      } else if (int err = errno; err != EAGAIN && err != EWOULDBLOCK && err != EINTR) {
        std::string what = err == ECONNRESET ? "closed (reset by peer)"
                                             : std::string("failed (") + std::strerror(err) + ")";
        return PeerError(prev_, kind, what, received, step.recv_len);
      }
    }

    size_t available = step.forward ? received : step.send_len;
    if (sent < available) {
      size_t want = std::min(chunk_bytes_, available - sent);
      ssize_t n = ::send(next_.fd.get(), step.send + sent, want, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
        progress = true;
      } else if (int err = errno; n < 0 && err != EAGAIN && err != EWOULDBLOCK && err != EINTR) {
        std::string what = err == EPIPE || err == ECONNRESET ? "closed"
                                                             : std::string("failed (") + std::strerror(err) + ")";
        return PeerError(next_, kind, what, sent, step.send_len);
      }
    }

    bool waiting_recv = received < step.recv_len;
    if (!waiting_recv && sent == step.send_len) break;
    if (deadline.expired()) {
      return waiting_recv ? TimeoutError(prev_, kind, "waiting for data from", received, step.recv_len)
                          : TimeoutError(next_, kind, "waiting to send to", sent, step.send_len);
    }
    if (progress) continue;

    // Nothing moved: sleep until a socket is ready, Abort() fires, or the deadline.
    pollfd fds[3];
    nfds_t nfds = 0;
    fds[nfds++] = {abort_fd_.get(), POLLIN, 0};
    if (waiting_recv) fds[nfds++] = {prev_.fd.get(), POLLIN, 0};
    if (sent < (step.forward ? received : step.send_len)) fds[nfds++] = {next_.fd.get(), POLLOUT, 0};
    int rc = ::poll(fds, nfds, deadline.remaining_ms_for_poll());
    if (rc < 0 && errno != EINTR) return ErrnoError("poll() in a ring step", errno);
  }
  return Status::Ok();
}

Status RingCommunicator::BeginOp(OpKind kind, uint64_t count, uint32_t root, Deadline deadline) {
  if (aborted_.load()) return AbortStatus();
  if (!broken_.ok()) return broken_;
  OpHeader mine;
  mine.kind = static_cast<uint32_t>(kind);
  mine.root = root;
  mine.count = count;
  mine.seq = next_seq_++;
  OpHeader theirs;
  Step step;
  step.send = reinterpret_cast<const char*>(&mine);
  step.send_len = sizeof(mine);
  step.recv = reinterpret_cast<char*>(&theirs);
  step.recv_len = sizeof(theirs);
  Status s = RunStep(step, kind, deadline);
  if (!s.ok()) return Fail(s);
  if (std::memcmp(&mine, &theirs, sizeof(mine)) != 0) {
    return Fail(FailedPreconditionError(
        "collective mismatch: " + prev_.name + " issued " + Describe(theirs) + ", but rank " +
        std::to_string(rank_) + " issued " + Describe(mine) +
        "; every rank must issue the same collectives with the same sizes in the same order"));
  }
  return Status::Ok();
}

Status RingCommunicator::RingAllReduce(float* data, size_t count, ReduceOp op, OpKind kind, Deadline deadline) {
  const size_t n = static_cast<size_t>(size_);
  const size_t base = count / n;
  const size_t extra = count % n;
  // Segment i: base elements, plus one for the first `extra` segments. Some are empty when count < n.
  auto offset = [&](int i) { return static_cast<size_t>(i) * base + std::min<size_t>(i, extra); };
  auto length = [&](int i) { return base + (static_cast<size_t>(i) < extra ? 1 : 0); };
  auto bytes = [&](int i) { return length(i) * sizeof(float); };
  auto at = [&](int i) { return reinterpret_cast<char*>(data + offset(i)); };

  // Reduce-scatter: after step k, segment (rank-k-1) holds the sum of k+2 ranks' inputs.
  for (int k = 0; k < size_ - 1; ++k) {
    int s_send = Mod(rank_ - k);
    int s_recv = Mod(rank_ - k - 1);
    Step step{at(s_send), bytes(s_send), at(s_recv), bytes(s_recv), /*reduce=*/true, /*forward=*/false};
    Status s = RunStep(step, kind, deadline);
    if (!s.ok()) return Fail(s);
  }
  // This rank now owns the complete sum of segment rank+1. Scaling it once, here,
  // before the all-gather keeps every rank's copy bit-identical.
  int owned = Mod(rank_ + 1);
  if (op == ReduceOp::kMean) DivideBy(data + offset(owned), length(owned), static_cast<float>(size_));

  for (int k = 0; k < size_ - 1; ++k) {
    int s_send = Mod(rank_ + 1 - k);
    int s_recv = Mod(rank_ - k);
    Step step{at(s_send), bytes(s_send), at(s_recv), bytes(s_recv), /*reduce=*/false, /*forward=*/false};
    Status s = RunStep(step, kind, deadline);
    if (!s.ok()) return Fail(s);
  }
  return Status::Ok();
}

Status RingCommunicator::AllReduce(float* data, size_t count, ReduceOp op) {
  if (data == nullptr && count > 0) return InvalidArgumentError("AllReduce: data is null but count is > 0");
  Deadline deadline = Deadline::After(timeout_);
  RT_RETURN_IF_ERROR(BeginOp(OpKind::kAllReduce, count, 0, deadline));
  return RingAllReduce(data, count, op, OpKind::kAllReduce, deadline);
}

Status RingCommunicator::Barrier() {
  Deadline deadline = Deadline::After(timeout_);
  RT_RETURN_IF_ERROR(BeginOp(OpKind::kBarrier, 0, 0, deadline));
  // One element per segment, so every step of the ring carries data: no rank can
  // leave before every rank's contribution has travelled to it.
  std::vector<float> token(static_cast<size_t>(size_), 0.0f);
  return RingAllReduce(token.data(), token.size(), ReduceOp::kSum, OpKind::kBarrier, deadline);
}

Status RingCommunicator::Broadcast(float* data, size_t count, int root) {
  if (root < 0 || root >= size_) {
    return InvalidArgumentError("Broadcast: root " + std::to_string(root) + " is not a rank of this ring (0.." +
                                std::to_string(size_ - 1) + ")");
  }
  if (data == nullptr && count > 0) return InvalidArgumentError("Broadcast: data is null but count is > 0");
  Deadline deadline = Deadline::After(timeout_);
  RT_RETURN_IF_ERROR(BeginOp(OpKind::kBroadcast, count, static_cast<uint32_t>(root), deadline));
  // A chain root -> root+1 -> ... -> root-1; middle ranks relay each chunk as it lands.
  const int position = Mod(rank_ - root);
  const size_t len = count * sizeof(float);
  char* bytes = reinterpret_cast<char*>(data);
  Step step;
  if (position != size_ - 1) {
    step.send = bytes;
    step.send_len = len;
  }
  if (position != 0) {
    step.recv = bytes;
    step.recv_len = len;
    step.forward = position != size_ - 1;
  }
  Status s = RunStep(step, OpKind::kBroadcast, deadline);
  return s.ok() ? s : Fail(s);
}

Status RingCommunicator::AllGather(const float* in, size_t count, float* out) {
  if ((in == nullptr || out == nullptr) && count > 0) {
    return InvalidArgumentError("AllGather: in or out is null but count is > 0");
  }
  Deadline deadline = Deadline::After(timeout_);
  RT_RETURN_IF_ERROR(BeginOp(OpKind::kAllGather, count, 0, deadline));
  if (count == 0) return Status::Ok();
  const size_t block = count * sizeof(float);
  char* base = reinterpret_cast<char*>(out);
  std::memmove(base + static_cast<size_t>(rank_) * block, in, block);  // in may alias out's own block
  for (int k = 0; k < size_ - 1; ++k) {
    size_t b_send = static_cast<size_t>(Mod(rank_ - k));
    size_t b_recv = static_cast<size_t>(Mod(rank_ - k - 1));
    Step step{base + b_send * block, block, base + b_recv * block, block, false, false};
    Status s = RunStep(step, OpKind::kAllGather, deadline);
    if (!s.ok()) return Fail(s);
  }
  return Status::Ok();
}

}  // namespace ringtrain
