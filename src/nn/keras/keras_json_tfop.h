// Internal to the Keras model JSON translation: TensorFlow and Keras ops called on
// Keras tensors in a Functional model, mapped to the layers that compute them.
//
// tf.keras 2's TFOpLambda layers:
//
// In a tf.keras 2 Functional model, a TensorFlow function called on Keras tensors
// (tf.math.add(a, b), a + b, tf.concat([a, b], -1), tf.reshape(x, [-1, 7, 7, 4])) is
// saved as a layer {"class_name": "TFOpLambda", "config": {"name": "tf.math.add",
// "function": "math.add", ...}} whose one inbound node keeps the call's structure
// (tf_keras/engine/node.py Node.serialize, TFOpLambda's
// _preserve_input_structure_in_config): the first argument is [layer, node, tensor,
// kwargs] for a tensor, a list of those for a list of tensors, and
// ["_CONSTANT_VALUE", -1, value, kwargs] for a constant; kwargs holds the other
// arguments, tensors as [layer, node, tensor] and constants as themselves.
//
// The ops that have a ringtrain layer are mapped to it when every operand is a
// tensor of the graph: math.add and __operators__.add -> Add, math.multiply ->
// Multiply, concat -> Concatenate (axis), reshape -> Reshape (a shape whose batch
// entry is -1). Every other op, and a constant operand, is refused naming it.
//
// Errors: INVALID_ARGUMENT "model.keras_json: layer 'tf.math.add' (TFOpLambda): ...".
// Pure functions.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/keras/keras_json_layer.h"

namespace ringtrain::nn::keras_json {

struct OpLayer {
  std::vector<TensorRef> inputs;  // the operands, in the op's order
  nlohmann::json layer;           // the compact layer's "type" and arguments (no name, trainable, inputs)
};

StatusOr<OpLayer> TranslateTfOpLambda(const Entry& e);

// Keras 3's operations in a Functional model (x + y, keras.ops.concatenate(...)):
// entries {"module": "keras.src.ops.numpy", "class_name": "Add", "config": {"name":
// "add"}, "registered_name": "Add", "inbound_nodes": [{"args": [x1, x2], "kwargs": {}}]}
// (keras/src/ops/numpy.py; the config is the operation's constructor arguments). Add
// -> Add, Multiply -> Multiply, Concatenate(axis) -> Concatenate, Reshape(newshape
// [-1, ...]) -> Reshape, when every operand is a tensor; the rest refused naming
// keras.ops.<op>.
bool IsKeras3Op(const Entry& e);
StatusOr<OpLayer> TranslateKeras3Op(const Entry& e);

}  // namespace ringtrain::nn::keras_json
