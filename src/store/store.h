// A rendezvous key-value store, kept apart from any transport (as in Gloo).
// The coordination service's client implements it over gRPC; InMemoryStore
// implements it for ranks run as threads in one process (tests).
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

#include "common/deadline.h"
#include "common/status.h"

namespace ringtrain::store {

class Store {
 public:
  virtual ~Store() = default;
  // Sets key to value (overwrites). May block on the network up to an internal deadline.
  virtual Status Set(const std::string& key, const std::string& value) = 0;
  // Returns the value of key, waiting until some task sets it or the deadline passes
  // (DEADLINE_EXCEEDED naming the key).
  virtual StatusOr<std::string> Get(const std::string& key, Deadline deadline) = 0;
};

// Thread-safe in-process store.
class InMemoryStore : public Store {
 public:
  Status Set(const std::string& key, const std::string& value) override;
  StatusOr<std::string> Get(const std::string& key, Deadline deadline) override;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> values_;  // guarded by mu_
};

// Prefixes every key, so that several communicators (or ring generations) can share one store.
class PrefixStore : public Store {
 public:
  PrefixStore(Store* base, std::string prefix) : base_(base), prefix_(std::move(prefix)) {}  // base not owned
  Status Set(const std::string& key, const std::string& value) override {
    return base_->Set(prefix_ + key, value);
  }
  StatusOr<std::string> Get(const std::string& key, Deadline deadline) override {
    return base_->Get(prefix_ + key, deadline);
  }

 private:
  Store* base_;
  std::string prefix_;
};

}  // namespace ringtrain::store
