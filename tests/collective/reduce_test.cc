// The one reduction routine every backend adds through (collective/reduce.h): for each
// type, the sum (and mean) of n sources in the given order equals a plain scalar loop
// bit for bit, across tile boundaries, with a source that is the output at any
// position, with a second output, and with integer wrap-around.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "collective/reduce.h"
#include "typed_test_util.h"

namespace ringtrain::collective {
namespace {

using typed_testing::Inputs;
using typed_testing::SameBits;

template <typename T>
class ReduceInOrderTest : public ::testing::Test {};
using ElementTypes = ::testing::Types<float, double, int32_t, int64_t, uint8_t>;
TYPED_TEST_SUITE(ReduceInOrderTest, ElementTypes);

// The scalar definition: ((s0 + s1) + s2) + ..., then / divide_by.
template <typename T>
std::vector<T> Scalar(const std::vector<std::vector<T>>& srcs, size_t len, int divide_by) {
  std::vector<T> out(len);
  for (size_t i = 0; i < len; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      T acc = srcs[0][i];
      for (size_t k = 1; k < srcs.size(); ++k) acc += srcs[k][i];
      out[i] = divide_by > 0 ? acc / static_cast<T>(divide_by) : acc;
    } else {
      using U = std::make_unsigned_t<T>;
      U acc = static_cast<U>(srcs[0][i]);
      for (size_t k = 1; k < srcs.size(); ++k) acc = static_cast<U>(acc + static_cast<U>(srcs[k][i]));
      out[i] = static_cast<T>(acc);
    }
  }
  return out;
}

TYPED_TEST(ReduceInOrderTest, EqualsTheScalarLoopForEveryShapeAndAliasing) {
  using T = TypeParam;
  const DataType type = DataTypeOf<T>();
  const size_t tile = 8192 / sizeof(T);
  for (int n : {1, 2, 3, 5}) {
    for (size_t len : {size_t{0}, size_t{1}, size_t{15}, tile - 1, tile, tile + 1, 3 * tile + 7}) {
      for (int divide_by : {0, n}) {
        if (!std::is_floating_point_v<T> && divide_by > 0) continue;  // integers never divide
        std::vector<std::vector<T>> srcs(n);
        for (int k = 0; k < n; ++k) srcs[k] = Inputs<T>(k, len, static_cast<uint32_t>(len));
        const std::vector<T> want = Scalar(srcs, len, divide_by);
        std::vector<const void*> ptrs(n);
        for (int k = 0; k < n; ++k) ptrs[k] = srcs[k].data();

        // Separate outputs, both written.
        std::vector<T> out(len), also(len);
        internal::ReduceInOrder(type, ptrs.data(), n, len, divide_by, out.data(), also.data());
        ASSERT_TRUE(SameBits(out, want)) << "n=" << n << " len=" << len << " divide_by=" << divide_by;
        ASSERT_TRUE(SameBits(also, want)) << "n=" << n << " len=" << len;

        // In place, the output being each source in turn (the ring's and shm's own rank).
        for (int at = 0; at < n; ++at) {
          std::vector<std::vector<T>> copy = srcs;
          for (int k = 0; k < n; ++k) ptrs[k] = copy[k].data();
          internal::ReduceInOrder(type, ptrs.data(), n, len, divide_by, copy[at].data(), nullptr);
          ASSERT_TRUE(SameBits(copy[at], want)) << "in place at source " << at << ", n=" << n << " len=" << len;
        }
      }
    }
  }
}

TEST(ReduceInOrderValuesTest, IntegerSumsWrapAndFloatOrderShowsInTheBits) {
  const uint8_t a8[2] = {250, 3}, b8[2] = {10, 255};
  const void* s8[2] = {a8, b8};
  uint8_t o8[2];
  internal::ReduceInOrder(DataType::kUint8, s8, 2, 2, 0, o8, nullptr);
  EXPECT_EQ(o8[0], 4);
  EXPECT_EQ(o8[1], 2);

  const int32_t a32 = std::numeric_limits<int32_t>::max(), b32 = 1;
  const void* s32[2] = {&a32, &b32};
  int32_t o32;
  internal::ReduceInOrder(DataType::kInt32, s32, 2, 1, 0, &o32, nullptr);
  EXPECT_EQ(o32, std::numeric_limits<int32_t>::min());

  const int64_t a64 = (int64_t{1} << 53) + 1, b64 = 2;
  const void* s64[2] = {&a64, &b64};
  int64_t o64;
  internal::ReduceInOrder(DataType::kInt64, s64, 2, 1, 0, &o64, nullptr);
  EXPECT_EQ(o64, (int64_t{1} << 53) + 3);

  // (1e16 + 1) + 1 is 1e16 in float64 (each 1 is lost), (1 + 1) + 1e16 is 1e16 + 2:
  // the order is the caller's, not the routine's.
  const double big = 1e16, one = 1;
  const void* big_first[3] = {&big, &one, &one};
  const void* big_last[3] = {&one, &one, &big};
  double first, last;
  internal::ReduceInOrder(DataType::kFloat64, big_first, 3, 1, 0, &first, nullptr);
  internal::ReduceInOrder(DataType::kFloat64, big_last, 3, 1, 0, &last, nullptr);
  EXPECT_EQ(first, 1e16);
  EXPECT_EQ(last, 1e16 + 2);
}

}  // namespace
}  // namespace ringtrain::collective
