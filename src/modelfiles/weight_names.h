// The names weight files give their tensors, mapped to the model's ParamInfo names
// ("<layer name>/<weight name>").
//
// Files name a weight with more or less scope than the model: tfjs and Keras 2 may write
// "sequential/dense/kernel" or "model/conv2d/kernel" for a layer of a nested model (which
// ringtrain flattens, keeping the inner layers' names), Keras 2 appends ":0" to a variable's
// name, and Keras 3 calls DepthwiseConv2D's weight "kernel" where Keras 2, tfjs and ringtrain
// say "depthwise_kernel". A name is matched, in order, as it is, then with leading scopes
// stripped one at a time (keeping at least "<layer>/<weight>"), each form also tried with
// "kernel" read as "depthwise_kernel"; the first form that is a model weight wins. A name
// that matches nothing keeps its first form, for the by-name loader to report as ignored.
//
// Threading: pure functions.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "common/status.h"

namespace ringtrain::modelfiles {

// A tensor read from a file with the names it may go by, the likeliest first.
struct NamedTensor {
  std::vector<std::string> names;
  checkpoint::Tensor tensor;
};

// "dense/kernel:0" -> "dense/kernel" (a TensorFlow variable's output index).
std::string StripOutputIndex(const std::string& name);

// Names each tensor as above against `model_names` (null: the first form, unmatched).
// FAILED_PRECONDITION, naming `source`, when two tensors take one name. Consumes `tensors`.
StatusOr<std::map<std::string, checkpoint::Tensor>> NameForModel(std::vector<NamedTensor> tensors,
                                                                  const std::set<std::string>* model_names,
                                                                  const std::string& source);

}  // namespace ringtrain::modelfiles
