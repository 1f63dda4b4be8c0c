#include "nn/keras/keras_json.h"

#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/json.h"
#include "nn/keras/keras_json_classes.h"
#include "nn/keras/keras_json_layer.h"
#include "nn/keras/keras_json_tfop.h"

namespace ringtrain::nn {
namespace {

using keras_json::Bad;
using keras_json::Entry;
using nlohmann::json;

using Ref = keras_json::TensorRef;

StatusOr<Ref> ReadHistory(const json& h, const std::string& who) {
  const bool ok = (h.is_array() && (h.size() == 3 || h.size() == 4) && h[0].is_string() &&
                   JsonInt(h[1], 0, 1 << 20) && JsonInt(h[2], 0, 1 << 20));
  if (!ok) return Bad(who + "tensor reference " + JsonBrief(h) + " is not [layer, node_index, tensor_index]");
  if (h.size() == 4) {  // tf.keras 2's call kwargs
    if (!h[3].is_object()) return Bad(who + "tensor reference " + JsonBrief(h) + " has call arguments that are not an object");
    for (auto& [k, v] : h[3].items()) {
      if (!v.is_null()) {
        return Bad(who + "the call passes " + k + "=" + JsonBrief(v) +
                   "; ringtrain calls layers with their input only" +
                   (k == "training" ? " (to freeze a model, set trainable false: frozen BatchNormalization then runs "
                                      "in inference mode, as in Keras)"
                                    : ""));
      }
    }
  }
  return Ref{h[0].get<std::string>(), *JsonInt(h[1], 0, 1 << 20), *JsonInt(h[2], 0, 1 << 20)};
}

// Keras 3: {"class_name": "__keras_tensor__", "config": {"keras_history": [...]}}.
StatusOr<Ref> ReadKerasTensor(const json& t, const std::string& who) {
  if (!t.is_object() || t.value("class_name", json()) != "__keras_tensor__" || !t.contains("config") ||
      !t["config"].is_object() || !t["config"].contains("keras_history")) {
    return Bad(who + "call argument " + JsonBrief(t) + " is not a Keras tensor; ringtrain layers take tensors only");
  }
  return ReadHistory(t["config"]["keras_history"], who);
}

// The inputs of one call of a layer: an entry of its "inbound_nodes" (tf.keras 2 / tfjs or Keras 3).
StatusOr<std::vector<Ref>> ReadCall(const Entry& e, const json& node) {
  const std::string who = "layer '" + e.name + "' (" + e.cls + "): ";
  std::vector<Ref> refs;
  if (node.is_array()) {  // tf.keras 2: [[layer, node, tensor, kwargs], ...]
    for (const json& h : node) {
      RT_ASSIGN_OR_RETURN(Ref r, ReadHistory(h, who));
      refs.push_back(std::move(r));
    }
  } else if (node.is_object()) {  // Keras 3: {"args": [x] or [[x, y]], "kwargs": {}}
    for (auto& [k, v] : node.items()) {
      if (k != "args" && k != "kwargs") return e.Error("inbound node has the unknown key '" + k + "'");
    }
    const json args = node.value("args", json::array());
    const json kwargs = node.value("kwargs", json::object());
    if (!kwargs.is_object()) return e.Error("inbound node 'kwargs' must be an object");
    for (auto& [k, v] : kwargs.items()) {
      if (!v.is_null()) {
        return e.Error("the call passes " + k + "=" + JsonBrief(v) + "; ringtrain calls layers with their input only" +
                       (k == "training" ? " (to freeze a model, set trainable false: frozen BatchNormalization then "
                                          "runs in inference mode, as in Keras)"
                                        : ""));
      }
    }
    if (!args.is_array() || args.size() != 1) {
      return e.Error("inbound node 'args' must hold one argument (a tensor or a list of tensors), got " +
                     JsonBrief(args));
    }
    const json& arg = args[0];
    if (arg.is_array()) {
      for (const json& t : arg) {
        RT_ASSIGN_OR_RETURN(Ref r, ReadKerasTensor(t, who));
        refs.push_back(std::move(r));
      }
    } else {
      RT_ASSIGN_OR_RETURN(Ref r, ReadKerasTensor(arg, who));
      refs.push_back(std::move(r));
    }
  } else {
    return e.Error("inbound node " + JsonBrief(node) + " is neither tf.keras 2's list nor Keras 3's {args, kwargs}");
  }
  if (refs.empty()) return e.Error("is called on no tensor");
  return refs;
}

// The inputs of each call of a layer (a shared layer is called more than once).
StatusOr<std::vector<std::vector<Ref>>> ReadCalls(const Entry& e) {
  if (!e.inbound || !e.inbound->is_array()) return e.Error("'inbound_nodes' must be a list");
  const json& nodes = *e.inbound;
  if (nodes.empty()) return e.Error("has no inbound node: it is not called on anything (only an InputLayer may be)");
  if (nodes.size() > 64) return e.Error("is called " + std::to_string(nodes.size()) + " times; ringtrain takes up to 64");
  std::vector<std::vector<Ref>> calls;
  for (const json& node : nodes) {
    RT_ASSIGN_OR_RETURN(std::vector<Ref> refs, ReadCall(e, node));
    calls.push_back(std::move(refs));
  }
  return calls;
}

// "input_layers" / "output_layers": one reference ([name, node, tensor]), a list of
// them, or (Keras 3) a dict of them.
StatusOr<std::vector<Ref>> ReadEndpoints(const json& v, const std::string& model, const char* key) {
  std::vector<const json*> refs;
  if (v.is_array() && !v.empty() && v[0].is_string()) {
    refs.push_back(&v);
  } else if (v.is_array() || v.is_object()) {
    for (const json& r : v) refs.push_back(&r);
  } else {
    return Bad("model '" + model + "': '" + key + "' " + JsonBrief(v) + " is not a list of [layer, node, tensor]");
  }
  if (refs.empty() || refs.size() > 64) {
    return Bad("model '" + model + "': '" + key + "' must list 1 to 64 [layer, node, tensor] references, got " +
               JsonBrief(v));
  }
  std::vector<Ref> out;
  for (const json* r : refs) {
    RT_ASSIGN_OR_RETURN(Ref ref, ReadHistory(*r, "model '" + model + "': "));
    out.push_back(std::move(ref));
  }
  return out;
}

// The same for a nested model, which ringtrain calls on one tensor for one output.
StatusOr<Ref> ReadSingleEndpoint(const json& v, const std::string& model, const char* key) {
  RT_ASSIGN_OR_RETURN(std::vector<Ref> refs, ReadEndpoints(v, model, key));
  const std::string what = std::string(key) == "input_layers" ? "input" : "output";
  if (refs.size() != 1) {
    return Bad("model '" + model + "' (nested in another) has " + std::to_string(refs.size()) + " " + what +
               "s; ringtrain nests models of exactly one " + what);
  }
  return refs[0];
}

class Translator {
 public:
  json layers = json::array();
  std::string input_name;        // what layers name in "inputs" for the model input
  bool input_referenced = false;

  // Appends the compact layers of `model` (a model entry) called on `feeds` (compact
  // names, one per input); returns the compact names of its outputs. A nested model has
  // one input and one output.
  StatusOr<std::vector<std::string>> Model(const Entry& model, const std::vector<std::string>& feeds, bool frozen,
                                           int depth) {
    if (depth > kMaxKerasModelNesting) return model.Error("models are nested more than 16 deep");
    const json& c = *model.config;
    bool trainable = true;
    if (c.is_object()) {
      static const std::set<std::string> kKeys = {"name", "trainable", "dtype", "layers", "input_layers",
                                                  "output_layers", "build_input_shape"};
      for (auto& [k, v] : c.items()) {
        if (!kKeys.count(k)) return model.Error("unknown model config key '" + k + "'");
      }
      if (c.contains("trainable")) {
        if (!c["trainable"].is_boolean()) return model.Error("'trainable' must be true or false");
        trainable = c["trainable"].get<bool>();
      }
      if (c.contains("dtype")) RT_RETURN_IF_ERROR(keras_json::CheckDtype(c["dtype"], "model '" + model.name + "': "));
    }
    if (!c.is_array() && (!c.contains("layers") || !c["layers"].is_array())) {
      return model.Error("has no 'layers' list (a subclassed model's JSON has no layer graph: save it as a Functional "
                         "or Sequential model)");
    }
    frozen = frozen || !trainable;
    if (model.cls == "Sequential") {
      RT_ASSIGN_OR_RETURN(std::string out, SequentialModel(model, c.is_array() ? c : c["layers"], feeds.at(0), frozen, depth));
      return std::vector<std::string>{out};
    }
    return FunctionalModel(model, feeds, frozen, depth);
  }

  // The model inputs' names, which no layer may take.
  void Reserve(const std::vector<std::string>& inputs) { inputs_.insert(inputs.begin(), inputs.end()); }

  // A nested model's one output.
  StatusOr<std::string> Nested(const Entry& model, const std::string& feed, bool frozen, int depth) {
    RT_ASSIGN_OR_RETURN(std::vector<std::string> outs, Model(model, {feed}, frozen, depth));
    return outs.at(0);
  }

 private:
  std::set<std::string> names_;  // compact layer names emitted so far
  std::set<std::string> inputs_;  // the model inputs' names
  std::string last_;             // the last compact layer emitted ("" before the first)
  int later_call_ = 0;           // inside a later call of a nested model: every layer is called again

  // Emits layer e's call number `call` (0: the first) on `inputs`; returns the compact name
  // of its output. A later call (or any call inside a later call of a nested model) is
  // {"shares": e's name}: the same layer, its weights shared.
  StatusOr<std::string> Emit(const Entry& e, const std::vector<std::string>& inputs, bool frozen, size_t call) {
    if (call > 0 || later_call_ > 0) return EmitCall(e, inputs);
    RT_ASSIGN_OR_RETURN(json layer, keras_json::CompactLayer(e, frozen));
    return EmitLayer(e, inputs, std::move(layer));
  }

  // A TFOpLambda as the layer it maps to (keras_json_tfop.h).
  StatusOr<std::string> EmitOp(const Entry& e, const std::vector<std::string>& inputs, const keras_json::OpLayer& op,
                               bool frozen, size_t call) {
    if (call > 0 || later_call_ > 0) return EmitCall(e, inputs);
    if (e.config->contains("dtype")) {
      RT_RETURN_IF_ERROR(keras_json::CheckDtype((*e.config)["dtype"], "layer '" + e.name + "' (" + e.cls + "): "));
    }
    json layer = op.layer;
    layer["name"] = e.name;
    layer["trainable"] = !frozen;
    return EmitLayer(e, inputs, std::move(layer));
  }

  // A later call of the layer emitted as e.name, named e.name + "_<k>" (the first k free).
  StatusOr<std::string> EmitCall(const Entry& e, const std::vector<std::string>& inputs) {
    if (!names_.count(e.name)) return e.Error("is called again before its first call");
    std::string name;
    for (int k = 1; name.empty() || names_.count(name) || inputs_.count(name) || name == input_name; ++k) {
      name = e.name + "_" + std::to_string(k);
    }
    names_.insert(name);
    layers.push_back({{"shares", e.name}, {"name", name}, {"inputs", inputs}});
    for (const std::string& in : inputs) input_referenced = input_referenced || in == input_name;
    last_ = name;
    return name;
  }

  StatusOr<std::string> EmitLayer(const Entry& e, const std::vector<std::string>& inputs, json layer) {
    if (e.name == input_name || inputs_.count(e.name)) {
      return e.Error("the model input has this name too; layer names must be unique (rename the layer)");
    }
    if (!names_.insert(e.name).second) {
      return e.Error("another layer has this name once nested models are flattened into one; layer names must be "
                     "unique (rename one)");
    }
    const std::string previous = last_.empty() ? input_name : last_;
    if (inputs.size() != 1 || inputs[0] != previous) {
      layer["inputs"] = inputs;
      for (const std::string& in : inputs) input_referenced = input_referenced || in == input_name;
    }
    layers.push_back(std::move(layer));
    last_ = e.name;
    return e.name;
  }

  StatusOr<std::string> SequentialModel(const Entry& model, const json& list, const std::string& feed, bool frozen,
                                        int depth) {
    std::string prev = feed;
    for (size_t i = 0; i < list.size(); ++i) {
      RT_ASSIGN_OR_RETURN(Entry e, keras_json::ReadEntry(list[i], i));
      if (e.inbound) return e.Error("has 'inbound_nodes' inside Sequential model '" + model.name + "'");
      if (e.is_input) {
        if (i != 0) return e.Error("an InputLayer can only be the first layer of Sequential model '" + model.name + "'");
        RT_RETURN_IF_ERROR(keras_json::InputLayerBatchShape(e).status());
        continue;
      }
      if (e.is_model) {
        RT_ASSIGN_OR_RETURN(prev, Nested(e, prev, frozen, depth + 1));
        continue;
      }
      if (e.cls == "TFOpLambda" || keras_json::IsKeras3Op(e)) {
        return e.Error("an op called on Keras tensors inside Sequential model '" + model.name + "'");
      }
      RT_ASSIGN_OR_RETURN(prev, Emit(e, {prev}, frozen, 0));
    }
    if (prev == feed) return model.Error("has no layers");
    return prev;
  }

  StatusOr<std::vector<std::string>> FunctionalModel(const Entry& model, const std::vector<std::string>& feeds,
                                                     bool frozen, int depth) {
    const json& c = *model.config;
    const json& list = c["layers"];
    std::vector<Entry> entries;
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < list.size(); ++i) {
      RT_ASSIGN_OR_RETURN(Entry e, keras_json::ReadEntry(list[i], i));
      if (!index.emplace(e.name, i).second) return e.Error("two layers of model '" + model.name + "' have this name");
      entries.push_back(std::move(e));
    }
    for (const char* key : {"input_layers", "output_layers"}) {
      if (!c.contains(key)) return model.Error(std::string("has no '") + key + "'");
    }
    std::vector<Ref> ins, outs;
    if (depth == 0) {
      RT_ASSIGN_OR_RETURN(ins, ReadEndpoints(c["input_layers"], model.name, "input_layers"));
      RT_ASSIGN_OR_RETURN(outs, ReadEndpoints(c["output_layers"], model.name, "output_layers"));
    } else {
      RT_ASSIGN_OR_RETURN(Ref in, ReadSingleEndpoint(c["input_layers"], model.name, "input_layers"));
      RT_ASSIGN_OR_RETURN(Ref out, ReadSingleEndpoint(c["output_layers"], model.name, "output_layers"));
      ins = {in};
      outs = {out};
    }
    if (ins.size() != feeds.size()) return model.Error("is called on " + std::to_string(feeds.size()) + " tensors");
    std::vector<size_t> in_index;  // the InputLayer entries, in input_layers' order
    for (const Ref& in : ins) {
      if (!index.count(in.layer) || !entries[index[in.layer]].is_input || in.node != 0 || in.tensor != 0) {
        return model.Error("its input " + in.layer + " is not one of its InputLayers");
      }
      if (std::find(in_index.begin(), in_index.end(), index[in.layer]) != in_index.end()) {
        return model.Error("lists its input " + in.layer + " twice");
      }
      in_index.push_back(index[in.layer]);
    }
    // Each call of each layer (Keras' nodes: a shared layer or nested model called more than
    // once has several) is a node here, with the nodes its inputs come from.
    std::vector<std::vector<std::vector<Ref>>> calls(entries.size());
    std::map<size_t, keras_json::OpLayer> ops;  // the TFOpLambda entries, as layers
    for (size_t i = 0; i < entries.size(); ++i) {
      const Entry& e = entries[i];
      if (e.is_input) {
        if (e.inbound && (!e.inbound->is_array() || !e.inbound->empty())) return e.Error("an InputLayer has no inbound nodes");
        calls[i] = {{}};
      } else if (e.cls == "TFOpLambda") {
        RT_ASSIGN_OR_RETURN(ops[i], keras_json::TranslateTfOpLambda(e));
        calls[i] = {ops[i].inputs};
      } else if (keras_json::IsKeras3Op(e)) {
        RT_ASSIGN_OR_RETURN(ops[i], keras_json::TranslateKeras3Op(e));
        calls[i] = {ops[i].inputs};
      } else {
        RT_ASSIGN_OR_RETURN(calls[i], ReadCalls(e));
      }
      for (const auto& refs : calls[i]) {
        if (e.is_model && refs.size() != 1) return e.Error("a nested model must be called on one tensor");
      }
    }
    // Keras numbers the calls of a nested Functional model after the call that built it
    // (node 1 is the first use; Keras 3's Sequential starts at 0): a model whose calls are
    // read as 1..n counts from 1.
    std::vector<int> first_call(entries.size(), 0);
    for (const auto& entry_calls : calls) {
      for (const auto& refs : entry_calls) {
        for (const Ref& r : refs) {
          const auto it = index.find(r.layer);
          if (it != index.end() && entries[it->second].is_model &&
              r.node == static_cast<int>(calls[it->second].size())) {
            first_call[it->second] = 1;
          }
        }
      }
    }
    for (const Ref& r : outs) {
      const auto it = index.find(r.layer);
      if (it != index.end() && entries[it->second].is_model && r.node == static_cast<int>(calls[it->second].size())) {
        first_call[it->second] = 1;
      }
    }
    std::vector<size_t> node_of(entries.size());  // node of entry i's first call; call c is node_of[i] + c
    std::vector<std::pair<size_t, size_t>> call_of;  // node -> (entry, call)
    for (size_t i = 0; i < entries.size(); ++i) {
      node_of[i] = call_of.size();
      for (size_t k = 0; k < calls[i].size(); ++k) call_of.emplace_back(i, k);
    }
    auto resolve = [&](const Ref& r, const std::string& who) -> StatusOr<size_t> {
      const auto it = index.find(r.layer);
      if (it == index.end()) return Bad(who + "reads '" + r.layer + "', which is not a layer of model '" + model.name + "'");
      const int call = r.node - first_call[it->second];
      if (call < 0 || call >= static_cast<int>(calls[it->second].size()) || r.tensor != 0) {
        return Bad(who + "reads output " + std::to_string(r.tensor) + " of call " + std::to_string(r.node) + " of '" +
                   r.layer + "', which has " + std::to_string(calls[it->second].size()) +
                   " call(s); ringtrain layers have one output");
      }
      return node_of[it->second] + static_cast<size_t>(call);
    };
    std::vector<std::vector<size_t>> deps(call_of.size());
    for (size_t n = 0; n < call_of.size(); ++n) {
      const Entry& e = entries[call_of[n].first];
      for (const Ref& r : calls[call_of[n].first][call_of[n].second]) {
        RT_ASSIGN_OR_RETURN(size_t d, resolve(r, "layer '" + e.name + "' (" + e.cls + ") "));
        deps[n].push_back(d);
      }
    }
    std::vector<size_t> out_index;
    for (const Ref& out : outs) {
      RT_ASSIGN_OR_RETURN(size_t o, resolve(out, "model '" + model.name + "': the output "));
      if (entries[call_of[o].first].is_input) {
        return model.Error("gives its input '" + entries[call_of[o].first].name + "' as an output");
      }
      if (std::find(out_index.begin(), out_index.end(), o) != out_index.end()) {
        return model.Error("lists its output " + entries[call_of[o].first].name + " twice");
      }
      out_index.push_back(o);
    }
    std::vector<size_t> in_nodes;
    for (size_t i : in_index) in_nodes.push_back(node_of[i]);
    RT_ASSIGN_OR_RETURN(std::vector<size_t> order, Order(model, entries, call_of, deps, out_index, in_nodes));

    std::map<size_t, std::string> compact;  // node -> the compact name that holds its output
    for (size_t n : order) {
      const auto [i, call] = call_of[n];
      const Entry& e = entries[i];
      if (e.is_input) {
        RT_RETURN_IF_ERROR(keras_json::InputLayerBatchShape(e).status());
        compact[n] = feeds[static_cast<size_t>(std::find(in_nodes.begin(), in_nodes.end(), n) - in_nodes.begin())];
      } else if (e.is_model) {
        // A later call of a nested model calls each of its layers again.
        later_call_ += call > 0 ? 1 : 0;
        auto out = Nested(e, compact[deps[n][0]], frozen, depth + 1);
        later_call_ -= call > 0 ? 1 : 0;
        if (!out.ok()) return out.status();
        compact[n] = *out;
      } else {
        std::vector<std::string> inputs;
        for (size_t d : deps[n]) inputs.push_back(compact[d]);
        if (ops.count(i)) {
          RT_ASSIGN_OR_RETURN(compact[n], EmitOp(e, inputs, ops[i], frozen, call));
        } else {
          RT_ASSIGN_OR_RETURN(compact[n], Emit(e, inputs, frozen, call));
        }
      }
    }
    std::vector<std::string> result;
    for (size_t o : out_index) result.push_back(compact[o]);
    return result;
  }

  // The nodes (calls of layers) the outputs depend on, in a topological order that keeps
  // Keras' order where it can (one output comes last: every other one is its ancestor).
  static StatusOr<std::vector<size_t>> Order(const Entry& model, const std::vector<Entry>& entries,
                                             const std::vector<std::pair<size_t, size_t>>& call_of,
                                             const std::vector<std::vector<size_t>>& deps,
                                             const std::vector<size_t>& outs, const std::vector<size_t>& ins) {
    const size_t count_nodes = call_of.size();
    std::vector<bool> needed(count_nodes, false);
    std::vector<size_t> stack = outs;
    for (size_t o : outs) needed[o] = true;
    // A layer's later call comes after its earlier ones (the first call defines the weights
    // the later ones share): they count as dependencies for the order.
    auto after = [&](size_t i) {
      std::vector<size_t> d = deps[i];
      if (call_of[i].second > 0) d.push_back(i - 1);
      return d;
    };
    while (!stack.empty()) {
      const size_t i = stack.back();
      stack.pop_back();
      for (size_t d : deps[i]) {
        if (!needed[d]) needed[d] = true, stack.push_back(d);
      }
    }
    // The weights of a shared layer live with its first call, which must feed the outputs too.
    for (size_t i = 0; i < count_nodes; ++i) {
      if (!needed[i] || call_of[i].second == 0) continue;
      const size_t first = i - call_of[i].second;
      if (!needed[first]) {
        const Entry& e = entries[call_of[i].first];
        return e.Error("its first call feeds nothing the model's outputs need, but a later call does; ringtrain keeps "
                       "a shared layer's weights with its first call (call it there first)");
      }
    }
    for (size_t i = 0; i < count_nodes; ++i) {
      const Entry& e = entries[call_of[i].first];
      if (needed[i] && e.is_input && std::find(ins.begin(), ins.end(), i) == ins.end()) {
        return model.Error("its output depends on the InputLayer '" + e.name + "', which is not one of its input_layers");
      }
    }
    for (size_t in : ins) {
      if (!needed[in]) return model.Error("its outputs do not depend on its input '" + entries[call_of[in].first].name + "'");
    }
    std::vector<size_t> missing(count_nodes, 0);  // unmet dependencies
    std::vector<std::vector<size_t>> users(count_nodes);
    std::set<size_t> ready;
    for (size_t i = 0; i < count_nodes; ++i) {
      if (!needed[i]) continue;
      for (size_t d : after(i)) ++missing[i], users[d].push_back(i);
      if (missing[i] == 0) ready.insert(i);
    }
    std::vector<size_t> order;
    while (!ready.empty()) {
      const size_t i = *ready.begin();
      ready.erase(ready.begin());
      order.push_back(i);
      for (size_t u : users[i]) {
        if (--missing[u] == 0) ready.insert(u);
      }
    }
    size_t count = 0;
    for (bool n : needed) count += n;
    if (order.size() != count) return model.Error("its layers form a cycle");
    return order;
  }
};

// A Functional model's inputs: each InputLayer's name and shape, in input_layers' order.
Status FunctionalInputs(const Entry& model, std::vector<std::pair<std::string, json>>* inputs) {
  const json& c = *model.config;
  RT_ASSIGN_OR_RETURN(std::vector<Ref> ins, ReadEndpoints(c["input_layers"], model.name, "input_layers"));
  for (const Ref& in : ins) {
    bool found = false;
    for (size_t i = 0; i < c["layers"].size() && !found; ++i) {
      RT_ASSIGN_OR_RETURN(Entry e, keras_json::ReadEntry(c["layers"][i], i));
      if (e.name != in.layer) continue;
      if (!e.is_input) return model.Error("its input '" + e.name + "' is not an InputLayer");
      RT_ASSIGN_OR_RETURN(json batch, keras_json::InputLayerBatchShape(e));
      RT_ASSIGN_OR_RETURN(json shape, keras_json::InputShapeFromBatchShape(batch, "layer '" + e.name + "' (InputLayer)"));
      inputs->push_back({e.name, std::move(shape)});
      found = true;
    }
    if (!found) return model.Error("its input '" + in.layer + "' is not one of its layers");
  }
  return Status::Ok();
}

// A model's one input: its InputLayer's name (or "input") and its shape.
Status TopInput(const Entry& model, std::string* name, json* shape) {
  const json& c = *model.config;
  if (model.cls == "Sequential") {
    const json& list = c.is_array() ? c : c["layers"];
    if (!list.is_array() || list.empty()) return model.Error("has no layers");
    RT_ASSIGN_OR_RETURN(Entry first, keras_json::ReadEntry(list[0], 0));
    *name = "input";
    const std::string where = "layer '" + first.name + "' (" + first.cls + ")";
    if (first.is_input) {
      *name = first.name;
      RT_ASSIGN_OR_RETURN(json batch, keras_json::InputLayerBatchShape(first));
      RT_ASSIGN_OR_RETURN(*shape, keras_json::InputShapeFromBatchShape(batch, where));
      return Status::Ok();
    }
    if (first.is_model) {
      std::string unused;
      return TopInput(first, &unused, shape);
    }
    for (const char* key : {"batch_input_shape", "batch_shape"}) {
      if (first.config->contains(key)) {
        RT_ASSIGN_OR_RETURN(*shape, keras_json::InputShapeFromBatchShape((*first.config)[key], where));
        return Status::Ok();
      }
    }
    if (c.is_object() && c.contains("build_input_shape") && !c["build_input_shape"].is_null()) {
      RT_ASSIGN_OR_RETURN(*shape, keras_json::InputShapeFromBatchShape(c["build_input_shape"],
                                                                       "model '" + model.name + "'"));
      return Status::Ok();
    }
    return Bad("model '" + model.name + "' has no input shape; build it with an Input (or input_shape on the first "
               "layer) before calling to_json()");
  }
  if (!c.is_object() || !c.contains("input_layers") || !c.contains("layers") || !c["layers"].is_array()) {
    return model.Error("has no 'layers' list and 'input_layers' (a subclassed model's JSON has no layer graph: save "
                       "it as a Functional or Sequential model)");
  }
  std::vector<std::pair<std::string, json>> inputs;
  RT_RETURN_IF_ERROR(FunctionalInputs(model, &inputs));
  if (inputs.size() != 1) return model.Error("(nested in another) has " + std::to_string(inputs.size()) + " inputs; "
                                             "ringtrain nests models of exactly one input");
  *name = inputs[0].first;
  *shape = inputs[0].second;
  return Status::Ok();
}

// The top model's inputs: each InputLayer's name (or "input") and its shape.
Status TopInputs(const Entry& model, std::vector<std::pair<std::string, json>>* inputs) {
  const json& c = *model.config;
  if (model.cls == "Sequential") {
    inputs->push_back({"input", json()});
    return TopInput(model, &inputs->back().first, &inputs->back().second);
  }
  if (!c.is_object() || !c.contains("input_layers") || !c.contains("layers") || !c["layers"].is_array()) {
    return model.Error("has no 'layers' list and 'input_layers' (a subclassed model's JSON has no layer graph: save "
                       "it as a Functional or Sequential model)");
  }
  return FunctionalInputs(model, inputs);
}

// The layers list of a model entry's config (a legacy Sequential's config is the list).
json* LayerList(json& entry) {
  if (!entry.is_object() || !entry.contains("config")) return nullptr;
  json& c = entry["config"];
  if (c.is_array()) return &c;
  if (c.is_object() && c.contains("layers") && c["layers"].is_array()) return &c["layers"];
  return nullptr;
}

bool IsModelEntry(const json& entry) {
  return entry.is_object() && entry.value("class_name", json()).is_string() &&
         keras_json::IsModelClass(entry["class_name"].get<std::string>());
}

// Every name given to a layer or model anywhere in the JSON.
void CollectNames(json& entry, std::set<std::string>* taken, int depth) {
  if (!entry.is_object() || depth > kMaxKerasModelNesting + 1) return;
  if (entry.value("name", json()).is_string()) taken->insert(entry["name"].get<std::string>());
  const json c = entry.value("config", json());
  if (c.is_object() && c.value("name", json()).is_string()) taken->insert(c["name"].get<std::string>());
  if (json* list = LayerList(entry)) {
    for (json& layer : *list) CollectNames(layer, taken, depth + 1);
  }
}

// Keras 1 and 2.0 wrote a Sequential's config as the bare list of its layers, with no
// name for a model nested in another. Such models get Keras' default names, in the
// order Keras creates them (inner models first): "sequential", "sequential_1", ...,
// skipping every name the JSON already uses.
void NameUnnamedModels(json& entry, std::set<std::string>* taken, int depth) {
  if (!IsModelEntry(entry) || depth > kMaxKerasModelNesting + 1) return;
  if (json* list = LayerList(entry)) {
    for (json& layer : *list) NameUnnamedModels(layer, taken, depth + 1);
  }
  json& c = entry["config"];
  const bool named = entry.value("name", json()).is_string() || (c.is_object() && c.contains("name"));
  if (named) return;
  std::string base;
  for (char ch : entry["class_name"].get<std::string>()) base += static_cast<char>(std::tolower(ch));
  std::string name = base;
  for (int k = 1; taken->count(name); ++k) name = base + "_" + std::to_string(k);
  taken->insert(name);
  if (c.is_object()) {
    c["name"] = name;
  } else {
    entry["name"] = name;
  }
}

// The top-level JSON checked before it is read as a model: Keras 1, subclassed and
// custom models refused with what to do.
Status CheckTopLevel(const json& keras_model) {
  const json version = keras_model.value("keras_version", json());
  if (version.is_string() && version.get<std::string>().rfind("1.", 0) == 0) {
    return Bad("this model JSON was written by Keras " + version.get<std::string>() +
               "; ringtrain reads the JSON of Keras 2 and later: load the model with Keras 2 and save it again "
               "(model.to_json())");
  }
  const json cls = keras_model.value("class_name", json());
  if (cls.is_string() && keras_json::IsModelClass(cls.get<std::string>())) return Status::Ok();
  if (cls.is_string() && !cls.get<std::string>().empty()) {
    keras_json::Entry top;
    top.cls = cls.get<std::string>();
    top.has_module = keras_model.contains("module");
    const json module = keras_model.value("module", json());
    top.module_null = top.has_module && module.is_null();
    if (module.is_string()) top.module = module.get<std::string>();
    const json registered = keras_model.value("registered_name", json());
    if (registered.is_string()) top.registered_name = registered.get<std::string>();
    if (keras_json::IsCustomClass(top)) {
      return Bad("the model is of the custom class '" + top.cls + "' from " + keras_json::CustomClassOrigin(top) +
                 " (a subclassed model): its JSON has no layer graph that ringtrain can build; save it as a "
                 "Functional model (keras.Model(inputs, outputs)) or a Sequential model");
    }
  }
  return Bad("class_name " + JsonBrief(cls) +
             " is not a model; expected Sequential, Functional or Model (the JSON that model.to_json() writes; a "
             "subclassed model's JSON has no layer graph: save it as a Functional or Sequential model)");
}

}  // namespace

StatusOr<json> KerasJsonToCompact(const json& keras_model) {
  if (!keras_model.is_object()) return Bad("must be an object (the JSON that model.to_json() writes)");
  if (keras_model.contains("modelTopology")) {
    return Bad("this is a TensorFlow.js model.json (it has 'modelTopology'): give its modelTopology object, or the "
               "JSON that model.to_json() writes");
  }
  RT_RETURN_IF_ERROR(CheckTopLevel(keras_model));
  const json cls = keras_model["class_name"];
  for (auto& [k, v] : keras_model.items()) {
    static const std::set<std::string> kKeys = {"class_name", "config",       "keras_version", "backend",
                                                "module",     "registered_name", "build_config", "compile_config"};
    if (!kKeys.count(k)) return Bad("unknown top-level key '" + k + "'; it is not part of Keras' model JSON");
  }
  const json config = keras_model.value("config", json());
  if (!config.is_object() && !(cls == "Sequential" && config.is_array())) {
    return Bad("the model's 'config' must be an object with its layers, got " + JsonBrief(config));
  }
  // The top model is read as an entry of its own, named by its config.
  json entry = {{"class_name", cls}, {"config", config}};
  std::set<std::string> taken;
  CollectNames(entry, &taken, 0);
  NameUnnamedModels(entry, &taken, 0);
  RT_ASSIGN_OR_RETURN(Entry model, keras_json::ReadEntry(entry, 0));

  Translator t;
  std::vector<std::pair<std::string, json>> inputs;
  RT_RETURN_IF_ERROR(TopInputs(model, &inputs));
  std::vector<std::string> feeds;
  for (const auto& in : inputs) feeds.push_back(in.first);
  t.input_name = feeds[0];
  t.Reserve(feeds);
  RT_ASSIGN_OR_RETURN(std::vector<std::string> outputs, t.Model(model, feeds, /*frozen=*/false, /*depth=*/0));
  json out = {{"name", model.name}};
  if (inputs.size() == 1) {
    out["input_shape"] = std::move(inputs[0].second);
    if (t.input_referenced) out["input_name"] = t.input_name;
  } else {
    out["inputs"] = json::array();
    for (auto& [name, shape] : inputs) out["inputs"].push_back({{"name", name}, {"shape", std::move(shape)}});
  }
  out["layers"] = std::move(t.layers);
  if (outputs.size() > 1 || (!out["layers"].empty() && out["layers"].back().value("name", "") != outputs[0])) {
    out["outputs"] = outputs;
  }
  return out;
}

}  // namespace ringtrain::nn
