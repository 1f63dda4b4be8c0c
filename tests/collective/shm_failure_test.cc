// Failures of the shared-memory backend: a rank that never arrives, Abort() from another
// thread, a rank that aborts or closes, ranks issuing different collectives, and (with
// real processes) a rank killed with SIGKILL or stopped with SIGSTOP. Assertions are on
// status codes and messages, never on timing; generous timeouts turn a missing prompt
// failure into a wrong code rather than a flaky test.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "shm_test_util.h"

namespace ringtrain::collective {
namespace {

using namespace std::chrono_literals;
using shm_testing::Contains;
using shm_testing::CreateShmRanks;
using shm_testing::RunOnRanks;
using shm_testing::ShmOptions;

TEST(ShmFailureTest, RankThatNeverCallsGivesDeadlineExceededNamingIt) {
  store::InMemoryStore store;
  auto comms = CreateShmRanks(3, ShmOptions(500ms), &store);
  ASSERT_FALSE(HasFailure());
  std::vector<Status> statuses(2);
  RunOnRanks(2, [&](int r) {
    std::vector<float> data(100000, 1.0f);
    statuses[r] = comms[r]->AllReduce(data.data(), data.size(), collective::ReduceOp::kSum);
  });
  const std::string pid = "rank 2 (pid " + std::to_string(::getpid()) + ")";
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(statuses[r].code(), Code::kDeadlineExceeded) << statuses[r].ToString();
    EXPECT_TRUE(Contains(statuses[r], pid + " has not started")) << statuses[r].ToString();
  }
  // Broken for good, with the same error; and rank 2 learns of it at once.
  float x = 1;
  Status again = comms[0]->AllReduce(&x, 1, collective::ReduceOp::kSum);
  EXPECT_EQ(again.code(), statuses[0].code());
  EXPECT_EQ(again.message(), statuses[0].message());
  Status late = comms[2]->Barrier();
  EXPECT_EQ(late.code(), Code::kDeadlineExceeded) << late.ToString();
  EXPECT_TRUE(Contains(late, "rank 2 (pid")) << late.ToString();
}

TEST(ShmFailureTest, AbortFromAnotherThreadStopsAWaitingCollective) {
  store::InMemoryStore store;
  auto comms = CreateShmRanks(2, ShmOptions(60s), &store);
  ASSERT_FALSE(HasFailure());
  Status status;
  std::thread op([&] {
    std::vector<float> data(1 << 20, 1.0f);  // rank 1 never joins: rank 0 ends up asleep
    status = comms[0]->AllReduce(data.data(), data.size(), collective::ReduceOp::kSum);
  });
  std::this_thread::sleep_for(100ms);
  comms[0]->Abort("heartbeat lost");
  op.join();
  EXPECT_EQ(status.code(), Code::kAborted) << status.ToString();
  EXPECT_EQ(status.message(), "heartbeat lost");
  EXPECT_EQ(comms[0]->Barrier().code(), Code::kAborted);
  comms[0]->Abort("again");  // idempotent
  // The peer fails at once, naming the rank that aborted.
  Status peer = comms[1]->Barrier();
  EXPECT_EQ(peer.code(), Code::kAborted) << peer.ToString();
  EXPECT_TRUE(Contains(peer, "rank 0 aborted the communicator: heartbeat lost")) << peer.ToString();
}

// After a warm-up collective rank 2 leaves via `leave`; ranks 0 and 1 then fail promptly
// (not after the 60 s timeout) with `code`, naming rank 2.
void CheckPeersFailWhenRankTwoLeaves(const std::function<void(std::unique_ptr<collective::Communicator>&)>& leave, Code code,
                                     const std::string& text) {
  store::InMemoryStore store;
  auto comms = CreateShmRanks(3, ShmOptions(60s), &store);
  ASSERT_FALSE(::testing::Test::HasFailure());
  RunOnRanks(3, [&](int r) {
    std::vector<float> data(5000, 1.0f);
    EXPECT_TRUE(comms[r]->AllReduce(data.data(), data.size(), collective::ReduceOp::kSum).ok());
  });
  leave(comms[2]);
  std::vector<Status> statuses(2);
  RunOnRanks(2, [&](int r) {
    std::vector<float> data(1 << 20, 1.0f);
    statuses[r] = comms[r]->AllReduce(data.data(), data.size(), collective::ReduceOp::kSum);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(statuses[r].code(), code) << statuses[r].ToString();
    EXPECT_TRUE(Contains(statuses[r], text)) << statuses[r].ToString();
  }
}

TEST(ShmFailureTest, RankThatAbortsFailsThePeersNamingIt) {
  CheckPeersFailWhenRankTwoLeaves([](std::unique_ptr<collective::Communicator>& c) { c->Abort("lost the chief"); },
                                  Code::kAborted, "rank 2 aborted the communicator: lost the chief");
}

TEST(ShmFailureTest, RankThatClosesFailsThePeersNamingIt) {
  CheckPeersFailWhenRankTwoLeaves([](std::unique_ptr<collective::Communicator>& c) { c.reset(); }, Code::kUnavailable,
                                  "closed its communicator");
}

TEST(ShmFailureTest, DifferentCollectivesAreReportedAsAMismatch) {
  store::InMemoryStore store;
  auto comms = CreateShmRanks(2, ShmOptions(60s), &store);
  ASSERT_FALSE(HasFailure());
  std::vector<Status> statuses(2);
  RunOnRanks(2, [&](int r) {
    std::vector<float> data(101, 1.0f);  // rank 1 really has 101 floats: only the counts disagree
    statuses[r] = r == 0 ? comms[r]->AllReduce(data.data(), 100, collective::ReduceOp::kSum)
                         : comms[r]->AllReduce(data.data(), 101, collective::ReduceOp::kSum);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(statuses[r].code(), Code::kFailedPrecondition) << statuses[r].ToString();
    EXPECT_TRUE(Contains(statuses[r], "collective mismatch")) << statuses[r].ToString();
    EXPECT_TRUE(Contains(statuses[r], "count=101")) << statuses[r].ToString();
  }
}

TEST(ShmFailureTest, SetUpTimesOutNamingTheMissingRanks) {
  store::InMemoryStore store;
  auto c = collective::internal::CreateShm(ShmOptions(300ms), 0, 3, &store);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kDeadlineExceeded) << c.status().ToString();
  EXPECT_TRUE(Contains(c.status(), "ranks 1, 2 did not attach")) << c.status().ToString();
}

// ---- Real processes. The InMemoryStore cannot cross fork(), so they meet in a directory.

class DirectoryStore : public store::Store {
 public:
  explicit DirectoryStore(std::string dir) : dir_(std::move(dir)) {}
  Status Set(const std::string& key, const std::string& value) override {
    const std::string path = Path(key);
    { std::ofstream(path + ".tmp") << value; }
    std::filesystem::rename(path + ".tmp", path);
    return Status::Ok();
  }
  StatusOr<std::string> Get(const std::string& key, Deadline deadline) override {
    while (true) {
      std::ifstream in(Path(key));
      if (in) return std::string(std::istreambuf_iterator<char>(in), {});
      if (deadline.expired()) return DeadlineExceededError("no key " + key);
      std::this_thread::sleep_for(1ms);
    }
  }

 private:
  std::string Path(std::string key) const {
    for (char& c : key) c = c == '/' ? '_' : c;
    return dir_ + "/" + key;
  }
  std::string dir_;
};

// Forks rank 1, which joins, runs one AllReduce, then idles until killed. Returns its
// pid, with rank 0's communicator (warm-up done) in `comm`.
pid_t StartChildRank(const std::string& dir, std::unique_ptr<collective::Communicator>* comm,
                     std::chrono::milliseconds timeout) {
  pid_t child = ::fork();
  if (child == 0) {
    DirectoryStore store(dir);
    auto c = collective::internal::CreateShm(ShmOptions(timeout), 1, 2, &store);
    if (!c.ok()) ::_exit(2);
    std::vector<float> data(3000, 1.0f);
    if (!(*c)->AllReduce(data.data(), data.size(), collective::ReduceOp::kSum).ok()) ::_exit(3);
    while (true) ::pause();
  }
  DirectoryStore store(dir);
  auto c = collective::internal::CreateShm(ShmOptions(timeout), 0, 2, &store);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return child;
  *comm = std::move(c).value();
  std::vector<float> data(3000, 1.0f);
  Status s = (*comm)->AllReduce(data.data(), data.size(), collective::ReduceOp::kSum);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(data[0], 2.0f);
  return child;
}

std::string TempDir() {
  std::string dir = ::testing::TempDir() + "shm_failure_XXXXXX";
  EXPECT_NE(::mkdtemp(dir.data()), nullptr);
  return dir;
}

TEST(ShmProcessTest, KilledRankFailsTheSurvivorNamingIt) {
  const std::string dir = TempDir();
  std::unique_ptr<collective::Communicator> comm;
  const pid_t child = StartChildRank(dir, &comm, 60s);
  ASSERT_GT(child, 0);
  ASSERT_TRUE(comm != nullptr);
  ::kill(child, SIGKILL);  // not reaped yet: a zombie must count as dead too
  std::vector<float> data(1 << 20, 1.0f);
  Status s = comm->AllReduce(data.data(), data.size(), collective::ReduceOp::kSum);
  EXPECT_EQ(s.code(), Code::kUnavailable) << s.ToString();
  EXPECT_TRUE(Contains(s, "rank 1 (pid " + std::to_string(child) + ") exited")) << s.ToString();
  ::waitpid(child, nullptr, 0);
  std::filesystem::remove_all(dir);
}

TEST(ShmProcessTest, StoppedRankMakesTheSurvivorTimeOutNamingIt) {
  const std::string dir = TempDir();
  std::unique_ptr<collective::Communicator> comm;
  const pid_t child = StartChildRank(dir, &comm, 700ms);
  ASSERT_GT(child, 0);
  ASSERT_TRUE(comm != nullptr);
  ::kill(child, SIGSTOP);
  float x = 1;
  Status s = comm->AllReduce(&x, 1, collective::ReduceOp::kSum);
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s.ToString();
  EXPECT_TRUE(Contains(s, "rank 1 (pid " + std::to_string(child) + ")")) << s.ToString();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringtrain::collective
