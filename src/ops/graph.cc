#include "ops/graph.h"

namespace ringtrain::ops {

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int d : shape) n *= d;
  return n;
}

bool Node::has_frozen_weights() const {
  for (const ParamRef& p : params) {
    if (!p.trainable) return true;
  }
  return false;
}

std::string Node::Label() const { return "layer '" + name + "' (" + class_name + ")"; }

}  // namespace ringtrain::ops
