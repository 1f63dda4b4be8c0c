#include "inference/saved_model.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace ringtrain::inference {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// "conv2d/kernel [3, 3, 1, 4], conv2d/bias [4], ..." -- what the other side has, so
// that the user can tell which job or which file is the wrong one.
template <typename Range, typename ShapeOf>
std::string Listing(const Range& items, ShapeOf shape_of) {
  std::string s;
  for (const auto& item : items) {
    if (!s.empty()) s += ", ";
    s += shape_of(item);
  }
  return s.empty() ? "none" : s;
}

}  // namespace

Status LoadWeights(nn::Model* model, const std::map<std::string, checkpoint::Tensor>& tensors,
                   const std::string& source) {
  const auto& infos = model->param_infos();
  const std::string disagree = "the job's model and " + source + " disagree: ";
  std::vector<std::string> problems;
  std::set<std::string> expected;
  for (const auto& p : infos) {
    expected.insert(p.name);
    auto it = tensors.find(p.name);
    if (it == tensors.end()) {
      problems.push_back("the model has parameter '" + p.name + "' " + ShapeText(p.shape) +
                         " but the file has no tensor of that name (the file has: " +
                         Listing(tensors, [](const auto& t) { return t.first + " " + ShapeText(t.second.shape); }) +
                         ")");
    } else if (it->second.shape != p.shape) {
      problems.push_back("tensor '" + p.name + "' has shape " + ShapeText(it->second.shape) + " in the file but " +
                         ShapeText(p.shape) + " in the model");
    } else if (it->second.data.size() != p.count) {
      // DecodeSafetensors ties data to shape; this guards a hand-built map.
      problems.push_back("tensor '" + p.name + "' holds " + std::to_string(it->second.data.size()) +
                         " values but its shape needs " + std::to_string(p.count));
    }
  }
  for (const auto& [name, t] : tensors) {
    if (expected.count(name) == 0) {
      problems.push_back("the file has tensor '" + name + "' " + ShapeText(t.shape) +
                         " that the model does not have (the model's parameters: " +
                         Listing(infos, [](const nn::ParamInfo& p) { return p.name + " " + ShapeText(p.shape); }) +
                         ")");
    }
  }
  if (!problems.empty()) {
    std::string more = problems.size() > 1 ? " (and " + std::to_string(problems.size() - 1) + " more)" : "";
    return FailedPreconditionError(disagree + problems.front() + more +
                                   "; use the job file the model was trained with");
  }
  // Only now, so that a failed load leaves the model as it was.
  for (const auto& p : infos) {
    const auto& data = tensors.at(p.name).data;
    std::memcpy(model->params() + p.offset, data.data(), p.count * sizeof(float));
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<nn::Model>> LoadModel(const config::JobConfig& job, const std::string& weights_path) {
  auto model = nn::Model::FromJson(job.model, job.seed);
  if (!model.ok()) return model.status().WithContext("job: model");
  std::map<std::string, checkpoint::Tensor> tensors;
  Status st = checkpoint::LoadSafetensors(weights_path, &tensors, nullptr);
  if (!st.ok()) {
    if (st.code() == Code::kNotFound) {
      return NotFoundError("model file '" + weights_path +
                           "' does not exist; pass the file the job's save_model or model_checkpoint wrote")
          .About(Subject::kStorage);
    }
    return st.WithContext("cannot load the model file (pass a safetensors file that save_model or "
                          "model_checkpoint wrote)");
  }
  RT_RETURN_IF_ERROR(LoadWeights(model->get(), tensors, weights_path));
  return std::move(model).value();
}

}  // namespace ringtrain::inference
