#include "inference/saved_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "common/file.h"
#include "data/footprint.h"
#include "inference/tensor_checks.h"
#include "modelfiles/weights_file.h"
#include "nn/model_memory.h"

namespace ringtrain::inference {
namespace {

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

namespace {

// Weights that are NaN or infinite give NaN for every example: refuse them.
Status CheckFinite(const std::map<std::string, checkpoint::Tensor>& tensors, const std::string& source) {
  for (const auto& [name, t] : tensors) {
    RT_RETURN_IF_ERROR(CheckTensorFinite(
        name, t, source, "the training run diverged or the file is corrupt: use an earlier checkpoint"));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<nn::Model>> LoadModel(const config::JobConfig& job, const std::string& weights_path) {
  // The file can be no larger than the model's weights and the format's largest header,
  // so nothing longer (nor /dev/zero, a FIFO or a directory) is ever read.
  auto footprint = nn::ModelFootprint::FromJson(job.model);
  if (!footprint.ok()) return footprint.status().WithContext("job: model").About(Subject::kConfig);
  const uint64_t max_bytes = SatAdd(SatMul(footprint->num_params(), sizeof(float)), 8 + checkpoint::kMaxHeaderBytes);
  // A Keras or TensorFlow.js file (told apart by its first bytes) is read by name against the
  // built model. Keras' files may also hold an optimizer's slots (two per weight for Adam):
  // their bound allows for them.
  uint64_t size = 0;
  auto head = ReadFilePrefix(weights_path, 16, &size);
  if (head.ok() && modelfiles::DetectWeightsFormat(*head, size) != modelfiles::WeightsFormat::kSafetensors) {
    auto model = nn::Model::FromJson(job.model, job.seed);
    if (!model.ok()) return model.status().WithContext("job: model").About(Subject::kConfig);
    std::vector<std::string> names;
    for (const nn::ParamInfo& p : (*model)->param_infos()) names.push_back(p.name);
    const uint64_t keras_max =
        SatAdd(SatMul(footprint->num_params(), 4 * sizeof(float)), 8 + checkpoint::kMaxHeaderBytes);
    auto file = modelfiles::ReadWeightsFile(weights_path, &names, keras_max);
    if (!file.ok()) return file.status().WithContext("cannot load the model file").About(Subject::kStorage);
    RT_RETURN_IF_ERROR(CheckFinite(file->tensors, "model file '" + weights_path + "'"));
    if (Status s = LoadWeights(model->get(), file->tensors, weights_path); !s.ok()) return s.About(Subject::kStorage);
    return std::move(model).value();
  }
  auto bytes = ReadFile(weights_path, max_bytes, "the model file of this job's model");
  if (!bytes.ok()) {
    if (bytes.status().code() == Code::kNotFound) {
      return NotFoundError("model file '" + weights_path +
                           "' does not exist; pass the file the job's save_model or model_checkpoint wrote")
          .About(Subject::kStorage);
    }
    return bytes.status().WithContext("cannot load the model file").About(Subject::kStorage);
  }
  std::map<std::string, checkpoint::Tensor> tensors;
  Status st = checkpoint::DecodeSafetensors(*bytes, &tensors, nullptr);
  if (!st.ok()) {
    return st.WithContext("cannot load the model file '" + weights_path +
                          "' (pass a safetensors file that save_model or model_checkpoint wrote)")
        .About(Subject::kStorage);
  }
  bytes = std::string();  // release the file before the model is allocated
  RT_RETURN_IF_ERROR(CheckFinite(tensors, "model file '" + weights_path + "'"));
  auto model = nn::Model::FromJson(job.model, job.seed);
  if (!model.ok()) return model.status().WithContext("job: model").About(Subject::kConfig);
  if (Status s = LoadWeights(model->get(), tensors, weights_path); !s.ok()) return s.About(Subject::kStorage);
  return std::move(model).value();
}

Status CheckInferenceMemory(const config::JobConfig& job, const nlohmann::json& source, const std::string& field,
                            int batch, const std::string& batch_field, const MemoryBound& bound) {
  auto model = nn::ModelFootprint::FromJson(job.model);
  if (!model.ok()) return model.status().WithContext("job: model").About(Subject::kConfig);
  const uint64_t b = static_cast<uint64_t>(batch);
  RT_RETURN_IF_ERROR(model->CheckBatch(b, batch_field));
  std::vector<MemoryUse> uses;
  // The file's bytes, its decoded tensors, and the model's weights and gradients.
  uses.push_back({"the model's weights", SatMul(model->num_params(), 4 * sizeof(float)),
                  "the model's " + std::to_string(model->num_params()) + " parameters (the most in " +
                      model->largest_layer() + ")",
                  "make the model smaller (fewer units or filters)"});
  uses.push_back({"activations", model->ActivationBytes(b, /*training=*/false),
                  batch_field + " " + std::to_string(batch), "lower " + batch_field});
  if (data::IsDecodingFormat(source)) {
    // Decoded whole (data::Materialize): as a memory cache of the split. Its size is known
    // here only when the entry gives "count".
    data::PipelineOptions whole;
    whole.cache = data::PipelineOptions::Cache::kMemory;
    uses.push_back(data::EstimatePipeline(field, whole, batch, model->input_size(),
                                          data::ExamplesFromCount(source, data::ShardPolicy::kOff, 1)));
  } else {
    auto data = data::EstimateShard(source, job.base_dir, data::ShardPolicy::kOff, 0, 1, field);
    if (!data.ok()) return data.status();
    uses.push_back(std::move(data).value());
  }
  return CheckMemory(uses, bound);
}

}  // namespace ringtrain::inference
