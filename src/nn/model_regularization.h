// The model's weight regularization (Keras' kernel_regularizer / bias_regularizer, the
// layers' ParamSpec::regularizer): the penalty Keras adds to the loss and its gradient.
//
// Keras counts a frozen layer's regularization loss in the loss value but, having no
// trainable variable, it adds no gradient: RegularizationPenalty covers every weight,
// AddRegularizationGradients only the trainable ones.
//
// Threading: as the Model (one thread at a time). Nothing blocks or allocates; nothing fails.
#pragma once

#include <cstddef>

#include "nn/model.h"

namespace ringtrain::nn {

// Whether any weight of the model has an active regularizer.
bool HasRegularization(const Model& model);

// The sum over the model's weights (param_infos() order, in double) of their
// regularizers' penalties on the current params().
double RegularizationPenalty(const Model& model);

// grads()[i] += scale * dPenalty/dw[i] for every trainable regularized weight's
// elements i within [begin, end) (offsets into params()/grads()). Called for ranges of
// grads() that Backward has made final (its on_ready), so that the regularization's
// gradient is in place before that range is all-reduced.
void AddRegularizationGradients(Model* model, size_t begin, size_t end, float scale);

}  // namespace ringtrain::nn
