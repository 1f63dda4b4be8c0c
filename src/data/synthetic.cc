#include "data/synthetic.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "data/random.h"

namespace ringtrain::data {
namespace {

// A class is a few strokes between shared anchor points, like the segments of a
// seven-segment display: classes overlap in some strokes, which is what keeps the
// task from being trivially separable.
constexpr int kGrid = 3;  // anchors sit near the points of a kGrid x kGrid grid
constexpr int kAnchors = kGrid * kGrid;
constexpr int kStrokesPerClass = 3;
constexpr float kDropStroke = 0.15f;  // chance that an example leaves one stroke out
constexpr float kMaxShift = 3.0f;     // pixels, at 28x28; scales with the image
constexpr float kAnchorJitter = 2.5f;  // pixels, at 28x28

// Sub-stream tags, so prototype and example draws never share a seed.
constexpr uint64_t kPrototypeStream = 0x70726f746fULL;  // "proto"
constexpr uint64_t kExampleStream = 0x6578616d70ULL;    // "examp"

float SegmentDistance2(float py, float px, float y0, float x0, float y1, float x1) {
  float dy = y1 - y0, dx = x1 - x0;
  float len2 = dy * dy + dx * dx;
  float t = len2 > 0 ? ((py - y0) * dy + (px - x0) * dx) / len2 : 0.f;
  t = std::clamp(t, 0.f, 1.f);
  float ey = py - (y0 + t * dy), ex = px - (x0 + t * dx);
  return ey * ey + ex * ex;
}

}  // namespace

SyntheticGenerator::SyntheticGenerator(const SyntheticParams& params) : params_(params) {
  rows_ = params_.shape.at(0);
  cols_ = params_.shape.at(1);
  channels_ = params_.shape.size() > 2 ? params_.shape[2] : 1;
  example_size_ = static_cast<size_t>(rows_) * cols_ * channels_;

  const float scale = std::min(rows_, cols_) / 28.f;
  const float margin_y = rows_ * 0.18f, margin_x = cols_ * 0.18f;
  Rng rng(MixSeed(params_.task, kPrototypeStream));
  prototypes_.resize(static_cast<size_t>(params_.classes) * channels_);
  for (int ch = 0; ch < channels_; ++ch) {
    float anchors[kAnchors][2];
    // Near a grid, so that no two anchors (and no two classes) coincide by chance.
    const float step_y = (rows_ - 1 - 2 * margin_y) / (kGrid - 1);
    const float step_x = (cols_ - 1 - 2 * margin_x) / (kGrid - 1);
    for (int a = 0; a < kAnchors; ++a) {
      anchors[a][0] = margin_y + step_y * (a / kGrid) + rng.Range(-0.2f, 0.2f) * step_y;
      anchors[a][1] = margin_x + step_x * (a % kGrid) + rng.Range(-0.2f, 0.2f) * step_x;
    }
    std::vector<uint64_t> used;  // edge sets already taken in this channel, as bitmasks
    for (int c = 0; c < params_.classes; ++c) {
      uint64_t mask = 0;
      std::vector<Stroke> strokes;
      // Redraw until the class shares at most one stroke with every earlier class, so
      // that an example missing a stroke is still unambiguous; after many tries (more
      // classes than such sets exist) settle for merely distinct sets.
      for (int attempt = 0;; ++attempt) {
        mask = 0;
        strokes.clear();
        while (static_cast<int>(strokes.size()) < kStrokesPerClass) {
          int a = static_cast<int>(rng.Below(kAnchors));
          int b = static_cast<int>(rng.Below(kAnchors));
          if (a == b) continue;
          if (a > b) std::swap(a, b);
          uint64_t bit = 1ull << (a * kAnchors + b - (a + 1) * (a + 2) / 2);
          if (mask & bit) continue;
          mask |= bit;
          float width = scale * rng.Range(0.9f, 1.5f);
          // Stroke ends hold anchor indices until the loop below resolves them.
          strokes.push_back({static_cast<float>(a), 0.f, static_cast<float>(b), 0.f, width});
        }
        const int max_shared = attempt < 1000 ? 1 : kStrokesPerClass - 1;
        bool ok = true;
        for (uint64_t other : used) ok = ok && std::popcount(other & mask) <= max_shared;
        if (ok || attempt >= 100000) break;
      }
      used.push_back(mask);
      // Resolve anchor indices to positions now; the per-example jitter moves them.
      for (auto& s : strokes) {
        int a = static_cast<int>(s.y0), b = static_cast<int>(s.y1);
        s = {anchors[a][0], anchors[a][1], anchors[b][0], anchors[b][1], s.width};
      }
      prototypes_[static_cast<size_t>(c) * channels_ + ch] = std::move(strokes);
    }
  }
}

void SyntheticGenerator::Render(const std::vector<Stroke>& strokes, float contrast, float* plane) const {
  // Pixel value = contrast * brightest stroke through it; strokes are Gaussian in
  // their distance to the segment.
  std::fill(plane, plane + static_cast<size_t>(rows_) * cols_, 0.f);
  for (const Stroke& s : strokes) {
    const float inv = 1.f / (2.f * s.width * s.width);
    const float reach = 3.f * s.width;
    int ylo = std::max(0, static_cast<int>(std::floor(std::min(s.y0, s.y1) - reach)));
    int yhi = std::min(rows_ - 1, static_cast<int>(std::ceil(std::max(s.y0, s.y1) + reach)));
    int xlo = std::max(0, static_cast<int>(std::floor(std::min(s.x0, s.x1) - reach)));
    int xhi = std::min(cols_ - 1, static_cast<int>(std::ceil(std::max(s.x0, s.x1) + reach)));
    for (int y = ylo; y <= yhi; ++y) {
      for (int x = xlo; x <= xhi; ++x) {
        float v = contrast * std::exp(-SegmentDistance2(static_cast<float>(y), static_cast<float>(x), s.y0, s.x0,
                                                         s.y1, s.x1) * inv);
        float& p = plane[static_cast<size_t>(y) * cols_ + x];
        p = std::max(p, v);
      }
    }
  }
}

int32_t SyntheticGenerator::Example(uint64_t id, float* out) const {
  Rng rng(MixSeed(MixSeed(params_.seed, kExampleStream), id));
  const float scale = std::min(rows_, cols_) / 28.f;
  const int32_t label = static_cast<int32_t>(rng.Below(static_cast<uint64_t>(params_.classes)));
  const float shift_y = rng.Range(-kMaxShift, kMaxShift) * scale;
  const float shift_x = rng.Range(-kMaxShift, kMaxShift) * scale;
  const float contrast = rng.Range(0.6f, 1.0f);
  const float jitter = kAnchorJitter * scale;

  std::vector<float> plane(static_cast<size_t>(rows_) * cols_);
  for (int ch = 0; ch < channels_; ++ch) {
    std::vector<Stroke> strokes = prototypes_[static_cast<size_t>(label) * channels_ + ch];
    for (auto& s : strokes) {
      s.y0 += shift_y + rng.Range(-jitter, jitter);
      s.x0 += shift_x + rng.Range(-jitter, jitter);
      s.y1 += shift_y + rng.Range(-jitter, jitter);
      s.x1 += shift_x + rng.Range(-jitter, jitter);
    }
    if (rng.Unit() < kDropStroke) strokes.erase(strokes.begin() + rng.Below(strokes.size()));
    Render(strokes, contrast, plane.data());
    for (size_t p = 0; p < plane.size(); ++p) {
      float v = plane[p] + params_.noise * rng.Range(-1.f, 1.f);
      out[p * channels_ + ch] = std::clamp(v, 0.f, 1.f);
    }
  }
  return label;
}

}  // namespace ringtrain::data
