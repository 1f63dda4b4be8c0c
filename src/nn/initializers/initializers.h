// Keras' weight initializers: parsing a layer's "*_initializer" argument (a Keras name,
// or {"class_name", "config"} as tf.keras 2, Keras 3 and tfjs serialize it) and
// filling a tensor. Pure functions; no state, any thread; errors are INVALID_ARGUMENT
// naming the argument.
//
// Values are deterministic: each tensor draws from its own stream of the job's seed
// (nn/initializers/init.h), so the same job gives the same bits on every run and thread count. A
// "seed" in an initializer's config is accepted but does not reproduce Keras' numbers
// (Keras' generators are not ours); the job's seed decides.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::nn {

struct Initializer {
  enum class Kind {
    kZeros,
    kOnes,
    kConstant,         // value
    kRandomNormal,     // mean, stddev
    kRandomUniform,    // minval, maxval
    kTruncatedNormal,  // mean, stddev; values beyond 2 stddev are re-drawn
    kVarianceScaling,  // scale, mode, distribution (Glorot, He and LeCun are this)
  };
  enum class Mode { kFanIn, kFanOut, kFanAvg };
  enum class Distribution { kTruncatedNormal, kUntruncatedNormal, kUniform };

  Kind kind = Kind::kZeros;
  double value = 0.0;  // constant
  double mean = 0.0, stddev = 0.05;
  double minval = -0.05, maxval = 0.05;
  double scale = 1.0;
  Mode mode = Mode::kFanAvg;
  Distribution distribution = Distribution::kUniform;

  // The common ones by the names layers use in ParamSpecs (ParamSpec::Init::kOnes).
  static const Initializer kZeros;
  static const Initializer kOnes;
  static const Initializer kGlorotUniform;

  friend bool operator==(const Initializer& a, const Initializer& b) {
    return a.kind == b.kind && a.value == b.value && a.mean == b.mean && a.stddev == b.stddev &&
           a.minval == b.minval && a.maxval == b.maxval && a.scale == b.scale && a.mode == b.mode &&
           a.distribution == b.distribution;
  }
  friend bool operator!=(const Initializer& a, const Initializer& b) { return !(a == b); }
};

inline const Initializer Initializer::kZeros{Initializer::Kind::kZeros};
inline const Initializer Initializer::kOnes{Initializer::Kind::kOnes};
inline const Initializer Initializer::kGlorotUniform{Initializer::Kind::kVarianceScaling};  // scale 1, fan_avg, uniform

// Reads j[key]: absent or null -> `fallback`. Accepts Keras' names in either spelling
// ("glorot_uniform", "GlorotUniform", "he_normal", "zeros", "random_normal",
// "truncated_normal", "variance_scaling", ...) and the object form with its config.
StatusOr<Initializer> GetInitializer(const nlohmann::json& j, const char* key, const Initializer& fallback,
                                     const std::string& ctx);

// Fills out[0, n) for a weight with Keras' fans (fan_in, fan_out: for a Dense kernel
// [in, units] in and units; for a Conv2D kernel kh*kw*in and kh*kw*filters; for a 1-D
// weight its length, both). Glorot uniform gives exactly GlorotUniform's bits.
void Initialize(const Initializer& init, float* out, size_t n, int64_t fan_in, int64_t fan_out, uint64_t seed,
                uint64_t stream);

}  // namespace ringtrain::nn
