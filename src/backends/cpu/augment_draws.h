// The counter-based random draws of Dropout and the augmentation ops (RandomFlip,
// RandomCrop, RandomTranslation, RandomRotation) on the CPU: pure functions of the step
// (backends::StepContext: the job's seed, the step, the replica), the op's key and the
// element's or example's index, so the bits do not depend on the thread count, on what
// other ops drew, or on whether the run was resumed.
//
// Dropout: element i of the stream key StreamKey(seed, step, replica, the layer's name
// hash, the layer's own seed) is SplitMix64's (i + 1)-th output from that key. Keras'
// own stream differs (it is TensorFlow's RNG), so masks match Keras in distribution, not
// bit for bit.
// Augmentation: every example's parameters come from Rng(seed, Absorb of (step, replica,
// the op's key, the example's index)) (ExampleRng). The key hashes the layer's name
// and, when given, Keras' "seed" argument (nn/layers/augment_common.h LayerKey).
//
// backends/cuda/random_math.h repeats these formulas for the GPU's kernels, statement for
// statement. Threading: pure functions.
#pragma once

#include <cstdint>

#include "backends/kernel.h"
#include "common/splitmix.h"
#include "ops/op.h"

namespace ringtrain::backends::cpu {

// ---- Dropout

// The stream of one Dropout op in one step.
uint64_t DropoutStreamKey(uint64_t seed, int64_t step, int replica, uint64_t layer_hash, uint64_t layer_seed);
// The keep decision for element `index` of the stream `key`: the top 24 bits of its draw
// as a float in [0, 1) (exact), kept when >= rate (TensorFlow's rule).
bool DropoutKeep(uint64_t key, uint64_t index, float rate);

// ---- Augmentation

// Absorbs one more counter into the hash: each position gets its own odd multiplier,
// so (a, b) and (b, a) differ.
uint64_t Absorb(uint64_t h, uint64_t v, uint64_t position);

// The generator for example `example` of the batch in the step `c` describes.
Rng ExampleRng(const StepContext& c, uint64_t layer_key, int64_t example);

// Uniform in [lo, hi) from one draw, as Keras' random.uniform(minval, maxval).
float UniformIn(Rng& rng, double lo, double hi);

// RandomFlip: example `example`'s flips, bit 0 left-right, bit 1 upside down. Each
// direction the mode names flips with probability 1/2 (Keras: uniform() <= 0.5), from
// one draw each, horizontal first.
int DrawFlips(const StepContext& c, uint64_t key, int64_t example, bool horizontal, bool vertical);

// RandomCrop's random path (input at least height x width): example `example`'s offsets,
// uniform over the valid ones (h0 in [0, in_height - height], w0 in [0, in_width - width]),
// from 53 bits of one draw each, the row first.
void DrawCropOffsets(const StepContext& c, uint64_t key, int64_t example, int in_height, int in_width, int height,
                     int width, int* h0, int* w0);

// RandomTranslation (op.kind kRandomTranslation) or RandomRotation: example `example`'s
// transform t = [a0, a1, a2, b0, b1, b2, c0, c1] of a height x width image
// (backends/cpu/image_transform.h), as Keras builds it:
//   translation: dy = U(op.height_factor range) * H, dx = U(op.width_factor range) * W,
//     drawn height first; [1, 0, -dx, 0, 1, -dy, 0, 0];
//   rotation: angle = U(op.angle_factor range * 2*pi) in float, cos and sin in float,
//     about the pixel-grid centre: [cos, -sin, x_off, sin, cos, y_off, 0, 0] with
//     x_off = ((W-1) - (cos (W-1) - sin (H-1))) / 2, y_off = ((H-1) - (sin (W-1) + cos (H-1))) / 2.
void DrawAffineTransform(const StepContext& c, const ops::Op& op, int height, int width, int64_t example, float* t);

}  // namespace ringtrain::backends::cpu
