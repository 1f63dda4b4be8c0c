// Broadcast and AllGather of every data type on every host backend (the owner's bits,
// untouched), mismatched types between ranks (FAILED_PRECONDITION naming both), the
// argument checks every backend shares, and the device-memory capability.
#include <cstring>
#include <limits>

#include "typed_test_util.h"

namespace ringtrain::collective {
namespace {

using typed_testing::AllSetups;
using typed_testing::Backend;
using typed_testing::Inputs;
using typed_testing::MakeRanks;
using typed_testing::SameBits;
using typed_testing::RankSetup;

template <typename T>
class TypedOpsTest : public ::testing::Test {};
using ElementTypes = ::testing::Types<float, double, int32_t, int64_t, uint8_t>;
TYPED_TEST_SUITE(TypedOpsTest, ElementTypes);

TYPED_TEST(TypedOpsTest, BroadcastFromEveryRootCopiesItsBits) {
  using T = TypeParam;
  for (const RankSetup& setup : AllSetups()) {
    store::InMemoryStore store;
    auto comms = MakeRanks(setup, &store, 4096);
    ASSERT_FALSE(this->HasFailure());
    const int n = setup.ranks;
    for (int root = 0; root < n; ++root) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{1001}, size_t{70001}}) {
        std::vector<std::vector<T>> data(n);
        std::vector<Status> statuses(n);
        testing_util::RunOnRanks(n, [&](int r) {
          data[r] = Inputs<T>(r, count);
          statuses[r] = comms[r]->Broadcast(data[r].data(), count, root);
        });
        const std::vector<T> want = Inputs<T>(root, count);
        for (int r = 0; r < n; ++r) {
          ASSERT_TRUE(statuses[r].ok()) << statuses[r].ToString();
          ASSERT_TRUE(SameBits(data[r], want)) << typed_testing::Describe(setup) << " root " << root << " count "
                                               << count << " rank " << r;
        }
      }
    }
  }
}

TYPED_TEST(TypedOpsTest, AllGatherPlacesEveryRanksBlockInRankOrder) {
  using T = TypeParam;
  for (const RankSetup& setup : AllSetups()) {
    store::InMemoryStore store;
    auto comms = MakeRanks(setup, &store, 4096);
    ASSERT_FALSE(this->HasFailure());
    const int n = setup.ranks;
    for (bool in_place : {false, true}) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{1001}, size_t{30001}}) {
        std::vector<std::vector<T>> out(n);
        std::vector<Status> statuses(n);
        testing_util::RunOnRanks(n, [&](int r) {
          const std::vector<T> in = Inputs<T>(r, count);
          out[r].assign(count * static_cast<size_t>(n), T(0));
          const T* src = in.data();
          if (in_place && count > 0) {
            std::memcpy(out[r].data() + count * static_cast<size_t>(r), in.data(), count * sizeof(T));
            src = out[r].data() + count * static_cast<size_t>(r);
          }
          statuses[r] = comms[r]->AllGather(src, count, out[r].data());
        });
        std::vector<T> want;
        for (int q = 0; q < n; ++q) {
          const std::vector<T> block = Inputs<T>(q, count);
          want.insert(want.end(), block.begin(), block.end());
        }
        for (int r = 0; r < n; ++r) {
          ASSERT_TRUE(statuses[r].ok()) << statuses[r].ToString();
          ASSERT_TRUE(SameBits(out[r], want))
              << typed_testing::Describe(setup) << " count " << count << " in_place " << in_place << " rank " << r;
        }
      }
    }
  }
}

// Rank 0 sums int64, the others float64: the same byte count, so only the type tells
// them apart. Rank 1 compares rank 0's collective with its own and must report the
// mismatch, naming both types; nobody may hang or succeed.
void CheckTypeMismatch(const RankSetup& setup) {
  store::InMemoryStore store;
  auto comms = MakeRanks(setup, &store);
  ASSERT_FALSE(::testing::Test::HasFailure());
  const int n = setup.ranks;
  std::vector<Status> statuses(n);
  testing_util::RunOnRanks(n, [&](int r) {
    if (r == 0) {
      std::vector<int64_t> v(10, 1);
      statuses[r] = comms[r]->AllReduce(v.data(), v.size(), ReduceOp::kSum);
    } else {
      std::vector<double> v(10, 1.0);
      statuses[r] = comms[r]->AllReduce(v.data(), v.size(), ReduceOp::kSum);
    }
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_FALSE(statuses[r].ok()) << typed_testing::Describe(setup) << " rank " << r;
  }
  const Status& s = statuses[1];
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << typed_testing::Describe(setup) << ": " << s.ToString();
  EXPECT_NE(s.message().find("collective mismatch"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("AllReduce(count=10, int64, sum)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("AllReduce(count=10, float64, sum)"), std::string::npos) << s.message();
}

TEST(TypedMismatchTest, AnotherTypeOnOneRankIsFailedPreconditionNamingBoth) {
  for (const RankSetup& setup : AllSetups()) {
    if (setup.backend == Backend::kLocal) continue;  // one rank has nobody to disagree with
    CheckTypeMismatch(setup);
  }
}

TEST(TypedMismatchTest, BroadcastOfAnotherTypeIsCaughtOnTheRingAndInSharedMemory) {
  // uint8 x 8 and int64 x 1 are the same 8 bytes.
  for (Backend backend : {Backend::kTcp, Backend::kShm}) {
    store::InMemoryStore store;
    auto comms = MakeRanks({backend, 2}, &store);
    ASSERT_FALSE(HasFailure());
    std::vector<Status> statuses(2);
    testing_util::RunOnRanks(2, [&](int r) {
      uint8_t bytes[8] = {};
      int64_t word = 0;
      statuses[r] = r == 0 ? comms[r]->Broadcast(bytes, 8, 0) : comms[r]->Broadcast(&word, 1, 0);
    });
    EXPECT_EQ(statuses[1].code(), Code::kFailedPrecondition) << statuses[1].ToString();
    EXPECT_NE(statuses[1].message().find("uint8"), std::string::npos) << statuses[1].message();
    EXPECT_NE(statuses[1].message().find("int64"), std::string::npos) << statuses[1].message();
  }
}

// Argument errors are found before anything is sent, on the calling rank alone: they
// are INVALID_ARGUMENT with one line saying what is wrong, and the communicator stays
// usable (every rank's next collective succeeds).
TEST(TypedArgumentTest, BadArgumentsAreInvalidArgumentAndLeaveTheCommunicatorUsable) {
  for (const RankSetup& setup : {RankSetup{Backend::kLocal, 1}, RankSetup{Backend::kTcp, 2}, RankSetup{Backend::kShm, 2}}) {
    SCOPED_TRACE(typed_testing::Describe(setup));
    store::InMemoryStore store;
    auto comms = MakeRanks(setup, &store);
    ASSERT_FALSE(HasFailure());
    Communicator& c = *comms[0];
    const int n = setup.ranks;
    int64_t ints[4] = {1, 2, 3, 4};
    auto expect_invalid = [](const Status& s, const std::string& says) {
      EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
      EXPECT_NE(s.message().find(says), std::string::npos) << "'" << says << "' in: " << s.message();
      EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
    };
    expect_invalid(c.AllReduce(ints, 4, ReduceOp::kMean), "kMean is not defined for int64");
    uint8_t bytes[4] = {};
    expect_invalid(c.AllReduce(bytes, 4, ReduceOp::kMean), "kMean is not defined for uint8");
    expect_invalid(c.AllReduce(ints, 4, static_cast<DataType>(42), ReduceOp::kSum), "unknown data type 42");
    expect_invalid(c.Broadcast(ints, 4, static_cast<DataType>(0), 0), "unknown data type 0");
    expect_invalid(c.AllGather(ints, 1, static_cast<DataType>(6), ints), "unknown data type 6");
    expect_invalid(c.AllReduce(ints, 4, DataType::kInt64, static_cast<ReduceOp>(7)), "unknown reduction 7");
    expect_invalid(c.AllReduce(static_cast<double*>(nullptr), 3, ReduceOp::kSum), "data is null but count is 3");
    expect_invalid(c.Broadcast(static_cast<int32_t*>(nullptr), 1, 0), "data is null");
    expect_invalid(c.AllGather(ints, 1, static_cast<int64_t*>(nullptr)), "out is null");
    expect_invalid(c.AllGather(static_cast<const int64_t*>(nullptr), 1, ints), "in is null");
    expect_invalid(c.Broadcast(ints, 4, n), "root " + std::to_string(n) + " is not a rank");
    expect_invalid(c.Broadcast(ints, 4, -1), "root -1 is not a rank");
    // Byte sizes that do not fit in size_t (the buffers are never touched).
    const size_t too_many = std::numeric_limits<size_t>::max() / 8 + 1;
    expect_invalid(c.AllReduce(ints, too_many, ReduceOp::kSum), "more bytes than memory can address");
    expect_invalid(c.Broadcast(ints, too_many, 0), "more bytes");
    // Fits for one rank, not times the ranks (on one rank the block is the whole output).
    const size_t per_rank = std::numeric_limits<size_t>::max() / 8 / static_cast<size_t>(n) + 1;
    expect_invalid(c.AllGather(ints, n == 1 ? too_many : per_rank, ints), "more bytes");

    // Still usable: a real collective on every rank.
    std::vector<std::vector<int64_t>> data(n, std::vector<int64_t>{5, -7});
    testing_util::RunOnRanks(n, [&](int r) {
      Status s = comms[r]->AllReduce(data[r].data(), 2, ReduceOp::kSum);
      EXPECT_TRUE(s.ok()) << s.ToString();
    });
    for (int r = 0; r < n; ++r) EXPECT_EQ(data[r], (std::vector<int64_t>{5 * n, -7 * n}));
  }
}

TEST(TypedArgumentTest, HostBackendsDoNotTakeDeviceMemory) {
  for (const RankSetup& setup : {RankSetup{Backend::kLocal, 1}, RankSetup{Backend::kTcp, 2}, RankSetup{Backend::kShm, 2}}) {
    store::InMemoryStore store;
    auto comms = MakeRanks(setup, &store);
    ASSERT_FALSE(HasFailure());
    for (const auto& c : comms) EXPECT_FALSE(c->accepts_device_memory()) << typed_testing::Describe(setup);
  }
}

TEST(DataTypeTest, SizesNamesAndTraits) {
  EXPECT_EQ(DataTypeSize(DataType::kFloat32), 4u);
  EXPECT_EQ(DataTypeSize(DataType::kFloat64), 8u);
  EXPECT_EQ(DataTypeSize(DataType::kInt32), 4u);
  EXPECT_EQ(DataTypeSize(DataType::kInt64), 8u);
  EXPECT_EQ(DataTypeSize(DataType::kUint8), 1u);
  EXPECT_EQ(DataTypeSize(static_cast<DataType>(9)), 0u);
  EXPECT_STREQ(DataTypeName(DataType::kFloat32), "float32");
  EXPECT_STREQ(DataTypeName(DataType::kFloat64), "float64");
  EXPECT_STREQ(DataTypeName(DataType::kInt32), "int32");
  EXPECT_STREQ(DataTypeName(DataType::kInt64), "int64");
  EXPECT_STREQ(DataTypeName(DataType::kUint8), "uint8");
  EXPECT_STREQ(DataTypeName(static_cast<DataType>(9)), "unknown");
  static_assert(DataTypeOf<float>() == DataType::kFloat32);
  static_assert(DataTypeOf<const double>() == DataType::kFloat64);
  static_assert(DataTypeOf<int32_t>() == DataType::kInt32);
  static_assert(DataTypeOf<int64_t>() == DataType::kInt64);
  static_assert(DataTypeOf<uint8_t>() == DataType::kUint8);
  EXPECT_TRUE(IsFloatingPoint(DataType::kFloat64));
  EXPECT_FALSE(IsFloatingPoint(DataType::kInt64));
  EXPECT_FALSE(IsKnownDataType(static_cast<DataType>(0)));
}

}  // namespace
}  // namespace ringtrain::collective
