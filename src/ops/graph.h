// A built model as a graph of ops (ops/op.h), in a topological order, with where each
// node's weights sit in the model's flat buffers: what an executor (executor/executor.h)
// runs on a backend. Made by nn::Model::graph(); holds no device pointers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/op.h"

namespace ringtrain::ops {

using Shape = std::vector<int>;  // per example, e.g. {26, 26, 32}

// Node::inputs' index of the model input.
constexpr int kModelInput = -1;

int64_t NumElements(const Shape& shape);

// One weight of a node, in the model's flat parameter buffer (and, when trainable, at
// the same offset in the gradient buffer).
struct ParamRef {
  std::string name;  // "conv2d/kernel"
  std::vector<int64_t> shape;
  size_t offset = 0;  // floats
  size_t count = 0;
  bool trainable = true;  // false: a frozen layer's weight or a moving statistic; no gradient
};

struct Node {
  std::string name;        // "conv2d_1"
  std::string class_name;  // Keras' class: "BatchNormalization"
  Op op;
  std::vector<int> inputs;  // earlier nodes' indices, or kModelInput
  std::vector<Shape> input_shapes;
  Shape output_shape;
  std::vector<ParamRef> params;  // in the layer's weight order (kernel, bias; gamma, beta, moving_mean, ...)
  // Where the node's trainable weights start in the gradient buffer: after its backward
  // pass, gradients [first_trainable, Graph::num_trainable) are final.
  size_t first_trainable = 0;
  // Floats of per-step statistics the node contributes to the all-reduce (BatchNorm's
  // batch mean and variance), at [first_stat, first_stat + num_stats) of the gradient
  // buffer, after every gradient.
  size_t first_stat = 0, num_stats = 0;
  // need_input_grad[k]: the backward pass must produce the gradient of input k (a node
  // feeding it has trainable weights). run_backward: the backward pass runs at all.
  std::vector<bool> need_input_grad;
  bool run_backward = false;
  int consumers = 0;  // inputs of later nodes this node's output feeds
  // Another call of node `shares`' layer (Keras' shared layer), or -1: its params' offsets
  // are relative to `shared_params`, where that node's weights start in the parameter
  // buffer, and the executor gives its weight gradients a buffer of its own, added into
  // that node's after the node's backward pass (calls in graph order).
  int shares = -1;
  size_t shared_params = 0;

  int64_t output_size() const { return NumElements(output_shape); }
  // Some weight of the node is not trainable (a frozen layer, moving statistics).
  bool has_frozen_weights() const;
  // One line for messages: "layer 'bn1' (BatchNormalization)".
  std::string Label() const;
};

struct Graph {
  Shape input_shape;
  std::vector<Node> nodes;  // the last is the output
  size_t num_params = 0;     // floats of weights
  size_t num_trainable = 0;  // a prefix of them: the gradient buffer's
  size_t num_reduced = 0;    // the gradient buffer: num_trainable gradients, then the nodes' statistics
};

}  // namespace ringtrain::ops
