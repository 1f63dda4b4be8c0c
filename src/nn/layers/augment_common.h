// What the augmentation layers (RandomFlip, RandomTranslation, RandomRotation,
// RandomCrop) share: their stream key and the readers of Keras' arguments common to
// several of them.
//
// Randomness: every example's parameters come from a counter-based generator keyed by
// (the step's seed, step and replica, the layer's key, the example's index in the
// batch): backends/cpu/augment_draws.h, which the kernels call. The layer's key hashes
// its name and, when given, Keras' "seed" argument.
//
// Threading: pure functions. Errors: INVALID_ARGUMENT naming the field, prefixed by ctx.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"
#include "ops/op.h"

namespace ringtrain::nn::augment {

// The layer's key: FNV-1a of the name, mixed with the "seed" argument (an integer or
// null/absent). Refuses any other seed value.
StatusOr<uint64_t> LayerKey(const nlohmann::json& j, const std::string& name, const std::string& ctx);

// Keras' factor arguments: a number f in [-1, 1] -> (-|f|, |f|); a pair [a, b] with both
// in [-1, 1] -> (min, max). `key` is required (Keras has no default for these).
StatusOr<std::pair<double, double>> GetFactor(const nlohmann::json& j, const char* key, const std::string& ctx);

// The augmentation layers take NHWC images: `in` must be [H, W, C].
Status CheckImageInput(const Shape& in, const char* class_name, const std::string& ctx);

// RandomTranslation's and RandomRotation's "fill_mode" (default "reflect", Keras' default
// for both layers) and "interpolation" (default "bilinear"): how the sampler
// (backends/cpu/image_transform.h) maps points outside the image and reads the input.
StatusOr<ops::Op::FillMode> GetFillMode(const nlohmann::json& j, const std::string& ctx);
StatusOr<ops::Op::Interpolation> GetInterpolation(const nlohmann::json& j, const std::string& ctx);

}  // namespace ringtrain::nn::augment
