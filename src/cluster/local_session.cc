#include "cluster/local_session.h"

namespace ringtrain::cluster {

StatusOr<coordination::RendezvousResult> LocalSession::Rendezvous(int64_t last_generation, const std::string&) {
  coordination::RendezvousResult r;
  r.generation = last_generation + 1;
  return r;
}

StatusOr<std::unique_ptr<collective::Communicator>> LocalSession::CreateCommunicator(
    collective::CommunicatorOptions options, int64_t generation) {
  store::PrefixStore store(&store_, "ring/" + std::to_string(generation) + "/");
  auto comm = collective::CreateCommunicator(options, 0, 1, &store);
  if (!comm.ok()) return comm.status().About(Subject::kCluster);
  return comm;
}

}  // namespace ringtrain::cluster
