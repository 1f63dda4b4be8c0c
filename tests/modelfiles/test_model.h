// The model the modelfiles tests read and write weights for (tests/modelfiles/keras_files.py
// describes the same model on the Keras side), and the values its weights are given.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "checkpoint/safetensors.h"
#include "nn/model.h"

namespace ringtrain::modelfiles {

inline nlohmann::json TestModelJson() {
  return nlohmann::json::parse(R"({"input_shape": [6, 6, 2], "layers": [
    {"type": "Conv2D", "name": "c1", "filters": 4, "kernel_size": 3, "padding": "same"},
    {"type": "DepthwiseConv2D", "name": "dw", "kernel_size": 3, "padding": "same"},
    {"type": "Conv2D", "name": "c2", "filters": 3, "kernel_size": 1},
    {"type": "BatchNormalization", "name": "bn"},
    {"type": "Conv2D", "name": "c3", "filters": 3, "kernel_size": 3, "padding": "same", "use_bias": false},
    {"type": "SeparableConv2D", "name": "sep", "filters": 2, "kernel_size": 3, "padding": "same"},
    {"type": "LayerNormalization", "name": "ln"},
    {"type": "Flatten", "name": "flat"},
    {"type": "Dense", "name": "head", "units": 2}]})");
}

inline std::unique_ptr<nn::Model> BuildTestModel(uint64_t seed = 5) {
  auto m = nn::Model::FromJson(TestModelJson(), seed);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

// Weight k of the ParamInfo list holds (k + 1) * 0.01 + i * 0.001 at flat index i, computed
// in double and rounded once, as keras_files.py's numpy does.
inline float TestValue(size_t k, size_t i) {
  return static_cast<float>(static_cast<double>(k + 1) * 0.01 + static_cast<double>(i) * 0.001);
}

inline std::map<std::string, checkpoint::Tensor> TestTensors(const nn::Model& m) {
  std::map<std::string, checkpoint::Tensor> out;
  for (size_t k = 0; k < m.param_infos().size(); ++k) {
    const nn::ParamInfo& p = m.param_infos()[k];
    checkpoint::Tensor& t = out[p.name];
    t.shape = p.shape;
    for (size_t i = 0; i < p.count; ++i) t.data.push_back(TestValue(k, i));
  }
  return out;
}

inline std::vector<std::string> WeightNames(const nn::Model& m) {
  std::vector<std::string> names;
  for (const nn::ParamInfo& p : m.param_infos()) names.push_back(p.name);
  return names;
}

// The spec keras_files.py reads: the weights' names and shapes in ParamInfo order.
inline void WriteSpec(const nn::Model& m, const std::string& path) {
  nlohmann::json spec = {{"weights", nlohmann::json::array()}};
  for (const nn::ParamInfo& p : m.param_infos()) spec["weights"].push_back({{"name", p.name}, {"shape", p.shape}});
  std::ofstream(path) << spec.dump();
}

inline constexpr const char* kPython = "/usr/bin/python3";

inline bool HaveH5py() {
  static const bool have =
      std::system((std::string(kPython) + " -c 'import h5py, numpy' > /dev/null 2>&1").c_str()) == 0;
  return have;
}

inline std::string KerasFilesScript() {
  return std::string(RINGTRAIN_TEST_SOURCE_DIR) + "/tests/modelfiles/keras_files.py";
}

}  // namespace ringtrain::modelfiles

#define RT_REQUIRE_H5PY() \
  if (!::ringtrain::modelfiles::HaveH5py()) GTEST_SKIP() << "/usr/bin/python3 lacks h5py (Debian: python3-h5py)"
