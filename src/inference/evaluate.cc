#include "inference/evaluate.h"

#include <algorithm>
#include <cmath>

#include "nn/layer.h"
#include "nn/losses/loss.h"
#include "nn/metrics/metrics.h"
#include "nn/model_regularization.h"

namespace ringtrain::inference {
namespace {

// evaluate and predict read one label or class per example: a model whose output is a
// map of positions (segmentation), or with several inputs or outputs, is trained and
// evaluated by its job instead.
Status CheckVectorOutput(const nn::Model& model, const char* command) {
  if (model.inputs().size() > 1 || model.outputs().size() > 1) {
    return InvalidArgumentError(std::string(command) + " takes a model with one input and one output; this model has " +
                                std::to_string(model.inputs().size()) + " input(s) and " +
                                std::to_string(model.outputs().size()) + " output(s): evaluate it with its job's "
                                "data.eval (ringtrain launch), which names an array per input and output")
        .About(Subject::kConfig);
  }
  if (model.output_positions() == 1) return Status::Ok();
  return InvalidArgumentError(std::string(command) + " takes a model with one output vector per example; this "
                              "model's output is " + nn::ShapeWithBatch(model.output_shape()) +
                              ", a value per position: evaluate it with its job's "
                              "data.eval (ringtrain launch), which reads per-pixel labels")
      .About(Subject::kConfig);
}

}  // namespace

StatusOr<EvalResult> EvaluateModel(nn::Model* model, const data::Dataset& data, int batch, const nlohmann::json& loss,
                                   const nlohmann::json& metrics) {
  if (batch < 1) return InvalidArgumentError("the batch size must be at least 1, not " + std::to_string(batch));
  if (data.size() == 0) return InvalidArgumentError("the dataset is empty; there is nothing to evaluate");
  if (data.example_size != model->input_size()) {
    return InvalidArgumentError("the data's examples have " + std::to_string(data.example_size) +
                                " values but the model's input_shape needs " + std::to_string(model->input_size()));
  }
  RT_RETURN_IF_ERROR(CheckVectorOutput(*model, "evaluate"));
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

namespace {

// How the model's outputs are read into class probabilities.
enum class OutputKind { kSoftmaxLogits, kProbabilities, kSigmoidLogits, kSigmoidProbabilities, kValues };

OutputKind KindOf(const nn::LossConfig& c) {
  switch (c.kind) {
    case nn::LossKind::kSparseCategoricalCrossentropy:
    case nn::LossKind::kCategoricalCrossentropy:
      return c.from_logits ? OutputKind::kSoftmaxLogits : OutputKind::kProbabilities;
    case nn::LossKind::kBinaryCrossentropy:
      return c.from_logits ? OutputKind::kSigmoidLogits : OutputKind::kSigmoidProbabilities;
    case nn::LossKind::kMeanSquaredError:
    case nn::LossKind::kMeanAbsoluteError:
      break;
  }
  return OutputKind::kValues;
}

int ArgMax(const double* p, int n) {
  int best = 0;
  for (int c = 1; c < n; ++c) {
    if (p[c] > p[best]) best = c;  // ties go to the first, as the accuracy metrics count them
  }
  return best;
}

Prediction Read(const float* x, int outputs, OutputKind kind) {
  Prediction p;
  p.outputs.assign(x, x + outputs);
  if (kind == OutputKind::kValues) {
    p.has_class = false;
    return p;
  }
  std::vector<double>& q = p.probabilities;
  q.resize(static_cast<size_t>(outputs));
  switch (kind) {
    case OutputKind::kSoftmaxLogits: {
      int best = 0;
      for (int c = 1; c < outputs; ++c) {
        if (x[c] > x[best]) best = c;
      }
      // Shifted by the largest logit, so exp cannot overflow and the winner's term is exactly 1.
      const double m = x[best];
      double sum = 0;
      for (int c = 0; c < outputs; ++c) sum += q[c] = std::exp(static_cast<double>(x[c]) - m);
      for (double& v : q) v /= sum;
      break;
    }
    case OutputKind::kSigmoidLogits:
      for (int c = 0; c < outputs; ++c) q[c] = 1.0 / (1.0 + std::exp(-static_cast<double>(x[c])));
      break;
    default:
      for (int c = 0; c < outputs; ++c) q[c] = x[c];
      break;
  }
  const bool binary = kind == OutputKind::kSigmoidLogits || kind == OutputKind::kSigmoidProbabilities;
  if (binary && outputs == 1) q = {1.0 - q[0], q[0]};  // class 1 when p > 0.5, as binary_accuracy counts
  p.predicted_class = binary && outputs == 1 ? (q[1] > 0.5 ? 1 : 0) : ArgMax(q.data(), static_cast<int>(q.size()));
  p.probability = q[static_cast<size_t>(p.predicted_class)];
  return p;
}

std::vector<Prediction> Run(nn::Model* model, const float* images, size_t n, int batch, OutputKind kind) {
  batch = std::max(batch, 1);
  const int outputs = model->num_classes();
  const size_t example_size = model->input_size();
  std::vector<Prediction> out;
  out.reserve(n);
  for (size_t first = 0; first < n; first += static_cast<size_t>(batch)) {
    const int b = static_cast<int>(std::min<size_t>(static_cast<size_t>(batch), n - first));
    const float* y = model->Forward(images + first * example_size, b, /*training=*/false);
    for (int i = 0; i < b; ++i) out.push_back(Read(y + static_cast<size_t>(i) * outputs, outputs, kind));
  }
  return out;
}

}  // namespace

StatusOr<std::vector<Prediction>> Predict(nn::Model* model, const float* images, size_t n, int batch,
                                          const nlohmann::json& loss) {
  RT_RETURN_IF_ERROR(CheckVectorOutput(*model, "predict"));
  RT_ASSIGN_OR_RETURN(std::unique_ptr<nn::Loss> objective, nn::Loss::FromJson(loss, model->num_classes()));
  return Run(model, images, n, batch, KindOf(objective->config()));
}

std::vector<Prediction> Predict(nn::Model* model, const float* images, size_t n, int batch) {
  return Run(model, images, n, batch, OutputKind::kSoftmaxLogits);
}

}  // namespace ringtrain::inference
