// Network namespaces that stand in for separate machines in multi-host tests.
//
// NetHosts::Create(n) makes n "hosts", each a network namespace with `lo` up and one
// veth end ("eth0") holding 10.213.<pid % 250>.<i+1>/24, and joins them through a
// bridge that lives in a namespace of its own: nothing is added to the root namespace,
// and the only addresses in play are the hosts' own, so nothing leaves the machine.
// Namespace names carry this process's pid (rt<pid>a, rt<pid>b, ..., rt<pid>br), so
// concurrent test processes never collide.
//
// Ownership: the NetHosts object owns the namespaces; its destructor deletes them
// (which removes the veth pairs and the bridge with them). Processes still running in
// a namespace keep it alive until they exit, so callers end their children first.
// Every `ip` call runs as a child process bounded by a timeout.
//
// Threading: one thread at a time per object. Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace ringtrain::testing {

class NetHosts {
 public:
  // FAILED_PRECONDITION when this machine cannot do it (not root, no `ip`, namespaces,
  // veth or bridges not allowed): the caller skips with the message. Any other error
  // is a failure of the setup itself.
  static StatusOr<std::unique_ptr<NetHosts>> Create(int n);
  ~NetHosts();  // deletes the namespaces; never throws; bounded
  NetHosts(const NetHosts&) = delete;
  NetHosts& operator=(const NetHosts&) = delete;

  int size() const { return static_cast<int>(namespaces_.size()); }
  const std::string& ns(int i) const { return namespaces_[i]; }
  std::string address(int i) const;           // "10.213.x.(i+1)"
  static const char* device() { return "eth0"; }  // each host's link to the bridge

  // Takes host i's link down or brings it back up (`ip -n NS link set eth0 down|up`).
  Status SetLink(int i, bool up);
  // Connects over TCP from host `from` to a listener on host `to`'s address, retrying
  // for up to timeout_s (a fresh veth may need a moment before it carries traffic).
  Status CheckTcp(int from, int to, double timeout_s);
  // The argv prefix that runs a program on host i: {"<ip>", "netns", "exec", NS}.
  std::vector<std::string> ExecPrefix(int i) const;

 private:
  NetHosts() = default;
  Status Ip(const std::vector<std::string>& args) const;

  std::string ip_;                       // path of the `ip` binary
  std::string subnet_;                   // "10.213.x."
  std::string bridge_ns_;                // the namespace holding the bridge
  std::vector<std::string> namespaces_;  // one per host
  std::vector<std::string> created_;     // what the destructor deletes
};

}  // namespace ringtrain::testing
