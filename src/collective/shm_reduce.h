// The arithmetic of the shared-memory all-reduce, kept apart so it can be tuned alone.
#pragma once

#include <cstddef>

namespace ringtrain::collective::shm {

// For i < len: out[i] = (((srcs[0][i] + srcs[1][i]) + srcs[2][i]) + ... + srcs[n-1][i]),
// then divided by `divisor` when it is not 0, and stored to out and (if not null) to
// also_out. The order of additions per element is fixed by the order of srcs, so every
// rank that passes the same values in the same order gets the same bits. A source may
// be out itself (in place); otherwise sources and outputs must not overlap. n >= 1.
void ReduceSum(const float* const* srcs, int n, size_t len, float divisor, float* out, float* also_out);

}  // namespace ringtrain::collective::shm
