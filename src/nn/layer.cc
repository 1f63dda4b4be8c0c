#include "nn/layer.h"

namespace ringtrain::nn {

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int d : shape) n *= d;
  return n;
}

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
