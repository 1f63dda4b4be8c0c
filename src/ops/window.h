// The geometry of a convolution or pooling window over an [h, w, c] input, padding
// already resolved to explicit cells before the first row and column: what every
// device's convolution and pooling kernels take.
#pragma once

#include <cstddef>

namespace ringtrain::ops {

struct Window {
  int h = 0, w = 0, c = 0;          // input
  int kh = 0, kw = 0;               // window
  int stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_left = 0;
  int out_h = 0, out_w = 0;
  // Keras' dilation_rate: window tap (i, j) reads input cell (oh * stride_h - pad_top +
  // i * dilation_h, ...).
  int dilation_h = 1, dilation_w = 1;
  size_t in_size() const { return static_cast<size_t>(h) * w * c; }
};

}  // namespace ringtrain::ops
