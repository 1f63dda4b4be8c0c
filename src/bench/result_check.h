// The values the all-reduce benchmark reduces, chosen so that the exact sum is known
// and every element of every result can be checked.
//
// Rank r's element i at iteration k is (r + 1) * h(i, k), with h a hash in 1..64.
// Their sum over n ranks is h(i, k) * n(n+1)/2: small integers, exact in float32 in
// any summation order (at most 64 * 2080 < 2^24 for 64 ranks), so the check is an
// exact comparison. A missing or doubled rank, a chunk at the wrong offset, or a
// stale buffer from the previous iteration all give a different value.
// Thread-safe (pure functions).
#pragma once

#include <cstddef>

#include "common/status.h"

namespace ringtrain::bench {

// The largest number of ranks for which the sums stay exact.
constexpr int kMaxCheckedRanks = 64;

// Fills data[0..count) with rank `rank`'s contribution at iteration `iteration`.
void FillContribution(float* data, size_t count, int rank, int iteration);

// OK if data[0..count) is the sum over `ranks` ranks of iteration `iteration`'s
// contributions; else DATA_LOSS naming the first wrong element, its value and the
// expected one.
Status CheckSum(const float* data, size_t count, int ranks, int iteration);

}  // namespace ringtrain::bench
