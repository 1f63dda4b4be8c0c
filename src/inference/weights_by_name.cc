#include "inference/weights_by_name.h"

#include <cstring>
#include <set>

#include "common/file.h"
#include "inference/tensor_checks.h"
#include "modelfiles/weights_file.h"

namespace ringtrain::inference {
namespace {

std::string Join(const std::vector<std::string>& names, size_t most = 8) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < most; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > most) s += ", ... (" + std::to_string(names.size()) + " in all)";
  return s.empty() ? "none" : s;
}

}  // namespace

StatusOr<ByNameReport> LoadWeightsByName(nn::Model* model, const std::map<std::string, checkpoint::Tensor>& tensors,
                                         const std::string& source, bool skip_mismatch) {
  ByNameReport report;
  std::vector<const nn::ParamInfo*> to_load;
  std::set<std::string> names;
  for (const nn::ParamInfo& p : model->param_infos()) {
    names.insert(p.name);
    auto it = tensors.find(p.name);
    if (it == tensors.end()) {
      report.kept.push_back(p.name);
      continue;
    }
    if (it->second.shape != p.shape || it->second.data.size() != p.count) {
      const std::string line = "weight '" + p.name + "' has shape " + ShapeText(p.shape) + " in the model but " +
                               ShapeText(it->second.shape) + " in " + source;
      if (!skip_mismatch) {
        return FailedPreconditionError(line + "; fix the model (or the file), or set \"skip_mismatch\": true to "
                                              "keep that weight's initial value")
            .About(Subject::kStorage);
      }
      report.skipped.push_back("skipped " + line + " (skip_mismatch): it keeps its initial value");
      continue;
    }
    RT_RETURN_IF_ERROR(CheckTensorFinite(
        p.name, it->second, source,
        "the file is corrupt or came from a diverged run: convert the pretrained weights again"));
    to_load.push_back(&p);
    report.loaded.push_back(p.name);
  }
  for (const auto& [name, t] : tensors) {
    if (names.count(name) == 0) report.ignored.push_back(name);
  }
  if (to_load.empty() && report.skipped.empty()) {
    std::vector<std::string> model_names;
    for (const nn::ParamInfo& p : model->param_infos()) model_names.push_back(p.name);
    return FailedPreconditionError("none of the " + std::to_string(tensors.size()) + " tensors in " + source +
                                   " is a weight of the model by name (the file has: " + Join(report.ignored) +
                                   "; the model has: " + Join(model_names) +
                                   "); weights match as \"<layer name>/<weight name>\": name the layers as in the "
                                   "pretrained model")
        .About(Subject::kStorage);
  }
  // Only now, so that a failed load leaves the model as it was.
  for (const nn::ParamInfo* p : to_load) {
    std::memcpy(model->params() + p->offset, tensors.at(p->name).data.data(), p->count * sizeof(float));
  }
  return report;
}

StatusOr<ByNameReport> LoadInitialWeights(nn::Model* model, const std::string& path, bool skip_mismatch,
                                          uint64_t max_bytes) {
  // A Keras or TensorFlow.js file, told apart by its first bytes; safetensors below.
  uint64_t size = 0;
  auto head = ReadFilePrefix(path, 16, &size);
  if (head.ok() && modelfiles::DetectWeightsFormat(*head, size) != modelfiles::WeightsFormat::kSafetensors) {
    std::vector<std::string> names;
    for (const nn::ParamInfo& p : model->param_infos()) names.push_back(p.name);
    auto file = modelfiles::ReadWeightsFile(path, &names, max_bytes);
    if (!file.ok()) return file.status().WithContext("cannot load initial_weights").About(Subject::kStorage);
    return LoadWeightsByName(model, file->tensors, "initial_weights '" + path + "'", skip_mismatch);
  }
  auto bytes = ReadFile(path, max_bytes, "initial_weights");
  if (!bytes.ok()) {
    if (bytes.status().code() == Code::kNotFound) {
      return NotFoundError("initial_weights '" + path +
                           "' does not exist; give the file of the pretrained weights: a Keras .keras or .h5 "
                           "file, a tfjs model.json or a safetensors file")
          .About(Subject::kStorage);
    }
    return bytes.status().WithContext("cannot read initial_weights").About(Subject::kStorage);
  }
  std::map<std::string, checkpoint::Tensor> tensors;
  Status st = checkpoint::DecodeSafetensors(*bytes, &tensors, nullptr);
  if (!st.ok()) {
    return st.WithContext("cannot load initial_weights '" + path + "' (a safetensors file of float32 tensors)")
        .About(Subject::kStorage);
  }
  bytes = std::string();
  return LoadWeightsByName(model, tensors, "initial_weights '" + path + "'", skip_mismatch);
}

std::vector<std::string> DescribeReport(const ByNameReport& r, const std::string& path) {
  std::vector<std::string> lines;
  lines.push_back("initial_weights '" + path + "': loaded " + std::to_string(r.loaded.size()) + " weights by name; " +
                  std::to_string(r.kept.size()) + " keep their initial values (" + Join(r.kept) + "); " +
                  std::to_string(r.ignored.size()) + " tensors of the file are not in the model (" + Join(r.ignored) +
                  ")");
  lines.insert(lines.end(), r.skipped.begin(), r.skipped.end());
  return lines;
}

}  // namespace ringtrain::inference
