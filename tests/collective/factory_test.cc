// Backend selection and the size-1 communicator.
#include <vector>

#include "collective/backends.h"
#include "collective/communicator.h"
#include "ring_test_util.h"

namespace ringtrain::collective {
namespace {

TEST(ParseImplementationTest, AcceptsKnownNamesCaseInsensitively) {
  EXPECT_EQ(*collective::ParseImplementation("AUTO"), collective::Implementation::kAuto);
  EXPECT_EQ(*collective::ParseImplementation("ring"), collective::Implementation::kRing);
  EXPECT_EQ(*collective::ParseImplementation("Nccl"), collective::Implementation::kNccl);
  EXPECT_STREQ(collective::ImplementationName(collective::Implementation::kRing), "RING");
}

TEST(ParseImplementationTest, RejectsUnknownNamesListingTheValidOnes) {
  auto impl = collective::ParseImplementation("mpi");
  ASSERT_FALSE(impl.ok());
  EXPECT_EQ(impl.status().code(), Code::kInvalidArgument);
  for (const char* name : {"mpi", "AUTO", "RING", "NCCL"}) {
    EXPECT_NE(impl.status().message().find(name), std::string::npos) << impl.status().message();
  }
}

TEST(CreateCommunicatorTest, NcclIsUnimplementedInABuildWithoutIt) {
  if (collective::internal::NcclBuilt()) GTEST_SKIP() << "this build has NCCL; nccl_test covers it";
  store::InMemoryStore store;
  collective::CommunicatorOptions options;
  options.implementation = collective::Implementation::kNccl;
  auto c = collective::CreateCommunicator(options, 0, 2, &store);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kUnimplemented);
  EXPECT_NE(c.status().message().find("NCCL"), std::string::npos);
}

TEST(CreateCommunicatorTest, AutoChoosesRing) {
  store::InMemoryStore store;
  auto options = testing_util::TestOptions();
  options.implementation = collective::Implementation::kAuto;
  auto comms = testing_util::CreateRing(2, options, &store);
  ASSERT_FALSE(HasFailure());
  EXPECT_STREQ(comms[0]->backend_name(), "RING");
  EXPECT_EQ(comms[1]->rank(), 1);
  EXPECT_EQ(comms[1]->size(), 2);
}

TEST(CreateCommunicatorTest, RejectsBadRankAndSize) {
  store::InMemoryStore store;
  EXPECT_EQ(collective::CreateCommunicator({}, 2, 2, &store).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(collective::CreateCommunicator({}, 0, 0, &store).status().code(), Code::kInvalidArgument);
  collective::CommunicatorOptions wildcard;
  wildcard.listen_host = "0.0.0.0";
  EXPECT_EQ(collective::CreateCommunicator(wildcard, 0, 2, &store).status().code(), Code::kInvalidArgument);
}

TEST(LocalCommunicatorTest, SizeOneImplementsEveryOperationLocally) {
  auto c = collective::CreateCommunicator({}, 0, 1, nullptr);  // no store needed: no peers
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  collective::Communicator& comm = **c;
  EXPECT_EQ(comm.size(), 1);
  std::vector<float> data = {1.5f, -2.0f, 3.0f};
  ASSERT_TRUE(comm.AllReduce(data.data(), data.size(), collective::ReduceOp::kSum).ok());
  EXPECT_EQ(data, (std::vector<float>{1.5f, -2.0f, 3.0f}));
  ASSERT_TRUE(comm.AllReduce(data.data(), data.size(), collective::ReduceOp::kMean).ok());
  EXPECT_EQ(data, (std::vector<float>{1.5f, -2.0f, 3.0f}));
  ASSERT_TRUE(comm.Broadcast(data.data(), data.size(), 0).ok());
  std::vector<float> out(3, 0.0f);
  ASSERT_TRUE(comm.AllGather(data.data(), data.size(), out.data()).ok());
  EXPECT_EQ(out, data);
  ASSERT_TRUE(comm.Barrier().ok());
  comm.Abort("stop");
  Status s = comm.Barrier();
  EXPECT_EQ(s.code(), Code::kAborted);
  EXPECT_EQ(s.message(), "stop");
}

// The backend choice as every rank derives it from all ranks' sites.
using collective::internal::DeriveTopology;
using collective::internal::RankSite;
constexpr int kByRank = collective::CommunicatorOptions::kGpuByLocalRank;
constexpr int kCpu = collective::CommunicatorOptions::kCpuRank;

TEST(DeriveTopologyTest, RanksOnOneMachineTakeItsGpusInRankOrder) {
  std::vector<RankSite> sites = {{"h", "m", 2, kByRank}, {"h", "m", 2, kByRank}};
  auto t0 = DeriveTopology(sites, 0), t1 = DeriveTopology(sites, 1);
  EXPECT_TRUE(t0.one_host);
  EXPECT_TRUE(t0.all_gpu);
  EXPECT_EQ(t0.shared, "");
  EXPECT_EQ(t0.device, 0);
  EXPECT_EQ(t1.device, 1);
}

TEST(DeriveTopologyTest, TwoRanksOnOneGpuAreShared) {
  std::vector<RankSite> sites = {{"h", "m", 1, kByRank}, {"h", "m", 1, kByRank}};
  auto t = DeriveTopology(sites, 1);
  EXPECT_TRUE(t.all_gpu);
  EXPECT_EQ(t.shared, "ranks 0 and 1 share GPU 0 of one machine");
  EXPECT_EQ(t.device, 0);
  // The same GPU chosen explicitly (e.g. both trainers placed on GPU 0) is shared too.
  sites = {{"h", "m", 4, 0}, {"h", "m", 4, 0}};
  EXPECT_FALSE(DeriveTopology(sites, 0).shared.empty());
}

TEST(DeriveTopologyTest, MachinesNumberTheirGpusSeparately) {
  // Two machines (network namespaces of one machine count as one: same boot id).
  std::vector<RankSite> sites = {{"a", "m1", 1, kByRank}, {"b", "m2", 1, kByRank}, {"c", "m2", 2, kByRank}};
  auto t2 = DeriveTopology(sites, 2);
  EXPECT_FALSE(t2.one_host);
  EXPECT_TRUE(t2.all_gpu);
  EXPECT_EQ(t2.shared, "");
  EXPECT_EQ(t2.device, 1);  // second rank on m2
  EXPECT_EQ(DeriveTopology(sites, 0).device, 0);
}

TEST(DeriveTopologyTest, ACpuRankOrAMissingGpuMeansNotAllGpu) {
  std::vector<RankSite> sites = {{"h", "m", 2, 0}, {"h", "m", 0, kCpu}};
  auto t = DeriveTopology(sites, 0);
  EXPECT_FALSE(t.all_gpu);
  EXPECT_EQ(t.device, 0);
  EXPECT_EQ(DeriveTopology(sites, 1).device, -1);
  sites = {{"h", "m", 2, 5}};  // a GPU that is not there
  EXPECT_FALSE(DeriveTopology(sites, 0).all_gpu);
}

}  // namespace
}  // namespace ringtrain::collective
