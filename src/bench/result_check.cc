#include "bench/result_check.h"

#include <cstdint>
#include <sstream>

namespace ringtrain::bench {
namespace {

// 1..64, mixing the element index and the iteration (a cheap integer hash, so that
// filling 64 MiB costs less than reducing it).
inline uint32_t Pattern(size_t i, int iteration) {
  uint32_t x = static_cast<uint32_t>(i) * 0x9E3779B1u + static_cast<uint32_t>(iteration) * 0x85EBCA77u;
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 13;
  return (x >> 26) + 1;
}

}  // namespace

void FillContribution(float* data, size_t count, int rank, int iteration) {
  const float weight = static_cast<float>(rank + 1);
  for (size_t i = 0; i < count; ++i) data[i] = weight * static_cast<float>(Pattern(i, iteration));
}

Status CheckSum(const float* data, size_t count, int ranks, int iteration) {
  const float weight = static_cast<float>(ranks * (ranks + 1) / 2);
  // Blocks without an early exit vectorise; only a bad block is scanned for the index.
  constexpr size_t kBlock = 4096;
  size_t bad_block = count;
  for (size_t b = 0; b < count && bad_block == count; b += kBlock) {
    const size_t end = b + kBlock < count ? b + kBlock : count;
    bool bad = false;
    for (size_t i = b; i < end; ++i) bad |= data[i] != weight * static_cast<float>(Pattern(i, iteration));
    if (bad) bad_block = b;
  }
  for (size_t i = bad_block; i < count; ++i) {
    const float expected = weight * static_cast<float>(Pattern(i, iteration));
    if (data[i] != expected) {
      std::ostringstream m;
      m << "wrong all-reduce result: element " << i << " of " << count << " is " << data[i] << ", expected "
        << expected << " (the sum over " << ranks << " ranks); the collective backend is broken, please report it";
      return DataLossError(m.str());
    }
  }
  return Status::Ok();
}

}  // namespace ringtrain::bench
