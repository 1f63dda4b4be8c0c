// The op parity harness: one op of a model run on a backend, forward and backward,
// against the op's CPU kernel (as nn::Model makes it). Parameterised over the devices
// ({cpu, cuda}):
//   - cpu: the op's CPU kernel against a second instance of it;
//   - cuda: the CUDA backend's kernel, skipped with one line saying why where there is
//     no GPU (or the build has no CUDA).
// Checked within a relative 1e-4: the output, every input's gradient, every trainable
// weight's gradient, the reduced statistics the op writes (BatchNorm's batch
// statistics) and the state it updates from their sums (the moving statistics).
//
// A case is a model JSON whose last layer is the op under test, taking the model input
// (once or several times: "inputs": ["input", "input"]); the harness ends the model with
// a Flatten.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "backends/backend.h"

namespace ringtrain::testing {

struct OpCase {
  std::string label;
  nlohmann::json model;  // {"input_shape": [...], "layers": [... the op last]}
  int batch = 4;
  bool training = true;  // false: an inference Forward only
  float step = 0;        // > 0: inputs rounded to multiples of it (ties for max pooling)
  int64_t train_step = 3;  // the StepContext's step (random ops' draws)
};

// Why `device` cannot run here ("" when it can): no CUDA build, no driver, no GPU.
std::string DeviceUnavailable(backends::Device device);

// Runs `c` on `device` and checks it against the CPU kernel (gtest failures name the
// case and the tensor). Call from a test body after SKIP_IF_DEVICE_UNAVAILABLE.
void CheckOp(backends::Device device, const OpCase& c);

class OpParityTest : public ::testing::TestWithParam<backends::Device> {};

// "cpu" / "cuda" as the parameterised tests' suffixes.
std::string DeviceParamName(const ::testing::TestParamInfo<backends::Device>& info);

}  // namespace ringtrain::testing

#define SKIP_IF_DEVICE_UNAVAILABLE(device)                                                  \
  do {                                                                                      \
    const std::string rt_why = ::ringtrain::testing::DeviceUnavailable(device);             \
    if (!rt_why.empty()) GTEST_SKIP() << rt_why;                                            \
  } while (0)

// Instantiates a TEST_P suite deriving OpParityTest on every device.
#define RT_OP_PARITY_ON_EVERY_DEVICE(Suite)                                                           \
  INSTANTIATE_TEST_SUITE_P(Devices, Suite,                                                            \
                           ::testing::Values(::ringtrain::backends::Device::kCpu,                     \
                                             ::ringtrain::backends::Device::kCuda),                   \
                           ::ringtrain::testing::DeviceParamName)
