// LoadWeightsByName / LoadInitialWeights: Keras' load_weights(by_name=True,
// skip_mismatch=...) over ringtrain's "<layer>/<weight>" names, and one clear error
// (about storage: exit 6) for each way a file can fail to fit, leaving the model as it was.
#include "inference/weights_by_name.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "testing/temp_dir.h"

namespace ringtrain::inference {
namespace {

std::unique_ptr<nn::Model> Build(int head_units) {
  auto m = nn::Model::FromJson(nlohmann::json{{"input_shape", {6}},
                                              {"layers",
                                               {{{"type", "dense"}, {"units", 5}, {"name", "base"}},
                                                {{"type", "dense"}, {"units", head_units}, {"name", "head"}}}}},
                               7);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

// The model's own weights as a file would hold them, each value + `shift`.
std::map<std::string, checkpoint::Tensor> TensorsOf(const nn::Model& m, float shift) {
  std::map<std::string, checkpoint::Tensor> t;
  for (const auto& p : m.param_infos()) {
    auto& x = t[p.name];
    x.shape = p.shape;
    x.data.assign(m.params() + p.offset, m.params() + p.offset + p.count);
    for (float& v : x.data) v += shift;
  }
  return t;
}

std::vector<float> Weights(const nn::Model& m) { return {m.params(), m.params() + m.num_params()}; }

TEST(WeightsByNameTest, EveryMatchingWeightIsLoaded) {
  auto src = Build(3);
  auto dst = Build(3);
  auto tensors = TensorsOf(*src, 1.0f);
  auto r = LoadWeightsByName(dst.get(), tensors, "f", false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->loaded.size(), 4u);
  EXPECT_TRUE(r->kept.empty() && r->skipped.empty() && r->ignored.empty());
  for (const auto& p : dst->param_infos()) {
    EXPECT_EQ(std::vector<float>(dst->params() + p.offset, dst->params() + p.offset + p.count),
              tensors.at(p.name).data)
        << p.name;
  }
}

TEST(WeightsByNameTest, ANewHeadKeepsItsInitialValuesAndExtraTensorsAreIgnored) {
  auto src = Build(3);
  auto dst = Build(3);
  auto tensors = TensorsOf(*src, 1.0f);
  tensors.erase("head/kernel");
  tensors.erase("head/bias");
  tensors["predictions/kernel"] = {{2, 2}, {1, 2, 3, 4}};  // the pretrained model's own top
  const std::vector<float> before = Weights(*dst);
  auto r = LoadWeightsByName(dst.get(), tensors, "f", false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->loaded, (std::vector<std::string>{"base/kernel", "base/bias"}));
  EXPECT_EQ(r->kept, (std::vector<std::string>{"head/kernel", "head/bias"}));
  EXPECT_EQ(r->ignored, (std::vector<std::string>{"predictions/kernel"}));
  for (const auto& p : dst->param_infos()) {
    if (p.name.rfind("head/", 0) != 0) continue;
    for (size_t i = 0; i < p.count; ++i) EXPECT_EQ(dst->params()[p.offset + i], before[p.offset + i]);
  }
  const auto lines = DescribeReport(*r, "w.safetensors");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("loaded 2 weights"), std::string::npos) << lines[0];
}

TEST(WeightsByNameTest, AShapeMismatchIsAnErrorOrWithSkipMismatchALineEach) {
  auto src = Build(3);
  auto tensors = TensorsOf(*src, 1.0f);
  auto dst = Build(4);  // head/kernel [5, 4], head/bias [4]: both differ
  const std::vector<float> before = Weights(*dst);
  auto r = LoadWeightsByName(dst.get(), tensors, "initial_weights 'w'", false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().subject(), Subject::kStorage);
  EXPECT_NE(r.status().message().find("weight 'head/kernel' has shape [5, 4] in the model but [5, 3] in "
                                      "initial_weights 'w'"),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("skip_mismatch"), std::string::npos);
  EXPECT_EQ(Weights(*dst), before) << "a failed load changed the model";

  r = LoadWeightsByName(dst.get(), tensors, "initial_weights 'w'", true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->loaded.size(), 2u);
  ASSERT_EQ(r->skipped.size(), 2u);
  EXPECT_NE(r->skipped[0].find("head/kernel"), std::string::npos);
  EXPECT_NE(r->skipped[1].find("head/bias"), std::string::npos);
  EXPECT_EQ(DescribeReport(*r, "w").size(), 3u);
}

TEST(WeightsByNameTest, AFileOfAnotherModelOrWithNaNIsRefused) {
  auto dst = Build(3);
  const std::vector<float> before = Weights(*dst);
  std::map<std::string, checkpoint::Tensor> other = {{"conv/kernel", {{1}, {1}}}};
  auto r = LoadWeightsByName(dst.get(), other, "f", true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("none of the 1 tensors in f is a weight of the model"), std::string::npos)
      << r.status().message();
  auto tensors = TensorsOf(*dst, 0.0f);
  tensors["head/bias"].data[1] = std::nanf("");
  r = LoadWeightsByName(dst.get(), tensors, "f", false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_NE(r.status().message().find("tensor 'head/bias' holds NaN at index 1"), std::string::npos);
  EXPECT_EQ(Weights(*dst), before);
}

TEST(WeightsByNameTest, FilesAreReadAndBadFilesRefused) {
  testing::TempDir dir;
  auto src = Build(3);
  auto dst = Build(3);
  std::vector<checkpoint::TensorView> views;
  for (const auto& p : src->param_infos()) views.push_back({p.name, p.shape, src->params() + p.offset});
  const std::string path = dir.path() + "/w.safetensors";
  ASSERT_TRUE(checkpoint::SaveSafetensors(path, views, {}).ok());
  auto r = LoadInitialWeights(dst.get(), path, false, 1 << 20);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Weights(*dst), Weights(*src));

  r = LoadInitialWeights(dst.get(), dir.path() + "/missing.safetensors", false, 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_EQ(r.status().subject(), Subject::kStorage);
  const std::string junk = dir.path() + "/junk.safetensors";
  { std::ofstream(junk) << "not a safetensors file at all"; }
  r = LoadInitialWeights(dst.get(), junk, false, 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().subject(), Subject::kStorage);
  EXPECT_NE(r.status().message().find("cannot load initial_weights"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace ringtrain::inference
