// Ring connection set-up. Rank r connects to rank (r+1)%n and accepts from (r-1)%n.
// The connector sends a 16-byte hello (magic "RTRG", protocol version, its rank, the
// ring size); the acceptor validates it and answers with its own hello, which the
// connector validates in turn. A connection whose hello is wrong (a port scanner, a
// health check, a rank of another job) is logged once, closed, and the acceptor keeps
// waiting for the right peer.
//
// To avoid a cycle of waits, the three steps are separate calls made in this order by
// every rank: ConnectToNext (connect + send hello, no wait for the answer),
// AcceptFromPrev (accept, validate, answer), AwaitNextReply (read the answer).
#pragma once

#include <cstdint>
#include <string>

#include "collective/socket.h"
#include "common/deadline.h"
#include "common/status.h"

namespace ringtrain {

inline constexpr uint32_t kRingProtocolVersion = 1;

// Connects to `next_rank` at host:port (retrying until the deadline) and sends our hello.
StatusOr<Fd> ConnectToNext(const std::string& host, int port, int rank, int size, int next_rank,
                           Deadline deadline);

// Accepts connections on listen_fd until one carries a valid hello from prev_rank,
// answers it, and returns it. *remote is set to that connection's "ip:port".
StatusOr<Fd> AcceptFromPrev(int listen_fd, int rank, int size, int prev_rank, Deadline deadline,
                            std::string* remote);

// Reads and validates next_rank's answer on the connection made by ConnectToNext.
Status AwaitNextReply(int fd, int size, int next_rank, Deadline deadline, const std::string& peer);

}  // namespace ringtrain
