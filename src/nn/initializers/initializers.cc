#include "nn/initializers/initializers.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "nn/initializers/init.h"
#include "nn/keras/json_fields.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;

// Keras' correction for a standard normal truncated at 2: its stddev is 0.8796...
constexpr double kTruncatedStddev = 0.87962566103423978;
constexpr double kTwoPi = 6.283185307179586476925286766559;

// "GlorotUniform", "glorot_uniform" -> "glorotuniform".
std::string Canonical(const std::string& name) {
  std::string out;
  for (unsigned char c : name) {
    if (c != '_') out += static_cast<char>(std::tolower(c));
  }
  return out;
}

Initializer VarianceScaling(double scale, Initializer::Mode mode, Initializer::Distribution d) {
  Initializer i;
  i.kind = Initializer::Kind::kVarianceScaling;
  i.scale = scale;
  i.mode = mode;
  i.distribution = d;
  return i;
}

// The initializer a name stands for, with Keras' defaults; false when unknown.
bool FromName(const std::string& canonical, Initializer* out) {
  using K = Initializer::Kind;
  using M = Initializer::Mode;
  using D = Initializer::Distribution;
  Initializer i;
  if (canonical == "glorotuniform") {
    i = VarianceScaling(1.0, M::kFanAvg, D::kUniform);
  } else if (canonical == "glorotnormal") {
    i = VarianceScaling(1.0, M::kFanAvg, D::kTruncatedNormal);
  } else if (canonical == "heuniform") {
    i = VarianceScaling(2.0, M::kFanIn, D::kUniform);
  } else if (canonical == "henormal") {
    i = VarianceScaling(2.0, M::kFanIn, D::kTruncatedNormal);
  } else if (canonical == "lecununiform") {
    i = VarianceScaling(1.0, M::kFanIn, D::kUniform);
  } else if (canonical == "lecunnormal") {
    i = VarianceScaling(1.0, M::kFanIn, D::kTruncatedNormal);
  } else if (canonical == "variancescaling") {
    i = VarianceScaling(1.0, M::kFanIn, D::kTruncatedNormal);
  } else if (canonical == "zeros" || canonical == "zero") {
    i.kind = K::kZeros;
  } else if (canonical == "ones" || canonical == "one") {
    i.kind = K::kOnes;
  } else if (canonical == "constant") {
    i.kind = K::kConstant;
  } else if (canonical == "randomnormal" || canonical == "normal") {
    i.kind = K::kRandomNormal;
  } else if (canonical == "randomuniform" || canonical == "uniform") {
    i.kind = K::kRandomUniform;
  } else if (canonical == "truncatednormal") {
    i.kind = K::kTruncatedNormal;
  } else {
    return false;
  }
  *out = i;
  return true;
}

constexpr const char* kSupported =
    "glorot_uniform, glorot_normal, he_uniform, he_normal, lecun_uniform, lecun_normal, zeros, ones, constant, "
    "random_normal, random_uniform, truncated_normal, variance_scaling";

StatusOr<Initializer> FromConfig(Initializer i, const json& config, bool is_vs, const std::string& ctx) {
  using K = Initializer::Kind;
  const double kInf = std::numeric_limits<double>::infinity();
  // Glorot/He/LeCun take only a seed; VarianceScaling itself its three numbers.
  Status known = Status::Ok();
  if (is_vs) {
    known = CheckKnownFields(config, {"seed", "scale", "mode", "distribution"}, ctx);
  } else if (i.kind == K::kConstant) {
    known = CheckKnownFields(config, {"seed", "value"}, ctx);
  } else if (i.kind == K::kRandomNormal || i.kind == K::kTruncatedNormal) {
    known = CheckKnownFields(config, {"seed", "mean", "stddev"}, ctx);
  } else if (i.kind == K::kRandomUniform) {
    known = CheckKnownFields(config, {"seed", "minval", "maxval"}, ctx);
  } else {
    known = CheckKnownFields(config, {"seed"}, ctx);
  }
  RT_RETURN_IF_ERROR(known);
  if (auto s = config.find("seed"); s != config.end() && !s->is_null() && !s->is_number_integer()) {
    return InvalidArgumentError(ctx + ": 'seed' must be an integer or null, got " + BriefDump(*s));
  }
  switch (i.kind) {
    case K::kConstant: {
      RT_ASSIGN_OR_RETURN(i.value, GetNumber(config, "value", 0.0, -kInf, true, kInf, true, ctx));
      break;
    }
    case K::kRandomNormal:
    case K::kTruncatedNormal: {
      RT_ASSIGN_OR_RETURN(i.mean, GetNumber(config, "mean", 0.0, -kInf, true, kInf, true, ctx));
      RT_ASSIGN_OR_RETURN(i.stddev, GetNumber(config, "stddev", 0.05, 0.0, false, kInf, true, ctx));
      break;
    }
    case K::kRandomUniform: {
      RT_ASSIGN_OR_RETURN(i.minval, GetNumber(config, "minval", -0.05, -kInf, true, kInf, true, ctx));
      RT_ASSIGN_OR_RETURN(i.maxval, GetNumber(config, "maxval", 0.05, -kInf, true, kInf, true, ctx));
      if (i.minval > i.maxval) {
        return InvalidArgumentError(ctx + ": 'minval' must not exceed 'maxval', got " + BriefDump(config));
      }
      break;
    }
    case K::kVarianceScaling: {
      if (!is_vs) break;
      RT_ASSIGN_OR_RETURN(i.scale, GetNumber(config, "scale", 1.0, 0.0, true, kInf, true, ctx));
      if (auto m = config.find("mode"); m != config.end()) {
        const json& v = *m;
        if (v == "fan_in") {
          i.mode = Initializer::Mode::kFanIn;
        } else if (v == "fan_out") {
          i.mode = Initializer::Mode::kFanOut;
        } else if (v == "fan_avg") {
          i.mode = Initializer::Mode::kFanAvg;
        } else {
          return InvalidArgumentError(ctx + ": 'mode' must be \"fan_in\", \"fan_out\" or \"fan_avg\", got " +
                                      BriefDump(v));
        }
      }
      if (auto d = config.find("distribution"); d != config.end()) {
        const json& v = *d;
        // Keras (2 and 3) and tfjs read "normal" as the truncated normal.
        if (v == "truncated_normal" || v == "normal") {
          i.distribution = Initializer::Distribution::kTruncatedNormal;
        } else if (v == "untruncated_normal") {
          i.distribution = Initializer::Distribution::kUntruncatedNormal;
        } else if (v == "uniform") {
          i.distribution = Initializer::Distribution::kUniform;
        } else {
          return InvalidArgumentError(ctx + ": 'distribution' must be \"truncated_normal\", \"untruncated_normal\" "
                                      "or \"uniform\", got " + BriefDump(v));
        }
      }
      break;
    }
    default:
      break;
  }
  return i;
}

// A uniform double in (0, 1]: 53 bits, never 0 (for the logarithm).
double OpenUniform(Rng& rng) { return (static_cast<double>(rng.Next() >> 11) + 1.0) * (1.0 / 9007199254740992.0); }

// A standard normal by Box-Muller (one value per pair of draws: simple and order-free).
double StandardNormal(Rng& rng) {
  const double u1 = OpenUniform(rng);
  const double u2 = OpenUniform(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

double TruncatedStandardNormal(Rng& rng) {
  for (;;) {  // P(|z| > 2) = 4.6%: the expected number of draws is 1.05
    const double z = StandardNormal(rng);
    if (std::abs(z) <= 2.0) return z;
  }
}

}  // namespace

StatusOr<Initializer> GetInitializer(const json& j, const char* key, const Initializer& fallback,
                                     const std::string& ctx) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  const std::string where = ctx + ": '" + key + "'";
  const json* name = nullptr;
  const json* config = nullptr;
  if (it->is_string()) {
    name = &*it;
  } else if (it->is_object()) {
    for (const auto& item : it->items()) {
      if (item.key() != "class_name" && item.key() != "config" && item.key() != "module" &&
          item.key() != "registered_name") {
        return InvalidArgumentError(where + " has the key '" + item.key() +
                                    "', which is not part of a Keras initializer (class_name, config)");
      }
    }
    auto cn = it->find("class_name");
    if (cn == it->end() || !cn->is_string()) {
      return InvalidArgumentError(where + " must be a name or {\"class_name\": ..., \"config\": {...}}, got " +
                                  BriefDump(*it));
    }
    name = &*cn;
    if (auto c = it->find("config"); c != it->end() && !c->is_null()) config = &*c;
  } else {
    return InvalidArgumentError(where + " must be an initializer name (e.g. \"glorot_uniform\") or "
                                "{\"class_name\": ..., \"config\": {...}}, got " + BriefDump(*it));
  }
  Initializer init;
  const std::string canonical = Canonical(name->get<std::string>());
  if (!FromName(canonical, &init)) {
    return InvalidArgumentError(where + ": unknown initializer " + BriefDump(*name) + " (supported: " + kSupported +
                                ")");
  }
  if (config == nullptr) return init;
  return FromConfig(init, *config, canonical == "variancescaling", ctx + ": '" + key + ".config'");
}

void Initialize(const Initializer& init, float* out, size_t n, int64_t fan_in, int64_t fan_out, uint64_t seed,
                uint64_t stream) {
  using K = Initializer::Kind;
  Rng rng(seed, stream);
  switch (init.kind) {
    case K::kZeros:
      std::fill(out, out + n, 0.0f);
      return;
    case K::kOnes:
      std::fill(out, out + n, 1.0f);
      return;
    case K::kConstant:
      std::fill(out, out + n, static_cast<float>(init.value));
      return;
    case K::kRandomUniform: {
      const double width = init.maxval - init.minval;
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(init.minval + width * rng.Uniform());
      return;
    }
    case K::kRandomNormal:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(init.mean + init.stddev * StandardNormal(rng));
      return;
    case K::kTruncatedNormal:
      for (size_t i = 0; i < n; ++i) {
        out[i] = static_cast<float>(init.mean + init.stddev * TruncatedStandardNormal(rng));
      }
      return;
    case K::kVarianceScaling:
      break;
  }
  double fan = 0.0;
  switch (init.mode) {
    case Initializer::Mode::kFanIn: fan = static_cast<double>(fan_in); break;
    case Initializer::Mode::kFanOut: fan = static_cast<double>(fan_out); break;
    case Initializer::Mode::kFanAvg: fan = static_cast<double>(fan_in + fan_out) / 2.0; break;
  }
  fan = std::max(1.0, fan);
  switch (init.distribution) {
    case Initializer::Distribution::kUniform: {
      // (3 * scale) / fan: for Glorot (scale 1, fan (in + out) / 2, exact) this is the
      // correctly rounded 6 / (in + out), so the bits equal GlorotUniform's (nn/initializers/init.h).
      const double limit = std::sqrt(3.0 * init.scale / fan);
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(limit * (2.0 * rng.Uniform() - 1.0));
      return;
    }
    case Initializer::Distribution::kTruncatedNormal: {
      const double stddev = std::sqrt(init.scale / fan) / kTruncatedStddev;
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(stddev * TruncatedStandardNormal(rng));
      return;
    }
    case Initializer::Distribution::kUntruncatedNormal: {
      const double stddev = std::sqrt(init.scale / fan);
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(stddev * StandardNormal(rng));
      return;
    }
  }
}

}  // namespace ringtrain::nn
