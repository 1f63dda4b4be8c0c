#include "coordination/peer_filter.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <condition_variable>
#include <cstring>
#include <memory>
#include <system_error>
#include <thread>

#include "common/logging.h"

namespace ringtrain::coordination {
namespace {

std::string Ntop(int family, const void* addr) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (::inet_ntop(family, addr, buf, sizeof(buf)) == nullptr) return std::string();
  return buf;
}

// Canonical text of an IPv6 address; IPv4-mapped ones (::ffff:a.b.c.d) as IPv4, since a
// dual-stack socket reports IPv4 callers that way.
std::string CanonicalV6(const in6_addr& a) {
  if (IN6_IS_ADDR_V4MAPPED(&a)) return Ntop(AF_INET, &a.s6_addr[12]);
  return Ntop(AF_INET6, &a);
}

std::string PercentDecodeBrackets(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      std::string_view code = s.substr(i + 1, 2);
      if (code == "5B" || code == "5b") { out += '['; i += 2; continue; }
      if (code == "5D" || code == "5d") { out += ']'; i += 2; continue; }
    }
    out += s[i];
  }
  return out;
}

}  // namespace

std::optional<std::string> CanonicalIp(std::string_view text) {
  std::string t(text);
  if (t.size() >= 2 && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
  // A zone ("fe80::1%eth0") does not change which machine it is.
  if (size_t pct = t.find('%'); pct != std::string::npos) t.resize(pct);
  in_addr v4{};
  if (::inet_pton(AF_INET, t.c_str(), &v4) == 1) return Ntop(AF_INET, &v4);
  in6_addr v6{};
  if (::inet_pton(AF_INET6, t.c_str(), &v6) == 1) return CanonicalV6(v6);
  return std::nullopt;
}

std::optional<std::string> PeerIp(std::string_view peer_uri) {
  std::string uri = PercentDecodeBrackets(peer_uri);
  if (uri.rfind("ipv4:", 0) == 0) {
    std::string rest = uri.substr(5);
    size_t colon = rest.rfind(':');
    if (colon == std::string::npos) return std::nullopt;
    return CanonicalIp(rest.substr(0, colon));
  }
  if (uri.rfind("ipv6:", 0) == 0) {
    std::string rest = uri.substr(5);
    if (rest.empty() || rest.front() != '[') return std::nullopt;
    size_t close = rest.find(']');
    if (close == std::string::npos) return std::nullopt;
    return CanonicalIp(rest.substr(1, close - 1));
  }
  return std::nullopt;
}

bool IsLoopbackIp(const std::string& ip) {
  in_addr v4{};
  if (::inet_pton(AF_INET, ip.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, ip.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

StatusOr<std::vector<std::string>> ResolveHost(const std::string& host, std::chrono::milliseconds timeout) {
  if (auto ip = CanonicalIp(host)) return std::vector<std::string>{*ip};
  if (host == "localhost") return std::vector<std::string>{"127.0.0.1", "::1"};

  // getaddrinfo has no timeout of its own: it runs on a detached thread that owns its
  // state, and we stop waiting for it at the deadline (it ends by itself later).
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    int rc = 0;
    std::vector<std::string> ips;
  };
  auto shared = std::make_shared<Shared>();
  try {
    std::thread([shared, host] {
      addrinfo hints{};
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* res = nullptr;
      int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
      std::vector<std::string> ips;
      for (addrinfo* a = res; rc == 0 && a != nullptr; a = a->ai_next) {
        std::string ip;
        if (a->ai_family == AF_INET) ip = Ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr);
        if (a->ai_family == AF_INET6) ip = CanonicalV6(reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
        if (!ip.empty()) ips.push_back(std::move(ip));
      }
      if (res != nullptr) ::freeaddrinfo(res);
      std::lock_guard<std::mutex> lock(shared->mu);
      shared->rc = rc;
      shared->ips = std::move(ips);
      shared->done = true;
      shared->cv.notify_all();
    }).detach();
  } catch (const std::system_error& e) {
    return UnavailableError("cannot resolve '" + host + "': no thread for the lookup (" + e.what() + ")");
  }
  std::unique_lock<std::mutex> lock(shared->mu);
  if (!shared->cv.wait_for(lock, timeout, [&] { return shared->done; })) {
    return UnavailableError("resolving '" + host + "' took longer than " + std::to_string(timeout.count()) +
                            " ms; check the DNS configuration");
  }
  if (shared->rc != 0) {
    return UnavailableError("cannot resolve '" + host + "': " + ::gai_strerror(shared->rc));
  }
  if (shared->ips.empty()) return UnavailableError("'" + host + "' resolves to no IP address");
  return shared->ips;
}

std::optional<std::string> FirstNonLoopbackHost(const std::vector<std::string>& hosts,
                                                std::chrono::milliseconds timeout_per_host) {
  for (const auto& h : hosts) {
    auto ips = ResolveHost(h, timeout_per_host);
    if (!ips.ok()) return h;
    for (const auto& ip : *ips) {
      if (!IsLoopbackIp(ip)) return h;
    }
  }
  return std::nullopt;
}

namespace {
std::vector<std::string> Distinct(std::vector<std::string> v) {
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (auto& s : v) {
    if (seen.insert(s).second) out.push_back(std::move(s));
  }
  return out;
}
}  // namespace

PeerFilter::PeerFilter(std::vector<std::string> hosts) : hosts_(Distinct(std::move(hosts))) {
  addresses_ = ResolveAll();
  for (const auto& ip : addresses_) loopback_cluster_ = loopback_cluster_ || IsLoopbackIp(ip);
  if (hosts_.empty()) loopback_cluster_ = true;
  last_refresh_ = Clock::now();
}

std::set<std::string> PeerFilter::ResolveAll() const {
  std::set<std::string> out;
  for (const auto& h : hosts_) {
    auto ips = ResolveHost(h, kResolveTimeout);
    if (!ips.ok()) {
      RT_LOG(WARNING) << "coordination service: " << ips.status().message()
                      << "; calls from that task are refused until it resolves";
      continue;
    }
    out.insert(ips->begin(), ips->end());
  }
  return out;
}

bool PeerFilter::KnownLocked(const std::string& ip) const {
  return addresses_.count(ip) > 0 || (loopback_cluster_ && IsLoopbackIp(ip));
}

bool PeerFilter::Admits(const std::string& ip) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (KnownLocked(ip)) return true;
    // Addresses come from names only; a cluster of IP literals has nothing to refresh.
    bool any_name = false;
    for (const auto& h : hosts_) any_name = any_name || !CanonicalIp(h).has_value();
    if (!any_name) return false;
    if (refreshing_) {
      // Another call is resolving already: its answer is ours too (two tasks restarted
      // at new addresses at once must both get in). Bounded by that resolution.
      refreshed_cv_.wait_for(lock, kResolveTimeout * static_cast<int>(hosts_.size() + 1),
                             [&] { return !refreshing_; });
      return KnownLocked(ip);
    }
    if (Clock::now() - last_refresh_ < kRefreshInterval) return false;
    refreshing_ = true;
  }
  std::set<std::string> fresh = ResolveAll();  // bounded; outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  refreshing_ = false;
  last_refresh_ = Clock::now();
  // Keep what resolved before: a name that fails to resolve now should not lock out a
  // task that is still running at its old address.
  addresses_.insert(fresh.begin(), fresh.end());
  refreshed_cv_.notify_all();
  return KnownLocked(ip);
}

bool PeerFilter::loopback_cluster() const {
  std::lock_guard<std::mutex> lock(mu_);
  return loopback_cluster_;
}

}  // namespace ringtrain::coordination
