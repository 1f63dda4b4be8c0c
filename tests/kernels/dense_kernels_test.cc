#include <algorithm>

#include "kernel_test_util.h"

namespace ringtrain::kernels {
namespace {

struct DenseShape {
  int batch, in, units;
};

// Shapes that hit every tile edge: full tiles, row/column remainders, tiny and wide.
const DenseShape kShapes[] = {{64, 2000, 128}, {64, 541, 64}, {7, 33, 10}, {1, 1, 1}, {13, 300, 17},
                              {16, 16, 16},     {65, 70, 130},  {3, 5, 200}};

class DenseKernels : public KernelTest {};

TEST_P(DenseKernels, ForwardMatchesReference) {
  for (const DenseShape& s : kShapes) {
    auto x = Random(static_cast<size_t>(s.batch) * s.in, 1);
    auto w = Random(static_cast<size_t>(s.in) * s.units, 2, -0.1f, 0.1f);
    auto b = Random(static_cast<size_t>(s.units), 3);
    for (bool relu : {false, true}) {
      std::vector<float> y(static_cast<size_t>(s.batch) * s.units, 99.0f);
      DenseForward(x.data(), s.batch, s.in, w.data(), s.units, b.data(), relu, y.data());
      std::vector<double> want(y.size());
      for (int m = 0; m < s.batch; ++m) {
        for (int u = 0; u < s.units; ++u) {
          double acc = 0;
          for (int k = 0; k < s.in; ++k) acc += static_cast<double>(x[m * s.in + k]) * w[static_cast<size_t>(k) * s.units + u];
          acc += b[u];
          want[static_cast<size_t>(m) * s.units + u] = relu ? std::max(acc, 0.0) : acc;
        }
      }
      ExpectClose(y, want, 1e-5, "forward " + std::to_string(s.batch) + "x" + std::to_string(s.in) + "x" +
                                     std::to_string(s.units));
    }
  }
}

TEST_P(DenseKernels, WeightGradMatchesReference) {
  for (const DenseShape& s : kShapes) {
    auto x = Random(static_cast<size_t>(s.batch) * s.in, 4);
    auto d = Random(static_cast<size_t>(s.batch) * s.units, 5);
    std::vector<float> dw(static_cast<size_t>(s.in) * s.units, 99.0f);
    DenseWeightGrad(x.data(), d.data(), s.batch, s.in, s.units, dw.data());
    std::vector<double> want(dw.size());
    for (int k = 0; k < s.in; ++k) {
      for (int u = 0; u < s.units; ++u) {
        double acc = 0;
        for (int m = 0; m < s.batch; ++m) acc += static_cast<double>(x[m * s.in + k]) * d[m * s.units + u];
        want[static_cast<size_t>(k) * s.units + u] = acc;
      }
    }
    ExpectClose(dw, want, 1e-5, "weight grad " + std::to_string(s.in));
  }
}

TEST_P(DenseKernels, InputGradMatchesReference) {
  for (const DenseShape& s : kShapes) {
    auto d = Random(static_cast<size_t>(s.batch) * s.units, 6);
    auto w = Random(static_cast<size_t>(s.in) * s.units, 7);
    std::vector<float> dx(static_cast<size_t>(s.batch) * s.in, 99.0f);
    std::vector<float> scratch(DenseInputGradScratch(s.batch, s.units));
    DenseInputGrad(d.data(), w.data(), s.batch, s.in, s.units, dx.data(), scratch.data());
    std::vector<double> want(dx.size());
    for (int m = 0; m < s.batch; ++m) {
      for (int k = 0; k < s.in; ++k) {
        double acc = 0;
        for (int u = 0; u < s.units; ++u) acc += static_cast<double>(d[m * s.units + u]) * w[static_cast<size_t>(k) * s.units + u];
        want[static_cast<size_t>(m) * s.in + k] = acc;
      }
    }
    ExpectClose(dx, want, 1e-5, "input grad " + std::to_string(s.batch) + "x" + std::to_string(s.in));
  }
}

// The bits must not depend on the thread count (tests above run with 1 and 3).
TEST_P(DenseKernels, SameBitsForAnyThreadCount) {
  const DenseShape s{64, 1000, 100};
  auto x = Random(static_cast<size_t>(s.batch) * s.in, 8);
  auto w = Random(static_cast<size_t>(s.in) * s.units, 9);
  auto d = Random(static_cast<size_t>(s.batch) * s.units, 10);
  auto run = [&] {
    std::vector<float> y(static_cast<size_t>(s.batch) * s.units), dw(w.size()), dx(x.size());
    std::vector<float> scratch(DenseInputGradScratch(s.batch, s.units));
    DenseForward(x.data(), s.batch, s.in, w.data(), s.units, nullptr, true, y.data());
    DenseWeightGrad(x.data(), d.data(), s.batch, s.in, s.units, dw.data());
    DenseInputGrad(d.data(), w.data(), s.batch, s.in, s.units, dx.data(), scratch.data());
    y.insert(y.end(), dw.begin(), dw.end());
    y.insert(y.end(), dx.begin(), dx.end());
    return y;
  };
  const std::vector<float> here = run();
  SetNumThreads(std::get<1>(GetParam()) == 1 ? 2 : 1);
  EXPECT_EQ(here, run());
}

INSTANTIATE_TEST_SUITE_P(Impl, DenseKernels, RINGTRAIN_KERNEL_PARAMS);

}  // namespace
}  // namespace ringtrain::kernels
