#include "modelfiles/weight_names.h"

namespace ringtrain::modelfiles {
namespace {

// `name` or its depthwise form, whichever is a model weight; "" when neither is.
std::string InModel(const std::string& name, const std::set<std::string>& model) {
  if (model.count(name)) return name;
  static const std::string kKernel = "/kernel";
  if (name.size() > kKernel.size() && name.compare(name.size() - kKernel.size(), kKernel.size(), kKernel) == 0) {
    std::string depthwise = name.substr(0, name.size() - kKernel.size()) + "/depthwise_kernel";
    if (model.count(depthwise)) return depthwise;
  }
  return "";
}

std::string Match(const std::string& name, const std::set<std::string>& model) {
  std::string form = name;
  while (true) {
    if (std::string hit = InModel(form, model); !hit.empty()) return hit;
    const size_t slash = form.find('/');
    // Keep at least "<layer>/<weight>".
    if (slash == std::string::npos || form.find('/', slash + 1) == std::string::npos) return "";
    form = form.substr(slash + 1);
  }
}

}  // namespace

std::string StripOutputIndex(const std::string& name) {
  const size_t colon = name.rfind(':');
  if (colon == std::string::npos || colon + 1 == name.size()) return name;
  for (size_t i = colon + 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  return name.substr(0, colon);
}

StatusOr<std::map<std::string, checkpoint::Tensor>> NameForModel(std::vector<NamedTensor> tensors,
                                                                  const std::set<std::string>* model_names,
                                                                  const std::string& source) {
  std::map<std::string, checkpoint::Tensor> out;
  std::map<std::string, std::string> first_of;  // model name -> the file's name that took it
  for (NamedTensor& t : tensors) {
    if (t.names.empty()) continue;
    std::string name;
    if (model_names != nullptr) {
      for (const std::string& candidate : t.names) {
        name = Match(candidate, *model_names);
        if (!name.empty()) break;
      }
    }
    if (name.empty()) name = t.names.front();
    auto [it, fresh] = first_of.emplace(name, t.names.front());
    if (!fresh) {
      return FailedPreconditionError("the tensors '" + it->second + "' and '" + t.names.front() + "' of " + source +
                                     " both name the weight '" + name +
                                     "'; give the layers unique names in the model that wrote the file")
          .About(Subject::kStorage);
    }
    out.emplace(std::move(name), std::move(t.tensor));
  }
  return out;
}

}  // namespace ringtrain::modelfiles
