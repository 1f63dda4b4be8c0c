// Which network addresses may call the chief's coordination service: the cluster's own.
//
// The cluster's hosts come from TF_CONFIG; PeerFilter resolves them (getaddrinfo) when
// it is made, and again when an address it does not know calls (a restarted pod may
// have a new address), at most once per kRefreshInterval and each time bounded by
// kResolveTimeout, so a stranger cannot make the service wait on DNS for long or often.
// Loopback callers are admitted when the cluster itself is on loopback (several tasks
// on one machine reach each other from 127.0.0.1 whatever 127.x address they listen on).
//
// Also the address helpers the worker's loopback rule uses.
//
// Threading: PeerFilter is thread-safe. Admits() may block on a miss while the names
// are resolved again (kResolveTimeout per host, at most once per kRefreshInterval; a
// miss during a resolution waits for it); everything else returns at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ringtrain::coordination {

// The IP address of a gRPC peer URI in canonical text ("ipv4:10.0.0.9:5000" ->
// "10.0.0.9", "ipv6:[::1]:5000" or "ipv6:%5B::1%5D:5000" -> "::1", an IPv4-mapped IPv6
// address -> its IPv4 form). nullopt for anything else (e.g. "unix:/path").
std::optional<std::string> PeerIp(std::string_view peer_uri);
// The canonical text of an IP literal (brackets allowed), nullopt if it is not one.
std::optional<std::string> CanonicalIp(std::string_view text);
// 127.0.0.0/8, ::1 (and IPv4-mapped loopback). `ip` is canonical text.
bool IsLoopbackIp(const std::string& ip);

// The addresses `host` (a name or an IP literal) resolves to, canonical text. Literals
// and "localhost" are answered without DNS; names are resolved by getaddrinfo on a
// helper thread, waited for at most `timeout` (UNAVAILABLE naming the host on failure
// or timeout).
StatusOr<std::vector<std::string>> ResolveHost(const std::string& host, std::chrono::milliseconds timeout);

// The first of `hosts` that is not on loopback ("localhost" is; names are resolved,
// and one that does not resolve counts as not loopback), or nullopt if all are.
std::optional<std::string> FirstNonLoopbackHost(const std::vector<std::string>& hosts,
                                                std::chrono::milliseconds timeout_per_host);

class PeerFilter {
 public:
  static constexpr std::chrono::milliseconds kResolveTimeout{2000};
  static constexpr std::chrono::milliseconds kRefreshInterval{1000};

  // `hosts`: the cluster's host names or IPs. Empty admits loopback callers only.
  // Resolves them now (bounded by kResolveTimeout per host); a name that does not
  // resolve yet is logged and tried again on the next miss.
  explicit PeerFilter(std::vector<std::string> hosts);

  // Whether a caller from `ip` (canonical text) belongs to the cluster.
  bool Admits(const std::string& ip);
  bool loopback_cluster() const;

 private:
  using Clock = std::chrono::steady_clock;
  // Resolves every host again; returns the union of their addresses.
  std::set<std::string> ResolveAll() const;
  bool KnownLocked(const std::string& ip) const;

  const std::vector<std::string> hosts_;
  mutable std::mutex mu_;
  std::set<std::string> addresses_;           // guarded by mu_
  bool loopback_cluster_ = false;             // guarded by mu_
  Clock::time_point last_refresh_;            // guarded by mu_
  bool refreshing_ = false;                   // guarded by mu_: one resolution at a time
  std::condition_variable refreshed_cv_;      // signalled when a resolution ends
};

}  // namespace ringtrain::coordination
