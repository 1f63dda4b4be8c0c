#include "nn/loss.h"

#include <cmath>
#include <limits>

#include "common/logging.h"

namespace ringtrain::nn {

// Per row, in double: with m = max(x), log softmax(x)_c = x_c - m - log(sum exp(x - m)),
// which cannot overflow and keeps the largest exponent at exactly 0.
LossStats SparseSoftmaxCrossEntropy(const float* logits, const int32_t* labels, int batch, int classes,
                                    float grad_scale, float* grad_logits) {
  LossStats stats;
  int bad_labels = 0;
  for (int i = 0; i < batch; ++i) {
    const float* x = logits + static_cast<size_t>(i) * classes;
    int best = 0;
    for (int c = 1; c < classes; ++c) {
      if (x[c] > x[best]) best = c;  // ties go to the first, like tf.argmax
    }
    const double m = x[best];
    double sum = 0;
    for (int c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(x[c]) - m);
    const double log_sum = std::log(sum);
    const int32_t label = labels[i];
    const bool valid = label >= 0 && label < classes;
    if (valid) {
      stats.loss_sum += log_sum - (static_cast<double>(x[label]) - m);
      if (best == label) ++stats.correct;
    } else {
      // The data pipeline should have rejected this; make it impossible to miss.
      stats.loss_sum = std::numeric_limits<double>::quiet_NaN();
      ++bad_labels;
    }
    if (grad_logits == nullptr) continue;
    float* g = grad_logits + static_cast<size_t>(i) * classes;
    for (int c = 0; c < classes; ++c) {
      const double p = std::exp(static_cast<double>(x[c]) - m - log_sum);
      g[c] = static_cast<float>((p - (c == label ? 1.0 : 0.0)) * grad_scale);
    }
  }
  if (bad_labels > 0) {
    RT_LOG(ERROR) << "SparseSoftmaxCrossEntropy: " << bad_labels << " label(s) outside [0, " << classes
                  << "); the loss is NaN. Check the dataset's labels against the model's output size.";
  }
  return stats;
}

}  // namespace ringtrain::nn

namespace ringtrain::nn {

Status CheckLabels(const int32_t* labels, int batch, int classes) {
  for (int i = 0; i < batch; ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      return InvalidArgumentError("label " + std::to_string(labels[i]) + " of example " + std::to_string(i) +
                                  " is outside [0, " + std::to_string(classes) +
                                  "); the model's last layer must have one unit per class");
    }
  }
  return Status::Ok();
}

}  // namespace ringtrain::nn
