// A plain description of one layer of a built Model: what another backend (the GPU
// engine) needs to run the same layer on its own buffers. Produced by Model::layers().
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/kernels.h"

namespace ringtrain::nn {

struct LayerDesc {
  enum class Kind {
    kView,       // reshape / flatten: the same bytes under another shape; no work
    kConv2D,     // NHWC input, HWIO kernel [kh, kw, c, filters], bias [filters]
    kMaxPool2D,  // NHWC; ties go to the first cell in row-major window order; padding cells never win
    kDense,      // flat input [in], kernel [in, units] (row-major), bias [units]
    kOther,      // any other layer: the GPU engine does not run it (yet)
  };
  Kind kind = Kind::kView;
  std::string name;            // "conv2d", "dense_1"
  std::string class_name;      // Keras' class name, for messages: "BatchNormalization"
  std::vector<int> input_shape;   // per example
  std::vector<int> output_shape;  // per example
  kernels::Window window;      // conv and pooling geometry (padding resolved)
  int units = 0;               // dense: units; conv: filters
  bool relu = false;           // conv, dense: activation "relu" (else linear)
  bool use_bias = false;       // conv, dense
  // Offsets in floats into Model::params() / grads(); kernel_offset is valid for conv and
  // dense, bias_offset when use_bias.
  size_t kernel_offset = 0, bias_offset = 0;
  // Backward of this layer must produce the input gradient (some earlier layer has
  // parameters); the first layers of a model skip that work.
  bool need_input_grad = false;
  // The layers whose outputs this one takes (indices into Model::layers(); -1 is the
  // model input). A sequential model's layer i takes {i - 1}.
  std::vector<int> inputs;
  // Some weight of the layer is not trainable (a frozen layer, moving statistics).
  bool frozen = false;
};

}  // namespace ringtrain::nn
