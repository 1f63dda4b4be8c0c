#include "nn/layers/window.h"

#include <algorithm>
#include <cstdint>

namespace ringtrain::nn {

StatusOr<Window1D> MakeWindow(int in, int k, int stride, Padding padding, const char* what, const char* axis,
                              const std::string& ctx, int dilation) {
  Window1D w;
  w.in = in;
  w.k = k;
  w.stride = stride;
  w.dilation = dilation;
  const int64_t span = static_cast<int64_t>(k - 1) * dilation + 1;  // k itself without dilation
  if (padding == Padding::kValid) {
    if (span > in) {
      return InvalidArgumentError(ctx + ": the " + what + " " + axis + " " + std::to_string(k) +
                                  (dilation > 1 ? " (spanning " + std::to_string(span) + " cells with dilation_rate " +
                                                      std::to_string(dilation) + ")"
                                                : std::string()) +
                                  " is larger than the input " + axis + " " + std::to_string(in) +
                                  " with padding 'valid'; use a smaller " + what + " or padding 'same'");
    }
    w.out = static_cast<int>((in - span) / stride + 1);
    w.pad_before = 0;
  } else {
    w.out = (in + stride - 1) / stride;
    const int64_t pad_total = std::max<int64_t>(static_cast<int64_t>(w.out - 1) * stride + span - in, 0);
    w.pad_before = static_cast<int>(pad_total / 2);
  }
  return w;
}

ops::Window ToOpWindow(const Window2D& g) {
  ops::Window k;
  k.h = g.h.in, k.w = g.w.in, k.c = g.channels;
  k.kh = g.h.k, k.kw = g.w.k;
  k.stride_h = g.h.stride, k.stride_w = g.w.stride;
  k.pad_top = g.h.pad_before, k.pad_left = g.w.pad_before;
  k.out_h = g.h.out, k.out_w = g.w.out;
  k.dilation_h = g.h.dilation, k.dilation_w = g.w.dilation;
  return k;
}

}  // namespace ringtrain::nn
