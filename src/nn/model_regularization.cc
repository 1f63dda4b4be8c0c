#include "nn/model_regularization.h"

#include <algorithm>

namespace ringtrain::nn {

bool HasRegularization(const Model& model) {
  for (const ParamInfo& p : model.param_infos()) {
    if (p.regularizer.active()) return true;
  }
  return false;
}

double RegularizationPenalty(const Model& model) {
  double penalty = 0;
  for (const ParamInfo& p : model.param_infos()) {
    if (p.regularizer.active()) penalty += p.regularizer.Penalty(model.params() + p.offset, p.count);
  }
  return penalty;
}

void AddRegularizationGradients(Model* model, size_t begin, size_t end, float scale) {
  for (const ParamInfo& p : model->param_infos()) {
    if (!p.trainable || !p.regularizer.active()) continue;
    const size_t first = std::max(begin, p.offset);
    const size_t last = std::min(end, p.offset + p.count);
    if (first >= last) continue;
    p.regularizer.AddGradient(model->params() + first, last - first, scale, model->grads() + first);
  }
}

}  // namespace ringtrain::nn
