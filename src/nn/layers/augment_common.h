// What the augmentation layers (RandomFlip, RandomTranslation, RandomRotation,
// RandomCrop) share: the per-example random stream and the readers of Keras'
// arguments common to several of them.
//
// Randomness: every example's parameters come from a counter-based generator keyed by
// (context().seed, context().step, context().replica, the layer's key, the example's
// index in the batch): SplitMix64 of the tuple, then nn::Rng. So the bits do not depend
// on the thread count, on what other layers drew, or on whether the run was resumed.
// The layer's key hashes its name and, when given, Keras' "seed" argument.
//
// Threading: pure functions. Errors: INVALID_ARGUMENT naming the field, prefixed by ctx.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/initializers/init.h"
#include "nn/layer.h"

namespace ringtrain::nn::augment {

// The layer's key: FNV-1a of the name, mixed with the "seed" argument (an integer or
// null/absent). Refuses any other seed value.
StatusOr<uint64_t> LayerKey(const nlohmann::json& j, const std::string& name, const std::string& ctx);

// The generator for example `example` of the batch in the step `c` describes.
Rng ExampleRng(const StepContext& c, uint64_t layer_key, int64_t example);

// Keras' factor arguments: a number f in [-1, 1] -> (-|f|, |f|); a pair [a, b] with both
// in [-1, 1] -> (min, max). `key` is required (Keras has no default for these).
StatusOr<std::pair<double, double>> GetFactor(const nlohmann::json& j, const char* key, const std::string& ctx);

// The augmentation layers take NHWC images: `in` must be [H, W, C].
Status CheckImageInput(const Shape& in, const char* class_name, const std::string& ctx);

// Uniform in [lo, hi) from one draw, as Keras' random.uniform(minval, maxval).
float UniformIn(Rng& rng, double lo, double hi);

}  // namespace ringtrain::nn::augment
