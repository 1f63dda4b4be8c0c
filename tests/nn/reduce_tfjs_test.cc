// The reduce layer (tf.math.reduce_sum / reduce_mean in a model) against TensorFlow.js'
// tf.sum and tf.mean (tests/oracle), the reference for TensorFlow's semantics: the output
// and the input gradient within AllClose's relative 1e-4, for sums and means over one or
// several axes, with and without keepdims. Skips where the oracle is not installed.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cpu_run.h"
#include "nn/layers/reduce.h"
#include "test_util.h"
#include "testing/tfjs_oracle.h"

namespace ringtrain::nn {
namespace {

using nlohmann::json;
using ::ringtrain::testing::AllClose;
using ::ringtrain::testing::RunTfjs;
using ::ringtrain::testing::TfjsTensor;
using ::ringtrain::testing::TfjsValues;


struct Case {
  const char* op;
  json axis;
  bool keepdims;
  std::vector<int64_t> shape;  // per example
};

TEST(ReduceTfjsTest, SumsAndMeansMatchTfjs) {
  RT_REQUIRE_TFJS();
  const Case cases[] = {
      {"sum", {1, 2}, false, {4, 5, 3}},
      {"mean", {-1}, true, {4, 5, 3}},
      {"mean", {1, 3}, false, {3, 4, 5}},
      {"sum", {2}, true, {6, 7}},
      {"mean", {1, 2, 3}, false, {2, 3, 4}},
  };
  const int batch = 3;
  uint64_t seed = 90;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.op) + " over " + c.axis.dump() + (c.keepdims ? " keepdims" : ""));
    json shape = c.shape;
    auto layer = Reduce::Create({{"type", "reduce"}, {"op", c.op}, {"axis", c.axis}, {"keepdims", c.keepdims}}, "r",
                                shape.get<Shape>(), "test");
    ASSERT_TRUE(layer.ok()) << layer.status().ToString();
    testing::CpuRun run(**layer);
    const size_t in = static_cast<size_t>((*layer)->input_size()), out = static_cast<size_t>((*layer)->output_size());
    const std::vector<float> x = testing::RandomVector(batch * in, seed++);
    const std::vector<float> dy = testing::RandomVector(batch * out, seed++);
    std::vector<int64_t> xs = {batch}, ys = {batch};
    xs.insert(xs.end(), c.shape.begin(), c.shape.end());
    for (int d : (*layer)->output_shape()) ys.push_back(d);
    // Every axis reduced without keepdims: one value per example, a [batch] tensor in tfjs.
    if (!c.keepdims && (*layer)->output_size() == 1 && c.axis.size() == c.shape.size()) ys = {batch};
    auto r = RunTfjs({{"kind", "reduce"}, {"op", c.op}, {"axis", c.axis}, {"keepdims", c.keepdims},
                      {"input", TfjsTensor(xs, x)}, {"dy", TfjsTensor(ys, dy)}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const std::vector<float> want = TfjsValues((*r)["output"], (*r)["output"]["shape"].get<std::vector<int64_t>>());
    ASSERT_EQ(want.size(), batch * out) << (*r)["output"]["shape"].dump();
    const float* y = run.Forward(x.data(), batch, /*training=*/true);
    EXPECT_TRUE(AllClose(testing::Slice(y, 0, want.size()), want)) << "output";
    const float* dx = run.Backward(dy.data(), /*need_input_grad=*/true);
    EXPECT_TRUE(AllClose(testing::Slice(dx, 0, batch * in), TfjsValues((*r)["input_grad"], xs))) << "input gradient";
  }
}

}  // namespace
}  // namespace ringtrain::nn
