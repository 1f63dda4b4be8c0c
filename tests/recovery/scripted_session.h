// A cluster::Session whose every generation is scripted, over one-rank communicators
// that can be told to fail: drives recovery::TrainingRun through peer failures,
// evictions, rendezvous timeouts and impossible rings without any process or socket.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "cluster/session.h"
#include "collective/communicator.h"
#include "store/store.h"

namespace ringtrain::recovery {

// What the n-th Rendezvous call and the generation it forms do.
struct GenerationScript {
  Status rendezvous;         // not OK: Rendezvous fails with it
  bool job_finished = false;
  Status create;             // not OK: CreateCommunicator fails with it
  int fail_all_reduce = 0;   // > 0: the generation's n-th AllReduce fails with fail_with
  Status fail_with = UnavailableError("connection to rank 1 (127.0.0.1:1) closed during AllReduce");
  std::string failure;       // what failure() says once the generation failed
  bool evicted = false;      // evicted() once the generation failed
};

// Forwards to a one-rank communicator; its n-th AllReduce fails instead (counted across
// threads: the gradient packs are reduced on GradientSync's thread).
class FaultyCommunicator : public collective::Communicator {
 public:
  FaultyCommunicator(std::unique_ptr<collective::Communicator> inner, int fail_at, Status fail_with)
      : inner_(std::move(inner)), fail_at_(fail_at), fail_with_(std::move(fail_with)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const char* backend_name() const override { return inner_->backend_name(); }
  Status AllReduce(void* data, size_t count, collective::DataType type, collective::ReduceOp op) override {
    if (++all_reduces_ == fail_at_) {
      failed_ = true;
      return fail_with_;
    }
    return failed_ ? fail_with_ : inner_->AllReduce(data, count, type, op);
  }
  Status Broadcast(void* data, size_t count, collective::DataType type, int root) override {
    return inner_->Broadcast(data, count, type, root);
  }
  Status AllGather(const void* in, size_t count, collective::DataType type, void* out) override {
    return inner_->AllGather(in, count, type, out);
  }
  Status Barrier() override { return inner_->Barrier(); }
  void Abort(const std::string& reason) override { inner_->Abort(reason); }
  bool failed() const { return failed_; }

 private:
  std::unique_ptr<collective::Communicator> inner_;
  const int fail_at_;
  const Status fail_with_;
  std::atomic<int> all_reduces_{0};
  std::atomic<bool> failed_{false};
};

class ScriptedSession : public cluster::Session {
 public:
  // script[i] is the i-th Rendezvous; past its end every generation is clean.
  explicit ScriptedSession(std::vector<GenerationScript> script, bool chief = true)
      : script_(std::move(script)), chief_(chief) {}

  StatusOr<coordination::RendezvousResult> Rendezvous(int64_t last_generation, const std::string& reason) override {
    last_generations.push_back(last_generation);
    reasons.push_back(reason);
    current_ = Next();
    if (!current_.rendezvous.ok()) return current_.rendezvous;
    coordination::RendezvousResult r;
    r.generation = last_generation + 1;
    r.job_finished = current_.job_finished;
    return r;
  }
  StatusOr<std::unique_ptr<collective::Communicator>> CreateCommunicator(collective::CommunicatorOptions options,
                                                                         int64_t generation) override {
    if (!current_.create.ok()) return current_.create;
    store::PrefixStore store(&store_, std::to_string(generation) + "/");
    auto inner = collective::CreateCommunicator(options, 0, 1, &store);
    if (!inner.ok()) return inner.status();
    auto comm = std::make_unique<FaultyCommunicator>(std::move(inner).value(), current_.fail_all_reduce,
                                                     current_.fail_with);
    return std::unique_ptr<collective::Communicator>(std::move(comm));
  }
  void Detach() override { ++detaches; }
  std::string failure() override { return GenerationFailed() ? current_.failure : ""; }
  bool evicted() override { return GenerationFailed() && current_.evicted; }
  bool Leave() override { return true; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  bool is_chief() const override { return chief_; }

  // What the loop did.
  std::vector<int64_t> last_generations;  // the argument of each Rendezvous call
  std::vector<std::string> reasons;       // and its reason
  int detaches = 0;

 private:
  GenerationScript Next() {
    const size_t i = last_generations.size() - 1;
    return i < script_.size() ? script_[i] : GenerationScript{};
  }
  // The failure is what the cluster knows once the communicator failed (or could not be made).
  bool GenerationFailed() const { return !current_.create.ok() || current_.fail_all_reduce > 0; }

  const std::vector<GenerationScript> script_;
  const bool chief_;
  GenerationScript current_;
  store::InMemoryStore store_;
};

}  // namespace ringtrain::recovery
