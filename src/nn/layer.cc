#include "nn/layer.h"

namespace ringtrain::nn {

std::string ShapeToString(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string ShapeWithBatch(const Shape& shape) {
  std::string s = "(None";
  for (int d : shape) s += ", " + std::to_string(d);
  return s + ")";
}

}  // namespace ringtrain::nn
