// RingCommunicator::Create: listen, publish the address, connect the ring.
#include <sys/eventfd.h>

#include <cerrno>

#include "collective/ring/handshake.h"
#include "collective/ring/ring_communicator.h"
#include "collective/backends.h"
#include "common/logging.h"

namespace ringtrain::collective {
namespace {

std::string AddrKey(int rank) { return "ring/addr/" + std::to_string(rank); }

std::string JoinHostPort(const std::string& host, int port) {
  bool ipv6_literal = host.find(':') != std::string::npos;
  return (ipv6_literal ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

StatusOr<std::string> FetchAddress(store::Store* store, int rank, int peer, Deadline deadline) {
  auto addr = store->Get(AddrKey(peer), deadline);
  if (!addr.ok()) {
    return addr.status().WithContext("ring set-up on rank " + std::to_string(rank) + ": rank " +
                                     std::to_string(peer) + " did not publish its ring address (is it running?)");
  }
  return addr;
}

}  // namespace

StatusOr<std::unique_ptr<Communicator>> RingCommunicator::Create(const CommunicatorOptions& options, int rank,
                                                                  int size, store::Store* store) {
  if (size < 2) return InvalidArgumentError("a ring needs at least 2 ranks, got " + std::to_string(size));
  if (rank < 0 || rank >= size) {
    return InvalidArgumentError("rank " + std::to_string(rank) + " is out of range for " + std::to_string(size) +
                                " ranks");
  }
  if (store == nullptr) return InvalidArgumentError("ring set-up needs a store to exchange addresses; got null");
  if (internal::IsWildcardHost(options.listen_host)) {
    return InvalidArgumentError("listen_host '" + options.listen_host +
                                "' is a wildcard that peers cannot connect to; use this worker's own host name or "
                                "address");
  }
  const Deadline deadline = Deadline::After(options.timeout);
  const int next_rank = (rank + 1) % size;
  const int prev_rank = (rank + size - 1) % size;

  int port = 0;
  RT_ASSIGN_OR_RETURN(Fd listener, ListenTcp(options.listen_host, &port));
  const std::string my_addr = JoinHostPort(options.listen_host, port);
  // Published only after listen(), so a peer that reads it can connect at once.
  RT_RETURN_IF_ERROR(store->Set(AddrKey(rank), my_addr).WithContext("ring set-up: publishing this rank's address"));

  RT_ASSIGN_OR_RETURN(std::string next_addr, FetchAddress(store, rank, next_rank, deadline));
  std::string next_host;
  int next_port = 0;
  if (!SplitHostPort(next_addr, &next_host, &next_port)) {
    return InternalError("rank " + std::to_string(next_rank) + " published a malformed ring address '" +
                         next_addr + "' under store key " + AddrKey(next_rank));
  }

  Peer next;
  next.rank = next_rank;
  next.name = "rank " + std::to_string(next_rank) + " (" + next_addr + ")";

  // Connect-and-hello, then accept (serving the next rank's challenge meanwhile), then
  // read the answer: no rank waits on another's answer before answering its own peer,
  // so the ring cannot deadlock here.
  const security::ClusterSecret& secret = options.cluster_secret;
  RT_ASSIGN_OR_RETURN(OutgoingHandshake outgoing,
                      OutgoingHandshake::Start(next_host, next_port, rank, size, next_rank, secret, deadline));
  Peer prev;
  prev.rank = prev_rank;
  std::string prev_remote;
  RT_ASSIGN_OR_RETURN(prev.fd,
                      AcceptFromPrev(listener.get(), rank, size, prev_rank, secret, deadline, &outgoing, &prev_remote));
  RT_ASSIGN_OR_RETURN(next.fd, outgoing.Finish(deadline));
  listener.reset();  // later strangers get "connection refused" instead of hanging
  // Errors name the previous rank by its published listening address, which is what
  // an operator can match against the cluster configuration (the connection's own
  // source port is ephemeral). It was published before prev connected, so this does not wait.
  RT_ASSIGN_OR_RETURN(std::string prev_addr, FetchAddress(store, rank, prev_rank, deadline));
  prev.name = "rank " + std::to_string(prev_rank) + " (" + prev_addr + ")";

  Fd abort_fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!abort_fd.valid()) return ErrnoError("eventfd() for the communicator's abort signal", errno);

  RT_LOG(INFO) << "ring rank " << rank << "/" << size << " connected: listening on " << my_addr << ", sending to "
               << next.name << ", receiving from " << prev.name << " (" << prev_remote << "), chunk "
               << options.chunk_bytes << " bytes, timeout " << options.timeout.count() << " ms, "
               << (secret.configured() ? "both links authenticated with the cluster secret (fingerprint " +
                                             secret.Fingerprint() + ")"
                                       : std::string("no cluster secret"));
  return std::unique_ptr<Communicator>(
      new RingCommunicator(rank, size, options, std::move(next), std::move(prev), std::move(abort_fd)));
}

}  // namespace ringtrain::collective

namespace ringtrain::collective::internal {

StatusOr<std::unique_ptr<Communicator>> CreateTcpRing(const CommunicatorOptions& options, int rank, int size,
                                                      store::Store* store) {
  return RingCommunicator::Create(options, rank, size, store);
}

}  // namespace ringtrain::collective::internal
