#include "modelfiles/keras_h5.h"

#include <set>

#include "modelfiles/weight_names.h"

namespace ringtrain::modelfiles {
namespace {

// Keras' load_attributes_from_hdf5_group: the attribute, or its chunks name0, name1, ...
// (written when the list is longer than an HDF5 object header holds).
StatusOr<std::vector<std::string>> ChunkedStrings(const H5File& file, const std::string& path,
                                                  const std::string& name) {
  if (file.HasAttribute(path, name)) return file.ReadStrings(path, name);
  std::vector<std::string> all;
  for (int chunk = 0; file.HasAttribute(path, name + std::to_string(chunk)); ++chunk) {
    RT_ASSIGN_OR_RETURN(std::vector<std::string> part, file.ReadStrings(path, name + std::to_string(chunk)));
    all.insert(all.end(), part.begin(), part.end());
  }
  if (all.empty() && !file.HasAttribute(path, name + "0")) {
    return DataLossError("attribute '" + name + "' of '" + (path.empty() ? "/" : path) + "' is missing");
  }
  return all;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (true) {
    const size_t slash = s.find('/', pos);
    parts.push_back(s.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos));
    if (slash == std::string::npos) return parts;
    pos = slash + 1;
  }
}

}  // namespace

StatusOr<ModelFile> ReadKerasH5(const H5File& file, const std::string& path,
                                const std::vector<std::string>* model_weight_names, uint64_t budget) {
  auto bad = [&](const Status& s) {
    return s.WithContext("cannot read the Keras HDF5 file '" + path + "'").About(Subject::kStorage);
  };
  ModelFile out;
  const std::string root = file.IsGroup("model_weights") ? "model_weights" : "";
  if (root.empty() && !file.HasAttribute("", "layer_names") && !file.HasAttribute("", "layer_names0")) {
    if (file.IsGroup("layers") || file.IsGroup("vars")) {
      return UnimplementedError("'" + path + "' is a Keras 3 weights file (model.save_weights), whose groups name "
                                "layers by class and position only; save the model as .keras (model.save("
                                "\"x.keras\")) and give that file, which carries the model config")
          .About(Subject::kStorage);
    }
    return DataLossError("'" + path + "' is an HDF5 file but not one Keras wrote (no \"layer_names\" attribute); give "
                         "the file of model.save_weights or model.save")
        .About(Subject::kStorage);
  }
  if (file.HasAttribute("", "model_config")) {
    auto config = file.ReadStrings("", "model_config");
    if (!config.ok()) return bad(config.status());
    if (!config->empty()) out.config_json = config->front();
  }
  auto layer_names = ChunkedStrings(file, root, "layer_names");
  if (!layer_names.ok()) return bad(layer_names.status());
  std::set<std::string> model_names;
  if (model_weight_names != nullptr) model_names.insert(model_weight_names->begin(), model_weight_names->end());
  std::vector<NamedTensor> named;
  for (const std::string& layer : *layer_names) {
    const std::string group = root.empty() ? layer : root + "/" + layer;
    if (!file.IsGroup(group)) {
      return bad(DataLossError("layer '" + layer + "' is listed in layer_names but has no group"));
    }
    auto weight_names = ChunkedStrings(file, group, "weight_names");
    if (!weight_names.ok()) return bad(weight_names.status());
    // A plain layer's weights all sit in one scope, its own; a nested model's carry its
    // inner layers' scopes.
    std::set<std::string> scopes;
    for (const std::string& w : *weight_names) {
      std::vector<std::string> parts = Split(StripOutputIndex(w));
      scopes.insert(parts.size() >= 2 ? parts[parts.size() - 2] : layer);
    }
    const bool nested = scopes.size() > 1 || (scopes.size() == 1 && *scopes.begin() != layer);
    for (const std::string& w : *weight_names) {
      auto t = file.ReadFloats(group + "/" + w, &budget);
      if (!t.ok()) return bad(t.status());
      const std::string stripped = StripOutputIndex(w);
      std::vector<std::string> parts = Split(stripped);
      NamedTensor n;
      const std::string own = layer + "/" + parts.back();
      // A layer of the model by its group's name is that layer, whatever its variables say.
      const bool inner_first = nested && model_names.count(own) == 0;
      n.names = inner_first ? std::vector<std::string>{stripped, own} : std::vector<std::string>{own, stripped};
      n.tensor = std::move(t).value();
      named.push_back(std::move(n));
    }
  }
  auto tensors = NameForModel(std::move(named), model_weight_names ? &model_names : nullptr,
                              "the Keras HDF5 file '" + path + "'");
  if (!tensors.ok()) return tensors.status();
  out.tensors = std::move(tensors).value();
  return out;
}

}  // namespace ringtrain::modelfiles
