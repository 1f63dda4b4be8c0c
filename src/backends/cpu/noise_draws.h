// GaussianNoise's standard normal draws on the CPU: a pure function of the op's stream
// key (DropoutStreamKey of backends/cpu/augment_draws.h: the job's seed, the step, the
// replica, the layer's name hash and seed) and the element's index, so the bits do not
// depend on the thread count or on a resume.
//
// Box-Muller on SplitMix64: elements 2p and 2p + 1 share the pair p, whose two draws are
// SplitMix64's outputs (2p + 1) and (2p + 2) from the key:
//   u1 = (z1 >> 11 + 1) * 2^-53 in (0, 1],  u2 = (z2 >> 11) * 2^-53 in [0, 1)
//   r = sqrt(-2 ln u1),  element 2p: r cos(2 pi u2),  element 2p + 1: r sin(2 pi u2)
// computed in double and rounded to float once. ln, cos and sin are polynomials in IEEE
// double additions, multiplications and divisions, rounded one at a time (no libm: the
// GPU's differs). They are written once, in backends/cuda/noise_math.h, which the CPU and
// the GPU kernels both compile (without FMA contraction), so both give the same bits.
//
// Threading: pure functions.
#pragma once

#include <cstdint>

namespace ringtrain::backends::cpu {

// ln(u) for u in (0, 1] (NoiseLog(1) == 0).
double NoiseLog(double u);
// sin and cos of 2 pi t for t in [0, 1).
void NoiseSinCos2Pi(double t, double* s, double* c);
// The standard normal of element `index` of the stream `key`.
float GaussianDraw(uint64_t key, uint64_t index);

}  // namespace ringtrain::backends::cpu
