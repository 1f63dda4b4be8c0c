#include "inference/evaluate.h"

#include <algorithm>
#include <cmath>

#include "nn/loss.h"
#include "nn/metrics.h"
#include "nn/model_regularization.h"

namespace ringtrain::inference {

StatusOr<EvalResult> EvaluateModel(nn::Model* model, const data::Dataset& data, int batch, const nlohmann::json& loss,
                                   const nlohmann::json& metrics) {
  if (batch < 1) return InvalidArgumentError("the batch size must be at least 1, not " + std::to_string(batch));
  if (data.size() == 0) return InvalidArgumentError("the dataset is empty; there is nothing to evaluate");
  if (data.example_size != model->input_size()) {
    return InvalidArgumentError("the data's examples have " + std::to_string(data.example_size) +
                                " values but the model's input_shape needs " + std::to_string(model->input_size()));
  }
  const int outputs = model->num_classes();
  RT_ASSIGN_OR_RETURN(std::unique_ptr<nn::Loss> objective, nn::Loss::FromJson(loss, outputs));
  RT_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<nn::Metric>> measures, nn::MetricsFromJson(metrics, loss, outputs));
  RT_RETURN_IF_ERROR(objective->CheckLabels(data.labels.data(), static_cast<int>(data.size())));
  std::vector<size_t> first;
  size_t num_sums = 0;
  for (const auto& m : measures) {
    first.push_back(num_sums);
    num_sums += static_cast<size_t>(m->num_sums());
  }
  std::vector<double> sums(num_sums, 0.0);
  // Keras' evaluate reports the loss with the regularization losses (constant here).
  const double penalty = nn::HasRegularization(*model) ? nn::RegularizationPenalty(*model) : 0.0;
  double loss_sum = 0;
  for (size_t begin = 0; begin < data.size(); begin += static_cast<size_t>(batch)) {
    const int b = static_cast<int>(std::min<size_t>(static_cast<size_t>(batch), data.size() - begin));
    const float* out = model->Forward(data.images.data() + begin * data.example_size, b, /*training=*/false);
    const int32_t* labels = data.labels.data() + begin;
    loss_sum += objective->Compute(out, labels, b, 0.0f, nullptr);
    if (penalty != 0) loss_sum += static_cast<double>(b) * penalty;
    for (size_t m = 0; m < measures.size(); ++m) measures[m]->Accumulate(out, labels, b, sums.data() + first[m]);
  }
  EvalResult r;
  r.examples = static_cast<int64_t>(data.size());
  r.loss = loss_sum / static_cast<double>(r.examples);
  for (size_t m = 0; m < measures.size(); ++m) {
    r.metrics.emplace_back(measures[m]->name(), measures[m]->Result(sums.data() + first[m]));
    if (measures[m]->name() == "accuracy" || measures[m]->name() == "acc") r.accuracy = r.metrics.back().second;
  }
  return r;
}

StatusOr<EvalResult> EvaluateModel(nn::Model* model, const data::Dataset& data, int batch) {
  return EvaluateModel(model, data, batch,
                       nlohmann::json{{"type", "sparse_categorical_crossentropy"}, {"from_logits", true}},
                       nlohmann::json::array({"accuracy"}));
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
