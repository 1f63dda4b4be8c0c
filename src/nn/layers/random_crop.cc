#include "nn/layers/random_crop.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "nn/layers/augment_common.h"
#include "nn/keras/json_fields.h"

namespace ringtrain::nn {
namespace {

// TF's compute_interpolation_weights with half-pixel centres (resize_bilinear_op.cc):
// in = (i + 0.5) * scale - 0.5, scale = in_size / out_size in float.
template <typename Lerp>
void ResizeWeights(int in_size, int out_size, std::vector<Lerp>* out) {
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  out->resize(static_cast<size_t>(out_size));
  for (int i = 0; i < out_size; ++i) {
    const float in = (static_cast<float>(i) + 0.5f) * scale - 0.5f;
    const float in_f = std::floor(in);
    Lerp& l = (*out)[static_cast<size_t>(i)];
    l.lower = std::max(static_cast<int>(in_f), 0);
    l.upper = std::min(static_cast<int>(std::ceil(in)), in_size - 1);
    l.lerp = in - in_f;
  }
}

}  // namespace

StatusOr<std::unique_ptr<Layer>> RandomCrop::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                    const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "height", "width", "seed"}, ctx));
  RT_RETURN_IF_ERROR(augment::CheckImageInput(in, "RandomCrop", ctx));
  RT_ASSIGN_OR_RETURN(int height, GetPositiveInt(j, "height", 0, ctx, 1 << 16));
  RT_ASSIGN_OR_RETURN(int width, GetPositiveInt(j, "width", 0, ctx, 1 << 16));
  RT_ASSIGN_OR_RETURN(uint64_t key, augment::LayerKey(j, name, ctx));
  return std::unique_ptr<Layer>(new RandomCrop(std::move(name), in, height, width, key));
}

RandomCrop::RandomCrop(std::string name, const Shape& in, int height, int width, uint64_t key)
    : Layer(std::move(name), in, Shape{height, width, in[2]}),
      height_(height),
      width_(width),
      channels_(in[2]),
      key_(key),
      random_ok_(in[0] >= height && in[1] >= width) {
  // Keras' centred window of the target's aspect ratio (computed in double as Keras 3
  // does in Python), at least one pixel.
  const int H = in[0], W = in[1];
  int crop_h = static_cast<int>(static_cast<double>(static_cast<int64_t>(W) * height) / width);
  crop_h = std::max(std::min(H, crop_h), 1);
  int crop_w = static_cast<int>(static_cast<double>(static_cast<int64_t>(H) * width) / height);
  crop_w = std::max(std::min(W, crop_w), 1);
  box_h0_ = static_cast<int>(static_cast<double>(H - crop_h) / 2);
  box_w0_ = static_cast<int>(static_cast<double>(W - crop_w) / 2);
  box_is_target_ = crop_h == height && crop_w == width;
  ResizeWeights(crop_h, height, &rows_);
  ResizeWeights(crop_w, width, &cols_);
}

ops::Op RandomCrop::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kRandomCrop;
  op.key = key_;
  op.crop_height = height_;
  op.crop_width = width_;
  return op;
}

void RandomCrop::CropAt(const float* x, int h0, int w0, float* y) const {
  const int64_t W = input_shape()[1], c = channels_, row = static_cast<int64_t>(width_) * c;
  for (int r = 0; r < height_; ++r) {
    std::memcpy(y + r * row, x + ((h0 + r) * W + w0) * c, static_cast<size_t>(row) * sizeof(float));
  }
}

void RandomCrop::CropAtAdjoint(const float* dy, int h0, int w0, float* dx) const {
  const int64_t W = input_shape()[1], c = channels_, row = static_cast<int64_t>(width_) * c;
  std::memset(dx, 0, static_cast<size_t>(input_size()) * sizeof(float));
  for (int r = 0; r < height_; ++r) {
    std::memcpy(dx + ((h0 + r) * W + w0) * c, dy + r * row, static_cast<size_t>(row) * sizeof(float));
  }
}

// TF's ResizeBilinear (half-pixel centres) of the centred window, in its order:
// top = tl + (tr - tl) * xl, bottom = bl + (br - bl) * xl, out = top + (bottom - top) * yl.
void RandomCrop::Resize(const float* x, float* y) const {
  const int64_t W = input_shape()[1], c = channels_;
  const float* box = x + (static_cast<int64_t>(box_h0_) * W + box_w0_) * c;
  for (int r = 0; r < height_; ++r) {
    const Lerp& ly = rows_[static_cast<size_t>(r)];
    const float* top_row = box + ly.lower * W * c;
    const float* bottom_row = box + ly.upper * W * c;
    for (int col = 0; col < width_; ++col, y += c) {
      const Lerp& lx = cols_[static_cast<size_t>(col)];
      const float *tl = top_row + lx.lower * c, *tr = top_row + lx.upper * c;
      const float *bl = bottom_row + lx.lower * c, *br = bottom_row + lx.upper * c;
      const float xl = lx.lerp, yl = ly.lerp;
      for (int64_t k = 0; k < c; ++k) {
        const float top = tl[k] + (tr[k] - tl[k]) * xl;
        const float bottom = bl[k] + (br[k] - bl[k]) * xl;
        y[k] = top + (bottom - top) * yl;
      }
    }
  }
}

void RandomCrop::ResizeAdjoint(const float* dy, float* dx) const {
  const int64_t W = input_shape()[1], c = channels_;
  std::memset(dx, 0, static_cast<size_t>(input_size()) * sizeof(float));
  float* box = dx + (static_cast<int64_t>(box_h0_) * W + box_w0_) * c;
  for (int r = 0; r < height_; ++r) {
    const Lerp& ly = rows_[static_cast<size_t>(r)];
    float* top_row = box + ly.lower * W * c;
    float* bottom_row = box + ly.upper * W * c;
    for (int col = 0; col < width_; ++col, dy += c) {
      const Lerp& lx = cols_[static_cast<size_t>(col)];
      float *tl = top_row + lx.lower * c, *tr = top_row + lx.upper * c;
      float *bl = bottom_row + lx.lower * c, *br = bottom_row + lx.upper * c;
      const float xl = lx.lerp, yl = ly.lerp;
      for (int64_t k = 0; k < c; ++k) {
        const float dtop = dy[k] * (1.0f - yl), dbottom = dy[k] * yl;
        tl[k] += dtop * (1.0f - xl);
        tr[k] += dtop * xl;
        bl[k] += dbottom * (1.0f - xl);
        br[k] += dbottom * xl;
      }
    }
  }
}

const float* RandomCrop::Forward(const float* in, int batch, bool training) {
  const int64_t n_in = input_size(), n_out = output_size();
  float* out = EnsureSize(out_, static_cast<size_t>(batch) * n_out);
  const bool random = training && random_ok_;
  if (random) {
    const Shape& s = input_shape();
    EnsureSize(offsets_, 2 * static_cast<size_t>(batch));
    for (int b = 0; b < batch; ++b) {
      Rng rng = augment::ExampleRng(context(), key_, b);
      // Uniform over the valid offsets, from 53 bits of each draw.
      auto offset = [&rng](int range) {
        const double u = static_cast<double>(rng.Next() >> 11) * (1.0 / 9007199254740992.0);
        return std::min(static_cast<int>(u * range), range - 1);
      };
      const int h0 = offset(s[0] - height_ + 1);
      const int w0 = offset(s[1] - width_ + 1);
      offsets_[2 * static_cast<size_t>(b)] = h0;
      offsets_[2 * static_cast<size_t>(b) + 1] = w0;
      CropAt(in + b * n_in, h0, w0, out + b * n_out);
    }
  } else {
    for (int b = 0; b < batch; ++b) {
      if (box_is_target_) {
        CropAt(in + b * n_in, box_h0_, box_w0_, out + b * n_out);
      } else {
        Resize(in + b * n_in, out + b * n_out);
      }
    }
  }
  if (training) {
    batch_ = batch;
    last_random_ = random;
  }
  return out;
}

const float* RandomCrop::Backward(const float* dout, bool need_din) {
  if (!need_din) return nullptr;
  const int64_t n_in = input_size(), n_out = output_size();
  float* din = EnsureSize(din_, static_cast<size_t>(batch_) * n_in);
  for (int b = 0; b < batch_; ++b) {
    if (last_random_) {
      CropAtAdjoint(dout + b * n_out, h_start(b), w_start(b), din + b * n_in);
    } else if (box_is_target_) {
      CropAtAdjoint(dout + b * n_out, box_h0_, box_w0_, din + b * n_in);
    } else {
      ResizeAdjoint(dout + b * n_out, din + b * n_in);
    }
  }
  return din;
}

}  // namespace ringtrain::nn
