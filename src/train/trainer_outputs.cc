// Trainer::Create's checks for a model with several inputs or outputs: the data source's
// named arrays (data/source.h ExampleSpec::inputs, ::targets) against the model's inputs
// and outputs by name, and the objective made per output (engine/objective.h ForOutputs).
#include <string>
#include <vector>

#include "nn/layer.h"
#include "train/trainer.h"

namespace ringtrain::train {
namespace {

// '"a", "b"': the names of the model's inputs or outputs, or of a source's arrays.
template <typename Parts>
std::string PartNames(const Parts& parts) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "\"" : ", \"") + p.name + "\"";
  return s;
}

}  // namespace

Status Trainer::FitNamedInputs() const {
  const std::vector<nn::ModelIo>& inputs = model_->inputs();
  for (const auto& [shard, field] : {std::pair<const data::Shard*, const char*>{&train_, "data.train"},
                                     {has_eval_ ? &eval_ : nullptr, "data.eval"}}) {
    if (shard == nullptr) continue;
    const data::ExampleSpec& d = shard->spec();
    if (inputs.size() == 1 && d.inputs.empty()) continue;  // one input, one array: checked by size
    if (d.inputs.size() != inputs.size()) {
      return InvalidArgumentError(std::string(field) + " gives " +
                                  (d.inputs.empty() ? std::string("one unnamed array of examples")
                                                    : std::to_string(d.inputs.size()) + " (" + PartNames(d.inputs) + ")") +
                                  " but the model has " + std::to_string(inputs.size()) + " inputs (" +
                                  PartNames(inputs) + "); name one array per input in \"x\"");
    }
    for (const nn::ModelIo& in : inputs) {
      const data::ExampleSpec::Part* part = nullptr;
      for (const auto& p : d.inputs) {
        if (p.name == in.name) part = &p;
      }
      if (part == nullptr) {
        return InvalidArgumentError(std::string(field) + ".x names no array for the model input \"" + in.name +
                                    "\" (it names " + PartNames(d.inputs) + ")");
      }
      if (part->size != in.size || part->offset != in.offset) {
        return InvalidArgumentError(std::string(field) + ": the examples for input \"" + in.name + "\" are " +
                                    nn::ShapeWithBatch(part->shape) + " but the model input is " +
                                    nn::ShapeWithBatch(in.shape));
      }
    }
  }
  return Status::Ok();
}

Status Trainer::FitOutputs(const config::JobConfig& job) {
  const std::vector<nn::ModelIo>& outputs = model_->outputs();
  std::vector<engine::OutputLayout> layouts;
  for (const auto& [shard, field] : {std::pair<const data::Shard*, const char*>{&train_, "data.train"},
                                     {has_eval_ ? &eval_ : nullptr, "data.eval"}}) {
    if (shard == nullptr) continue;
    const data::ExampleSpec& d = shard->spec();
    if (d.targets.size() != outputs.size()) {
      return InvalidArgumentError(std::string(field) + " gives " +
                                  (d.targets.empty() ? std::string("one unnamed array of labels")
                                                     : std::to_string(d.targets.size()) + " (" + PartNames(d.targets) + ")") +
                                  " but the model has " + std::to_string(outputs.size()) + " outputs (" +
                                  PartNames(outputs) + "); name one array of labels per output in \"y\"");
    }
    std::vector<engine::OutputLayout> mine;
    for (const nn::ModelIo& out : outputs) {
      const data::ExampleSpec::Part* part = nullptr;
      for (const auto& p : d.targets) {
        if (p.name == out.name) part = &p;
      }
      if (part == nullptr) {
        return InvalidArgumentError(std::string(field) + ".y names no labels for the model output \"" + out.name +
                                    "\" (it names " + PartNames(d.targets) + ")");
      }
      engine::OutputLayout l;
      l.name = out.name;
      l.offset = out.offset;
      l.size = out.size;
      l.num_classes = out.shape.back();
      l.label_offset = part->offset;
      // A class index per position of the output, or a target per value (multi-hot,
      // integer regression), as for a model with one output.
      if ((part->size != l.positions() || part->float_targets) && part->size == l.size) l.per_value = true;
      l.float_targets = part->float_targets;
      if (l.float_targets && !l.per_value) {
        return InvalidArgumentError(std::string(field) + ": the labels for output \"" + out.name + "\" are float " +
                                    "targets, " + std::to_string(part->size) + " per example, but the output " +
                                    nn::ShapeWithBatch(out.shape) + " holds " + std::to_string(l.size) +
                                    " values; float targets need one per output value");
      }
      if (part->size != l.label_size()) {
        return InvalidArgumentError(std::string(field) + ": the labels for output \"" + out.name + "\" are " +
                                    nn::ShapeWithBatch(part->shape) + " per example but the output " +
                                    nn::ShapeWithBatch(out.shape) + " takes a class index per position (" +
                                    std::to_string(l.positions()) + ") or a target per value (" +
                                    std::to_string(l.size) + ")");
      }
      if (!l.per_value && l.num_classes >= 2 && part->num_classes > l.num_classes) {
        return InvalidArgumentError(std::string(field) + ": the labels for output \"" + out.name + "\" go up to " +
                                    std::to_string(part->num_classes - 1) + " but the output has " +
                                    std::to_string(l.num_classes) + " units");
      }
      mine.push_back(l);
    }
    if (layouts.empty()) {
      layouts = mine;
      continue;
    }
    for (size_t k = 0; k < mine.size(); ++k) {
      if (mine[k].per_value != layouts[k].per_value || mine[k].label_offset != layouts[k].label_offset ||
          mine[k].float_targets != layouts[k].float_targets) {
        return InvalidArgumentError(std::string(field) + "'s labels for output \"" + mine[k].name +
                                    "\" are not laid out as data.train's; give both the same arrays' shapes");
      }
    }
  }
  auto objective = engine::Objective::ForOutputs(job.loss, job.loss_weights, job.metrics, layouts);
  if (!objective.ok()) return objective.status();
  objective_ = std::make_unique<engine::Objective>(std::move(objective).value());
  RT_RETURN_IF_ERROR(engine_->SetObjective(objective_.get()));
  std::string described;
  for (const engine::OutputLayout& l : layouts) {
    described += (described.empty() ? "" : ", ") + l.name + " (" +
                 (l.float_targets ? "a float target per value" : l.per_value ? "a target per value" : "class indices") + ")";
  }
  RT_LOG(INFO) << "outputs: " << described;
  return Status::Ok();
}

}  // namespace ringtrain::train
