#include <algorithm>

#include "kernel_test_util.h"

namespace ringtrain::kernels {
namespace {

Window PoolWindow(int h, int w, int c, int k, int s, bool same) { return MakeTestWindow(h, w, c, k, k, s, s, same); }

class PoolKernels : public KernelTest {};

TEST_P(PoolKernels, ForwardAndBackwardMatchReference) {
  const int batch = 2;
  for (const Window& g : {PoolWindow(26, 26, 32, 2, 2, false), PoolWindow(7, 9, 20, 3, 2, true),
                          PoolWindow(5, 5, 3, 3, 1, false)}) {
    // Few distinct values, so windows have ties: the first cell must win.
    auto x = Random(batch * g.in_size(), 21, 0.0f, 4.0f);
    for (float& v : x) v = std::floor(v);
    const size_t outputs = static_cast<size_t>(batch) * g.out_h * g.out_w * g.c;
    std::vector<float> y(outputs, 99.0f);
    MaxPoolForward(g, x.data(), batch, y.data());
    auto dy = Random(outputs, 22);
    std::vector<float> dx(x.size(), 99.0f);
    MaxPoolBackward(g, x.data(), y.data(), dy.data(), batch, dx.data());
    std::vector<double> want_y(outputs), want_dx(x.size(), 0.0);
    size_t o = 0;
    for (int n = 0; n < batch; ++n) {
      for (int oh = 0; oh < g.out_h; ++oh) {
        for (int ow = 0; ow < g.out_w; ++ow) {
          for (int c = 0; c < g.c; ++c, ++o) {
            double best = -1e30;
            size_t at = 0;
            for (int i = 0; i < g.kh; ++i) {
              for (int j = 0; j < g.kw; ++j) {
                const int ih = oh * g.stride_h - g.pad_top + i, iw = ow * g.stride_w - g.pad_left + j;
                if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
                const size_t cell = ((static_cast<size_t>(n) * g.h + ih) * g.w + iw) * g.c + c;
                if (x[cell] > best) best = x[cell], at = cell;
              }
            }
            want_y[o] = best;
            want_dx[at] += dy[o];
          }
        }
      }
    }
    ExpectClose(y, want_y, 0, "pool forward");
    ExpectClose(dx, want_dx, 1e-6, "pool backward");
  }
}

INSTANTIATE_TEST_SUITE_P(Impl, PoolKernels, RINGTRAIN_KERNEL_PARAMS);

}  // namespace
}  // namespace ringtrain::kernels
