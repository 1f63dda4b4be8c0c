// Loss::FromJson: the job's "loss" in Keras' vocabulary.
#include <string>
#include <vector>

#include "nn/keras/json_fields.h"
#include "nn/losses/loss.h"

namespace ringtrain::nn {
namespace {

struct LossName {
  const char* name;
  LossKind kind;
};

// Keras' function names, aliases and class names (tf.keras 2 also knew MSE and MAE).
constexpr LossName kLossNames[] = {
    {"sparse_categorical_crossentropy", LossKind::kSparseCategoricalCrossentropy},
    {"SparseCategoricalCrossentropy", LossKind::kSparseCategoricalCrossentropy},
    {"categorical_crossentropy", LossKind::kCategoricalCrossentropy},
    {"CategoricalCrossentropy", LossKind::kCategoricalCrossentropy},
    {"binary_crossentropy", LossKind::kBinaryCrossentropy},
    {"BinaryCrossentropy", LossKind::kBinaryCrossentropy},
    {"mean_squared_error", LossKind::kMeanSquaredError},
    {"mse", LossKind::kMeanSquaredError},
    {"MSE", LossKind::kMeanSquaredError},
    {"MeanSquaredError", LossKind::kMeanSquaredError},
    {"mean_absolute_error", LossKind::kMeanAbsoluteError},
    {"mae", LossKind::kMeanAbsoluteError},
    {"MAE", LossKind::kMeanAbsoluteError},
    {"MeanAbsoluteError", LossKind::kMeanAbsoluteError},
};

Status Bad(const std::string& m) { return InvalidArgumentError("loss: " + m); }

// {"class_name": "X", "config": {...}} (Keras 2 and 3, with Keras 3's "module" and
// "registered_name") -> {"type": "X", ...config}.
StatusOr<nlohmann::json> Flatten(const nlohmann::json& loss) {
  if (loss.is_string()) return nlohmann::json{{"type", loss}};
  if (!loss.is_object()) {
    return Bad("must be a loss name such as \"sparse_categorical_crossentropy\" or an object {\"type\": ...}, got " +
               BriefDump(loss));
  }
  if (!loss.contains("class_name")) return loss;
  RT_RETURN_IF_ERROR(CheckKnownFields(loss, {"class_name", "config", "module", "registered_name"}, "loss"));
  nlohmann::json args = nlohmann::json::object();
  if (auto config = loss.find("config"); config != loss.end() && !config->is_null()) {
    if (!config->is_object()) return Bad("'config' must be an object, got " + BriefDump(*config));
    if (config->contains("type")) return Bad("'config' has an unknown field 'type'");
    args = *config;
  }
  args["type"] = loss["class_name"];
  return args;
}

}  // namespace

StatusOr<std::unique_ptr<Loss>> Loss::FromJson(const nlohmann::json& loss, int num_outputs) {
  auto parsed = [&]() -> StatusOr<LossConfig> {
    RT_ASSIGN_OR_RETURN(nlohmann::json args, Flatten(loss));
    auto type = args.find("type");
    if (type == args.end() || !type->is_string()) {
      return Bad("'type' must name the loss, e.g. \"sparse_categorical_crossentropy\", got " +
                 (type == args.end() ? std::string("nothing") : BriefDump(*type)));
    }
    LossConfig c;
    c.num_outputs = num_outputs;
    bool known = false;
    for (const LossName& n : kLossNames) {
      if (*type == n.name) {
        c.kind = n.kind;
        known = true;
      }
    }
    if (!known) {
      return Bad("unknown 'type' " + BriefDump(*type) +
                 " (supported: sparse_categorical_crossentropy, categorical_crossentropy, binary_crossentropy, "
                 "mean_squared_error or mse, mean_absolute_error or mae, or Keras' class names)");
    }
    const std::string ctx = "loss (" + type->get<std::string>() + ")";
    switch (c.kind) {
      case LossKind::kSparseCategoricalCrossentropy:
        RT_RETURN_IF_ERROR(CheckKnownFields(
            args, {"type", "from_logits", "axis", "ignore_class", "reduction", "name", "dtype"}, ctx));
        break;
      case LossKind::kCategoricalCrossentropy:
      case LossKind::kBinaryCrossentropy:
        RT_RETURN_IF_ERROR(CheckKnownFields(
            args, {"type", "from_logits", "label_smoothing", "axis", "reduction", "name", "dtype"}, ctx));
        break;
      case LossKind::kMeanSquaredError:
      case LossKind::kMeanAbsoluteError:
        RT_RETURN_IF_ERROR(CheckKnownFields(args, {"type", "reduction", "name", "dtype"}, ctx));
        break;
    }
    RT_ASSIGN_OR_RETURN(c.from_logits, GetBool(args, "from_logits", false, ctx));
    RT_ASSIGN_OR_RETURN(c.label_smoothing, GetNumber(args, "label_smoothing", 0.0, 0, false, 1, false, ctx));
    if (auto axis = args.find("axis"); axis != args.end() && !(axis->is_number_integer() && *axis == -1)) {
      return InvalidArgumentError(ctx + ": 'axis' must be -1 (the outputs' last axis), got " + BriefDump(*axis));
    }
    if (auto r = args.find("reduction"); r != args.end() && !r->is_null() && *r != "sum_over_batch_size" &&
                                         *r != "auto") {
      return InvalidArgumentError(ctx + ": 'reduction' must be \"sum_over_batch_size\" (the loss is averaged over "
                                        "the global batch), got " + BriefDump(*r));
    }
    if (auto ic = args.find("ignore_class"); ic != args.end() && !ic->is_null()) {
      return InvalidArgumentError(ctx + ": 'ignore_class' is not supported (leave it out or null), got " +
                                  BriefDump(*ic));
    }
    if (auto name = args.find("name"); name != args.end() && !name->is_string()) {
      return InvalidArgumentError(ctx + ": 'name' must be a string, got " + BriefDump(*name));
    }
    if (auto dtype = args.find("dtype"); dtype != args.end() && !dtype->is_null() && *dtype != "float32") {
      return InvalidArgumentError(ctx + ": 'dtype' must be \"float32\" or null, got " + BriefDump(*dtype));
    }
    return c;
  }();
  if (!parsed.ok()) return parsed.status().About(Subject::kConfig);
  return Create(*parsed);
}

}  // namespace ringtrain::nn
