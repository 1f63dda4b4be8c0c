#include "nn/window.h"

#include <algorithm>

namespace ringtrain::nn {

StatusOr<Window1D> MakeWindow(int in, int k, int stride, Padding padding, const char* what, const char* axis,
                              const std::string& ctx) {
  Window1D w;
  w.in = in;
  w.k = k;
  w.stride = stride;
  if (padding == Padding::kValid) {
    if (k > in) {
      return InvalidArgumentError(ctx + ": the " + what + " " + axis + " " + std::to_string(k) +
                                  " is larger than the input " + axis + " " + std::to_string(in) +
                                  " with padding 'valid'; use a smaller " + what + " or padding 'same'");
    }
    w.out = (in - k) / stride + 1;
    w.pad_before = 0;
  } else {
    w.out = (in + stride - 1) / stride;
    int pad_total = std::max((w.out - 1) * stride + k - in, 0);
    w.pad_before = pad_total / 2;
  }
  return w;
}

kernels::Window ToKernelWindow(const Window2D& g) {
  kernels::Window k;
  k.h = g.h.in, k.w = g.w.in, k.c = g.channels;
  k.kh = g.h.k, k.kw = g.w.k;
  k.stride_h = g.h.stride, k.stride_w = g.w.stride;
  k.pad_top = g.h.pad_before, k.pad_left = g.w.pad_before;
  k.out_h = g.h.out, k.out_w = g.w.out;
  return k;
}

}  // namespace ringtrain::nn
