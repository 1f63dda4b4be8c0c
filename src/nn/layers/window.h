// Sliding-window geometry shared by the convolution and pooling layers (Keras/TensorFlow
// semantics), read from their Keras arguments. Layout is NHWC throughout.
#pragma once

#include <string>

#include "common/status.h"
#include "nn/keras/json_fields.h"
#include "ops/window.h"

namespace ringtrain::nn {

// One spatial axis of a window.
struct Window1D {
  int in = 0;          // input extent
  int k = 0;           // window extent
  int stride = 1;
  int pad_before = 0;  // implicit zeros (conv) or ignored cells (pooling) before index 0
  int out = 0;         // output extent
  int dilation = 1;    // Keras' dilation_rate: the window spans (k - 1) * dilation + 1 cells
};

// 'valid': out = (in - k) / stride + 1, an error when k > in.
// 'same':  out = ceil(in / stride), pad_total = max((out - 1) * stride + k - in, 0),
//          pad_before = pad_total / 2 (TensorFlow puts the odd cell after).
// With dilation > 1 both rules use the dilated extent (k - 1) * dilation + 1 for k.
// `axis` ("height"/"width") and `ctx` only shape the error message.
StatusOr<Window1D> MakeWindow(int in, int k, int stride, Padding padding, const char* what, const char* axis,
                              const std::string& ctx, int dilation = 1);

// The full 2-D geometry of a conv or pooling window over an [H, W, C] input.
struct Window2D {
  Window1D h, w;
  int channels = 0;
  int col_width() const { return h.k * w.k * channels; }  // K of the im2col matrix
  int out_pixels() const { return h.out * w.out; }
};

// The same geometry in the form the ops (and every device's kernels) take.
ops::Window ToOpWindow(const Window2D& g);

}  // namespace ringtrain::nn
