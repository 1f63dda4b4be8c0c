#include "inference/evaluate.h"

#include <algorithm>
#include <cmath>

#include "nn/loss.h"

namespace ringtrain::inference {

StatusOr<EvalResult> EvaluateModel(nn::Model* model, const data::Dataset& data, int batch) {
  if (batch < 1) return InvalidArgumentError("the batch size must be at least 1, not " + std::to_string(batch));
  if (data.size() == 0) return InvalidArgumentError("the dataset is empty; there is nothing to evaluate");
  if (data.example_size != model->input_size()) {
    return InvalidArgumentError("the data's examples have " + std::to_string(data.example_size) +
                                " values but the model's input_shape needs " + std::to_string(model->input_size()));
  }
  const int classes = model->num_classes();
  RT_RETURN_IF_ERROR(nn::CheckLabels(data.labels.data(), static_cast<int>(data.size()), classes));
  double loss_sum = 0;
  int64_t correct = 0;
  for (size_t first = 0; first < data.size(); first += static_cast<size_t>(batch)) {
    const int b = static_cast<int>(std::min<size_t>(static_cast<size_t>(batch), data.size() - first));
    const float* logits = model->Forward(data.images.data() + first * data.example_size, b, /*training=*/false);
    nn::LossStats s = nn::SparseSoftmaxCrossEntropy(logits, data.labels.data() + first, b, classes, 0.0f, nullptr);
    loss_sum += s.loss_sum;
    correct += s.correct;
  }
  EvalResult r;
  r.examples = static_cast<int64_t>(data.size());
  r.loss = loss_sum / static_cast<double>(r.examples);
  r.accuracy = static_cast<double>(correct) / static_cast<double>(r.examples);
  return r;
}

std::vector<Prediction> Predict(nn::Model* model, const float* images, size_t n, int batch) {
  batch = std::max(batch, 1);
  const int classes = model->num_classes();
  const size_t example_size = model->input_size();
  std::vector<Prediction> out;
  out.reserve(n);
  for (size_t first = 0; first < n; first += static_cast<size_t>(batch)) {
    const int b = static_cast<int>(std::min<size_t>(static_cast<size_t>(batch), n - first));
    const float* logits = model->Forward(images + first * example_size, b, /*training=*/false);
    for (int i = 0; i < b; ++i) {
      const float* x = logits + static_cast<size_t>(i) * classes;
      Prediction p;
      p.outputs.assign(x, x + classes);
      for (int c = 1; c < classes; ++c) {
        if (x[c] > x[p.predicted_class]) p.predicted_class = c;  // ties go to the first, as the loss counts them
      }
      // Shifted by the largest logit, so exp cannot overflow and the winner's term is exactly 1.
      const double m = x[p.predicted_class];
      p.probabilities.resize(static_cast<size_t>(classes));
      double sum = 0;
      for (int c = 0; c < classes; ++c) sum += p.probabilities[c] = std::exp(static_cast<double>(x[c]) - m);
      for (double& q : p.probabilities) q /= sum;
      p.probability = p.probabilities[static_cast<size_t>(p.predicted_class)];
      out.push_back(std::move(p));
    }
  }
  return out;
}

}  // namespace ringtrain::inference
