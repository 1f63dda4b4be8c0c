// File descriptors, so that running out of them is not fatal: the process's open-file
// limit, and a small reserve of descriptors that the Env's writers (backups,
// checkpoints, the saved model, the history file) fall back on when every other
// descriptor is taken, e.g. by a flood of connections to the chief.
//
// How the reserve works: ReserveDescriptors(n) opens /dev/null n times. When an open
// through OpenWithReserve fails with EMFILE or ENFILE, one reserved descriptor is
// closed and the open is tried again at once: the descriptor just freed is the only
// free one, and open(2) takes the lowest free number, so the file gets it. After the
// caller closes the file, RefillReserve() takes the number back. When the reserve is
// empty too, the open is retried with a short backoff (the descriptors may come back:
// the coordination service closes connections that never speak) for at most
// kOpenRetryBudget before the EMFILE is returned.
//
// Thread-safe (one mutex; open(2) and close(2) are the only blocking calls, plus the
// bounded backoff). Nothing here throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace ringtrain::env {

// How long OpenWithReserve keeps retrying an open that fails for want of descriptors:
// longer than the coordination server's 10 s handshake deadline, after which the
// connections of a stranger that never speaks are closed. A reserved number freed
// during a flood of connections can be taken by the server's accept(2) before the
// open gets it; those numbers come back when the deadline closes the connections.
inline constexpr std::chrono::milliseconds kOpenRetryBudget{12000};

struct OpenFileLimit {
  uint64_t soft_before = 0;  // the soft limit at start
  uint64_t soft = 0;         // the soft limit now
  uint64_t hard = 0;         // the hard limit (RLIM_INFINITY as UINT64_MAX)
  std::string error;         // why raising failed, if it did (the limits are then unchanged)
};

// Raises the soft RLIMIT_NOFILE to the hard limit, as most servers do at start (the
// soft limit is often systemd's 1024 while the hard one is far higher).
OpenFileLimit RaiseOpenFileLimit();

// One line for the log: "open files: soft limit 1024 raised to 524288 (the hard limit)".
std::string Describe(const OpenFileLimit& limit);

// Keeps up to `count` descriptors in reserve (tops the reserve up to `count`; 0 gives
// them all back). Returns how many are held.
int ReserveDescriptors(int count);
// How many are held now.
int ReservedDescriptors();

// Calls `open_fn` (which returns a descriptor, or -1 with errno set) and, while it
// fails with EMFILE or ENFILE, gives a reserved descriptor back and calls it again;
// with none left, retries with backoff within kOpenRetryBudget. Returns what the last
// call returned, with its errno.
int OpenWithReserve(const std::function<int()>& open_fn);

// Tops the reserve back up to its size after a descriptor was closed; cheap when
// nothing is owed.
void RefillReserve();

}  // namespace ringtrain::env
