// The one reduction routine of every backend: the ring's small (all-gather then sum)
// and large (reduce-scatter) all-reduce and the shared-memory all-reduce all add through
// it, each in its own order of sources. Which order that is for an all-reduce is defined
// once, in sum_order.h, for every RING transport. Compiled with -ffp-contract=off, plain loops
// over restrict pointers (vectorised at -O3), no -ffast-math.
#pragma once

#include <cstddef>

#include "collective/data_type.h"

namespace ringtrain::collective::internal {

// For i < count:
//   out[i] = (((srcs[0][i] + srcs[1][i]) + srcs[2][i]) + ... + srcs[n-1][i])
// then divided by `divide_by` when it is > 0 (floating-point types only: integer types
// never divide, callers reject kMean on them), and stored to out and (if not null) to
// also_out. Integer sums wrap modulo 2^bits (computed in unsigned arithmetic, so no
// undefined overflow). Each element sees the same operations in the same order whatever
// the length, alignment or tiling, so every rank that passes the same values in the same
// order gets the same bits (reduce.cc is compiled without FMA contraction).
// A source may be out itself (in place, at any position); otherwise sources and outputs
// must not overlap. n >= 1; type must be known.
void ReduceInOrder(DataType type, const void* const* srcs, int n, size_t count, int divide_by, void* out,
                   void* also_out);

}  // namespace ringtrain::collective::internal
