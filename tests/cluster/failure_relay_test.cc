// FailureRelay alone: cluster events turned into aborts of the right generation's
// communicator, whenever they arrive relative to Attach and Detach.
#include "cluster/failure_relay.h"

#include <gtest/gtest.h>

#include <thread>

#include "store/store.h"

namespace ringtrain::cluster {
namespace {

using coordination::ClusterEvent;

std::unique_ptr<collective::Communicator> OneRank() {
  auto c = collective::CreateCommunicator({}, 0, 1, nullptr);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

ClusterEvent Broken(int64_t generation, const std::string& why) {
  return {ClusterEvent::Kind::kGenerationBroken, generation, why};
}

// The communicator was aborted with `why` (its operations fail with it).
void ExpectAborted(collective::Communicator* c, const std::string& why) {
  Status s = c->Barrier();
  EXPECT_EQ(s.code(), Code::kAborted) << s.ToString();
  EXPECT_EQ(s.message(), why);
}

TEST(FailureRelayTest, ABrokenGenerationAbortsItsCommunicator) {
  FailureRelay relay;
  auto comm = OneRank();
  relay.Attach(comm.get(), 3);
  EXPECT_EQ(relay.failure(), "");
  relay.OnEvent(Broken(3, "worker:2 missed its heartbeats"));
  ExpectAborted(comm.get(), "worker:2 missed its heartbeats");
  EXPECT_EQ(relay.failure(), "worker:2 missed its heartbeats");
  EXPECT_FALSE(relay.evicted());
  // The first reason sticks.
  relay.OnEvent(Broken(3, "something later"));
  EXPECT_EQ(relay.failure(), "worker:2 missed its heartbeats");
}

TEST(FailureRelayTest, AnOlderGenerationsBreakDoesNotTouchANewerOne) {
  FailureRelay relay;
  auto comm = OneRank();
  relay.Attach(comm.get(), 4);
  relay.OnEvent(Broken(3, "late news about generation 3"));
  EXPECT_TRUE(comm->Barrier().ok());
  EXPECT_EQ(relay.failure(), "");
}

TEST(FailureRelayTest, ABreakHeardBeforeAttachAbortsAtAttach) {
  FailureRelay relay;
  relay.OnEvent(Broken(5, "worker:1 left generation 5"));
  auto comm = OneRank();
  relay.Attach(comm.get(), 5);
  ExpectAborted(comm.get(), "worker:1 left generation 5");
  EXPECT_EQ(relay.failure(), "worker:1 left generation 5");
  // A later generation starts clean.
  relay.Detach();
  auto next = OneRank();
  relay.Attach(next.get(), 6);
  EXPECT_TRUE(next->Barrier().ok());
  EXPECT_EQ(relay.failure(), "");
}

TEST(FailureRelayTest, NothingIsAbortedAfterDetach) {
  FailureRelay relay;
  auto comm = OneRank();
  relay.Attach(comm.get(), 1);
  relay.Detach();
  relay.OnEvent({ClusterEvent::Kind::kChiefLost, -1, "no heartbeat answer for 10 s"});
  EXPECT_TRUE(comm->Barrier().ok());
}

TEST(FailureRelayTest, LosingTheChiefAbortsTheCurrentGeneration) {
  FailureRelay relay;
  auto comm = OneRank();
  relay.Attach(comm.get(), 2);
  relay.OnEvent({ClusterEvent::Kind::kServiceRestarted, -1, "the chief's service no longer knows this task"});
  ExpectAborted(comm.get(), "the chief's service no longer knows this task");
}

TEST(FailureRelayTest, AnEvictionIsKeptAcrossAttach) {
  FailureRelay relay;
  relay.OnEvent({ClusterEvent::Kind::kEvicted, -1, "worker:0 was declared failed; exit"});
  EXPECT_TRUE(relay.evicted());
  auto comm = OneRank();
  relay.Attach(comm.get(), 7);
  EXPECT_EQ(relay.failure(), "worker:0 was declared failed; exit");
  EXPECT_TRUE(relay.evicted());
}

// Events arrive on the heartbeat thread while the training thread attaches and
// detaches (run under ThreadSanitizer too). A break of generation g also ends every
// generation before it, so afterwards exactly the generations up to the last broken
// one are known broken, whatever the interleaving was.
TEST(FailureRelayTest, EventsRacingAttachLeaveTheSameKnowledge) {
  FailureRelay relay;
  constexpr int kGenerations = 200;
  std::vector<std::unique_ptr<collective::Communicator>> comms;
  for (int g = 0; g < kGenerations; ++g) comms.push_back(OneRank());
  std::thread heartbeat([&] {
    for (int g = 0; g < kGenerations; g += 2) relay.OnEvent(Broken(g, "generation " + std::to_string(g) + " broke"));
  });
  for (int g = 0; g < kGenerations; ++g) {
    relay.Attach(comms[g].get(), g);
    relay.Detach();
  }
  heartbeat.join();
  auto broken = OneRank();
  relay.Attach(broken.get(), kGenerations - 2);
  ExpectAborted(broken.get(), "generation " + std::to_string(kGenerations - 2) + " broke");
  relay.Detach();
  auto fresh = OneRank();
  relay.Attach(fresh.get(), kGenerations - 1);
  EXPECT_TRUE(fresh->Barrier().ok());
  EXPECT_EQ(relay.failure(), "");
}

}  // namespace
}  // namespace ringtrain::cluster
