#include "nn/model_summary.h"

#include <algorithm>
#include <cstdio>

#include "nn/layer.h"

namespace ringtrain::nn {
namespace {

std::string WithCommas(uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

// `s` padded with spaces to `width`, and at least one space after it.
std::string Pad(std::string s, size_t width) {
  if (s.size() + 1 < width) s.append(width - s.size(), ' ');
  else s += ' ';
  return s;
}

nlohmann::json ShapeJson(const std::vector<int>& shape) {
  nlohmann::json j = nlohmann::json::array({nullptr});
  for (int d : shape) j.push_back(d);
  return j;
}

std::string Total(const char* what, uint64_t n) {
  return std::string(what) + WithCommas(n) + " (" + ReadableFloatBytes(n) + ")\n";
}

}  // namespace

std::string ReadableFloatBytes(uint64_t floats) {
  static const char* const kUnits[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  double size = static_cast<double>(floats) * 4.0;
  size_t unit = 0;
  while (size >= 1024.0 && unit + 1 < sizeof(kUnits) / sizeof(kUnits[0])) {
    size /= 1024.0;
    ++unit;
  }
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.2f %s", size, kUnits[unit]);
  return buf;
}

ModelSummary Summarize(const Model& model, const std::string& name) {
  ModelSummary s;
  s.sequential = model.sequential();
  s.name = !name.empty() ? name : s.sequential ? "sequential" : "functional";
  s.input_name = model.input_name();
  s.input_shape = model.input_shape();
  s.inputs = model.inputs();
  for (const ModelIo& out : model.outputs()) s.outputs.push_back(out.name);
  const ops::Graph& graph = model.graph();
  std::vector<size_t> row_of(graph.nodes.size(), 0);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ops::Node& node = graph.nodes[i];
    if (model.internal_node(i)) continue;  // the inputs' rows come first; the outputs' row is the model's
    if (node.shares >= 0) {
      // Another call of a shared layer: one row per layer, as Keras prints it, connected to
      // what each call takes.
      SummaryRow& root = s.layers[row_of[static_cast<size_t>(node.shares)]];
      for (int k : node.inputs) root.connected_to.push_back(k == ops::kModelInput ? s.input_name : graph.nodes[static_cast<size_t>(k)].name);
      row_of[i] = row_of[static_cast<size_t>(node.shares)];
      continue;
    }
    row_of[i] = s.layers.size();
    SummaryRow row;
    row.name = node.name;
    row.class_name = node.class_name;
    row.output_shape = node.output_shape;
    for (const ops::ParamRef& p : node.params) {
      row.params += p.count;
      if (p.trainable) row.trainable_params += p.count;
    }
    for (int k : node.inputs) {
      row.connected_to.push_back(k == ops::kModelInput ? s.input_name : graph.nodes[static_cast<size_t>(k)].name);
    }
    s.total_params += row.params;
    s.trainable_params += row.trainable_params;
    s.layers.push_back(std::move(row));
  }
  s.non_trainable_params = s.total_params - s.trainable_params;
  return s;
}

std::string SummaryTable(const ModelSummary& s) {
  const bool functional = !s.sequential;
  size_t name_w = 29;
  for (const SummaryRow& row : s.layers) name_w = std::max(name_w, row.name.size() + row.class_name.size() + 5);
  for (const ModelIo& in : s.inputs) {
    if (functional) name_w = std::max(name_w, in.name.size() + 17);
  }
  size_t shape_w = 26;
  for (const SummaryRow& row : s.layers) shape_w = std::max(shape_w, ShapeWithBatch(row.output_shape).size() + 2);
  const size_t param_w = 11;
  const size_t total_w = name_w + shape_w + (functional ? param_w + 26 : 10);
  std::string out = "Model: \"" + s.name + "\"\n" + std::string(total_w, '_') + "\n";
  out += Pad(" Layer (type)", name_w) + Pad("Output Shape", shape_w) +
         (functional ? Pad("Param #", param_w) + "Connected to\n" : "Param #\n");
  out += std::string(total_w, '=') + "\n";
  for (const ModelIo& in : s.inputs) {
    if (!functional) break;
    out += Pad(" " + in.name + " (InputLayer)", name_w) + Pad(ShapeWithBatch(in.shape), shape_w) +
           Pad("0", param_w) + "-\n";
    out += std::string(total_w, '_') + "\n";
  }
  for (size_t l = 0; l < s.layers.size(); ++l) {
    const SummaryRow& row = s.layers[l];
    std::string line = Pad(" " + row.name + " (" + row.class_name + ")", name_w) +
                       Pad(ShapeWithBatch(row.output_shape), shape_w);
    if (functional) {
      std::string from;
      // Keras 3's form: the layer, its call (node) and output tensor indices.
      for (const std::string& c : row.connected_to) from += (from.empty() ? "" : ", ") + c + "[0][0]";
      line += Pad(WithCommas(row.params), param_w) + from;
    } else {
      line += WithCommas(row.params);
    }
    out += line + "\n" + std::string(total_w, l + 1 == s.layers.size() ? '=' : '_') + "\n";
  }
  out += Total("Total params: ", s.total_params);
  out += Total("Trainable params: ", s.trainable_params);
  out += Total("Non-trainable params: ", s.non_trainable_params);
  out += std::string(total_w, '_') + "\n";
  return out;
}

nlohmann::json SummaryJson(const ModelSummary& s) {
  nlohmann::json layers = nlohmann::json::array();
  for (const SummaryRow& row : s.layers) {
    layers.push_back({{"name", row.name},
                      {"class_name", row.class_name},
                      {"output_shape", ShapeJson(row.output_shape)},
                      {"params", row.params},
                      {"trainable_params", row.trainable_params},
                      {"non_trainable_params", row.params - row.trainable_params},
                      {"connected_to", row.connected_to}});
  }
  nlohmann::json inputs = nlohmann::json::array();
  for (const ModelIo& in : s.inputs) inputs.push_back({{"name", in.name}, {"shape", ShapeJson(in.shape)}});
  return {{"name", s.name},
          {"class_name", s.sequential ? "Sequential" : "Functional"},
          {"input", inputs.at(0)},
          {"inputs", std::move(inputs)},
          {"outputs", s.outputs},
          {"layers", std::move(layers)},
          {"total_params", s.total_params},
          {"trainable_params", s.trainable_params},
          {"non_trainable_params", s.non_trainable_params}};
}

}  // namespace ringtrain::nn
